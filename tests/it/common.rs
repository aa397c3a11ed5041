use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use datafusion::arrow::array::{Array, Int64Array, ListArray, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::compute::concat_batches;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// `../shared` beside the repository, when present. CI always has it (and then a missing folder
/// fails the test); elsewhere tests that need it are skipped with a message.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let p = repo_root().join("../shared").join(rel);
    if p.exists() {
        return Some(p);
    }
    assert!(std::env::var_os("CI").is_none(), "CI needs ../shared/{rel}");
    eprintln!("skipped: ../shared/{rel} not found");
    None
}

pub fn tokq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tokq")).args(args).current_dir(repo_root()).output().expect("run tokq")
}

/// Runs tokq and asserts success, returning stdout.
pub fn tokq_ok(args: &[&str]) -> String {
    let out = tokq(args);
    assert!(out.status.success(), "tokq {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs tokq, asserts failure, and returns the single stderr line.
pub fn tokq_err(args: &[&str]) -> String {
    let out = tokq(args);
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!out.status.success(), "tokq {args:?} should fail; stderr: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

pub fn write(dir: &Path, name: &str, body: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

pub struct Output_ {
    pub batch: RecordBatch,
    pub metadata: HashMap<String, String>,
}

/// Reads every part file of an output directory, in name order.
pub fn read_output(dir: &Path) -> Output_ {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no parquet files in {}", dir.display());
    let mut batches = vec![];
    let mut metadata = HashMap::new();
    let mut schema = None;
    for f in files {
        let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f).unwrap()).unwrap();
        for kv in b.metadata().file_metadata().key_value_metadata().into_iter().flatten() {
            metadata.insert(kv.key.clone(), kv.value.clone().unwrap_or_default());
        }
        schema = Some(b.schema().clone());
        for batch in b.build().unwrap() {
            batches.push(batch.unwrap());
        }
    }
    Output_ { batch: concat_batches(&schema.unwrap(), &batches).unwrap(), metadata }
}

/// The rows of one Parquet file.
pub fn read_output_file(file: &Path) -> RecordBatch {
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(file).unwrap()).unwrap();
    let schema = b.schema().clone();
    let batches: Vec<_> = b.build().unwrap().map(|b| b.unwrap()).collect();
    concat_batches(&schema, &batches).unwrap()
}

/// Rows as (doc_id, _source, _row, ids), sorted: the comparison key for local vs cluster.
pub fn rows(batch: &RecordBatch) -> Vec<(String, String, i64, Vec<u32>)> {
    let s = |n: &str| batch.column_by_name(n).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
    let (ids, sources) = (s("doc_id"), s("_source"));
    let row = batch.column_by_name("_row").unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
    let lists = batch.column_by_name("input_ids").unwrap().as_any().downcast_ref::<ListArray>().unwrap().clone();
    let mut out: Vec<_> = (0..batch.num_rows())
        .map(|i| {
            let v = lists.value(i);
            let v = v.as_any().downcast_ref::<UInt32Array>().unwrap().values().to_vec();
            (ids.value(i).to_string(), sources.value(i).to_string(), row.value(i), v)
        })
        .collect();
    out.sort();
    out
}
