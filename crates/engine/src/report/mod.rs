//! `tokq report STATS.json`: one self-contained HTML page (no network, no script) from a run's
//! `--stats-json` and the folders it wrote: the accounting, drops per filter and reason, document
//! length and token count histograms before and after each filtering COPY, dedup cluster sizes,
//! and the time and throughput of each statement. The figures and cluster sizes come from the
//! stats; the length and token histograms from the output folders, read again with DataFusion.

mod html;

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use serde_json::Value;

/// A histogram over powers of two: `bins[k]` counts values `v` with `v - offset` in
/// `[2^k - 1, 2^(k+1) - 1)`, so that 0 has a bin of its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Rows per bin.
    pub bins: BTreeMap<i64, u64>,
    /// What is subtracted from a value before it is binned (1 for cluster sizes, which start at 2).
    pub offset: i64,
}

impl Histogram {
    /// The histogram of exact `(value, rows)` counts.
    pub fn of_counts(counts: impl IntoIterator<Item = (i64, u64)>, offset: i64) -> Self {
        let mut h = Self { offset, ..Self::default() };
        for (value, n) in counts {
            let k = (((value - offset).max(0) + 1) as f64).log2().floor() as i64;
            *h.bins.entry(k).or_default() += n;
        }
        h
    }

    /// The values bin `k` holds, as text: `0`, `1-2`, `3-6`, ...
    pub fn label(&self, k: i64) -> String {
        let (lo, hi) = ((1i64 << k) - 1 + self.offset, (1i64 << (k + 1)) - 2 + self.offset);
        if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") }
    }
}

/// What one filtering COPY did to the documents, as histograms.
#[derive(Debug, Clone)]
pub struct Stage {
    /// The COPY's statement number.
    pub statement: usize,
    /// Its main output folder.
    pub kept_target: String,
    /// Its rejects folder.
    pub rejects_target: String,
    /// Document lengths in characters: every input row (kept and rejected), and the kept ones.
    pub chars_before: Histogram,
    /// Lengths of the kept rows.
    pub chars_after: Histogram,
    /// Rejected rows per `filter_reason`.
    pub reasons: BTreeMap<String, u64>,
    /// Sizes of the duplicate clusters among the rejects (dedup), if they carry `cluster_size`.
    pub cluster_sizes: Histogram,
}

/// Everything the page shows.
#[derive(Debug, Clone)]
pub struct Report {
    /// The run's `--stats-json`.
    pub stats: Value,
    /// One per COPY with rejects.
    pub stages: Vec<Stage>,
    /// Tokens per row of each output folder that holds token ids.
    pub tokens: Vec<(String, Histogram)>,
}

/// `read_parquet('location')`, quoted.
fn read(location: &str) -> String {
    format!("read_parquet('{}')", location.replace('\'', "''"))
}

/// Rows of `from` in power-of-two buckets of the integer expression `value` minus `offset`.
async fn histogram(ctx: &SessionContext, from: &str, value: &str, offset: i64) -> Result<Histogram> {
    let sql = format!("SELECT CAST(floor(log2(CAST({value} - {offset} AS DOUBLE) + 1)) AS BIGINT) AS b, count(*) AS n FROM {from} GROUP BY 1");
    let mut h = Histogram { offset, ..Histogram::default() };
    for batch in ctx.sql(&sql).await?.collect().await? {
        let (b, n) = (batch.column(0).as_primitive::<Int64Type>(), batch.column(1).as_primitive::<Int64Type>());
        for i in 0..batch.num_rows() {
            if b.is_valid(i) {
                *h.bins.entry(b.value(i)).or_default() += n.value(i) as u64;
            }
        }
    }
    Ok(h)
}

async fn columns(ctx: &SessionContext, location: &str) -> Result<Vec<String>> {
    let df = ctx.sql(&format!("SELECT * FROM {} LIMIT 0", read(location))).await?;
    Ok(df.schema().fields().iter().map(|f| f.name().clone()).collect())
}

fn merged(a: &Histogram, b: &Histogram) -> Histogram {
    let mut h = a.clone();
    for (k, n) in &b.bins {
        *h.bins.entry(*k).or_default() += n;
    }
    h
}

impl Report {
    /// Gathers the page's figures: `stats` is a run's `--stats-json`; the folders it names are
    /// read on `ctx`.
    pub async fn gather(ctx: &SessionContext, stats: Value) -> Result<Self> {
        let bad = |what: &str| DataFusionError::Plan(format!("not a tokq --stats-json file: no '{what}'"));
        let accounting = stats.get("accounting").and_then(Value::as_array).ok_or_else(|| bad("accounting"))?.clone();
        let outputs = stats.get("outputs").and_then(Value::as_array).ok_or_else(|| bad("outputs"))?.clone();
        let mut stages = Vec::new();
        for a in &accounting {
            let (kept, rejects) = (a["kept_target"].as_str().unwrap_or_default(), a["rejects_target"].as_str().unwrap_or_default());
            let (kc, rc) = (columns(ctx, kept).await?, columns(ctx, rejects).await?);
            let length = "character_length(text)";
            let (chars_after, rejected_chars) = if kc.iter().any(|c| c == "text") && rc.iter().any(|c| c == "text") {
                (histogram(ctx, &read(kept), length, 0).await?, histogram(ctx, &read(rejects), length, 0).await?)
            } else {
                (Histogram::default(), Histogram::default())
            };
            let cluster_sizes = Histogram::of_counts(a["duplicate_clusters"].as_object().into_iter().flatten().filter_map(|(size, n)| Some((size.parse().ok()?, n.as_u64()?))), 1);
            let reasons = a["reasons"].as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0))).collect()).unwrap_or_default();
            stages.push(Stage {
                statement: a["statement"].as_u64().unwrap_or(0) as usize,
                kept_target: kept.to_string(),
                rejects_target: rejects.to_string(),
                chars_before: merged(&chars_after, &rejected_chars),
                chars_after,
                reasons,
                cluster_sizes,
            });
        }
        let mut tokens = Vec::new();
        for o in &outputs {
            let target = o["target"].as_str().unwrap_or_default();
            if o["tokens"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let cols = columns(ctx, target).await?;
            let value = if cols.iter().any(|c| c == "n_tokens") { "n_tokens" } else if cols.iter().any(|c| c == "input_ids") { "cardinality(input_ids)" } else { continue };
            tokens.push((target.to_string(), histogram(ctx, &read(target), value, 0).await?));
        }
        Ok(Self { stats, stages, tokens })
    }

    /// The page.
    pub fn html(&self) -> String {
        html::page(self)
    }
}
