//! The dedup functions in SQL: `text_hash` and `minhash` over their cores in
//! `tokq_core::dedup`, and `minhash_bands` (a signature in) and `shingle_jaccard` (two texts in).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float64Builder, ListArray, ListBuilder, UInt64Array, UInt64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::cast::as_string_array;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use tokq_core::dedup::hash::text_hash;
use tokq_core::dedup::minhash::{bands, jaccard, MinHasher, BANDS, NGRAM, NUM_PERM, ROWS, SEED};
use tokq_core::TokqError;

use crate::args::{df, Consts};
use crate::kit::{arities, doc, str_fn, unary, Body, Udf};

fn u64_list() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::UInt64, true)))
}

fn hasher(c: &Consts) -> Result<MinHasher, TokqError> {
    MinHasher::new(c.i64(1, "num_perm", NUM_PERM as i64)?, c.i64(2, "ngram", NGRAM as i64)?, c.i64(3, "seed", SEED.into())?)
}

/// `bands` and `rows` of `minhash_bands`, checked.
fn band_shape(c: &Consts) -> Result<(usize, usize), TokqError> {
    let (b, r) = (c.i64(1, "bands", BANDS as i64)?, c.i64(2, "rows", ROWS as i64)?);
    match (usize::try_from(b), usize::try_from(r)) {
        (Ok(b), Ok(r)) if b > 0 && r > 0 => Ok((b, r)),
        _ => Err(TokqError::Argument { function: "minhash_bands", cause: format!("bands and rows must be positive, got {b} x {r}") }),
    }
}

fn shingle_size(c: &Consts) -> Result<usize, TokqError> {
    match c.i64(2, "ngram", NGRAM as i64)? {
        n @ 1..=64 => Ok(n as usize),
        n => Err(TokqError::Argument { function: "shingle_jaccard", cause: format!("ngram must be between 1 and 64, got {n}") }),
    }
}

/// `minhash_bands(signature [, bands, rows])`: one hash per band of a signature.
struct MinhashBands;

impl Body for MinhashBands {
    type Consts = (usize, usize);
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<(usize, usize), TokqError> {
        band_shape(c)
    }

    fn return_type(&self) -> DataType {
        u64_list()
    }

    fn invoke(&self, (b, r): (usize, usize), args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let first = args.args[0].to_array(args.number_rows)?;
        let not_a_signature = || exec_err!("minhash_bands: expected a signature from minhash (List<UInt64>), got {}", first.data_type());
        let Some(sigs) = first.as_any().downcast_ref::<ListArray>() else { return not_a_signature() };
        // The signatures are slices of the list's one value buffer: no per-row copy.
        let Some(values) = sigs.values().as_any().downcast_ref::<UInt64Array>() else { return not_a_signature() };
        let mut out = ListBuilder::with_capacity(UInt64Builder::with_capacity(sigs.len() * b), sigs.len());
        let offsets = sigs.value_offsets();
        for i in 0..sigs.len() {
            if sigs.is_null(i) {
                out.append_null();
                continue;
            }
            let sig = &values.values()[offsets[i] as usize..offsets[i + 1] as usize];
            out.values().append_slice(&bands(sig, b, r).map_err(df)?);
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// `shingle_jaccard(a, b [, ngram])`: the exact Jaccard similarity of two texts' shingle sets.
struct ShingleJaccard;

impl Body for ShingleJaccard {
    type Consts = usize;
    const FIRST_CONST: usize = 2;

    fn consts(&self, c: &Consts) -> Result<usize, TokqError> {
        shingle_size(c)
    }

    fn return_type(&self) -> DataType {
        DataType::Float64
    }

    fn invoke(&self, n: usize, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let strings = |i: usize| -> Result<ArrayRef> { Ok(cast(&args.args[i].to_array(args.number_rows)?, &DataType::Utf8)?) };
        let (a, b) = (strings(0)?, strings(1)?);
        let mut out = Float64Builder::with_capacity(a.len());
        for (x, y) in as_string_array(&a)?.iter().zip(as_string_array(&b)?.iter()) {
            out.append_option(x.zip(y).and_then(|(x, y)| jaccard(x, y, n)));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// Every dedup function.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        unary::<[u8; 16]>(
            "text_hash",
            text_hash,
            "The xxh3-128 hash of the text's UTF-8 bytes, as FixedSizeBinary(16): equal texts, equal hashes. \
             Exact deduplication groups by it (queries/dedup.sql keeps the first document of each hash). \
             NULL gives NULL.",
            "SELECT text_hash('hello') = text_hash('hello');",
        ),
        str_fn::<Vec<u64>>(
            "minhash",
            1..=4,
            |c| {
                let h = hasher(c)?;
                Ok(Box::new(move |t| h.signature(t)))
            },
            doc(
                "The MinHash signature of a text, bit for bit datatrove's MinhashDedupSignature: simplify_text, \
                 spaCy-equivalent words, word n-gram shingles hashed with xxhash64, then num_perm permutations \
                 drawn from numpy's RandomState(seed) in the Mersenne field 2^61-1. NULL when the text has fewer \
                 words than ngram (such a document has no near duplicate, as in datatrove), or for NULL text.",
                "minhash(text [, num_perm, ngram, seed])",
            )
            .with_argument("text", "The document.")
            .with_argument("num_perm", "Constant signature length, 1 to 4096 (default 112 = 14 bands x 8 rows).")
            .with_argument("ngram", "Constant words per shingle, 1 to 64 (default 5).")
            .with_argument("seed", "Constant permutation seed, 0 to 2^32-1 (default 1).")
            .with_sql_example("```sql\nSELECT cardinality(minhash('the quick brown fox jumps over the lazy dog'));\n```")
            .with_related_udf("minhash_bands")
            .build(),
        ),
        Udf::new(
            "minhash_bands",
            arities(1..=3),
            MinhashBands,
            doc(
                "The LSH band hashes of a MinHash signature: the signature is cut into bands of rows values and each \
                 band is hashed (xxh3 of its little-endian values, seeded with the band index). Two documents share a \
                 band hash when that band's values are equal, which is datatrove's candidate rule; one GROUP BY over \
                 all bands finds the candidates. bands * rows must equal the signature's length. NULL gives NULL.",
                "minhash_bands(signature [, bands, rows])",
            )
            .with_argument("signature", "A signature from minhash (List<UInt64>).")
            .with_argument("bands", "Constant number of bands (default 14).")
            .with_argument("rows", "Constant values per band (default 8).")
            .with_sql_example("```sql\nSELECT minhash_bands(minhash('the quick brown fox jumps over the lazy dog again', 4, 5, 1), 2, 2);\n```")
            .with_related_udf("minhash")
            .build(),
        ),
        Udf::new(
            "shingle_jaccard",
            arities(2..=3),
            ShingleJaccard,
            doc(
                "The exact Jaccard similarity of two texts' sets of word n-gram shingles, over the same simplified \
                 words and shingles minhash estimates it from. Use it to verify LSH candidate pairs. NULL when either \
                 text is NULL or has fewer words than ngram.",
                "shingle_jaccard(a, b [, ngram])",
            )
            .with_argument("a", "The first text.")
            .with_argument("b", "The second text.")
            .with_argument("ngram", "Constant words per shingle, 1 to 64 (default 5).")
            .with_sql_example("```sql\nSELECT shingle_jaccard('the quick brown fox jumps', 'the quick brown fox sleeps', 2);\n```")
            .with_related_udf("minhash")
            .build(),
        ),
    ]
}
