use std::collections::BTreeSet;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;

use crate::util::*;

fn lineage(b: &RecordBatch) -> Vec<(String, i64)> {
    let rows = b.column_by_name("_row").unwrap().as_primitive::<Int64Type>();
    strings(b, "_source").into_iter().zip(rows.values().iter()).map(|(s, r)| (s.unwrap(), *r)).collect()
}

const FILTERS: [&str; 4] = ["gopher_repetition", "gopher_quality", "c4_quality", "fineweb_quality"];

#[test]
fn fineweb_recipe_puts_every_input_row_in_kept_or_rejects() {
    let ws = Workspace::new();
    let run = ws.run("queries/fineweb.sql", &["--set", &format!("output={}/", ws.at("kept")), "--set", &format!("rejects={}/", ws.at("rejects"))]);
    let (kept, rejected) = (ws.output("kept").batch, ws.output("rejects").batch);
    assert!(kept.column_by_name("filter_reason").is_none(), "kept rows carry no reason column");
    for reason in strings(&rejected, "filter_reason") {
        let reason = reason.expect("every rejected row has a reason");
        let (filter, why) = reason.split_once(':').unwrap_or_else(|| panic!("'{reason}' is not filter:reason"));
        assert!(FILTERS.contains(&filter) && !why.is_empty(), "{reason}");
    }
    let mut all = lineage(&kept);
    all.extend(lineage(&rejected));
    let distinct: BTreeSet<_> = all.iter().cloned().collect();
    assert_eq!((all.len(), distinct.len()), (200, 200), "each of the 200 sample rows exactly once");
    assert!(kept.num_rows() > 0 && rejected.num_rows() > 0);
    let acc = run.accounting("kept");
    assert_eq!(acc["input_rows"], 200);
    assert_eq!(acc["kept"].as_u64().unwrap() as usize, kept.num_rows());
    assert_eq!(acc["rejected"].as_u64().unwrap() as usize, rejected.num_rows());
}

#[test]
fn quality_chain_equals_the_filters_called_one_by_one() {
    let ws = Workspace::new();
    ws.run_sql(
            "COPY (SELECT _source, _row,
                quality_chain(text, 'fineweb')['filter_reason'] AS chain,
                quality_chain(text, 'fineweb')['text'] AS chain_text,
                CASE WHEN gopher_repetition(text) IS NOT NULL THEN 'gopher_repetition:' || gopher_repetition(text)
                     WHEN gopher_quality(text) IS NOT NULL THEN 'gopher_quality:' || gopher_quality(text)
                     WHEN c4_quality(text, false) IS NOT NULL THEN 'c4_quality:' || c4_quality(text, false)
                     WHEN fineweb_quality(c4_filter_lines(text, false)) IS NOT NULL
                       THEN 'fineweb_quality:' || fineweb_quality(c4_filter_lines(text, false))
                END AS by_hand,
                c4_filter_lines(text, false) AS c4_text
             FROM read_jsonl('queries/data/*.jsonl*')) TO '{ws}/out/' STORED AS PARQUET;",
    );
    let b = ws.output("out").batch;
    let (chain, by_hand) = (strings(&b, "chain"), strings(&b, "by_hand"));
    assert_eq!(chain, by_hand);
    let kept = chain.iter().filter(|c| c.is_none()).count();
    assert!(kept > 0 && kept < b.num_rows(), "the sample has kept and rejected documents");
    for ((c, text), c4) in chain.iter().zip(strings(&b, "chain_text")).zip(strings(&b, "c4_text")) {
        if c.is_none() {
            assert_eq!(text, c4, "a kept document carries C4's rewritten text");
        }
    }
}

#[test]
fn signals_and_parameters_let_a_recipe_set_its_own_thresholds() {
    let ws = Workspace::new();
    ws.run_sql(
            "COPY (SELECT gopher_quality_signals(text)['n_non_symbol_words'] AS words,
                          gopher_quality(text) AS default_reason,
                          gopher_quality(text, 'min_doc_words=20,max_avg_word_length=none') AS reason_20,
                          gopher_repetition_signals(text)['top_2_gram'] AS top2,
                          fineweb_quality_signals(text)['line_punct_ratio'] AS punct,
                          c4_quality_signals(text, false)['n_sentences'] AS sentences
                   FROM read_jsonl('queries/data/*.jsonl*')) TO '{ws}/out/' STORED AS PARQUET;",
    );
    let b = ws.output("out").batch;
    let words = b.column_by_name("words").unwrap().as_primitive::<Int64Type>().values().to_vec();
    for ((w, default), r20) in words.iter().zip(strings(&b, "default_reason")).zip(strings(&b, "reason_20")) {
        assert_eq!(default.as_deref() == Some("gopher_short_doc"), *w < 50, "{w} words");
        assert_eq!(r20.as_deref() == Some("gopher_short_doc"), *w < 20, "{w} words");
    }
    assert!(words.iter().any(|&w| w < 50) && words.iter().any(|&w| w >= 50));
}

#[test]
fn text_functions_work_in_sql() {
    let ws = Workspace::new();
    let out = ws.run_sql(
        "SELECT mask_pii('write to jane.doe@mail.org from 8.8.8.8') AS masked,
                simplify_text('Héllo, WORLD! 3.14') AS simple,
                normalize_text('ﬁ', 'NFKC') AS nfkc,
                clean_text('a\u{a0} b\r\nc') AS cleaned,
                detect_language('Alle Menschen sind frei und gleich an Würde und Rechten geboren.')['lang'] AS lang,
                array_length(split_words('Don''t stop.')) AS n_words;",
    )
    .stdout;
    for want in ["email@example.com", "22.214.171.124", "hello world 0", "| fi ", "| de ", "| 4 "] {
        assert!(out.contains(want), "{want} not in\n{out}");
    }
}

#[test]
fn filter_errors_name_the_function_and_the_fix() {
    let ws = Workspace::new();
    let run = |sql: &str| ws.fails(&ws.recipe("bad.sql", sql), &["--quiet"]);
    let e = run("SELECT gopher_quality('text', 'min_words=3');");
    assert!(e.contains("gopher_quality: unknown parameter 'min_words'") && e.contains("min_doc_words"), "{e}");
    let e = run("SELECT quality_chain('text', 'gopher_quality; best_filter');");
    assert!(e.contains("unknown filter 'best_filter'"), "{e}");
    let e = run("SELECT normalize_text('text', 'NFX');");
    assert!(e.contains("form must be NFC, NFKC, NFD or NFKD, got 'NFX'"), "{e}");
    let e = run("COPY (SELECT 1 AS a) TO '{ws}/o/' STORED AS PARQUET OPTIONS ('reject_column' 'a');");
    assert!(e.contains("'reject_column' needs 'rejects'"), "{e}");
    let e = run("COPY (SELECT 1 AS a) TO '{ws}/o/' STORED AS PARQUET OPTIONS ('rejects' '{ws}/o-rejects/');");
    assert!(e.contains("no column 'filter_reason'") && e.contains("reject_column"), "{e}");
}

#[test]
fn c4_recipe_runs_with_language_and_c4_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (kept, rej) = (dir.path().join("kept"), dir.path().join("rej"));
    let out = tokq(&["run", "queries/c4.sql", "--set", &format!("output={}/", kept.display()), "--set", &format!("rejects={}/", rej.display())]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("every input row accounted for"), "{stderr}");
    let rejected = read_output(&rej).batch;
    for r in strings(&rejected, "filter_reason").into_iter().flatten() {
        assert!(r.starts_with("c4_quality:") || r == "detect_language:not_en", "{r}");
    }
    let kept = read_output(&kept).batch;
    assert!(strings(&kept, "lang").iter().all(|l| l.as_deref() == Some("en")));
}
