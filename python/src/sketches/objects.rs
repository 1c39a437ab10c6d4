//! Sketches in and out of Python: many texts or token lists sketched at once, a stored
//! sketch as its class's object, and any sketch object's signature.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use sketchdb::{Sketch, SketchKind, Sketcher, Tokenizer};

use super::{Core, PyBBitMinHash, PyMinHash, PyOph, PySimHash};
use crate::convert;

/// Texts or token lists sketched on all cores with the GIL released. Each item is a `str`
/// (text, cut by `tokenizer`) or an iterable of tokens.
pub(crate) fn bulk_sketch(
    py: Python<'_>,
    sketcher: &Sketcher,
    tokenizer: &Tokenizer,
    items: &Bound<'_, PyAny>,
) -> PyResult<Vec<Sketch>> {
    enum Item {
        Text(String),
        Tokens(Vec<u64>),
    }
    let mut inputs = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        let item = item?;
        if let Ok(s) = item.cast::<pyo3::types::PyString>() {
            inputs.push(Item::Text(s.to_cow()?.into_owned()));
        } else {
            inputs.push(Item::Tokens(convert::tokens(&item, tokenizer.seed())?));
        }
    }
    let results: Vec<_> = py.detach(|| {
        inputs
            .par_iter()
            .map(|i| match i {
                Item::Text(t) => sketcher.sketch_text(tokenizer, t),
                Item::Tokens(t) => sketcher.sketch_multiset(t),
            })
            .collect()
    });
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.map_err(|e| PyValueError::new_err(format!("item {i}: {e}"))))
        .collect()
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
