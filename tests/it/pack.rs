use std::collections::BTreeMap;
use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Int32Type, Int64Type, UInt32Type, UInt8Type};
use tokq_core::tokenize::{cached, DEFAULT_CHUNK_BYTES};

use crate::util::*;
use crate::lineage::source_line;

const EOS: u32 = 100257;

/// One packed row as read back from the output.
#[derive(Debug, PartialEq)]
pub struct Packed {
    pub tokens: Vec<u32>,
    pub n_tokens: usize,
    /// (doc_id, _source, _row) of each document piece.
    pub docs: Vec<(String, String, i64)>,
    pub offsets: Vec<usize>,
    pub first_offset: usize,
}

fn list_values<T: datafusion::arrow::datatypes::ArrowPrimitiveType>(b: &RecordBatch, col: &str, i: usize) -> Vec<T::Native> {
    b.column_by_name(col).unwrap().as_list::<i32>().value(i).as_primitive::<T>().values().to_vec()
}

fn list_strings(b: &RecordBatch, col: &str, i: usize) -> Vec<String> {
    let v = b.column_by_name(col).unwrap().as_list::<i32>().value(i);
    let s = v.as_string::<i32>();
    (0..s.len()).map(|k| s.value(k).to_string()).collect()
}

pub fn packed_rows(b: &RecordBatch) -> Vec<Packed> {
    (0..b.num_rows())
        .map(|i| {
            let (ids, sources) = (list_strings(b, "doc_id", i), list_strings(b, "_source", i));
            let rows = list_values::<Int64Type>(b, "_row", i);
            Packed {
                tokens: list_values::<UInt32Type>(b, "input_ids", i),
                n_tokens: b.column_by_name("n_tokens").unwrap().as_primitive::<Int64Type>().value(i) as usize,
                docs: ids.into_iter().zip(sources).zip(rows).map(|((d, s), r)| (d, s, r)).collect(),
                offsets: list_values::<Int32Type>(b, "doc_offsets", i).into_iter().map(|o| o as usize).collect(),
                first_offset: b.column_by_name("first_offset").unwrap().as_primitive::<Int64Type>().value(i) as usize,
            }
        })
        .collect()
}

/// Rebuilds each document from the rows alone and compares it with its source text tokenized
/// again (plus EOS). Returns how many documents came back whole.
pub fn check_exact(rows: &[Packed], all_whole: bool) -> usize {
    let tok = cached("tiktoken:cl100k_base").unwrap();
    let opts = tok.parse_options("").unwrap();
    let mut rebuilt: BTreeMap<(String, i64), (String, Vec<u32>)> = BTreeMap::new();
    for r in rows {
        for (k, (doc, source, row)) in r.docs.iter().enumerate() {
            let end = r.offsets.get(k + 1).copied().unwrap_or(r.n_tokens);
            let e = rebuilt.entry((source.clone(), *row)).or_insert_with(|| (doc.clone(), vec![]));
            assert_eq!(e.1.len(), if k == 0 { r.first_offset } else { 0 }, "{doc}: a piece continues where the last one ended");
            e.1.extend_from_slice(&r.tokens[r.offsets[k]..end]);
        }
    }
    let mut whole = 0;
    for ((source, row), (doc_id, got)) in &rebuilt {
        let line: serde_json::Value = serde_json::from_str(&source_line(source, *row)).unwrap();
        assert_eq!(line["id"].as_str().unwrap(), doc_id);
        let mut want = vec![];
        tok.encode_into(line["text"].as_str().unwrap(), &opts, DEFAULT_CHUNK_BYTES, &mut want).unwrap();
        want.push(EOS);
        assert!(want.starts_with(got), "{doc_id}: packed tokens differ from the document's");
        whole += usize::from(&want == got);
    }
    if all_whole {
        assert_eq!(whole, rebuilt.len(), "every document is whole when the tail is padded");
    }
    whole
}

pub fn run_pack(out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["run", "queries/pack.sql"];
    let o = format!("output={}/", out.display());
    args.extend(["--set", &o]);
    args.extend(extra);
    let output = tokq(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[test]
fn packed_rows_give_back_every_document() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let stderr = run_pack(&out, &["--set", "seq_len=64", "--set", "pack=eos=100257,tail=pad,pad=0,segment_ids=true"]);
    let o = read_output(&out);
    let rows = packed_rows(&o.batch);
    assert!(rows.len() > 100, "{}", rows.len());
    assert!(rows.iter().all(|r| r.tokens.len() == 64 && r.offsets[0] == 0));
    assert_eq!(check_exact(&rows, true), 200);
    // Only the last row of each part file (partition) is padded.
    let padded = rows.iter().filter(|r| r.n_tokens < 64).count();
    assert!((1..=2).contains(&padded), "{padded}");
    for (i, r) in rows.iter().enumerate() {
        let seg = list_values::<Int32Type>(&o.batch, "segment_ids", i);
        for (k, &start) in r.offsets.iter().enumerate() {
            assert_eq!(seg[start], k as i32);
        }
        assert!(seg[r.n_tokens..].iter().all(|&s| s == -1) && r.tokens[r.n_tokens..].iter().all(|&t| t == 0));
    }
    let packing: serde_json::Value = serde_json::from_str(&o.metadata["tokq.packing"]).unwrap();
    assert_eq!((packing["seq_len"].as_u64(), packing["eos"].as_u64()), (Some(64), Some(EOS as u64)));
    assert!(o.metadata["tokq.tokenizer"].contains("tiktoken:cl100k_base"), "the tokenizer inside the packed view is recorded");
    assert!(stderr.contains("packed 200 documents") && stderr.contains("0 tail tokens dropped"), "{stderr}");
}

#[test]
fn dropped_tail_tokens_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, stats) = (tmp.path().join("p"), tmp.path().join("stats.json"));
    run_pack(&out, &["--set", "seq_len=100", "--stats-json", stats.to_str().unwrap()]);
    let rows = packed_rows(&read_output(&out).batch);
    assert!(check_exact(&rows, false) >= 190);
    let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let p = &stats["packing"];
    let tok = cached("tiktoken:cl100k_base").unwrap();
    let opts = tok.parse_options("").unwrap();
    let mut stream = 0;
    for f in ["queries/data/sample.jsonl", "queries/data/sample-extra.jsonl.gz"] {
        let uri = format!("file://{}", repo_root().join(f).display());
        let lines = if f.ends_with(".gz") { 80 } else { 120 };
        for row in 0..lines {
            let doc: serde_json::Value = serde_json::from_str(&source_line(&uri, row)).unwrap();
            let mut ids = vec![];
            tok.encode_into(doc["text"].as_str().unwrap(), &opts, DEFAULT_CHUNK_BYTES, &mut ids).unwrap();
            stream += ids.len() as u64 + 1;
        }
    }
    let (tokens, dropped) = (p["tokens"].as_u64().unwrap(), p["dropped_tokens"].as_u64().unwrap());
    assert_eq!(tokens, 100 * rows.len() as u64);
    assert!(dropped > 0 && dropped < 200, "at most one partial row per partition: {dropped}");
    assert_eq!(tokens + dropped, stream, "every token is in a row or counted as dropped");
}

#[test]
fn packing_is_deterministic_and_keeps_file_order() {
    let tmp = tempfile::tempdir().unwrap();
    let runs: Vec<Vec<Vec<Packed>>> = (0..3)
        .map(|i| {
            let out = tmp.path().join(format!("p{i}"));
            run_pack(&out, &["--partitions", "4", "--set", "seq_len=32"]);
            let m: serde_json::Value = manifest(&out);
            let files = m["files"].as_array().unwrap();
            assert_eq!(files.len(), 2, "one file per partition: two input files, two partitions");
            // Files are named by content, and the footer holds the recipe's hash, which holds the
            // output path: compare the files' rows, in a fixed order.
            let mut per_file: Vec<Vec<Packed>> = files.iter().map(|f| packed_rows(&read_output_file(&out.join(f["path"].as_str().unwrap())))).collect();
            per_file.sort_by_key(|rows| rows.first().map(|r| r.docs.first().cloned()));
            per_file
        })
        .collect();
    assert!(runs[0][0].len() > 100 && runs[0][1].len() > 100);
    assert!(runs.iter().all(|r| r == &runs[0]), "the same rows in the same files on every run");
    // With spare partitions DataFusion would spread the input round-robin; packing must not be.
    let plan = tokq_ok(&["explain", "queries/pack.sql", "--partitions", "4", "--set", "output=/nonexistent/"]);
    let pack = plan.find("PackExec").expect("a PackExec in the plan");
    assert!(!plan[pack..].split("-- statement").next().unwrap().contains("RoundRobinBatch"), "{plan}");
    // Rows of one partition follow their file's line order.
    let rows = packed_rows(&read_output(&tmp.path().join("p0")).batch);
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    for (_, source, row) in rows.iter().flat_map(|r| r.docs.iter()) {
        let prev = last.insert(source.clone(), *row).unwrap_or(-1);
        assert!(*row >= prev, "{source}: row {row} after {prev}");
    }
}

/// `by=source` (as `queries/parts/pack.sql` packs): each input file packs alone, in line order,
/// its tail padded, and the rows are the same for any number of partitions; on the two files of
/// the sample (120 and 80 lines), read by one partition or spread over four.
#[test]
fn packing_by_source_gives_each_file_its_own_rows_whatever_the_partitions() {
    let tmp = tempfile::tempdir().unwrap();
    let runs: Vec<Vec<Packed>> = ["1", "2", "4"]
        .iter()
        .map(|p| {
            let out = tmp.path().join(format!("p{p}"));
            run_pack(&out, &["--partitions", p, "--set", "seq_len=64", "--set", "pack=eos=100257,tail=pad,pad=0,by=source"]);
            let mut rows = packed_rows(&read_output(&out).batch);
            // In each file's line order, as check_exact reads them.
            rows.sort_by_key(|r| (r.docs[0].1.clone(), r.docs[0].2, r.first_offset));
            rows
        })
        .collect();
    assert!(runs.iter().all(|r| r == &runs[0]), "the same rows at 1, 2 and 4 partitions");
    assert_eq!(check_exact(&runs[0], true), 200);
    let mut per_file: BTreeMap<&str, Vec<&Packed>> = BTreeMap::new();
    for r in &runs[0] {
        let source = r.docs[0].1.as_str();
        assert!(r.docs.iter().all(|d| d.1 == source), "a row holds one file's documents: {:?}", r.docs);
        per_file.entry(source).or_default().push(r);
    }
    assert_eq!(per_file.len(), 2);
    for rows in per_file.values() {
        // One padded tail per file; in line order, each row starts where the one before ended.
        assert_eq!(rows.iter().filter(|r| r.n_tokens < 64).count(), 1);
        for w in rows.windows(2) {
            let (last, next) = (w[0].docs.last().unwrap(), &w[1].docs[0]);
            let continues = next.2 == last.2 && w[1].first_offset > 0;
            assert!(continues || next.2 > last.2 && w[1].first_offset == 0, "{last:?} then {next:?}");
        }
    }
}

#[test]
fn padded_rows_report_their_padding() {
    let ws = Workspace::new();
    let stderr = ws
        .run_sql(
        "COPY (SELECT id AS doc_id, _source, _row, pad_tokens(ids, 256, 0) AS input_ids, attention_mask(ids, 256) AS attention_mask \
         FROM (SELECT *, tokenize(text, 'tiktoken:cl100k_base') AS ids FROM read_jsonl('queries/data/*.jsonl*'))) \
         TO '{ws}/o/' STORED AS PARQUET;",
        )
        .stderr;
    let o = ws.output("o");
    assert_eq!(o.batch.num_rows(), 200);
    let (mut real, mut pad) = (0u64, 0u64);
    for i in 0..200 {
        let (ids, mask) = (list_values::<UInt32Type>(&o.batch, "input_ids", i), list_values::<UInt8Type>(&o.batch, "attention_mask", i));
        assert_eq!((ids.len(), mask.len()), (256, 256));
        let n = mask.iter().filter(|&&m| m == 1).count();
        assert!(mask[..n].iter().all(|&m| m == 1) && ids[n..].iter().all(|&t| t == 0));
        real += n as u64;
        pad += 256 - n as u64;
    }
    let manifest = ws.manifest("o");
    assert_eq!((manifest["tokens"].as_u64(), manifest["padding_tokens"].as_u64()), (Some(real), Some(pad)));
    let pct = format!("{:.1}% of input_ids", 100.0 * pad as f64 / (real + pad) as f64);
    assert!(pad > 0 && stderr.contains(&pct), "{pct} in {stderr}");
}

#[test]
fn bad_packing_calls_name_the_fix() {
    let cases = [
        ("SELECT * FROM pack_tokens('nope', 8);", "no table or view named 'nope'"),
        ("CREATE VIEW v AS SELECT 1 AS x; SELECT * FROM pack_tokens('v', 8);", "no 'input_ids' column"),
        ("CREATE VIEW v AS SELECT make_array(1) AS input_ids; SELECT * FROM pack_tokens('v', 8, 'tail=pad');", "tail=pad needs the padding id"),
        ("CREATE VIEW v AS SELECT make_array(1) AS input_ids; SELECT * FROM pack_tokens('v', 0);", "seq_len must be between 1"),
        ("SELECT * FROM pack_tokens(8);", "expected pack_tokens('view', seq_len"),
        ("SELECT * FROM pack_tokens(8, 16);", "the table or view name must be a string literal"),
    ];
    each_recipe_fails("run", &cases.map(|(sql, want)| (sql.to_string(), want)));
}
