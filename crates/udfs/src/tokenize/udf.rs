//! `tokenize(text, spec [, options])` -> `List<UInt32>` and `token_count(...)` -> `Int64`.
//!
//! The structs are stateless: the spec travels as a literal argument and each process loads the
//! tokenizer once through [`super::cached`], which is what lets these run on Ballista executors.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, ListArray, UInt32Array};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

use super::{cached, EncodeOptions, Tokenizer};
use crate::args::{const_str, for_each_str, nulls_of, text_array};
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

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Tokenize {
    signature: Signature,
}

impl Default for Tokenize {
    fn default() -> Self {
        Self { signature: signature() }
    }
}

impl ScalarUDFImpl for Tokenize {
    fn name(&self) -> &str {
        "tokenize"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(ids_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (tok, opts, chunk_bytes) = setup("tokenize", &args)?;
        let texts = text_array(&args.args[0], args.number_rows)?;
        let mut offsets: Vec<i32> = Vec::with_capacity(texts.len() + 1);
        offsets.push(0);
        let mut ids: Vec<u32> = Vec::new();
        for_each_str("tokenize", &texts, |text| {
            if let Some(text) = text {
                tok.encode_into(text, &opts, chunk_bytes, &mut ids)?;
            }
            let Ok(end) = i32::try_from(ids.len()) else {
                return exec_err!("tokenize: a batch produced over 2^31 tokens; lower datafusion.execution.batch_size");
            };
            offsets.push(end);
            Ok(())
        })?;
        let field = Arc::new(Field::new_list_field(DataType::UInt32, false));
        let list = ListArray::try_new(
            field,
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(UInt32Array::from(ids)),
            nulls_of(&texts),
        )?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TokenCount {
    signature: Signature,
}

impl Default for TokenCount {
    fn default() -> Self {
        Self { signature: signature() }
    }
}

impl ScalarUDFImpl for TokenCount {
    fn name(&self) -> &str {
        "token_count"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (tok, opts, chunk_bytes) = setup("token_count", &args)?;
        let texts = text_array(&args.args[0], args.number_rows)?;
        let mut counts = Vec::with_capacity(texts.len());
        let mut scratch = Vec::new();
        for_each_str("token_count", &texts, |text| {
            counts.push(match text {
                Some(text) => {
                    scratch.clear();
                    tok.encode_into(text, &opts, chunk_bytes, &mut scratch)?;
                    Some(scratch.len() as i64)
                }
                None => None,
            });
            Ok(())
        })?;
        Ok(ColumnarValue::Array(Arc::new(Int64Array::from(counts))))
    }
}
