//! Argument helpers shared by the scalar UDF wrappers.

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::cast::{as_large_string_array, as_string_array, as_string_view_array};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::ColumnarValue;

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
