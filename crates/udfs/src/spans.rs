//! Dedup below the document in SQL: `span_hashes` (a document's spans of sentences or lines,
//! hashed) and `drop_spans` (a document without the spans SQL found repeated), over
//! `tokq_core::dedup::spans`. queries/sentence-dedup.sql joins them into datatrove's
//! `SentenceDedup`.

use std::sync::Arc;

use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::{DataType, UInt32Type};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use tokq_core::dedup::spans::{SpanDedup, Unit, MAX_N};
use tokq_core::TokqError;

use crate::args::{for_each_str_and_list, Consts};
use crate::kit::{arities, doc, str_fn, Body, SpanHashes, Udf};

/// `n_sentences` and `unit` from position `at` on.
fn span_dedup(function: &'static str, c: &Consts, at: usize) -> Result<SpanDedup, TokqError> {
    let unit = Unit::parse(function, c.str(at + 1, "unit")?.unwrap_or("sentence"))?;
    SpanDedup::new(function, c.i64(at, "n_sentences", 3)?, unit)
}

/// `drop_spans(text, starts [, n_sentences, unit])`.
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
            1..=3,
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
                 hash was seen at a smaller (_source, _row, start) are the repeated ones drop_spans removes. NULL gives NULL.",
                "span_hashes(text [, n_sentences, unit])",
            )
            .with_argument("text", "The document.")
            .with_argument("n_sentences", &format!("Constant sentences (or lines) per span, 1 to {MAX_N} (default 3)."))
            .with_argument("unit", "Constant 'sentence' (default: spaCy's sentences) or 'line' (datatrove's split_sentences=False).")
            .with_sql_example("```sql\nSELECT s['start'] FROM (SELECT unnest(span_hashes('One. Two. Three. Four.')) AS s);\n```")
            .with_related_udf("drop_spans")
            .build(),
        ),
        Udf::new(
            "drop_spans",
            arities(2..=4),
            DropSpans,
            doc(
                "A document without the spans that start at the given sentence indices, as datatrove 0.10.1's \
                 SentenceDedupFilter removes them: each start drops n_sentences sentences, with the whitespace before \
                 each; what remains is joined as it was (lines by \\n) and loses its leading whitespace. NULL or empty \
                 starts give the text unchanged. Use the same n_sentences and unit as span_hashes. NULL text gives NULL.",
                "drop_spans(text, starts [, n_sentences, unit])",
            )
            .with_argument("text", "The document.")
            .with_argument("starts", "The first sentence of each span to drop: a list of integers, such as array_agg of span_hashes' start.")
            .with_argument("n_sentences", "Constant sentences (or lines) per span (default 3).")
            .with_argument("unit", "Constant 'sentence' (default) or 'line'.")
            .with_sql_example("```sql\nSELECT drop_spans('One here. Two there! Three? Four. Five.', [1]);\n```")
            .with_related_udf("span_hashes")
            .build(),
        ),
    ]
}
