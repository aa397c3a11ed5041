use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use datafusion::arrow::array::{Array, Int64Array, ListArray, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::compute::concat_batches;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A test's own folder, in the manner of ripgrep's `tests/util.rs`: files and recipes are written
/// into it, `tokq run` runs on them with its stats kept, and outputs are read back as rows, a
/// manifest and stats. When a run that should pass fails, the message lists the folder.
pub struct Workspace {
    dir: tempfile::TempDir,
    runs: std::cell::Cell<usize>,
}

/// What a `tokq run` in a [`Workspace`] printed and counted.
pub struct Run {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error: the summary.
    pub stderr: String,
    /// Its `--stats-json`.
    pub stats: serde_json::Value,
}

impl Run {
    /// The accounting of the COPY that wrote `output` (a folder under the workspace, or its end).
    pub fn accounting(&self, output: &str) -> &serde_json::Value {
        let all = self.stats["accounting"].as_array().expect("accounting in the stats");
        all.iter().find(|a| a["kept_target"].as_str().is_some_and(|o| o.trim_end_matches('/').ends_with(output.trim_end_matches('/')))).unwrap_or_else(|| panic!("no accounting for {output}: {all:?}"))
    }
}

impl Workspace {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().unwrap(), runs: std::cell::Cell::new(0) }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` under the workspace, as a string (recipes and arguments take strings).
    pub fn at(&self, rel: &str) -> String {
        self.path().join(rel).display().to_string()
    }

    /// Writes `rel` (its folders made) and returns its path.
    pub fn file(&self, rel: &str, body: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        p
    }

    /// Writes a recipe, with every `{ws}` in it replaced by the workspace's path.
    pub fn recipe(&self, rel: &str, sql: &str) -> String {
        self.file(rel, sql.replace("{ws}", &self.path().display().to_string())).display().to_string()
    }

    /// `tokq run RECIPE --stats-json ... ARGS` from the repository root (recipes may read
    /// `queries/data/`); fails the test with tokq's words and the workspace's files unless it passes.
    pub fn run(&self, recipe: &str, args: &[&str]) -> Run {
        let stats = self.path().join(format!(".stats-{}.json", self.runs.replace(self.runs.get() + 1)));
        let mut all = vec!["run", recipe, "--stats-json", stats.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = tokq(&all);
        assert!(out.status.success(), "tokq {all:?} failed:\n{}\nthe workspace:\n{}", String::from_utf8_lossy(&out.stderr), self.listing());
        let stats = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        Run { stdout: String::from_utf8(out.stdout).unwrap(), stderr: String::from_utf8(out.stderr).unwrap(), stats }
    }

    /// Writes `sql` as `r.sql` ([`Workspace::recipe`]) and runs it.
    pub fn run_sql(&self, sql: &str) -> Run {
        let recipe = self.recipe("r.sql", sql);
        self.run(&recipe, &[])
    }

    /// `tokq run RECIPE ARGS`, which must fail with one line (returned).
    pub fn fails(&self, recipe: &str, args: &[&str]) -> String {
        let mut all = vec!["run", recipe];
        all.extend_from_slice(args);
        tokq_err(&all)
    }

    /// Every part file of an output folder under the workspace.
    pub fn output(&self, rel: &str) -> Output_ {
        read_output(&self.path().join(rel))
    }

    /// The manifest of an output folder under the workspace.
    pub fn manifest(&self, rel: &str) -> serde_json::Value {
        manifest(&self.path().join(rel))
    }

    /// Each file under the workspace with its size, one a line: what a failing test prints.
    pub fn listing(&self) -> String {
        let mut lines = Vec::new();
        let mut stack = vec![self.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let size = e.metadata().map_or(0, |m| m.len());
                    lines.push(format!("  {} ({size} bytes)", p.strip_prefix(self.path()).unwrap().display()));
                }
            }
        }
        lines.sort();
        lines.join("\n")
    }
}

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

/// The `text` of the first `limit` lines of a shared JSONL file (gzip by its name), when present.
pub fn shared_texts(rel: &str, limit: usize) -> Option<Vec<String>> {
    let file = std::fs::File::open(shared(rel)?).unwrap();
    let r: Box<dyn Read> =
        if rel.ends_with(".gz") { Box::new(flate2::read::MultiGzDecoder::new(file)) } else { Box::new(file) };
    Some(
        BufReader::new(r)
            .lines()
            .take(limit)
            .map(|l| serde_json::from_str::<serde_json::Value>(&l.unwrap()).unwrap()["text"].as_str().unwrap().to_string())
            .collect(),
    )
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

/// Writes each recipe of `cases` and runs `tokq CMD recipe --quiet`; each must fail with one line
/// that contains its expected text.
pub fn each_recipe_fails(cmd: &str, cases: &[(String, &str)]) {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (sql, want)) in cases.iter().enumerate() {
        let r = write(tmp.path(), &format!("r{i}.sql"), sql);
        let mut args = vec![cmd, r.to_str().unwrap()];
        if cmd == "run" {
            args.push("--quiet");
        }
        let err = tokq_err(&args);
        assert!(err.contains(want), "{sql}: {err}");
    }
}

/// Runs tokq, asserts failure, and returns the single stderr line.
pub fn tokq_err(args: &[&str]) -> String {
    one_line_error(args, tokq(args))
}

/// [`tokq_err`] for a run that could hang: it is killed and the test fails after `secs` seconds.
#[cfg_attr(not(feature = "slow-tests"), allow(dead_code))] // used by the slow tier
pub fn tokq_err_within(args: &[&str], secs: u64) -> String {
    one_line_error(args, run_within(args, &[], secs))
}

fn one_line_error(args: &[&str], out: Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!out.status.success(), "tokq {args:?} should fail; stderr: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line expected: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// One WARC record of `kind` around `block` (an HTTP message for a response), its id `id`.
pub fn warc_record(kind: &str, url: &str, id: usize, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {url}\r\nWARC-Record-ID: <urn:uuid:{id}>\r\nWARC-Date: 2026-01-01T00:00:00Z\r\nContent-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
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
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("part-")))
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

/// Runs tokq with extra environment variables and asserts success; kills it and fails after
/// `secs` seconds.
pub fn tokq_within(args: &[&str], env: &[(&str, &str)], secs: u64) -> Output {
    let out = run_within(args, env, secs);
    assert!(out.status.success(), "tokq {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Runs tokq with extra environment variables; kills it and fails after `secs` seconds.
pub fn run_within(args: &[&str], env: &[(&str, &str)], secs: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tokq"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(repo_root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run tokq");
    // Drained as it runs: a full pipe would stop the child.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tokq {args:?} did not finish in {secs} s:\n{}", String::from_utf8_lossy(&stderr.join().unwrap()));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// `files` JSONL files of synthetic English-like documents (some long and clean, some short or
/// repetitive, so that quality filters keep some and reject others), `docs` per file. Returns a
/// glob over them.
pub fn synthetic_corpus(dir: &Path, files: usize, docs: usize) -> String {
    const WORDS: &[&str] = &[
        "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not",
        "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were",
        "river", "city", "music", "history", "paper", "language", "market", "station", "garden", "system", "winter",
        "people", "north", "engine", "theory", "village", "council", "animal", "century", "record", "island", "road",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..files {
        let mut out = String::new();
        for d in 0..docs {
            let lines = match d % 7 {
                0 => 1,
                1 => 3,
                _ => 6 + next(20),
            };
            let mut text = String::new();
            for l in 0..lines {
                let line = if d % 11 == 5 && l > 0 {
                    "the same line again and again in this document.".to_string()
                } else {
                    let n = 8 + next(25);
                    let words: Vec<&str> = (0..n).map(|_| WORDS[next(WORDS.len())]).collect();
                    format!("{}.", words.join(" "))
                };
                text.push_str(&line);
                text.push('\n');
            }
            out.push_str(&serde_json::json!({"id": format!("f{f}-d{d}"), "text": text}).to_string());
            out.push('\n');
        }
        std::fs::write(dir.join(format!("shard-{f:03}.jsonl")), out).unwrap();
    }
    format!("{}/*.jsonl", dir.display())
}

/// A folder's files by name.
pub type Snapshot = std::collections::BTreeMap<String, Vec<u8>>;

pub fn snapshot(dir: &Path) -> Snapshot {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// A recipe with no exchange of rows: FineWeb's filters with rejects, then cl100k tokens.
pub const FILTER_AND_TOKENIZE: &str = "
CREATE VIEW judged AS
SELECT id AS doc_id, _source, _row, text, quality_chain(text, 'fineweb') AS verdict
FROM read_jsonl('${input}');

COPY (
  SELECT doc_id, _source, _row, verdict['filter_reason'] AS filter_reason,
         tokenize(coalesce(verdict['text'], text), 'tiktoken:cl100k_base') AS input_ids
  FROM judged
) TO '${output}' STORED AS PARQUET OPTIONS ('rejects' '${rejects}');
";

/// A column as text (cast to Utf8), NULL as None.
pub fn strings(b: &datafusion::arrow::array::RecordBatch, name: &str) -> Vec<Option<String>> {
    use datafusion::arrow::array::{Array, StringArray};
    let c = b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    let c = datafusion::arrow::compute::cast(c, &datafusion::arrow::datatypes::DataType::Utf8).unwrap();
    let c = c.as_any().downcast_ref::<StringArray>().unwrap();
    (0..c.len()).map(|i| c.is_valid(i).then(|| c.value(i).to_string())).collect()
}

/// A child process that is killed if the test ends (or fails) before it does.
pub struct KillOnDrop(pub std::process::Child);

#[cfg_attr(not(feature = "slow-tests"), allow(dead_code))] // used by the slow tier
impl KillOnDrop {
    /// Waits for the process to end; after `secs` seconds the test fails with `hung()`'s words.
    pub fn wait_within(&mut self, secs: u64, hung: impl Fn() -> String) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "{}", hung());
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The manifest lists exactly the part files present, with their true sizes and sha256.
pub fn manifest_is_true(dir: &std::path::Path) {
    let m = manifest(dir);
    let mut listed: Vec<String> = m["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect();
    let mut present: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-"))
        .collect();
    listed.sort();
    present.sort();
    assert_eq!(listed, present, "the manifest lists exactly the part files in {}", dir.display());
    for f in m["files"].as_array().unwrap() {
        let bytes = std::fs::read(dir.join(f["path"].as_str().unwrap())).unwrap();
        assert_eq!(f["bytes"].as_u64(), Some(bytes.len() as u64));
        use sha2::Digest;
        assert_eq!(f["sha256"].as_str().unwrap(), hex::encode(sha2::Sha256::digest(&bytes)));
    }
}

/// The manifest of an output folder, as JSON: the `tokq.manifest` footer key of `_tokq_manifest.parquet`.
pub fn manifest(dir: &Path) -> serde_json::Value {
    manifest_of(std::fs::read(dir.join("_tokq_manifest.parquet")).unwrap())
}

/// The manifest in a manifest file's bytes.
pub fn manifest_of(file: impl Into<bytes::Bytes>) -> serde_json::Value {
    let meta = datafusion::parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&file.into()).unwrap();
    assert_eq!(meta.file_metadata().num_rows(), 0, "the manifest file holds no rows");
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    serde_json::from_str(kv.iter().find(|e| e.key == "tokq.manifest").unwrap().value.as_deref().unwrap()).unwrap()
}

/// Two snapshots of output folders are equal; otherwise fails naming the files that differ.
pub fn assert_same_files(got: &(Snapshot, Snapshot), want: &(Snapshot, Snapshot), what: &str) {
    let differ = |g: &Snapshot, w: &Snapshot| -> Vec<String> {
        g.keys().chain(w.keys()).collect::<std::collections::BTreeSet<_>>().into_iter().filter(|k| g.get(*k) != w.get(*k)).cloned().collect()
    };
    let (kept, rejects) = (differ(&got.0, &want.0), differ(&got.1, &want.1));
    assert!(kept.is_empty() && rejects.is_empty(), "{what}: these files differ: {kept:?} (output), {rejects:?} (rejects)");
}

/// Runs queries/pretrain.sql with its stage folders under `dir` (`w/`, `r/`, `o/`) and `extra`
/// arguments; returns the path of its --stats-json.
pub fn run_pretrain(dir: &Path, extra: &[&str]) -> PathBuf {
    let d = dir.display();
    let stats = dir.join("stats.json");
    let (work, rejects, output) = (format!("work={d}/w/"), format!("rejects={d}/r/"), format!("output={d}/o/"));
    let mut args = vec!["run", "queries/pretrain.sql", "--quiet", "--set", &work, "--set", &rejects, "--set", &output, "--stats-json", stats.to_str().unwrap()];
    args.extend_from_slice(extra);
    tokq_ok(&args);
    stats
}
