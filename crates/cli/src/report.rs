//! Result rows on stdout, progress on a terminal and the end-of-run summary on stderr.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use indicatif::{ProgressBar, ProgressStyle};
use tokq_engine::lineage::counters::ReadCounters;
use tokq_engine::results::{ResultFormat, ResultSink};
use tokq_engine::stats::{Progress, RunStats};

/// Prints each statement's result rows on stdout in a format.
pub struct Printed(pub ResultFormat);

impl ResultSink for Printed {
    fn rows(&self, schema: &SchemaRef, batches: &[RecordBatch]) -> datafusion::error::Result<()> {
        crate::out(self.0.render(schema, batches)?).map_err(datafusion::error::DataFusionError::IoError)
    }
}

/// How progress is shown while a statement runs.
enum Show {
    /// A bar on a terminal.
    Bar,
    /// A plain line every so often, for logs (Slurm, Kubernetes, nohup).
    Log(Duration),
}

/// Each statement's progress over its own input bytes and rows: a bar on a terminal, plain lines
/// when stderr is a file or a pipe.
pub struct RunProgress {
    show: Show,
    live: Mutex<Option<(Option<ProgressBar>, tokio::task::JoinHandle<()>)>>,
    /// What other processes (a cluster's executors) have done for the running statement.
    remote: Remote,
}

/// Input bytes and rows that a cluster's executors have committed output for.
type Remote = Arc<Mutex<Option<(u64, u64)>>>;

/// Seconds between progress lines in a log; TOKQ_PROGRESS_SECONDS changes it.
const LOG_EVERY: f64 = 10.0;

impl RunProgress {
    pub fn new() -> Self {
        let show = if std::io::stderr().is_terminal() {
            Show::Bar
        } else {
            let every = std::env::var("TOKQ_PROGRESS_SECONDS").ok().and_then(|v| v.parse::<f64>().ok()).filter(|s| *s > 0.0).unwrap_or(LOG_EVERY);
            Show::Log(Duration::from_secs_f64(every))
        };
        Self { show, live: Mutex::new(None), remote: Remote::default() }
    }
}

/// Decimal megabytes, as the summary counts them.
fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// What a statement has read since it started: in this process, or what the executors report.
struct Since {
    bytes: u64,
    rows: u64,
    at: Instant,
    read: Arc<ReadCounters>,
    remote: Remote,
}

impl Since {
    fn now(read: &Arc<ReadCounters>, remote: &Remote) -> Self {
        Self { bytes: read.bytes_read(), rows: read.rows_read(), at: Instant::now(), read: Arc::clone(read), remote: Arc::clone(remote) }
    }

    /// Bytes, rows and seconds since then.
    fn delta(&self) -> (u64, u64, f64) {
        let secs = self.at.elapsed().as_secs_f64().max(1e-3);
        if let Some((bytes, rows)) = *self.remote.lock().unwrap_or_else(|p| p.into_inner()) {
            return (bytes, rows, secs);
        }
        (self.read.bytes_read().saturating_sub(self.bytes), self.read.rows_read().saturating_sub(self.rows), secs)
    }

    fn line(&self, label: &str, total: Option<u64>) -> String {
        let (bytes, rows, secs) = self.delta();
        let of = total.map_or(String::new(), |t| format!(" of {} ({:.0}%)", mb(t), 100.0 * bytes as f64 / t.max(1) as f64));
        format!("tokq: {label}: {}{of}, {rows} rows, {:.1} MB/s, {:.0} rows/s, {secs:.0} s", mb(bytes), bytes as f64 / 1e6 / secs, rows as f64 / secs)
    }
}

impl Progress for RunProgress {
    fn start(&self, label: &str, total_bytes: Option<u64>, read: &Arc<ReadCounters>) {
        *self.remote.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let since = Since::now(read, &self.remote);
        let label = label.to_string();
        let (bar, ticker) = match self.show {
            Show::Bar => {
                let bar = match total_bytes {
                    Some(t) => ProgressBar::new(t).with_style(
                        ProgressStyle::with_template("{prefix} [{bar:30}] {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} eta {eta} {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    ),
                    None => ProgressBar::new_spinner(),
                };
                bar.set_prefix(label);
                let b = bar.clone();
                let ticker = tokio::spawn(async move {
                    loop {
                        let (bytes, rows, secs) = since.delta();
                        b.set_position(bytes);
                        b.set_message(format!("{rows} rows, {:.0} rows/s", rows as f64 / secs));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                });
                (Some(bar), ticker)
            }
            // Short statements print nothing, so a quick run's log (or error) stays one line.
            Show::Log(every) => (
                None,
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(every).await;
                        eprintln!("{}", since.line(&label, total_bytes));
                    }
                }),
            ),
        };
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some((bar, ticker));
    }

    fn remote(&self, bytes: u64, rows: u64) {
        *self.remote.lock().unwrap_or_else(|p| p.into_inner()) = Some((bytes, rows));
    }

    fn finish(&self) {
        if let Some((bar, ticker)) = self.live.lock().unwrap_or_else(|p| p.into_inner()).take() {
            ticker.abort();
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
        }
    }
}

/// At most this many files are named per run; the stats name them all.
const DRIFT_SHOWN: usize = 10;

/// One warning per input file that lacks a column a statement reads.
pub fn print_drift(stats: &RunStats) {
    for d in stats.schema_drift.iter().take(DRIFT_SHOWN) {
        eprintln!("tokq: warning: {d}; --strict-schema fails instead");
    }
    if let Some(more) = stats.schema_drift.len().checked_sub(DRIFT_SHOWN).filter(|&n| n > 0) {
        eprintln!("tokq: warning: and {more} more such files (schema_drift in --stats-json lists them all)");
    }
}

pub fn print_summary(stats: &RunStats, cluster: bool) {
    let mb = stats.bytes_read as f64 / 1e6;
    eprintln!(
        "tokq: read {} documents from {} input files in {:.2} s ({} rows and {mb:.1} MB read by all statements, {:.1} MB/s); {} bad rows skipped",
        stats.documents_read,
        stats.documents.len(),
        stats.wall_seconds,
        stats.rows_read,
        mb / stats.wall_seconds.max(1e-9),
        stats.bad_rows_skipped
    );
    if cluster {
        eprintln!("  (on a cluster, rows read are those of the files the executors wrote per input; bytes are counted on the executors)");
    }
    for (uri, n) in &stats.documents {
        let bad = stats.sources.get(uri).map_or(0, |c| c.bad_rows);
        eprintln!("  {uri}: {n} documents{}", if bad > 0 { format!(", {bad} bad rows skipped") } else { String::new() });
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
        if o.resumed_files > 0 {
            eprintln!("  resumed: {} of these files were committed by an interrupted run and kept; their inputs were not read again", o.resumed_files);
        }
    }
    for c in &stats.components {
        eprintln!(
            "tokq: components {}: {} edges -> {} nodes in {} components after {} rounds ({})",
            c.name, c.input_edges, c.nodes, c.components, c.rounds, c.location
        );
    }
    for a in &stats.accounting {
        let out = a.kept + a.rejected;
        let balance = if cluster && a.input_rows == 0 && out > 0 {
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
        // Datatrove's per-filter `dropped_{reason}` counts, largest first.
        let mut filters: Vec<(&String, &u64)> = a.filters.iter().collect();
        filters.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
        for (filter, n) in filters {
            let reasons: Vec<String> = a.reasons.iter().filter(|(r, _)| r.split(':').next() == Some(filter.as_str()) && r.as_str() != filter.as_str()).map(|(r, n)| format!("{} {n}", &r[filter.len() + 1..])).collect();
            let detail = if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) };
            eprintln!("    dropped by {filter}: {n}{detail}");
        }
    }
    for (path, sha256) in &stats.models {
        eprintln!("tokq: model {path}: sha256 {sha256} (pin it as '{path}#sha256={sha256}')");
    }
    print_cpu(stats);
}

/// Where the cores idled: each statement that took a tenth of the run or more, with the cores
/// its process kept busy on average and the share of the partitions that is.
fn print_cpu(stats: &RunStats) {
    let timed: Vec<_> = stats.statements.iter().filter(|t| t.seconds >= 0.1 && t.seconds >= stats.wall_seconds / 10.0).filter_map(|t| Some((t, t.cpu.as_ref()?))).collect();
    if timed.is_empty() {
        return;
    }
    let cores = stats.partitions.min(stats.cores).max(1);
    eprintln!("tokq: time per statement ({} partitions on {} cores; cores busy on average):", stats.partitions, stats.cores);
    for (t, cpu) in timed {
        eprintln!(
            "    statement {} ({}:{}): {:.2} s, {:.1} CPU s, {:.2} cores busy ({:.0}% of {cores})",
            t.number,
            t.file,
            t.line,
            t.seconds,
            cpu.cpu_seconds,
            cpu.cores_busy,
            100.0 * cpu.cores_busy / cores as f64
        );
    }
}
