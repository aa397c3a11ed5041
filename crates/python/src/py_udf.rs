//! Python functions as SQL functions: `@tokq.udf(return_type=...)` registers a function over
//! pyarrow arrays, called once per batch with the GIL held only for the call.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrow_c;

/// A Python function over pyarrow arrays.
#[derive(Debug)]
pub struct PythonUdf {
    name: String,
    func: Py<PyAny>,
    return_type: DataType,
    signature: Signature,
}

// Two registrations are the same function when they have the same name and Python object.
impl PartialEq for PythonUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.func.as_ptr() == other.func.as_ptr()
    }
}
impl Eq for PythonUdf {}
impl Hash for PythonUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        (self.func.as_ptr() as usize).hash(state);
    }
}

impl ScalarUDFImpl for PythonUdf {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = args.args.iter().map(|a| a.to_array(rows)).collect::<Result<Vec<_>>>()?;
        let fail = |e: PyErr| DataFusionError::Execution(format!("Python UDF '{}': {e}", self.name));
        let out = Python::attach(|py| -> PyResult<_> {
            let inputs = arrays.iter().map(|a| arrow_c::to_pyarrow(py, a)).collect::<PyResult<Vec<_>>>()?;
            let result = self.func.bind(py).call1(PyTuple::new(py, inputs)?)?;
            arrow_c::from_python(&result)
        })
        .map_err(fail)?;
        if out.len() != rows {
            return Err(DataFusionError::Execution(format!("Python UDF '{}' returned {} values for a batch of {rows} rows: return one value per row", self.name, out.len())));
        }
        // Arrow has several layouts of one kind of value (DataFusion's strings are Utf8View, a
        // pyarrow.string() is Utf8): a function that returns its input's layout gets the declared
        // one. The cast fails, never turns a value into NULL, where a value does not fit.
        let out = if out.data_type() == &self.return_type {
            out
        } else {
            let strict = CastOptions { safe: false, ..Default::default() };
            cast_with_options(&out, &self.return_type, &strict).map_err(|e| {
                DataFusionError::Execution(format!(
                    "Python UDF '{}' returned {} but was registered with return_type {} ({e}): return that type (pyarrow.array(..., type=...))",
                    self.name,
                    out.data_type(),
                    self.return_type
                ))
            })?
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// The Python UDFs registered in this process, added to every context tokq makes here.
fn registered() -> &'static Mutex<Vec<Arc<ScalarUDF>>> {
    static UDFS: Mutex<Vec<Arc<ScalarUDF>>> = Mutex::new(Vec::new());
    &UDFS
}

/// Registers `func` as the SQL function `name`, replacing one of the same name.
#[pyfunction]
pub fn register_udf(name: String, func: Bound<'_, PyAny>, return_type: Bound<'_, PyAny>) -> PyResult<()> {
    if !func.is_callable() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("tokq.udf: {} is not callable", func.repr()?)));
    }
    let udf = PythonUdf {
        name: name.to_lowercase(),
        func: func.unbind(),
        return_type: arrow_c::data_type(&return_type)?,
        // Any arguments; tokq treats the function as pure (same arguments, same result).
        signature: Signature::variadic_any(Volatility::Immutable),
    };
    let mut udfs = registered().lock().unwrap_or_else(|p| p.into_inner());
    udfs.retain(|u| u.name() != udf.name);
    udfs.push(Arc::new(ScalarUDF::new_from_impl(udf)));
    Ok(())
}

/// Adds every registered Python UDF to a context.
pub fn add_to(ctx: &SessionContext) {
    for udf in registered().lock().unwrap_or_else(|p| p.into_inner()).iter() {
        ctx.register_udf(udf.as_ref().clone());
    }
}

/// The first registered Python UDF that `sql` calls, if any: such a statement cannot run on a
/// cluster, whose executors are other processes without this Python.
pub fn called_in(sql: &str) -> Option<String> {
    let udfs = registered().lock().unwrap_or_else(|p| p.into_inner());
    if udfs.is_empty() {
        return None;
    }
    let called = tokq_engine::recipe::called_functions(sql);
    called.iter().find_map(|c| udfs.iter().find(|u| u.name().eq_ignore_ascii_case(c))).map(|u| u.name().to_string())
}
