//! Dedup below the document in SQL: `span_hashes` (a document's spans of sentences or lines, its
//! paragraphs' word n-grams, or its windows of tokens, hashed) and `drop_spans` (a document
//! without the spans SQL found repeated, or the paragraphs mostly seen before), over
//! `tokq_core::dedup::spans`. queries/sentence-dedup.sql joins them into datatrove's
//! `SentenceDedup`, queries/ngram-dedup.sql into bff's fuzzy paragraph dedup,
//! queries/substring-dedup.sql into Lee et al.'s exact-substring dedup.

use std::sync::Arc;

use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::{DataType, UInt32Type};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use tokq_core::dedup::ngrams::NgramRule;
use tokq_core::dedup::spans::{SpanDedup, Unit, MAX_N};
use tokq_core::TokqError;

use crate::args::{for_each_str_and_list, Consts};
use crate::kit::{arities, doc, str_fn, Body, SpanHashes, Udf};

/// From position `at` on: `n_sentences`, `unit`, then the n-gram unit's `min_ngram_size`,
/// `threshold` and `remove_documents` (bff's defaults, [`NgramRule::bff`]), which the other units
/// ignore: a recipe's part passes them whatever its unit.
fn span_dedup(function: &'static str, c: &Consts, at: usize) -> Result<SpanDedup, TokqError> {
    let dedup = SpanDedup::new(function, c.i64(at, "n_sentences", 3)?, c.str(at + 1, "unit")?.unwrap_or("sentence"))?;
    if dedup.unit() != Unit::Ngram {
        return Ok(dedup);
    }
    let (n, bff) = (dedup.n(), NgramRule::bff(dedup.n()));
    let min_n = c.i64(at + 2, "min_ngram_size", bff.min_n as i64)?;
    let rule = NgramRule::new(function, n, min_n, c.f64(at + 3, "threshold", bff.threshold)?, c.bool(at + 4, "remove_documents", bff.documents)?)?;
    Ok(dedup.with_ngram_rule(rule))
}

/// `drop_spans(text, starts [, n_sentences, unit, min_ngram_size, threshold, remove_documents])`.
struct DropSpans;

impl Body for DropSpans {
    type Consts = SpanDedup;
    const FIRST_CONST: usize = 2;

    fn consts(&self, c: &Consts) -> Result<SpanDedup, TokqError> {
        span_dedup("drop_spans", c, 2)
    }

    fn return_type(&self) -> DataType {
        DataType::Utf8
    }

    fn invoke(&self, dedup: SpanDedup, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let starts = args.args[1].to_array(args.number_rows)?;
        let mut out = StringBuilder::with_capacity(texts.len(), 0);
        for_each_str_and_list::<UInt32Type>("drop_spans", &texts, &starts, |t, starts| {
            out.append_option(t.map(|t| dedup.remove(t, starts)));
            Ok(())
        })?;
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// Both span functions.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        str_fn::<SpanHashes>(
            "span_hashes",
            1..=4,
            |c| {
                let dedup = span_dedup("span_hashes", c, 1)?;
                Ok(Box::new(move |t| Some(SpanHashes(dedup.hashes(t)))))
            },
            doc(
                "Every span of n_sentences consecutive sentences (or lines) of a document, hashed as datatrove 0.10.1's \
                 SentenceDedupSignature hashes it: spaCy's sentences stripped and without the empty ones (or \
                 str.splitlines() lines), each through simplify_text, joined by one space, xxhash64. Each element is \
                 {hash, start}, start being the index of the span's first sentence; spans that simplify to nothing have no \
                 element, and a document of fewer than n_sentences sentences has none. Unnest it, and the spans whose \
                 hash was seen at a smaller (_source, _row, start) are the repeated ones drop_spans removes. With unit \
                 'ngram', the elements are the word n-grams of n_sentences words of each paragraph (the text between two \
                 \\n; words are Unicode word-bound segments that are not whitespace, as Dolma's and DCLM's bff cut them), \
                 start being the paragraph's index: a paragraph of fewer words but at least min_ngram_size is one n-gram. \
                 With unit 'token:SPEC', the elements are every window of n_sentences consecutive tokens of the \
                 tokenizer SPEC (xxh3 of the ids), start being the window's first token: Lee et al.'s exact-substring \
                 dedup (queries/substring-dedup.sql). NULL gives NULL.",
                "span_hashes(text [, n_sentences, unit, min_ngram_size])",
            )
            .with_argument("text", "The document.")
            .with_argument("n_sentences", &format!("Constant sentences (or lines, or words) per span, 1 to {MAX_N} (default 3)."))
            .with_argument(
                "unit",
                "Constant 'sentence' (default: spaCy's sentences), 'line' (datatrove's split_sentences=False), 'ngram' (bff's word n-grams) or 'token:SPEC' (a tokenizer's tokens; SPEC as tokenize takes it, whose tokens spell the text: byte-level BPE without a normalizer).",
            )
            .with_argument("min_ngram_size", "Constant, unit 'ngram' only: the fewest words of a paragraph shorter than n_sentences that is one n-gram, 1 to n_sentences (default 5, or n_sentences if smaller).")
            .with_sql_example("```sql\nSELECT s['start'] FROM (SELECT unnest(span_hashes('One. Two. Three. Four.')) AS s);\n```")
            .with_related_udf("drop_spans")
            .build(),
        ),
        Udf::new(
            "drop_spans",
            arities(2..=7),
            DropSpans,
            doc(
                "A document without the spans that start at the given sentence indices, as datatrove 0.10.1's \
                 SentenceDedupFilter removes them: each start drops n_sentences sentences, with the whitespace before \
                 each; what remains is joined as it was (lines by \\n) and loses its leading whitespace. NULL or empty \
                 starts give the text unchanged. Use the same n_sentences and unit as span_hashes. With unit 'ngram', \
                 starts name a paragraph once for each of its n-grams seen before, and a paragraph goes (with the \\n \
                 before it) when more than threshold of its n-grams were seen, as bff removes it; with remove_documents \
                 the whole text goes when more than threshold of all its n-grams were (DCLM's old-both), and a text \
                 with no word left is empty. With unit 'token:SPEC', each start strikes the bytes of n_sentences tokens \
                 (a character they only partly spell goes whole) and the rest is joined as it stands, as Lee et al. \
                 strike repeated substrings. NULL text gives NULL.",
                "drop_spans(text, starts [, n_sentences, unit, min_ngram_size, threshold, remove_documents])",
            )
            .with_argument("text", "The document.")
            .with_argument(
                "starts",
                "The first sentence of each span to drop (with unit 'ngram': the paragraph of each seen n-gram): a list of integers, such as array_agg of span_hashes' start.",
            )
            .with_argument("n_sentences", "Constant sentences (or lines, or words) per span (default 3).")
            .with_argument("unit", "Constant 'sentence' (default), 'line', 'ngram' or 'token:SPEC'.")
            .with_argument("min_ngram_size", "Constant, unit 'ngram' only: as span_hashes takes it.")
            .with_argument("threshold", "Constant, unit 'ngram' only: the share of seen n-grams a paragraph may have and stay, 0 to 1 (default 0.8).")
            .with_argument("remove_documents", "Constant boolean, unit 'ngram' only: also remove a document past the threshold as a whole (default false).")
            .with_sql_example("```sql\nSELECT drop_spans('One here. Two there! Three? Four. Five.', [1]);\n```")
            .with_related_udf("span_hashes")
            .build(),
        ),
    ]
}
