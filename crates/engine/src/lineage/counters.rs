//! What the lineage scans read, counted twice over:
//! - per scan and file, as DataFusion metrics (`bytes_scanned`, `rows_read`, `bad_rows`, each
//!   labelled with its `file`), as `datasource-parquet`'s metrics are: `EXPLAIN ANALYZE` shows
//!   them, and the sink reads a file's rows from them where it runs, on a cluster's executor too;
//! - per run, live ([`ReadCounters`]): a run installs them on its session, every scan planned in
//!   that session adds to them, and the runner and progress read them while statements run. Two
//!   runs in one process (two `tokq.run` calls from Python) have two sessions, so each counts its
//!   own reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, MetricType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};

use super::scan::as_lineage_scan;

/// Rows read from one input file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SourceCount {
    /// Rows read.
    pub rows: u64,
    /// Malformed rows skipped.
    pub bad_rows: u64,
}

/// A run's read counters at one moment.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Snapshot {
    /// Input bytes read.
    pub bytes_read: u64,
    /// Rows read.
    pub rows_read: u64,
    /// Malformed rows skipped.
    pub bad_rows: u64,
    /// Per input file.
    pub per_source: BTreeMap<String, SourceCount>,
}

/// The live read counters of one run, carried on its session's config. Only scans that run in
/// this process add to them: on a cluster the executors' metrics count instead.
#[derive(Debug, Default)]
pub struct ReadCounters {
    bytes: AtomicU64,
    rows: AtomicU64,
    bad_rows: AtomicU64,
    per_source: Mutex<BTreeMap<String, SourceCount>>,
}

impl ReadCounters {
    /// Fresh counters for a run on `ctx`: the scans planned from now on count into them.
    pub fn install(ctx: &SessionContext) -> Arc<Self> {
        let counters = Arc::new(Self::default());
        ctx.state_ref().write().config_mut().set_extension(Arc::clone(&counters));
        counters
    }

    /// The counters of the run a session belongs to, if a run installed them.
    pub fn of(config: &SessionConfig) -> Option<Arc<Self>> {
        config.get_extension::<Self>()
    }

    /// Input bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// Rows read so far.
    pub fn rows_read(&self) -> u64 {
        self.rows.load(Relaxed)
    }

    /// All counters.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes_read: self.bytes.load(Relaxed),
            rows_read: self.rows.load(Relaxed),
            bad_rows: self.bad_rows.load(Relaxed),
            per_source: self.per_source.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }
}

/// One file's counters in one scan: its metrics, and the run's live counters where there are.
#[derive(Debug, Clone)]
pub(crate) struct FileTally {
    key: String,
    bytes: Count,
    rows: Count,
    bad_rows: Count,
    run: Option<Arc<ReadCounters>>,
}

impl FileTally {
    /// Counts input bytes read (compressed, as stored).
    pub fn bytes(&self, n: u64) {
        self.bytes.add(n as usize);
        if let Some(run) = &self.run {
            run.bytes.fetch_add(n, Relaxed);
        }
    }

    /// Counts rows read and malformed rows skipped.
    pub fn rows(&self, rows: u64, bad_rows: u64) {
        self.rows.add(rows as usize);
        self.bad_rows.add(bad_rows as usize);
        if let Some(run) = &self.run {
            run.rows.fetch_add(rows, Relaxed);
            run.bad_rows.fetch_add(bad_rows, Relaxed);
            let mut m = run.per_source.lock().unwrap_or_else(|p| p.into_inner());
            let c = m.entry(self.key.clone()).or_default();
            c.rows += rows;
            c.bad_rows += bad_rows;
        }
    }
}

/// A lineage scan's metrics, with an index of its files' tallies for the sink. Clones (the
/// source with a projection or a batch size, the plan without some files) share them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScanMetrics {
    set: ExecutionPlanMetricsSet,
    files: Arc<Mutex<HashMap<String, FileTally>>>,
    run: Option<Arc<ReadCounters>>,
}

impl ScanMetrics {
    /// Metrics that also count into a run's live counters.
    pub fn new(run: Option<Arc<ReadCounters>>) -> Self {
        Self { run, ..Self::default() }
    }

    /// What `EXPLAIN ANALYZE` and DataFusion's own stream metrics use.
    pub fn set(&self) -> &ExecutionPlanMetricsSet {
        &self.set
    }

    /// The tally of a file this scan reads in `partition`, registered on first use.
    pub fn file(&self, key: &str, partition: usize) -> FileTally {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let metric = |name: &'static str| MetricBuilder::new(&self.set).with_new_label("file", key.to_string()).with_type(MetricType::Summary).counter(name, partition);
        files
            .entry(key.to_string())
            .or_insert_with(|| FileTally { key: key.to_string(), bytes: metric("bytes_scanned"), rows: metric("rows_read"), bad_rows: metric("bad_rows"), run: self.run.clone() })
            .clone()
    }

    /// Rows read so far from one file.
    fn rows_of(&self, key: &str) -> u64 {
        self.files.lock().unwrap_or_else(|p| p.into_inner()).get(key).map_or(0, |t| t.rows.value() as u64)
    }
}

/// The metrics of every lineage scan in a plan.
pub(crate) fn scans_in(plan: &Arc<dyn ExecutionPlan>) -> Vec<ScanMetrics> {
    let mut found = Vec::new();
    let _ = plan.apply(|p| {
        if let Some((_, source)) = as_lineage_scan(p.as_ref()) {
            found.push(source.metrics.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

/// Rows read so far from one file by any of `scans`.
pub(crate) fn rows_of(scans: &[ScanMetrics], key: &str) -> u64 {
    scans.iter().map(|s| s.rows_of(key)).sum()
}
