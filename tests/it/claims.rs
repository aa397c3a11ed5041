//! A COPY's claim on its target: files other tools wrote are never removed unasked, and two runs
//! never write one folder at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;

use crate::util::*;
use crate::durability::Job;

/// A Parquet file as Spark names its parts, with no tokq footer.
fn spark_part(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("part-00000-0b6e6a3c-1f1e-4a3c-9c3c-2f5f0f7d8a11-c000.snappy.parquet");
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap();
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path
}

#[test]
fn a_folder_holding_other_tools_files_is_refused_and_overwrite_replaces_them() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 2, 50);
    let foreign = spark_part(&job.out);
    let success = write(&job.out, "_SUCCESS", "");
    let before = std::fs::read(&foreign).unwrap();
    let err = tokq_err(&job.args().iter().map(String::as_str).collect::<Vec<_>>());
    assert!(err.contains("holds files tokq did not write") && err.contains("'overwrite' 'true'"), "{err}");
    assert!(err.contains("part-00000-0b6e6a3c") || err.contains("_SUCCESS"), "{err}");
    assert_eq!(std::fs::read(&foreign).unwrap(), before, "the foreign file is untouched");
    assert!(success.exists() && !job.out.join("_tokq_lock.json").exists(), "a refused run leaves no lock");

    // A rerun into tokq's own output, with files of an interrupted run, is not refused.
    std::fs::remove_file(&foreign).unwrap();
    std::fs::remove_file(&success).unwrap();
    job.run(&[], &[]);
    job.run(&["--partitions", "3"], &[]);
    manifest_is_true(&job.out);

    // Asked to, the run deletes them and writes its own.
    let foreign = spark_part(&job.out);
    let recipe = FILTER_AND_TOKENIZE.replace("('rejects' '${rejects}')", "('rejects' '${rejects}', 'overwrite' 'true')");
    std::fs::write(&job.recipe, recipe).unwrap();
    job.run(&[], &[]);
    assert!(!foreign.exists());
    manifest_is_true(&job.out);
}

#[test]
fn a_second_run_into_the_same_folder_fails_at_once_naming_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 16, 700);
    let mut first = job.start(&["--partitions", "1"]);
    let lock = job.out.join("_tokq_lock.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !lock.exists() {
        assert!(Instant::now() < deadline && first.0.try_wait().unwrap().is_none(), "the first run never took its lock");
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    let err = tokq_err(&job.args().iter().map(String::as_str).collect::<Vec<_>>());
    assert!(started.elapsed() < Duration::from_secs(20), "the second run waited {:?}", started.elapsed());
    let pid = first.0.id();
    assert!(err.contains("being written by another tokq run") && err.contains(&format!("pid {pid}")), "{err}");
    assert!(first.0.try_wait().unwrap().is_none(), "the first run finished before the second was tried; make the corpus larger");
    let status = first.0.wait().unwrap();
    assert!(status.success());
    manifest_is_true(&job.out);
    manifest_is_true(&job.rejects);
    assert!(!lock.exists(), "the lock is released");
}

#[test]
fn a_lock_left_by_a_dead_process_on_this_host_is_taken_over_one_from_elsewhere_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 2, 50);
    std::fs::create_dir_all(&job.out).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    // A process that has exited: its pid is free.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let lock = job.out.join("_tokq_lock.json");
    std::fs::write(&lock, format!(r#"{{"writer":"{} pid {pid}","since":1}}"#, host.trim())).unwrap();
    job.run(&[], &[]);
    manifest_is_true(&job.out);
    assert!(!lock.exists());

    std::fs::write(&lock, r#"{"writer":"another-host pid 1","since":1}"#).unwrap();
    let err = tokq_err(&job.args().iter().map(String::as_str).collect::<Vec<_>>());
    assert!(err.contains("another-host pid 1, holding it for ") && err.contains("delete _tokq_lock.json"), "{err}");
    assert!(lock.exists(), "a live holder's lock is left alone");
}

#[test]
fn an_empty_or_damaged_lock_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 2, 50);
    std::fs::create_dir_all(&job.out).unwrap();
    let lock = job.out.join("_tokq_lock.json");
    for body in ["", r#"{"writer":"host pid"#, "not json"] {
        std::fs::write(&lock, body).unwrap();
        job.run(&[], &[]);
        manifest_is_true(&job.out);
        assert!(!lock.exists(), "a lock of {body:?} is taken over and released");
    }
}

#[test]
fn an_upload_cut_short_by_a_killed_writer_is_cleaned_up_by_the_rerun() {
    // The local store writes an upload to `<name>#1` and renames it when complete; a writer killed
    // in between leaves it (seen in CI after a cluster lost its scheduler). Its listing never
    // shows such files, so the rerun looks for them on disk.
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 2, 50);
    let args: Vec<String> = job.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    tokq_ok(&args);
    let clean = job.snapshot();
    let cut = [write(&job.out, ".part-0123.parquet.7-9-1.tokq-tmp#1", "half"), write(&job.rejects, ".part-4567.parquet.7-9-2.tokq-tmp#2", "half")];
    tokq_ok(&args);
    assert!(cut.iter().all(|f| !f.exists()), "the staging files are left");
    assert_same_files(&job.snapshot(), &clean, "the rerun differs");
}

#[test]
fn another_recipes_output_is_refused_unless_overwrite_and_a_rerun_replaces_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pt");
    let folder = format!("{}/", out.display());
    // The quickstart's output, as the user's training set.
    tokq_ok(&["run", "queries/quickstart.sql", "--quiet", "--set", &format!("output={folder}")]);
    let theirs = manifest(&out);
    let rows = theirs["rows"].as_u64().unwrap();
    let real = std::fs::canonicalize(repo_root().join("queries/quickstart.sql")).unwrap();
    assert_eq!(theirs["recipe"], real.display().to_string());

    // SQL given as text, into the same folder: refused in one line that names what is there.
    let query = format!("COPY (SELECT 1 AS x) TO '{folder}' STORED AS PARQUET");
    let err = tokq_err(&["sql", "-c", &query]);
    let written = format!("{} rows, {} tokens, written 20", rows, theirs["tokens"]);
    assert!(err.contains(&format!("COPY target '{folder}' holds the output of another recipe ({}: {written}", real.display())), "{err}");
    assert!(err.contains("OPTIONS ('overwrite' 'true') or --overwrite"), "{err}");
    assert_eq!(manifest(&out), theirs, "the output is untouched");

    // The same recipe again, named another way and with other parameters, replaces its own output.
    tokq_ok(&["run", "./queries/../queries/quickstart.sql", "--quiet", "--partitions", "1", "--set", &format!("output={folder}")]);
    assert_eq!(manifest(&out)["rows"], theirs["rows"]);

    // Asked to, the query replaces it: --overwrite for the run, or the COPY's own option.
    tokq_ok(&["sql", "-c", &query, "--overwrite"]);
    assert_eq!(manifest(&out)["rows"], 1);
    let other = format!("COPY (SELECT 2 AS x) TO '{folder}' STORED AS PARQUET");
    let err = tokq_err(&["sql", "-c", &other]);
    assert!(err.contains("holds the output of another recipe (SQL given as text, sha256 "), "{err}");
    tokq_ok(&["sql", "-c", &format!("{other} OPTIONS ('overwrite' 'true')")]);
    // The same text twice is the same recipe, given as text or in a file (a script's temporary recipe).
    tokq_ok(&["sql", "-c", &format!("{other} OPTIONS ('overwrite' 'true')")]);
    let copy = write(tmp.path(), "copy.sql", format!("{other} OPTIONS ('overwrite' 'true')"));
    tokq_ok(&["run", copy.to_str().unwrap(), "--quiet"]);
    let same_text = write(tmp.path(), "same.sql", &other);
    let err = tokq_err(&["run", same_text.to_str().unwrap()]);
    assert!(err.contains("holds the output of another recipe"), "other text in another file is another recipe: {err}");
    manifest_is_true(&out);

    // A single-file target the same way.
    let file = tmp.path().join("one.parquet").display().to_string();
    tokq_ok(&["sql", "-c", &format!("COPY (SELECT 1 AS x) TO '{file}' STORED AS PARQUET")]);
    let err = tokq_err(&["sql", "-c", &format!("COPY (SELECT 2 AS x) TO '{file}' STORED AS PARQUET")]);
    assert!(err.contains(&format!("COPY target '{file}' holds the output of another recipe")), "{err}");
    tokq_ok(&["sql", "-c", &format!("COPY (SELECT 2 AS x) TO '{file}' STORED AS PARQUET"), "--overwrite"]);
}
