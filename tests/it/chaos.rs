//! Chaos: `kill -9` of one of two executors at a random moment of `queries/dedup.sql` on Reuters,
//! a plan whose stages exchange rows. Every trial must end, within a bound, with the local run's
//! rows. CI runs `TOKQ_CHAOS_TRIALS` trials (default 2); the figure is 20:
//! `TOKQ_CHAOS_TRIALS=20 cargo test --release --test it chaos -- --nocapture`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::cluster::{start_with, Setup};
use crate::util::*;
use crate::dedup::rejected;

/// dedup.sql's arguments for `input`, writing under `dir`.
fn dedup_args(input: &Path, dir: &Path) -> Vec<String> {
    let d = |n: &str| format!("{}/{n}/", dir.display());
    let mut args: Vec<String> = ["run", "queries/dedup.sql", "--quiet", "--partitions", "2"].map(String::from).to_vec();
    for (k, v) in [("input", input.display().to_string()), ("work", d("work")), ("output", d("out")), ("rejects", d("rejects"))] {
        args.extend(["--set".to_string(), format!("{k}={v}")]);
    }
    args
}

type Rows = (Vec<String>, Vec<(String, (String, String))>);

/// Kept doc ids and rejected (id, reason, representative), sorted.
fn rows(dir: &Path) -> Rows {
    let mut kept: Vec<String> = strings(&read_output(&dir.join("out")).batch, "doc_id").into_iter().flatten().collect();
    kept.sort();
    (kept, rejected(dir).into_iter().collect())
}

/// What a trial's rows lack and add against the local run's, a few of each, so that a failure
/// says which rows went wrong (kept ids, then rejected rows with reason and representative).
fn differences(got: &Rows, want: &Rows) -> String {
    fn diff<T: Ord + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> String {
        let missing: Vec<_> = want.iter().filter(|w| got.binary_search(w).is_err()).collect();
        let extra: Vec<_> = got.iter().filter(|g| want.binary_search(g).is_err()).collect();
        format!("{what}: {} rows, {} locally; missing {} {:?}; extra {} {:?}", got.len(), want.len(), missing.len(), &missing[..missing.len().min(5)], extra.len(), &extra[..extra.len().min(5)])
    }
    format!("{}; {}", diff("kept", &got.0, &want.0), diff("rejected", &got.1, &want.1))
}

/// A small xorshift, seeded from the clock and printed, so a failing trial can be replayed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

#[test]
fn killing_an_executor_at_a_random_moment_of_dedup_gives_the_local_rows() {
    let Some(reuters) = shared("corpora/reuters-21578/reuters21578.jsonl.gz") else { return };
    let trials: usize = std::env::var("TOKQ_CHAOS_TRIALS").ok().and_then(|t| t.parse().ok()).unwrap_or(2);
    let seed = std::env::var("TOKQ_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    let mut dice = Dice(seed);
    let tmp = tempfile::tempdir().unwrap();

    let run = |dir: &Path, cluster: Option<&str>| {
        let mut args = dedup_args(&reuters, dir);
        args.extend(["--stats-json".to_string(), format!("{}.stats.json", dir.display())]);
        args.extend(cluster.map(|url| ["--cluster".to_string(), url.to_string()]).into_iter().flatten());
        KillOnDrop(Command::new(env!("CARGO_BIN_EXE_tokq")).args(&args).current_dir(repo_root()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap())
    };
    let local = tmp.path().join("local");
    assert!(run(&local, None).0.wait().unwrap().success());
    let want = rows(&local);
    // How long an undisturbed cluster run takes: the kills fall within it.
    let clean = tmp.path().join("clean");
    let started = Instant::now();
    let cluster = start_with(2, Setup { fast_failover: true, ..Setup::default() });
    assert!(run(&clean, Some(&cluster.url())).0.wait().unwrap().success());
    let cluster_took = started.elapsed();
    drop(cluster);
    assert!(rows(&clean) == want, "the undisturbed cluster run differs from the local run");

    let mut report = Vec::new();
    for trial in 0..trials {
        let mut cluster = start_with(2, Setup { fast_failover: true, ..Setup::default() });
        let dir = tmp.path().join(format!("trial{trial}"));
        let mut child = run(&dir, Some(&cluster.url()));
        // A moment within an undisturbed run, and a victim.
        let at = Duration::from_millis(200 + dice.below(cluster_took.as_millis() as u64));
        let victim = dice.below(2) as usize;
        std::thread::sleep(at);
        let finished_before = child.0.try_wait().unwrap().is_some();
        cluster.kill_executor(victim);
        let status = child.wait_within(240, || format!("trial {trial} (seed {seed}): hung 240 s after executor {victim} was killed at {at:?}:\n{}", cluster.logs()));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
        assert!(status.success(), "trial {trial} (seed {seed}): failed after executor {victim} was killed at {at:?}: {err}\n{}", cluster.logs());
        let got = rows(&dir);
        assert!(got == want, "trial {trial} (seed {seed}): rows differ from the local run after killing executor {victim} at {at:?}: {}\n{}", differences(&got, &want), cluster.logs());
        let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(format!("{}.stats.json", dir.display())).unwrap()).unwrap();
        let resubmitted = stats["resubmitted"].as_array().map_or(0, Vec::len);
        report.push(format!(
            "trial {trial}: killed executor {victim} at {at:?}{}, {resubmitted} statement(s) resubmitted, same rows",
            if finished_before { " (after the job ended)" } else { "" }
        ));
    }
    eprintln!("chaos (seed {seed}, undisturbed cluster run {cluster_took:?}):\n{}", report.join("\n"));
}
