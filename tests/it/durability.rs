//! Deterministic output, and local runs that survive `kill -9`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// The main and rejects directories, file by file.
pub type Snapshots = (Snapshot, Snapshot);

pub struct Job {
    pub recipe: PathBuf,
    pub input: String,
    pub out: PathBuf,
    pub rejects: PathBuf,
}

impl Job {
    pub fn new(dir: &Path, recipe: &str, files: usize, docs: usize) -> Self {
        Self {
            recipe: write(dir, "recipe.sql", recipe),
            input: synthetic_corpus(&dir.join("in"), files, docs),
            out: dir.join("out"),
            rejects: dir.join("rejects"),
        }
    }

    pub fn args(&self) -> Vec<String> {
        let mut a = vec!["run".to_string(), self.recipe.display().to_string(), "--quiet".into()];
        let sets = [("input", self.input.clone()), ("output", format!("{}/", self.out.display())), ("rejects", format!("{}/", self.rejects.display()))];
        // Only the parameters the recipe has: tokq refuses the others.
        let recipe = std::fs::read_to_string(&self.recipe).unwrap();
        for (k, v) in sets.into_iter().filter(|(k, _)| recipe.contains(&format!("${{{k}"))) {
            a.push("--set".into());
            a.push(format!("{k}={v}"));
        }
        a
    }

    /// Runs to the end with extra arguments and environment; returns the stats.
    pub fn run(&self, extra: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
        let stats = self.out.with_extension("stats.json");
        let mut args = self.args();
        args.extend(["--stats-json".to_string(), stats.display().to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        tokq_within(&args.iter().map(String::as_str).collect::<Vec<_>>(), env, 300);
        serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap()
    }

    /// Both output directories, file by file.
    pub fn snapshot(&self) -> Snapshots {
        (snapshot(&self.out), snapshot(&self.rejects))
    }

    /// An uninterrupted local run's files, after which the outputs are removed again.
    pub fn reference(&self) -> Snapshots {
        self.run(&["--partitions", "2"], &[]);
        let files = self.snapshot();
        self.clear();
        files
    }

    pub fn clear(&self) {
        let _ = std::fs::remove_dir_all(&self.out);
        let _ = std::fs::remove_dir_all(&self.rejects);
    }

    /// Starts the job in the background.
    pub fn start(&self, extra: &[&str]) -> KillOnDrop {
        self.spawn(extra, Stdio::null())
    }

    /// Starts the job in the background, keeping what it says for [`ctrl_c`].
    pub fn start_heard(&self, extra: &[&str]) -> KillOnDrop {
        self.spawn(extra, Stdio::piped())
    }

    fn spawn(&self, extra: &[&str], stderr: Stdio) -> KillOnDrop {
        let child = Command::new(env!("CARGO_BIN_EXE_tokq"))
            .args(self.args())
            .args(extra)
            .current_dir(repo_root())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        KillOnDrop(child)
    }

    /// Waits until `n` source files are committed, with the run still going.
    pub fn wait_for_commits(&self, child: &mut KillOnDrop, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.journal_entries() < n && child.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "fewer than {n} files committed in 120 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(child.0.try_wait().unwrap().is_none(), "the run finished before it could be interrupted; make the corpus larger");
    }

    /// Committed source files so far: journal entries in place (`.json`; an entry being written
    /// is a staging file, `NAME.json#1`).
    pub fn journal_entries(&self) -> usize {
        walk(&self.out.join("_tokq_journal")).iter().filter(|p| p.extension().is_some_and(|x| x == "json")).count()
    }
}

/// Sends a job started with [`Job::start_heard`] what a terminal sends on Ctrl-C; returns its exit
/// code and what it said, once it has ended (within 60 s).
pub fn ctrl_c(child: &mut KillOnDrop) -> (Option<i32>, String) {
    assert!(Command::new("kill").args(["-INT", &child.0.id().to_string()]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the run did not stop within 60 s of Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    entries.flat_map(|e| {
        let p = e.unwrap().path();
        if p.is_dir() { walk(&p) } else { vec![p] }
    }).collect()
}


#[test]
fn output_bytes_do_not_depend_on_partitions_or_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 6, 150);
    job.run(&["--partitions", "1"], &[("TOKIO_WORKER_THREADS", "1")]);
    let reference = job.snapshot();
    let m = manifest(&job.out);
    assert_eq!(m["layout"], "source");
    assert_eq!(m["files"].as_array().unwrap().len(), 6);
    assert!(m["files"][0]["source"].as_str().unwrap().ends_with(".jsonl"));
    assert!(manifest(&job.rejects)["rows"].as_u64().unwrap() > 0, "the corpus must have rejects");
    for (partitions, threads) in [("4", "1"), ("3", "3"), ("16", "2")] {
        job.clear();
        job.run(&["--partitions", partitions], &[("TOKIO_WORKER_THREADS", threads)]);
        assert_same_files(&job.snapshot(), &reference, &format!("output differs with {partitions} partitions on {threads} threads"));
    }
}

#[test]
fn a_plan_that_exchanges_rows_gives_the_same_rows_as_a_set() {
    let tmp = tempfile::tempdir().unwrap();
    // The join with an aggregate hashes rows across partitions: which file holds a row, and in
    // which order, depends on the partitions; the rows do not.
    let recipe = "
        CREATE VIEW docs AS SELECT id AS doc_id, _source, _row, text FROM read_jsonl('${input}');
        COPY (
          SELECT d.doc_id, d._source, d._row, tokenize(d.text, 'tiktoken:cl100k_base') AS input_ids
          FROM docs d JOIN (SELECT _source, count(*) AS n FROM docs GROUP BY _source) c ON d._source = c._source
        ) TO '${output}' STORED AS PARQUET;";
    let job = Job::new(tmp.path(), recipe, 4, 60);
    job.run(&["--partitions", "1"], &[]);
    assert_eq!(manifest(&job.out)["layout"], "partition");
    let one = rows(&read_output(&job.out).batch);
    job.clear();
    job.run(&["--partitions", "3"], &[]);
    assert_eq!(rows(&read_output(&job.out).batch), one);
    assert_eq!(one.len(), 240);
}

/// Every visible Parquet file reads to its end: nothing partial is ever in place.
fn assert_only_whole_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "parquet") {
            read_output_file(&p);
        }
    }
}

#[test]
fn kill_9_mid_copy_then_rerun_gives_the_uninterrupted_output() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 24, 700);
    let reference = job.reference();

    let mut resumed_any = false;
    // Two interrupted attempts, on different partition counts, then a run to the end.
    for (attempt, partitions) in [(1usize, "1"), (2, "2")] {
        let mut child = job.start(&["--partitions", partitions]);
        // Kill once this attempt has committed files of its own, a little later each time.
        job.wait_for_commits(&mut child, job.journal_entries() + attempt);
        std::thread::sleep(Duration::from_millis(37 * attempt as u64));
        assert!(child.0.try_wait().unwrap().is_none(), "the run finished before it could be killed; make the corpus larger");
        drop(child);
        assert!(!job.out.join("_tokq_manifest.parquet").exists(), "a manifest is visible after a crash");
        assert_only_whole_files(&job.out);
        assert_only_whole_files(&job.rejects);
        resumed_any |= job.journal_entries() > 0;
    }
    assert!(resumed_any);
    let stats = job.run(&["--partitions", "2"], &[]);
    assert_same_files(&job.snapshot(), &reference, "the rerun's output differs from an uninterrupted run");
    let resumed = stats["outputs"][0]["resumed_files"].as_u64().unwrap();
    assert!(resumed >= 2, "committed files were written again: {stats}");
    // Every input row is still accounted for, resumed sources included.
    let a = &stats["accounting"][0];
    assert_eq!(a["input_rows"].as_u64(), Some(24 * 700));
    assert_eq!(a["kept"].as_u64().unwrap() + a["rejected"].as_u64().unwrap(), 24 * 700);
    assert!(!job.out.join("_tokq_journal").exists(), "the journal is removed after the commit");
}

#[test]
fn ctrl_c_mid_copy_writes_the_stats_says_how_to_resume_and_the_rerun_says_what_it_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 24, 700);
    let stats = tmp.path().join("stats.json");
    let mut child = job.start_heard(&["--partitions", "1", "--stats-json", stats.to_str().unwrap()]);
    job.wait_for_commits(&mut child, 1);
    let (code, err) = ctrl_c(&mut child);
    assert_eq!(code, Some(130), "{err}");
    let last = err.trim().lines().last().unwrap();
    assert!(last.contains("`COPY to ") && last.contains("interrupted; run the same command again to resume"), "{err}");

    // The stats say what ran; nothing half-written is visible, and no lock is left.
    let ran: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert!(ran["error"].as_str().unwrap().contains("interrupted"), "{ran}");
    let copy = ran["statements"].as_array().unwrap().last().unwrap()["number"].as_u64().unwrap();
    assert!(ran["error"].as_str().unwrap().contains(&format!("statement {copy} `COPY to ")), "the interrupted COPY is in the stats: {ran}");
    assert!(!job.out.join("_tokq_lock.json").exists() && !job.rejects.join("_tokq_lock.json").exists(), "a lock was left");
    assert!(!job.out.join("_tokq_manifest.parquet").exists());
    assert_only_whole_files(&job.out);

    // The rerun keeps what was committed, says so, and accounts for every input row.
    let mut args = job.args();
    args.retain(|a| a != "--quiet");
    let out = tokq_within(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[], 300);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(summary.contains("files were committed by an interrupted run and kept; their inputs were not read again"), "{summary}");
    assert!(summary.contains(&format!("{} input rows", 24 * 700)) && summary.contains("every input row accounted for"), "{summary}");
    manifest_is_true(&job.out);
}
