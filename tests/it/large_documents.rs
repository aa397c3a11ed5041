//! Documents of megabytes: a batch never holds more than 2 GB of one column (its 32-bit offsets
//! would overflow), and memory is bounded by the batch, not by the file.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// Peak resident memory of a running process so far (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
    Some(kb * 1024)
}

/// `docs` JSONL documents of about `size` bytes of text each (varied words, so that nothing
/// compresses to nothing).
fn big_documents(path: &Path, docs: usize, size: usize) {
    let words = ["river", "station", "council", "history", "garden", "winter", "engine", "village", "theory", "market"];
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for d in 0..docs {
        let mut text = String::with_capacity(size + 16);
        while text.len() < size {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(words[(state % 10) as usize]);
            text.push_str(if state % 13 == 0 { ".\n" } else { " " });
        }
        writeln!(out, "{}", serde_json::json!({"id": format!("d{d}"), "text": text})).unwrap();
    }
    out.flush().unwrap();
}

#[test]
fn a_2_3_gb_file_of_2_mb_documents_reads_within_2_gb_of_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("books.jsonl");
    big_documents(&input, 1_100, 2_100_000);
    assert!(std::fs::metadata(&input).unwrap().len() > 2_300_000_000);
    let recipe = write(
        tmp.path(),
        "r.sql",
        format!(
            "COPY (SELECT id, _source, _row, text, length(text) AS chars FROM read_jsonl('{}') WHERE length(text) > 1000)
             TO '{}/out/' STORED AS PARQUET;",
            input.display(),
            tmp.path().display()
        ),
    );
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_tokq"))
            .args(["run", recipe.to_str().unwrap(), "--quiet"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (pid, deadline) = (child.0.id(), Instant::now() + Duration::from_secs(600));
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        peak = peak_rss(pid).unwrap_or(0).max(peak);
        assert!(Instant::now() < deadline, "the run took over 600 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    let m: serde_json::Value = manifest(&tmp.path().join("out"));
    assert_eq!(m["rows"], 1_100);
    assert!(peak > 0 && peak < 2 << 30, "peak RSS {} MB", peak >> 20);
    eprintln!("2.3 GB of 2 MB documents: peak RSS {} MB", peak >> 20);
}
