//! tokq's functions for a stock `datafusion.SessionContext` (the `datafusion` package from PyPI):
//! each is exported through DataFusion's FFI capsules, which datafusion-python's `register_udf`
//! and `register_udtf` take.

use std::sync::Arc;

use datafusion::arrow::compute::kernels::cmp::not_distinct;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::catalog::TableFunctionImpl;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};
use datafusion_ffi::udf::FFI_ScalarUDF;
use datafusion_ffi::udtf::FFI_TableFunction;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// A tokq scalar function as datafusion-python takes it (`__datafusion_scalar_udf__`).
#[pyclass(module = "tokq._native", frozen)]
pub struct ScalarFunction {
    udf: Arc<ScalarUDF>,
}

#[pymethods]
impl ScalarFunction {
    #[getter]
    fn name(&self) -> &str {
        self.udf.name()
    }

    fn __datafusion_scalar_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let udf = Arc::new(ScalarUDF::new_from_impl(ConstantsAcross(Arc::clone(&self.udf))));
        PyCapsule::new_with_value(py, FFI_ScalarUDF::from(udf), c"datafusion_scalar_udf")
    }
}

/// A tokq function behind DataFusion's FFI. The FFI hands every argument over as an array, a
/// literal too (`token_count(text, 'tiktoken:cl100k_base')` gets the spec repeated on every row),
/// while tokq's functions take their options as constants. An argument after the first whose
/// values are all the same non-null value is handed to the function as that one constant again,
/// which is what the query said; a column that varies stays a column (and is refused where a
/// constant is required, as in tokq itself).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ConstantsAcross(Arc<ScalarUDF>);

impl ScalarUDFImpl for ConstantsAcross {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn signature(&self) -> &Signature {
        self.0.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.0.return_type(args)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.0.return_field_from_args(args)
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        for arg in args.args.iter_mut().skip(1) {
            if let ColumnarValue::Array(values) = arg {
                if let Some(one) = the_one_value(values)? {
                    *arg = ColumnarValue::Scalar(one);
                }
            }
        }
        self.0.invoke_with_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.0.documentation()
    }
}

/// The value every row of `values` holds, if they all hold the same non-null one.
fn the_one_value(values: &datafusion::arrow::array::ArrayRef) -> Result<Option<ScalarValue>> {
    if values.is_empty() || values.null_count() > 0 {
        return Ok(None);
    }
    let first = ScalarValue::try_from_array(values, 0)?;
    let same = not_distinct(values, &first.to_scalar()?)?;
    Ok((same.true_count() == values.len()).then_some(first))
}

/// A tokq table function (`read_jsonl`...) as datafusion-python takes it
/// (`__datafusion_table_function__`).
#[pyclass(module = "tokq._native", frozen)]
pub struct TableFunction {
    #[pyo3(get)]
    name: String,
    function: Arc<dyn TableFunctionImpl>,
}

#[pymethods]
impl TableFunction {
    fn __datafusion_table_function__<'py>(&self, py: Python<'py>, session: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec(session)?;
        let function = FFI_TableFunction::new_with_ffi_codec(Arc::clone(&self.function), Some(crate::wait::runtime().handle().clone()), codec);
        PyCapsule::new_with_value(py, function, c"datafusion_table_function")
    }
}

/// The session's logical extension codec, which carries a table function's arguments across.
fn logical_codec(session: Bound<'_, PyAny>) -> PyResult<datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec> {
    let capsule = session.call_method0("__datafusion_logical_extension_codec__")?;
    let capsule: &Bound<'_, PyCapsule> = capsule.cast()?;
    let codec = capsule.pointer_checked(Some(c"datafusion_logical_extension_codec"))?.cast::<datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec>();
    // SAFETY: a capsule of that name holds an FFI_LogicalExtensionCodec, cloned out of it.
    Ok(unsafe { codec.as_ref() }.clone())
}

/// Every tokq scalar function.
#[pyfunction]
pub fn scalar_functions() -> Vec<ScalarFunction> {
    tokq_core::load::set_loader(tokq_engine::store::LOADER);
    tokq_udfs::scalar_udfs().into_iter().map(|udf| ScalarFunction { udf }).collect()
}

/// Every tokq table function.
#[pyfunction]
pub fn table_functions() -> Vec<TableFunction> {
    tokq_engine::functions::table_functions().into_iter().map(|t| TableFunction { name: t.name.to_string(), function: t.function }).collect()
}
