use std::path::Path;

use crate::util::*;

/// A recipe that tokenizes `input` into `o/`.
fn recipe(ws: &Workspace, input: &str, tokenizer: &str) -> String {
    ws.recipe(
        "r.sql",
        &format!(
            "COPY (SELECT id AS doc_id, _source, _row, tokenize(text, '{tokenizer}') AS input_ids FROM read_jsonl('{input}')) \
             TO '{{ws}}/o/' STORED AS PARQUET"
        ),
    )
}

const GOOD: &str = "{\"id\":\"a\",\"text\":\"one\"}\n";

#[test]
fn malformed_json_fails_with_file_and_line() {
    let ws = Workspace::new();
    let f = ws.file("bad.jsonl", format!("{GOOD}{GOOD}{{\"id\":\"c\",\"text\": nope}}\n{GOOD}"));
    let err = ws.fails(&recipe(&ws, f.to_str().unwrap(), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains(&format!("{}:3: ", f.display())), "{err}");
    assert!(err.contains("statement 1"), "{err}");
}

#[test]
fn skip_counts_bad_rows_in_summary_and_stats() {
    let ws = Workspace::new();
    let f = ws.file("bad.jsonl", format!("{GOOD}not json\n{GOOD}[1,2]\n"));
    let stats = ws.at("s.json");
    let out = tokq(&["run", &recipe(&ws, f.to_str().unwrap(), "tiktoken:cl100k_base"), "--on-bad-row", "skip", "--stats-json", &stats]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 bad rows skipped"));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["bad_rows_skipped"], 2);
    assert_eq!(s["outputs"][0]["rows"], 2);
    let src = s["sources"].as_object().unwrap().values().next().unwrap().clone();
    assert_eq!((src["rows"].as_u64(), src["bad_rows"].as_u64()), (Some(2), Some(2)));
}

#[test]
fn invalid_utf8_is_one_clear_line() {
    let ws = Workspace::new();
    // Found while decoding, after a valid line...
    let f = ws.file("u.jsonl", [GOOD.as_bytes(), b"{\"id\":\"b\",\"text\":\"\xc3\x28\"}\n"].concat());
    let err = ws.fails(&recipe(&ws, f.to_str().unwrap(), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains("u.jsonl:2: invalid UTF-8 at byte 18"), "{err}");
    // ...and while inferring the schema, when no line is valid.
    let f = ws.file("v.jsonl", b"{\"id\":\"a\",\"text\":\"\xc3\x28\"}\n".to_vec());
    let err = ws.fails(&recipe(&ws, f.to_str().unwrap(), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains("v.jsonl:1: invalid UTF-8 at byte"), "{err}");
}

#[test]
fn missing_tokenizer_file_is_one_clear_line() {
    let ws = Workspace::new();
    let f = ws.file("ok.jsonl", GOOD);
    let err = ws.fails(&recipe(&ws, f.to_str().unwrap(), "/nonexistent/tokenizer.json"), &[]);
    assert!(err.contains("tokenizer '/nonexistent/tokenizer.json'"), "{err}");
}

#[test]
fn unknown_function_names_the_statement() {
    let ws = Workspace::new();
    let err = ws.fails(&ws.recipe("r.sql", "SELECT 1;\n\nSELECT nope_fn(1)\n  AS x;"), &[]);
    assert!(err.contains("statement 2 `SELECT nope_fn(1) AS x`"), "{err}");
    assert!(err.contains("r.sql:3:"), "{err}");
    assert!(err.contains("nope_fn"), "{err}");
}

#[test]
fn empty_input_is_one_clear_line() {
    let ws = Workspace::new();
    let err = ws.fails(&recipe(&ws, &ws.at("*.jsonl"), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains("no input files match"), "{err}");
    ws.file("empty.jsonl", "");
    let err = ws.fails(&recipe(&ws, &ws.at("empty.jsonl"), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains("is empty"), "{err}");
}

#[test]
fn unknown_parameter_and_missing_recipe_are_one_clear_line() {
    let ws = Workspace::new();
    let err = ws.fails(&ws.recipe("r.sql", "SELECT '${who}'"), &[]);
    assert!(err.contains("unknown parameter '${who}'"), "{err}");
    let err = tokq_err(&["run", "/nonexistent/recipe.sql"]);
    assert!(err.contains("cannot read recipe"), "{err}");
}

#[test]
fn a_mistyped_set_name_and_a_folder_glued_to_a_path_fail_before_anything_is_written() {
    // Both used to run: the first wrote to the default output, the second to 'out/wsigned/'.
    let d = tempfile::tempdir().unwrap();
    let err = tokq_err(&["run", "queries/quickstart.sql", "--quiet", "--set", &format!("outptu={}/o/", d.path().display())]);
    assert!(err.contains("--set outptu=...: queries/quickstart.sql has no parameter '${outptu}' (its parameters: input, output, tokenizer)"), "{err}");
    // A value of the wrong type is refused before anything runs.
    let err = tokq_err(&["run", "queries/dedup.sql", "--quiet", "--set", "bands=many", "--set", &format!("output={}/o/", d.path().display())]);
    assert!(err.contains("--set bands=many: queries/dedup.sql:") && err.contains("declares 'bands' integer, so it must be a whole number"), "{err}");
    // A recipe that does not declare its parameters refuses a folder glued to more path.
    let r = write(d.path(), "r.sql", "COPY (SELECT 1 AS a) TO '${work:-out/w/}signed/' STORED AS PARQUET");
    let work = format!("work={}/w", d.path().display());
    let err = tokq_err(&["run", r.to_str().unwrap(), "--quiet", "--set", &work]);
    assert!(err.contains("'${work}' is followed by 'signed/'") && err.contains(&format!("pass --set {work}/")), "{err}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "nothing was written but the recipe");
}

#[test]
fn a_declared_folder_gets_its_slash_and_a_required_parameter_is_named() {
    let d = tempfile::tempdir().unwrap();
    let r = write(d.path(), "r.sql", "PARAMETERS (work folder, n integer DEFAULT 2);\nCOPY (SELECT ${n} AS a) TO '${work}signed/' STORED AS PARQUET");
    let err = tokq_err(&["run", r.to_str().unwrap()]);
    assert!(err.ends_with("r.sql:1: 'work' (folder) has no default: give it with --set work=VALUE"), "{err}");
    tokq_ok(&["run", r.to_str().unwrap(), "--quiet", "--set", &format!("work={}/w", d.path().display())]);
    assert_eq!(read_output(&d.path().join("w/signed")).batch.num_rows(), 1);
}

#[test]
fn a_megabyte_whitespace_run_is_encoded_by_tokq_and_one_clear_line_on_the_reference() {
    let ws = Workspace::new();
    let text = " ".repeat(1_000_000) + "x";
    let f = ws.file("p.jsonl", format!("{{\"id\":\"a\",\"text\":\"{text}\"}}\n"));
    // tokq's own pre-tokenizer is linear: the run is one piece of 999,999 spaces, then " x".
    ws.run(&recipe(&ws, f.to_str().unwrap(), "tiktoken:cl100k_base"), &[]);
    let ids = &rows(&ws.output("o").batch)[0].3;
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    assert_eq!(bpe.decode(ids).unwrap(), text, "the ids spell the document");
    // The ids tiktoken gives where its regex copes (10,000 spaces): the same run of one token,
    // and the same end.
    let short = bpe.encode_ordinary(&(" ".repeat(10_000) + "x"));
    assert_eq!(ids[..short.len() - 3], short[..short.len() - 3], "the run's tokens");
    assert_eq!(ids.last(), short.last(), "' x'");
    assert!(ids[..ids.len() - 3].iter().all(|&id| id == ids[0]), "one token repeated");
    // tiktoken-rs's backtracking regex gives up; that is an error line, not a panic.
    let spec = "reference:tiktoken:cl100k_base";
    let err = ws.fails(&recipe(&ws, f.to_str().unwrap(), spec), &[]);
    assert!(err.contains(&format!("tokenizer '{spec}': the split regex gave up on a 1000001-byte document")), "{err}");
}

/// Constant arguments are checked when the statement is planned: `tokq explain`, which reads and
/// writes nothing, already names the bad argument, with the recipe line and statement.
#[test]
fn explain_rejects_bad_constant_arguments_before_reading_data() {
    let cases = [
        ("gopher_quality(text, 'min_doc_wrds=20')", "gopher_quality: unknown parameter 'min_doc_wrds' (known: min_doc_words"),
        ("quality_chain(text, 'gopher_quality; no_such_filter')", "unknown filter 'no_such_filter': filters: gopher_repetition"),
        ("tokenize(text, 'tiktoken:cl100k_base', 'eos=<|no_such_token|>')", "token '<|no_such_token|>' is not in the vocabulary"),
        ("tokenize(text, 'tiktoken:nope_base')", "tiktoken:nope_base"),
        ("minhash(text, 0)", "num_perm must be between 1 and 4096, got 0"),
        ("normalize_text(text, 'NFX')", "form must be NFC, NFKC, NFD or NFKD, got 'NFX'"),
        ("pad_tokens(ids, -1, 0)", "seq_len must be between 0"),
    ];
    let recipes = cases.map(|(call, want)| {
        let sql = format!(
            "CREATE VIEW docs AS SELECT 'x' AS text, make_array(1) AS ids;\n\
             COPY (SELECT {call} AS v FROM docs) TO 'out/never-written/' STORED AS PARQUET;"
        );
        (sql, want)
    });
    each_recipe_fails("explain", &recipes);
    // The line names the recipe, the statement's line and number, and what it writes.
    each_recipe_fails("explain", &[(recipes[0].0.clone(), ".sql:2: statement 2 `COPY to out/never-written/`: ")]);
}

#[test]
fn a_failed_run_still_writes_its_stats_with_the_error() {
    let d = tempfile::tempdir().unwrap();
    let good = write(d.path(), "good.jsonl", format!("{GOOD}{GOOD}"));
    let bad = write(d.path(), "bad.jsonl", format!("{GOOD}{{\"id\":\"c\",\"text\": nope}}\n"));
    let copy = |input: &Path, out: &str| {
        format!("COPY (SELECT id, _source, _row, text FROM read_jsonl('{}')) TO '{}/{out}/' STORED AS PARQUET;\n", input.display(), d.path().display())
    };
    let r = write(d.path(), "two.sql", copy(&good, "first") + &copy(&bad, "second"));
    let stats = d.path().join("s.json");
    let err = tokq_err(&["run", r.to_str().unwrap(), "--quiet", "--stats-json", stats.to_str().unwrap()]);
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let error = s["error"].as_str().unwrap();
    assert!(err.contains(error), "the stats carry the line the user saw: {err} / {error}");
    assert!(error.contains("statement 2") && error.contains(&format!("{}:2", bad.display())), "{error}");
    assert_eq!(s["outputs"].as_array().unwrap().len(), 1, "the first statement's output is counted: {s}");
    assert_eq!(s["outputs"][0]["rows"], 2);
}

#[test]
fn a_function_given_the_wrong_type_says_so_without_asking_for_a_bug_report() {
    let ws = Workspace::new();
    let f = ws.file("lists.jsonl", "{\"id\":\"b\",\"text\":[\"x\",\"y\"]}\n");
    let err = ws.fails(&recipe(&ws, f.to_str().unwrap(), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains("No function matches the given name and argument types 'tokenize(List(Utf8), Utf8)'"), "{err}");
    assert!(!err.contains("bug") && !err.contains("Internal"), "{err}");
}

#[test]
fn a_file_without_a_read_column_is_named_and_strict_schema_fails_on_it() {
    let ws = Workspace::new();
    ws.file("in/a.jsonl", "{\"id\":\"a1\",\"text\":\"one\"}\n{\"id\":\"a2\",\"text\":\"two\"}\n");
    let b = ws.file("in/b.jsonl", "{\"id\":\"b1\",\"content\":\"three\"}\n");
    let recipe = ws.recipe("r.sql", "COPY (SELECT id, text FROM read_jsonl('{ws}/in/*.jsonl')) TO '{ws}/o/' STORED AS PARQUET;\nSELECT count(*) AS n FROM read_jsonl('{ws}/in/*.jsonl') WHERE id IS NOT NULL;");
    let want = format!("file://{} has no column text, which statement 1 reads: its rows read NULL there (it has content, which the other files lack)", b.display());

    let run = ws.run(&recipe, &["--quiet"]);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings, [format!("tokq: warning: {want}; --strict-schema fails instead")], "named once, under --quiet too, and only for the statement that reads text");
    let drift = run.stats["schema_drift"].as_array().unwrap();
    assert_eq!(drift.len(), 1);
    assert_eq!((drift[0]["statement"].as_u64(), drift[0]["missing"][0].as_str(), drift[0]["instead"][0].as_str()), (Some(1), Some("text"), Some("content")));
    assert_eq!(run.stats["outputs"][0]["rows"], 3, "without --strict-schema the file is read");

    let err = ws.fails(&recipe, &["--strict-schema"]);
    assert!(err.contains(&want) && err.contains("statement 1"), "{err}");
    let same = ws.recipe("same.sql", "COPY (SELECT id, text FROM read_jsonl('{ws}/in/a.jsonl')) TO '{ws}/o2/' STORED AS PARQUET");
    assert!(!ws.run(&same, &["--strict-schema"]).stderr.contains("warning"), "files that agree pass --strict-schema");
}

#[test]
fn a_byte_order_mark_and_upper_case_extensions_are_read_and_an_object_for_a_string_is_a_bad_row() {
    let ws = Workspace::new();
    let bom = ws.file("bom.jsonl", format!("\u{feff}{GOOD}{GOOD}"));
    let csv = ws.file("bom.csv", "\u{feff}id,text\na,one\n");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, GOOD.as_bytes()).unwrap();
    let upper = ws.file("UP.JSONL.GZ", gz.finish().unwrap());
    let sql = format!(
        "SELECT (SELECT count(*) FROM read_jsonl('{}') WHERE text = 'one') AS bom, (SELECT max(id) FROM read_csv('{}')) AS csv_id, \
         (SELECT count(*) FROM read_jsonl('{}') WHERE text = 'one') AS upper",
        bom.display(), csv.display(), upper.display()
    );
    assert_eq!(tokq_ok(&["sql", "--format", "csv", "-c", &sql]).lines().nth(1), Some("2,a,1"));

    let odd = ws.file("odd.jsonl", format!("{{\"id\":\"x\",\"text\":{{\"a\":1}}}}\n{GOOD}{GOOD}"));
    let err = ws.fails(&recipe(&ws, odd.to_str().unwrap(), "tiktoken:cl100k_base"), &[]);
    assert!(err.contains(&format!("{}:1: field text is an object here but a scalar in 2 of the 3 lines sampled", odd.display())), "{err}");
    let run = ws.run(&recipe(&ws, odd.to_str().unwrap(), "tiktoken:cl100k_base"), &["--on-bad-row", "skip"]);
    assert_eq!((run.stats["bad_rows_skipped"].as_u64(), run.stats["outputs"][0]["rows"].as_u64()), (Some(1), Some(2)), "{}", run.stats);
}

#[test]
fn a_memory_limit_too_small_says_what_to_do_in_one_line() {
    let ws = Workspace::new();
    // 6 MB of text that does not compress, sorted under a 2 MB pool: the sort cannot fit.
    let mut seed = 7u64;
    let lines: String = (0..2000)
        .map(|i| {
            let text: String = (0..3000).map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                char::from(b'a' + (seed >> 59) as u8)
            }).collect();
            format!("{{\"id\":{i},\"text\":\"{text}\"}}\n")
        })
        .collect();
    let f = ws.file("big.jsonl", lines);
    let sql = format!("COPY (SELECT id, text FROM read_jsonl('{}') ORDER BY text) TO '{{ws}}/sorted/' STORED AS PARQUET", f.display());
    let err = ws.fails(&ws.recipe("r.sql", &sql), &["--memory-limit", "2M", "--partitions", "1"]);
    assert!(err.contains("statement 1") && err.contains("out of memory: ") && err.contains("more than the memory limit of 2.0 MB allows; raise --memory-limit"), "{err}");
}
