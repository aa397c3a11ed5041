//! A real cluster on 127.0.0.1: `tokq scheduler` and two `tokq executor` processes.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;
use crate::durability::{ctrl_c, Job};

/// A port nothing listens on, and that no other call in this test process has handed out: the
/// kernel may give a just-released port again, and a scheduler's port handed to an executor's
/// Flight server fails its start (seen in CI: AddrInUse, 'executors did not register').
fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<BTreeSet<u16>> = std::sync::Mutex::new(BTreeSet::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if GIVEN.lock().unwrap_or_else(|p| p.into_inner()).insert(port) {
            return port;
        }
    }
}

/// Scheduler and executors, killed when dropped.
pub struct Cluster {
    pub port: u16,
    children: Vec<Child>,
    logs: tempfile::TempDir,
    env: Vec<(String, String)>,
    /// What every node is started with beyond its role's own arguments.
    node_args: Vec<String>,
    /// The user-agent a member presents, when the cluster has a secret.
    pub agent: Option<String>,
    /// What a member of this cluster presents and speaks.
    pub member: tokq_engine::cluster::Credentials,
    /// Each executor's Flight port.
    pub flight_ports: Vec<u16>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Cluster {
    pub fn url(&self) -> String {
        format!("df://127.0.0.1:{}", self.port)
    }

    /// The plan of every stage of every job the scheduler ran, from its REST API.
    pub fn stage_plans(&self) -> Vec<String> {
        let get = |path: &str| -> serde_json::Value {
            let (code, body) = http_get(self.port, path, self.agent.as_deref());
            assert_eq!(code, 200, "GET {path}: {body}");
            serde_json::from_str(&body).unwrap()
        };
        let jobs = get("/api/jobs");
        let ids = jobs.as_array().unwrap().iter().map(|j| j["job_id"].as_str().unwrap().to_string());
        ids.flat_map(|id| {
            let stages = get(&format!("/api/job/{id}/stages"));
            let plans = stages["stages"].as_array().unwrap().iter().map(|s| s["stage_plan"].as_str().unwrap().to_string());
            plans.collect::<Vec<_>>()
        })
        .collect()
    }

    pub fn executor_pids(&self) -> Vec<u32> {
        self.children[1..].iter().map(Child::id).collect()
    }

    /// `kill -9` of the scheduler.
    pub fn kill_scheduler(&mut self) {
        let c = &mut self.children[0];
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Starts one more executor.
    pub fn add_executor(&mut self) {
        let node_args = self.node_args.clone();
        self.add_executor_with(&node_args);
    }

    /// Starts one more executor with `node_args` instead of the cluster's.
    pub fn add_executor_with(&mut self, node_args: &[String]) {
        let i = self.children.len() - 1;
        let work = self.logs.path().join(format!("work{i}"));
        std::fs::create_dir_all(&work).unwrap();
        let flight = free_port();
        self.flight_ports.push(flight);
        let mut args: Vec<String> = vec![
            "executor".into(), "--scheduler-port".into(), self.port.to_string(),
            "--scheduler-host".into(), "127.0.0.1".into(),
            "--bind-port".into(), flight.to_string(),
            "--bind-grpc-port".into(), free_port().to_string(),
            "--vcores".into(), "1".into(),
            "--work-dir".into(), work.display().to_string(),
        ];
        args.extend(node_args.iter().cloned());
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.children.push(spawn(self.logs.path(), &format!("executor{i}"), &args, &env));
    }

    /// `kill -9` of executor `i`.
    pub fn kill_executor(&mut self, i: usize) {
        let c = &mut self.children[1 + i];
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Every process's log.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for e in std::fs::read_dir(self.logs.path()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "log") {
                all.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
        all
    }

    /// How many lines of the nodes' logs contain every one of `words`.
    pub fn log_lines(&self, words: &[&str]) -> usize {
        self.logs().lines().filter(|l| words.iter().all(|w| l.contains(w))).count()
    }
}

/// How to start a cluster beyond its size.
#[derive(Default)]
pub struct Setup<'a> {
    /// Environment of the scheduler and executors.
    pub env: &'a [(&'a str, &'a str)],
    /// Executors declared dead after 10 s without a word (the shortest the scheduler takes).
    pub fast_failover: bool,
    /// A file holding the cluster's secret, given to every node.
    pub secret: Option<&'a std::path::Path>,
    /// `--allow-root` of every node.
    pub allow_roots: &'a [&'a std::path::Path],
    /// TLS on every connection, with the certificates `scheduler/certs.sh` made in this folder
    /// for `127.0.0.1,localhost` (see [`cluster_certs`]).
    pub tls: Option<&'a std::path::Path>,
}

/// The TLS files `scheduler/certs.sh DIR 127.0.0.1,localhost` makes, as node arguments.
pub fn tls_args(dir: &std::path::Path) -> Vec<String> {
    let file = |name: &str| dir.join(name).display().to_string();
    vec!["--tls-ca".into(), file("ca.pem"), "--tls-cert".into(), file("127.0.0.1.pem"), "--tls-key".into(), file("127.0.0.1.key")]
}

/// A CA and a certificate for 127.0.0.1 and localhost in `dir`, made by the script the docs give.
pub fn cluster_certs(dir: &std::path::Path) -> std::path::PathBuf {
    let out = Command::new("bash").arg(repo_root().join("scheduler/certs.sh")).arg(dir).arg("127.0.0.1,localhost").output().unwrap();
    assert!(out.status.success(), "scheduler/certs.sh failed (is openssl installed?): {}", String::from_utf8_lossy(&out.stderr));
    dir.to_path_buf()
}

fn spawn(logs: &std::path::Path, name: &str, args: &[String], env: &[(&str, &str)]) -> Child {
    let log = std::fs::File::create(logs.join(format!("{name}.log"))).unwrap();
    Command::new(env!("CARGO_BIN_EXE_tokq"))
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// A plain HTTP GET on the scheduler's port: the status code and the body.
pub fn http_get(port: u16, path: &str, agent: Option<&str>) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return (0, String::new()) };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let agent = agent.map(|a| format!("User-Agent: {a}\r\n")).unwrap_or_default();
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{agent}\r\n");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    let code = reply.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, reply.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_string()))
}

/// Starts an executor for `cluster` with `args` and expects it to be refused: it exits 1, and its
/// last line, returned, says why.
pub fn executor_refused(cluster: &Cluster, args: &[&str]) -> String {
    let port = cluster.port.to_string();
    let mut all = vec!["executor", "--scheduler-host", "127.0.0.1", "--scheduler-port", &port];
    all.extend(args);
    let out = run_within(&all, &[], 60);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    err.trim().lines().last().unwrap_or_default().to_string()
}

pub fn executors_registered(cluster: &Cluster) -> usize {
    if cluster.member.tls.is_none() {
        return http_get(cluster.port, "/tokq/executors", cluster.agent.as_deref()).1.trim().parse().unwrap_or(0);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let asked = rt.block_on(tokq_engine::cluster::executor_count(&format!("127.0.0.1:{}", cluster.port), &cluster.member));
    asked.ok().and_then(Result::ok).unwrap_or(0)
}

pub fn start(executors: usize) -> Cluster {
    start_with(executors, Setup::default())
}

pub fn start_with(executors: usize, setup: Setup) -> Cluster {
    let logs = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut node_args = Vec::new();
    if let Some(f) = setup.secret {
        node_args.extend(["--secret-file".to_string(), f.display().to_string()]);
    }
    for r in setup.allow_roots {
        node_args.extend(["--allow-root".to_string(), r.display().to_string()]);
    }
    if let Some(dir) = setup.tls {
        node_args.extend(tls_args(dir));
    }
    let mut scheduler = vec!["scheduler".to_string(), "--bind-port".into(), port.to_string()];
    if setup.fast_failover {
        scheduler.extend(["--executor-timeout-seconds", "10", "--expire-dead-executor-interval-seconds", "1"].map(String::from));
    }
    scheduler.extend(node_args.iter().cloned());
    let children = vec![spawn(logs.path(), "scheduler", &scheduler, setup.env)];
    let secret = setup.secret.map(|f| tokq_engine::cluster::secret::ClusterSecret::load(Some(f)).unwrap().unwrap());
    let agent = secret.as_ref().map(|s| s.user_agent());
    let files = tokq_engine::cluster::tls::TlsFiles { ca: setup.tls.map(|d| d.join("ca.pem")), ..Default::default() };
    let tls = tokq_engine::cluster::tls::ClusterTls::client(&files).unwrap().map(std::sync::Arc::new);
    let member = tokq_engine::cluster::Credentials { secret, tls };
    let env = setup.env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut cluster = Cluster { port, children, logs, env, node_args, agent, member, flight_ports: Vec::new() };
    for _ in 0..executors {
        cluster.add_executor();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() || executors_registered(&cluster) < executors {
        if Instant::now() > deadline {
            panic!("executors did not register:\n{}", cluster.logs());
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
    let url = cluster.url();
    let stdout = tokq_ok(&[
        "run", "--cluster", &url, "queries/quickstart.sql", "--quiet", "--partitions", "2",
        "--set", &format!("output={}/", remote.display()),
    ]);
    assert!(stdout.contains("| 200 "), "{stdout}");
    let (a, b) = (rows(&read_output(&local).batch), rows(&read_output(&remote).batch));
    assert_eq!(a.len(), 200);
    assert_eq!(a, b);
    // The scheduler logs each job it receives (what the test of a cluster without executors
    // looks for, to show that none came).
    assert!(cluster.log_lines(&["query_stage_scheduler] Job queued"]) > 0, "{}", cluster.logs());
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
    // Without --partitions too, on more files than cores: both take this machine's cores
    // (Ballista's default was 16, and a cluster packed other rows than the laptop).
    let input = format!("input={}", synthetic_corpus(&tmp.path().join("in"), 6, 40));
    let (local, remote) = (tmp.path().join("local-default"), tmp.path().join("remote-default"));
    let defaults = [&["--set", input.as_str()], &opts[2..]].concat();
    run_pack(&local, &defaults);
    run_pack(&remote, &[&["--cluster", url.as_str()], &defaults[..]].concat());
    let (a, b) = (packed_rows(&read_output(&local).batch), packed_rows(&read_output(&remote).batch));
    assert_eq!(key(a), key(b), "the same rows as the local run with the default partitions");
    // Packing by source: the executors hash the documents by file and pack each file alone.
    let by_source = ["--partitions", "3", "--set", "seq_len=64", "--set", "pack=eos=100257,tail=pad,pad=0,by=source"];
    let (local, remote) = (tmp.path().join("local-by-source"), tmp.path().join("remote-by-source"));
    run_pack(&local, &by_source);
    run_pack(&remote, &[&["--cluster", url.as_str()], &by_source[..]].concat());
    let (a, b) = (packed_rows(&read_output(&local).batch), packed_rows(&read_output(&remote).batch));
    assert_eq!(check_exact(&b, true), 200);
    assert_eq!(key(a), key(b), "the same rows as the local run, packed by source");

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
    // Joins are hash joins, as locally, each small side broadcast to the tasks: Ballista's own
    // default, sort-merge joins, shuffled and sorted the documents with their text once per join.
    let plans = cluster.stage_plans().join("\n");
    assert!(!plans.contains("SortMergeJoinExec"), "{plans}");
    assert!(plans.contains("HashJoinExec: mode=CollectLeft") && plans.contains("broadcast: true"), "{plans}");
}

/// Without exact duplicates the dedup's outer joins meet an empty side at run time, which sent
/// Ballista's adaptive planner into making stages without end; without any duplicate the
/// components are empty too. Both finish, bounded, with the local run's decisions.
#[test]
fn dedup_on_a_cluster_finishes_when_a_join_side_is_empty() {
    use crate::dedup::{dedup_args, jsonl, planted, rejected};
    let cluster = start(1);
    let tmp = tempfile::tempdir().unwrap();
    let (docs, _) = planted();
    let distinct: Vec<_> = docs.iter().filter(|(id, _)| !id.starts_with("exact-") && id != "short-b").cloned().collect();
    let unrelated: Vec<_> = docs.iter().filter(|(id, _)| id.starts_with("base-")).cloned().collect();
    for (name, docs, rejects) in [("near", distinct, 10), ("none", unrelated, 0)] {
        let input = write(tmp.path(), &format!("{name}.jsonl"), jsonl(&docs));
        let run = |dir: &std::path::Path, extra: &[&str]| {
            let args = dedup_args(dir, &input);
            let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
            args.extend(["--partitions", "2"].iter().chain(extra));
            tokq_within(&args, &[], 120);
        };
        let (local, remote) = (tmp.path().join(format!("{name}-local")), tmp.path().join(format!("{name}-remote")));
        run(&local, &[]);
        run(&remote, &["--cluster", &cluster.url()]);
        let (a, b) = (rejected(&local), rejected(&remote));
        assert_eq!(a.len(), rejects, "{name}: {a:?}");
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn executors_write_the_files_and_match_the_local_run_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 6, 150);
    let local = job.reference();
    let cluster = start(2);
    let stats = job.run(&["--cluster", &cluster.url(), "--partitions", "4"], &[]);
    assert_same_files(&job.snapshot(), &local, "the cluster's files differ from the local run's");
    let writers: BTreeSet<String> = stats["outputs"][0]["writers"].as_object().unwrap().keys().cloned().collect();
    let executors: BTreeSet<String> = cluster.executor_pids().iter().map(|p| format!(" pid {p}")).collect();
    assert_eq!(writers.len(), 2, "both executors write: {writers:?}");
    for w in &writers {
        assert!(executors.iter().any(|e| w.ends_with(e.as_str())), "{w} is not an executor ({executors:?})");
    }
}

#[test]
fn the_pieces_of_one_file_on_a_cluster_give_the_local_runs_files() {
    // One input file, cut into pieces that the two executors share.
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), &format!("SET tokq.split_bytes = 100000;\n{FILTER_AND_TOKENIZE}"), 1, 2000);
    let local = job.reference();
    assert!(local.0.len() > 4, "the file is read as pieces: {:?}", local.0.keys());
    let cluster = start(2);
    let stats = job.run(&["--cluster", &cluster.url(), "--partitions", "4"], &[]);
    assert_same_files(&job.snapshot(), &local, "the cluster's files of the pieces differ from the local run's");
    assert_eq!(stats["outputs"][0]["writers"].as_object().unwrap().len(), 2, "both executors read pieces: {stats}");
    // The executors' reads come back with the files they wrote.
    assert_eq!((stats["documents_read"].as_u64(), stats["rows_read"].as_u64()), (Some(2000), Some(2000)), "{stats}");
    assert_eq!(stats["accounting"][0]["input_rows"].as_u64(), Some(2000), "{stats}");
}

#[test]
fn progress_on_a_cluster_counts_what_the_executors_commit() {
    // Reads happen on the executors: the client used to show '0.0 MB, 0 rows' throughout.
    let tmp = tempfile::tempdir().unwrap();
    // Long enough (several seconds) for the client's half-second looks at the journal to see
    // files committed while the job runs: at 700 documents a file the whole job took 1.4 s, and
    // under the load of the other tests no look fell between the first commit and the end.
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 32, 2500);
    let cluster = start(2);
    let mut args: Vec<String> = job.args().into_iter().filter(|a| a != "--quiet").collect();
    args.extend(["--cluster".to_string(), cluster.url(), "--partitions".into(), "4".into()]);
    let out = tokq_within(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[("TOKQ_PROGRESS_SECONDS", "0.2")], 300);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // tokq: statement 2/2: COPY to ...: 6.7 MB, 5600 rows, 6.7 MB/s, 5576 rows/s, 1 s
    let progress: Vec<(f64, u64)> = stderr
        .lines()
        .filter(|l| l.starts_with("tokq: statement 2/2: COPY to "))
        .filter_map(|l| {
            let (_, counts) = l.rsplit_once(": ")?;
            let mut parts = counts.split(", ");
            let done: f64 = parts.next()?.split_whitespace().next()?.parse().ok()?;
            let rows: u64 = parts.next()?.split_whitespace().next()?.parse().ok()?;
            Some((done, rows))
        })
        .collect();
    assert!(progress.iter().any(|&(done, rows)| done > 0.0 && rows > 0), "no progress from the executors:\n{stderr}");
    assert!(progress.windows(2).all(|w| w[0].1 <= w[1].1), "progress went back:\n{stderr}");
}

#[test]
fn losing_an_executor_mid_job_gives_the_clean_runs_output() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 16, 700);
    let clean = job.reference();
    let mut cluster = start_with(2, Setup { fast_failover: true, ..Setup::default() });
    let url = cluster.url();
    let mut child = job.start(&["--cluster", &url, "--partitions", "4"]);
    job.wait_for_commits(&mut child, 1);
    cluster.kill_executor(1);
    let status = child.wait_within(180, || format!("the job did not finish within 180 s of losing an executor:\n{}", cluster.logs()));
    assert!(status.success(), "the job failed after losing an executor:\n{}", cluster.logs());
    assert_same_files(&job.snapshot(), &clean, "output after losing an executor differs from the clean run");
}

#[test]
fn fasttext_language_id_on_a_cluster_equals_the_local_run() {
    let Some(lid) = crate::classify::lid176() else { return };
    let cluster = start(2);
    let tmp = tempfile::tempdir().unwrap();
    let recipe = crate::classify::labelling_recipe(tmp.path());
    let (local, remote) = (tmp.path().join("local"), tmp.path().join("remote"));
    let model = format!("model={lid}");
    tokq_ok(&["run", recipe.to_str().unwrap(), "--quiet", "--set", &model, "--set", &format!("output={}/", local.display())]);
    let url = cluster.url();
    tokq_ok(&["run", "--cluster", &url, recipe.to_str().unwrap(), "--quiet", "--set", &model, "--set", &format!("output={}/", remote.display())]);
    let (a, b) = (read_output(&local).batch, read_output(&remote).batch);
    assert_eq!(a.num_rows(), 5);
    for name in crate::classify::LABELS {
        assert_eq!(a.column_by_name(name), b.column_by_name(name), "{name}: executors load the model and give the local answers");
    }
}

#[test]
fn a_cluster_without_executors_fails_within_the_wait_and_runs_no_job_later() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 2, 50);
    let mut cluster = start(0);
    let started = Instant::now();
    let mut args = job.args();
    args.extend(["--cluster".to_string(), cluster.url(), "--wait-for-executors".into(), "3".into()]);
    let err = tokq_err_within(&args.iter().map(String::as_str).collect::<Vec<_>>(), 60);
    let took = started.elapsed();
    assert!(err.contains("has no executor after 3 s") && err.contains("no job was submitted"), "{err}");
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(30), "{took:?}");
    // An executor that joins later finds nothing to run: the output never appears.
    cluster.add_executor();
    let deadline = Instant::now() + Duration::from_secs(60);
    while executors_registered(&cluster) < 1 {
        assert!(Instant::now() < deadline, "the executor did not register:\n{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(300));
    }
    // No job reached the scheduler, so none can run on the executor that joined.
    assert_eq!(cluster.log_lines(&["query_stage_scheduler] Job queued"]), 0, "a job was submitted:\n{}", cluster.logs());
    assert!(!job.out.exists(), "a job ran after the client gave up");
}

#[test]
fn losing_the_scheduler_fails_in_one_line_and_a_new_scheduler_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 16, 700);
    let clean = job.reference();
    let mut cluster = start(2);
    let url = cluster.url();
    let mut args = job.args();
    args.extend(["--cluster".to_string(), url.clone(), "--partitions".into(), "4".into()]);
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_tokq")).args(&args).current_dir(repo_root()).stderr(Stdio::piped()).spawn().unwrap(),
    );
    job.wait_for_commits(&mut child, 1);
    cluster.kill_scheduler();
    let status = child.wait_within(120, || "the client did not give up within 120 s of losing the scheduler".to_string());
    let mut err = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let err = err.trim();
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("lost the scheduler at {url}")), "{err}");
    drop(cluster);
    // A new cluster resumes from what the executors committed.
    let cluster = start(2);
    let stats = job.run(&["--cluster", &cluster.url(), "--partitions", "4"], &[]);
    assert_same_files(&job.snapshot(), &clean, "the rerun on a new scheduler differs from the clean run");
    assert!(stats["outputs"][0]["resumed_files"].as_u64().unwrap() >= 1, "{stats}");
}

#[test]
fn a_relative_output_path_is_the_clients_folder_on_a_cluster() {
    // The executors (here started in the test's own folder) wrote the part files into their
    // working folder and the client wrote the manifest into its own.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(repo_root().join("queries/data/sample.jsonl"), tmp.path().join("in.jsonl")).unwrap();
    let out = format!("rel-out-{}", std::process::id());
    let recipe = write(
        tmp.path(),
        "r.sql",
        format!("COPY (SELECT id, _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids FROM read_jsonl('in.jsonl')) TO '{out}/' STORED AS PARQUET;"),
    );
    let cluster = start(1);
    let run = Command::new(env!("CARGO_BIN_EXE_tokq"))
        .args(["run", recipe.to_str().unwrap(), "--quiet", "--cluster", &cluster.url()])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(!std::env::current_dir().unwrap().join(&out).exists(), "an executor wrote into its own folder");
    assert_eq!(manifest(&tmp.path().join(&out))["rows"], 120);
    manifest_is_true(&tmp.path().join(&out));
}

#[test]
fn sentence_ngram_and_substring_dedup_and_decontamination_on_a_cluster_give_the_local_rows() {
    use crate::subdoc::{decontaminate, planted_eval, planted_paragraphs, run_recipe, sentence_dedup, texts};
    let cluster = start(2);
    let url = format!("df://127.0.0.1:{}", cluster.port);
    let ws = Workspace::new();
    ws.file("docs.jsonl", crate::dedup::jsonl(&crate::subdoc::planted()));
    planted_eval(&ws);
    sentence_dedup(&ws, "local", &["--partitions", "2"]);
    sentence_dedup(&ws, "remote", &["--partitions", "2", "--cluster", &url]);
    assert_eq!(texts(&ws, "local/out"), texts(&ws, "remote/out"));
    assert_eq!(texts(&ws, "local/rejects"), texts(&ws, "remote/rejects"));
    // With the Bloom filter: built by the executors, read back by each of them, the same rows.
    sentence_dedup(&ws, "bloom", &["--partitions", "2", "--cluster", &url, "--set", "bloom=true", "--set", "bloom_fpr=0.3"]);
    assert_eq!(texts(&ws, "local/out"), texts(&ws, "bloom/out"));
    assert_eq!(texts(&ws, "local/rejects"), texts(&ws, "bloom/rejects"));
    decontaminate(&ws, "dc-local", &["--partitions", "2"]);
    decontaminate(&ws, "dc-remote", &["--partitions", "2", "--cluster", &url]);
    assert_eq!(texts(&ws, "dc-local/out"), texts(&ws, "dc-remote/out"));
    assert_eq!(texts(&ws, "dc-local/rejects").len(), 2);
    assert_eq!(texts(&ws, "dc-local/rejects"), texts(&ws, "dc-remote/rejects"));
    run_recipe(&ws, "substring-dedup.sql", "sub-local", &["n_tokens=30"], &["--partitions", "2"]);
    run_recipe(&ws, "substring-dedup.sql", "sub-remote", &["n_tokens=30"], &["--partitions", "2", "--cluster", &url]);
    assert_eq!(texts(&ws, "sub-local/out"), texts(&ws, "sub-remote/out"));
    assert_eq!(texts(&ws, "sub-local/rejects").len(), 1);
    assert_eq!(texts(&ws, "sub-local/rejects"), texts(&ws, "sub-remote/rejects"));
    let nd = Workspace::new();
    nd.file("docs.jsonl", crate::dedup::jsonl(&planted_paragraphs()));
    run_recipe(&nd, "ngram-dedup.sql", "local", &[], &["--partitions", "2"]);
    run_recipe(&nd, "ngram-dedup.sql", "remote", &[], &["--partitions", "2", "--cluster", &url]);
    assert_eq!(texts(&nd, "local/out"), texts(&nd, "remote/out"));
    assert_eq!(texts(&nd, "local/rejects").len(), 2);
    assert_eq!(texts(&nd, "local/rejects"), texts(&nd, "remote/rejects"));
}

#[test]
fn fineweb_edu_with_a_neural_classifier_on_a_cluster_gives_the_local_rows() {
    use crate::models::{fineweb_edu, scored, tiny_bert};
    let cluster = start(2);
    let url = format!("df://127.0.0.1:{}", cluster.port);
    let ws = Workspace::new();
    tiny_bert(&ws.path().join("edu"));
    fineweb_edu(&ws, "local", &["--partitions", "2"]);
    fineweb_edu(&ws, "remote", &["--partitions", "2", "--cluster", &url]);
    assert_eq!(scored(&ws, "local/out"), scored(&ws, "remote/out"));
    assert_eq!(ws.output("local/rejects").batch.num_rows(), ws.output("remote/rejects").batch.num_rows());
}

#[test]
fn local_cluster_script_refuses_a_port_in_use() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let out = Command::new("bash")
        .args(["scheduler/local-cluster.sh", "1", &port])
        .env("TOKQ", env!("CARGO_BIN_EXE_tokq"))
        .current_dir(repo_root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("port {port} on 127.0.0.1 is in use")), "{stderr}");
}

#[test]
fn ctrl_c_on_a_cluster_cancels_its_job_and_the_rerun_resumes() {
    let cluster = start(2);
    let tmp = tempfile::tempdir().unwrap();
    let job = Job::new(tmp.path(), FILTER_AND_TOKENIZE, 24, 700);
    let url = cluster.url();
    let mut child = job.start_heard(&["--cluster", &url, "--partitions", "2"]);
    job.wait_for_commits(&mut child, 1);
    let (code, err) = ctrl_c(&mut child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted; run the same command again to resume"), "{err}");
    // The job is cancelled on the scheduler: no stage or task of it starts any more. (Tasks
    // already running finish their partition: Ballista 55's pull scheduling cannot reach an
    // executor to stop one, which the scheduler's log says.)
    let deadline = Instant::now() + Duration::from_secs(10);
    while cluster.log_lines(&["cancelled job", "was stopped"]) == 0 {
        assert!(Instant::now() < deadline, "the job was not cancelled:\n{err}\n{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(cluster.log_lines(&["Job cancelled"]) > 0, "{}", cluster.logs());
    // The rerun keeps what was committed and accounts for every input row.
    let stats = job.run(&["--cluster", &url, "--partitions", "2"], &[]);
    assert!(stats["outputs"][0]["resumed_files"].as_u64().unwrap() > 0, "{stats}");
    let a = &stats["accounting"][0];
    assert_eq!(a["kept"].as_u64().unwrap() + a["rejected"].as_u64().unwrap(), 24 * 700, "{stats}");
    manifest_is_true(&job.out);
}
