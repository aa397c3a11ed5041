//! A real cluster on 127.0.0.1: `tokq scheduler` and two `tokq executor` processes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Scheduler and executors, killed when dropped.
pub struct Cluster {
    pub port: u16,
    children: Vec<Child>,
    _logs: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(logs: &std::path::Path, name: &str, args: &[String]) -> Child {
    let log = std::fs::File::create(logs.join(format!("{name}.log"))).unwrap();
    Command::new(env!("CARGO_BIN_EXE_tokq"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn executors_registered(port: u16) -> usize {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return 0 };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = write!(s, "GET /api/executors HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.matches("\"host\"").count()
}

pub fn start(executors: usize) -> Cluster {
    let logs = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut children = vec![spawn(logs.path(), "scheduler", &["scheduler".into(), "--bind-port".into(), port.to_string()])];
    for i in 0..executors {
        let work = logs.path().join(format!("work{i}"));
        std::fs::create_dir_all(&work).unwrap();
        children.push(spawn(
            logs.path(),
            &format!("executor{i}"),
            &[
                "executor".into(), "--scheduler-port".into(), port.to_string(),
                "--scheduler-host".into(), "127.0.0.1".into(),
                "--bind-port".into(), free_port().to_string(),
                "--bind-grpc-port".into(), free_port().to_string(),
                "--vcores".into(), "1".into(),
                "--work-dir".into(), work.display().to_string(),
            ],
        ));
    }
    let cluster = Cluster { port, children, _logs: logs };
    let deadline = Instant::now() + Duration::from_secs(60);
    while executors_registered(port) < executors {
        if Instant::now() > deadline {
            let log = |n: &str| std::fs::read_to_string(cluster._logs.path().join(n)).unwrap_or_default();
            panic!("executors did not register:\n{}\n{}", log("scheduler.log"), log("executor0.log"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    cluster
}

#[test]
fn quickstart_on_a_two_executor_cluster_equals_the_local_run() {
    let cluster = start(2);
    let tmp = tempfile::tempdir().unwrap();
    let (local, remote) = (tmp.path().join("local"), tmp.path().join("remote"));
    tokq_ok(&["run", "queries/quickstart.sql", "--quiet", "--set", &format!("output={}/", local.display())]);
    let url = format!("df://127.0.0.1:{}", cluster.port);
    let stdout = tokq_ok(&[
        "run", "--cluster", &url, "queries/quickstart.sql", "--quiet", "--partitions", "2",
        "--set", &format!("output={}/", remote.display()),
    ]);
    assert!(stdout.contains("| 200 "), "{stdout}");
    let (a, b) = (rows(&read_output(&local).batch), rows(&read_output(&remote).batch));
    assert_eq!(a.len(), 200);
    assert_eq!(a, b);
}

#[test]
fn packing_on_a_two_executor_cluster_equals_the_local_run() {
    use crate::pack::{check_exact, packed_rows, run_pack};
    let cluster = start(2);
    let tmp = tempfile::tempdir().unwrap();
    let (local, remote) = (tmp.path().join("local"), tmp.path().join("remote"));
    let opts = ["--partitions", "2", "--set", "seq_len=64", "--set", "pack=eos=100257,tail=pad,pad=0"];
    run_pack(&local, &opts);
    let url = format!("df://127.0.0.1:{}", cluster.port);
    let mut remote_opts = vec!["--cluster", url.as_str()];
    remote_opts.extend(opts);
    run_pack(&remote, &remote_opts);
    let (a, b) = (packed_rows(&read_output(&local).batch), packed_rows(&read_output(&remote).batch));
    assert_eq!(check_exact(&b, true), 200);
    let key = |rows: Vec<crate::pack::Packed>| {
        let mut k: Vec<_> = rows.into_iter().map(|r| (r.docs, r.first_offset, r.tokens)).collect();
        k.sort();
        k
    };
    assert_eq!(key(a), key(b), "the same rows as the local run");

    // Padded rows: the scalar functions on the executors give the local run's ids and masks.
    let padded = |dir: &std::path::Path| {
        format!(
            "COPY (SELECT id AS doc_id, _source, _row, pad_tokens(ids, 128, 0) AS input_ids, attention_mask(ids, 128) AS attention_mask \
             FROM (SELECT *, tokenize(text, 'tiktoken:cl100k_base') AS ids FROM read_jsonl('queries/data/*.jsonl*'))) \
             TO '{}/' STORED AS PARQUET;",
            dir.display()
        )
    };
    let (pl, pr) = (tmp.path().join("padded-local"), tmp.path().join("padded-remote"));
    let (rl, rr) = (write(tmp.path(), "pl.sql", padded(&pl)), write(tmp.path(), "pr.sql", padded(&pr)));
    tokq_ok(&["run", rl.to_str().unwrap(), "--quiet", "--partitions", "2"]);
    tokq_ok(&["run", "--cluster", &url, rr.to_str().unwrap(), "--quiet", "--partitions", "2"]);
    let manifest = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(d.join("_tokq_manifest.json")).unwrap()).unwrap()
    };
    let (ml, mr) = (manifest(&pl), manifest(&pr));
    assert_eq!((ml["rows"].as_u64(), ml["tokens"].as_u64(), ml["padding_tokens"].as_u64()), (mr["rows"].as_u64(), mr["tokens"].as_u64(), mr["padding_tokens"].as_u64()));
    assert_eq!(ml["rows"].as_u64(), Some(200));
    assert_eq!(rows(&read_output(&pl).batch), rows(&read_output(&pr).batch));
}

#[test]
fn dedup_on_a_two_executor_cluster_gives_the_local_clusters() {
    use crate::dedup::{jsonl, planted, rejected, run_dedup};
    let cluster = start(2);
    let tmp = tempfile::tempdir().unwrap();
    let (docs, _) = planted();
    let input = write(tmp.path(), "docs.jsonl", jsonl(&docs));
    let (local, remote) = (tmp.path().join("local"), tmp.path().join("remote"));
    run_dedup(&local, &input, &["--partitions", "2"]);
    let url = format!("df://127.0.0.1:{}", cluster.port);
    run_dedup(&remote, &input, &["--cluster", &url, "--partitions", "2"]);
    let (a, b) = (rejected(&local), rejected(&remote));
    assert_eq!(a.len(), 21);
    assert_eq!(a, b);
    let kept = |d: &std::path::Path| read_output(&d.join("out")).batch.num_rows();
    assert_eq!(kept(&local), kept(&remote));
}
