//! The compiled-tokenizer cache as a user meets it: `tokq tokenizer` says where the compiled form
//! was written or read, a damaged one is replaced, and a run's ids do not depend on it.

use std::path::Path;

use datafusion::arrow::array::{Array, ListArray, UInt32Array};

use crate::util::{tokq_within, Workspace};

/// A small SentencePiece-style tokenizer.json on tokq's own encoder.
const TOKENIZER: &str = r#"{"normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true,
              "vocab": {"<unk>": 0, "a": 1, "b": 2, "▁": 3, "▁a": 4, "ab": 5, "▁ab": 6}, "merges": [["▁", "a"], ["a", "b"], ["▁a", "b"]]},
    "added_tokens": [{"id": 7, "content": "<s>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}]}"#;

fn compiled_line(spec: &str, cache: &Path) -> Option<String> {
    let out = tokq_within(&["tokenizer", spec], &[("TOKQ_CACHE_DIR", cache.to_str().unwrap())], 60);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("encoder  tokq-bpe"), "{stdout}");
    stdout.lines().find_map(|l| l.strip_prefix("compiled ")).map(str::to_string)
}

#[test]
fn a_tokenizer_is_compiled_once_and_a_damaged_compilation_is_replaced() {
    let ws = Workspace::new();
    let spec = ws.file("tokenizer.json", TOKENIZER).display().to_string();
    let cache = ws.path().join("cache");
    let written = compiled_line(&spec, &cache).unwrap();
    assert!(written.starts_with("written to ") && written.contains("/tokenizers/"), "{written}");
    let file = written.strip_prefix("written to ").unwrap().to_string();
    assert_eq!(compiled_line(&spec, &cache).unwrap(), format!("read {file}"));
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    assert_eq!(compiled_line(&spec, &cache).unwrap(), format!("written to {file} over one that was not usable (checksum mismatch)"));
    assert_eq!(compiled_line(&spec, &cache).unwrap(), format!("read {file}"));
    // `off` turns the cache off: nothing is read or written.
    assert_eq!(compiled_line(&spec, Path::new("off")), None);
    // A cache folder that cannot be made costs the compiled form, not the run.
    let blocked = ws.file("blocked", "a file where the folder would be");
    assert!(compiled_line(&spec, &blocked).unwrap().starts_with("not written to "));
}

#[test]
fn ids_are_the_same_from_the_file_and_from_its_compilation() {
    let ws = Workspace::new();
    let spec = ws.file("tokenizer.json", TOKENIZER).display().to_string();
    let input = ws.file("in.jsonl", "{\"text\": \"ab a<s>b  ab zz\"}\n{\"text\": \"<s>a ab\"}\n");
    let cache = ws.path().join("cache");
    let mut ids = vec![];
    // The third run is the `tokenizers` crate's, which neither parses for tokq nor compiles.
    for (out, spec) in [("first", spec.clone()), ("second", spec.clone()), ("reference", format!("reference:{spec}"))] {
        let sql = format!(
            "COPY (SELECT _row, tokenize(text, '{spec}') AS input_ids FROM read_jsonl('{}')) TO '{}' STORED AS PARQUET;",
            input.display(),
            ws.at(out)
        );
        let recipe = ws.recipe(&format!("{out}.sql"), &sql);
        tokq_within(&["run", &recipe, "--quiet"], &[("TOKQ_CACHE_DIR", cache.to_str().unwrap())], 120);
        let batch = ws.output(out).batch;
        let lists = batch.column_by_name("input_ids").unwrap().as_any().downcast_ref::<ListArray>().unwrap().clone();
        let row = |i| lists.value(i).as_any().downcast_ref::<UInt32Array>().unwrap().values().to_vec();
        ids.push((0..batch.num_rows()).map(row).collect::<Vec<_>>());
    }
    assert_eq!(cache.join("tokenizers").read_dir().unwrap().count(), 1, "the first run compiles, the second reads");
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0], ids[2]);
    assert_eq!(ids[0], vec![vec![6, 4, 7, 3, 2, 3, 6, 3, 0], vec![7, 4, 6]]);
}
