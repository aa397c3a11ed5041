//! Argument helpers shared by the scalar and table function wrappers.

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::{as_large_string_array, as_string_array, as_string_view_array};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::common::plan_err;
use datafusion::logical_expr::{ColumnarValue, Expr};

/// A constant string argument such as a tokenizer spec.
pub fn const_str<'a>(function: &str, name: &str, arg: &'a ColumnarValue) -> Result<&'a str> {
    match arg {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)),
        ) => Ok(s),
        _ => exec_err!("{function}: '{name}' must be a constant, non-NULL string literal"),
    }
}

/// Calls `f` for each row of a string column (Utf8, LargeUtf8 or Utf8View).
pub fn for_each_str(
    function: &str,
    array: &ArrayRef,
    mut f: impl FnMut(Option<&str>) -> Result<()>,
) -> Result<()> {
    match array.data_type() {
        DataType::Utf8 => as_string_array(array)?.iter().try_for_each(&mut f),
        DataType::LargeUtf8 => as_large_string_array(array)?.iter().try_for_each(&mut f),
        DataType::Utf8View => as_string_view_array(array)?.iter().try_for_each(&mut f),
        other => exec_err!("{function}: expected a string column, got {other}"),
    }
}

/// A string literal argument of a table function (which receives expressions, not values).
pub fn literal_str(function: &str, what: &str, e: &Expr) -> Result<String> {
    match e {
        Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s)), _) => {
            Ok(s.clone())
        }
        other => plan_err!("{function}: {what} must be a string literal, got {other}"),
    }
}

/// An optional constant integer argument (`minhash(text, 112, 5, 1)`), `default` when absent.
pub fn const_i64(function: &str, name: &str, arg: Option<&ColumnarValue>, default: i64) -> Result<i64> {
    let Some(arg) = arg else { return Ok(default) };
    match arg {
        ColumnarValue::Scalar(s) if !s.is_null() => match s.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(v)) => Ok(v),
            _ => exec_err!("{function}: '{name}' must be a constant integer"),
        },
        _ => exec_err!("{function}: '{name}' must be a constant, non-NULL integer"),
    }
}
