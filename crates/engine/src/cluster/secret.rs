//! The cluster's shared secret. Scheduler, executors and clients read the same secret (a file, or
//! an environment variable) and present a token derived from it on every gRPC call they make to
//! each other; the scheduler and the executors' data service refuse calls without it.
//!
//! The token travels as a product in the `user-agent` header (`tokq-cluster/<token> tonic/..`)
//! because that is the one header every Ballista connection lets tokq set: Ballista opens its
//! connections itself (client to scheduler, executor to scheduler, executor to executor for
//! shuffle data, client to executor for results) and only lets a caller adjust the endpoint.
//! The token is a SHA-256 of the secret, so a header that ends up in a proxy's log gives away
//! access to this cluster but not the secret itself. Without TLS ([`super::tls`]) the token
//! crosses the network in clear text: the trust model in docs/cluster.md says what that means.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The environment variable holding the secret itself (Kubernetes secrets as env).
pub const SECRET_ENV: &str = "TOKQ_CLUSTER_SECRET";

/// The user-agent product that carries the token.
const PRODUCT: &str = "tokq-cluster/";

/// Shorter secrets are refused: they can be guessed.
const MIN_LEN: usize = 16;

/// Why a secret cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The file cannot be read.
    #[error("cannot read the cluster secret file {path}: {cause}")]
    Unreadable {
        /// The file.
        path: String,
        /// What the file system said.
        cause: std::io::Error,
    },
    /// The secret is too short to be safe.
    #[error("the cluster secret from {from} has {len} characters; use at least {MIN_LEN} (for example: head -c 32 /dev/urandom | base64 > secret)")]
    TooShort {
        /// The file or variable it came from.
        from: String,
        /// Its length in characters.
        len: usize,
    },
}

/// A cluster secret, kept only as the token derived from it.
#[derive(Clone)]
pub struct ClusterSecret {
    token: String,
}

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(..)")
    }
}

impl ClusterSecret {
    /// The secret from `file` if given, else from `TOKQ_CLUSTER_SECRET`, else none. Surrounding
    /// whitespace (a file's trailing newline) is not part of it.
    pub fn load(file: Option<&Path>) -> Result<Option<Self>, SecretError> {
        let (from, secret) = match file {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|cause| SecretError::Unreadable { path: p.display().to_string(), cause })?;
                (p.display().to_string(), text)
            }
            None => match std::env::var(SECRET_ENV) {
                Ok(v) => (SECRET_ENV.to_string(), v),
                Err(_) => return Ok(None),
            },
        };
        Self::new(&from, secret.trim()).map(Some)
    }

    fn new(from: &str, secret: &str) -> Result<Self, SecretError> {
        if secret.chars().count() < MIN_LEN {
            return Err(SecretError::TooShort { from: from.to_string(), len: secret.chars().count() });
        }
        let digest = Sha256::new().chain_update(b"tokq-cluster:").chain_update(secret.as_bytes()).finalize();
        Ok(Self { token: hex::encode(digest) })
    }

    /// The user-agent value a member sends.
    pub fn user_agent(&self) -> String {
        format!("{PRODUCT}{}", self.token)
    }

    /// Whether a request's user-agent header carries this cluster's token, compared in constant
    /// time so that the time to refuse says nothing about how much of a guess was right.
    pub fn admits(&self, user_agent: Option<&[u8]>) -> bool {
        let Some(ua) = user_agent else { return false };
        ua.split(|b| *b == b' ').filter_map(|p| p.strip_prefix(PRODUCT.as_bytes())).any(|t| same(t, self.token.as_bytes()))
    }
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> ClusterSecret {
        ClusterSecret::new("test", s).unwrap()
    }

    #[test]
    fn admits_only_its_own_token_among_other_products() {
        let a = secret("correct horse battery staple");
        let ua = format!("{} tonic/0.14.9", a.user_agent());
        assert!(a.admits(Some(ua.as_bytes())));
        assert!(!secret("another secret of enough length").admits(Some(ua.as_bytes())));
        assert!(!a.admits(Some(b"tonic/0.14.9")));
        assert!(!a.admits(Some(b"tokq-cluster/")));
        assert!(!a.admits(None));
        assert!(!a.user_agent().contains("horse"), "the secret itself never travels");
    }

    #[test]
    fn short_secrets_are_refused_and_files_are_trimmed() {
        assert!(matches!(ClusterSecret::new("x", "short"), Err(SecretError::TooShort { len: 5, .. })));
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("secret");
        std::fs::write(&f, "correct horse battery staple\n").unwrap();
        let from_file = ClusterSecret::load(Some(&f)).unwrap().unwrap();
        assert_eq!(from_file.user_agent(), secret("correct horse battery staple").user_agent());
        let missing = ClusterSecret::load(Some(&d.path().join("nope"))).unwrap_err().to_string();
        assert!(missing.contains("nope"), "{missing}");
    }
}
