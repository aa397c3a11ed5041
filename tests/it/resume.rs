//! What a rerun trusts of an interrupted run (inputs by size and version, committed parts by
//! their sha256), and what reaches the disk before each step of the commit.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;
use crate::durability::Job;

/// The journal entries of an interrupted run, as JSON. A kill can land while an entry is being
/// written: the local store writes it to a staging file (`NAME.json#1`) and renames it, so only
/// `.json` files are entries (tokq itself skips what it cannot read, too).
fn journal(out: &Path) -> Vec<serde_json::Value> {
    let mut entries = Vec::new();
    for key in std::fs::read_dir(out.join("_tokq_journal")).unwrap() {
        for e in std::fs::read_dir(key.unwrap().path()).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "json") {
                entries.push(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
            }
        }
    }
    entries
}

fn local(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file://").unwrap())
}

#[test]
fn a_rerun_reads_an_input_rewritten_at_the_same_size_and_rewrites_a_damaged_part() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 24, 700);
    let mut child = job.start(&["--partitions", "1"]);
    job.wait_for_commits(&mut child, 2);
    drop(child);
    let committed = journal(&job.out);
    assert!(committed.len() >= 2);

    // One committed input is edited in place: same size, another document id.
    let edited = local(committed[0]["source"].as_str().unwrap());
    let text = std::fs::read_to_string(&edited).unwrap();
    let changed = text.replacen("-d0\"", "-e0\"", 1);
    assert_eq!((changed.len(), changed != text), (text.len(), true));
    std::fs::write(&edited, changed).unwrap();
    // Another's committed part is zeroed in place: same size, wrong bytes.
    let part = job.out.join(committed[1]["kept"]["path"].as_str().unwrap());
    let size = std::fs::metadata(&part).unwrap().len() as usize;
    std::fs::write(&part, vec![0u8; size]).unwrap();

    let stats = job.run(&["--partitions", "2"], &[]);
    let resumed = job.snapshot();
    assert_eq!(
        stats["outputs"][0]["resumed_files"].as_u64(),
        Some(committed.len() as u64 - 2),
        "every other committed file is reused, these two are not: {stats}"
    );
    manifest_is_true(&job.out);
    manifest_is_true(&job.rejects);
    // The same bytes as a run that never saw the first attempt.
    job.clear();
    job.run(&["--partitions", "2"], &[]);
    assert_same_files(&job.snapshot(), &resumed, "the rerun kept output of the input as it was, or the zeroed part");
}

/// A syscall `strace -f -y` printed: its name, its quoted paths, and the paths of its fds.
struct Call {
    name: String,
    names: Vec<String>,
    fds: Vec<String>,
}

fn between(s: &str, open: char, close: char) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = s;
    while let Some(a) = rest.find(open) {
        let Some(b) = rest[a + 1..].find(close) else { break };
        found.push(rest[a + 1..a + 1 + b].to_string());
        rest = &rest[a + b + 2..];
    }
    found
}

/// The calls that succeeded, in order of their start (each line starts with the thread's id).
fn calls(log: &str) -> Vec<Call> {
    log.lines()
        .map(|l| l.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start())
        // A call another thread interrupts is printed in two halves: its arguments come first.
        .filter(|l| l.ends_with("= 0") && !l.contains("resumed>") || l.ends_with("<unfinished ...>"))
        .filter_map(|l| {
            let (name, rest) = l.split_once('(')?;
            Some(Call { name: name.to_string(), names: between(rest, '"', '"'), fds: between(rest, '<', '>') })
        })
        .collect()
}

#[test]
fn parts_and_manifest_reach_the_disk_before_the_names_that_publish_them() {
    if Command::new("strace").arg("-V").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI needs strace (apt-get install strace)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 3, 40);
    let log = tmp.path().join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-y", "-o"])
        .arg(&log)
        .args(["-e", "trace=fsync,fdatasync,rename,renameat,renameat2"])
        .arg(env!("CARGO_BIN_EXE_tokq"))
        .args(job.args())
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let calls = calls(&std::fs::read_to_string(&log).unwrap());
    let out_dir = job.out.canonicalize().unwrap().display().to_string();
    let syncs = |c: &Call, path: &str| c.name.starts_with("fsync") && c.fds.iter().any(|p| p == path);
    let renamed_to = |name: &str| calls.iter().position(|c| c.name.starts_with("rename") && c.names.last().is_some_and(|p| p == name));

    let manifest = manifest(&job.out);
    let manifest_at = renamed_to(&format!("{out_dir}/_tokq_manifest.parquet")).expect("the manifest is renamed into place");
    for f in manifest["files"].as_array().unwrap() {
        let name = format!("{out_dir}/{}", f["path"].as_str().unwrap());
        let at = renamed_to(&name).unwrap_or_else(|| panic!("{name} is renamed into place"));
        let from = &calls[at].names[0];
        assert!(calls[..at].iter().any(|c| syncs(c, from)), "{from} is synced before it is renamed to {name}");
        assert!(calls[at..manifest_at].iter().any(|c| syncs(c, &out_dir)), "the folder is synced after {name} appears and before the manifest");
    }
    let manifest_path = format!("{out_dir}/_tokq_manifest.parquet");
    assert!(calls[manifest_at..].iter().any(|c| syncs(c, &manifest_path)), "the manifest itself is synced");
    assert!(calls[manifest_at..].iter().any(|c| syncs(c, &out_dir)), "the manifest's name is synced");
}
