//! Batches in: the records of `insert_many` and the probes of `query_many`, from Python
//! iterables (lists, generators, NumPy arrays) or Arrow arrays (read without copying the
//! column), and `insert_many`'s rejects rule. (`insert_many` from texts and `tokens=` runs
//! as a pipeline of its own, `pipeline.rs`; the rest are written here.)
//!
//! `insert_many` checks every record before it writes: a record whose key or content is bad
//! (an empty or over-long key, a key that is not str/bytes, a text without words, a sketch
//! of other parameters, a key repeated in the batch, or for inserts a key already stored)
//! is a *reject*. By default rejects are skipped and reported and every other record is
//! written in one durable commit; with `strict=True` the first reject raises and nothing is
//! written.

use std::collections::HashMap;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator, PyList};
use rayon::prelude::*;
use sketchdb::recipes::check_key;
use sketchdb::{Batch, Collection, QueryKind, QueryOptions, Sketch, StorageError, signature};

use super::probe::Staged;
use super::results::{PyInsertReport, at, report};
use super::{Probe, PyHit};
use crate::arrow::ffi::arrow_chunks;
use crate::arrow::{TokenRows, signature_rows, text_rows};
use crate::convert;
use crate::errors::to_py;
use crate::sketches;

/// A record's or probe's content before sketching, or why it is unusable.
type Content = Result<Probe, PyErr>;

/// The keys of `records` records: [`keys`], refused (`ValueError`) when their count differs.
pub(super) fn keys_for(obj: &Bound<'_, PyAny>, records: usize) -> PyResult<Vec<Result<Vec<u8>, PyErr>>> {
    let ks = keys(obj)?;
    if ks.len() != records {
        return Err(PyValueError::new_err(format!("{} keys but {records} records", ks.len())));
    }
    Ok(ks)
}

/// Keys from a Python iterable or an Arrow string/binary array, each read or refused.
fn keys(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Result<Vec<u8>, PyErr>>> {
    if let Some(arrays) = arrow_chunks(obj, "keys")? {
        let mut out = Vec::new();
        for a in &arrays {
            use arrow_array::cast::AsArray;
            use arrow_schema::DataType;
            let null = || Err(PyValueError::new_err("a null key"));
            match a.data_type() {
                DataType::Utf8 => {
                    out.extend(a.as_string::<i32>().iter().map(|k| k.map_or_else(null, |k| Ok(k.as_bytes().to_vec()))))
                }
                DataType::LargeUtf8 => {
                    out.extend(a.as_string::<i64>().iter().map(|k| k.map_or_else(null, |k| Ok(k.as_bytes().to_vec()))))
                }
                DataType::Utf8View => {
                    out.extend(a.as_string_view().iter().map(|k| k.map_or_else(null, |k| Ok(k.as_bytes().to_vec()))))
                }
                DataType::Binary => {
                    out.extend(a.as_binary::<i32>().iter().map(|k| k.map_or_else(null, |k| Ok(k.to_vec()))))
                }
                DataType::LargeBinary => {
                    out.extend(a.as_binary::<i64>().iter().map(|k| k.map_or_else(null, |k| Ok(k.to_vec()))))
                }
                other => {
                    return Err(PyTypeError::new_err(format!("keys must be a string or binary array, not {other}")));
                }
            }
        }
        return Ok(out.into_iter().map(|k| k.and_then(checked)).collect());
    }
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for k in obj.try_iter()? {
        out.push(convert::key(&k?).and_then(checked));
    }
    Ok(out)
}

fn checked(k: Vec<u8>) -> PyResult<Vec<u8>> {
    check_key(&k).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(k)
}

/// MinHash values imported as they are (datasketch's `hashvalues`): each row a 1-D NumPy
/// array of unsigned or signed integers, or a sequence of ints, in the collection's family
/// (the imported sketch's cardinality is unknown and stored as 0).
pub(crate) fn hashvalue_rows(coll: &Collection, rows: &Bound<'_, PyAny>) -> PyResult<Vec<Content>> {
    let params = *coll.params();
    if params.kind() != sketchdb::SketchKind::MinHash {
        return Err(PyValueError::new_err("hashvalues= imports MinHash values: this collection is not MinHash"));
    }
    let row = |x: &Bound<'_, PyAny>| -> PyResult<Vec<u64>> {
        if let Ok(a) = x.extract::<numpy::PyReadonlyArray1<'_, u64>>() {
            return Ok(a.as_array().to_vec());
        }
        if let Ok(a) = x.extract::<numpy::PyReadonlyArray1<'_, u32>>() {
            return Ok(a.as_array().iter().map(|&v| u64::from(v)).collect());
        }
        x.extract::<Vec<u64>>()
            .map_err(|_| PyTypeError::new_err("a hashvalues row is a 1-D array of unsigned integers"))
    };
    let sketch = |v: Vec<u64>| -> Content {
        let m = sketchdb::MinHash::from_parts(params, v, 0).map_err(crate::errors::sketch_to_py)?;
        Ok(Probe::Sketch(Sketch::MinHash(m)))
    };
    // A 2-D array (`np.stack` of the rows) is read row by row in place: no NumPy object per row.
    if let Ok(a) = rows.extract::<numpy::PyReadonlyArray2<'_, u64>>() {
        return Ok(a.as_array().rows().into_iter().map(|r| sketch(r.to_vec())).collect());
    }
    if let Ok(a) = rows.extract::<numpy::PyReadonlyArray2<'_, u32>>() {
        return Ok(a
            .as_array()
            .rows()
            .into_iter()
            .map(|r| sketch(r.iter().map(|&v| u64::from(v)).collect()))
            .collect());
    }
    rows.try_iter()?.map(|x| Ok(row(&x?).and_then(sketch))).collect()
}

/// The contents named by exactly one of texts, tokens, sketches, signatures.
pub(crate) fn contents(
    coll: &Collection,
    texts: Option<&Bound<'_, PyAny>>,
    tokens: Option<&Bound<'_, PyAny>>,
    sketches: Option<&Bound<'_, PyAny>>,
    signatures: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Content>> {
    let seed = coll.config().tokenizer.seed();
    let params = *coll.params();
    match (texts, tokens, sketches, signatures) {
        (Some(t), None, None, None) => {
            if let Some(arrays) = arrow_chunks(t, "texts")? {
                let rows = text_rows(&arrays).map_err(PyTypeError::new_err)?;
                return Ok(rows
                    .into_iter()
                    .map(|r| r.map(|s| Probe::Text(s.to_string())).ok_or_else(|| PyValueError::new_err("a null text")))
                    .collect());
            }
            t.try_iter()?
                .map(|x| {
                    let x = x?;
                    Ok(x.extract::<String>().map(Probe::Text).map_err(|_| not_text(&x)))
                })
                .collect()
        }
        (None, Some(t), None, None) => {
            if let Some(arrays) = arrow_chunks(t, "tokens")? {
                let rows = TokenRows::new(&arrays).map_err(PyTypeError::new_err)?;
                if !coll.config().exact_shingles {
                    return Ok(sketch_token_rows(t.py(), coll, &rows));
                }
                return Ok(rows
                    .rows()
                    .iter()
                    .map(|r| match r {
                        Some(r) => {
                            rows.tokens(*r, seed).map(|t| Probe::Tokens(t.into_owned())).map_err(PyValueError::new_err)
                        }
                        None => Err(PyValueError::new_err("a null token list")),
                    })
                    .collect());
            }
            t.try_iter()?.map(|x| Ok(convert::tokens(&x?, seed).map(Probe::Tokens))).collect()
        }
        (None, None, Some(s), None) => s.try_iter()?.map(|x| Ok(sketches::extract(&x?).map(Probe::Sketch))).collect(),
        (None, None, None, Some(s)) => {
            let width = signature::width(&params);
            let decode = |b: &[u8]| {
                signature::decode(&params, b).map(Probe::Sketch).map_err(|e| to_py(sketchdb::Error::from(e)))
            };
            // A `sketch_many` matrix (copied under the GIL) or an Arrow column (read in place),
            // decoded on all cores with the GIL released.
            let matrix = crate::bulk::signature_matrix(s, width)?;
            let arrays = if matrix.is_none() { arrow_chunks(s, "signatures")? } else { None };
            let rows = match (&matrix, &arrays) {
                (Some(m), _) => Some(m.chunks(width).map(Some).collect()),
                (_, Some(a)) => Some(signature_rows(a, width).map_err(PyValueError::new_err)?),
                _ => None,
            };
            if let Some(rows) = rows {
                let decoded: Vec<Option<Result<Sketch, sketchdb::CodecError>>> =
                    s.py().detach(|| rows.par_iter().map(|r| r.map(|b| signature::decode(&params, b))).collect());
                return Ok(decoded
                    .into_iter()
                    .map(|r| match r {
                        Some(Ok(sketch)) => Ok(Probe::Sketch(sketch)),
                        Some(Err(e)) => Err(to_py(sketchdb::Error::from(e))),
                        None => Err(PyValueError::new_err("a null signature")),
                    })
                    .collect());
            }
            s.try_iter()?
                .map(|x| {
                    let x = x?;
                    Ok(match x.cast::<PyBytes>() {
                        Ok(b) => decode(b.as_bytes()),
                        Err(_) => Err(PyTypeError::new_err(format!(
                            "a signature is bytes of {width}, not {}",
                            x.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                        ))),
                    })
                })
                .collect()
        }
        _ => Err(PyValueError::new_err("give exactly one of texts, tokens=, sketches=, signatures=")),
    }
}

/// The sketches of Arrow token rows, made from the column in place on all cores with the GIL
/// released (a collection without shingle sets needs no copy of the tokens).
fn sketch_token_rows(py: Python<'_>, coll: &Collection, rows: &TokenRows<'_>) -> Vec<Content> {
    let seed = coll.config().tokenizer.seed();
    let sketched: Vec<Result<Sketch, Result<String, sketchdb::SketchError>>> = py.detach(|| {
        rows.rows()
            .par_iter()
            .map(|r| {
                let r = r.ok_or_else(|| Ok("a null token list".to_string()))?;
                let tokens = rows.tokens(r, seed).map_err(Ok)?;
                coll.sketcher().sketch_multiset(&tokens).map_err(Err)
            })
            .collect()
    });
    sketched
        .into_iter()
        .map(|r| match r {
            Ok(s) => Ok(Probe::Sketch(s)),
            Err(Ok(msg)) => Err(PyValueError::new_err(msg)),
            Err(Err(e)) => Err(crate::errors::sketch_to_py(e)),
        })
        .collect()
}

pub(super) fn not_text(x: &Bound<'_, PyAny>) -> PyErr {
    let name =
        if x.is_none() { "None".to_string() } else { x.get_type().name().map(|n| n.to_string()).unwrap_or_default() };
    PyTypeError::new_err(format!("a text is str, not {name}"))
}

/// `obj` as an input that can be read twice: an iterator (a generator) is collected into a
/// list of its items first.
pub(crate) fn rereadable<'py>(obj: Option<&Bound<'py, PyAny>>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match obj {
        Some(o) if o.cast::<PyIterator>().is_ok() => {
            let items = o.try_iter()?.collect::<PyResult<Vec<_>>>()?;
            Ok(Some(PyList::new(o.py(), items)?.into_any()))
        }
        o => Ok(o.cloned()),
    }
}

/// How often an insert runs again when other writers store its keys while it runs.
pub(super) const ATTEMPTS: usize = 3;

/// Which records' keys are stored: a lookup of each key that `key(i)` gives (none where it
/// gives `None`), on all cores, without the GIL.
pub(super) fn stored_keys<'k>(
    py: Python<'_>,
    coll: &Collection,
    n: usize,
    key: impl Fn(usize) -> Option<&'k [u8]> + Sync,
) -> PyResult<Vec<bool>> {
    py.detach(|| {
        let snap = coll.snapshot()?;
        (0..n)
            .into_par_iter()
            .map(|i| key(i).map_or(Ok(false), |k| Ok(snap.get(k)?.is_some())))
            .collect::<sketchdb::Result<Vec<bool>>>()
    })
    .map_err(to_py)
}

/// The reject of record `i`, whose key is stored already.
pub(super) fn already_stored(i: usize, key: &[u8]) -> PyErr {
    let msg = format!("record {i}: duplicate key {} (already stored)", String::from_utf8_lossy(key));
    crate::errors::raise(crate::errors::Class::Error, msg)
}

/// `insert_many` of the contents `read` gives (see the module docs for the rejects rule).
///
/// An insert looks its keys up before it writes (none on an empty collection), so every
/// sketch moves into the batch, none is copied. If another writer stores one of the keys
/// meanwhile, the transaction fails whole and the call runs again from `read` (which must
/// give the same contents again).
pub(crate) fn insert_many(
    py: Python<'_>,
    coll: &Collection,
    keys_in: &Bound<'_, PyAny>,
    read: impl Fn() -> PyResult<Vec<Content>>,
    upsert: bool,
    strict: bool,
) -> PyResult<PyInsertReport> {
    let mut contents = read()?;
    let ks = keys_for(keys_in, contents.len())?;
    // Per record: its key (when readable) and, when its key keeps it out, why: the key's own
    // error, or a repeat of an earlier record's key (the first record of each key is written).
    let mut keys: Vec<Option<Vec<u8>>> = Vec::with_capacity(ks.len());
    let mut key_errs: Vec<Option<PyErr>> = Vec::with_capacity(ks.len());
    for k in ks {
        let (k, e) = match k {
            Ok(k) => (Some(k), None),
            Err(e) => (None, Some(e)),
        };
        keys.push(k);
        key_errs.push(e);
    }
    {
        let mut first_at: HashMap<&[u8], usize> = HashMap::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if let Some(k) = k {
                let j = *first_at.entry(k.as_slice()).or_insert(i);
                if j != i {
                    key_errs[i] = Some(PyValueError::new_err(format!("duplicate key: record {j} has the same key")));
                }
            }
        }
    }
    // A strict insert meeting a stored key fails as a whole (the library's error): only the
    // other inserts look stored keys up.
    let looks_up = !upsert && !strict;
    let mut check = looks_up && !py.detach(|| coll.is_empty()).map_err(to_py)?;
    for attempt in 1..=ATTEMPTS {
        if attempt > 1 {
            contents = read()?;
            if contents.len() != keys.len() {
                return Err(PyRuntimeError::new_err("insert_many: the records changed while the call ran"));
            }
        }
        let stored = if check {
            stored_keys(py, coll, keys.len(), |i| if key_errs[i].is_none() { keys[i].as_deref() } else { None })?
        } else {
            Vec::new()
        };
        let mut records: Vec<Content> = Vec::with_capacity(keys.len());
        for (i, c) in contents.drain(..).enumerate() {
            let r = match (&key_errs[i], &keys[i]) {
                (Some(e), _) => Err(e.clone_ref(py)),
                (None, Some(k)) if stored.get(i) == Some(&true) => Err(already_stored(i, k)),
                _ => c,
            };
            if strict && let Err(e) = &r {
                return Err(at(py, i, e));
            }
            records.push(r);
        }
        let keys = &keys;
        // Sketch on all cores; then, unless strict mode meets a reject, move the good
        // records' sketches into the batch and write it.
        let (rejects, applied) = py.detach(|| {
            let sketched: Vec<Result<Staged, Result<PyErr, sketchdb::Error>>> = records
                .into_par_iter()
                .zip(keys.par_iter())
                .map(|(r, k)| match (r, k) {
                    // A sketch of other parameters (or a bare sketch where exact shingles are
                    // kept) is this record's reject, not the batch's failure.
                    (Ok(p), Some(key)) => p
                        .stage(coll, key)
                        .and_then(|s| {
                            coll.params().check_compatible(s.sketch().params())?;
                            Ok(s)
                        })
                        .map_err(Err),
                    (Ok(_), None) => Err(Ok(PyValueError::new_err("a record without a key"))),
                    (Err(e), _) => Err(Ok(e)),
                })
                .collect();
            let mut rejects = Vec::new();
            let mut batch = Batch::with_capacity(keys.len());
            for (i, (s, k)) in sketched.into_iter().zip(keys).enumerate() {
                match (s, k) {
                    (Ok(s), Some(k)) => s.add_to(&mut batch, k, upsert),
                    (Ok(_), None) => {}
                    (Err(e), _) => rejects.push((i, e)),
                }
            }
            let applied = (!strict || rejects.is_empty()).then(|| commit(coll, &batch));
            (rejects, applied)
        });
        let written = match applied {
            Some(Ok(n)) => n,
            Some(Err(sketchdb::Error::Storage(StorageError::DuplicateKey { .. })))
                if looks_up && attempt < ATTEMPTS =>
            {
                check = true;
                continue;
            }
            Some(Err(e)) => return Err(to_py(e)),
            None => 0,
        };
        let rejects = rejects.into_iter().map(|(i, e)| (i, keys[i].clone(), e.unwrap_or_else(to_py))).collect();
        return report(py, written, rejects, strict);
    }
    Err(PyRuntimeError::new_err("insert_many: other writers kept storing this call's keys"))
}

/// Writes `batch` in one commit; returns the records written.
fn commit(coll: &Collection, batch: &Batch) -> sketchdb::Result<u64> {
    if batch.is_empty() {
        return Ok(0);
    }
    let summary = coll.apply(batch)?;
    Ok(summary.inserted + summary.replaced)
}

/// The probes of exactly one of texts, tokens, keys, sketches, signatures.
pub(super) fn probes(
    coll: &Collection,
    texts: Option<&Bound<'_, PyAny>>,
    tokens: Option<&Bound<'_, PyAny>>,
    keys: Option<&Bound<'_, PyAny>>,
    sketches: Option<&Bound<'_, PyAny>>,
    signatures: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Probe>> {
    let contents = match keys {
        Some(k) => {
            if texts.is_some() || tokens.is_some() || sketches.is_some() || signatures.is_some() {
                return Err(PyValueError::new_err("give exactly one of texts, tokens=, keys=, sketches=, signatures="));
            }
            let mut out = Vec::new();
            for k in k.try_iter()? {
                out.push(convert::key_buf(&k?).map(Probe::Key));
            }
            out
        }
        None => contents(coll, texts, tokens, sketches, signatures)?,
    };
    contents
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            c.map_err(|e| Python::attach(|py| PyErr::from_type(e.get_type(py), format!("probe {i}: {}", e.value(py)))))
        })
        .collect()
}

/// A pool of `threads` threads; `None` for the global rayon pool (all cores).
pub(super) fn pool_of(threads: Option<usize>) -> PyResult<Option<rayon::ThreadPool>> {
    match threads {
        None => Ok(None),
        Some(0) => Err(PyValueError::new_err("threads must be at least 1")),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map(Some)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start {n} threads: {e}"))),
    }
}

/// Runs one query per probe over one read snapshot ([`Collection::query_probes`]) with the
/// GIL released: on the global rayon pool (all cores), or on a pool of `threads` threads.
pub(super) fn run_many(
    py: Python<'_>,
    coll: &Collection,
    probes: Vec<Probe>,
    kind: QueryKind,
    options: QueryOptions,
    threads: Option<usize>,
) -> PyResult<Vec<Vec<PyHit>>> {
    let pool = pool_of(threads)?;
    let probes: Vec<sketchdb::Probe> = probes.into_iter().map(Probe::into_core).collect();
    let answers = py.detach(|| match &pool {
        None => coll.query_probes(&probes, kind, options),
        Some(pool) => pool.install(|| coll.query_probes(&probes, kind, options)),
    });
    answers
        .map_err(to_py)?
        .into_iter()
        .map(|r| {
            let r = r.map_err(|e| {
                let err = to_py(e.error);
                PyErr::from_type(err.get_type(py), format!("probe {}: {}", e.position, err.value(py)))
            })?;
            Ok(r.hits.into_iter().map(super::results::hit).collect())
        })
        .collect()
}
