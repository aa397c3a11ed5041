//! Arrow data between tokq and Python through the Arrow C data and stream interfaces (the
//! `__arrow_c_array__` / `__arrow_c_stream__` PyCapsule protocol that pyarrow, Polars and DuckDB
//! speak). Buffers are handed over, never copied: pyarrow's arrays point at the memory tokq
//! allocated and release it through the interface's callbacks.

use std::sync::Mutex;

use arrow::array::{make_array, ArrayRef, RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// A stream of record batches that Python takes once: `pyarrow.RecordBatchReader.from_stream`,
/// `pyarrow.table`, `polars.from_arrow` and DuckDB read it.
#[pyclass(module = "tokq._native", frozen)]
pub struct ArrowStream {
    stream: Mutex<Option<FFI_ArrowArrayStream>>,
}

impl ArrowStream {
    /// Batches already in memory.
    pub fn collected(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self::of(Box::new(RecordBatchIterator::new(batches.into_iter().map(Ok), schema)))
    }

    /// A query's batches, computed as Python asks for each (pyarrow asks without the GIL).
    pub fn live(stream: SendableRecordBatchStream) -> Self {
        Self::of(Box::new(Live { schema: stream.schema(), stream }))
    }

    fn of(reader: Box<dyn RecordBatchReader + Send>) -> Self {
        Self { stream: Mutex::new(Some(FFI_ArrowArrayStream::new(reader))) }
    }
}

#[pymethods]
impl ArrowStream {
    /// The stream as a capsule named `arrow_array_stream`; a stream is read once.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // tokq's types are what they are; pyarrow casts if it must.
        let stream = self.stream.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or_else(|| PyValueError::new_err("this result was read already: a tokq result stream is read once"))?;
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

/// A DataFusion stream read batch by batch on tokq's runtime.
struct Live {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
}

impl Iterator for Live {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = crate::wait::runtime().block_on(self.stream.next())?;
        Some(next.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for Live {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// One array, handed to Python as `__arrow_c_array__` capsules.
#[pyclass(module = "tokq._native", frozen)]
pub struct ArrowArray {
    array: Mutex<Option<(FFI_ArrowSchema, FFI_ArrowArray)>>,
}

#[pymethods]
impl ArrowArray {
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let (schema, array) = self.array.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or_else(|| PyValueError::new_err("this array was read already"))?;
        Ok((PyCapsule::new_with_value(py, schema, c"arrow_schema")?, PyCapsule::new_with_value(py, array, c"arrow_array")?))
    }
}

/// `array` as a `pyarrow.Array` sharing its buffers.
pub fn to_pyarrow<'py>(py: Python<'py>, array: &ArrayRef) -> PyResult<Bound<'py, PyAny>> {
    let (ffi_array, ffi_schema) = to_ffi(&array.to_data()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let handle = Bound::new(py, ArrowArray { array: Mutex::new(Some((ffi_schema, ffi_array))) })?;
    py.import("pyarrow")?.getattr("array")?.call1((handle,))
}

/// An array from anything that speaks `__arrow_c_array__` (a pyarrow Array, a Polars Series...);
/// anything else goes through `pyarrow.array()` first (a list, a NumPy array).
pub fn from_python(value: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let value = if value.hasattr("__arrow_c_array__")? { value.clone() } else { value.py().import("pyarrow")?.getattr("array")?.call1((value,))? };
    let pair = value.call_method0("__arrow_c_array__")?;
    let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = pair.extract()?;
    let schema = schema.pointer_checked(Some(c"arrow_schema"))?.cast::<FFI_ArrowSchema>();
    let array = array.pointer_checked(Some(c"arrow_array"))?.cast::<FFI_ArrowArray>();
    // SAFETY: the capsules hold an ArrowSchema and an ArrowArray (their names say so); the array
    // is moved out of its capsule (its release set to null there), the schema only read.
    let data = unsafe { from_ffi(FFI_ArrowArray::from_raw(array.as_ptr()), schema.as_ref()) }.map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(make_array(data))
}

/// A pyarrow type (anything with `__arrow_c_schema__`) as an Arrow type.
pub fn data_type(value: &Bound<'_, PyAny>) -> PyResult<DataType> {
    if !value.hasattr("__arrow_c_schema__")? {
        return Err(PyTypeError::new_err(format!("return_type must be a pyarrow type such as pyarrow.int64(), not {}", value.repr()?)));
    }
    let capsule = value.call_method0("__arrow_c_schema__")?;
    let capsule: &Bound<'_, PyCapsule> = capsule.cast()?;
    let schema = capsule.pointer_checked(Some(c"arrow_schema"))?.cast::<FFI_ArrowSchema>();
    // SAFETY: a capsule named arrow_schema holds an ArrowSchema, read in place.
    DataType::try_from(unsafe { schema.as_ref() }).map_err(|e| PyValueError::new_err(e.to_string()))
}
