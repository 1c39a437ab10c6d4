//! The result types of collection calls: `Hit`, `Cluster`, `DedupResult`, and
//! `insert_many`'s `InsertReport` of `Reject`s.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sketchdb::{Clustering, Collection, CollectionStats, DedupResult, IndexSummary};

use crate::convert;

/// One query result. It keeps the library's hit as it came back (the key's bytes are not
/// copied): the attributes are made when read, so a query's result list costs one object
/// per hit.
#[pyclass(name = "Hit", module = "sketchdb._sketchdb", frozen)]
pub(crate) struct PyHit(sketchdb::Hit);

#[pymethods]
impl PyHit {
    /// The record's key (`str` when UTF-8, else `bytes`).
    #[getter]
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::key_to_py(py, &self.0.key)
    }
    /// Its row id.
    #[getter]
    fn row_id(&self) -> u64 {
        self.0.row_id
    }
    /// The similarity estimate (for Hamming queries, the exact distance).
    #[getter]
    fn estimate(&self) -> f64 {
        self.0.estimate.value
    }
    /// The interval's lower end.
    #[getter]
    fn lower(&self) -> f64 {
        self.0.estimate.lower
    }
    /// The interval's upper end.
    #[getter]
    fn upper(&self) -> f64 {
        self.0.estimate.upper
    }
    /// The interval's confidence level.
    #[getter]
    fn level(&self) -> f64 {
        self.0.estimate.level
    }
    /// The exact Hamming distance (SimHash collections), else None.
    #[getter]
    fn distance(&self) -> Option<u32> {
        self.0.distance
    }
    /// The exact Jaccard over the stored shingle sets, on a collection created with
    /// `exact_shingles=True` when the question came from text, tokens or a stored key
    /// (such hits are kept and ordered by it), else None.
    #[getter]
    fn exact(&self) -> Option<f64> {
        self.0.exact
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let h = &self.0;
        Ok(format!(
            "Hit(key={}, estimate={:.6}, lower={:.6}, upper={:.6}, distance={:?}, exact={})",
            self.key(py)?.bind(py).repr()?,
            h.estimate.value,
            h.estimate.lower,
            h.estimate.upper,
            h.distance,
            h.exact.map_or_else(|| "None".to_string(), |x| format!("{x:.6}"))
        ))
    }
}

/// A group of near-duplicates.
#[pyclass(name = "Cluster", module = "sketchdb._sketchdb", frozen, get_all)]
pub(crate) struct PyCluster {
    /// Keys, in row order.
    pub(super) keys: Vec<Py<PyAny>>,
    /// Row ids, ascending.
    pub(super) rows: Vec<u64>,
    /// Representative clustering: the key every other member is a verified pair with (one
    /// of `keys`). None for connected components.
    pub(super) representative: Option<Py<PyAny>>,
}

#[pymethods]
impl PyCluster {
    fn __len__(&self) -> usize {
        self.rows.len()
    }
    fn __repr__(&self) -> String {
        format!("Cluster({} records)", self.rows.len())
    }
}

/// The result of `dedup`: clusters of two or more records, largest first.
#[pyclass(name = "DedupResult", module = "sketchdb._sketchdb", frozen, get_all)]
pub(crate) struct PyDedupResult {
    /// The clusters.
    pub(super) clusters: Vec<Py<PyCluster>>,
    /// How verified pairs formed them: `components` or `representative`.
    pub(super) clustering: String,
    /// Verified pairs found.
    pub(super) pairs: u64,
    /// Candidate pairs the plan proposed and verified (what `pairs` was kept from).
    pub(super) candidates: u64,
    /// The plan that ran (None for an empty collection).
    pub(super) plan: Option<String>,
    /// Why the planner chose it.
    pub(super) reason: String,
    /// Where the join's time went, wall-clock seconds by stage: `load` (reading and decoding
    /// the records), `keys` (band keys of an in-memory banding), `pairs` (finding and
    /// verifying candidate pairs), `cluster` (grouping them).
    pub(super) stages: std::collections::BTreeMap<String, f64>,
}

#[pymethods]
impl PyDedupResult {
    fn __len__(&self) -> usize {
        self.clusters.len()
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let list = pyo3::types::PyList::new(py, self.clusters.iter().map(|c| c.clone_ref(py)))?;
        Ok(list.try_iter()?.into_any().unbind())
    }
    fn __repr__(&self) -> String {
        format!("DedupResult({} clusters, {} pairs)", self.clusters.len(), self.pairs)
    }
}

/// The Python result of a dedup clustered by `clustering`.
pub(super) fn dedup_result(py: Python<'_>, r: DedupResult, clustering: Clustering) -> PyResult<PyDedupResult> {
    let clusters = r
        .clusters
        .into_iter()
        .map(|c| {
            let keys = c.keys.iter().map(|k| convert::key_to_py(py, k)).collect::<PyResult<_>>()?;
            let representative = c
                .representative
                .and_then(|row| c.rows.iter().position(|&x| x == row))
                .map(|i| convert::key_to_py(py, &c.keys[i]))
                .transpose()?;
            Py::new(py, PyCluster { keys, rows: c.rows, representative })
        })
        .collect::<PyResult<_>>()?;
    let s = r.stages;
    let stages = [("load", s.load), ("keys", s.keys), ("pairs", s.pairs), ("cluster", s.cluster)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Ok(PyDedupResult {
        clusters,
        clustering: clustering.name().to_string(),
        pairs: r.pairs,
        candidates: r.candidates,
        plan: r.plan.map(|p| p.to_string()),
        reason: r.reason,
        stages,
    })
}

/// `Collection.stats()`'s dict: counters, configuration and the index's summary.
pub(crate) fn stats_dict<'py>(py: Python<'py>, coll: &Collection, s: CollectionStats) -> PyResult<Bound<'py, PyDict>> {
    let p = coll.params();
    let d = PyDict::new(py);
    d.set_item("name", coll.name())?;
    d.set_item("kind", convert::kind_name(p.kind()))?;
    d.set_item("size", p.size())?;
    d.set_item("bits", p.bits())?;
    d.set_item("seed", p.seed())?;
    d.set_item("family", p.family().name())?;
    d.set_item("live", s.live)?;
    d.set_item("deleted", s.deleted)?;
    d.set_item("next_row", s.next_row)?;
    d.set_item("page_capacity", s.page_capacity)?;
    d.set_item("record_width", s.record_width)?;
    let index = PyDict::new(py);
    match s.index {
        Some(IndexSummary::Lsh { bands, rows, runs, band_hash, removed_rows, banding }) => {
            index.set_item("type", "lsh")?;
            index.set_item("bands", bands)?;
            index.set_item("rows", rows)?;
            index.set_item("runs", runs)?;
            index.set_item("band_hash", band_hash)?;
            index.set_item("removed_rows", removed_rows)?;
            index.set_item("banding", banding.map_or("given", |b| b.name()))?;
            d.set_item("index", index)?;
        }
        Some(IndexSummary::SimhashTables { tables, radius, runs }) => {
            index.set_item("type", "simhash_tables")?;
            index.set_item("tables", tables)?;
            index.set_item("radius", radius)?;
            index.set_item("runs", runs)?;
            d.set_item("index", index)?;
        }
        _ => d.set_item("index", py.None())?,
    }
    Ok(d)
}

/// A hit as Python sees it.
pub(super) fn hit(h: sketchdb::Hit) -> PyHit {
    PyHit(h)
}

/// One record left out of an `insert_many`, and why.
#[pyclass(name = "Reject", module = "sketchdb._sketchdb", frozen, get_all)]
pub(crate) struct PyReject {
    /// The record's position in the call's input (from 0).
    index: usize,
    /// Its key (`str`/`bytes`), or None when the key itself was unreadable.
    key: Option<Py<PyAny>>,
    /// The exception it would have raised (a `ValueError`, `TypeError` or `sketchdb.Error`).
    error: Py<PyAny>,
}

#[pymethods]
impl PyReject {
    fn __repr__(&self, py: Python<'_>) -> String {
        let key = self
            .key
            .as_ref()
            .map_or("None".to_string(), |k| k.bind(py).repr().map(|r| r.to_string()).unwrap_or_default());
        let err = self.error.bind(py).repr().map(|r| r.to_string()).unwrap_or_default();
        format!("Reject(index={}, key={key}, error={err})", self.index)
    }
}

/// What `insert_many` did: records written and records rejected.
#[pyclass(name = "InsertReport", module = "sketchdb._sketchdb", frozen, get_all)]
pub(crate) struct PyInsertReport {
    /// Records written (inserted or replaced) in the one commit.
    written: u64,
    /// The records left out, in input order (empty under `strict=True`, which raises instead).
    rejects: Vec<Py<PyReject>>,
}

#[pymethods]
impl PyInsertReport {
    /// `written`, so `int(report)` is the count of records written.
    fn __int__(&self) -> u64 {
        self.written
    }
    fn __repr__(&self) -> String {
        format!("InsertReport(written={}, rejects={})", self.written, self.rejects.len())
    }
}

/// `err` with "record {i}: " before its message, of the same exception class.
pub(super) fn at(py: Python<'_>, i: usize, err: &PyErr) -> PyErr {
    PyErr::from_type(err.get_type(py), format!("record {i}: {}", err.value(py)))
}

/// The report of `written` records and `rejects` (index, key, error); under `strict`, the
/// first reject raises instead, naming its record.
pub(super) fn report(
    py: Python<'_>,
    written: u64,
    mut rejects: Vec<(usize, Option<Vec<u8>>, PyErr)>,
    strict: bool,
) -> PyResult<PyInsertReport> {
    rejects.sort_by_key(|r| r.0);
    if strict && let Some((i, _, e)) = rejects.first() {
        return Err(at(py, *i, e));
    }
    let rejects = rejects
        .into_iter()
        .map(|(index, key, error)| {
            let key = key.map(|k| convert::key_to_py(py, &k)).transpose()?;
            Py::new(py, PyReject { index, key, error: error.into_value(py).into_any() })
        })
        .collect::<PyResult<_>>()?;
    Ok(PyInsertReport { written, rejects })
}
