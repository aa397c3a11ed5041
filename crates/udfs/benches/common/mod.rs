//! Shared by the benchmarks: the corpus loader and best-of-N timing.

use std::io::{BufRead, BufReader, Read};
use std::time::Instant;

pub const DOCS: usize = 1000;
pub const ROUNDS: usize = 3;

/// The `text` of the first `docs` lines of a JSONL file (gzip or not).
pub fn load(path: &str, docs: usize) -> Vec<String> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let r: Box<dyn Read> = if path.ends_with(".gz") { Box::new(flate2::read::MultiGzDecoder::new(f)) } else { Box::new(f) };
    BufReader::new(r)
        .lines()
        .take(docs)
        .map(|l| serde_json::from_str::<serde_json::Value>(&l.unwrap()).unwrap()["text"].as_str().unwrap().to_string())
        .collect()
}

pub fn best<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.unwrap())
}

