//! Inputs, a tokenizer file and the output on an S3-compatible server. `.ci/run` starts moto on
//! 127.0.0.1, creates the bucket and sets `TOKQ_TEST_S3_ENDPOINT`; elsewhere the test is skipped.

use std::process::Command;
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::util::*;

const BUCKET: &str = "tokq-test";

fn endpoint() -> Option<String> {
    let e = std::env::var("TOKQ_TEST_S3_ENDPOINT").ok();
    if e.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must start an S3 server (TOKQ_TEST_S3_ENDPOINT)");
        eprintln!("skipped: TOKQ_TEST_S3_ENDPOINT not set");
    }
    e
}

/// The test bucket, as the given credentials see it (moto accepts any).
fn bucket(endpoint: &str, key_id: &str, secret: &str) -> Arc<dyn ObjectStore> {
    Arc::new(
        AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id(key_id)
            .with_secret_access_key(secret)
            .build()
            .unwrap(),
    )
}

/// `tokq` with the test bucket's endpoint and credentials in its environment, in the repository.
fn tokq_on_s3(endpoint: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tokq"));
    c.env("AWS_ENDPOINT", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .current_dir(repo_root());
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn quickstart_from_and_to_s3_equals_the_local_run() {
    let (Some(endpoint), Some(tok)) = (endpoint(), shared("tokenizers/gpt2/tokenizer.json")) else { return };
    let store = bucket(&endpoint, "test", "test");
    let root = repo_root();
    for (local, key) in [
        (root.join("queries/data/sample.jsonl"), "in/sample.jsonl"),
        (root.join("queries/data/sample-extra.jsonl.gz"), "in/sample-extra.jsonl.gz"),
        (tok.clone(), "tok/gpt2.json"),
    ] {
        store.put(&Path::from(key), PutPayload::from(std::fs::read(local).unwrap())).await.unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    // The quickstart from S3 to `output` on S3; its stdout.
    let quickstart = |output: &str| {
        let out = tokq_on_s3(&endpoint)
            .args(["run", "queries/quickstart.sql", "--quiet"])
            .args(["--set", &format!("input=s3://{BUCKET}/in/*.jsonl*")])
            .args(["--set", &format!("tokenizer=s3://{BUCKET}/tok/gpt2.json")])
            .args(["--set", &format!("output=s3://{BUCKET}/{output}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(quickstart("out/").contains("| 200 "));

    // Fetch the output and compare with a local run of the same tokenizer file.
    let remote = tmp.path().join("remote");
    std::fs::create_dir_all(&remote).unwrap();
    let manifest = manifest_of(store.get(&Path::from("out/_tokq_manifest.parquet")).await.unwrap().bytes().await.unwrap());
    for f in manifest["files"].as_array().unwrap() {
        let name = f["path"].as_str().unwrap();
        let bytes = store.get(&Path::from(format!("out/{name}"))).await.unwrap().bytes().await.unwrap();
        std::fs::write(remote.join(name), bytes).unwrap();
    }
    let local = tmp.path().join("local");
    tokq_ok(&[
        "run", "queries/quickstart.sql", "--quiet",
        "--set", &format!("tokenizer={}", tok.display()),
        "--set", &format!("output={}/", local.display()),
    ]);
    let strip = |rows: Vec<(String, String, i64, Vec<u32>)>| -> Vec<(String, String, i64, Vec<u32>)> {
        rows.into_iter().map(|(d, s, r, ids)| (d, s.rsplit('/').next().unwrap().to_string(), r, ids)).collect()
    };
    let remote_rows = rows(&read_output(&remote).batch);
    assert!(remote_rows.iter().all(|r| r.1.starts_with(&format!("s3://{BUCKET}/in/"))), "{:?}", remote_rows[0].1);
    assert_eq!(strip(remote_rows.clone()), strip(rows(&read_output(&local).batch)));

    // One file on S3: the same rows, and no staging objects left behind.
    quickstart("single/one.parquet");
    let listed = store.list_with_delimiter(Some(&Path::from("single"))).await.unwrap();
    let objects: Vec<String> = listed.objects.iter().map(|m| m.location.to_string()).collect();
    assert_eq!((objects, listed.common_prefixes), (vec!["single/one.parquet".to_string()], vec![]));
    let one = tmp.path().join("one.parquet");
    std::fs::write(&one, store.get(&Path::from("single/one.parquet")).await.unwrap().bytes().await.unwrap()).unwrap();
    assert_eq!(rows(&read_output_file(&one)), remote_rows);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fasttext_model_on_s3_gives_the_local_files_answers() {
    let (Some(endpoint), Some(lid)) = (endpoint(), crate::classify::lid176()) else { return };
    let store = bucket(&endpoint, "test", "test");
    store.put(&Path::from("models/lid.176.ftz"), PutPayload::from(std::fs::read(&lid).unwrap())).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let recipe = crate::classify::labelling_recipe(tmp.path());
    let run = |model: &str, out: &std::path::Path| {
        let o = tokq_on_s3(&endpoint)
            .args(["run", recipe.to_str().unwrap(), "--quiet", "--set", &format!("model={model}")])
            .args(["--set", &format!("output={}/", out.display())])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        read_output(out).batch
    };
    let (remote, local) = (run(&format!("s3://{BUCKET}/models/lid.176.ftz"), &tmp.path().join("s3")), run(&lid, &tmp.path().join("local")));
    for name in crate::classify::LABELS {
        assert_eq!(remote.column_by_name(name), local.column_by_name(name), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_output_on_s3_is_locked_by_a_conditional_create() {
    let Some(endpoint) = endpoint() else { return };
    let store = bucket(&endpoint, "test", "test");
    store.put(&Path::from("lockin/sample.jsonl"), PutPayload::from(std::fs::read(repo_root().join("queries/data/sample.jsonl")).unwrap())).await.unwrap();
    let lock = Path::from("locked/_tokq_lock.json");
    let run = || {
        tokq_on_s3(&endpoint)
            .args(["run", "queries/quickstart.sql", "--quiet"])
            .args(["--set", &format!("input=s3://{BUCKET}/lockin/*.jsonl")])
            .args(["--set", &format!("output=s3://{BUCKET}/locked/")])
            .output()
            .unwrap()
    };
    // Held by a run on another machine: refused, naming it, and the lock stays.
    store.put(&lock, PutPayload::from(r#"{"writer":"node-7 pid 4242","since":1}"#)).await.unwrap();
    let out = run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("being written by another tokq run (node-7 pid 4242"), "{err}");
    assert!(store.head(&lock).await.is_ok());
    // Free: the run takes it, writes, and gives it back.
    store.delete(&lock).await.unwrap();
    let out = run();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(store.head(&Path::from("locked/_tokq_manifest.parquet")).await.is_ok());
    assert!(store.head(&lock).await.is_err(), "the lock is released");
}

/// On a cluster: scheduler and executors get the store from their own environment.
mod on_a_cluster {
    use super::*;

    /// Unusual credentials, so that finding them anywhere means they leaked.
    const KEY_ID: &str = "AKIATOKQLEAKCHECK7";
    const SECRET: &str = "tokq-secret-4c1d9e77";

    async fn download(store: &Arc<dyn ObjectStore>, prefix: &str, to: &std::path::Path) -> Vec<Vec<u8>> {
        std::fs::create_dir_all(to).unwrap();
        let manifest = store.get(&Path::from(format!("{prefix}/_tokq_manifest.parquet"))).await.unwrap().bytes().await.unwrap();
        let m = manifest_of(manifest.clone());
        let mut all = vec![manifest.to_vec()];
        for f in m["files"].as_array().unwrap() {
            let name = f["path"].as_str().unwrap();
            let bytes = store.get(&Path::from(format!("{prefix}/{name}"))).await.unwrap().bytes().await.unwrap();
            std::fs::write(to.join(name), &bytes).unwrap();
            all.push(bytes.to_vec());
        }
        all
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_cluster_reads_and_writes_s3_and_credentials_stay_out_of_logs_plans_and_outputs() {
        let Some(endpoint) = endpoint() else { return };
        let env = [
            ("AWS_ENDPOINT", endpoint.as_str()),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_ACCESS_KEY_ID", KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
            ("AWS_REGION", "us-east-1"),
            ("RUST_LOG", "debug"),
        ];
        let store = bucket(&endpoint, KEY_ID, SECRET);
        let tmp = tempfile::tempdir().unwrap();
        let job = crate::durability::Job::new(tmp.path(), FILTER_AND_TOKENIZE, 4, 100);
        for e in std::fs::read_dir(tmp.path().join("in")).unwrap() {
            let p = e.unwrap().path();
            let key = format!("cluster/in/{}", p.file_name().unwrap().to_str().unwrap());
            store.put(&Path::from(key), PutPayload::from(std::fs::read(&p).unwrap())).await.unwrap();
        }
        job.run(&["--partitions", "2"], &[]);
        let cluster = crate::cluster::start_with(2, crate::cluster::Setup { env: &env, ..Default::default() });
        let url = cluster.url();
        let s3 = |k: &str| format!("s3://{BUCKET}/cluster/{k}");
        let stats = tmp.path().join("s3-stats.json");
        let args = [
            "run", job.recipe.to_str().unwrap(), "--cluster", &url, "--partitions", "3",
            "--set", &format!("input={}", s3("in/*.jsonl")), "--set", &format!("output={}/", s3("out")),
            "--set", &format!("rejects={}/", s3("rejects")), "--stats-json", stats.to_str().unwrap(),
        ];
        let run = tokq_within(&args, &env, 300);
        let explain = tokq_within(&["explain", job.recipe.to_str().unwrap(), "--cluster", &url, "--set", &format!("input={}", s3("in/*.jsonl")),
            "--set", &format!("output={}/", s3("out")), "--set", &format!("rejects={}/", s3("rejects"))], &env, 120);

        let (out, rejects) = (tmp.path().join("s3-out"), tmp.path().join("s3-rejects"));
        let mut written = download(&store, "cluster/out", &out).await;
        written.extend(download(&store, "cluster/rejects", &rejects).await);
        let strip = |rows: Vec<(String, String, i64, Vec<u32>)>| -> Vec<(String, String, i64, Vec<u32>)> {
            rows.into_iter().map(|(d, s, r, ids)| (d, s.rsplit('/').next().unwrap().to_string(), r, ids)).collect()
        };
        let remote = rows(&read_output(&out).batch);
        assert!(remote.iter().all(|r| r.1.starts_with(&s3("in/"))), "{}", remote[0].1);
        assert_eq!(strip(remote), strip(rows(&read_output(&job.out).batch)));
        let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        assert_eq!(s["outputs"][0]["writers"].as_object().unwrap().len(), 2, "both executors write to S3: {s}");

        let mut texts = vec![
            ("cluster logs", cluster.logs().into_bytes()),
            ("client stdout", run.stdout.clone()),
            ("client stderr", run.stderr.clone()),
            ("explain", explain.stdout.clone()),
            ("stats", std::fs::read(&stats).unwrap()),
        ];
        texts.extend(written.into_iter().map(|b| ("an output file", b)));
        assert!(texts[0].1.len() > 10_000, "debug logs expected");
        for (what, bytes) in &texts {
            for secret in [SECRET, KEY_ID] {
                assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret} appears in {what}");
            }
        }
    }
}
