//! `pad_tokens(ids, seq_len, pad_id)` and `attention_mask(ids, seq_len)` over the padded-mode
//! core in `tokq_core::pack::pad`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListArray, PrimitiveArray};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Field, UInt32Type, UInt8Type};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, Signature, Volatility};
use tokq_core::pack::pad::{mask, padded};
use tokq_core::TokqError;

use crate::args::Consts;
use crate::kit::{doc, Body, Udf};

/// `pad_tokens` (`mask: false`) or `attention_mask` (`mask: true`).
struct Pad {
    mask: bool,
}

impl Pad {
    fn name(&self) -> &'static str {
        if self.mask { "attention_mask" } else { "pad_tokens" }
    }
}

fn bounded(c: &Consts, function: &'static str, i: usize, name: &str, max: i64) -> Result<i64, TokqError> {
    match c.i64(i, name, -1)? {
        n if (0..=max).contains(&n) => Ok(n),
        n => Err(TokqError::Argument { function, cause: format!("{name} must be between 0 and {max}, got {n}") }),
    }
}

fn list_of<T: ArrowPrimitiveType>(values: Vec<T::Native>, rows: usize, seq_len: usize, nulls: Option<NullBuffer>) -> Result<ColumnarValue> {
    let field = Arc::new(Field::new_list_field(T::DATA_TYPE, false));
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(seq_len, rows));
    let list = ListArray::try_new(field, offsets, Arc::new(PrimitiveArray::<T>::from_iter_values(values)), nulls)?;
    Ok(ColumnarValue::Array(Arc::new(list)))
}

impl Body for Pad {
    /// `seq_len` and, for `pad_tokens`, `pad_id`.
    type Consts = (usize, u32);
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<(usize, u32), TokqError> {
        let seq_len = bounded(c, self.name(), 1, "seq_len", i32::MAX as i64)? as usize;
        let pad = if self.mask { 0 } else { bounded(c, self.name(), 2, "pad_id", u32::MAX as i64)? as u32 };
        Ok((seq_len, pad))
    }

    fn return_type(&self) -> DataType {
        let item = if self.mask { DataType::UInt8 } else { DataType::UInt32 };
        DataType::List(Arc::new(Field::new_list_field(item, false)))
    }

    fn invoke(&self, (seq_len, pad): (usize, u32), args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ids = args.args[0].to_array(args.number_rows)?;
        let ids = match ids.data_type() {
            DataType::List(f) | DataType::LargeList(f) if f.data_type().is_integer() => {
                cast(&ids, &DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, true))))?
            }
            other => return exec_err!("{}: the first argument must be a list of token ids, got {other}", self.name()),
        };
        let ids = ids.as_list::<i32>();
        let rows = ids.len();
        // A NULL document stays NULL; its slot still holds seq_len values so that offsets stay uniform.
        let lens = (0..rows).map(|i| if ids.is_null(i) { 0 } else { ids.value_length(i) as usize });
        if self.mask {
            let values = lens.flat_map(|n| mask(n, seq_len)).collect();
            return list_of::<UInt8Type>(values, rows, seq_len, ids.nulls().cloned());
        }
        let flat = ids.values().as_primitive::<UInt32Type>().values();
        let offsets = ids.offsets();
        let values = (0..rows)
            .flat_map(|i| {
                let doc = if ids.is_null(i) { &[][..] } else { &flat[offsets[i] as usize..offsets[i + 1] as usize] };
                padded(doc, seq_len, pad)
            })
            .collect();
        list_of::<UInt32Type>(values, rows, seq_len, ids.nulls().cloned())
    }
}

/// `pad_tokens` and `attention_mask`, documented.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    let pad = doc(
        "Padded mode, one document per row: the first seq_len ids of a document, then pad_id up to exactly \
         seq_len. Use pack_tokens instead to pack documents without padding. NULL gives NULL.",
        "pad_tokens(ids, seq_len, pad_id)",
    )
    .with_argument("ids", "A list of token ids, such as tokenize's result.")
    .with_argument("seq_len", "Constant row length, 0 to 2^31-1.")
    .with_argument("pad_id", "Constant id to pad with, 0 to 2^32-1.")
    .with_sql_example("```sql\nSELECT pad_tokens(tokenize('hello world', 'tiktoken:cl100k_base'), 4, 0);\n```")
    .with_related_udf("attention_mask")
    .build();
    let mask = doc(
        "The attention mask that goes with pad_tokens: seq_len values, 1 for each real token (up to seq_len) \
         and 0 for padding, as UInt8. NULL gives NULL.",
        "attention_mask(ids, seq_len)",
    )
    .with_argument("ids", "A list of token ids.")
    .with_argument("seq_len", "Constant row length, as given to pad_tokens.")
    .with_sql_example("```sql\nSELECT attention_mask(tokenize('hello world', 'tiktoken:cl100k_base'), 4);\n```")
    .with_related_udf("pad_tokens")
    .build();
    vec![
        Udf::new("pad_tokens", Signature::any(3, Volatility::Immutable), Pad { mask: false }, pad),
        Udf::new("attention_mask", Signature::any(2, Volatility::Immutable), Pad { mask: true }, mask),
    ]
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn works_in_sql() {
        let ctx = datafusion::prelude::SessionContext::new();
        crate::register_all(&ctx);
        let sql = "SELECT pad_tokens(ids, 4, 7) AS p, attention_mask(ids, 4) AS m FROM \
                   (VALUES (arrow_cast(make_array(1, 2), 'List(UInt32)')), (make_array(1, 2, 3, 4, 5)), (NULL)) AS t(ids)";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
        assert!(text.contains("[1, 2, 7, 7]") && text.contains("[1, 1, 0, 0]"), "{text}");
        assert!(text.contains("[1, 2, 3, 4]") && text.contains("[1, 1, 1, 1]"), "{text}");
        // A bad constant fails when the query is planned.
        let err = ctx.sql("SELECT pad_tokens(make_array(1), -1, 0)").await.unwrap_err();
        assert!(err.to_string().contains("seq_len must be between 0"), "{err}");
    }
}
