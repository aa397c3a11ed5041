//! A large file read as pieces in parallel: exact `_row` in every piece, the same output files
//! whatever the partitions, and a rerun after a kill that keeps the pieces already committed.

use std::path::Path;

use datafusion::arrow::array::{Int64Array, StringArray};

use crate::util::*;
use crate::durability::Job;

/// A JSONL file whose line `n` (0-based) holds the document `L{n}`, with blank lines between
/// and no newline at the end.
fn numbered_lines(dir: &Path, lines: usize) -> std::path::PathBuf {
    let mut body = String::new();
    for n in 0..lines {
        if n % 13 == 7 {
            body.push('\n');
            continue;
        }
        body.push_str(&serde_json::json!({"id": format!("L{n}"), "text": "x ".repeat(n % 40)}).to_string());
        if n + 1 < lines {
            body.push('\n');
        }
    }
    write(dir, "big.jsonl", body)
}

/// The sha256 of each file of a folder, by name.
fn digests(dir: &Path) -> std::collections::BTreeMap<String, String> {
    use sha2::Digest;
    snapshot(dir).into_iter().map(|(name, bytes)| (name, hex::encode(sha2::Sha256::digest(&bytes)))).collect()
}

/// Runs `query` (with `${input}` and `${output}`) under `SET tokq.split_bytes = split`, writing
/// to `dir/out` (emptied first); returns the digests of the output. The output folder is part of
/// the recipe that the files' footers record, so runs to compare write to the same folder.
fn run_split(dir: &Path, query: &str, input: &Path, split: u64, partitions: &str, out: &str) -> std::collections::BTreeMap<String, String> {
    let recipe = write(dir, &format!("split-{split}.sql"), format!("SET tokq.split_bytes = {split};\nCOPY ({query}) TO '${{output}}' STORED AS PARQUET;\n"));
    let _ = std::fs::remove_dir_all(dir.join(out));
    let (input, output) = (format!("input={}", input.display()), format!("output={}/{out}/", dir.display()));
    tokq_ok(&["run", recipe.to_str().unwrap(), "--quiet", "--partitions", partitions, "--set", &input, "--set", &output]);
    digests(&dir.join(out))
}

const LINEAGE: &str = "SELECT id, _source, _row FROM read_jsonl('${input}')";

#[test]
fn a_split_jsonl_file_keeps_exact_rows_and_the_same_files_at_any_partitions() {
    let tmp = tempfile::tempdir().unwrap();
    let input = numbered_lines(tmp.path(), 3000);
    let one = run_split(tmp.path(), LINEAGE, &input, 8192, "1", "three");
    let three = run_split(tmp.path(), LINEAGE, &input, 8192, "3", "three");
    assert_eq!(one, three, "the same files, byte for byte, with 1 and 3 partitions");

    let out = tmp.path().join("three");
    manifest_is_true(&out);
    let files = manifest(&out)["files"].as_array().unwrap().clone();
    assert!(files.len() > 10, "the file is read as many pieces: {}", files.len());
    assert!(files.iter().all(|f| f["source"].as_str().unwrap().contains("/big.jsonl#rows=")), "{files:?}");
    let b = read_output(&out).batch;
    let ids = b.column_by_name("id").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
    let rows = b.column_by_name("_row").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
    let mut seen: Vec<i64> = (0..b.num_rows()).map(|i| {
        assert_eq!(ids.value(i), format!("L{}", rows.value(i)), "row {i}");
        rows.value(i)
    }).collect();
    seen.sort_unstable();
    let want: Vec<i64> = (0..3000).filter(|n| n % 13 != 7).collect();
    assert_eq!(seen, want, "every non-blank line once");

    // Unsplit, the file is one part with the same rows.
    let whole = run_split(tmp.path(), LINEAGE, &input, 0, "3", "whole");
    assert_eq!(whole.keys().filter(|k| k.starts_with("part-")).count(), 1);
    assert_eq!(read_output(&tmp.path().join("whole")).batch.num_rows(), b.num_rows());
}

#[test]
fn a_parquet_file_splits_at_row_groups() {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;
    let tmp = tempfile::tempdir().unwrap();
    let schema = std::sync::Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
    let ids = StringArray::from_iter_values((0..2000).map(|n| format!("L{n}")));
    let batch = RecordBatch::try_new(schema.clone(), vec![std::sync::Arc::new(ids)]).unwrap();
    let path = tmp.path().join("big.parquet");
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(150)).build();
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let query = "SELECT id, _source, _row FROM read_parquet('${input}')";
    let one = run_split(tmp.path(), query, &path, 1, "1", "two");
    assert_eq!(one, run_split(tmp.path(), query, &path, 1, "2", "two"), "the same files with 1 and 2 partitions");
    let files = manifest(&tmp.path().join("two"))["files"].as_array().unwrap().len();
    assert_eq!(files, 14, "one piece per row group of 150 rows");
    let b = read_output(&tmp.path().join("two")).batch;
    assert_eq!(b.num_rows(), 2000);
    let ids = b.column_by_name("id").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
    let rows = b.column_by_name("_row").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
    assert!((0..b.num_rows()).all(|i| ids.value(i) == format!("L{}", rows.value(i))));
}

#[test]
fn without_row_a_split_file_is_written_per_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let input = numbered_lines(tmp.path(), 2000);
    run_split(tmp.path(), "SELECT id, _source FROM read_jsonl('${input}')", &input, 4096, "2", "o");
    let m = manifest(&tmp.path().join("o"));
    assert_eq!(m["layout"], "partition", "{m}");
    assert_eq!(read_output(&tmp.path().join("o")).batch.num_rows(), (0..2000).filter(|n| n % 13 != 7).count());
}

#[test]
fn a_rerun_after_a_kill_keeps_the_committed_pieces() {
    let tmp = tempfile::tempdir().unwrap();
    let recipe = format!("SET tokq.split_bytes = 200000;\n{FILTER_AND_TOKENIZE}");
    let job = Job::new(tmp.path(), &recipe, 1, 6000);
    let reference = job.reference();
    assert!(reference.0.len() > 5, "the file is read as several pieces: {:?}", reference.0.keys());

    let mut child = job.start(&["--partitions", "1"]);
    job.wait_for_commits(&mut child, 2);
    drop(child);
    let stats = job.run(&["--partitions", "2"], &[]);
    let resumed = stats["outputs"][0]["resumed_files"].as_u64().unwrap();
    assert!(resumed >= 2, "committed pieces are not read again: {stats}");
    assert_same_files(&job.snapshot(), &reference, "a resumed split run");
    manifest_is_true(&job.out);
}
