//! Decontamination in SQL: `eval_ngram_hashes` (an evaluation item's n-grams, the index),
//! `ngram_hashes` (a document's n-grams, which SQL joins with the index) and `first_ngram` (the
//! n-gram a contaminated document is reported with), over `tokq_core::dedup::decont`.
//! queries/decontaminate.sql joins them into datatrove's `NGramsDecontIndexer` and
//! `NGramsDecontFilter`.

use std::sync::Arc;

use datafusion::arrow::array::{StringBuilder, StructBuilder, UInt64Builder};
use datafusion::arrow::datatypes::{DataType, Field, Fields, UInt64Type};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use tokq_core::dedup::decont::{Decont, N_GRAMS};
use tokq_core::dedup::minhash::shingles;
use tokq_core::TokqError;

use crate::args::{for_each_str, for_each_str_and_list, Consts};
use crate::kit::{arities, doc, str_fn, Body, Udf, Value};

/// The `n_grams` argument at `at`, checked.
fn decont(function: &'static str, c: &Consts, at: usize, find_query: bool, find_overlap: bool) -> Result<Decont, TokqError> {
    Decont::new(function, c.i64(at, "n_grams", N_GRAMS as i64)?, find_query, find_overlap)
}

/// `eval_ngram_hashes(text, query [, n_grams, find_query_ngrams, find_overlap_ngrams])`.
struct EvalHashes;

impl Body for EvalHashes {
    type Consts = Decont;
    const FIRST_CONST: usize = 2;

    fn consts(&self, c: &Consts) -> Result<Decont, TokqError> {
        decont("eval_ngram_hashes", c, 2, c.bool(3, "find_query_ngrams", false)?, c.bool(4, "find_overlap_ngrams", true)?)
    }

    fn return_type(&self) -> DataType {
        <Vec<u64> as Value>::data_type().unwrap_or(DataType::Null)
    }

    fn invoke(&self, decont: Decont, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let queries = args.args[1].to_array(args.number_rows)?;
        let mut query_of_row = Vec::with_capacity(queries.len());
        for_each_str("eval_ngram_hashes", &queries, |q| {
            query_of_row.push(q);
            Ok(())
        })?;
        // The column is built as every List<UInt64> function's is (the kit's `Vec<u64>` value).
        let mut out = <Vec<u64> as Value>::builder(texts.len(), &self.return_type())?;
        let mut queries = query_of_row.into_iter();
        for_each_str("eval_ngram_hashes", &texts, |t| {
            let query = queries.next().flatten();
            Value::append(&mut out, t.map(|t| decont.eval_hashes(t, query)), "");
            Ok(())
        })?;
        Ok(ColumnarValue::Array(<Vec<u64> as Value>::finish(out)?))
    }
}

/// `first_ngram(text, hashes [, n_grams])`.
struct FirstNgram;

impl FirstNgram {
    fn fields() -> Fields {
        Fields::from(vec![Field::new("ngram", DataType::Utf8, false), Field::new("hash", DataType::UInt64, false)])
    }
}

impl Body for FirstNgram {
    type Consts = Decont;
    const FIRST_CONST: usize = 2;

    fn consts(&self, c: &Consts) -> Result<Decont, TokqError> {
        decont("first_ngram", c, 2, false, false)
    }

    fn return_type(&self) -> DataType {
        DataType::Struct(Self::fields())
    }

    fn invoke(&self, decont: Decont, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let hashes = args.args[1].to_array(args.number_rows)?;
        let mut out = StructBuilder::from_fields(Self::fields(), texts.len());
        for_each_str_and_list::<UInt64Type>("first_ngram", &texts, &hashes, |t, hashes| {
            let hit = t.filter(|_| !hashes.is_empty()).and_then(|t| decont.first_match(t, hashes));
            let (ngram, hash) = hit.as_ref().map_or((None, None), |(g, h)| (Some(g.as_str()), Some(*h)));
            // The field builders are the ones `fields()` declares, so they are found.
            if let Some(b) = out.field_builder::<StringBuilder>(0) {
                b.append_option(ngram);
            }
            if let Some(b) = out.field_builder::<UInt64Builder>(1) {
                b.append_option(hash);
            }
            out.append(hit.is_some());
            Ok(())
        })?;
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// The three decontamination functions.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        Udf::new(
            "eval_ngram_hashes",
            arities(2..=5),
            EvalHashes,
            doc(
                "The index entries of one evaluation item, as datatrove 0.10.1's NGramsDecontIndexer computes them: \
                 the word n-grams of the gold answer (simplify_text, spaCy's English words, joined by one space, \
                 xxhash64), then, when the query is not NULL, the query's own n-grams (find_query_ngrams) and the \
                 n-grams that run from the query's last words into the answer's first ones (find_overlap_ngrams). \
                 Unnest it into a table of hashes; ngram_hashes of a training document joined with it finds \
                 contamination. NULL text gives NULL.",
                "eval_ngram_hashes(text, query [, n_grams, find_query_ngrams, find_overlap_ngrams])",
            )
            .with_argument("text", "The gold answer.")
            .with_argument("query", "The prompt, or NULL.")
            .with_argument("n_grams", "Constant words per n-gram, 1 to 64 (default 12).")
            .with_argument("find_query_ngrams", "Constant: also index the query's own n-grams (default false).")
            .with_argument("find_overlap_ngrams", "Constant: also index n-grams across query and answer (default true).")
            .with_sql_example("```sql\nSELECT cardinality(eval_ngram_hashes('Paris is the capital', 'What is the capital of France?', 4));\n```")
            .with_related_udf("ngram_hashes")
            .build(),
        ),
        str_fn::<Vec<u64>>(
            "ngram_hashes",
            1..=2,
            |c| {
                let n = decont("ngram_hashes", c, 1, false, false)?.n();
                Ok(Box::new(move |t| Some(shingles(t, n))))
            },
            doc(
                "The hashes of a text's word n-grams, in order, repeats included: simplify_text, spaCy's English words, \
                 n words joined by one space, xxhash64. These are datatrove's NGramsDecontFilter n-grams (and, with \
                 n_grams = 5, MinHash's shingles). NULL gives NULL; a text of fewer words than n_grams gives an empty list.",
                "ngram_hashes(text [, n_grams])",
            )
            .with_argument("text", "The document.")
            .with_argument("n_grams", "Constant words per n-gram, 1 to 64 (default 12).")
            .with_sql_example("```sql\nSELECT cardinality(ngram_hashes('one two three four five', 3));\n```")
            .with_related_udf("eval_ngram_hashes")
            .build(),
        ),
        Udf::new(
            "first_ngram",
            arities(2..=3),
            FirstNgram,
            doc(
                "The first word n-gram of a text whose hash is in the list, as {ngram, hash}: the n-gram datatrove's \
                 NGramsDecontFilter reports for a contaminated document (contaminated_ngram). NULL when none is, or \
                 when the text or the list is NULL.",
                "first_ngram(text, hashes [, n_grams])",
            )
            .with_argument("text", "The document.")
            .with_argument("hashes", "The hashes to look for (List<UInt64>), such as the index hashes the document matched.")
            .with_argument("n_grams", "Constant words per n-gram (default 12).")
            .with_sql_example("```sql\nSELECT first_ngram('so paris is the capital', eval_ngram_hashes('Paris is the capital', NULL, 3), 3)['ngram'];\n```")
            .with_related_udf("ngram_hashes")
            .build(),
        ),
    ]
}
