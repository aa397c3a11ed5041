//! `tokenize(text, spec [, options])` -> `List<UInt32>` and `token_count(...)` -> `Int64`.
//!
//! The structs are stateless: the spec travels as a literal argument and each process loads the
//! tokenizer once through [`tokq_core::tokenize::cached`], which is what lets these run on Ballista
//! executors. Planning loads it too, so a bad spec or option fails before any data is read.

use std::sync::Arc;

use datafusion::arrow::array::{Array, Int64Array, ListArray, UInt32Array};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, DocumentationBuilder, ScalarFunctionArgs, ScalarUDF, Signature, TypeSignature, Volatility,
};
use tokq_core::tokenize::{cached, EncodeOptions, Tokenizer};
use tokq_core::TokqError;

use crate::args::{df, for_each_str, Consts};
use crate::kit::{doc, Body, Udf};
use crate::options::TokqOptions;

/// The type of `tokenize`'s result.
pub fn ids_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, false)))
}

/// The tokenizer and per-call options from the constant arguments.
fn setup(c: &Consts) -> Result<(Arc<Tokenizer>, EncodeOptions), TokqError> {
    let tokenizer = cached(c.str(1, "spec")?.unwrap_or_default())?;
    let opts = match c.str(2, "options")? {
        Some(o) => tokenizer.parse_options(o)?,
        None => EncodeOptions::default(),
    };
    Ok((tokenizer, opts))
}

const SPEC: &str = "A constant tokenizer spec: 'tiktoken:cl100k_base' or 'tiktoken:o200k_base' (bundled), \
                    'tiktoken:PATH#PATTERN' for a .tiktoken rank file (PATTERN: r50k, cl100k, o200k, qwen), or the path, \
                    s3:// or hf:// URI of a Hugging Face tokenizer.json. Prefix 'reference:' to force the reference encoder.";
const OPTIONS: &str = "Optional constant ids added around each document: 'bos=TOKEN,eos=TOKEN', a token by its \
                       string form (<|endoftext|>) or id (128001).";

/// `tokenize` (ids) and `token_count` (their number): one implementation, two outputs.
struct Tokenize {
    count_only: bool,
}

impl Tokenize {
    fn name(&self) -> &'static str {
        if self.count_only {
            "token_count"
        } else {
            "tokenize"
        }
    }
}

impl Body for Tokenize {
    type Consts = (Arc<Tokenizer>, EncodeOptions);
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<Self::Consts, TokqError> {
        setup(c)
    }

    fn return_type(&self) -> DataType {
        if self.count_only { DataType::Int64 } else { ids_type() }
    }

    fn invoke(&self, (tok, opts): Self::Consts, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let chunk_bytes = TokqOptions::from_config(&args.config_options).tokenize_chunk_bytes;
        let texts = args.args[0].to_array(args.number_rows)?;
        let mut offsets: Vec<i32> = Vec::with_capacity(texts.len() + 1);
        offsets.push(0);
        let mut ids: Vec<u32> = Vec::new();
        let mut counts: Vec<Option<i64>> = Vec::new();
        for_each_str(name, &texts, |text| {
            let start = ids.len();
            if let Some(text) = text {
                tok.encode_into(text, &opts, chunk_bytes, &mut ids).map_err(df)?;
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

/// `tokenize` and `token_count`, documented.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    let signature = || Signature::one_of(vec![TypeSignature::String(2), TypeSignature::String(3)], Volatility::Immutable);
    let ids = doc(
        "The token ids of a text, identical to Hugging Face tokenizers (tokenizer.json) or tiktoken for the \
         same tokenizer, without special tokens unless options add them. tokq's own byte-level BPE encoder runs \
         every tiktoken spec and the tokenizer.json files it provably supports; other files run on the \
         tokenizers crate (`tokq tokenizer SPEC` says which). Each process loads a tokenizer once. NULL gives NULL.",
        "tokenize(text, spec [, options])",
    )
    .with_sql_example("```sql\nSELECT tokenize('hello world', 'tiktoken:cl100k_base', 'eos=<|endoftext|>');\n```")
    .with_related_udf("token_count")
    .with_related_udf("pad_tokens");
    let count = doc(
        "The number of tokens tokenize would return for the same arguments, without building the list: \
         use it to measure a corpus or to filter by length. NULL gives NULL.",
        "token_count(text, spec [, options])",
    )
    .with_sql_example("```sql\nSELECT token_count('hello world', 'tiktoken:cl100k_base', 'eos=<|endoftext|>');\n```")
    .with_related_udf("tokenize");
    let args = |d: DocumentationBuilder| d.with_argument("text", "The text to tokenize.").with_argument("spec", SPEC).with_argument("options", OPTIONS).build();
    vec![
        Udf::new("tokenize", signature(), Tokenize { count_only: false }, args(ids)),
        Udf::new("token_count", signature(), Tokenize { count_only: true }, args(count)),
    ]
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
