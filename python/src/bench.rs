//! Timing hooks for `python/bench/bench_compare.py`: the same work as a binding call, run
//! inside Rust with no Python in the loop, so the bench can subtract it from the Python
//! call's time and report what the binding itself costs. Not part of the public API (the
//! names start with `_`).

use std::time::Instant;

use pyo3::prelude::*;
use sketchdb::{QueryKind, QueryOptions};

use crate::collection::PyCollection;
use crate::convert;
use crate::errors::IntoPy;

/// Runs `Collection::query_key` for each key in turn, one at a time (a read snapshot each,
/// as `Collection.query(key=)` does), with the GIL released; returns the wall seconds of the
/// whole loop and the number of hits found.
#[pyfunction]
#[pyo3(signature = (collection, keys, threshold, level = 0.95))]
pub(crate) fn _time_query_keys(
    py: Python<'_>,
    collection: &PyCollection,
    keys: Vec<Bound<'_, PyAny>>,
    threshold: f64,
    level: f64,
) -> PyResult<(f64, usize)> {
    let coll = collection.handle()?;
    let keys = keys.iter().map(convert::key).collect::<PyResult<Vec<_>>>()?;
    let options = QueryOptions { level, ..QueryOptions::default() };
    py.detach(|| -> sketchdb::Result<(f64, usize)> {
        let start = Instant::now();
        let mut hits = 0;
        for k in &keys {
            hits += coll.query_key(k, QueryKind::Threshold(threshold), options)?.hits.len();
        }
        Ok((start.elapsed().as_secs_f64(), hits))
    })
    .py_err()
}
