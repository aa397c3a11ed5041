use std::collections::BTreeSet;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::parquet::basic::{Compression, Encoding};
use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
use sha2::{Digest, Sha256};

use crate::util::*;


#[test]
fn quickstart_writes_pretokenized_parquet_with_lineage_and_footer() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let stats = tmp.path().join("stats.json");
    let stdout = tokq_ok(&[
        "run", "queries/quickstart.sql", "--quiet", "--partitions", "2",
        "--set", &format!("output={}/", out.display()),
        "--stats-json", stats.to_str().unwrap(),
    ]);
    assert!(stdout.contains("| 200 "), "summary table: {stdout}");

    let o = read_output(&out);
    let schema = o.batch.schema();
    assert_eq!(
        schema.field_with_name("input_ids").unwrap().data_type(),
        &DataType::List(std::sync::Arc::new(Field::new_list_field(DataType::UInt32, false)))
    );
    for col in ["doc_id", "_source", "_row", "n_tokens"] {
        assert!(schema.field_with_name(col).is_ok(), "{col}");
    }
    assert_eq!(o.batch.num_rows(), 200);
    assert_eq!(o.metadata["tokq.format_version"], "2");
    assert_eq!(o.metadata["tokq.version"], env!("CARGO_PKG_VERSION"));
    let tok: serde_json::Value = serde_json::from_str(&o.metadata["tokq.tokenizer"]).unwrap();
    assert_eq!(tok[0]["spec"], "tiktoken:cl100k_base");
    assert_eq!(tok[0]["sha256"], "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7");
    assert_eq!(o.metadata["tokq.recipe_sha256"].len(), 64);

    // The manifest accounts for every file, row and token, with checksums.
    let m = manifest(&out);
    assert_eq!(m["rows"], 200);
    let files = m["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "one file per partition");
    let mut tokens = 0;
    for f in files {
        let bytes = std::fs::read(out.join(f["path"].as_str().unwrap())).unwrap();
        assert_eq!(f["sha256"], hex::encode(Sha256::digest(&bytes)));
        assert_eq!(f["bytes"], bytes.len());
        tokens += f["tokens"].as_u64().unwrap();
    }
    assert_eq!(m["tokens"], tokens);
    let n_tokens: i64 = rows(&o.batch).iter().map(|r| r.3.len() as i64).sum();
    assert_eq!(tokens as i64, n_tokens);
    for e in std::fs::read_dir(&out).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(!name.ends_with(".tokq-tmp"), "unfinished file left: {name}");
    }

    // Stats JSON counts rows per source.
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["outputs"][0]["rows"], 200);
    // The raw inputs (the final SELECT also reads the output back, which counts as a source too).
    let sources = s["sources"].as_object().unwrap();
    let raw: Vec<u64> = sources.iter().filter(|(k, _)| k.contains("/queries/data/")).map(|(_, v)| v["rows"].as_u64().unwrap()).collect();
    assert_eq!(raw.iter().sum::<u64>(), 200, "{sources:?}");
    assert_eq!(raw.len(), 2);

    // zstd by default.
    let first = out.join(files[0]["path"].as_str().unwrap());
    let r = SerializedFileReader::new(std::fs::File::open(first).unwrap()).unwrap();
    assert!(matches!(r.metadata().row_group(0).column(0).compression(), Compression::ZSTD(_)));
}

#[test]
fn rerun_replaces_stale_part_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = format!("output={}/", tmp.path().join("o").display());
    tokq_ok(&["run", "queries/quickstart.sql", "--quiet", "--partitions", "2", "--set", &out]);
    // One input file now: its part stays, the other input's part goes.
    tokq_ok(&["run", "queries/quickstart.sql", "--quiet", "--set", "input=queries/data/sample.jsonl", "--set", &out]);
    let names: BTreeSet<String> = std::fs::read_dir(tmp.path().join("o"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let manifest = manifest(&tmp.path().join("o"));
    let part = manifest["files"][0]["path"].as_str().unwrap().to_string();
    assert!(manifest["files"][0]["source"].as_str().unwrap().ends_with("/queries/data/sample.jsonl"));
    assert_eq!(names, BTreeSet::from(["_tokq_manifest.parquet".to_string(), part]));
}

#[test]
fn compression_and_row_group_options_apply() {
    let ws = Workspace::new();
    let recipe = ws.recipe(
        "r.sql",
        "COPY (SELECT id AS doc_id, _source, _row, tokenize(text, 'tiktoken:o200k_base') AS input_ids \
         FROM read_jsonl('queries/data/sample.jsonl')) TO '{ws}/o/' STORED AS PARQUET \
         OPTIONS ('format.compression' 'snappy', 'max_row_group_size' '10')",
    );
    ws.run(&recipe, &["--partitions", "1"]);
    let m = ws.manifest("o");
    assert_eq!(m["compression"], "snappy");
    let part = ws.path().join("o").join(m["files"][0]["path"].as_str().unwrap());
    let r = SerializedFileReader::new(std::fs::File::open(part).unwrap()).unwrap();
    assert_eq!(r.metadata().num_row_groups(), 12);
    assert_eq!(r.metadata().row_group(0).column(0).compression(), Compression::SNAPPY);
}

/// The ids split into byte streams read back as the same rows, in a file whose ids column says so.
#[test]
fn the_ids_can_be_written_as_byte_streams() {
    let ws = Workspace::new();
    let copy = |dir: &str, options: &str| {
        format!(
            "COPY (SELECT id AS doc_id, _source, _row, tokenize(text, 'tiktoken:o200k_base') AS input_ids \
             FROM read_jsonl('queries/data/sample.jsonl')) TO '{{ws}}/{dir}/' STORED AS PARQUET {options};"
        )
    };
    let recipe = ws.recipe("r.sql", &(copy("plain", "") + &copy("split", "OPTIONS ('ids_encoding' 'byte_stream_split')")));
    ws.run(&recipe, &["--partitions", "1"]);
    let (plain, split) = (ws.output("plain"), ws.output("split"));
    assert!(split.batch.num_rows() > 0);
    assert_eq!(rows(&plain.batch), rows(&split.batch));
    let encodings = |dir: &str| {
        let m = ws.manifest(dir);
        let part = ws.path().join(dir).join(m["files"][0]["path"].as_str().unwrap());
        let r = SerializedFileReader::new(std::fs::File::open(part).unwrap()).unwrap();
        let ids = r.metadata().row_group(0).columns().iter().find(|c| c.column_path().string() == "input_ids.list.item").unwrap().clone();
        ids.encodings().collect::<Vec<_>>()
    };
    assert!(encodings("split").contains(&Encoding::BYTE_STREAM_SPLIT), "{:?}", encodings("split"));
    assert!(!encodings("plain").contains(&Encoding::BYTE_STREAM_SPLIT), "{:?}", encodings("plain"));
    let bad = ws.recipe("bad.sql", &copy("bad", "OPTIONS ('ids_encoding' 'delta')"));
    let err = ws.fails(&bad, &[]);
    assert!(err.contains("'ids_encoding' must be 'plain' or 'byte_stream_split', got 'delta'"), "{err}");
}

#[test]
fn explain_prints_plans_without_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let text = tokq_ok(&["explain", "queries/quickstart.sql", "--set", &format!("output={}/", out.display())]);
    assert!(text.contains("-- statement 3"), "{text}");
    assert!(text.contains("file_type=jsonl"), "{text}");
    assert!(text.contains("logical plan:") && text.contains("physical plan:"), "{text}");
    assert!(text.contains("SinkExec: location=") && text.contains("layout=source"), "{text}");
    assert!(text.contains("tokenizer tiktoken:cl100k_base: encoder tokq-bpe\n"), "{text}");
    assert!(!out.exists());
}

/// A tokenizer.json tokq's encoders do not reproduce: explain names the fallback and the reason.
#[test]
fn explain_names_each_tokenizers_encoder() {
    let tmp = tempfile::tempdir().unwrap();
    let unigram = tmp.path().join("unigram.json");
    std::fs::write(&unigram, r#"{"version": "1.0", "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -2.0]]}}"#).unwrap();
    let recipe = tmp.path().join("t.sql");
    std::fs::write(&recipe, format!("SELECT tokenize('ab', '{}') AS ids;\n", unigram.display())).unwrap();
    let text = tokq_ok(&["explain", recipe.to_str().unwrap()]);
    let line = format!("tokenizer {}: encoder hf-tokenizers (fallback: model \"Unigram\" is not BPE)\n", unigram.display());
    assert!(text.contains(&line), "{text}");
}

/// The README's first recipe: every input document is in a packed row or among the rejects, the
/// rejects carry datatrove's reasons or `exact_duplicate`, and the packed rows trace back to kept
/// documents only.
#[test]
fn the_pipeline_recipe_accounts_for_every_document() {
    use datafusion::arrow::array::{Array, AsArray, ListArray};
    let tmp = tempfile::tempdir().unwrap();
    let (out, rejects) = (tmp.path().join("out"), tmp.path().join("rejects"));
    tokq_ok(&[
        "run", "queries/pipeline.sql", "--quiet", "--set", "seq_len=128", "--set", "pack=tail=pad,pad=0",
        "--set", &format!("output={}/", out.display()),
        "--set", &format!("rejects={}/", rejects.display()),
    ]);
    let r = read_output(&rejects).batch;
    let reasons = r.column_by_name("filter_reason").unwrap().as_string::<i32>();
    assert!(reasons.iter().all(|x| x.is_some_and(|x| x == "exact_duplicate" || x.contains(':'))), "{reasons:?}");
    let rejected: BTreeSet<String> = r.column_by_name("doc_id").unwrap().as_string::<i32>().iter().map(|x| x.unwrap().to_string()).collect();
    let packed = read_output(&out).batch;
    let doc_lists = packed.column_by_name("doc_id").unwrap().as_any().downcast_ref::<ListArray>().unwrap();
    let mut kept = BTreeSet::new();
    for i in 0..doc_lists.len() {
        kept.extend(doc_lists.value(i).as_string::<i32>().iter().map(|x| x.unwrap().to_string()));
    }
    assert!(kept.is_disjoint(&rejected), "a rejected document was packed");
    // The sample's 200 documents, each once: tail=pad keeps the last partial row.
    assert_eq!(kept.len() + rejected.len(), 200, "{} kept + {} rejected", kept.len(), rejected.len());
    assert!(!kept.is_empty() && !rejected.is_empty());
}

#[test]
fn the_manifest_is_an_empty_part_with_the_outputs_schema_and_replaces_a_version_1_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("o");
    std::fs::create_dir_all(&dir).unwrap();
    // A folder written by format version 1: its JSON manifest is tokq's own and goes.
    write(&dir, "_tokq_manifest.json", "{\"format_version\": 1, \"files\": []}");
    tokq_ok(&["run", "queries/quickstart.sql", "--quiet", "--set", &format!("output={}/", dir.display())]);
    assert!(!dir.join("_tokq_manifest.json").exists());
    let m = manifest(&dir);
    let file = read_output_file(&dir.join("_tokq_manifest.parquet"));
    assert_eq!(file.num_rows(), 0);
    assert_eq!(file.schema().fields(), read_output(&dir).batch.schema().fields(), "the manifest has the parts' schema");
    // `tokq manifest DIR` prints the same JSON.
    let printed: serde_json::Value = serde_json::from_str(&tokq_ok(&["manifest", dir.to_str().unwrap()])).unwrap();
    assert_eq!(printed, m);
    assert_eq!((m["rows"].as_u64(), m["format_version"].as_u64()), (Some(200), Some(2)));
    let err = tokq_err(&["manifest", tmp.path().to_str().unwrap()]);
    assert!(err.contains("has no _tokq_manifest.parquet"), "{err}");
}

/// `pretrain.sql`, made of the parts in queries/parts/: every document is rejected at one stage
/// with its reason, or packed; the packed rows trace back to raw input lines.
#[test]
fn the_pretrain_recipe_from_parts_accounts_for_every_document_at_every_stage() {
    use datafusion::arrow::array::{Array, AsArray, ListArray};
    let tmp = tempfile::tempdir().unwrap();
    let stats = run_pretrain(tmp.path(), &["--set", "seq_len=128", "--set", "pack=tail=pad,pad=0"]);
    let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let stages: Vec<(u64, u64, u64)> = stats["accounting"].as_array().unwrap().iter().map(|a| (a["input_rows"].as_u64().unwrap(), a["kept"].as_u64().unwrap(), a["rejected"].as_u64().unwrap())).collect();
    // The cascade sees the 200 documents; dedup sees what the cascade kept.
    assert_eq!(stages.len(), 2, "{stats}");
    assert_eq!(stages[0].0, 200);
    assert_eq!(stages[1].0, stages[0].1);
    assert!(stages.iter().all(|(i, k, r)| i == &(k + r)), "{stages:?}");
    // Documents are counted once per raw input, not per read: the run reads 840+ rows, stage
    // outputs included, from its 200 documents.
    assert_eq!(stats["documents_read"], 200, "{stats}");
    assert_eq!(stats["documents"].as_object().unwrap().len(), 2);
    assert!(stats["rows_read"].as_u64().unwrap() > 400);
    // Drops per filter and per reason, as datatrove's stats have them.
    let quality = &stats["accounting"][0];
    let per_filter: u64 = quality["filters"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    let per_reason: u64 = quality["reasons"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!((per_filter, per_reason), (stages[0].2, stages[0].2));
    assert!(quality["filters"]["gopher_quality"].as_u64().unwrap() > 0 && quality["reasons"]["gopher_quality:gopher_short_doc"].as_u64().unwrap() > 0, "{quality}");
    assert_eq!(stats["accounting"][1]["filters"]["minhash_duplicate"], stages[1].2, "{stats}");
    // Each cluster of n documents removes n - 1; the cascade has no clusters.
    let removed: u64 = stats["accounting"][1]["duplicate_clusters"].as_object().unwrap().iter().map(|(size, n)| (size.parse::<u64>().unwrap() - 1) * n.as_u64().unwrap()).sum();
    assert_eq!(removed, stages[1].2, "{stats}");
    assert_eq!(stats["accounting"][0]["duplicate_clusters"], serde_json::json!({}));
    // A time per statement, each named by the file it is written in.
    let timed = stats["statements"].as_array().unwrap();
    assert!(timed.len() > 20 && timed.iter().all(|t| t["seconds"].as_f64().unwrap() >= 0.0));
    assert!(timed.iter().any(|t| t["file"].as_str().unwrap().ends_with("queries/parts/dedup.sql")));
    let ids = |dir: &str| -> BTreeSet<String> {
        let b = read_output(&tmp.path().join(dir)).batch;
        b.column_by_name("doc_id").unwrap().as_string::<i32>().iter().map(|x| x.unwrap().to_string()).collect()
    };
    let (quality, dups) = (ids("r/quality"), ids("r/dedup"));
    let packed = read_output(&tmp.path().join("o")).batch;
    let lists = |c: &str| packed.column_by_name(c).unwrap().as_any().downcast_ref::<ListArray>().unwrap().clone();
    let (docs, sources) = (lists("doc_id"), lists("_source"));
    let mut kept = BTreeSet::new();
    for i in 0..docs.len() {
        kept.extend(docs.value(i).as_string::<i32>().iter().map(|x| x.unwrap().to_string()));
        let row_sources = sources.value(i);
        let row_sources: Vec<&str> = row_sources.as_string::<i32>().iter().map(Option::unwrap).collect();
        assert!(row_sources.iter().all(|s| s.contains("/queries/data/sample")), "lineage points at the raw input");
        assert!(row_sources.iter().all(|s| s == &row_sources[0]), "each input file packs alone: {row_sources:?}");
    }
    assert!(kept.is_disjoint(&quality) && kept.is_disjoint(&dups) && quality.is_disjoint(&dups));
    assert_eq!(kept.len() + quality.len() + dups.len(), 200);
    assert!(!dups.is_empty() && !quality.is_empty());
}
