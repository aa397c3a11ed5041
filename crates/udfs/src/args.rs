//! Arguments of tokq's functions. Constant arguments (tokenizer specs, filter parameters,
//! `num_perm`) are read through [`Consts`] twice: at planning time from the literals, so that a
//! bad one fails `tokq explain` before any data is read, and at run time from the scalars.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, ListArray, PrimitiveArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Field};
use datafusion::common::cast::{
    as_binary_array, as_binary_view_array, as_large_binary_array, as_large_string_array, as_string_array,
    as_string_view_array,
};
use datafusion::common::plan_err;
use datafusion::common::{exec_err, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Expr};
use tokq_core::TokqError;

/// An error of tokq or of another library (serde, object_store) as DataFusion carries it, so the
/// runner can find it again with `find_root`.
pub fn df(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The arguments of one call that are constants: `None` where an argument is a column (or, at
/// planning time, an expression DataFusion has not folded yet).
pub struct Consts<'a> {
    function: &'static str,
    values: Vec<Option<&'a ScalarValue>>,
}

impl<'a> Consts<'a> {
    /// From planning-time literals (`ReturnFieldArgs::scalar_arguments`).
    pub fn at_planning(function: &'static str, values: &[Option<&'a ScalarValue>]) -> Self {
        Self { function, values: values.to_vec() }
    }

    /// From run-time arguments: scalars are constants, arrays are not.
    pub fn at_run(function: &'static str, args: &'a [ColumnarValue]) -> Self {
        let values = args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => Some(s),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        Self { function, values }
    }

    /// Whether every argument from `first` on is known, so that they can be checked now.
    pub fn known_from(&self, first: usize) -> bool {
        self.values.iter().skip(first).all(Option::is_some)
    }

    fn error(&self, cause: String) -> TokqError {
        TokqError::Argument { function: self.function, cause }
    }

    /// Argument `i`, a constant; `None` when the call has fewer arguments.
    pub fn get(&self, i: usize, name: &str) -> Result<Option<&'a ScalarValue>, TokqError> {
        match self.values.get(i) {
            None => Ok(None),
            Some(Some(v)) if !v.is_null() => Ok(Some(v)),
            Some(_) => Err(self.error(format!("'{name}' must be a constant, non-NULL literal"))),
        }
    }

    /// A constant string argument, `None` when absent.
    pub fn str(&self, i: usize, name: &str) -> Result<Option<&'a str>, TokqError> {
        match self.get(i, name)? {
            None => Ok(None),
            Some(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s))) => Ok(Some(s)),
            Some(other) => Err(self.error(format!("'{name}' must be a string literal, got {other}"))),
        }
    }

    /// A constant boolean argument, `default` when absent.
    pub fn bool(&self, i: usize, name: &str, default: bool) -> Result<bool, TokqError> {
        match self.get(i, name)? {
            None => Ok(default),
            Some(ScalarValue::Boolean(Some(b))) => Ok(*b),
            Some(other) => Err(self.error(format!("'{name}' must be true or false, got {other}"))),
        }
    }

    /// A constant integer argument, `default` when absent.
    pub fn i64(&self, i: usize, name: &str, default: i64) -> Result<i64, TokqError> {
        match self.get(i, name)? {
            None => Ok(default),
            Some(v) => match v.cast_to(&DataType::Int64) {
                Ok(ScalarValue::Int64(Some(n))) if v.data_type().is_integer() => Ok(n),
                _ => Err(self.error(format!("'{name}' must be an integer literal, got {v}"))),
            },
        }
    }

    /// A constant number argument (an integer or a decimal literal), `default` when absent.
    pub fn f64(&self, i: usize, name: &str, default: f64) -> Result<f64, TokqError> {
        match self.get(i, name)? {
            None => Ok(default),
            Some(v) => match v.cast_to(&DataType::Float64) {
                Ok(ScalarValue::Float64(Some(x))) if v.data_type().is_numeric() => Ok(x),
                _ => Err(self.error(format!("'{name}' must be a number literal, got {v}"))),
            },
        }
    }
}

/// Calls `f` for each row of a string column (Utf8, LargeUtf8, Utf8View, or an all-NULL column).
pub fn for_each_str<'a>(function: &str, array: &'a ArrayRef, mut f: impl FnMut(Option<&'a str>) -> Result<()>) -> Result<()> {
    match array.data_type() {
        DataType::Utf8 => as_string_array(array)?.iter().try_for_each(&mut f),
        DataType::LargeUtf8 => as_large_string_array(array)?.iter().try_for_each(&mut f),
        DataType::Utf8View => as_string_view_array(array)?.iter().try_for_each(&mut f),
        DataType::Null => (0..array.len()).try_for_each(|_| f(None)),
        other => exec_err!("{function}: expected a string column, got {other}"),
    }
}

/// Calls `f` for each row of a string column with the same row of a list column, its values cast
/// to `T` (a list of any integer type works): NULL values are left out, a NULL list is empty.
pub fn for_each_str_and_list<'a, T: ArrowPrimitiveType>(
    function: &str,
    texts: &'a ArrayRef,
    lists: &ArrayRef,
    mut f: impl FnMut(Option<&'a str>, &[T::Native]) -> Result<()>,
) -> Result<()> {
    let to = DataType::List(Arc::new(Field::new_list_field(T::DATA_TYPE, true)));
    let not_a_list = || exec_err!("{function}: expected a list of integers, got {}", lists.data_type());
    let Ok(cast) = cast(lists, &to) else { return not_a_list() };
    let Some(list) = cast.as_any().downcast_ref::<ListArray>() else { return not_a_list() };
    let Some(values) = list.values().as_any().downcast_ref::<PrimitiveArray<T>>() else { return not_a_list() };
    let offsets = list.value_offsets();
    let (mut row, mut buf) = (0, Vec::new());
    for_each_str(function, texts, |t| {
        buf.clear();
        if list.is_valid(row) {
            let items = offsets[row] as usize..offsets[row + 1] as usize;
            buf.extend(items.filter(|&k| values.is_valid(k)).map(|k| values.value(k)));
        }
        row += 1;
        f(t, &buf)
    })
}

/// Calls `f` for each row of a bytes column: any binary type, or a string column's UTF-8 bytes.
pub fn for_each_bytes<'a>(function: &str, array: &'a ArrayRef, mut f: impl FnMut(Option<&'a [u8]>) -> Result<()>) -> Result<()> {
    match array.data_type() {
        DataType::Binary => as_binary_array(array)?.iter().try_for_each(&mut f),
        DataType::LargeBinary => as_large_binary_array(array)?.iter().try_for_each(&mut f),
        DataType::BinaryView => as_binary_view_array(array)?.iter().try_for_each(&mut f),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
            for_each_str(function, array, |s| f(s.map(str::as_bytes)))
        }
        other => exec_err!("{function}: expected a binary or string column, got {other}"),
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

/// `?` for a tokq result inside DataFusion code: `result.df()?`.
pub trait OrDf<T> {
    /// The result with its error as DataFusion carries it ([`df`]).
    fn df(self) -> Result<T>;
}

impl<T> OrDf<T> for Result<T, TokqError> {
    fn df(self) -> Result<T> {
        self.map_err(df)
    }
}
