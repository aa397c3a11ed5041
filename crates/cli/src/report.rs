//! Progress on a terminal, the end-of-run summary, and `--stats-json`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::BTreeMap;
use tokq_udfs::sink::WrittenFile;
use tokq_udfs::lineage::progress;
use tokq_udfs::pack::PackCounts;

pub use crate::components::ComponentsStats;

#[derive(Debug, Clone, Serialize)]
pub struct OutputStats {
    pub target: String,
    pub files: usize,
    pub rows: u64,
    pub tokens: u64,
    pub padding_tokens: u64,
    pub bytes: u64,
    /// Files per writing process (`host pid N`): the local runner, or the executors of a cluster.
    pub writers: BTreeMap<String, usize>,
    /// Files an interrupted earlier run had committed, kept rather than written again.
    pub resumed_files: usize,
}

impl OutputStats {
    /// The stats of one output directory; `rejects` picks which of the COPY's files are its own.
    pub fn new(target: &str, m: &crate::manifest::Manifest, files: &[WrittenFile], rejects: bool) -> Self {
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
        }
    }
}

/// Where the input rows of a COPY with rejects went. Locally `input_rows` counts the rows read by
/// its scans that carry `_row` (lookup tables joined in without it do not count), so a query
/// that drops rows before the split shows them as unaccounted.
#[derive(Debug, Clone, Serialize)]
pub struct Accounting {
    pub statement: usize,
    pub input_rows: u64,
    pub kept: u64,
    pub kept_target: String,
    pub rejected: u64,
    pub rejects_target: String,
}

#[derive(Debug, Serialize)]
pub struct RunStats {
    pub recipe: String,
    pub recipe_sha256: String,
    pub wall_seconds: f64,
    pub rows_read: u64,
    pub bytes_read: u64,
    pub bad_rows_skipped: u64,
    pub sources: std::collections::BTreeMap<String, progress::SourceCount>,
    /// Packing counts, when this process packed rows.
    pub packing: Option<PackCounts>,
    pub outputs: Vec<OutputStats>,
    /// One entry per COPY with rejects.
    pub accounting: Vec<Accounting>,
    /// One entry per `CREATE COMPONENTS`.
    pub components: Vec<ComponentsStats>,
}

/// A progress bar over the input bytes of one statement, shown only on a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    pub fn start(label: &str, total_bytes: Option<u64>, quiet: bool) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Self { bar: None, ticker: None };
        }
        let bar = match total_bytes {
            Some(t) => ProgressBar::new(t).with_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::new_spinner(),
        };
        bar.set_prefix(label.to_string());
        let b = bar.clone();
        let started = Instant::now();
        let ticker = tokio::spawn(async move {
            loop {
                b.set_position(progress::bytes_read());
                let rows = progress::rows_read();
                let secs = started.elapsed().as_secs_f64().max(1e-3);
                b.set_message(format!("{rows} rows, {:.0} rows/s", rows as f64 / secs));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self { bar: Some(bar), ticker: Some(ticker) }
    }

    pub fn finish(self) {
        if let Some(t) = self.ticker {
            t.abort();
        }
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

pub fn print_summary(stats: &RunStats, cluster: bool) {
    let mb = stats.bytes_read as f64 / 1e6;
    eprintln!(
        "tokq: read {} rows ({:.1} MB) from {} sources in {:.2} s ({:.1} MB/s); {} bad rows skipped",
        stats.rows_read,
        mb,
        stats.sources.len(),
        stats.wall_seconds,
        mb / stats.wall_seconds.max(1e-9),
        stats.bad_rows_skipped
    );
    if cluster {
        eprintln!("  (read counts are kept on the executors in cluster mode; output counts below are exact)");
    }
    for (uri, c) in &stats.sources {
        eprintln!("  {uri}: {} rows{}", c.rows, if c.bad_rows > 0 { format!(", {} bad rows skipped", c.bad_rows) } else { String::new() });
    }
    if let Some(p) = &stats.packing {
        eprintln!(
            "tokq: packed {} documents ({} empty ones skipped) into {} rows: {} tokens; {} tail tokens dropped, {} padding tokens",
            p.docs, p.empty_docs, p.rows, p.tokens, p.dropped_tokens, p.padding_tokens
        );
    }
    for o in &stats.outputs {
        let padding = if o.padding_tokens > 0 {
            let pct = 100.0 * o.padding_tokens as f64 / (o.tokens + o.padding_tokens) as f64;
            format!(" + {} padding ({pct:.1}% of input_ids)", o.padding_tokens)
        } else {
            String::new()
        };
        eprintln!("tokq: wrote {}: {} files, {} rows, {} tokens{padding}, {} bytes", o.target, o.files, o.rows, o.tokens, o.bytes);
    }
    for c in &stats.components {
        eprintln!(
            "tokq: components {}: {} edges -> {} nodes in {} components after {} rounds ({})",
            c.name, c.input_edges, c.nodes, c.components, c.rounds, c.location
        );
    }
    for a in &stats.accounting {
        let out = a.kept + a.rejected;
        let balance = if cluster {
            "(input rows are counted on the executors)".to_string()
        } else if a.input_rows == out {
            "every input row accounted for".to_string()
        } else {
            format!("{} input rows NOT accounted for (dropped by the query before the rejects split)", a.input_rows as i64 - out as i64)
        };
        eprintln!(
            "tokq: statement {}: {} input rows -> {} kept ({}) + {} rejected ({}): {balance}",
            a.statement, a.input_rows, a.kept, a.kept_target, a.rejected, a.rejects_target
        );
    }
}
