//! Below the document: `queries/sentence-dedup.sql` and `queries/decontaminate.sql` on planted
//! repeats and evaluation items (their parity with datatrove is tests/parity/).

use std::collections::{BTreeMap, HashSet};

use tokq_core::dedup::ngrams::NgramRule;
use tokq_core::dedup::spans::SpanDedup;

use crate::dedup::jsonl;
use crate::util::*;

/// A sentence of 16 words, eight of them made from two numbers.
fn sentence(doc: usize, k: usize) -> String {
    let w = |n: usize| -> String { (0..3).map(|i| (b'a' + ((n / 26usize.pow(i)) % 26) as u8) as char).collect() };
    format!("The {} of {} met {} near {} when {} saw {} and {} with {}.", w(doc * 7 + k), w(doc + 3 * k), w(k * 11), w(doc * 13), w(doc + k + 1), w(doc * 17 + 5), w(k + 40), w(doc + 2 * k + 9))
}

/// 20 documents of 12 sentences; 10 more that start with three sentences of one of the first 10
/// and go on with 12 of their own; one that is four sentences of document 0 and nothing else.
pub fn planted() -> Vec<(String, String)> {
    let own = |d: usize| (0..12).map(|k| sentence(d, k)).collect::<Vec<_>>();
    let mut docs: Vec<(String, String)> = (0..20).map(|d| (format!("doc-{d}"), own(d).join(" "))).collect();
    for d in 20..30 {
        let copied = own(d - 20)[3..6].join(" ");
        docs.push((format!("doc-{d}"), format!("{copied} {}", own(d).join(" "))));
    }
    docs.push(("copy-of-0".into(), own(0)[..4].join(" ")));
    docs
}

pub fn texts(ws: &Workspace, rel: &str) -> BTreeMap<String, String> {
    let b = ws.output(rel).batch;
    strings(&b, "doc_id").into_iter().zip(strings(&b, "text")).map(|(i, t)| (i.unwrap(), t.unwrap())).collect()
}

fn reasons(ws: &Workspace, rel: &str) -> BTreeMap<String, String> {
    let b = ws.output(rel).batch;
    strings(&b, "doc_id").into_iter().zip(strings(&b, "filter_reason")).map(|(i, r)| (i.unwrap(), r.unwrap())).collect()
}

/// `tokq run queries/RECIPE --quiet` on the workspace's `docs.jsonl`, with output, rejects and
/// work under `to/`, and `sets` (`name=value`) and `extra` arguments after them.
pub fn run_recipe(ws: &Workspace, recipe: &str, to: &str, sets: &[&str], extra: &[&str]) -> Run {
    let mut all = vec![format!("input={}", ws.at("docs.jsonl"))];
    for (name, dir) in [("output", "out"), ("rejects", "rejects"), ("work", "work")] {
        all.push(format!("{name}={}", ws.at(&format!("{to}/{dir}/"))));
    }
    all.extend(sets.iter().map(|s| s.to_string()));
    let mut args = vec!["--quiet"];
    all.iter().for_each(|s| args.extend(["--set", s.as_str()]));
    args.extend(extra);
    ws.run(&format!("queries/{recipe}"), &args)
}

pub fn sentence_dedup(ws: &Workspace, to: &str, extra: &[&str]) -> Run {
    run_recipe(ws, "sentence-dedup.sql", to, &[], extra)
}

#[test]
fn sentence_dedup_removes_repeated_spans_after_their_first_occurrence() {
    let ws = Workspace::new();
    let docs = planted();
    ws.file("docs.jsonl", jsonl(&docs));
    let run = sentence_dedup(&ws, "one", &["--partitions", "1"]);
    let kept = texts(&ws, "one/out");
    // The first occurrence stays whole; a later one loses the span and the space before it.
    assert_eq!(kept["doc-3"], docs[3].1);
    let own: Vec<String> = (0..12).map(|k| sentence(23, k)).collect();
    assert_eq!(kept["doc-23"], own.join(" "));
    // Four sentences of doc-0 hold two spans seen before: what is left is too short.
    assert_eq!(reasons(&ws, "one/rejects"), BTreeMap::from([("copy-of-0".to_string(), "sentence_dedup:empty".to_string())]));
    let a = run.accounting("one/out");
    assert_eq!((a["input_rows"].as_u64(), a["kept"].as_u64(), a["rejected"].as_u64()), (Some(31), Some(30), Some(1)), "{a}");
    // Two partitions: the same rows, because the first occurrence is decided by lineage.
    sentence_dedup(&ws, "two", &["--partitions", "2"]);
    assert_eq!(texts(&ws, "two/out"), kept);
    // Thresholds: a changed document must keep 300 words now, and lines are spans of their own.
    sentence_dedup(&ws, "strict", &["--set", "min_doc_words=300"]);
    assert_eq!(reasons(&ws, "strict/rejects").get("doc-23").map(String::as_str), Some("sentence_dedup:few_words"));
    sentence_dedup(&ws, "lines", &["--set", "unit=line", "--set", "n_sentences=1"]);
    // Each document is one line, and no line repeats: every document stays as it is.
    assert_eq!(texts(&ws, "lines/out").len(), 31);
}

#[test]
fn the_bloom_filter_mode_gives_the_exact_modes_rows_at_any_false_positive_rate() {
    let ws = Workspace::new();
    let docs = planted();
    ws.file("docs.jsonl", jsonl(&docs));
    sentence_dedup(&ws, "exact", &["--partitions", "2"]);
    let exact = (texts(&ws, "exact/out"), reasons(&ws, "exact/rejects"));
    // 0.5 lets half the single spans through to the exact count: the rows must not change.
    for (to, fpr, partitions) in [("tight", "0.01", "1"), ("loose", "0.5", "2")] {
        let run = sentence_dedup(&ws, to, &["--partitions", partitions, "--set", "bloom=true", "--set", &format!("bloom_fpr={fpr}")]);
        assert_eq!((texts(&ws, &format!("{to}/out")), reasons(&ws, &format!("{to}/rejects"))), exact, "bloom_fpr={fpr}");
        let a = run.accounting(&format!("{to}/out"));
        assert_eq!((a["input_rows"].as_u64(), a["kept"].as_u64(), a["rejected"].as_u64()), (Some(31), Some(30), Some(1)), "{a}");
    }
    // Every copy removed (keep_first=false) and min_count above the counters' 255: still exact.
    let lines = |to: &str, sets: &[&str]| {
        run_recipe(&ws, "paragraph-dedup.sql", to, sets, &[]);
        texts(&ws, &format!("{to}/out"))
    };
    for sets in [&["keep_first=false"][..], &["min_count=300"][..]] {
        let bloom: Vec<&str> = sets.iter().copied().chain(["bloom=true", "bloom_fpr=0.3"]).collect();
        assert_eq!(lines(&format!("b-{}", sets[0]), &bloom), lines(&format!("e-{}", sets[0]), sets), "{sets:?}");
    }
    // A rate outside (0, 1) stops the run when the filter's statement is planned, naming the function.
    let e = ws.fails("queries/sentence-dedup.sql", &["--set", &format!("input={}", ws.at("docs.jsonl")), "--set", "bloom=true", "--set", "bloom_fpr=1.5", "--set", &format!("work={}", ws.at("bad/"))]);
    assert!(e.contains("bloom_counts: the false-positive rate must be above 0 and below 1, got 1.5"), "{e}");
}

pub fn decontaminate(ws: &Workspace, to: &str, extra: &[&str]) -> Run {
    run_recipe(ws, "decontaminate.sql", to, &[&format!("eval={}", ws.at("eval.jsonl"))], extra)
}

fn eval_line(task: &str, query: Option<&str>, text: &str) -> String {
    serde_json::json!({"id": format!("{task}-x"), "task": task, "query": query, "text": text}).to_string() + "\n"
}

/// `eval.jsonl`: doc-5's sentence 2 (16 words) as an answer; sentence 7 of doc-8 as a query whose
/// answer is sentence 8's first three words, so that only n-grams across the two match; an answer
/// that is nowhere.
pub fn planted_eval(ws: &Workspace) {
    let s8 = sentence(8, 8);
    let first3: String = s8.split(' ').take(3).collect::<Vec<_>>().join(" ");
    let answer = sentence(5, 2);
    let eval = [
        eval_line("qa", Some("Who met whom?"), &answer),
        eval_line("cloze", Some(&sentence(8, 7)), &first3),
        eval_line("qa", None, "Nothing in the training set looks like this answer of twelve words or more at all."),
    ];
    ws.file("eval.jsonl", eval.concat());
}

#[test]
fn decontamination_removes_documents_that_hold_an_eval_answer() {
    let ws = Workspace::new();
    ws.file("docs.jsonl", jsonl(&planted()));
    planted_eval(&ws);
    let run = decontaminate(&ws, "dc", &[]);
    let got = reasons(&ws, "dc/rejects");
    assert_eq!(got.get("doc-5").map(String::as_str), Some("contaminated:qa"), "{got:?}");
    assert_eq!(got.get("doc-8").map(String::as_str), Some("contaminated:cloze"), "{got:?}");
    assert_eq!(got.len(), 2, "{got:?}");
    let b = ws.output("dc/rejects").batch;
    let ngram = strings(&b, "contaminated_ngram");
    assert!(ngram.iter().all(|g| g.as_deref().is_some_and(|g| g.split(' ').count() == 12)), "{ngram:?}");
    let a = run.accounting("dc/out");
    assert_eq!((a["input_rows"].as_u64(), a["kept"].as_u64(), a["rejected"].as_u64()), (Some(31), Some(29), Some(2)), "{a}");
}

#[test]
fn a_bad_eval_table_fails_in_one_line_that_names_it() {
    let ws = Workspace::new();
    ws.file("docs.jsonl", jsonl(&planted()[..3]));
    ws.file("empty.jsonl", "");
    ws.file("no-text.jsonl", "{\"id\": \"a\", \"task\": \"t\", \"query\": \"q\", \"answer\": \"x\"}\n");
    ws.file("no-query.jsonl", "{\"id\": \"a\", \"task\": \"t\", \"text\": \"x\"}\n");
    ws.file("eval.txt", "x\n");
    let fails = |eval: &str| {
        let (i, o, r, w) = (ws.at("docs.jsonl"), ws.at("o/"), ws.at("r/"), ws.at("w/"));
        let sets = [format!("input={i}"), format!("eval={}", ws.at(eval)), format!("output={o}"), format!("rejects={r}"), format!("work={w}")];
        let mut args: Vec<&str> = Vec::new();
        sets.iter().for_each(|s| args.extend(["--set", s]));
        ws.fails("queries/decontaminate.sql", &args)
    };
    let e = fails("empty.jsonl");
    assert!(e.contains("empty.jsonl' is empty"), "{e}");
    let none = ws.at("none/e.parquet");
    tokq_ok(&["sql", "-c", &format!("COPY (SELECT 'a' AS text, 'q' AS query, 't' AS task WHERE 1 = 0) TO '{none}' STORED AS PARQUET")]);
    let e = fails("none/e.parquet");
    assert!(e.contains("e.parquet has no rows: decontaminating against it would remove nothing"), "{e}");
    let e = fails("no-text.jsonl");
    assert!(e.contains("No field named text"), "{e}");
    let e = fails("no-query.jsonl");
    assert!(e.contains("No field named query"), "{e}");
    let e = fails("eval.txt");
    assert!(e.contains("cannot tell the format"), "{e}");
}

/// What queries/ngram-dedup.sql must give, decided one document at a time in lineage order: a
/// paragraph's n-gram is seen when an earlier paragraph held it. Kept texts and rejected ids.
fn ngram_dedup_in_order(docs: &[(String, String)], n: i64, rule: NgramRule) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let dedup = SpanDedup::new("test", n, "ngram").unwrap().with_ngram_rule(rule);
    let (mut earlier, mut kept, mut rejected) = (HashSet::new(), BTreeMap::new(), BTreeMap::new());
    for (id, text) in docs {
        let mut seen = Vec::new();
        // A paragraph's n-grams join the set after it: within a paragraph nothing is seen.
        for paragraph in dedup.hashes(text).chunk_by(|a, b| a.1 == b.1) {
            seen.extend(paragraph.iter().filter(|(h, _)| earlier.contains(h)).map(|&(_, p)| p));
            earlier.extend(paragraph.iter().map(|&(h, _)| h));
        }
        match dedup.remove(text, &seen) {
            t if t.is_empty() => rejected.insert(id.clone(), "ngram_dedup:empty".to_string()),
            t => kept.insert(id.clone(), t.into_owned()),
        };
    }
    (kept, rejected)
}

/// Paragraphs of three planted sentences (51 words each) in five documents: a source, an exact
/// copy, a copy of its first paragraph with the last word changed beside a new one, a copy with
/// only short lines of its own, a document quoting half of a paragraph, one with a word changed
/// inside and at the end, and a paragraph that repeats one sentence eight times.
pub fn planted_paragraphs() -> Vec<(String, String)> {
    let para = |d: usize| (0..3).map(|k| sentence(d, k)).collect::<Vec<_>>().join(" ");
    let source = format!("{}\n{}\n{}", para(0), para(1), para(2));
    let changed = para(0).replacen("with", "beside", 1).trim_end_matches('.').to_string() + " too.";
    let half: String = para(1).split(' ').take(25).collect::<Vec<_>>().join(" ");
    [
        ("source", source.clone()),
        ("copy", source.clone()),
        ("near", format!("{}\n{}", para(0).rsplit_once(' ').unwrap().0.to_string() + " end.", para(3))),
        ("short-lines", format!("{}\nOK then.\nBye.", para(2))),
        ("half", format!("{half} and then {}", para(4))),
        ("changed", changed),
        ("echo", vec![sentence(9, 0); 8].join(" ")),
    ]
    .into_iter()
    .map(|(i, t)| (i.to_string(), t))
    .collect()
}

#[test]
fn ngram_dedup_removes_paragraphs_seen_before_the_same_on_any_partitions() {
    let ws = Workspace::new();
    let mut docs = planted_paragraphs();
    // Reuters' wire stories repeat whole and in part; its lines are paragraphs of 5-12 words.
    if let Some(reuters) = shared_texts("corpora/reuters-21578/reuters21578.jsonl.gz", 3000) {
        docs.extend(reuters.into_iter().enumerate().map(|(i, t)| (format!("reuters-{i}"), t)));
    }
    ws.file("docs.jsonl", jsonl(&docs));
    let run = |to: &str, sets: &[&str], partitions: &str| {
        let run = run_recipe(&ws, "ngram-dedup.sql", to, sets, &["--partitions", partitions]);
        let a = run.accounting(&format!("{to}/out"));
        assert_eq!(a["input_rows"].as_u64(), Some(docs.len() as u64), "{a}");
        (texts(&ws, &format!("{to}/out")), reasons(&ws, &format!("{to}/rejects")))
    };
    // DCLM's settings: 13-grams, threshold 0.8, whole documents too.
    let dclm = run("dclm", &[], "1");
    assert_eq!(dclm, ngram_dedup_in_order(&docs, 13, NgramRule::new("t", 13, 13, 0.8, true).unwrap()));
    let (kept, rejected) = &dclm;
    assert_eq!(rejected.get("copy").map(String::as_str), Some("ngram_dedup:empty"));
    // The last word changed leaves 37 of 39 n-grams seen: the paragraph goes with its \n.
    assert_eq!(kept["near"], format!("\n{}", (0..3).map(|k| sentence(3, k)).collect::<Vec<_>>().join(" ")));
    // Short lines have no 13-gram and would stay, but all of the document's n-grams were seen.
    assert_eq!(rejected.get("short-lines").map(String::as_str), Some("ngram_dedup:empty"));
    // 14 of 67 n-grams seen is far below 0.8: the paragraph stays whole.
    assert_eq!(kept["half"], docs[4].1);
    // 107 of its 124 n-grams repeat within the paragraph, which is no repeat at all.
    assert_eq!(kept["echo"], docs[6].1);
    // Two partitions and the Bloom filter's bounded count: the same rows. So with the corpus in
    // two files, whose names order them as the one file held them.
    assert_eq!(run("two", &[], "2"), dclm);
    let (a, b) = docs.split_at(docs.len() / 2);
    ws.file("split/a.jsonl", jsonl(a));
    ws.file("split/b.jsonl", jsonl(b));
    assert_eq!(run("files", &[&format!("input={}", ws.at("split/*.jsonl"))], "2"), dclm);
    assert_eq!(run("bloom", &["bloom=true", "bloom_fpr=0.3"], "2"), dclm);
    // bff's own defaults: paragraphs of 5 words or more count, documents are not removed whole.
    let bff = run("bff", &["min_ngram_size=5", "remove_documents=false"], "2");
    assert_eq!(bff, ngram_dedup_in_order(&docs, 13, NgramRule::new("t", 13, 5, 0.8, false).unwrap()));
    assert_eq!(bff.0["short-lines"], "\nOK then.\nBye.");
}

#[test]
fn substring_dedup_strikes_every_copy_of_a_repeated_run_of_tokens() {
    let ws = Workspace::new();
    let docs = planted();
    ws.file("docs.jsonl", jsonl(&docs));
    let own = |d: usize| (0..12).map(|k| sentence(d, k)).collect::<Vec<_>>();
    let run = run_recipe(&ws, "substring-dedup.sql", "one", &["n_tokens=30"], &["--partitions", "1"]);
    let kept = texts(&ws, "one/out");
    // doc-23 starts with three sentences of doc-3: both lose them (and the " The" that follows
    // them in both), every other sentence stays.
    let copied = own(3)[3..6].join(" ");
    for d in ["doc-3", "doc-23"] {
        assert!(!kept[d].contains(&copied) && !kept[d].contains(&own(3)[4]), "{d}: {}", kept[d]);
    }
    assert!(kept["doc-23"].ends_with(&own(23)[1..].join(" ")), "{}", kept["doc-23"]);
    assert!(kept["doc-3"].starts_with(&own(3)[..3].join(" ")) && kept["doc-3"].ends_with(&own(3)[7..].join(" ")), "{}", kept["doc-3"]);
    assert_eq!(kept["doc-15"], docs[15].1);
    // Four sentences of doc-0, every one of them in doc-0: nothing is left.
    assert_eq!(reasons(&ws, "one/rejects"), BTreeMap::from([("copy-of-0".to_string(), "substring_dedup:empty".to_string())]));
    let a = run.accounting("one/out");
    assert_eq!((a["input_rows"].as_u64(), a["kept"].as_u64(), a["rejected"].as_u64()), (Some(31), Some(30), Some(1)), "{a}");
    // Two partitions and the Bloom-filter mode: the same rows.
    run_recipe(&ws, "substring-dedup.sql", "two", &["n_tokens=30", "bloom=true", "bloom_fpr=0.3"], &["--partitions", "2"]);
    assert_eq!(texts(&ws, "two/out"), kept);
    // keep_first: the first occurrence stays whole, and copy-of-0 has nothing of its own left.
    run_recipe(&ws, "substring-dedup.sql", "first", &["n_tokens=30", "keep_first=true"], &["--partitions", "2"]);
    let first = texts(&ws, "first/out");
    assert_eq!((first["doc-3"].as_str(), first["doc-0"].as_str()), (docs[3].1.as_str(), docs[0].1.as_str()));
    assert!(!first["doc-23"].contains(&copied), "{}", first["doc-23"]);
    // A tokenizer whose tokens need not spell the text is refused before anything runs.
    let e = ws.fails(
        "queries/substring-dedup.sql",
        &["--set", &format!("input={}", ws.at("docs.jsonl")), "--set", "tokenizer=reference:tiktoken:cl100k_base", "--set", &format!("work={}", ws.at("bad/"))],
    );
    assert!(e.contains("span_hashes") && e.contains("spell the text byte for byte"), "{e}");
    assert!(!ws.path().join("bad").exists());
}

#[test]
fn paragraph_dedup_counts_copies_and_can_strip_every_one() {
    let ws = Workspace::new();
    let doc = |i: usize, extra: &str| (format!("p-{i}"), format!("Home | About | Contact\nParagraph {} of its own, {} words.\n{extra}", sentence(i, 0), i));
    let docs: Vec<(String, String)> = (0..5).map(|i| doc(i, if i < 2 { "We use cookies." } else { "" })).collect();
    ws.file("docs.jsonl", jsonl(&docs));
    let run = |to: &str, sets: &[&str]| {
        run_recipe(&ws, "paragraph-dedup.sql", to, sets, &[]);
        texts(&ws, &format!("{to}/out"))
    };
    // Any repeat, first kept: the menu and the cookie line stay in p-0 only.
    let first = run("first", &[]);
    assert!(first["p-0"].starts_with("Home | About") && first["p-0"].ends_with("We use cookies."), "{first:?}");
    assert!(!first["p-1"].contains("Home") && !first["p-1"].contains("cookies"), "{first:?}");
    // Three copies or more, every copy removed: the menu goes everywhere, the cookie line stays.
    let strip = run("strip", &["min_count=3", "keep_first=false"]);
    assert!(strip.values().all(|t| !t.contains("Home")), "{strip:?}");
    assert!(strip["p-0"].contains("cookies") && strip["p-1"].contains("cookies"), "{strip:?}");
    assert_eq!(strip.len(), 5);
}

#[test]
fn rehydration_weights_each_kept_document_by_its_cluster_size() {
    use crate::dedup::planted as duplicates;
    let ws = Workspace::new();
    let (docs, _) = duplicates();
    ws.file("docs.jsonl", jsonl(&docs));
    ws.file("weights.csv", "min_cluster_size,weight\n1,1\n2,4\n3,0\n");
    let weights = format!("weights={}", ws.at("weights.csv"));
    run_recipe(&ws, "rehydrate.sql", "rh", &[&weights], &[]);
    let b = ws.output("rh/out").batch;
    let ids = strings(&b, "doc_id");
    let w = b.column_by_name("upsampling_weight").unwrap().as_any().downcast_ref::<datafusion::arrow::array::Int64Array>().unwrap();
    let got: BTreeMap<String, i64> = ids.into_iter().zip(w.iter()).map(|(i, w)| (i.unwrap(), w.unwrap())).collect();
    // 20 clusters of two (exact and near copies of base-0..19) and the two short copies keep one
    // document each, weighted 4; the 20 other bases have no duplicate, weight 1.
    assert_eq!(got.len(), 41);
    assert_eq!(got.values().filter(|&&w| w == 4).count(), 21, "{got:?}");
    assert_eq!(got["base-3"], 4);
    assert_eq!(got["base-30"], 1);
    assert_eq!(ws.output("rh/rejects").batch.num_rows(), 21, "dedup's duplicates");
    // Repeating each document by its weight, as a packing recipe does.
    let out = tokq_ok(&["sql", "-c", &format!("SELECT count(*) AS n FROM (SELECT unnest(range(upsampling_weight)) FROM read_parquet('{}'))", ws.at("rh/out/"))]);
    assert!(out.contains(&format!("| {} ", 21 * 4 + 20)), "{out}");
    // A table without size 1 is refused in one line.
    ws.file("bad.csv", "min_cluster_size,weight\n2,4\n");
    let (i, o, r, wk, bad) = (ws.at("docs.jsonl"), ws.at("bad/out/"), ws.at("bad/rejects/"), ws.at("bad/work/"), ws.at("bad.csv"));
    let sets = [format!("input={i}"), format!("output={o}"), format!("rejects={r}"), format!("work={wk}"), format!("weights={bad}")];
    let args: Vec<&str> = sets.iter().flat_map(|s| ["--set", s.as_str()]).collect();
    let e = ws.fails("queries/rehydrate.sql", &args);
    assert!(e.contains("must start at min_cluster_size 1"), "{e}");
}
