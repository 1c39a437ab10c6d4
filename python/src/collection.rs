//! The `Collection` class and its result types `Hit`, `Cluster` and `DedupResult`.
//!
//! Every call that reads or writes the file runs with the GIL released on a clone of the
//! Rust handle (`sketchdb::Collection` is `Send + Sync` and cheap to clone), so several
//! Python threads can query while another writes.

use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use sketchdb::plan::PlanKind;
use sketchdb::recipes::Measure;
use sketchdb::{Batch, Clustering, Collection, QueryKind, QueryOptions};

use crate::convert;
use crate::database::{Shared, closed};
use crate::errors::IntoPy;
use crate::kwargs::{Given, Keywords};
use crate::sketches::{self, PyEstimate};

/// A collection handle that `Database.close()` can empty. Shared behind an `Arc`, so that a
/// call takes it with one reference count, not a copy of its configuration.
pub(crate) struct Slot(RwLock<Option<Arc<Collection>>>);

impl Slot {
    pub(crate) fn new(c: Collection) -> Self {
        Slot(RwLock::new(Some(Arc::new(c))))
    }
    pub(crate) fn clear(&self) {
        self.0.write().take();
    }
}

mod ingest;
mod pipeline;
mod probe;
mod results;
pub(crate) use results::stats_dict;

use probe::{Probe, ProbeArgs};
use results::hit;
pub(crate) use results::{PyCluster, PyDedupResult, PyHit};
pub(crate) use results::{PyInsertReport, PyReject};

/// A named set of keyed sketches of one configuration.
#[pyclass(name = "Collection", module = "sketchdb._sketchdb", frozen)]
pub(crate) struct PyCollection {
    shared: Arc<Shared>,
    slot: Arc<Slot>,
}

impl PyCollection {
    pub(crate) fn new(shared: Arc<Shared>, slot: Arc<Slot>) -> Self {
        PyCollection { shared, slot }
    }

    fn coll(&self) -> PyResult<Arc<Collection>> {
        self.slot.0.read().clone().ok_or_else(closed)
    }

    /// The Rust handle (a `sketchdb.Error` once the database is closed).
    pub(crate) fn handle(&self) -> PyResult<Arc<Collection>> {
        self.coll()
    }

    /// Asks `kind` (chosen once the collection is known) with the probe `args` names.
    fn ask(
        &self,
        py: Python<'_>,
        args: ProbeArgs<'_, '_>,
        kind: impl FnOnce(&Collection) -> QueryKind,
        options: QueryOptions,
    ) -> PyResult<Vec<PyHit>> {
        let coll = self.coll()?;
        let probe = args.probe(&coll)?;
        let kind = kind(&coll);
        let result = py.detach(|| probe.run(&coll, kind, options)).py_err()?;
        Ok(result.hits.into_iter().map(hit).collect())
    }

    /// Writes the record `args` names under `key`; returns its row id.
    fn write_one(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        args: ProbeArgs<'_, '_>,
        upsert: bool,
    ) -> PyResult<u64> {
        let coll = self.coll()?;
        let probe = args.content(&coll)?;
        let key = convert::key(key)?;
        py.detach(|| -> sketchdb::Result<u64> {
            let mut batch = Batch::with_capacity(1);
            probe.stage(&coll, &key)?.add_to(&mut batch, &key, upsert);
            Ok(coll.apply(&batch)?.first_row)
        })
        .py_err()
    }
}

/// The default threshold of `coll`'s measure unless `t` is given.
fn threshold_or_default(coll: &Collection, t: Option<f64>) -> f64 {
    t.unwrap_or_else(|| Measure::of(coll.params().kind()).default_threshold())
}

/// The probe named by the first four of a query method's keywords: `text`, `tokens`, `key`,
/// `sketch` (None values count as left out).
fn probe_args<'a, 'py, const N: usize>(a: &'a Given<'py, N>) -> PyResult<ProbeArgs<'a, 'py>> {
    let given = |i: usize| a.raw(i).filter(|v| !v.is_none());
    Ok(ProbeArgs { text: a.opt::<String>(0)?, tokens: given(1), key: given(2), sketch: given(3) })
}

fn options(level: f64, exact: bool) -> QueryOptions {
    QueryOptions { level, exact, ..QueryOptions::default() }
}

#[pymethods]
impl PyCollection {
    /// The collection's name.
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(self.coll()?.name().to_string())
    }

    /// The sketch kind: "minhash", "bbit", "oph" or "simhash".
    #[getter]
    fn kind(&self) -> PyResult<&'static str> {
        Ok(convert::kind_name(self.coll()?.params().kind()))
    }

    /// Inserts a record (a `sketchdb.Error` if the key exists); returns its row id.
    #[pyo3(signature = (key, *, text = None, tokens = None, sketch = None))]
    fn insert(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        text: Option<String>,
        tokens: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        self.write_one(py, key, ProbeArgs { text, tokens, key: None, sketch }, false)
    }

    /// Inserts or replaces a record; returns its row id.
    #[pyo3(signature = (key, *, text = None, tokens = None, sketch = None))]
    fn upsert(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        text: Option<String>,
        tokens: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        self.write_one(py, key, ProbeArgs { text, tokens, key: None, sketch }, true)
    }

    /// Inserts (or with `upsert=True` replaces) many records in one durable commit, sketched
    /// on all cores with the GIL released.
    ///
    /// `keys` (str/bytes) and one of `texts`, `tokens` (token iterables), `sketches` (sketch
    /// objects), `signatures` (signature bytes, as `sketchdb.arrow.sketch` makes them) or
    /// `hashvalues` (MinHash value rows, e.g. datasketch's `hashvalues`, for a collection of
    /// the matching family: `recipe="datasketch-affine32"` or `"datasketch"`) are equally
    /// long: lists, iterables, NumPy arrays, or pyarrow arrays (read without a copy).
    ///
    /// A bad record (an empty, over-long or non-str/bytes key, a text without words, a
    /// sketch of other parameters, a key repeated in the call, or for inserts a key already
    /// stored) is a reject. By default rejects are skipped and every other record is written;
    /// the returned `InsertReport` has `written` and `rejects` (each with `index`, `key` and
    /// the `error` it would raise). With `strict=True` the first bad record raises, naming
    /// its position, and nothing of the call is written.
    #[pyo3(signature = (keys, texts = None, *, tokens = None, sketches = None, signatures = None, hashvalues = None, upsert = false, strict = false))]
    #[allow(clippy::too_many_arguments)]
    fn insert_many(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        texts: Option<&Bound<'_, PyAny>>,
        tokens: Option<&Bound<'_, PyAny>>,
        sketches: Option<&Bound<'_, PyAny>>,
        signatures: Option<&Bound<'_, PyAny>>,
        hashvalues: Option<&Bound<'_, PyAny>>,
        upsert: bool,
        strict: bool,
    ) -> PyResult<PyInsertReport> {
        let coll = self.coll()?;
        if hashvalues.is_some() && (texts.is_some() || tokens.is_some() || sketches.is_some() || signatures.is_some()) {
            return Err(PyValueError::new_err(
                "give exactly one of texts, tokens=, sketches=, signatures=, hashvalues=",
            ));
        }
        if hashvalues.is_none() && sketches.is_none() && signatures.is_none() && (texts.is_some() != tokens.is_some()) {
            return pipeline::insert_many(py, &coll, keys, texts, tokens, upsert, strict);
        }
        // Read again when other writers store the call's keys meanwhile: an iterator is
        // collected first (its items, not copies).
        let rereadable = ingest::rereadable;
        let (sketches, signatures, hashvalues) =
            (rereadable(sketches)?, rereadable(signatures)?, rereadable(hashvalues)?);
        let read = || match &hashvalues {
            Some(h) => ingest::hashvalue_rows(&coll, h),
            None => ingest::contents(&coll, texts, tokens, sketches.as_ref(), signatures.as_ref()),
        };
        ingest::insert_many(py, &coll, keys, read, upsert, strict)
    }

    /// Runs one threshold query per probe (exactly one of `texts`, `tokens`, `keys`,
    /// `sketches`, `signatures`, each a list, iterable, NumPy or pyarrow array) over one
    /// read snapshot (every answer from the same commit), on all cores (or `threads`) with
    /// the GIL released; returns one hit list per probe, in order, each equal to
    /// `query(...)` of that probe. A bad probe raises naming its position.
    #[pyo3(signature = (texts = None, *, tokens = None, keys = None, sketches = None, signatures = None, threshold = None, level = 0.95, exact = false, threads = None))]
    #[allow(clippy::too_many_arguments)]
    fn query_many(
        &self,
        py: Python<'_>,
        texts: Option<&Bound<'_, PyAny>>,
        tokens: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyAny>>,
        sketches: Option<&Bound<'_, PyAny>>,
        signatures: Option<&Bound<'_, PyAny>>,
        threshold: Option<f64>,
        level: f64,
        exact: bool,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<PyHit>>> {
        let coll = self.coll()?;
        let t = threshold_or_default(&coll, threshold);
        let probes = ingest::probes(&coll, texts, tokens, keys, sketches, signatures)?;
        ingest::run_many(py, &coll, probes, QueryKind::Threshold(t), options(level, exact), threads)
    }

    /// The `k` most similar records for each probe (see `query_many`), best first.
    #[pyo3(signature = (texts = None, *, tokens = None, keys = None, sketches = None, signatures = None, k = 10, level = 0.95, exact = false, threads = None))]
    #[allow(clippy::too_many_arguments)]
    fn top_k_many(
        &self,
        py: Python<'_>,
        texts: Option<&Bound<'_, PyAny>>,
        tokens: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyAny>>,
        sketches: Option<&Bound<'_, PyAny>>,
        signatures: Option<&Bound<'_, PyAny>>,
        k: usize,
        level: f64,
        exact: bool,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<PyHit>>> {
        let coll = self.coll()?;
        let probes = ingest::probes(&coll, texts, tokens, keys, sketches, signatures)?;
        ingest::run_many(py, &coll, probes, QueryKind::TopK(k), options(level, exact), threads)
    }

    /// The keyword arguments of the `sketchdb.arrow` kernels (and of the sketch classes'
    /// parameters) that reproduce this collection's signatures: `kind`, `k`, `bits`,
    /// `seed`, `family` (sketchdb's own families; a compatibility recipe brings its own),
    /// `shingle`, `ngram` or `recipe`, and `token_seed`.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let coll = self.coll()?;
        let p = coll.params();
        let d = PyDict::new(py);
        d.set_item("kind", convert::kind_name(p.kind()))?;
        d.set_item("k", p.size())?;
        d.set_item("bits", p.bits())?;
        d.set_item("seed", p.seed())?;
        if !p.family().is_compat() {
            d.set_item("family", p.family().name())?;
        }
        let t = &coll.config().tokenizer;
        match convert::tokenizer_parts(t, p.family()) {
            (k, n) if k == "ngrams" => d.set_item("ngram", n)?,
            (k, w) if k == "shingles" => d.set_item("shingle", w)?,
            (k, _) => d.set_item("recipe", k.trim_start_matches("recipe:"))?,
        }
        d.set_item("token_seed", t.seed())?;
        Ok(d)
    }

    /// The band keys this collection's LSH index files a probe's sketch under (one per band,
    /// in band order), or None without an LSH index; `sketchdb.arrow.band_keys` with the
    /// index's banding returns the same keys.
    #[pyo3(signature = (*, text = None, tokens = None, key = None, sketch = None))]
    fn band_keys(
        &self,
        py: Python<'_>,
        text: Option<String>,
        tokens: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Vec<u64>>> {
        let coll = self.coll()?;
        let probe = ProbeArgs { text, tokens, key, sketch }.probe(&coll)?;
        py.detach(|| -> sketchdb::Result<Option<Vec<u64>>> {
            let Some(scheme) = coll.lsh_scheme()? else { return Ok(None) };
            let s = probe.sketch(&coll)?;
            Ok(Some(scheme.sketch_keys(&s).map_err(sketchdb::Error::from)?))
        })
        .py_err()
    }

    /// Deletes a record; returns whether it existed.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let coll = self.coll()?;
        let key = convert::key(key)?;
        py.detach(|| coll.delete(&key)).py_err()
    }

    /// The stored sketch of `key` (frozen), or None.
    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        let coll = self.coll()?;
        let key = convert::key(key)?;
        let rec = py.detach(|| coll.get(&key)).py_err()?;
        rec.map(|r| sketches::to_py(py, r.sketch, coll.config().tokenizer)).transpose()
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match self.get(py, key)? {
            Some(s) => Ok(s),
            None => Err(crate::errors::raise(
                crate::errors::Class::NotFound,
                format!("collection `{}` has no key {}", self.name()?, key.repr()?),
            )),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let coll = self.coll()?;
        let key = convert::key(key)?;
        Ok(py.detach(|| coll.get(&key)).py_err()?.is_some())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let coll = self.coll()?;
        let n = py.detach(|| coll.len()).py_err()?;
        usize::try_from(n).map_err(|_| PyValueError::new_err("length overflows"))
    }

    /// Records whose estimated similarity (Jaccard; cosine for SimHash) is at least
    /// `threshold` (default 0.5 Jaccard, 0.9 cosine), best first.
    /// `plan` forces an access path by name ("full-scan", "lsh-probe", "oph-bin-scan",
    /// "simhash-probe") instead of the planner's choice.
    #[pyo3(signature = (*args, **kwargs))]
    #[pyo3(
        text_signature = "($self, *, text=None, tokens=None, key=None, sketch=None, threshold=None, level=0.95, exact=False, plan=None)"
    )]
    fn query(&self, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<PyHit>> {
        // `(*args, **kwargs)` alone, without `py`, is what PyO3 hands over unparsed.
        let py = args.py();
        static KW: Keywords<8> = Keywords::new(
            "Collection.query",
            ["text", "tokens", "key", "sketch", "threshold", "level", "exact", "plan"],
        );
        let a = KW.parse(args, kwargs)?;
        let mut o = options(a.or(5, 0.95)?, a.or(6, false)?);
        if let Some(name) = a.opt::<String>(7)? {
            o.force = Some(PlanKind::from_name(&name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown plan {name:?}: expected \"full-scan\", \"lsh-probe\", \"oph-bin-scan\" or \"simhash-probe\""
                ))
            })?);
        }
        let threshold = a.opt::<f64>(4)?;
        self.ask(py, probe_args(&a)?, |c| QueryKind::Threshold(threshold_or_default(c, threshold)), o)
    }

    /// The `k` most similar records, best first.
    #[pyo3(signature = (*args, **kwargs))]
    #[pyo3(text_signature = "($self, *, text=None, tokens=None, key=None, sketch=None, k=10, level=0.95, exact=False)")]
    fn top_k(&self, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<PyHit>> {
        // `(*args, **kwargs)` alone, without `py`, is what PyO3 hands over unparsed.
        let py = args.py();
        static KW: Keywords<7> =
            Keywords::new("Collection.top_k", ["text", "tokens", "key", "sketch", "k", "level", "exact"]);
        let a = KW.parse(args, kwargs)?;
        let k = a.or(4, 10usize)?;
        let o = options(a.or(5, 0.95)?, a.or(6, false)?);
        self.ask(py, probe_args(&a)?, |_| QueryKind::TopK(k), o)
    }

    /// SimHash collections: every fingerprint within `radius` bits, nearest first.
    #[pyo3(signature = (*args, **kwargs))]
    #[pyo3(text_signature = "($self, *, text=None, tokens=None, key=None, sketch=None, radius=3)")]
    fn hamming(&self, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<PyHit>> {
        // `(*args, **kwargs)` alone, without `py`, is what PyO3 hands over unparsed.
        let py = args.py();
        static KW: Keywords<5> = Keywords::new("Collection.hamming", ["text", "tokens", "key", "sketch", "radius"]);
        let a = KW.parse(args, kwargs)?;
        let radius = a.or(4, 3u32)?;
        self.ask(py, probe_args(&a)?, |_| QueryKind::Hamming(radius), QueryOptions::default())
    }

    /// The plan a query would use, its alternatives and their costs, as text: a threshold
    /// query unless `k` or `radius` is given; `analyze=True` runs it and adds counters.
    #[pyo3(signature = (*, text = None, tokens = None, key = None, sketch = None, threshold = None, k = None, radius = None, analyze = false))]
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        py: Python<'_>,
        text: Option<String>,
        tokens: Option<&Bound<'_, PyAny>>,
        key: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
        threshold: Option<f64>,
        k: Option<usize>,
        radius: Option<u32>,
        analyze: bool,
    ) -> PyResult<String> {
        let coll = self.coll()?;
        let kind = match (threshold, k, radius) {
            (t, None, None) => QueryKind::Threshold(threshold_or_default(&coll, t)),
            (None, Some(k), None) => QueryKind::TopK(k),
            (None, None, Some(r)) => QueryKind::Hamming(r),
            _ => return Err(PyValueError::new_err("give at most one of threshold=, k=, radius=")),
        };
        let probe = ProbeArgs { text, tokens, key, sketch }.probe(&coll)?;
        let e = py.detach(|| probe.explain(&coll, kind, QueryOptions::default(), analyze)).py_err()?;
        Ok(e.to_string())
    }

    /// The estimated similarity of two stored keys, with its interval.
    #[pyo3(signature = (a, b, level = 0.95))]
    fn estimate(&self, py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, level: f64) -> PyResult<PyEstimate> {
        let coll = self.coll()?;
        let (a, b) = (convert::key(a)?, convert::key(b)?);
        Ok(py.detach(|| coll.estimate(&a, &b, level)).py_err()?.into())
    }

    /// Groups near-duplicates: clusters of records whose pairwise estimate is at least
    /// `threshold`, largest first. `clustering` is the CLI's `dedup --clustering`:
    /// `"components"` (connected components: chains of verified pairs join) or
    /// `"representative"` (star clusters: every member is a verified pair with its cluster's
    /// `representative`, so no chaining through weak links; a record is in at most one
    /// cluster). On a SimHash collection, `radius` asks for pairs within that Hamming
    /// distance instead (exact: the collection's tables where they cover the radius, else
    /// tables built in memory), as the CLI's `dedup --radius`. The join runs on all cores, or
    /// on `threads` threads (the clusters do not depend on it); `stages` on the result says
    /// where its time went.
    #[pyo3(signature = (threshold = None, *, radius = None, level = 0.95, exact = false, threads = None, clustering = "components"))]
    #[allow(clippy::too_many_arguments)]
    fn dedup(
        &self,
        py: Python<'_>,
        threshold: Option<f64>,
        radius: Option<u32>,
        level: f64,
        exact: bool,
        threads: Option<usize>,
        clustering: &str,
    ) -> PyResult<PyDedupResult> {
        let coll = self.coll()?;
        let kind = match (threshold, radius) {
            (Some(_), Some(_)) => return Err(PyValueError::new_err("give threshold= or radius=, not both")),
            (_, Some(r)) => QueryKind::Hamming(r),
            (t, None) => QueryKind::Threshold(threshold_or_default(&coll, t)),
        };
        let clustering = Clustering::from_name(clustering).ok_or_else(|| {
            let names: Vec<&str> = Clustering::ALL.iter().map(|c| c.name()).collect();
            PyValueError::new_err(format!("unknown clustering '{clustering}' (expected {})", names.join(" or ")))
        })?;
        let pool = ingest::pool_of(threads)?;
        let join = || coll.dedup_clustered(kind, options(level, exact), clustering);
        let r = py
            .detach(|| match &pool {
                None => join(),
                Some(pool) => pool.install(join),
            })
            .py_err()?;
        results::dedup_result(py, r, clustering)
    }

    /// The collection's counters and configuration.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let coll = self.coll()?;
        let s = py.detach(|| coll.stats()).py_err()?;
        results::stats_dict(py, &coll, s)
    }

    /// Checks the whole file (every collection): see `Database.verify`.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::database::verify(py, &self.shared.db()?)
    }

    /// Compacts the whole file: see `Database.compact`.
    fn compact<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::database::compact(py, &self.shared.db()?)
    }

    fn __repr__(&self) -> String {
        match self.coll() {
            Ok(c) => format!("<sketchdb.Collection {:?} ({})>", c.name(), convert::kind_name(c.params().kind())),
            Err(_) => "<sketchdb.Collection (closed)>".to_string(),
        }
    }
}
