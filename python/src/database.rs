//! `sketchdb.open` and the `Database` class.
//!
//! `close()` releases the file: the database handle and the handles of every collection
//! obtained from it are dropped (calls on them then raise `sketchdb.Error`); a call already
//! running keeps its own handle until it returns.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sketchdb::{CollectionConfig, Database, IndexConfig, admin, recipes::DEFAULT_SEED};

use crate::collection::{PyCollection, Slot};
use crate::convert;
use crate::errors::{Class, IntoPy, raise};

/// What a database object and its collections share.
pub(crate) struct Shared {
    db: RwLock<Option<Database>>,
    collections: Mutex<Vec<Weak<Slot>>>,
}

impl Shared {
    pub(crate) fn db(&self) -> PyResult<Database> {
        self.db.read().clone().ok_or_else(closed)
    }
}

pub(crate) fn closed() -> PyErr {
    raise(Class::Error, "the database is closed".to_string())
}

/// An open sketchdb database file.
#[pyclass(name = "Database", module = "sketchdb._sketchdb", frozen)]
pub(crate) struct PyDatabase {
    shared: Arc<Shared>,
    path: PathBuf,
}

impl PyDatabase {
    fn handle(&self, coll: sketchdb::Collection) -> PyCollection {
        let slot = Arc::new(Slot::new(coll));
        let mut list = self.shared.collections.lock();
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&slot));
        PyCollection::new(self.shared.clone(), slot)
    }
}

/// Opens the database at `path`. `create`: None opens the file or creates it when missing,
/// True creates it (an error if it exists), False opens it (an error if missing).
/// `read_only`: open without ever writing the file (beside a writer in another process, or on
/// a read-only file); writes raise `ReadOnlyError`, and the file must exist.
/// `busy_timeout`: seconds to wait for a file another process holds in a mode this open
/// cannot share (a second writer beside a writer) before raising `BusyError`, which names
/// the file and, on Linux, the holding process; 0 fails at once (default 5).
/// `page_cache_bytes`: the storage engine's page cache (default 1 GiB); `probe_cache_bytes`:
/// the probe cache's budget, index values and candidates' records kept for repeated queries
/// (default 1 GiB; 0 keeps nothing). Both bound memory only: answers never depend on them.
/// `Database.stats()["caches"]` reports each with the bytes it holds.
#[pyfunction]
#[pyo3(signature = (path, create = None, *, read_only = false, busy_timeout = 5.0, page_cache_bytes = None, probe_cache_bytes = None))]
pub(crate) fn open(
    py: Python<'_>,
    path: PathBuf,
    create: Option<bool>,
    read_only: bool,
    busy_timeout: f64,
    page_cache_bytes: Option<usize>,
    probe_cache_bytes: Option<usize>,
) -> PyResult<PyDatabase> {
    if read_only && create == Some(true) {
        return Err(pyo3::exceptions::PyValueError::new_err("read_only=True cannot create a database (create=True)"));
    }
    let wait = Duration::try_from_secs_f64(busy_timeout).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "busy_timeout={busy_timeout}: expected a finite number of seconds >= 0"
        ))
    })?;
    let mut builder = Database::builder().busy_timeout(wait);
    if let Some(bytes) = page_cache_bytes {
        builder = builder.cache_size(bytes);
    }
    if let Some(bytes) = probe_cache_bytes {
        builder = builder.probe_cache_budget(bytes);
    }
    let p = path.clone();
    let db = py
        .detach(move || match create {
            _ if read_only => builder.open_read_only(&p),
            Some(true) => builder.create(&p),
            Some(false) => builder.open(&p),
            None => builder.open_or_create(&p),
        })
        .py_err()?;
    Ok(PyDatabase { shared: Arc::new(Shared { db: RwLock::new(Some(db)), collections: Mutex::new(vec![]) }), path })
}

#[pymethods]
impl PyDatabase {
    /// Creates a collection. `kind`: "minhash", "bbit", "oph" or "simhash"; `k`:
    /// permutations or bins; `bits` defaults per kind (32, 8, 8, 64); `lsh`: keep an LSH
    /// index tuned for this Jaccard threshold; `simhash_radius`: keep SimHash tables for
    /// Hamming queries up to this radius; `shingle`/`ngram`/`token_seed`: the tokenizer
    /// (or `recipe`, a preset name). `family`: sketchdb's own hash family by name, when not
    /// the kind's default ("mix-multiply-shift-32" for MinHash with 32-bit values and b-bit,
    /// "mix-multiply-shift" for the others; `stats()["family"]` says which a collection has).
    /// `exact_shingles=True` (alias `exact=True`; the CLI's
    /// `create --exact-shingles`) keeps each record's distinct shingle set beside its sketch:
    /// queries from text, tokens or a stored key are then re-ranked by exact Jaccard
    /// (`Hit.exact`), and records must be written from text or tokens (set sketches only;
    /// about 7 bytes per distinct shingle).
    #[pyo3(signature = (name, kind = "minhash", k = 128, bits = None, seed = DEFAULT_SEED, *, lsh = None, bands = None, rows = None, simhash_radius = None, shingle = None, ngram = None, token_seed = 0, recipe = None, exact_shingles = None, exact = None, family = None))]
    #[allow(clippy::too_many_arguments)]
    fn create_collection(
        &self,
        py: Python<'_>,
        name: &str,
        kind: &str,
        k: u32,
        bits: Option<u8>,
        seed: u64,
        lsh: Option<f64>,
        bands: Option<u32>,
        rows: Option<u32>,
        simhash_radius: Option<u32>,
        shingle: Option<u32>,
        ngram: Option<u32>,
        token_seed: u64,
        recipe: Option<&str>,
        exact_shingles: Option<bool>,
        exact: Option<bool>,
        family: Option<&str>,
    ) -> PyResult<PyCollection> {
        let kind = convert::kind(kind)?;
        let keep = match (exact_shingles, exact) {
            (Some(a), Some(b)) if a != b => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "exact= is an alias of exact_shingles=: give one, or the same value",
                ));
            }
            (a, b) => a.or(b).unwrap_or(false),
        };
        if keep && kind == sketchdb::SketchKind::SimHash {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "exact_shingles=True: SimHash collections keep no shingle sets (use a set sketch: minhash, bbit, oph)",
            ));
        }
        let (params, tokenizer) = convert::config(kind, k, bits, seed, recipe, shingle, ngram, token_seed, family)?;
        let index = match (lsh, simhash_radius) {
            (Some(_), Some(_)) => {
                return Err(pyo3::exceptions::PyValueError::new_err("give lsh= or simhash_radius=, not both"));
            }
            (Some(threshold), None) => {
                let mut i = IndexConfig::lsh(threshold);
                if let IndexConfig::Lsh { bands: b, rows: r, .. } = &mut i {
                    *b = bands;
                    *r = rows;
                }
                i
            }
            (None, Some(radius)) => IndexConfig::simhash_tables(radius),
            (None, None) => IndexConfig::None,
        };
        let config =
            CollectionConfig::new(params).with_tokenizer(tokenizer).with_index(index).with_exact_shingles(keep);
        let db = self.shared.db()?;
        let coll = py.detach(|| db.create_collection(name, config)).py_err()?;
        Ok(self.handle(coll))
    }

    /// The collection `name` (`NotFoundError` when there is none).
    fn collection(&self, py: Python<'_>, name: &str) -> PyResult<PyCollection> {
        let db = self.shared.db()?;
        let coll = py.detach(|| db.collection(name)).py_err()?;
        Ok(self.handle(coll))
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<PyCollection> {
        self.collection(py, name)
    }

    fn __contains__(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        Ok(self.collections(py)?.iter().any(|n| n == name))
    }

    /// The collections' names, sorted.
    fn collections(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let db = self.shared.db()?;
        let all = py.detach(|| db.collections()).py_err()?;
        Ok(all.iter().map(|c| c.name().to_string()).collect())
    }

    /// Drops a collection and its records.
    fn drop_collection(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.shared.db()?;
        py.detach(|| db.drop_collection(name)).py_err()
    }

    /// Rewrites pages without deleted rows and shrinks the file (a dict of counters).
    fn compact<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        compact(py, &self.shared.db()?)
    }

    /// Checks every page, map and index (a dict: ok, problems, collections, pages, rows).
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        verify(py, &self.shared.db()?)
    }

    /// Database statistics (cheap: reads counters, scans nothing): a dict with `path`,
    /// `file_bytes`, `collections` (a list of what `Collection.stats()` gives, by name) and
    /// `caches` (what `cache_stats()` gives, read last).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.shared.db()?;
        let (s, handles) = py
            .detach(|| -> sketchdb::Result<_> {
                let s = admin::stats(&db)?;
                let handles = db.collections()?;
                Ok((s, handles))
            })
            .py_err()?;
        let d = PyDict::new(py);
        d.set_item("path", &self.path)?;
        d.set_item("file_bytes", s.file_bytes)?;
        let collections = pyo3::types::PyList::empty(py);
        for (name, counters) in &s.collections {
            if let Some(c) = handles.iter().find(|c| c.name() == name) {
                collections.append(crate::collection::stats_dict(py, c, *counters)?)?;
            }
        }
        d.set_item("collections", collections)?;
        d.set_item("caches", caches_dict(py, &s.caches)?)?;
        Ok(d)
    }

    /// What this database keeps in memory now, cache by cache, with each cache's budget:
    /// `page_cache_budget`, `page_cache_held` (the storage engine's page cache),
    /// `probe_cache_budget`, `probe_cache_held` (index values and candidates' records kept
    /// for repeated queries), `snapshot_kept` and `snapshot_memo_entries` (the snapshot of
    /// the last commit a read-write handle keeps for its reads, and what queries derived
    /// from it). The same numbers as the CLI's `stats` and the Rust `Database::cache_stats`.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        caches_dict(py, &self.shared.db()?.cache_stats())
    }

    /// Sets the probe cache budget in bytes (0 keeps nothing). Below what the cache holds,
    /// everything kept is let go. Answers never depend on it, only speed.
    fn set_probe_cache_budget(&self, bytes: usize) -> PyResult<()> {
        self.shared.db()?.set_probe_cache_budget(bytes);
        Ok(())
    }

    /// Makes every earlier commit durable.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.shared.db()?;
        py.detach(|| db.flush()).py_err()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.db.read().is_none()
    }

    /// Closes the database and every collection handle obtained from it.
    fn close(&self) {
        self.shared.db.write().take();
        for slot in self.shared.collections.lock().drain(..) {
            if let Some(slot) = slot.upgrade() {
                slot.clear();
            }
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!("<sketchdb.Database {:?} ({state})>", self.path)
    }
}

/// The `caches` dict of `Database.stats()` (the names of the Rust `CacheStats`).
fn caches_dict<'py>(py: Python<'py>, c: &sketchdb::CacheStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("page_cache_budget", c.page_cache_budget)?;
    d.set_item("page_cache_held", c.page_cache_held)?;
    d.set_item("probe_cache_budget", c.probe_cache_budget)?;
    d.set_item("probe_cache_held", c.probe_cache_held)?;
    d.set_item("snapshot_kept", c.snapshot_kept)?;
    d.set_item("snapshot_memo_entries", c.snapshot_memo_entries)?;
    Ok(d)
}

pub(crate) fn compact<'py>(py: Python<'py>, db: &Database) -> PyResult<Bound<'py, PyDict>> {
    let s = py.detach(|| db.compact()).py_err()?;
    let d = PyDict::new(py);
    d.set_item("pages_rewritten", s.pages_rewritten)?;
    d.set_item("rows_moved", s.rows_moved)?;
    d.set_item("rows_purged", s.rows_purged)?;
    d.set_item("indexes_optimized", s.indexes_optimized)?;
    d.set_item("file_bytes_before", s.file_bytes_before)?;
    d.set_item("file_bytes_after", s.file_bytes_after)?;
    Ok(d)
}

pub(crate) fn verify<'py>(py: Python<'py>, db: &Database) -> PyResult<Bound<'py, PyDict>> {
    let r = py.detach(|| admin::verify(db)).py_err()?;
    let d = PyDict::new(py);
    d.set_item("ok", r.is_ok())?;
    let problems: Vec<String> = r.problems.iter().map(|p| p.to_string()).collect();
    d.set_item("problems", problems)?;
    d.set_item("collections", r.collections)?;
    d.set_item("pages", r.pages)?;
    d.set_item("rows", r.rows)?;
    d.set_item("engine_integrity_ok", r.engine_integrity_ok)?;
    Ok(d)
}
