//! The Arrow C data interface through the PyCapsule protocol (`__arrow_c_array__`): arrays
//! in from any producer (pyarrow, polars, arro3, ...) without a copy, arrays out to any
//! consumer. This file holds the binding's only `unsafe` code: reading the two C structs
//! a producer's capsules point to.
//!
//! Why not `arrow-pyarrow`: its releases follow the `arrow` crates' train and pin a PyO3
//! minor version (60.x needs PyO3 0.29), while this binding and the `numpy` crate are on PyO3
//! 0.30; `pyo3-arrow` lags further (PyO3 0.28). The capsule protocol needs neither, and does
//! not need pyarrow at all on the Rust side.

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi, to_ffi};
use arrow_array::{Array, ArrayRef, make_array};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods, PyTuple};

const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";

/// An Arrow error as a Python `ValueError` naming `what`.
pub(crate) fn arrow_err(what: &str) -> impl Fn(arrow_schema::ArrowError) -> PyErr + '_ {
    move |e| PyValueError::new_err(format!("{what}: {e}"))
}

/// Imports one array from an object with `__arrow_c_array__` (no copy: the buffers stay the
/// producer's, released when the last reference here drops; a pyarrow dictionary array is
/// decoded into a new array first).
pub(crate) fn import_array(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<ArrayRef> {
    // A pyarrow dictionary array (a pandas categorical, a dictionary-encoded Parquet column)
    // is read as its values, decoded by pyarrow.
    let decoded;
    let obj = if obj.hasattr("dictionary_decode")? {
        decoded = obj.call_method0("dictionary_decode")?;
        &decoded
    } else {
        obj
    };
    if !obj.hasattr("__arrow_c_array__")? {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected an Arrow array (an object with __arrow_c_array__, e.g. pyarrow.Array), not {}",
            obj.get_type().name()?
        )));
    }
    let pair = obj.call_method0("__arrow_c_array__")?;
    let pair = pair.cast::<PyTuple>()?;
    let schema = pair.get_item(0)?;
    let array = pair.get_item(1)?;
    let schema = schema.cast::<PyCapsule>()?;
    let array = array.cast::<PyCapsule>()?;
    let schema_ptr = schema.pointer_checked(Some(SCHEMA))?;
    let array_ptr = array.pointer_checked(Some(ARRAY))?;
    // SAFETY: by the PyCapsule protocol an `arrow_array` capsule points to a valid, live
    // ArrowArray struct and an `arrow_schema` capsule to a valid ArrowSchema, both alive as long
    // as the capsules (held here). `from_raw` moves the array struct out and leaves a released
    // one behind, so the capsule's destructor releases nothing and the imported buffers are
    // released exactly once, by `FFI_ArrowArray`'s drop. The schema is only borrowed.
    let data = unsafe {
        let array = FFI_ArrowArray::from_raw(array_ptr.cast::<FFI_ArrowArray>().as_ptr());
        let schema = &*schema_ptr.cast::<FFI_ArrowSchema>().as_ptr();
        from_ffi(array, schema)
    }
    .map_err(arrow_err(what))?;
    Ok(make_array(data))
}

/// The chunks of an Arrow array or chunked array, or `None` for any other object (a NumPy
/// array, a list, a generator).
pub(crate) fn arrow_chunks(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<Vec<arrow_array::ArrayRef>>> {
    if obj.hasattr("__arrow_c_array__")? {
        return Ok(Some(vec![import_array(obj, what)?]));
    }
    // A pyarrow ChunkedArray: its chunks, each through the capsule protocol.
    if obj.hasattr("__arrow_c_stream__")? && obj.hasattr("chunks")? {
        return Ok(Some(import_chunks(&obj.getattr("chunks")?, what)?));
    }
    Ok(None)
}

/// The arrays of a Python list of Arrow arrays (the chunks of a chunked array).
pub(crate) fn import_chunks(chunks: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<ArrayRef>> {
    chunks.try_iter()?.map(|c| import_array(&c?, what)).collect()
}

/// An array on its way out: Python reads it through `__arrow_c_array__` (any number of
/// times; each call exports the same buffers afresh).
#[pyclass(name = "_ArrowArray", module = "sketchdb._sketchdb", frozen)]
pub(crate) struct ArrowExport {
    array: ArrayRef,
}

impl ArrowExport {
    pub(crate) fn new(array: ArrayRef) -> Self {
        ArrowExport { array }
    }
}

#[pymethods]
impl ArrowExport {
    /// The PyCapsule protocol's export: `(schema capsule, array capsule)`. A requested schema
    /// is ignored (the type is fixed by the kernel that made the array).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let (array, schema) = to_ffi(&self.array.to_data()).map_err(arrow_err("export"))?;
        // Each capsule owns its struct; dropping a struct a consumer did not move out
        // releases it (the protocol's rule for capsule destructors).
        let schema = PyCapsule::new_with_value(py, schema, SCHEMA)?;
        let array = PyCapsule::new_with_value(py, array, ARRAY)?;
        Ok((schema, array))
    }

    fn __len__(&self) -> usize {
        self.array.len()
    }
}
