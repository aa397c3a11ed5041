//! `assert_true`, Spark's name for a check a recipe makes of its data: a run stops with the
//! recipe's own message (an empty evaluation table, a column of the wrong kind) instead of going
//! on to a quietly wrong result.

use std::sync::Arc;

use datafusion::arrow::array::{Array, NullArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::as_boolean_array;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};
use tokq_core::TokqError;

use crate::args::Consts;
use crate::kit::{arities, doc, Body, Udf};

/// `assert_true(condition, message)`.
struct AssertTrue;

impl Body for AssertTrue {
    type Consts = String;
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<String, TokqError> {
        Ok(c.str(1, "message")?.unwrap_or("assert_true failed").to_string())
    }

    fn return_type(&self) -> DataType {
        DataType::Null
    }

    fn invoke(&self, message: String, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let cond = args.args[0].to_array(args.number_rows)?;
        let Ok(cond) = as_boolean_array(&cond) else { return exec_err!("assert_true: the condition must be a boolean, got {}", cond.data_type()) };
        if cond.null_count() > 0 || cond.false_count() > 0 {
            return exec_err!("{message}");
        }
        Ok(ColumnarValue::Array(Arc::new(NullArray::new(cond.len()))))
    }
}

/// `assert_true`.
pub fn function() -> Arc<ScalarUDF> {
    Udf::new(
        "assert_true",
        arities(1..=2),
        AssertTrue,
        doc(
            "Stops the statement with the message when the condition is false or NULL on any row; NULL otherwise, as \
             Spark's assert_true. A recipe checks its inputs with it before it writes anything: \
             SELECT assert_true(count(*) > 0, 'the eval table is empty') FROM eval.",
            "assert_true(condition [, message])",
        )
        .with_argument("condition", "A boolean expression.")
        .with_argument("message", "Constant text of the error (default 'assert_true failed').")
        .with_sql_example("```sql\nSELECT assert_true(1 < 2, 'arithmetic is broken');\n```")
        .build(),
    )
}
