//! The dedup functions in SQL. NULL text gives NULL.
//! - `text_hash(text)` -> `FixedSizeBinary(16)`, xxh3-128 of the text.
//! - `minhash(text [, num_perm, ngram, seed])` -> `List<UInt64>`; NULL when the text has fewer
//!   words than `ngram` (such a document has no near duplicate, as in datatrove).
//! - `minhash_bands(signature [, bands, rows])` -> `List<UInt64>`, one hash per band (14 x 8).
//! - `shingle_jaccard(a, b [, ngram])` -> `Float64`, the exact Jaccard of the shingle sets.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, FixedSizeBinaryBuilder, Float64Builder, ListArray, ListBuilder, UInt64Array, UInt64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::cast::as_string_array;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility};

use super::hash::text_hash;
use super::minhash::{bands, jaccard, MinHasher, BANDS, NGRAM, NUM_PERM, ROWS, SEED};
use crate::args::{const_i64, for_each_str};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    TextHash,
    Minhash,
    Bands,
    Jaccard,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DedupUdf {
    name: &'static str,
    function: Function,
    signature: Signature,
}

fn u64_list() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::UInt64, true)))
}

impl DedupUdf {
    fn new(name: &'static str, function: Function, args: std::ops::RangeInclusive<usize>) -> Self {
        let signature = Signature::one_of(args.map(TypeSignature::Any).collect(), Volatility::Immutable);
        Self { name, function, signature }
    }

    pub fn all() -> Vec<Arc<ScalarUDF>> {
        [
            Self::new("text_hash", Function::TextHash, 1..=1),
            Self::new("minhash", Function::Minhash, 1..=4),
            Self::new("minhash_bands", Function::Bands, 1..=3),
            Self::new("shingle_jaccard", Function::Jaccard, 2..=3),
        ]
        .into_iter()
        .map(|u| Arc::new(ScalarUDF::new_from_impl(u)))
        .collect()
    }
}

fn strings(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(cast(array, &DataType::Utf8)?)
}

impl ScalarUDFImpl for DedupUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(match self.function {
            Function::TextHash => DataType::FixedSizeBinary(16),
            Function::Minhash | Function::Bands => u64_list(),
            Function::Jaccard => DataType::Float64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let first = args.args[0].to_array(args.number_rows)?;
        let int = |i: usize, name: &str, default: i64| const_i64(self.name, name, args.args.get(i), default);
        let out: ArrayRef = match self.function {
            Function::TextHash => {
                let mut out = FixedSizeBinaryBuilder::with_capacity(first.len(), 16);
                for_each_str(self.name, &first, |t| {
                    match t {
                        Some(t) => out.append_value(text_hash(t))?,
                        None => out.append_null(),
                    }
                    Ok(())
                })?;
                Arc::new(out.finish())
            }
            Function::Minhash => {
                let hasher = MinHasher::new(int(1, "num_perm", NUM_PERM as i64)?, int(2, "ngram", NGRAM as i64)?, int(3, "seed", SEED.into())?)?;
                let mut out = ListBuilder::with_capacity(UInt64Builder::with_capacity(first.len() * hasher.num_perm()), first.len());
                for_each_str(self.name, &first, |t| {
                    match t.and_then(|t| hasher.signature(t)) {
                        Some(sig) => {
                            out.values().append_slice(&sig);
                            out.append(true);
                        }
                        None => out.append_null(),
                    }
                    Ok(())
                })?;
                Arc::new(out.finish())
            }
            Function::Bands => {
                let (b, r) = (int(1, "bands", BANDS as i64)?, int(2, "rows", ROWS as i64)?);
                let (Ok(b), Ok(r)) = (usize::try_from(b), usize::try_from(r)) else {
                    return exec_err!("minhash_bands: bands and rows must be positive, got {b} x {r}");
                };
                let Some(sigs) = first.as_any().downcast_ref::<ListArray>() else {
                    return exec_err!("minhash_bands: expected a signature from minhash (List<UInt64>), got {}", first.data_type());
                };
                let mut out = ListBuilder::with_capacity(UInt64Builder::with_capacity(sigs.len() * b), sigs.len());
                // The signatures are slices of the list's one value buffer: no per-row copy.
                let Some(values) = sigs.values().as_any().downcast_ref::<UInt64Array>() else {
                    return exec_err!("minhash_bands: expected a signature from minhash (List<UInt64>), got {}", first.data_type());
                };
                let offsets = sigs.value_offsets();
                for i in 0..sigs.len() {
                    if sigs.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let sig = &values.values()[offsets[i] as usize..offsets[i + 1] as usize];
                    out.values().append_slice(&bands(sig, b, r)?);
                    out.append(true);
                }
                Arc::new(out.finish())
            }
            Function::Jaccard => {
                let n = int(2, "ngram", NGRAM as i64)?;
                if !(1..=64).contains(&n) {
                    return exec_err!("shingle_jaccard: ngram must be between 1 and 64, got {n}");
                }
                let (a, b) = (strings(&first)?, strings(&args.args[1].to_array(args.number_rows)?)?);
                let mut out = Float64Builder::with_capacity(a.len());
                for (x, y) in as_string_array(&a)?.iter().zip(as_string_array(&b)?.iter()) {
                    out.append_option(x.zip(y).and_then(|(x, y)| jaccard(x, y, n as usize)));
                }
                Arc::new(out.finish())
            }
        };
        Ok(ColumnarValue::Array(out))
    }
}
