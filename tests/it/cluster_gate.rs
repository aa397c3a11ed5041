//! The cluster's doors: a shared secret on every call, the REST API on this machine only, and
//! allowed data roots on every node (docs/cluster.md, "Trust model").

use crate::cluster::{executor_refused, executors_registered, http_get, start_with, Setup};
use crate::util::*;
use crate::dedup::{jsonl, planted, rejected, run_dedup};

const SECRET: &str = "zebra-quartz-lantern-0451-orbit";

/// Whether a Flight call to an executor without `agent` is refused as unauthenticated.
fn flight_refuses(port: u16, agent: Option<&str>) -> bool {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut endpoint = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}")).unwrap();
        if let Some(a) = agent {
            endpoint = endpoint.user_agent(a.to_string()).unwrap();
        }
        let mut client = arrow_flight::flight_service_client::FlightServiceClient::new(endpoint.connect().await.unwrap());
        let ticket = arrow_flight::Ticket { ticket: "not a ticket".into() };
        client.do_get(ticket).await.err().is_some_and(|e| e.code() == tonic::Code::Unauthenticated)
    })
}

#[test]
fn a_cluster_with_a_secret_runs_its_members_jobs_and_refuses_everyone_else() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = write(tmp.path(), "secret", format!("{SECRET}\n"));
    let wrong = write(tmp.path(), "wrong", "not-the-secret-but-long-enough");
    let cluster = start_with(2, Setup { secret: Some(&secret), ..Setup::default() });
    let url = cluster.url();

    // Members: dedup shuffles between the executors, which fetch each other's data and the
    // client fetches the results, all presenting the secret; the rows are the local run's.
    let (docs, _) = planted();
    let input = write(tmp.path(), "docs.jsonl", jsonl(&docs));
    let (local, remote) = (tmp.path().join("local"), tmp.path().join("remote"));
    run_dedup(&local, &input, &["--partitions", "2"]);
    let stats = tmp.path().join("stats.json");
    let secret_arg = secret.display().to_string();
    let stats_arg = stats.display().to_string();
    run_dedup(&remote, &input, &["--cluster", &url, "--partitions", "2", "--secret-file", &secret_arg, "--stats-json", &stats_arg]);
    assert_eq!(rejected(&local), rejected(&remote));
    assert_eq!(read_output(&local.join("out")).batch.num_rows(), read_output(&remote.join("out")).batch.num_rows());

    // Clients without the secret, or with another, fail at once in one line; nothing is written.
    let recipe = write(tmp.path(), "r.sql", format!("COPY (SELECT 1 AS a) TO '{}/never/' STORED AS PARQUET;", tmp.path().display()));
    let wrong_arg = wrong.display().to_string();
    for extra in [vec![], vec!["--secret-file", wrong_arg.as_str()]] {
        let mut args = vec!["run", "--cluster", &url, recipe.to_str().unwrap(), "--quiet", "--wait-for-executors", "5"];
        args.extend(extra);
        let err = tokq_err_within(&args, 60);
        assert!(err.contains("needs its secret") && err.contains("--secret-file"), "{err}");
    }
    assert!(!tmp.path().join("never").exists());

    // The scheduler's port: the executor count and the REST API need the secret too.
    let agent = cluster.agent.clone().unwrap();
    assert_eq!(http_get(cluster.port, "/tokq/executors", None).0, 401);
    assert_eq!(http_get(cluster.port, "/api/executors", None).0, 401);
    assert_eq!(http_get(cluster.port, "/api/executors", Some(&agent)).0, 200);
    assert_eq!(http_get(cluster.port, "/tokq/executors", Some(&agent)).1.trim(), "2");

    // The executors' Flight ports (shuffle files, results) refuse callers without the secret.
    for port in cluster.flight_ports.clone() {
        assert!(flight_refuses(port, None), "executor Flight port {port} answered a caller without the secret");
        assert!(!flight_refuses(port, Some(&agent)), "executor Flight port {port} refused a member");
    }

    // An executor with the wrong secret cannot join: it asks the scheduler before it starts, is
    // refused, and exits with one line instead of polling for work and logging refusals for ever.
    let last = executor_refused(&cluster, &["--secret-file", &wrong_arg]);
    let port = cluster.port;
    assert!(last.contains(&format!("the scheduler at 127.0.0.1:{port} refused this executor: this tokq cluster needs its secret")), "{last}");
    assert_eq!(executors_registered(&cluster), 2, "an executor with the wrong secret joined");

    // Neither the secret nor the token it makes appears in any log, the stats or the output.
    let token = agent.trim_start_matches("tokq-cluster/");
    let mut seen = cluster.logs();
    seen.push_str(&std::fs::read_to_string(&stats).unwrap());
    for dir in [remote.join("out"), remote.join("rejects")] {
        for f in std::fs::read_dir(&dir).unwrap() {
            seen.push_str(&String::from_utf8_lossy(&std::fs::read(f.unwrap().path()).unwrap()));
        }
    }
    assert!(seen.contains("without the cluster secret"), "the refusals are logged");
    assert!(!seen.contains(SECRET) && !seen.contains(token), "the secret or its token leaked");
}

/// A one-executor cluster fenced to `allowed`, beside an `outside` folder; both hold `data.csv`.
struct Fence {
    tmp: tempfile::TempDir,
    allowed: std::path::PathBuf,
    outside: std::path::PathBuf,
    url: String,
    _cluster: crate::cluster::Cluster,
}

impl Fence {
    fn start() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let (allowed, outside) = (tmp.path().join("allowed"), tmp.path().join("outside"));
        for d in [&allowed, &outside] {
            std::fs::create_dir_all(d).unwrap();
            write(d, "data.csv", "a,b\n1,2\n");
        }
        let cluster = start_with(1, Setup { allow_roots: &[allowed.as_path()], ..Setup::default() });
        Fence { url: cluster.url(), tmp, allowed, outside, _cluster: cluster }
    }

    fn run(&self, name: &str, sql: String) -> std::process::Output {
        let recipe = write(self.tmp.path(), name, sql);
        tokq(&["run", "--cluster", &self.url, recipe.to_str().unwrap(), "--quiet"])
    }

    /// Runs `sql` and checks that it fails with one line naming `named` as outside the root.
    fn refused(&self, name: &str, sql: String, named: &str) {
        let out = self.run(name, sql);
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert!(!out.status.success(), "{name} ran outside the allowed roots");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{named} is outside this node's allowed roots ({})", self.allowed.display())), "{name}: {err}");
    }
}

#[test]
fn jobs_outside_the_allowed_roots_are_refused_on_every_path() {
    let f = Fence::start();
    let (allowed, outside) = (&f.allowed, &f.outside);
    let (a, o) = (allowed.display(), outside.display());
    let shown = |p: std::path::PathBuf| p.display().to_string();

    let inside = f.run("inside.sql", format!("COPY (SELECT a, b FROM read_csv('{a}/data.csv')) TO '{a}/ok/' STORED AS PARQUET;"));
    assert!(inside.status.success(), "{}", String::from_utf8_lossy(&inside.stderr));
    f.refused("read.sql", format!("COPY (SELECT a, b FROM read_csv('{o}/data.csv')) TO '{a}/stolen/' STORED AS PARQUET;"), &shown(outside.join("data.csv")));
    f.refused("write.sql", format!("COPY (SELECT a, b FROM read_csv('{a}/data.csv')) TO '{o}/written/' STORED AS CSV;"), &shown(outside.join("written")));
    f.refused("parquet.sql", format!("COPY (SELECT a, b FROM read_csv('{a}/data.csv')) TO '{o}/parquet/' STORED AS PARQUET;"), &shown(outside.join("parquet")));
    for d in [allowed.join("stolen"), outside.join("written"), outside.join("parquet")] {
        assert_eq!(std::fs::read_dir(&d).map_or(0, |d| d.count()), 0, "{} has files", d.display());
    }
    // Files that functions load themselves (tokenizers, models, block lists) are fenced too.
    if let Some(gpt2) = shared("tokenizers/gpt2/tokenizer.json") {
        let tok = outside.join("tokenizer.json");
        std::os::unix::fs::symlink(gpt2, &tok).unwrap();
        f.refused(
            "tokenizer.sql",
            format!("COPY (SELECT tokenize(CAST(a AS VARCHAR), '{}') AS ids FROM read_csv('{a}/data.csv')) TO '{a}/tok/' STORED AS PARQUET;", tok.display()),
            &shown(tok),
        );
    }
}

#[test]
fn links_out_of_a_root_are_refused_and_links_inside_work() {
    let f = Fence::start();
    let (allowed, outside) = (&f.allowed, &f.outside);
    std::fs::create_dir_all(allowed.join("sub")).unwrap();
    write(&allowed.join("sub"), "data.csv", "a,b\n3,4\n");
    std::os::unix::fs::symlink(outside, allowed.join("outlink")).unwrap();
    std::os::unix::fs::symlink(allowed.join("sub"), allowed.join("inlink")).unwrap();
    let a = allowed.display();
    let link_out = |written: &str, real: std::path::PathBuf| format!("{a}/{written} (a link to {})", real.display());

    let inside = f.run("inside.sql", format!("COPY (SELECT a, b FROM read_csv('{a}/inlink/data.csv')) TO '{a}/inlink/ok/' STORED AS CSV;"));
    assert!(inside.status.success(), "{}", String::from_utf8_lossy(&inside.stderr));
    assert_eq!(std::fs::read_dir(allowed.join("sub/ok")).unwrap().count(), 1, "the write through a link inside the root landed");
    f.refused("read.sql", format!("COPY (SELECT a, b FROM read_csv('{a}/outlink/data.csv')) TO '{a}/stolen/' STORED AS PARQUET;"), &link_out("outlink/data.csv", outside.join("data.csv")));
    for (format, dir) in [("CSV", "csv"), ("JSON", "json"), ("PARQUET", "parquet")] {
        let sql = format!("COPY (SELECT 'pwned' AS x) TO '{a}/outlink/{dir}/' STORED AS {format};");
        f.refused(&format!("{dir}.sql"), sql, &link_out(&format!("outlink/{dir}"), outside.join(dir)));
    }
    let names: Vec<_> = std::fs::read_dir(outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["data.csv"], "nothing was written outside the root");
    if let Some(gpt2) = shared("tokenizers/gpt2/tokenizer.json") {
        let tok = allowed.join("tokenizer.json");
        std::os::unix::fs::symlink(&gpt2, &tok).unwrap();
        f.refused(
            "tokenizer.sql",
            format!("COPY (SELECT tokenize(CAST(a AS VARCHAR), '{}') AS ids FROM read_csv('{a}/data.csv')) TO '{a}/tok/' STORED AS PARQUET;", tok.display()),
            &link_out("tokenizer.json", std::fs::canonicalize(gpt2).unwrap()),
        );
    }
}

#[test]
fn a_node_on_a_network_address_needs_a_secret_or_says_insecure() {
    for role in [vec!["scheduler", "--bind-host", "0.0.0.0"], vec!["executor", "--bind-host", "0.0.0.0"]] {
        let err = tokq_err_within(&role, 30);
        assert!(err.contains("without a cluster secret") && err.contains("--secret-file") && err.contains("--insecure"), "{err}");
    }
    let err = tokq_err_within(&["scheduler", "--secret-file", "/nonexistent/secret"], 30);
    assert!(err.contains("cannot read the cluster secret file /nonexistent/secret"), "{err}");
}
