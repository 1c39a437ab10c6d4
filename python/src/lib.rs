//! `sketchdb._sketchdb`: the compiled half of the `sketchdb` Python package, over the
//! `sketchdb` crate's public API. The Python half (`sketchdb/__init__.py`) re-exports it and
//! defines the exception classes this module raises.

mod arrow;
mod bench;
mod bulk;
mod collection;
mod convert;
mod database;
mod errors;
mod kwargs;
mod sketches;

use pyo3::prelude::*;

/// Hashes one token (`str` as UTF-8, `bytes`) with xxh3-64 and `seed`, as the tokenizer
/// hashes shingles and as `update` hashes tokens; an `int` is returned unchanged.
#[pyfunction]
#[pyo3(signature = (token, seed = sketchdb::recipes::DEFAULT_TOKEN_SEED))]
fn token_hash(token: &Bound<'_, PyAny>, seed: u64) -> PyResult<u64> {
    convert::token(token, seed)
}

/// Every token hash of `text` under the tokenizer (word shingles, or `ngram` characters).
#[pyfunction]
#[pyo3(signature = (text, *, shingle = None, ngram = None, token_seed = sketchdb::recipes::DEFAULT_TOKEN_SEED))]
fn tokenize(text: &str, shingle: Option<u32>, ngram: Option<u32>, token_seed: u64) -> PyResult<Vec<u64>> {
    Ok(convert::tokenizer(shingle, ngram, token_seed)?.tokens(text))
}

#[pymodule]
fn _sketchdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<sketches::PyEstimate>()?;
    m.add_class::<sketches::PyMinHash>()?;
    m.add_class::<sketches::PyBBitMinHash>()?;
    m.add_class::<sketches::PyOph>()?;
    m.add_class::<sketches::PySimHash>()?;
    m.add_class::<database::PyDatabase>()?;
    m.add_class::<collection::PyCollection>()?;
    m.add_class::<collection::PyHit>()?;
    m.add_class::<collection::PyCluster>()?;
    m.add_class::<collection::PyDedupResult>()?;
    m.add_class::<collection::PyInsertReport>()?;
    m.add_class::<collection::PyReject>()?;
    m.add_function(wrap_pyfunction!(database::open, m)?)?;
    arrow::register(m)?;
    m.add_function(wrap_pyfunction!(token_hash, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(bulk::sketch_many, m)?)?;
    m.add_function(wrap_pyfunction!(bench::_time_query_keys, m)?)?;
    m.add("DEFAULT_SEED", sketchdb::recipes::DEFAULT_SEED)?;
    m.add("MAX_KEY_LEN", sketchdb::MAX_KEY_LEN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
