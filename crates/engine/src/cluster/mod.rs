//! What every Ballista node shares, and the client of `tokq run --cluster`. Every node gets the
//! same config producer (tokq options), the same functions (built from the same session state)
//! and the same plan codecs, so plans decode identically everywhere. The CLI starts the
//! scheduler and executor processes over these. Members of a cluster with a secret present its
//! token on every call ([`secret`]).

pub mod secret;

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
use tokio::net::TcpStream;
use crate::codec::{TokqLogicalCodec, TokqPhysicalCodec};

use crate::session::{base_state, local_context, with_tokq};
use secret::ClusterSecret;

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
pub fn cluster_config() -> SessionConfig {
    with_tokq(
        SessionConfig::new_with_ballista()
            .with_ballista_logical_extension_codec(logical_codec())
            .with_ballista_physical_extension_codec(physical_codec()),
    )
    .set_bool(BALLISTA_ADAPTIVE_PLANNER_ENABLED, false)
}

/// [`cluster_config`] for a member of a cluster: with a secret, every connection Ballista opens
/// from this config (to the scheduler, to executors for shuffle data and results) presents it.
pub fn member_config(secret: Option<&ClusterSecret>) -> SessionConfig {
    match secret {
        Some(s) => cluster_config().with_ballista_override_create_grpc_client_endpoint(s.endpoint_override()),
        None => cluster_config(),
    }
}

/// The scheduler's session: tokq functions on top of the client's settings.
pub fn cluster_state(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    Ok(local_context(config)?.state())
}

/// A client context for `tokq run --cluster df://HOST:PORT`; `config` starts from
/// [`member_config`] with the same secret. It waits at most `executor_wait` for the scheduler to
/// have an executor (see [`wait_for_executors`]).
pub async fn remote_context(url: &str, config: SessionConfig, secret: Option<&ClusterSecret>, executor_wait: Duration) -> anyhow::Result<SessionContext> {
    let ctx = SessionContext::remote_with_state(url, base_state(config)?)
        .await
        .with_context(|| format!("cannot connect to the scheduler at {url}"))?;
    wait_for_executors(url, secret, executor_wait).await?;
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
pub async fn wait_for_executors(url: &str, secret: Option<&ClusterSecret>, wait: Duration) -> anyhow::Result<()> {
    let addr = url.strip_prefix("df://").unwrap_or(url).trim_end_matches('/');
    let deadline = Instant::now() + wait;
    loop {
        let asked = executors(addr, secret).await.with_context(|| format!("cannot ask the scheduler at {url} for its executors"))?;
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

/// Before an executor starts: whether the scheduler at `addr` admits its secret. A refused
/// executor would poll for work and log the refusal for ever; it fails with one line instead.
/// A scheduler not up yet is asked again every second for `wait`, as long as Ballista's own
/// connection timeout.
pub async fn admitted(addr: &str, secret: Option<&ClusterSecret>, wait: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + wait;
    loop {
        match executors(addr, secret).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(refused)) => anyhow::bail!("the scheduler at {addr} refused this executor: {refused}"),
            Err(e) if Instant::now() >= deadline => {
                return Err(e.context(format!("cannot reach the scheduler at {addr} after {} s; start it first, or check --scheduler-host and --scheduler-port", wait.as_secs())));
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// How many executors the scheduler has, or its refusal of this secret.
async fn executors(addr: &str, secret: Option<&ClusterSecret>) -> anyhow::Result<Result<usize, String>> {
    let agent = secret.map_or_else(|| "tokq".to_string(), ClusterSecret::user_agent);
    let ask = async {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(format!("GET {EXECUTORS_PATH} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: {agent}\r\n\r\n").as_bytes()).await?;
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).await?;
        Ok::<_, std::io::Error>(reply)
    };
    let reply = tokio::time::timeout(Duration::from_secs(10), ask).await.context("no answer in 10 s")??;
    let reply = String::from_utf8_lossy(&reply);
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    if head.split(' ').nth(1) == Some("401") {
        return Ok(Err(body.trim().to_string()));
    }
    let count = body.trim().parse().with_context(|| format!("unexpected answer from {EXECUTORS_PATH}: {body:.200}; is this a tokq scheduler of this version?"))?;
    Ok(Ok(count))
}

/// The one line for a client whose scheduler went away mid-run, whose transport says only
/// "h2 protocol error" or "transport error"; `None` for any other error.
pub fn lost_scheduler(url: &str, cause: &str) -> Option<String> {
    const SIGNS: [&str; 5] = ["h2 protocol error", "transport error", "error trying to connect", "connection refused", "broken pipe"];
    // A connection to another address is an executor's: the scheduler may be fine.
    if crate::runner::unreachable_address(cause).is_some_and(|at| !url.ends_with(&format!("//{at}"))) {
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
