//! The Arrow kernels behind `sketchdb.arrow`: `sketch`, `sketch_tokens`, `band_keys` and
//! `estimate` over Arrow arrays, all cores, the GIL released while they run. The Python
//! module `sketchdb/arrow.py` documents them and turns their output into pyarrow objects;
//! here each takes a list of arrays (a chunked array's chunks, in order) and returns one
//! array through the C data interface ([`ffi`]).

pub(crate) mod ffi;
mod kernels;

use std::borrow::Cow;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use sketchdb::lsh::index_band_scheme;
use sketchdb::{Sketch, SketchKind, SketchParams, Sketcher, TokenSet, signature};

use crate::convert;
use crate::errors::{sketch_to_py, to_py};
use ffi::{ArrowExport, import_chunks};
pub(crate) use kernels::{OnError, TokenRows, signature_rows, text_rows};

/// The parameters named by a kernel's keyword arguments.
fn params(
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    recipe: Option<&str>,
    family: Option<&str>,
) -> PyResult<SketchParams> {
    Ok(convert::config(convert::kind(kind)?, k, bits, seed, recipe, None, None, 0, family)?.0)
}

pub(crate) fn on_error(name: &str) -> PyResult<OnError> {
    match name {
        "raise" => Ok(OnError::Raise),
        "null" => Ok(OnError::Null),
        other => Err(PyValueError::new_err(format!("on_error must be \"raise\" or \"null\", not {other:?}"))),
    }
}

/// A row error as a `ValueError` naming the row.
fn row_err((row, msg): kernels::RowError) -> PyErr {
    PyValueError::new_err(format!("row {row}: {msg}"))
}

fn bad(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}

/// Signatures of texts (see `sketchdb.arrow.sketch`).
#[pyfunction]
#[pyo3(signature = (chunks, kind, k, bits, seed, shingle, ngram, token_seed, on_error, recipe = None, family = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn arrow_sketch(
    py: Python<'_>,
    chunks: &Bound<'_, PyAny>,
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    shingle: Option<u32>,
    ngram: Option<u32>,
    token_seed: u64,
    on_error: &str,
    recipe: Option<&str>,
    family: Option<&str>,
) -> PyResult<ArrowExport> {
    let (params, tokenizer) =
        convert::config(convert::kind(kind)?, k, bits, seed, recipe, shingle, ngram, token_seed, family)?;
    let arrays = import_chunks(chunks, "texts")?;
    let rows = text_rows(&arrays).map_err(PyTypeError::new_err)?;
    sketch_export(py, &params, &rows, on_error, |s, t| s.sketch_text(&tokenizer, t).map_err(|e| e.to_string()))
}

/// Signatures of token lists (see `sketchdb.arrow.sketch_tokens`).
#[pyfunction]
#[pyo3(signature = (chunks, kind, k, bits, seed, token_seed, on_error, recipe = None, family = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn arrow_sketch_tokens(
    py: Python<'_>,
    chunks: &Bound<'_, PyAny>,
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    token_seed: u64,
    on_error: &str,
    recipe: Option<&str>,
    family: Option<&str>,
) -> PyResult<ArrowExport> {
    let params = params(kind, k, bits, seed, recipe, family)?;
    let arrays = import_chunks(chunks, "tokens")?;
    let rows = TokenRows::new(&arrays).map_err(PyTypeError::new_err)?;
    let sets = params.kind() != SketchKind::SimHash;
    sketch_export(py, &params, rows.rows(), on_error, |s, &r| {
        match rows.tokens(r, token_seed)? {
            // Hashed string tokens are already a fresh vector: made a set in place, not copied
            // again (a set sketch of a multiset is the sketch of its distinct tokens).
            Cow::Owned(v) if sets => s.sketch(&TokenSet::from_unsorted(v)),
            t => s.sketch_multiset(&t),
        }
        .map_err(|e| e.to_string())
    })
}

/// The signatures of `rows` (a null row stays null), each made by `sketch_one` on all cores
/// with the GIL released, as one Arrow array; `on_error` says what a failing row does.
fn sketch_export<T: Sync>(
    py: Python<'_>,
    params: &SketchParams,
    rows: &[Option<T>],
    on_error: &str,
    sketch_one: impl Fn(&Sketcher, &T) -> Result<Sketch, String> + Sync,
) -> PyResult<ArrowExport> {
    let mode = self::on_error(on_error)?;
    let sketcher = Sketcher::new(*params).map_err(sketch_to_py)?;
    let out = py.detach(|| kernels::sketch_rows(params, rows, mode, |r| sketch_one(&sketcher, r)));
    Ok(ArrowExport::new(out.map_err(row_err)?))
}

/// Band keys of signatures (see `sketchdb.arrow.band_keys`).
#[pyfunction]
#[pyo3(signature = (chunks, kind, k, bits, seed, threshold, bands, rows, signed, recipe = None, key_bits = 32, family = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn arrow_band_keys(
    py: Python<'_>,
    chunks: &Bound<'_, PyAny>,
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    threshold: Option<f64>,
    bands: Option<u32>,
    rows: Option<u32>,
    signed: bool,
    recipe: Option<&str>,
    key_bits: u32,
    family: Option<&str>,
) -> PyResult<ArrowExport> {
    let params = params(kind, k, bits, seed, recipe, family)?;
    let threshold = match (threshold, bands, rows) {
        (Some(t), ..) => t,
        // Both given: the threshold does not enter the banding (any valid value will do).
        (None, Some(_), Some(_)) => 0.5,
        _ => return Err(bad("give threshold= (the index's banding for it) or both bands= and rows=".into())),
    };
    let mut scheme = index_band_scheme(&params, threshold, bands, rows).map_err(|e| to_py(e.into()))?;
    match key_bits {
        32 => {}
        // Band hash version 1 keeps all 64 bits of each band's XXH3 hash (`sketchdb::lsh`'s
        // band-key specification): for engines that bucket on the keys themselves.
        64 => scheme.version = 1,
        other => return Err(bad(format!("key_bits must be 32 (the index's keys) or 64, not {other}"))),
    }
    let arrays = import_chunks(chunks, "signatures")?;
    let width = signature::width(&params);
    let sigs = signature_rows(&arrays, width).map_err(bad)?;
    let out = py.detach(|| kernels::band_key_rows(&params, &scheme, &sigs, signed));
    Ok(ArrowExport::new(out.map_err(row_err)?))
}

/// Pairwise estimates of two signature arrays (see `sketchdb.arrow.estimate`).
#[pyfunction]
#[pyo3(signature = (a, b, kind, k, bits, seed, level, recipe = None, family = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn arrow_estimate(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    level: f64,
    recipe: Option<&str>,
    family: Option<&str>,
) -> PyResult<ArrowExport> {
    let params = params(kind, k, bits, seed, recipe, family)?;
    let xs = import_chunks(a, "a")?;
    let ys = import_chunks(b, "b")?;
    let width = signature::width(&params);
    let x = signature_rows(&xs, width).map_err(|e| bad(format!("a: {e}")))?;
    let y = signature_rows(&ys, width).map_err(|e| bad(format!("b: {e}")))?;
    if x.len() != y.len() {
        return Err(bad(format!("a has {} rows but b has {}", x.len(), y.len())));
    }
    let out = py.detach(|| kernels::estimate_rows(&params, &x, &y, level));
    Ok(ArrowExport::new(out.map_err(row_err)?))
}

/// The byte width of one signature of these parameters.
#[pyfunction]
#[pyo3(signature = (kind, k, bits, seed, recipe = None, family = None))]
pub(crate) fn signature_width(
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    recipe: Option<&str>,
    family: Option<&str>,
) -> PyResult<usize> {
    Ok(signature::width(&params(kind, k, bits, seed, recipe, family)?))
}

/// Registers the kernels on the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowExport>()?;
    m.add_function(wrap_pyfunction!(arrow_sketch, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_sketch_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(signature_width, m)?)?;
    Ok(())
}
