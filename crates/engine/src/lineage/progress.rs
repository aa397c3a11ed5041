//! Process-wide read counters that the CLI shows as progress and in its summary. Counters only
//! see scans that run in this process: on a cluster the executors count for themselves.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{LazyLock, Mutex};

static BYTES: AtomicU64 = AtomicU64::new(0);
static ROWS: AtomicU64 = AtomicU64::new(0);
static BAD_ROWS: AtomicU64 = AtomicU64::new(0);
static PER_SOURCE: LazyLock<Mutex<BTreeMap<String, SourceCount>>> = LazyLock::new(Default::default);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
/// Rows read from one input file.
pub struct SourceCount {
    /// Rows read.
    pub rows: u64,
    /// Malformed rows skipped.
    pub bad_rows: u64,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
/// The counters at one moment.
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

/// Counts input bytes read.
pub fn add_bytes(n: u64) {
    BYTES.fetch_add(n, Relaxed);
}

/// Counts rows read (and skipped) from one input file.
pub fn add_rows(source: &str, rows: u64, bad_rows: u64) {
    ROWS.fetch_add(rows, Relaxed);
    BAD_ROWS.fetch_add(bad_rows, Relaxed);
    let mut m = PER_SOURCE.lock().unwrap_or_else(|p| p.into_inner());
    let c = m.entry(source.to_string()).or_default();
    c.rows += rows;
    c.bad_rows += bad_rows;
}

/// Input bytes read since the last [`reset`].
pub fn bytes_read() -> u64 {
    BYTES.load(Relaxed)
}

/// Rows read since the last [`reset`].
pub fn rows_read() -> u64 {
    ROWS.load(Relaxed)
}

/// Rows read so far from one input file.
pub fn source_rows(source: &str) -> u64 {
    PER_SOURCE.lock().unwrap_or_else(|p| p.into_inner()).get(source).map_or(0, |c| c.rows)
}

/// All counters.
pub fn snapshot() -> Snapshot {
    Snapshot {
        bytes_read: BYTES.load(Relaxed),
        rows_read: ROWS.load(Relaxed),
        bad_rows: BAD_ROWS.load(Relaxed),
        per_source: PER_SOURCE.lock().unwrap_or_else(|p| p.into_inner()).clone(),
    }
}

/// Zeroes the counters, at the start of a run.
pub fn reset() {
    BYTES.store(0, Relaxed);
    ROWS.store(0, Relaxed);
    BAD_ROWS.store(0, Relaxed);
    PER_SOURCE.lock().unwrap_or_else(|p| p.into_inner()).clear();
}
