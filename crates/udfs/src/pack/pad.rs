//! Padded mode, one document per row: `pad_tokens(ids, seq_len, pad_id)` truncates or pads the
//! ids to exactly `seq_len`, and `attention_mask(ids, seq_len)` marks the real tokens with 1.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListArray, PrimitiveArray};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Field, UInt32Type, UInt8Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

/// The first `seq_len` tokens, then `pad` up to `seq_len`.
pub fn padded(tokens: &[u32], seq_len: usize, pad: u32) -> impl Iterator<Item = u32> + '_ {
    let n = tokens.len().min(seq_len);
    tokens[..n].iter().copied().chain(std::iter::repeat_n(pad, seq_len - n))
}

/// 1 for each real token of a document of `len` tokens, 0 for padding.
pub fn mask(len: usize, seq_len: usize) -> impl Iterator<Item = u8> {
    let n = len.min(seq_len);
    std::iter::repeat_n(1, n).chain(std::iter::repeat_n(0, seq_len - n))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Pad {
    mask: bool,
    signature: Signature,
}

impl Pad {
    pub fn tokens() -> Self {
        Self { mask: false, signature: Signature::any(3, Volatility::Immutable) }
    }

    pub fn attention_mask() -> Self {
        Self { mask: true, signature: Signature::any(2, Volatility::Immutable) }
    }
}

fn const_int(function: &str, name: &str, arg: &ColumnarValue, max: i64) -> Result<i64> {
    match arg {
        ColumnarValue::Scalar(v) if v.data_type().is_integer() && !v.is_null() => match v.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(n)) if (0..=max).contains(&n) => Ok(n),
            other => exec_err!("{function}: {name} must be between 0 and {max}, got {other}"),
        },
        _ => exec_err!("{function}: {name} must be a constant integer"),
    }
}

fn list_of<T: ArrowPrimitiveType>(values: Vec<T::Native>, rows: usize, seq_len: usize, nulls: Option<NullBuffer>) -> Result<ColumnarValue> {
    let field = Arc::new(Field::new_list_field(T::DATA_TYPE, false));
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(seq_len, rows));
    let list = ListArray::try_new(field, offsets, Arc::new(PrimitiveArray::<T>::from_iter_values(values)), nulls)?;
    Ok(ColumnarValue::Array(Arc::new(list)))
}

impl ScalarUDFImpl for Pad {
    fn name(&self) -> &str {
        if self.mask { "attention_mask" } else { "pad_tokens" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        let item = if self.mask { DataType::UInt8 } else { DataType::UInt32 };
        Ok(DataType::List(Arc::new(Field::new_list_field(item, false))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let seq_len = const_int(name, "seq_len", &args.args[1], i32::MAX as i64)? as usize;
        let ids = args.args[0].to_array(args.number_rows)?;
        let ids = match ids.data_type() {
            DataType::List(f) | DataType::LargeList(f) if f.data_type().is_integer() => {
                cast(&ids, &DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, true))))?
            }
            other => return exec_err!("{name}: the first argument must be a list of token ids, got {other}"),
        };
        let ids = ids.as_list::<i32>();
        let rows = ids.len();
        // A NULL document stays NULL; its slot still holds seq_len values so that offsets stay uniform.
        let lens = (0..rows).map(|i| if ids.is_null(i) { 0 } else { ids.value_length(i) as usize });
        if self.mask {
            let values = lens.flat_map(|n| mask(n, seq_len)).collect();
            return list_of::<UInt8Type>(values, rows, seq_len, ids.nulls().cloned());
        }
        let pad = const_int(name, "pad_id", &args.args[2], u32::MAX as i64)? as u32;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_and_pads() {
        assert_eq!(padded(&[1, 2, 3], 5, 0).collect::<Vec<_>>(), vec![1, 2, 3, 0, 0]);
        assert_eq!(padded(&[1, 2, 3], 2, 0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(mask(3, 5).collect::<Vec<_>>(), vec![1, 1, 1, 0, 0]);
        assert_eq!(mask(9, 2).collect::<Vec<_>>(), vec![1, 1]);
    }

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
        let err = ctx.sql("SELECT pad_tokens(make_array(1), -1, 0)").await.unwrap().collect().await.unwrap_err();
        assert!(err.to_string().contains("seq_len must be between 0"), "{err}");
    }
}
