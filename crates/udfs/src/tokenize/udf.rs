//! `tokenize(text, spec [, options])` -> `List<UInt32>` and `token_count(...)` -> `Int64`.
//!
//! The structs are stateless: the spec travels as a literal argument and each process loads the
//! tokenizer once through [`super::cached`], which is what lets these run on Ballista executors.

use std::sync::Arc;

use datafusion::arrow::array::{Array, Int64Array, ListArray, UInt32Array};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

use super::{cached, EncodeOptions, Tokenizer};
use crate::args::{const_str, for_each_str};
use crate::options::TokqOptions;

fn signature() -> Signature {
    Signature::one_of(vec![TypeSignature::String(2), TypeSignature::String(3)], Volatility::Immutable)
}

pub fn ids_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, false)))
}

/// Resolves the tokenizer and per-call options from the constant arguments.
fn setup(function: &str, args: &ScalarFunctionArgs) -> Result<(Arc<Tokenizer>, EncodeOptions, usize)> {
    let spec = const_str(function, "spec", &args.args[1])?;
    let tokenizer = cached(spec)?;
    let opts = match args.args.get(2) {
        Some(a) => tokenizer.parse_options(const_str(function, "options", a)?)?,
        None => EncodeOptions::default(),
    };
    let chunk_bytes = TokqOptions::from_config(&args.config_options).tokenize_chunk_bytes;
    Ok((tokenizer, opts, chunk_bytes))
}

/// `tokenize` (ids) and `token_count` (their number): one implementation, two outputs.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Tokenize {
    signature: Signature,
    count_only: bool,
}

impl Tokenize {
    pub fn ids() -> Self {
        Self { signature: signature(), count_only: false }
    }

    pub fn count() -> Self {
        Self { signature: signature(), count_only: true }
    }
}

impl ScalarUDFImpl for Tokenize {
    fn name(&self) -> &str {
        if self.count_only {
            "token_count"
        } else {
            "tokenize"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(if self.count_only { DataType::Int64 } else { ids_type() })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let (tok, opts, chunk_bytes) = setup(name, &args)?;
        let texts = args.args[0].to_array(args.number_rows)?;
        let mut offsets: Vec<i32> = Vec::with_capacity(texts.len() + 1);
        offsets.push(0);
        let mut ids: Vec<u32> = Vec::new();
        let mut counts: Vec<Option<i64>> = Vec::new();
        for_each_str(name, &texts, |text| {
            let start = ids.len();
            if let Some(text) = text {
                tok.encode_into(text, &opts, chunk_bytes, &mut ids)?;
            }
            if self.count_only {
                counts.push(text.map(|_| (ids.len() - start) as i64));
                ids.clear();
                return Ok(());
            }
            let Ok(end) = i32::try_from(ids.len()) else {
                return exec_err!("{name}: a batch produced over 2^31 tokens; lower datafusion.execution.batch_size");
            };
            offsets.push(end);
            Ok(())
        })?;
        if self.count_only {
            return Ok(ColumnarValue::Array(Arc::new(Int64Array::from(counts))));
        }
        let field = Arc::new(Field::new_list_field(DataType::UInt32, false));
        let list = ListArray::try_new(
            field,
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(UInt32Array::from(ids)),
            texts.logical_nulls(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Int64Type, UInt64Type};
    use datafusion::prelude::SessionContext;

    async fn one_row(sql: &str) -> datafusion::arrow::array::RecordBatch {
        let ctx = SessionContext::new();
        crate::register_all(&ctx);
        ctx.sql(sql).await.unwrap().collect().await.unwrap().remove(0)
    }

    #[tokio::test]
    async fn token_count_equals_the_length_of_tokenize() {
        let b = one_row(
            "SELECT token_count(t, 'tiktoken:cl100k_base', 'eos=<|endoftext|>') AS n, \
                    cardinality(tokenize(t, 'tiktoken:cl100k_base', 'eos=<|endoftext|>')) AS m, \
                    token_count(NULL, 'tiktoken:cl100k_base') AS z \
             FROM (VALUES ('hello world'), ('')) AS v(t)",
        )
        .await;
        let n = b.column(0).as_primitive::<Int64Type>();
        let m = b.column(1).as_primitive::<UInt64Type>();
        assert_eq!((n.value(0), n.value(1)), (3, 1));
        assert_eq!((m.value(0), m.value(1)), (3, 1));
        assert!(b.column(2).is_null(0));
    }

    #[tokio::test]
    async fn spec_must_be_a_constant() {
        let ctx = SessionContext::new();
        crate::register_all(&ctx);
        let err = ctx
            .sql("SELECT tokenize(t, t) FROM (VALUES ('a')) AS v(t)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("'spec' must be a constant"), "{err}");
    }
}
