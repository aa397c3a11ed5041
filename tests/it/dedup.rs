//! Dedup: `queries/dedup.sql` on planted duplicates, and `CREATE COMPONENTS` against union-find.

use std::collections::BTreeMap;
use std::path::Path;

use datafusion::arrow::array::{Array, Float64Array, Int64Array};

use crate::util::*;

/// A deterministic stream of letter-only words (digits would all simplify to "0").
struct Words(u64);

impl Words {
    fn word(&mut self) -> String {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut n = (self.0 >> 33) % 20_000;
        let mut w = String::new();
        loop {
            w.push((b'a' + (n % 26) as u8) as char);
            n /= 26;
            if n == 0 {
                return w;
            }
        }
    }

    fn text(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|_| self.word()).collect()
    }
}

pub fn jsonl(docs: &[(String, String)]) -> String {
    docs.iter().map(|(id, text)| serde_json::json!({"id": id, "text": text}).to_string() + "\n").collect()
}

/// 40 distinct documents of 120 words; for the first 10 an exact copy, for the next 10 a copy
/// with two words replaced (Jaccard about 0.85), and two copies of a 3-word document.
pub fn planted() -> (Vec<(String, String)>, BTreeMap<String, (&'static str, String)>) {
    let mut g = Words(7);
    let base: Vec<Vec<String>> = (0..40).map(|_| g.text(120)).collect();
    let mut docs: Vec<(String, String)> = base.iter().enumerate().map(|(i, w)| (format!("base-{i}"), w.join(" "))).collect();
    let mut expect = BTreeMap::new();
    for i in 0..10 {
        docs.push((format!("exact-{i}"), docs[i].1.clone()));
        expect.insert(format!("exact-{i}"), ("exact_duplicate", format!("base-{i}")));
    }
    for i in 10..20 {
        let mut w = base[i].clone();
        w[30] = "zzzzq".into();
        w[90] = "qqqqz".into();
        docs.push((format!("near-{i}"), w.join(" ")));
        expect.insert(format!("near-{i}"), ("minhash_duplicate", format!("base-{i}")));
    }
    docs.push(("short-a".into(), "tiny three words".into()));
    docs.push(("short-b".into(), "tiny three words".into()));
    expect.insert("short-b".into(), ("exact_duplicate", "short-a".into()));
    (docs, expect)
}

/// `tokq run queries/dedup.sql` on `input`, writing under `dir`: the arguments before any extra.
pub fn dedup_args(dir: &Path, input: &Path) -> Vec<String> {
    let d = |n: &str| format!("{}/{n}/", dir.display());
    let sets = [format!("input={}", input.display()), format!("work={}", d("work")), format!("output={}", d("out")), format!("rejects={}", d("rejects"))];
    let mut args: Vec<String> = ["run", "queries/dedup.sql", "--quiet"].map(String::from).into();
    sets.into_iter().for_each(|s| args.extend(["--set".to_string(), s]));
    args
}

pub fn run_dedup(dir: &Path, input: &Path, extra: &[&str]) -> String {
    let args = dedup_args(dir, input);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(extra);
    tokq_ok(&args)
}

/// doc_id -> (reason, representative) of the rejected rows.
pub fn rejected(dir: &Path) -> BTreeMap<String, (String, String)> {
    let r = read_output(&dir.join("rejects")).batch;
    let (ids, reasons, reps) = (strings(&r, "doc_id"), strings(&r, "filter_reason"), strings(&r, "representative_doc_id"));
    ids.into_iter().zip(reasons).zip(reps).map(|((i, r), p)| (i.unwrap(), (r.unwrap(), p.unwrap()))).collect()
}

#[test]
fn dedup_recipe_removes_planted_duplicates_with_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let (docs, expect) = planted();
    let input = write(tmp.path(), "docs.jsonl", jsonl(&docs));
    let stats = tmp.path().join("stats.json");
    run_dedup(tmp.path(), &input, &["--stats-json", stats.to_str().unwrap()]);
    let got = rejected(tmp.path());
    let want: BTreeMap<_, _> = expect.iter().map(|(k, (r, p))| (k.clone(), (r.to_string(), p.clone()))).collect();
    assert_eq!(got, want);
    // The stats have the clusters by size: 11 exact pairs and 10 near pairs, each counted once.
    let stats: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let last = stats["accounting"].as_array().unwrap().last().unwrap();
    assert_eq!(last["duplicate_clusters"], serde_json::json!({"2": 21}), "{last}");
    let kept = read_output(&tmp.path().join("out")).batch;
    assert_eq!(kept.num_rows() + got.len(), docs.len(), "every input row is kept or rejected");
    assert!(kept.column_by_name("filter_reason").is_none());
    // Kept representatives carry their cluster's size; documents without duplicates carry none.
    let sizes = kept.column_by_name("cluster_size").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
    let ids = strings(&kept, "doc_id");
    for (i, id) in ids.iter().enumerate() {
        let id = id.as_deref().unwrap();
        let n: usize = id.strip_prefix("base-").and_then(|n| n.parse().ok()).unwrap_or(99);
        assert_eq!(sizes.is_valid(i), n < 20 || id == "short-a", "{id}");
    }
    // The work directory keeps the clusters, not the rounds.
    let comps: Vec<_> = std::fs::read_dir(tmp.path().join("work/components")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(comps, vec![std::ffi::OsString::from("components")]);
}

#[test]
fn verification_drops_links_below_the_jaccard_bar() {
    let tmp = tempfile::tempdir().unwrap();
    let (docs, _) = planted();
    let input = write(tmp.path(), "docs.jsonl", jsonl(&docs));
    run_dedup(tmp.path(), &input, &["--set", "verify=0.99"]);
    let got = rejected(tmp.path());
    assert_eq!(got.values().filter(|(r, _)| r == "minhash_duplicate").count(), 0, "{got:?}");
    assert_eq!(got.len(), 11, "exact duplicates stay removed: {got:?}");
    run_dedup(tmp.path(), &input, &["--set", "verify=0.8"]);
    assert_eq!(rejected(tmp.path()).len(), 21);
}

/// Union-find: node -> smallest node of its component.
fn union_find(edges: &[(i64, i64)]) -> BTreeMap<i64, i64> {
    let mut parent: BTreeMap<i64, i64> = BTreeMap::new();
    fn find(p: &mut BTreeMap<i64, i64>, x: i64) -> i64 {
        let up = *p.entry(x).or_insert(x);
        if up == x {
            return x;
        }
        let r = find(p, up);
        p.insert(x, r);
        r
    }
    for &(a, b) in edges {
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        parent.insert(hi, lo);
    }
    let nodes: Vec<i64> = parent.keys().copied().collect();
    nodes.into_iter().map(|n| (n, find(&mut parent, n))).collect()
}

fn components_of(dir: &Path, edges: &[(i64, i64)]) -> (BTreeMap<i64, i64>, String) {
    let csv: String = std::iter::once("a,b\n".to_string()).chain(edges.iter().map(|(a, b)| format!("{a},{b}\n"))).collect();
    let input = write(dir, "edges.csv", csv);
    let recipe = format!(
        "CREATE VIEW edges AS SELECT a, b FROM read_csv('{}');\n\
         CREATE COMPONENTS cc FROM edges (a, b) LOCATION '{d}/cc/';\n\
         COPY (SELECT node, component FROM cc) TO '{d}/out/' STORED AS PARQUET;",
        input.display(),
        d = dir.display()
    );
    let r = write(dir, "cc.sql", recipe);
    let stats = dir.join("stats.json");
    tokq_ok(&["run", r.to_str().unwrap(), "--quiet", "--stats-json", stats.to_str().unwrap()]);
    let b = read_output(&dir.join("out")).batch;
    let col = |n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec();
    (col("node").into_iter().zip(col("component")).collect(), std::fs::read_to_string(stats).unwrap())
}

#[test]
fn components_equal_union_find_on_long_chains_and_random_graphs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut edges = Vec::new();
    // A path of 300 nodes in shuffled label order: the worst case for label propagation.
    let path: Vec<i64> = (0..300).map(|i| (i * 7919) % 300 + 1000).collect();
    edges.extend(path.windows(2).map(|w| (w[0], w[1])));
    // Random sparse edges among 2,000 other nodes, both directions and repeats included.
    let mut x = 12345u64;
    for _ in 0..1500 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        let (a, b) = (((x >> 20) % 2000) as i64 + 5000, ((x >> 40) % 2000) as i64 + 5000);
        edges.push((a, b));
    }
    edges.push((42, 42));
    let (got, stats) = components_of(tmp.path(), &edges);
    let want = union_find(&edges.iter().copied().filter(|(a, b)| a != b).collect::<Vec<_>>());
    assert_eq!(got, want);
    assert!(got.values().filter(|&&c| c == 1000).count() == 300, "the path is one component rooted at its smallest node");
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert!(stats["components"][0]["rounds"].as_u64().unwrap() >= 2, "{stats}");
}

#[test]
fn components_of_no_edges_is_an_empty_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (got, stats) = components_of(tmp.path(), &[(3, 3)]);
    assert!(got.is_empty());
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    let c = &stats["components"][0];
    assert_eq!((c["input_edges"].as_u64(), c["rounds"].as_u64(), c["components"].as_u64()), (Some(0), Some(0), Some(0)), "{stats}");
}

#[test]
fn malformed_components_statement_is_one_line() {
    let ws = Workspace::new();
    let err = ws.fails(&ws.recipe("bad.sql", "CREATE COMPONENTS cc FROM edges LOCATION 'x/';"), &[]);
    assert!(err.contains("CREATE COMPONENTS name FROM relation (column_a, column_b) LOCATION"), "{err}");
}

#[test]
fn shingle_jaccard_and_text_hash_in_sql() {
    let ws = Workspace::new();
    ws.run_sql(
            "COPY (SELECT shingle_jaccard('one two three four five six seven', 'one two three four five six eight') AS j, \
             text_hash('a') = text_hash('a') AS same, text_hash('a') = text_hash('b') AS differ, \
             cardinality(minhash('one two three four five')) AS perms, cardinality(minhash_bands(minhash('one two three four five'))) AS bands, \
             minhash('four words only here') IS NULL AS short, cardinality(minhash('a b c', 16, 2, 3)) AS custom, '' AS doc_id) \
             TO '{ws}/o/' STORED AS PARQUET;",
    );
    let b = ws.output("o").batch;
    let j = b.column_by_name("j").unwrap().as_any().downcast_ref::<Float64Array>().unwrap().value(0);
    assert_eq!(j, 0.5);
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&[b]).unwrap().to_string();
    assert!(text.contains("| true | false  | 112   | 14    | true  | 16     |"), "{text}");
}
