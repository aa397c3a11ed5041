//! `&str -> T` functions: a binder turns the constant arguments into a kernel, and the kernel
//! runs per row. NULL text gives NULL; the kernel may also answer NULL (`None`).

use std::ops::RangeInclusive;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF};
use tokq_core::TokqError;

use super::{Body, Udf, Value};
use crate::args::{for_each_str, Consts};

/// A function body for one batch: the constants are bound, the text varies per row.
pub type Kernel<T> = Box<dyn Fn(&str) -> Option<T> + Send + Sync>;

type Bind<T> = Box<dyn Fn(&Consts) -> Result<Kernel<T>, TokqError> + Send + Sync>;

struct StrBody<T: Value> {
    name: &'static str,
    return_type: DataType,
    bind: Bind<T>,
}

impl<T: Value> Body for StrBody<T> {
    type Consts = Kernel<T>;
    const FIRST_CONST: usize = 1;

    fn consts(&self, c: &Consts) -> Result<Kernel<T>, TokqError> {
        (self.bind)(c)
    }

    fn return_type(&self) -> DataType {
        self.return_type.clone()
    }

    fn invoke(&self, kernel: Kernel<T>, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = args.args[0].to_array(args.number_rows)?;
        let mut out = T::builder(texts.len(), &self.return_type)?;
        for_each_str(self.name, &texts, |t| {
            T::append(&mut out, t.and_then(&kernel), t.unwrap_or_default());
            Ok(())
        })?;
        Ok(ColumnarValue::Array(T::finish(out)?))
    }
}

fn build<T: Value>(
    name: &'static str,
    arity: RangeInclusive<usize>,
    return_type: DataType,
    bind: impl Fn(&Consts) -> Result<Kernel<T>, TokqError> + Send + Sync + 'static,
    doc: Documentation,
) -> Arc<ScalarUDF> {
    Udf::new(name, super::arities(arity), StrBody { name, return_type, bind: Box::new(bind) }, doc)
}

/// `name(text [, constants...]) -> T`; `arity` counts the text too (`1..=2`: an optional
/// constant after the text).
pub fn str_fn<T: Value>(
    name: &'static str,
    arity: RangeInclusive<usize>,
    bind: impl Fn(&Consts) -> Result<Kernel<T>, TokqError> + Send + Sync + 'static,
    doc: Documentation,
) -> Arc<ScalarUDF> {
    build(name, arity, T::data_type().unwrap_or_else(|| DataType::Struct(Fields::empty())), bind, doc)
}

/// As [`str_fn`], for a struct result ([`super::Row`]) with these fields.
pub fn str_fn_struct<T: Value>(
    name: &'static str,
    arity: RangeInclusive<usize>,
    fields: Vec<Field>,
    bind: impl Fn(&Consts) -> Result<Kernel<T>, TokqError> + Send + Sync + 'static,
    doc: Documentation,
) -> Arc<ScalarUDF> {
    build(name, arity, DataType::Struct(fields.into()), bind, doc)
}

/// `name(text) -> T` with no constant arguments, in one call: the core, what it does (the
/// description of the documentation) and an SQL example.
pub fn unary<T: Value>(name: &'static str, core: fn(&str) -> T, description: &str, example: &str) -> Arc<ScalarUDF> {
    let doc = super::doc(description, &format!("{name}(text)"))
        .with_argument("text", "The text; NULL gives NULL.")
        .with_sql_example(format!("```sql\n{example}\n```"))
        .build();
    str_fn::<T>(name, 1..=1, move |_| Ok(Box::new(move |t| Some(core(t)))), doc)
}
