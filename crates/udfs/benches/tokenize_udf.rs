//! `tokenize` through DataFusion against calling the tokenizer directly, on the same documents,
//! one core. Prints MB/s and tokens/s for both and the UDF overhead.
//!
//!   cargo bench -p tokq-udfs --bench tokenize_udf -- [CORPUS.jsonl[.gz]] [SPEC]...
//! Defaults: ../shared/corpora/wikipedia-en-2015 (first 1,000 docs); tiktoken:cl100k_base and
//! ../shared/tokenizers/gpt2/tokenizer.json.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};
use tokq_core::tokenize::{cached, EncodeOptions, DEFAULT_CHUNK_BYTES};

mod common;

use common::{DOCS, best, load, ROUNDS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let corpus = args.first().cloned().unwrap_or_else(|| "../../../shared/corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz".into());
    let specs: Vec<String> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec!["tiktoken:cl100k_base".into(), "../../../shared/tokenizers/gpt2/tokenizer.json".into()]
    };
    let docs = load(&corpus, DOCS);
    let bytes: usize = docs.iter().map(String::len).sum();
    println!("corpus {corpus}: {} docs, {:.1} MB; best of {ROUNDS} rounds, 1 partition", docs.len(), bytes as f64 / 1e6);

    let schema = Arc::new(Schema::new(vec![Field::new("text", DataType::Utf8, false)]));
    let batches: Vec<RecordBatch> = docs
        .chunks(8192)
        .map(|c| RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(StringArray::from_iter_values(c))]).unwrap())
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    tokq_udfs::register_all(&ctx);
    ctx.register_table("docs", Arc::new(MemTable::try_new(schema, vec![batches]).unwrap())).unwrap();

    for spec in &specs {
        let tok = cached(spec).unwrap();
        let opts = EncodeOptions::default();
        let (t_direct, tokens) = best(|| {
            let mut ids = Vec::new();
            let mut n = 0usize;
            for d in &docs {
                ids.clear();
                tok.encode_into(d, &opts, DEFAULT_CHUNK_BYTES, &mut ids).unwrap();
                n += ids.len();
            }
            n
        });
        let sql = format!("SELECT tokenize(text, '{spec}') AS ids FROM docs");
        let (t_udf, rows) = best(|| {
            rt.block_on(async { ctx.sql(&sql).await.unwrap().collect().await.unwrap() })
                .iter()
                .map(|b| b.num_rows())
                .sum::<usize>()
        });
        assert_eq!(rows, docs.len());
        let mbs = |t: f64| bytes as f64 / 1e6 / t;
        let tps = |t: f64| tokens as f64 / t;
        println!(
            "{spec} [{}]\n  direct: {:8.2} MB/s {:12.0} tokens/s\n  udf:    {:8.2} MB/s {:12.0} tokens/s\n  udf overhead: {:+.1}%",
            tok.backend(),
            mbs(t_direct),
            tps(t_direct),
            mbs(t_udf),
            tps(t_udf),
            (t_udf / t_direct - 1.0) * 100.0
        );
    }
}
