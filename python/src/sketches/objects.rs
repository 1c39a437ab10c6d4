//! Sketches in and out of Python: many texts or token lists sketched at once, a stored
//! sketch as its class's object, and any sketch object's signature.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyModule;
use sketchdb::{Sketch, SketchKind, Sketcher, Tokenizer};

use super::{Core, PyBBitMinHash, PyMinHash, PyOph, PySimHash};
use crate::bulk::{Items, sketch_items};

/// Texts or token lists sketched on all cores with the GIL released. Each item is a `str`
/// (text, cut by `tokenizer`) or an iterable of tokens; items are read while the ones before
/// them are sketched (`crate::bulk`).
pub(crate) fn bulk_sketch(
    py: Python<'_>,
    sketcher: &Sketcher,
    tokenizer: &Tokenizer,
    items: &Bound<'_, PyAny>,
) -> PyResult<Vec<Sketch>> {
    let items = Items::of(items)?;
    let mut out: Vec<Option<Sketch>> = (0..items.len()).map(|_| None).collect();
    sketch_items(py, &items, sketcher, tokenizer, &mut out, 1, |s, o| {
        o[0] = Some(s);
        Ok(())
    })?;
    out.into_iter().map(|s| s.ok_or_else(|| PyValueError::new_err("an item was not sketched"))).collect()
}

/// The interpreter's cyclic garbage collector held off while a batch of sketch objects is
/// made (re-enabled on drop, if it was enabled). Sketch objects are tracked by it, so
/// making 100,000 of them would run dozens of collections, the full ones walking every
/// object of the process, the caller's input included (17% of `OPH.bulk`'s CPU in a `perf`
/// profile). The GIL is held throughout, so no other thread sees it off.
pub(crate) struct GcPause<'py> {
    gc: Option<Bound<'py, PyModule>>,
}

impl<'py> GcPause<'py> {
    pub(crate) fn new(py: Python<'py>) -> PyResult<Self> {
        let gc = py.import("gc")?;
        if !gc.call_method0("isenabled")?.is_truthy()? {
            return Ok(GcPause { gc: None });
        }
        gc.call_method0("disable")?;
        Ok(GcPause { gc: Some(gc) })
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        if let Some(gc) = &self.gc
            && let Err(e) = gc.call_method0("enable")
        {
            e.write_unraisable(gc.py(), None);
        }
    }
}

/// The Python object of a sketch, of its kind's class.
pub(crate) fn to_py(py: Python<'_>, sketch: Sketch, tokenizer: Tokenizer) -> PyResult<Py<PyAny>> {
    let core = Core::frozen(sketch, tokenizer);
    Ok(match core.params.kind() {
        SketchKind::MinHash => Py::new(py, PyMinHash::wrap(core))?.into_any(),
        SketchKind::BBitMinHash => Py::new(py, PyBBitMinHash::wrap(core))?.into_any(),
        SketchKind::Oph => Py::new(py, PyOph::wrap(core))?.into_any(),
        _ => Py::new(py, PySimHash::wrap(core))?.into_any(),
    })
}

/// The signature of any sketch object (a `TypeError` for anything else).
pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Sketch> {
    if let Ok(s) = obj.cast::<PyMinHash>() {
        return s.get().core.read().sketch().cloned();
    }
    if let Ok(s) = obj.cast::<PyBBitMinHash>() {
        return s.get().core.read().sketch().cloned();
    }
    if let Ok(s) = obj.cast::<PyOph>() {
        return s.get().core.read().sketch().cloned();
    }
    if let Ok(s) = obj.cast::<PySimHash>() {
        return s.get().core.read().sketch().cloned();
    }
    Err(PyTypeError::new_err(format!(
        "expected a MinHash, BBitMinHash, OPH or SimHash sketch, not {}",
        obj.get_type().name()?
    )))
}
