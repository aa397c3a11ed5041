//! What every Ballista node shares, and the client of `tokq run --cluster`. Every node gets the
//! same config producer (tokq options), the same functions (built from the same session state)
//! and the same plan codecs, so plans decode identically everywhere. The CLI starts the
//! scheduler and executor processes over these. Members of a cluster with a secret present its
//! token on every call ([`secret`]).

pub mod secret;
pub(crate) mod shuffle;
pub mod tls;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ballista::prelude::SessionContextExt;
use ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use ballista_core::extension::EndpointOverrideFn;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use crate::codec::{TokqLogicalCodec, TokqPhysicalCodec};

use crate::session::{base_state, local_context, with_tokq};
use secret::ClusterSecret;
use tls::ClusterTls;

/// What a member presents and how it speaks: the secret's token on every call, TLS on every
/// connection; each optional.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    /// The cluster secret.
    pub secret: Option<ClusterSecret>,
    /// The cluster's TLS.
    pub tls: Option<Arc<ClusterTls>>,
}

impl Credentials {
    /// The adjustment every Ballista connection of this member passes through, if it needs one.
    pub fn endpoint_override(&self) -> Option<EndpointOverrideFn> {
        if self.secret.is_none() && self.tls.is_none() {
            return None;
        }
        let agent = self.secret.as_ref().map(ClusterSecret::user_agent);
        let tls = self.tls.clone();
        Some(Arc::new(move |mut endpoint| {
            if let Some(tls) = &tls {
                endpoint = tls.secure(endpoint)?;
            }
            if let Some(agent) = &agent {
                endpoint = endpoint.user_agent(agent.clone())?;
            }
            Ok(endpoint)
        }))
    }
}

/// tokq's logical codec over Ballista's.
pub fn logical_codec() -> Arc<TokqLogicalCodec> {
    Arc::new(TokqLogicalCodec::new(Arc::new(BallistaLogicalExtensionCodec::default())))
}

/// tokq's physical codec over Ballista's.
pub fn physical_codec() -> Arc<TokqPhysicalCodec> {
    Arc::new(TokqPhysicalCodec::new(Arc::new(BallistaPhysicalExtensionCodec::default())))
}

/// The config every node starts from.
///
/// Ballista's stage planner is the static one, not its adaptive one (the default in Ballista
/// 55): when one side of an outer join with a narrowing projection turns out empty at run time
/// (a dedup with no exact duplicates), the adaptive planner replaces that side's exchange by an
/// empty plan, DataFusion's distribution rule puts an exchange back, and the job makes new
/// one-task stages without end. A recipe can still `SET ballista.planner.adaptive.enabled = true`.
///
/// Joins are hash joins, as in a local run, not Ballista's default sort-merge joins: the static
/// planner broadcasts a hash join's small side (a dedup's exact groups, its clusters, the ranks of
/// its sources) to every task, where a sort-merge join shuffled and sorted the large side with
/// its text once per join: the dedup's last statement took 4.0 s on two executors against 1.2 s
/// locally, and 1.3 s with hash joins. A recipe whose join build side cannot fit an executor's
/// memory can still `SET datafusion.optimizer.prefer_hash_join = false` (sort-merge joins spill).
pub fn cluster_config() -> SessionConfig {
    with_tokq(
        SessionConfig::new_with_ballista()
            .with_ballista_logical_extension_codec(logical_codec())
            .with_ballista_physical_extension_codec(physical_codec()),
    )
    .set_bool(BALLISTA_ADAPTIVE_PLANNER_ENABLED, false)
    .set_bool("datafusion.optimizer.prefer_hash_join", true)
}

/// [`cluster_config`] for a member of a cluster: every connection Ballista opens from this config
/// (to the scheduler, to executors for shuffle data and results) presents the secret and speaks
/// TLS if the member has them.
pub fn member_config(member: &Credentials) -> SessionConfig {
    // Kept in the config too, for a client's own calls to its scheduler ([`cancel_session`]).
    let config = cluster_config().with_ballista_use_tls(member.tls.is_some()).with_extension(Arc::new(member.clone()));
    match member.endpoint_override() {
        Some(o) => config.with_ballista_override_create_grpc_client_endpoint(o),
        None => config,
    }
}

/// The scheduler's session: tokq functions on top of the client's settings.
pub fn cluster_state(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    Ok(local_context(config)?.state())
}

/// A client context for `tokq run --cluster df://HOST:PORT`; `config` starts from
/// [`member_config`] with the same credentials. It waits at most `executor_wait` for the scheduler to
/// have an executor (see [`wait_for_executors`]).
pub async fn remote_context(url: &str, config: SessionConfig, member: &Credentials, executor_wait: Duration) -> anyhow::Result<SessionContext> {
    let ctx = SessionContext::remote_with_state(url, base_state(config)?)
        .await
        .with_context(|| format!("cannot connect to the scheduler at {url}"))?;
    wait_for_executors(url, member, executor_wait).await?;
    // Ballista's upgrade replaces the function list, so tokq's functions are added afterwards.
    crate::register_all(&ctx);
    Ok(ctx)
}


/// The path on a tokq scheduler's port that answers how many executors it has (a number), for
/// members only. It does not depend on Ballista's REST API, which may be off.
pub const EXECUTORS_PATH: &str = "/tokq/executors";

/// Waits until the scheduler at `url` (`df://HOST:PORT`) has an executor, asking it every half
/// second ([`EXECUTORS_PATH`]), and fails with one line after `wait`. It runs before any job is
/// submitted: a job queued on a cluster without executors would wait silently, then run when
/// executors join minutes later and write into its output behind the user's back.
pub async fn wait_for_executors(url: &str, member: &Credentials, wait: Duration) -> anyhow::Result<()> {
    let addr = url.strip_prefix("df://").unwrap_or(url).trim_end_matches('/');
    let deadline = Instant::now() + wait;
    loop {
        let asked = executor_count(addr, member).await.with_context(|| format!("cannot ask the scheduler at {url} for its executors"))?;
        if asked.map_err(|refused| anyhow::anyhow!("{refused}"))? > 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the scheduler at {url} has no executor after {} s; start one (tokq executor --scheduler-host ... --scheduler-port ...), \
                 or wait longer with --wait-for-executors SECONDS; no job was submitted",
                wait.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Before an executor starts: whether the scheduler at `addr` admits its secret and its TLS. A
/// refused executor would poll for work and log the refusal for ever; it fails with one line
/// instead. A scheduler not up yet is asked again every second for `wait`, as long as
/// Ballista's own connection timeout.
pub async fn admitted(addr: &str, member: &Credentials, wait: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + wait;
    loop {
        match executor_count(addr, member).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(refused)) => anyhow::bail!("the scheduler at {addr} refused this executor: {refused}"),
            Err(e) if Instant::now() >= deadline => {
                return Err(e.context(format!("cannot reach the scheduler at {addr} after {} s; start it first, or check --scheduler-host and --scheduler-port", wait.as_secs())));
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// How many executors the scheduler at `addr` (HOST:PORT) has, or its refusal of this member: a
/// secret it does not admit, or TLS on one side only or with a certificate the CA did not sign.
/// Neither mends itself by asking again.
pub async fn executor_count(addr: &str, member: &Credentials) -> anyhow::Result<Result<usize, String>> {
    Ok(match ask(addr, member, &format!("GET {EXECUTORS_PATH}")).await? {
        Ok(body) => Ok(body.trim().parse().with_context(|| format!("unexpected answer from {EXECUTORS_PATH}: {body:.200}; is this a tokq scheduler of this version?"))?),
        Err(refused) => Err(refused),
    })
}

/// The path on a tokq scheduler's port that cancels every running job of a run (POST; the jobs'
/// name, `ballista.job.name`, which a cluster run sets), for members only; it answers how many
/// it cancelled.
pub const CANCEL_PATH: &str = "/tokq/cancel/{run}";

/// Cancels the jobs this client's run has on the cluster at `url`: those of its job name. Ballista lets a job run
/// on when its client goes: a run stopped by Ctrl-C would go on writing into its output behind the
/// user's back, beside the rerun. Best effort: a scheduler that does not answer is logged.
pub async fn cancel_session(ctx: &SessionContext, url: &str) {
    let member = ctx.state().config().get_extension::<Credentials>().map_or_else(Credentials::default, |m| m.as_ref().clone());
    let addr = url.strip_prefix("df://").unwrap_or(url).trim_end_matches('/');
    let state = ctx.state();
    let run = state.config_options().entries().into_iter().find(|e| e.key == ballista_core::config::BALLISTA_JOB_NAME).and_then(|e| e.value).unwrap_or_default();
    if run.is_empty() || run.contains(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
        log::warn!("this run's jobs on the cluster at {url} are not cancelled: their name '{run}' is not tokq's");
        return;
    }
    let request = format!("POST {}", CANCEL_PATH.replace("{run}", &run));
    match tokio::time::timeout(Duration::from_secs(10), ask(addr, &member, &request)).await {
        Ok(Ok(Ok(n))) => log::info!("cancelled {} job(s) on the cluster at {url}", n.trim()),
        Ok(Ok(Err(refused))) => log::warn!("could not cancel this run's jobs on the cluster at {url}: {refused}"),
        Ok(Err(e)) => log::warn!("could not cancel this run's jobs on the cluster at {url}: {e}"),
        Err(_) => log::warn!("could not cancel this run's jobs on the cluster at {url}: no answer in 10 s"),
    }
}

/// Sends `request` (`METHOD PATH`) to a tokq scheduler's own paths as `member`, over TLS if it
/// has TLS: the body of the answer, or the scheduler's refusal of this member.
async fn ask(addr: &str, member: &Credentials, request: &str) -> anyhow::Result<Result<String, String>> {
    let agent = member.secret.as_ref().map_or_else(|| "tokq".to_string(), ClusterSecret::user_agent);
    let request = format!("{request} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: {agent}\r\nContent-Length: 0\r\n\r\n");
    let exchanged = async {
        let tcp = TcpStream::connect(addr).await?;
        let Some(tls) = &member.tls else { return Ok(Ok(exchange(tcp, &request).await?)) };
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        match tokio_rustls::TlsConnector::from(tls.client_config()).connect(name, tcp).await {
            Ok(stream) => Ok(Ok(exchange(stream, &request).await?)),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof) => Ok(Err(format!(
                "TLS with the scheduler at {addr} failed ({e}): start it with --tls-cert and --tls-key, \
                 with a certificate that the CA given here (--tls-ca) signed and that names {host}"
            ))),
            Err(e) => Err(e),
        }
    };
    let reply = match tokio::time::timeout(Duration::from_secs(10), exchanged).await.context("no answer in 10 s")?? {
        Ok(reply) => reply,
        Err(refused) => return Ok(Err(refused)),
    };
    if member.tls.is_none() && (reply.is_empty() || reply.first() == Some(&TLS_ALERT)) {
        return Ok(Err(format!("the scheduler at {addr} speaks TLS only: give --tls-ca (or {}) with the CA that signed its certificate", tls::CA_ENV)));
    }
    let reply = String::from_utf8_lossy(&reply);
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    if head.split(' ').nth(1) == Some("401") {
        return Ok(Err(body.trim().to_string()));
    }
    Ok(Ok(body.to_string()))
}

/// The first byte of a TLS alert record: what a TLS server answers to plain HTTP.
const TLS_ALERT: u8 = 0x15;

/// Sends `request` on `stream` and reads the whole reply.
async fn exchange(mut stream: impl AsyncRead + AsyncWrite + Unpin, request: &str) -> std::io::Result<Vec<u8>> {
    stream.write_all(request.as_bytes()).await?;
    let mut reply = Vec::new();
    match stream.read_to_end(&mut reply).await {
        // A TLS peer that closes after its answer without a close_notify still answered.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !reply.is_empty() => Ok(reply),
        r => r.map(|_| reply),
    }
}

/// The one line for a client whose scheduler went away mid-run, whose transport says only
/// "h2 protocol error" or "transport error"; `None` for any other error.
pub fn lost_scheduler(url: &str, cause: &str) -> Option<String> {
    const SIGNS: [&str; 5] = ["h2 protocol error", "transport error", "error trying to connect", "connection refused", "broken pipe"];
    // A connection to another address is an executor's: the scheduler may be fine. A job the
    // scheduler reported as failed came from a scheduler that is there: a task's own transport
    // error is an executor's (a shuffle read from one that died).
    if crate::runner::executor_unreachable(cause, url) || cause.contains("Job failed due to") {
        return None;
    }
    let lower = cause.to_lowercase();
    SIGNS.iter().any(|s| lower.contains(s)).then(|| {
        format!(
            "lost the scheduler at {url} ({cause}); start it again and rerun the same command: \
             the files already committed are kept and not written again"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_transport_error_of_the_scheduler_is_a_lost_scheduler() {
        let url = "df://127.0.0.1:34535";
        let line = lost_scheduler(url, "tonic::transport::Error(Transport, hyper::Error(Io, BrokenPipe)): transport error").unwrap();
        assert!(line.starts_with("lost the scheduler at df://127.0.0.1:34535 ("), "{line}");
        // The scheduler reported the job failed: a task's read from a dead executor broke off.
        let task = "Job 038JFPMHPW000 failed: Job failed due to stage 3 failed: Task failed due to runtime execution error: \
                    ArrowError(IpcError(\"h2 protocol error: error reading a body from connection\"))";
        assert_eq!(lost_scheduler(url, task), None);
        assert_eq!(lost_scheduler(url, "no such table"), None);
    }
}
