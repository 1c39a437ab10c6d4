//! Sketches in and out of Python: many texts or token lists sketched at once, a stored
//! sketch as its class's object, and any sketch object's signature.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
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
