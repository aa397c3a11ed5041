//! Progress on a terminal and the end-of-run summary on stderr.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tokq_engine::lineage::progress;
use tokq_engine::stats::{Progress, RunStats};

/// A progress bar over the input bytes of each statement, shown only on a terminal.
pub struct TerminalProgress {
    live: Mutex<Option<(ProgressBar, tokio::task::JoinHandle<()>)>>,
}

impl TerminalProgress {
    /// `None` when stderr is not a terminal: a log file gets the summary only.
    pub fn new() -> Option<Self> {
        std::io::stderr().is_terminal().then(|| Self { live: Mutex::new(None) })
    }
}

impl Progress for TerminalProgress {
    fn start(&self, label: &str, total_bytes: Option<u64>) {
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
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some((bar, ticker));
    }

    fn finish(&self) {
        if let Some((bar, ticker)) = self.live.lock().unwrap_or_else(|p| p.into_inner()).take() {
            ticker.abort();
            bar.finish_and_clear();
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
