//! What a run is doing, for Python's progress callback: the engine tells [`Watch`] when each
//! statement starts and ends, and the waiting thread reads it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokq_engine::lineage::counters::ReadCounters;
use tokq_engine::stats::Progress;

/// How often the callback is called while a statement runs.
pub const EVERY: Duration = Duration::from_millis(500);

/// The running statement, if any, and the last figures of those that ended since they were read.
#[derive(Default)]
pub struct Watch {
    now: Mutex<Option<Running>>,
    ended: Mutex<Vec<Report>>,
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

impl Running {
    fn report(&self) -> Report {
        let (bytes, rows) = self.remote.unwrap_or_else(|| (self.read.bytes_read().saturating_sub(self.bytes_before), self.read.rows_read().saturating_sub(self.rows_before)));
        Report { statement: self.label.clone(), bytes, total_bytes: self.total_bytes, rows, seconds: self.since.elapsed().as_secs_f64() }
    }
}

impl Watch {
    /// The running statement's progress.
    pub fn now(&self) -> Option<Report> {
        self.now.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(Running::report)
    }

    /// The final figures of the statements that ended since the last call: a statement shorter
    /// than [`EVERY`] is reported once too, and a bar ends at what was read.
    pub fn take_ended(&self) -> Vec<Report> {
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()))
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
        if let Some(r) = self.now.lock().unwrap_or_else(|p| p.into_inner()).take() {
            self.ended.lock().unwrap_or_else(|p| p.into_inner()).push(r.report());
        }
    }

    fn remote(&self, bytes: u64, rows: u64) {
        if let Some(r) = self.now.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            r.remote = Some((bytes, rows));
        }
    }
}
