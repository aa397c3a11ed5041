//! tokq's own encoder against tiktoken-rs, bpe-openai and the `tokenizers` crate (tokq's
//! fallback), on the same documents in the same process, one core; then `token_count` through
//! DataFusion on 1 and 2 partitions. Every contender's ids are checked against the reference.
//!
//!   cargo bench --bench tokenizer_speed -- [--docs N] [--only NAME] [CORPUS.jsonl[.gz]]...
//! `--only tokq` times tokq alone (for a profiler); the ratios then need the full run.
//! Defaults: ../shared/corpora wikipedia-en-2015 and udhr-multilingual, the first 1,000 docs of each.

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokq_core::tokenize::{cached, EncodeOptions, DEFAULT_CHUNK_BYTES};

mod common;

use common::{best, load, DOCS, ROUNDS};

const SHARED: &str = "../../../shared";

type Encoder = Box<dyn Fn(&str) -> Vec<u32>>;

fn tokq(spec: &str) -> Encoder {
    let tok = cached(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Box::new(move |text| {
        let mut ids = Vec::new();
        tok.encode_into(text, &EncodeOptions::default(), DEFAULT_CHUNK_BYTES, &mut ids).unwrap();
        ids
    })
}

/// Contenders of one vocabulary; the first is tokq, the second the reference for ids and ratios.
fn families() -> Vec<(&'static str, Vec<(String, Encoder)>)> {
    let hf = |name: &str| format!("{SHARED}/tokenizers/{name}/tokenizer.json");
    let tiktoken_rs = |bpe: tiktoken_rs::CoreBPE| -> Encoder { Box::new(move |t| bpe.encode_ordinary(t)) };
    let bpe_openai = |t: &'static bpe_openai::Tokenizer| -> Encoder { Box::new(move |s| t.encode(s)) };
    let mut out = vec![
        ("cl100k_base", vec![
            ("tokq".to_string(), tokq("tiktoken:cl100k_base")),
            ("tiktoken-rs".to_string(), tiktoken_rs(tiktoken_rs::cl100k_base().unwrap())),
            ("bpe-openai".to_string(), bpe_openai(bpe_openai::cl100k_base())),
        ]),
        ("o200k_base", vec![
            ("tokq".to_string(), tokq("tiktoken:o200k_base")),
            ("tiktoken-rs".to_string(), tiktoken_rs(tiktoken_rs::o200k_base().unwrap())),
            ("bpe-openai".to_string(), bpe_openai(bpe_openai::o200k_base())),
        ]),
    ];
    for name in ["llama3", "gpt2", "qwen"] {
        let spec = hf(name);
        out.push((name, vec![
            ("tokq".to_string(), tokq(&spec)),
            ("tokenizers crate (tokq fallback)".to_string(), tokq(&format!("reference:{spec}"))),
        ]));
    }
    out
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut docs_per_corpus = DOCS;
    if let Some(i) = args.iter().position(|a| a == "--docs") {
        docs_per_corpus = args.get(i + 1).and_then(|n| n.parse().ok()).expect("--docs N");
        args.drain(i..i + 2);
    }
    let mut only = None;
    if let Some(i) = args.iter().position(|a| a == "--only") {
        only = Some(args.get(i + 1).cloned().expect("--only NAME"));
        args.drain(i..i + 2);
    }
    if args.is_empty() {
        args = vec![
            format!("{SHARED}/corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"),
            format!("{SHARED}/corpora/udhr-multilingual/udhr2.jsonl"),
        ];
    }
    let families = families();
    for corpus in &args {
        let docs = load(corpus, docs_per_corpus);
        let bytes: usize = docs.iter().map(String::len).sum();
        let mb = bytes as f64 / 1e6;
        println!("\n{corpus}: {} docs, {mb:.1} MB; one core; first pass and best of {ROUNDS}", docs.len());
        for (family, contenders) in &families {
            println!("  {family}");
            let mut tokq_rate = 0.0;
            let mut tokq_ids: Vec<Vec<u32>> = vec![];
            for (i, (name, encode)) in contenders.iter().enumerate() {
                if only.as_ref().is_some_and(|o| !name.starts_with(o.as_str())) {
                    continue;
                }
                let run = || docs.iter().map(|d| encode(d)).collect::<Vec<_>>();
                let t0 = Instant::now();
                let first = run();
                let t_first = t0.elapsed().as_secs_f64();
                let (t_best, ids) = best(run);
                assert_eq!(ids, first);
                let tokens: usize = ids.iter().map(Vec::len).sum();
                let rate = mb / t_best;
                let versus = if i == 0 {
                    tokq_rate = rate;
                    tokq_ids = ids;
                    String::new()
                } else {
                    let same = if tokq_ids.is_empty() {
                        "not compared"
                    } else if tokq_ids == ids { "identical" } else { "DIFFERENT" };
                    format!("  tokq is {:5.1}x; ids {same}", tokq_rate / rate)
                };
                println!(
                    "    {name:34} first {:7.1} MB/s  best {rate:7.1} MB/s {:11.0} tokens/s{versus}",
                    mb / t_first,
                    tokens as f64 / t_best
                );
            }
        }
    }
    report_caches();
    partitions(&args[0], docs_per_corpus);
}

fn report_caches() {
    println!("\npre-token caches (per thread, bounded):");
    for spec in ["tiktoken:cl100k_base", "tiktoken:o200k_base"] {
        if let Some(s) = cached(spec).unwrap().cache_stats() {
            println!(
                "  {spec}: {} thread(s), {} entries, {:.2} MiB, {} hits / {} misses, {} turnovers",
                s.threads, s.entries, s.bytes as f64 / (1 << 20) as f64, s.hits, s.misses, s.turnovers
            );
        }
    }
}

/// `token_count` through DataFusion with 1 and 2 partitions (and as many worker threads).
fn partitions(corpus: &str, n: usize) {
    let docs = load(corpus, n);
    let bytes: usize = docs.iter().map(String::len).sum();
    let schema = Arc::new(Schema::new(vec![Field::new("text", DataType::Utf8, false)]));
    let halves: Vec<Vec<RecordBatch>> = docs
        .chunks(docs.len().div_ceil(2))
        .map(|half| {
            half.chunks(256)
                .map(|c| RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(StringArray::from_iter_values(c))]).unwrap())
                .collect()
        })
        .collect();
    println!("\ntoken_count(text, 'tiktoken:cl100k_base') through DataFusion on {corpus}:");
    let mut rates = vec![];
    for parts in [1usize, 2] {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(parts).enable_all().build().unwrap();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(parts));
        tokq_udfs::register_all(&ctx);
        let table = MemTable::try_new(Arc::clone(&schema), halves.clone()).unwrap();
        ctx.register_table("docs", Arc::new(table)).unwrap();
        let sql = "SELECT sum(token_count(text, 'tiktoken:cl100k_base')) FROM docs";
        let (t, total) = best(|| {
            let batches = rt.block_on(async { ctx.sql(sql).await.unwrap().collect().await.unwrap() });
            batches[0].column(0).as_any().downcast_ref::<Int64Array>().unwrap().value(0)
        });
        let rate = bytes as f64 / 1e6 / t;
        rates.push(rate);
        println!("  {parts} partition(s): {rate:7.1} MB/s ({total} tokens)");
    }
    println!("  2 / 1 partitions: {:.2}x", rates[1] / rates[0]);
}
