//! `hf://` and `https://` inputs against a local server that answers as the Hugging Face Hub does
//! (`resolve` URLs with ranges, the tree API a page at a time, a gated repository) and as a plain
//! file server; tokq finds it through `HF_ENDPOINT`, as `huggingface_hub` does.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::util::*;

/// The token the gated repository accepts.
const TOKEN: &str = "hf_test_token";

/// A hub on 127.0.0.1 serving the files under `root`: `datasets/ORG/NAME/REV/...` (the revision
/// as a folder, `refs/convert/parquet` for that branch), `ORG/NAME/REV/...` for models, and
/// `plain/...` as a file server. A repository folder holding `.gated` wants [`TOKEN`].
struct Hub {
    url: String,
    /// Requests answered with a part of a file (206).
    ranges: Arc<AtomicUsize>,
}

impl Hub {
    fn start(root: &Path) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (root, base, ranges) = (root.to_path_buf(), url.clone(), Arc::new(AtomicUsize::new(0)));
        let counted = Arc::clone(&ranges);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (root, base, counted) = (root.clone(), base.clone(), Arc::clone(&counted));
                std::thread::spawn(move || serve(conn, &root, &base, &counted));
            }
        });
        Hub { url, ranges }
    }

    /// tokq with this hub as its endpoint and `token` (none: no token at all).
    fn env(&self, token: Option<&str>) -> Vec<(&'static str, String)> {
        vec![
            ("HF_ENDPOINT", self.url.clone()),
            ("HF_TOKEN", token.unwrap_or("").to_string()),
            ("HF_TOKEN_PATH", "/nonexistent/token".to_string()),
        ]
    }
}

fn serve(mut conn: TcpStream, root: &Path, base: &str, ranges: &AtomicUsize) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let (mut range, mut auth) = (None, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        let (name, value) = h.split_once(':').unwrap_or((&h, ""));
        match name.to_ascii_lowercase().as_str() {
            "range" => range = Some(value.trim().to_string()),
            "authorization" => auth = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let segs: Vec<String> = path.trim_start_matches('/').split('/').map(decode).collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let reply = match segs.as_slice() {
        ["plain", rest @ ..] => file(&root.join("plain").join(rest.join("/")), range.as_deref()),
        ["api", kind, org, name, "tree", rev, rest @ ..] => {
            let repo = repo_dir(root, kind, org, name);
            match gate(&repo, auth.as_deref()) {
                Some(refusal) => refusal,
                None => tree(&repo, rev, &rest.join("/"), query, &format!("{base}{path}")),
            }
        }
        ["datasets", org, name, "resolve", rev, rest @ ..] | [org, name, "resolve", rev, rest @ ..] => {
            let kind = if segs[0] == "datasets" { "datasets" } else { "models" };
            let repo = repo_dir(root, kind, org, name);
            gate(&repo, auth.as_deref()).unwrap_or_else(|| file(&repo.join(rev).join(rest.join("/")), range.as_deref()))
        }
        _ => Reply::status(404),
    };
    if reply.status == 206 {
        ranges.fetch_add(1, Ordering::Relaxed);
    }
    let _ = reply.send(&mut conn, method == "HEAD");
}

fn repo_dir(root: &Path, kind: &str, org: &str, name: &str) -> PathBuf {
    match kind {
        "models" => root.join(org).join(name),
        kind => root.join(kind).join(org).join(name),
    }
}

/// `%XX` decoded.
fn decode(s: &str) -> String {
    let (b, mut out, mut i) = (s.as_bytes(), Vec::new(), 0);
    while i < b.len() {
        match (b[i], s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => (out.push(v), i += 3),
            (c, _) => (out.push(c), i += 1),
        };
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A refusal unless the repository is open or `auth` carries its token.
fn gate(repo: &Path, auth: Option<&str>) -> Option<Reply> {
    let open = !repo.join(".gated").exists() || auth == Some(&format!("Bearer {TOKEN}"));
    (!open).then(|| Reply::status(401))
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn status(status: u16) -> Self {
        Reply { status, headers: Vec::new(), body: Vec::new() }
    }

    fn send(self, conn: &mut TcpStream, head: bool) -> std::io::Result<()> {
        let mut out = format!("HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n", self.status, self.body.len());
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        conn.write_all(out.as_bytes())?;
        if !head {
            conn.write_all(&self.body)?;
        }
        conn.flush()
    }
}

/// A file, whole or the range asked for (`bytes=A-B` or `bytes=A-`).
fn file(path: &Path, range: Option<&str>) -> Reply {
    let Ok(bytes) = std::fs::read(path) else { return Reply::status(404) };
    let etag = ("ETag".to_string(), format!("\"{}\"", bytes.len()));
    let Some(r) = range.and_then(|r| r.strip_prefix("bytes=")) else {
        return Reply { status: 200, headers: vec![etag], body: bytes };
    };
    let (a, b) = r.split_once('-').unwrap();
    let a: usize = a.parse().unwrap();
    let b: usize = if b.is_empty() { bytes.len() - 1 } else { b.parse::<usize>().unwrap().min(bytes.len() - 1) };
    let content_range = ("Content-Range".to_string(), format!("bytes {a}-{b}/{}", bytes.len()));
    Reply { status: 206, headers: vec![etag, content_range], body: bytes[a..=b].to_vec() }
}

/// The tree API: every file under `rev/under`, two to a page, the next page in a `Link` header.
fn tree(repo: &Path, rev: &str, under: &str, query: &str, url: &str) -> Reply {
    let top = repo.join(rev);
    let mut files = Vec::new();
    let mut stack = vec![top.join(under)];
    if !stack[0].is_dir() {
        return Reply::status(404);
    }
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                files.push(e.path().strip_prefix(&top).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    let cursor: usize = query.split('&').find_map(|kv| kv.strip_prefix("cursor=")).map_or(0, |c| c.parse().unwrap());
    let page: Vec<String> = files
        .iter()
        .skip(cursor)
        .take(2)
        .map(|f| {
            let size = std::fs::metadata(top.join(f)).unwrap().len();
            // Parquet files are LFS files: the entry's own size is the pointer's.
            match f.ends_with(".parquet") {
                true => format!(r#"{{"type":"file","oid":"p","size":132,"path":"{f}","lfs":{{"oid":"sha{size}","size":{size},"pointerSize":132}}}}"#),
                false => format!(r#"{{"type":"file","oid":"o{size}","size":{size},"path":"{f}"}}"#),
            }
        })
        .collect();
    let mut headers = Vec::new();
    if cursor + 2 < files.len() {
        headers.push(("Link".to_string(), format!("<{url}?recursive=true&expand=false&cursor={}>; rel=\"next\"", cursor + 2)));
    }
    Reply { status: 200, headers, body: format!("[{}]", page.join(",")).into_bytes() }
}

fn jsonl(ids: &[&str]) -> String {
    ids.iter().map(|id| format!("{{\"id\":\"{id}\",\"text\":\"text of {id}\"}}\n")).collect()
}

fn gz(body: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(body.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// `tokq sql -c SQL --format ndjson` with `env`: the rows, or the one-line error.
fn sql(sql: &str, env: &[(&'static str, String)]) -> Result<Vec<serde_json::Value>, String> {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_within(&["sql", "-c", sql, "--format", "ndjson", "--quiet"], &env, 60);
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !out.status.success() {
        assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
        return Err(stderr);
    }
    Ok(String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

/// A dataset with files in folders (more than a page of them), a second revision, the parquet
/// branch, a gated dataset and a model.
fn hub() -> (tempfile::TempDir, Hub) {
    let d = tempfile::tempdir().unwrap();
    let w = |rel: &str, body: &[u8]| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    w("datasets/org/corpus/main/data/a.jsonl", jsonl(&["a1", "a2"]).as_bytes());
    w("datasets/org/corpus/main/data/b.jsonl.gz", &gz(&jsonl(&["b1"])));
    w("datasets/org/corpus/main/data/sub/c.jsonl", jsonl(&["c1", "c2", "c3"]).as_bytes());
    w("datasets/org/corpus/main/README.md", b"# corpus\n");
    w("datasets/org/corpus/v1/data/a.jsonl", jsonl(&["old"]).as_bytes());
    w("datasets/org/gated/.gated", b"");
    w("datasets/org/gated/main/train.jsonl", jsonl(&["g1"]).as_bytes());
    w("org/model/main/eval.jsonl", jsonl(&["m1"]).as_bytes());
    w("plain/files/p.jsonl.gz", &gz(&jsonl(&["p1", "p2"])));
    let hub = Hub::start(d.path());
    (d, hub)
}

#[test]
fn hub_datasets_read_with_globs_revisions_and_lineage() {
    let (_d, hub) = hub();
    let env = hub.env(None);
    let rows = sql("SELECT id, _source FROM read_jsonl('hf://datasets/org/corpus/data/**/*.jsonl*') ORDER BY id", &env).unwrap();
    let got: Vec<(String, String)> = rows.iter().map(|r| (r["id"].as_str().unwrap().into(), r["_source"].as_str().unwrap().into())).collect();
    let src = |f: &str| format!("hf://datasets/org/corpus/data/{f}");
    assert_eq!(
        got,
        [
            ("a1".into(), src("a.jsonl")),
            ("a2".into(), src("a.jsonl")),
            ("b1".into(), src("b.jsonl.gz")),
            ("c1".into(), src("sub/c.jsonl")),
            ("c2".into(), src("sub/c.jsonl")),
            ("c3".into(), src("sub/c.jsonl")),
        ]
    );
    // One file by name; a revision; a model repository.
    let one = sql("SELECT count(*) AS n FROM read_jsonl('hf://datasets/org/corpus/data/sub/c.jsonl')", &env).unwrap();
    assert_eq!(one[0]["n"], 3);
    let old = sql("SELECT id FROM read_jsonl('hf://datasets/org/corpus@v1/data/*.jsonl')", &env).unwrap();
    assert_eq!(old[0]["id"], "old");
    let model = sql("SELECT id FROM read_jsonl('hf://org/model/eval.jsonl')", &env).unwrap();
    assert_eq!(model[0]["id"], "m1");
}

#[test]
fn a_tokenizer_loads_from_a_model_repository() {
    let Some(gpt2) = shared("tokenizers/gpt2/tokenizer.json") else { return };
    let (d, hub) = hub();
    let dir = d.path().join("openai-community/gpt2/main");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&gpt2, dir.join("tokenizer.json")).unwrap();
    let count = |spec: &str| {
        let q = format!("SELECT sum(cardinality(tokenize(text, '{spec}'))) AS n FROM read_jsonl('hf://datasets/org/corpus/data/**/*.jsonl*')");
        sql(&q, &hub.env(None)).unwrap()[0]["n"].clone()
    };
    assert_eq!(count("hf://openai-community/gpt2/tokenizer.json"), count(&gpt2.display().to_string()));
}

#[test]
fn hub_parquet_is_read_by_ranges_from_the_parquet_branch() {
    let (d, hub) = hub();
    let env = hub.env(None);
    // Parquet written by tokq itself, then served from refs/convert/parquet as the hub does.
    let out = d.path().join("pq/");
    let copy = format!("COPY (SELECT id, text FROM read_jsonl('hf://datasets/org/corpus/data/**/*.jsonl*')) TO '{}' STORED AS PARQUET", out.display());
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    tokq_within(&["sql", "-c", &copy, "--partitions", "1", "--quiet"], &vars, 60);
    // The one part file (the manifest beside it is a Parquet file too, with no rows).
    let part = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet") && !p.file_name().unwrap().to_string_lossy().starts_with('_'))
        .unwrap();
    let branch = d.path().join("datasets/org/corpus/refs/convert/parquet/default/train");
    std::fs::create_dir_all(&branch).unwrap();
    std::fs::copy(&part, branch.join("0000.parquet")).unwrap();
    for uri in ["hf://datasets/org/corpus@~parquet/default/train/*.parquet", "hf://datasets/org/corpus@refs%2Fconvert%2Fparquet/default/train/0000.parquet"] {
        let rows = sql(&format!("SELECT count(*) AS n, max(id) AS last FROM read_parquet('{uri}')"), &env).unwrap_or_else(|e| panic!("{uri}: {e}"));
        assert_eq!((rows[0]["n"].as_i64(), rows[0]["last"].as_str()), (Some(6), Some("c3")), "{uri}");
    }
    assert!(hub.ranges.load(Ordering::Relaxed) >= 2, "a Parquet file is read by ranges (footer, then columns)");
}

#[test]
fn a_gated_dataset_needs_a_token_and_says_so() {
    let (_d, hub) = hub();
    for uri in ["hf://datasets/org/gated/train.jsonl", "hf://datasets/org/gated/*.jsonl"] {
        let err = sql(&format!("SELECT count(*) FROM read_jsonl('{uri}')"), &hub.env(None)).unwrap_err();
        assert!(err.contains("HF_TOKEN") && err.contains("org/gated"), "{uri}: {err}");
        let rows = sql(&format!("SELECT id FROM read_jsonl('{uri}')"), &hub.env(Some(TOKEN))).unwrap();
        assert_eq!(rows[0]["id"], "g1", "{uri}");
    }
    // The token file `hf auth login` writes serves as well.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), format!("{TOKEN}\n")).unwrap();
    let mut env = hub.env(None);
    env.retain(|(k, _)| *k != "HF_TOKEN_PATH");
    env.push(("HF_TOKEN_PATH", file.path().display().to_string()));
    assert_eq!(sql("SELECT id FROM read_jsonl('hf://datasets/org/gated/train.jsonl')", &env).unwrap()[0]["id"], "g1");
}

#[test]
fn plain_http_files_read_and_remote_stores_are_inputs_only() {
    let (d, hub) = hub();
    let env = hub.env(None);
    let rows = sql(&format!("SELECT id, _source FROM read_jsonl('{}/plain/files/p.jsonl.gz')", hub.url), &env).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["_source"], format!("{}/plain/files/p.jsonl.gz", hub.url));
    // What cannot be read says so in one line, naming it.
    let missing = sql("SELECT * FROM read_jsonl('hf://datasets/org/corpus/nothing/*.jsonl')", &env).unwrap_err();
    assert!(missing.contains("hf://datasets/org/corpus/nothing/*.jsonl"), "{missing}");
    let no_repo = sql("SELECT * FROM read_jsonl('hf://datasets/org')", &env).unwrap_err();
    assert!(no_repo.contains("hf://datasets/ORG/NAME/PATH"), "{no_repo}");
    // Writing there is refused before anything is written.
    let err = sql("COPY (SELECT 1 AS x) TO 'hf://datasets/org/corpus/out/' STORED AS PARQUET", &env).unwrap_err();
    assert!(err.contains("read-only"), "{err}");
    let err = sql(&format!("COPY (SELECT 1 AS x) TO '{}/plain/out/' STORED AS PARQUET", hub.url), &env).unwrap_err();
    assert!(err.contains("read-only") || err.contains("input"), "{err}");
    assert!(!d.path().join("plain/out").exists());
}

/// A cluster's executors read the hub themselves, with the endpoint and token of their own
/// environment (the client lists and plans with its own).
#[cfg(feature = "slow-tests")]
#[test]
fn hub_inputs_on_a_cluster_give_the_local_rows() {
    let (d, hub) = hub();
    let env = hub.env(Some(TOKEN));
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cluster = crate::cluster::start_with(2, crate::cluster::Setup { env: &vars, ..Default::default() });
    let sql = |out: &Path| {
        let read = |uri: &str| format!("SELECT id, text, _source, _row FROM read_jsonl('{uri}')");
        format!(
            "COPY ({}) TO '{}/corpus/' STORED AS PARQUET; COPY ({}) TO '{}/gated/' STORED AS PARQUET",
            read("hf://datasets/org/corpus/data/**/*.jsonl*"),
            out.display(),
            read("hf://datasets/org/gated/*.jsonl"),
            out.display()
        )
    };
    let (local, remote) = (d.path().join("local"), d.path().join("remote"));
    tokq_within(&["run", "-c", &sql(&local), "--quiet", "--partitions", "2"], &vars, 60);
    tokq_within(&["run", "--cluster", &cluster.url(), "-c", &sql(&remote), "--quiet", "--partitions", "2"], &vars, 120);
    for table in ["corpus", "gated"] {
        let ids = |root: &Path| {
            let mut ids = strings(&read_output(&root.join(table)).batch, "id");
            ids.sort();
            ids
        };
        assert_eq!(ids(&local), ids(&remote), "{table}");
        assert!(!ids(&remote).is_empty(), "{table}");
    }
}
