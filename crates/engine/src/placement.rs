//! Where a run's statements execute, and with what: this process or a Ballista cluster, the
//! partitions, the memory pool, what a malformed row does. `tokq run`'s options and Python's
//! `tokq.run` / `tokq.sql` arguments both become a [`Placement`]; its [`Placement::context`]
//! and [`Placement::runner`] are the run the faces then only watch.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use sha2::Digest;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokq_udfs::OnBadRow;

use crate::recipe::Recipe;
use crate::runner::Runner;
use crate::session::{local_context, with_tokq};

/// Where and how a run's statements execute.
#[derive(Debug, Clone)]
pub struct Placement {
    /// A Ballista scheduler (`df://host:50050`), or None for this process.
    pub cluster: Option<String>,
    /// Partitions; None is this machine's cores.
    pub partitions: Option<usize>,
    /// What a malformed input row does.
    pub on_bad_row: OnBadRow,
    /// Fail a statement that reads a column some input file lacks (default: read NULL there
    /// and report the file).
    pub strict_schema: bool,
    /// Every COPY may replace another recipe's output, or files tokq did not write, in its target.
    pub overwrite: bool,
    /// DataFusion's memory pool for a local run, e.g. `4G`.
    pub memory_limit: Option<String>,
    /// With a cluster: how long to wait for an executor.
    pub wait_for_executors: Duration,
    /// With a cluster: the secret's file (else TOKQ_CLUSTER_SECRET).
    pub secret_file: Option<PathBuf>,
    /// With a cluster that speaks TLS: the CA that signed its nodes' certificates (else
    /// TOKQ_TLS_CA; neither: clear text).
    pub tls_ca: Option<PathBuf>,
}

impl Default for Placement {
    fn default() -> Self {
        Self { cluster: None, partitions: None, on_bad_row: OnBadRow::Fail, strict_schema: false, overwrite: false, memory_limit: None, wait_for_executors: Duration::from_secs(60), secret_file: None, tls_ca: None }
    }
}

impl Placement {
    /// A context with every tokq function, local or on the cluster.
    pub async fn context(&self) -> anyhow::Result<SessionContext> {
        #[cfg(feature = "cluster")]
        let member = match &self.cluster {
            Some(_) => crate::cluster::Credentials {
                secret: crate::cluster::secret::ClusterSecret::load(self.secret_file.as_deref())?,
                tls: crate::cluster::tls::ClusterTls::client(&crate::cluster::tls::TlsFiles { ca: self.tls_ca.clone(), ..Default::default() })?.map(Into::into),
            },
            None => Default::default(),
        };
        let mut config = match &self.cluster {
            #[cfg(feature = "cluster")]
            Some(_) => crate::cluster::member_config(&member),
            _ => with_tokq(SessionConfig::new()),
        };
        // DataFusion's default is this machine's cores, Ballista's 16: one default for both, so that
        // what depends on the partitions (packed rows, partition-layout files) is the same locally
        // and on a cluster. Give a cluster more with --partitions.
        let n = self.partitions.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if n == 0 {
            bail!("--partitions must be at least 1");
        }
        config = config.with_target_partitions(n);
        config = config.set_str("tokq.on_bad_row", self.on_bad_row.as_str());
        config = config.set_bool("tokq.strict_schema", self.strict_schema);
        config = config.set_bool("tokq.overwrite", self.overwrite);
        // The run's name on the cluster, by which a stopped run cancels its jobs.
        #[cfg(feature = "cluster")]
        if self.cluster.is_some() {
            config = ballista_core::extension::SessionConfigExt::with_ballista_job_name(config, &run_name());
        }
        match &self.cluster {
            Some(_) if self.memory_limit.is_some() => bail!("--memory-limit applies to local runs; give executors --memory-pool-bytes"),
            #[cfg(feature = "cluster")]
            Some(url) => crate::cluster::remote_context(url, config, &member, self.wait_for_executors).await,
            #[cfg(not(feature = "cluster"))]
            Some(_) => bail!("this tokq was built without the 'cluster' feature"),
            None => {
                let ctx = local_context(config)?;
                if let Some(limit) = &self.memory_limit {
                    ctx.sql(&format!("SET datafusion.runtime.memory_limit = '{}'", limit.replace('\'', "")))
                        .await
                        .with_context(|| format!("--memory-limit '{limit}': expected a size such as 512M or 4G"))?;
                    share_fairly(&ctx)?;
                }
                Ok(ctx)
            }
        }
    }

    /// A runner of `recipe` on `ctx` (a context of this placement), showing no progress and
    /// keeping no result rows until the face sets them.
    pub fn runner<'a>(&self, ctx: &'a SessionContext, recipe: &'a Recipe) -> Runner<'a> {
        Runner { cluster: self.cluster.clone(), ..Runner::new(ctx, recipe) }
    }
}

/// Shares `ctx`'s memory limit, in place, fairly among the operators that can spill, as a
/// Ballista executor shares its pool. DataFusion's `memory_limit` setting makes a first-come
/// pool: two partitions' sorts (packing by source) raced for it, the one that lost could not hold
/// even one batch after spilling all it had, and the run failed out of memory now and then where
/// the other partition held nearly the whole pool (or hung). `--memory-limit` and a recipe's own
/// `SET datafusion.runtime.memory_limit` both end here.
pub(crate) fn share_fairly(ctx: &SessionContext) -> datafusion::error::Result<()> {
    use datafusion::execution::memory_pool::{FairSpillPool, MemoryLimit, TrackConsumersPool};
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::execution::SessionStateBuilder;
    let state = ctx.state_ref();
    let mut state = state.write();
    let runtime = state.runtime_env();
    let MemoryLimit::Finite(size) = runtime.memory_pool.memory_limit() else { return Ok(()) };
    // Five consumers named in an out-of-memory error, as DataFusion's own limit does.
    let pool = TrackConsumersPool::new(FairSpillPool::new(size), std::num::NonZeroUsize::new(5).unwrap_or(std::num::NonZeroUsize::MIN));
    let runtime = RuntimeEnvBuilder::from_runtime_env(runtime).with_memory_pool(std::sync::Arc::new(pool)).build_arc()?;
    *state = SessionStateBuilder::new_from_existing(state.clone()).with_runtime_env(runtime).build();
    Ok(())
}

/// A name for this run, unique among a cluster's clients (from host, process and time): its
/// jobs' name on the cluster.
#[cfg(feature = "cluster")]
fn run_name() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let digest = sha2::Sha256::digest(format!("{}:{nanos}", *crate::sink::exec::WRITER));
    format!("tokq-run-{}", hex::encode(&digest[..12]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_context_carries_the_partitions_and_the_bad_row_choice() {
        let p = Placement { partitions: Some(3), on_bad_row: OnBadRow::Skip, ..Placement::default() };
        let ctx = p.context().await.unwrap();
        let state = ctx.state();
        assert_eq!(state.config().target_partitions(), 3);
        assert_eq!(tokq_udfs::TokqOptions::from_config(state.config().options()).on_bad_row, OnBadRow::Skip);
    }

    #[tokio::test]
    async fn zero_partitions_and_a_cluster_memory_limit_are_refused_in_one_line() {
        let refusal = |p: Placement| async move { p.context().await.err().map(|e| e.to_string()) };
        assert_eq!(refusal(Placement { partitions: Some(0), ..Placement::default() }).await.as_deref(), Some("--partitions must be at least 1"));
        let p = Placement { cluster: Some("df://127.0.0.1:1".into()), memory_limit: Some("1G".into()), ..Placement::default() };
        assert_eq!(refusal(p).await.as_deref(), Some("--memory-limit applies to local runs; give executors --memory-pool-bytes"));
    }

    /// Two sorts of a pool of 100 MB each get half; the pool's error names them.
    fn assert_fair(ctx: &SessionContext) {
        use datafusion::execution::memory_pool::MemoryConsumer;
        let pool = ctx.runtime_env().memory_pool.clone();
        let mb = 1 << 20;
        let (first, second) = (MemoryConsumer::new("sort 1").with_can_spill(true).register(&pool), MemoryConsumer::new("sort 2").with_can_spill(true).register(&pool));
        // A first-come pool would give the first sort 90 MB and leave the second one 10.
        assert!(first.try_grow(90 * mb).is_err());
        first.try_grow(50 * mb).unwrap();
        second.try_grow(50 * mb).unwrap();
        let err = MemoryConsumer::new("merge").register(&pool).try_grow(mb).unwrap_err().to_string();
        assert!(err.contains("sort 1") && err.contains("sort 2"), "the error names the largest consumers: {err}");
    }

    #[tokio::test]
    async fn the_memory_limit_is_shared_fairly_by_the_operators_that_can_spill() {
        let p = Placement { memory_limit: Some("100M".into()), ..Placement::default() };
        assert_fair(&p.context().await.unwrap());
    }

    #[tokio::test]
    async fn a_recipes_own_memory_limit_is_shared_fairly_too() {
        let p = Placement::default();
        let ctx = p.context().await.unwrap();
        let recipe = Recipe::parse("r", "SET datafusion.runtime.memory_limit = '100M'; SELECT 1", &Default::default()).unwrap();
        p.runner(&ctx, &recipe).run().await.unwrap();
        assert_fair(&ctx);
    }

    #[tokio::test]
    async fn two_runs_at_once_each_count_their_own_reads() {
        let dir = tempfile::tempdir().unwrap();
        let recipe = |name: &str, rows: usize| {
            let path = dir.path().join(format!("{name}.jsonl"));
            std::fs::write(&path, "{\"text\": \"x\"}\n".repeat(rows)).unwrap();
            Recipe::parse(name, &format!("SELECT count(*) FROM read_jsonl('{}')", path.display()), &Default::default()).unwrap()
        };
        let (small, large) = (recipe("small", 10), recipe("large", 20_000));
        let p = Placement { partitions: Some(2), ..Placement::default() };
        let (a, b) = (p.context().await.unwrap(), p.context().await.unwrap());
        let (one, two) = (p.runner(&a, &small), p.runner(&b, &large));
        let (small, large) = tokio::join!(one.run(), two.run());
        assert_eq!((small.unwrap().rows_read, large.unwrap().rows_read), (10, 20_000));
    }
}
