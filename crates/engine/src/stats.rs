//! What a run did: rows read, files written, every input row's fate. The CLI prints it and writes
//! it as `--stats-json`; the Python package returns it as a dict.

use serde::Serialize;
use std::collections::BTreeMap;
use crate::sink::WrittenFile;
use std::sync::Arc;
use crate::lineage::counters::{self, ReadCounters};
use tokq_core::pack::PackCounts;
use crate::cpu::CpuUse;

pub use crate::components::ComponentsStats;

/// What one COPY wrote to one directory, from its manifest.
#[derive(Debug, Clone, Serialize)]
pub struct OutputStats {
    /// The output directory.
    pub target: String,
    /// Files in the manifest.
    pub files: usize,
    /// Rows written.
    pub rows: u64,
    /// Token ids written, padding excluded.
    pub tokens: u64,
    /// Padding ids written.
    pub padding_tokens: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Files per writing process (`host pid N`): the local runner, or the executors of a cluster.
    pub writers: BTreeMap<String, usize>,
    /// Files an interrupted earlier run had committed, kept rather than written again.
    pub resumed_files: usize,
    /// Rows per reject reason (`filter:reason`), for a rejects output.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, u64>,
}

impl OutputStats {
    /// The stats of one output directory; `rejects` picks which of the COPY's files are its own.
    pub(crate) fn new(target: &str, m: &crate::sink::manifest::Manifest, files: &[WrittenFile], rejects: bool) -> Self {
        let mine = || files.iter().filter(move |f| f.rejects == rejects);
        let mut writers = BTreeMap::new();
        for f in mine().filter(|f| !f.resumed) {
            *writers.entry(f.writer.clone()).or_default() += 1;
        }
        Self {
            target: target.to_string(),
            files: m.files.len(),
            rows: m.rows,
            tokens: m.tokens,
            padding_tokens: m.padding_tokens,
            bytes: m.bytes,
            writers,
            resumed_files: mine().filter(|f| f.resumed).count(),
            reasons: m.reasons.clone(),
        }
    }
}

/// Where the input rows of a COPY with rejects went. Locally `input_rows` counts the rows read by
/// its scans that carry `_row` (lookup tables joined in without it do not count), so a query
/// that drops rows before the split shows them as unaccounted.
#[derive(Debug, Clone, Serialize)]
pub struct Accounting {
    /// The COPY's statement number.
    pub statement: usize,
    /// Rows its scans read (with `_row`).
    pub input_rows: u64,
    /// Rows written to the main output.
    pub kept: u64,
    /// The main output directory.
    pub kept_target: String,
    /// Rows written to the rejects.
    pub rejected: u64,
    /// The rejects directory.
    pub rejects_target: String,
    /// Rejected rows per reason.
    pub reasons: BTreeMap<String, u64>,
    /// Rejected rows per filter: the part of each reason before its `:` (`gopher_quality` of
    /// `gopher_quality:gopher_short_doc`), as datatrove's `dropped_{reason}` stats group them.
    pub filters: BTreeMap<String, u64>,
    /// Duplicate clusters per size (documents in the cluster, keeper included), when the
    /// rejects carry `cluster_id` and `cluster_size` as the dedup recipe writes them; each
    /// cluster counted once. Empty for other COPYs.
    pub duplicate_clusters: BTreeMap<u64, u64>,
}

impl Accounting {
    /// Rejected rows per filter, from the rows per reason.
    pub fn by_filter(reasons: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
        let mut filters = BTreeMap::new();
        for (reason, n) in reasons {
            *filters.entry(reason.split(':').next().unwrap_or(reason).to_string()).or_default() += n;
        }
        filters
    }
}

/// One statement's run.
#[derive(Debug, Clone, Serialize)]
pub struct StatementStats {
    /// Its number, from 1.
    pub number: usize,
    /// The recipe file it is written in (an included part, or the recipe).
    pub file: String,
    /// Its first line there.
    pub line: usize,
    /// Its first line of SQL.
    pub sql: String,
    /// Wall time, resubmissions included.
    pub seconds: f64,
    /// Rows its scans read.
    pub rows_read: u64,
    /// Input bytes its scans read.
    pub bytes_read: u64,
    /// This process's CPU use while it ran (none on a cluster, where executors do the work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuUse>,
}

/// What a run read and wrote: the CLI's summary and `--stats-json`.
#[derive(Debug, Clone, Serialize)]
pub struct RunStats {
    /// The recipe's path.
    pub recipe: String,
    /// sha256 of the recipe after parameter substitution.
    pub recipe_sha256: String,
    /// Wall time of the whole run.
    pub wall_seconds: f64,
    /// The partitions each statement's plan was cut into.
    pub partitions: usize,
    /// Cores this process may use, for reading each statement's `cpu.cores_busy` against.
    pub cores: usize,
    /// Rows read by this process's scans.
    pub rows_read: u64,
    /// Input bytes read by this process's scans (compressed size).
    pub bytes_read: u64,
    /// Malformed rows skipped (`--on-bad-row skip`).
    pub bad_rows_skipped: u64,
    /// Rows read per file, by every scan of every statement (a file read twice counts twice,
    /// and stage outputs read by later statements count too).
    pub sources: std::collections::BTreeMap<String, counters::SourceCount>,
    /// Documents in each raw input file: rows of the scans that add lineage (`_source`, `_row`),
    /// counted once however many statements read the file. tokq's own outputs read again are
    /// not inputs.
    pub documents: BTreeMap<String, u64>,
    /// The sum of `documents`.
    pub documents_read: u64,
    /// Each statement, in order, as far as the run got.
    pub statements: Vec<StatementStats>,
    /// Packing counts, when this process packed rows.
    pub packing: Option<PackCounts>,
    /// One entry per output directory written.
    pub outputs: Vec<OutputStats>,
    /// One entry per COPY with rejects.
    pub accounting: Vec<Accounting>,
    /// One entry per `CREATE COMPONENTS`.
    pub components: Vec<ComponentsStats>,
    /// Why the run stopped early: the error's one line. The figures above then cover the
    /// statements that ran to their end, and the rows read until it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Statements submitted again because the cluster lost their job (an executor was lost).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resubmitted: Vec<Resubmitted>,
    /// Input files that lack columns a statement reads: their rows read NULL there (a run
    /// with `--strict-schema` fails on the first instead).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schema_drift: Vec<crate::lineage::drift::Drift>,
    /// `{path: sha256}` of every model this process has loaded (fastText files; for a neural
    /// model folder, its `model.safetensors`), to pin them with `PATH#sha256=HEX`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, String>,
}

/// A statement that ran again.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Resubmitted {
    /// The statement's number, from 1.
    pub statement: usize,
    /// Why its job was lost.
    pub cause: String,
}


/// What a host shows while a statement runs (the CLI's progress bar; nothing by default).
pub trait Progress: Send + Sync {
    /// A statement starts; `total_bytes` is its input size when planning knows it, and `read`
    /// counts, live, what this process's scans read (its run's counters, for every statement).
    fn start(&self, label: &str, total_bytes: Option<u64>, read: &Arc<ReadCounters>);
    /// The statement has ended, well or not.
    fn finish(&self);
    /// Where reads happen on other processes (a cluster): input bytes and rows whose output
    /// they have committed so far, in place of this process's own reads.
    fn remote(&self, _bytes: u64, _rows: u64) {}
}

/// Shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: &str, _: Option<u64>, _: &Arc<ReadCounters>) {}
    fn finish(&self) {}
}
