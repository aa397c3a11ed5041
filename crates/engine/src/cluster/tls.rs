//! TLS on every cluster connection: client to scheduler, executor to scheduler, executor to
//! executor (shuffle data) and client to executor (results). Every node serves with its own
//! certificate and key, and every caller checks the certificate it is shown against one CA, so
//! a cluster's nodes need certificates signed by a CA the callers hold (docs/cluster.md shows
//! the openssl commands). The cluster secret still says who may call; TLS keeps it, the plans
//! and the data from being read or changed on the way.
//!
//! Ballista dials `http://HOST:PORT` in two places it does not let tokq configure (a client's
//! scheduler and an executor's scheduler); the endpoint override that every Ballista connection
//! passes through turns those into `https://` with the same timeouts, and adds the CA.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ballista_core::config::BallistaConfig;
use ballista_core::utils::{create_grpc_client_endpoint, GrpcClientConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

/// The variable that stands in for `--tls-ca` (Python's `tokq.run` reads it).
pub const CA_ENV: &str = "TOKQ_TLS_CA";
/// The variable that stands in for `--tls-cert`.
pub const CERT_ENV: &str = "TOKQ_TLS_CERT";
/// The variable that stands in for `--tls-key`.
pub const KEY_ENV: &str = "TOKQ_TLS_KEY";

/// Where a node's or a client's TLS material lies; a path not given is taken from its
/// environment variable.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    /// The CA certificate(s) that signed the cluster's node certificates (PEM).
    pub ca: Option<PathBuf>,
    /// This node's certificate chain (PEM); nodes only.
    pub cert: Option<PathBuf>,
    /// This node's private key (PEM); nodes only.
    pub key: Option<PathBuf>,
}

/// Why TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read.
    #[error("cannot read the TLS {what} {path}: {cause}")]
    Unreadable {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: String,
        /// What the file system said.
        cause: std::io::Error,
    },
    /// A file holds nothing of the kind asked for.
    #[error("the TLS {what} {path} holds no PEM {kind}; give a PEM file (openssl writes them)")]
    Empty {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: String,
        /// The PEM block looked for.
        kind: &'static str,
    },
    /// The key and the certificate do not fit together, or rustls refused them.
    #[error("cannot serve TLS with the certificate {cert} and the key {key}: {cause}")]
    Identity {
        /// The certificate file.
        cert: String,
        /// The key file.
        key: String,
        /// What rustls said.
        cause: rustls::Error,
    },
    /// Part of the material is missing.
    #[error("{0}")]
    Incomplete(String),
}

/// A cluster member's TLS: the CA it checks others against and, on a node, what it serves with.
pub struct ClusterTls {
    ca_pem: Vec<u8>,
    roots: Arc<RootCertStore>,
    identity: Option<Identity>,
}

/// A node's certificate and key, as PEM and as the rustls server config made of them.
struct Identity {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    server: Arc<ServerConfig>,
}

impl std::fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterTls({} CA certificates, {})", self.roots.len(), if self.identity.is_some() { "serving" } else { "client" })
    }
}

impl ClusterTls {
    /// A client's TLS: the CA from `files.ca` or `TOKQ_TLS_CA`; None when neither is set (a
    /// cluster in clear text). A certificate or key given to a client is not used.
    pub fn client(files: &TlsFiles) -> Result<Option<Self>, TlsError> {
        let Some(ca) = or_env(&files.ca, CA_ENV) else { return Ok(None) };
        Self::with_ca(&ca, None).map(Some)
    }

    /// A node's TLS (scheduler, executor): all three files or none of them. A node serves TLS
    /// with its certificate and dials the others checking theirs against the CA.
    pub fn node(files: &TlsFiles) -> Result<Option<Self>, TlsError> {
        match (or_env(&files.ca, CA_ENV), or_env(&files.cert, CERT_ENV), or_env(&files.key, KEY_ENV)) {
            (None, None, None) => Ok(None),
            (Some(ca), Some(cert), Some(key)) => Self::with_ca(&ca, Some((&cert, &key))).map(Some),
            (ca, cert, key) => {
                let missing: Vec<&str> = [(ca.is_none(), "--tls-ca"), (cert.is_none(), "--tls-cert"), (key.is_none(), "--tls-key")]
                    .into_iter()
                    .filter_map(|(gone, flag)| gone.then_some(flag))
                    .collect();
                Err(TlsError::Incomplete(format!(
                    "a node of a TLS cluster needs --tls-ca, --tls-cert and --tls-key (or {CA_ENV}, {CERT_ENV}, {KEY_ENV}); {} missing",
                    missing.join(" and ")
                )))
            }
        }
    }

    fn with_ca(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<Self, TlsError> {
        let ca_pem = read("CA certificate", ca)?;
        let mut roots = RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(certificates(&ca_pem));
        if added == 0 {
            return Err(TlsError::Empty { what: "CA certificate", path: ca.display().to_string(), kind: "certificate" });
        }
        let identity = identity.map(|(cert, key)| Identity::load(cert, key)).transpose()?;
        Ok(Self { ca_pem, roots: Arc::new(roots), identity })
    }

    /// The rustls server config a node serves with (ALPN h2 for gRPC, http/1.1 for the rest).
    pub fn server_config(&self) -> Option<Arc<ServerConfig>> {
        self.identity.as_ref().map(|i| Arc::clone(&i.server))
    }

    /// A node's certificate and key, as PEM, for tonic's server.
    pub fn identity_pem(&self) -> Option<(&[u8], &[u8])> {
        self.identity.as_ref().map(|i| (i.cert_pem.as_slice(), i.key_pem.as_slice()))
    }

    /// The rustls client config for tokq's own calls (the executor count).
    pub fn client_config(&self) -> Arc<ClientConfig> {
        let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(Arc::clone(&self.roots))
            .with_no_client_auth();
        Arc::new(config)
    }

    /// `endpoint` over TLS, checked against the CA: an `http://` endpoint (the two Ballista
    /// builds itself) is made again as `https://` with Ballista's timeouts and windows.
    pub fn secure(&self, endpoint: Endpoint) -> Result<Endpoint, tonic::transport::Error> {
        let endpoint = if endpoint.uri().scheme_str() == Some("http") {
            let authority = endpoint.uri().authority().map_or("", |a| a.as_str());
            create_grpc_client_endpoint(format!("https://{authority}"), Some(&GrpcClientConfig::from(&BallistaConfig::default())))?
        } else {
            endpoint
        };
        endpoint.tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&self.ca_pem)))
    }
}

impl Identity {
    fn load(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let cert_pem = read("certificate", cert)?;
        let key_pem = read("key", key)?;
        let chain: Vec<CertificateDer<'static>> = certificates(&cert_pem);
        if chain.is_empty() {
            return Err(TlsError::Empty { what: "certificate", path: cert.display().to_string(), kind: "certificate" });
        }
        let private = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|_| TlsError::Empty { what: "key", path: key.display().to_string(), kind: "private key" })?;
        let refused = |cause| TlsError::Identity { cert: cert.display().to_string(), key: key.display().to_string(), cause };
        let mut server = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(refused)?
            .with_no_client_auth()
            .with_single_cert(chain, private)
            .map_err(refused)?;
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self { cert_pem, key_pem, server: Arc::new(server) })
    }
}

fn or_env(given: &Option<PathBuf>, var: &str) -> Option<PathBuf> {
    given.clone().or_else(|| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from))
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|cause| TlsError::Unreadable { what, path: path.display().to_string(), cause })
}

fn certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem).filter_map(Result::ok).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA certificate and its key, and a key of something else, made for these tests by
    /// `scheduler/certs.sh` (they protect nothing).
    const CA: &str = "-----BEGIN CERTIFICATE-----
MIIBmDCCAT+gAwIBAgIUfOj7cfphgu8PRhndrwJ1vHSnPfAwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPdG9rcSBjbHVzdGVyIENBMB4XDTI2MTEyODE1MDgyMloXDTM2
MTEyNTE1MDgyMlowGjEYMBYGA1UEAwwPdG9rcSBjbHVzdGVyIENBMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAExS0GpQNQapKYr1vlhQGetdi9Ps9hLeSWTo65xouy
HfkznmeKY+W3x1Bf933T8zAS2F0XRNfzQGg384xAF8gTfKNjMGEwHQYDVR0OBBYE
FKpRDPp2lM/JKi+S+SRKyumQPuQaMB8GA1UdIwQYMBaAFKpRDPp2lM/JKi+S+SRK
yumQPuQaMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49
BAMCA0cAMEQCIBHLTIDe7CRpFKpVsmlBkGBP4UfFfILPDSncACiT2XWjAiA8m3uW
nWvAOcA3TLDmcI2xgZWQOHNW9uJE0EBf9CAuwg==
-----END CERTIFICATE-----
";
    const CA_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgYQW0DooE+Acr127G
Ld3Wd1K5hi8oyID4GpSr/6Y/TP2hRANCAATFLQalA1BqkpivW+WFAZ612L0+z2Et
5JZOjrnGi7Id+TOeZ4pj5bfHUF/3fdPzMBLYXRdE1/NAaDfzjEAXyBN8
-----END PRIVATE KEY-----
";
    const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgY7IuvGStHbwem0il
AF/ykjtxe6QrLy4MchdWSD3r6iGhRANCAARcV8Kvr18QYCFutv5NO+jF8LyF2JJB
ruNcLyEzxghwQDgUTIruLGH/ry6DjgRl76Sgv1Vr7B8BrUDmu581OVc0
-----END PRIVATE KEY-----
";

    fn files(dir: &Path, ca: Option<&str>, cert: Option<&str>, key: Option<&str>) -> TlsFiles {
        let put = |name: &str, body: Option<&str>| {
            body.map(|b| {
                let p = dir.join(name);
                std::fs::write(&p, b).unwrap();
                p
            })
        };
        TlsFiles { ca: put("ca.pem", ca), cert: put("node.pem", cert), key: put("node.key", key) }
    }

    fn error(r: Result<Option<ClusterTls>, TlsError>) -> String {
        r.expect_err("an error").to_string()
    }

    #[test]
    fn a_node_needs_all_three_files_and_is_told_which_are_missing() {
        let d = tempfile::tempdir().unwrap();
        assert!(ClusterTls::node(&TlsFiles::default()).unwrap().is_none(), "no files: clear text");
        let only_ca = error(ClusterTls::node(&files(d.path(), Some(CA), None, None)));
        assert!(only_ca.contains("--tls-cert and --tls-key missing"), "{only_ca}");
        let served = ClusterTls::node(&files(d.path(), Some(CA), Some(CA), Some(CA_KEY))).unwrap().unwrap();
        assert!(served.server_config().is_some() && served.identity_pem().is_some());
        let client = ClusterTls::client(&files(d.path(), Some(CA), Some(CA), Some(CA_KEY))).unwrap().unwrap();
        assert!(client.server_config().is_none(), "a client serves nothing");
    }

    #[test]
    fn bad_files_are_named_with_what_they_lack() {
        let d = tempfile::tempdir().unwrap();
        let missing = error(ClusterTls::client(&TlsFiles { ca: Some(d.path().join("nope.pem")), ..Default::default() }));
        assert!(missing.starts_with("cannot read the TLS CA certificate") && missing.contains("nope.pem"), "{missing}");
        let not_pem = error(ClusterTls::client(&files(d.path(), Some("not a certificate"), None, None)));
        assert!(not_pem.contains("ca.pem holds no PEM certificate"), "{not_pem}");
        let key_as_cert = error(ClusterTls::node(&files(d.path(), Some(CA), Some(CA_KEY), Some(CA_KEY))));
        assert!(key_as_cert.contains("node.pem holds no PEM certificate"), "{key_as_cert}");
        let cert_as_key = error(ClusterTls::node(&files(d.path(), Some(CA), Some(CA), Some(CA))));
        assert!(cert_as_key.contains("node.key holds no PEM private key"), "{cert_as_key}");
        let mismatch = error(ClusterTls::node(&files(d.path(), Some(CA), Some(CA), Some(OTHER_KEY))));
        assert!(mismatch.starts_with("cannot serve TLS with the certificate") && mismatch.contains("Mismatch"), "{mismatch}");
    }

    #[test]
    fn ballistas_clear_text_endpoints_become_tls_ones_to_the_same_address() {
        let d = tempfile::tempdir().unwrap();
        let tls = ClusterTls::client(&files(d.path(), Some(CA), None, None)).unwrap().unwrap();
        let secured = tls.secure(Endpoint::from_static("http://10.0.0.7:50050")).unwrap();
        assert_eq!(secured.uri().to_string(), "https://10.0.0.7:50050/");
        let kept = tls.secure(Endpoint::from_static("https://node-3.internal:50051")).unwrap();
        assert_eq!(kept.uri().to_string(), "https://node-3.internal:50051/");
    }
}
