//! `COPY ... TO 'x.parquet'`: one file, written whole, with the footer a folder's parts have.

use std::collections::BTreeMap;
use std::path::Path;

use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};

use crate::util::*;

/// A filtering COPY of the sample corpus to `target`, rejects to `rejects`.
fn copy(dir: &Path, target: &str, rejects: &str, extra: &[&str]) -> String {
    let recipe = format!(
        "CREATE VIEW docs AS SELECT id AS doc_id, text, _source, _row FROM read_jsonl('{}');\n\
         COPY (SELECT doc_id, _source, _row, text, tokenize(text, 'tiktoken:cl100k_base') AS input_ids,\n\
                      CASE WHEN length(text) < 300 THEN 'short' END AS filter_reason FROM docs)\n\
         TO '{target}' STORED AS PARQUET OPTIONS ('rejects' '{rejects}', 'max_row_group_size' '16');",
        repo_root().join("queries/data/*.jsonl*").display()
    );
    let r = write(dir, "r.sql", recipe);
    let mut args = vec!["run", r.to_str().unwrap(), "--quiet"];
    args.extend(extra);
    tokq_ok(&args)
}

fn footer(file: &Path) -> (BTreeMap<String, String>, usize) {
    let r = SerializedFileReader::new(std::fs::File::open(file).unwrap()).unwrap();
    let kv = r.metadata().file_metadata().key_value_metadata().into_iter().flatten().map(|e| (e.key.clone(), e.value.clone().unwrap_or_default())).collect();
    (kv, r.metadata().num_row_groups())
}

#[test]
fn a_parquet_target_is_one_file_with_the_parts_rows_and_footer_and_reruns_byte_identical() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).display().to_string();
    copy(d.path(), &p("dir/"), &p("dir-rejects/"), &["--partitions", "2"]);
    copy(d.path(), &p("one.parquet"), &p("rejects.parquet"), &["--partitions", "2"]);
    // Nothing else is left beside the files: no staging folder, no temporary file.
    let mut names: Vec<String> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["dir", "dir-rejects", "one.parquet", "r.sql", "rejects.parquet"]);
    // The same rows, and the same footer plus the manifest.
    let (folder, file) = (read_output(&d.path().join("dir")), read_output_file(&d.path().join("one.parquet")));
    assert!(file.num_rows() > 50, "{}", file.num_rows());
    assert_eq!(rows(&file), rows(&folder.batch));
    assert_eq!(rows(&read_output_file(&d.path().join("rejects.parquet"))), rows(&read_output(&d.path().join("dir-rejects")).batch));
    let (kv, groups) = footer(&d.path().join("one.parquet"));
    assert!(groups > 1, "row groups are kept as the parts wrote them");
    let manifest: serde_json::Value = serde_json::from_str(&kv["tokq.manifest"]).unwrap();
    assert_eq!(manifest["rows"].as_u64().unwrap(), file.num_rows() as u64);
    let mut part_keys: Vec<&String> = folder.metadata.keys().collect();
    part_keys.sort();
    let file_keys: Vec<&String> = kv.keys().filter(|k| *k != "tokq.manifest").collect();
    assert_eq!(file_keys, part_keys);
    // The two recipes differ in their targets only, so in their hash.
    for k in part_keys.into_iter().filter(|k| *k != "tokq.recipe_sha256") {
        assert_eq!(kv[k], folder.metadata[k], "{k}");
    }
    assert_eq!(kv["tokq.recipe_sha256"], manifest["recipe_sha256"].as_str().unwrap());
    // `tokq manifest` reads the file's footer; DataFusion reads the file again with lineage.
    let shown: serde_json::Value = serde_json::from_str(&tokq_ok(&["manifest", &p("one.parquet")])).unwrap();
    assert_eq!(shown, manifest);
    let again = tokq_ok(&["sql", "-c", &format!("SELECT count(*) AS n FROM read_parquet('{}')", p("one.parquet")), "--format", "csv", "--quiet"]);
    assert_eq!(again.trim(), format!("n\n{}", file.num_rows()));
    // A rerun, with other partitions, writes the same bytes.
    let before = std::fs::read(d.path().join("one.parquet")).unwrap();
    copy(d.path(), &p("one.parquet"), &p("rejects.parquet"), &["--partitions", "1"]);
    assert!(std::fs::read(d.path().join("one.parquet")).unwrap() == before, "the rerun changed the file");
}

#[test]
fn a_parquet_file_tokq_did_not_write_is_not_replaced_unless_asked() {
    let d = tempfile::tempdir().unwrap();
    let theirs = write(d.path(), "theirs.parquet", "not ours");
    let target = theirs.display().to_string();
    let rejects = d.path().join("r/").display().to_string();
    let recipe = |options: &str| {
        write(d.path(), "r.sql", format!("COPY (SELECT 'a' AS doc_id, CAST(NULL AS VARCHAR) AS filter_reason) TO '{target}' STORED AS PARQUET OPTIONS ('rejects' '{rejects}'{options})"))
    };
    let err = tokq_err(&["run", recipe("").to_str().unwrap()]);
    assert!(err.contains(&format!("COPY target '{target}' exists and tokq did not write it")), "{err}");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"not ours");
    tokq_ok(&["run", recipe(", 'overwrite' 'true'").to_str().unwrap(), "--quiet"]);
    assert_eq!(read_output_file(&theirs).num_rows(), 1);
}
