//! What a run is doing, for Python's progress callback: the engine tells [`Watch`] when each
//! statement starts and ends, and the waiting thread reads it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokq_engine::lineage::counters::ReadCounters;
use tokq_engine::stats::Progress;

/// How often the callback is called while a statement runs.
pub const EVERY: Duration = Duration::from_millis(500);

/// The running statement, if any.
#[derive(Default)]
pub struct Watch {
    now: Mutex<Option<Running>>,
}

struct Running {
    label: String,
    total_bytes: Option<u64>,
    read: Arc<ReadCounters>,
    bytes_before: u64,
    rows_before: u64,
    since: Instant,
    /// What a cluster's executors have committed, in place of this process's reads.
    remote: Option<(u64, u64)>,
}

/// One progress report.
pub struct Report {
    pub statement: String,
    pub bytes: u64,
    pub total_bytes: Option<u64>,
    pub rows: u64,
    pub seconds: f64,
}

impl Watch {
    /// The running statement's progress.
    pub fn now(&self) -> Option<Report> {
        let now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        let r = now.as_ref()?;
        let (bytes, rows) = r.remote.unwrap_or_else(|| (r.read.bytes_read().saturating_sub(r.bytes_before), r.read.rows_read().saturating_sub(r.rows_before)));
        Some(Report { statement: r.label.clone(), bytes, total_bytes: r.total_bytes, rows, seconds: r.since.elapsed().as_secs_f64() })
    }
}

impl Progress for Watch {
    fn start(&self, label: &str, total_bytes: Option<u64>, read: &Arc<ReadCounters>) {
        let running = Running {
            label: label.to_string(),
            total_bytes,
            read: Arc::clone(read),
            bytes_before: read.bytes_read(),
            rows_before: read.rows_read(),
            since: Instant::now(),
            remote: None,
        };
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = Some(running);
    }

    fn finish(&self) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn remote(&self, bytes: u64, rows: u64) {
        if let Some(r) = self.now.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            r.remote = Some((bytes, rows));
        }
    }
}
