//! `shuffle_key(index BIGINT, n BIGINT, seed BIGINT) -> BIGINT`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, Int64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::as_int64_array;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, Signature, Volatility};
use tokq_core::TokqError;

use crate::args::Consts;
use crate::kit::{doc, Body, Udf};

/// `shuffle_key(index, n, seed)`: three columns, no constants.
struct ShuffleKey;

impl Body for ShuffleKey {
    type Consts = ();
    const FIRST_CONST: usize = 3;

    fn consts(&self, _: &Consts) -> Result<(), TokqError> {
        Ok(())
    }

    fn return_type(&self) -> DataType {
        DataType::Int64
    }

    fn invoke(&self, _: (), args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let (index, n, seed) = (as_int64_array(&arrays[0])?, as_int64_array(&arrays[1])?, as_int64_array(&arrays[2])?);
        let mut out = Vec::with_capacity(index.len());
        for row in 0..index.len() {
            if index.is_null(row) || n.is_null(row) || seed.is_null(row) {
                out.push(None);
                continue;
            }
            let (i, size) = (index.value(row), n.value(row));
            if i < 0 || i >= size {
                return exec_err!("shuffle_key: index {i} is outside [0, n) for n = {size}");
            }
            let key = tokq_core::shuffle::shuffle_key(i as u64, size as u64, seed.value(row) as u64);
            out.push(key.map(|k| k as i64));
        }
        Ok(ColumnarValue::Array(Arc::new(Int64Array::from(out))))
    }
}

/// `shuffle_key`, documented.
pub fn function() -> Arc<ScalarUDF> {
    let doc = doc(
        "The position of index in a seeded pseudo-random permutation of [0, n): ORDER BY it for a global \
         shuffle that needs no random sort and gives the same order on any cluster size or partitioning. \
         A Feistel network with cycle walking, so keys are distinct and cover [0, n). NULL when any argument \
         is NULL; an index outside [0, n) is an error.",
        "shuffle_key(index, n, seed)",
    )
    .with_argument("index", "The row's number in [0, n), such as row_number() OVER () - 1.")
    .with_argument("n", "The number of rows.")
    .with_argument("seed", "Any BIGINT; the same seed gives the same order.")
    .with_sql_example("```sql\nSELECT i, shuffle_key(i, 4, 42) AS key FROM (VALUES (0), (1), (2), (3)) AS t(i) ORDER BY key;\n```")
    .build();
    Udf::new("shuffle_key", Signature::exact(vec![DataType::Int64; 3], Volatility::Immutable), ShuffleKey, doc)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::prelude::{SessionConfig, SessionContext};

    async fn keys(partitions: usize) -> Vec<(i64, i64)> {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
        crate::register_all(&ctx);
        let batches = ctx
            .sql("SELECT value, shuffle_key(value, 1000, 42) FROM generate_series(0, 999) ORDER BY value")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        batches
            .iter()
            .flat_map(|b| {
                let (v, k) = (b.column(0).as_primitive::<Int64Type>(), b.column(1).as_primitive::<Int64Type>());
                (0..b.num_rows()).map(|i| (v.value(i), k.value(i))).collect::<Vec<_>>()
            })
            .collect()
    }

    #[tokio::test]
    async fn same_keys_whatever_the_partitioning() {
        let one = keys(1).await;
        assert_eq!(one.len(), 1000);
        assert_eq!(one, keys(4).await);
        let mut sorted: Vec<i64> = one.iter().map(|p| p.1).collect();
        sorted.sort();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn index_outside_the_range_is_an_error() {
        let ctx = SessionContext::new();
        crate::register_all(&ctx);
        let err = ctx.sql("SELECT shuffle_key(10, 10, 0)").await.unwrap().collect().await.unwrap_err().to_string();
        assert!(err.contains("index 10 is outside [0, n) for n = 10"), "{err}");
    }
}
