//! `insert_many` from texts and tokens as a pipeline: the call stays one durable commit (all
//! of it, or under `strict=True` none) while reading and sketching overlap.
//!
//! 1. The calling thread reads the records in chunks: Python objects under the GIL, texts
//!    into one buffer and token hashes into one flat vector per chunk (no allocation per
//!    record); an Arrow column needs no reading and is borrowed in place.
//! 2. A sketching thread sketches each chunk's records without the GIL, on a pool of one
//!    thread fewer than the caller's where the calling thread reads token lists beside it
//!    (on all of them for texts, NumPy rows and Arrow columns), and moves the sketches into
//!    the call's [`Batch`]
//!    (no copy: keys already stored are found before, so the batch is written once). A
//!    reader of token lists that finds the sketching thread behind (two chunks waiting)
//!    sketches a worker's share of its next chunk itself instead of waiting: the reader's
//!    core works whichever of reading and sketching is the slower (sketching MinHash
//!    without AVX-512 is).
//! 3. The batch is applied in one transaction ([`Collection::apply`]: the index's band keys
//!    are computed beside the record writes), with the GIL released.
//!
//! The rejects rule is `ingest`'s. Keys already stored are looked up before the pipeline
//! starts (one lookup per key, none on an empty collection); if another writer stores one of
//! the keys meanwhile, the transaction fails whole and the call runs again from its input.
//! (Writing each chunk as it is sketched, into one open transaction, was slower: keys that
//! do not ascend across chunks are then inserted into the key B-tree one by one instead of
//! appended, and the index keys each row after the last chunk instead of beside the writes.)

use std::sync::mpsc::sync_channel;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use sketchdb::{Batch, Collection, StorageError, WriteSummary};

use super::ingest::{ATTEMPTS, already_stored, keys_for, stored_keys};
use super::results::{PyInsertReport, report};
use crate::arrow::ffi::arrow_chunks;
use crate::arrow::{TokenRows, text_rows};
use crate::bulk::Items;
use crate::errors::to_py;

mod chunks;

use chunks::{Msg, read_arrow, read_python, stage_all};

/// An Arrow column of contents, borrowed in place (read by the sketching thread).
enum ArrowRows<'a> {
    Texts(Vec<Option<&'a str>>),
    Tokens(TokenRows<'a>),
}

/// Where the records' contents come from.
enum Source<'a, 'py> {
    /// Python texts (`texts = true`) or token iterables, read under the GIL.
    Python {
        items: Items<'a, 'py>,
        texts: bool,
    },
    Arrow(ArrowRows<'a>),
}

impl Source<'_, '_> {
    fn len(&self) -> usize {
        match self {
            Source::Python { items, .. } => items.len(),
            Source::Arrow(ArrowRows::Texts(t)) => t.len(),
            Source::Arrow(ArrowRows::Tokens(t)) => t.rows().len(),
        }
    }
}

/// Why a record's key keeps it out, known before its content is read.
#[derive(Clone)]
enum KeyIssue {
    /// Not `str`/`bytes` (a `TypeError`).
    Type(String),
    /// Empty, too long, null (a `ValueError`).
    Value(String),
    /// The same key as an earlier record of the call.
    Duplicate(usize),
    /// Already stored (an insert).
    Stored,
}

/// Why a record is left out.
enum Why {
    Key(KeyIssue),
    Py(PyErr),
    Core(sketchdb::Error),
}

/// The rejects (record index and why, in input order) and the batch of the other records
/// (`None` when a strict call met a reject).
type Staging = (Vec<(usize, Why)>, Option<Batch>);

/// `insert_many(keys, texts)` or `insert_many(keys, tokens=...)` (exactly one given).
pub(crate) fn insert_many(
    py: Python<'_>,
    coll: &Collection,
    keys_in: &Bound<'_, PyAny>,
    texts: Option<&Bound<'_, PyAny>>,
    tokens: Option<&Bound<'_, PyAny>>,
    upsert: bool,
    strict: bool,
) -> PyResult<PyInsertReport> {
    let (obj, is_texts) = match (texts, tokens) {
        (Some(t), None) => (t, true),
        (None, Some(t)) => (t, false),
        _ => return Err(PyValueError::new_err("give exactly one of texts, tokens=")),
    };
    let what = if is_texts { "texts" } else { "tokens" };
    let arrays = arrow_chunks(obj, what)?;
    let source = match &arrays {
        Some(a) if is_texts => Source::Arrow(ArrowRows::Texts(text_rows(a).map_err(PyTypeError::new_err)?)),
        Some(a) => Source::Arrow(ArrowRows::Tokens(TokenRows::new(a).map_err(PyTypeError::new_err)?)),
        None => {
            if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
                let one = if is_texts { "text" } else { "token list" };
                return Err(PyTypeError::new_err(format!(
                    "{what} must be an iterable with one {one} per record, not one str/bytes"
                )));
            }
            Source::Python { items: Items::of(obj)?, texts: is_texts }
        }
    };
    run(py, coll, keys_in, &source, upsert, strict)
}

fn run(
    py: Python<'_>,
    coll: &Collection,
    keys_in: &Bound<'_, PyAny>,
    source: &Source<'_, '_>,
    upsert: bool,
    strict: bool,
) -> PyResult<PyInsertReport> {
    let ks = keys_for(keys_in, source.len())?;
    let mut issues: Vec<Option<KeyIssue>> = Vec::with_capacity(ks.len());
    let mut keys: Vec<Option<Vec<u8>>> = Vec::with_capacity(ks.len());
    for k in ks {
        match k {
            Ok(k) => {
                keys.push(Some(k));
                issues.push(None);
            }
            Err(e) => {
                let msg = e.value(py).to_string();
                keys.push(None);
                issues.push(Some(if e.is_instance_of::<PyTypeError>(py) {
                    KeyIssue::Type(msg)
                } else {
                    KeyIssue::Value(msg)
                }));
            }
        }
    }
    {
        // The first record of each key is the one written (keys borrowed, not copied).
        let mut first_at: std::collections::HashMap<&[u8], usize> =
            std::collections::HashMap::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if let Some(k) = k {
                let j = *first_at.entry(k.as_slice()).or_insert(i);
                if j != i {
                    issues[i] = Some(KeyIssue::Duplicate(j));
                }
            }
        }
    }
    // A strict insert meeting a stored key fails as a whole (the library's error): only the
    // other inserts look stored keys up.
    let looks_up = !upsert && !strict;
    let mut check = looks_up && !py.detach(|| coll.is_empty()).map_err(to_py)?;
    for attempt in 1..=ATTEMPTS {
        if check {
            mark_stored(py, coll, &keys, &mut issues)?;
        }
        let (rejects, batch) = pipeline(py, coll, &keys, &issues, source, upsert, strict)?;
        let applied = match batch {
            Some(b) if !b.is_empty() => py.detach(|| coll.apply(&b)),
            _ => Ok(WriteSummary::default()),
        };
        let written = match applied {
            Ok(s) => s.inserted + s.replaced,
            Err(sketchdb::Error::Storage(StorageError::DuplicateKey { .. })) if looks_up && attempt < ATTEMPTS => {
                check = true;
                continue;
            }
            Err(e) => return Err(to_py(e)),
        };
        let mut out: Vec<(usize, Option<Vec<u8>>, PyErr)> = Vec::with_capacity(rejects.len());
        for (i, why) in rejects {
            let key = keys[i].clone();
            let err = match why {
                Why::Py(e) => e,
                Why::Core(e) => to_py(e),
                Why::Key(KeyIssue::Type(m)) => PyTypeError::new_err(m),
                Why::Key(KeyIssue::Value(m)) => PyValueError::new_err(m),
                Why::Key(KeyIssue::Duplicate(j)) => {
                    PyValueError::new_err(format!("duplicate key: record {j} has the same key"))
                }
                Why::Key(KeyIssue::Stored) => already_stored(i, key.as_deref().unwrap_or_default()),
            };
            out.push((i, key, err));
        }
        return report(py, written, out, strict);
    }
    Err(PyRuntimeError::new_err("insert_many: other writers kept storing this call's keys"))
}

/// Marks the records whose key is stored already (see [`stored_keys`]; a key marked stored
/// by an earlier attempt is looked up again).
fn mark_stored(
    py: Python<'_>,
    coll: &Collection,
    keys: &[Option<Vec<u8>>],
    issues: &mut [Option<KeyIssue>],
) -> PyResult<()> {
    let stored = stored_keys(py, coll, keys.len(), |i| match issues[i] {
        None | Some(KeyIssue::Stored) => keys[i].as_deref(),
        _ => None,
    })?;
    for (issue, stored) in issues.iter_mut().zip(stored) {
        if stored {
            *issue = Some(KeyIssue::Stored);
        } else if matches!(issue, Some(KeyIssue::Stored)) {
            *issue = None;
        }
    }
    Ok(())
}

/// Reads and sketches every record (see the module docs); returns the rejects in input
/// order and the batch of the others (`None` when a strict call met a reject).
fn pipeline(
    py: Python<'_>,
    coll: &Collection,
    keys: &[Option<Vec<u8>>],
    issues: &[Option<KeyIssue>],
    source: &Source<'_, '_>,
    upsert: bool,
    strict: bool,
) -> PyResult<Staging> {
    let (arrow, pool) = match source {
        Source::Arrow(a) => (Some(a), None),
        // Token lists are read one Python int or str at a time, as long as their sketching
        // takes: the reader gets a core of its own. A text or a NumPy row is read in one
        // copy, far quicker than it is sketched: every core sketches.
        Source::Python { items, texts: false } if items.len() > 0 && is_seq(&items.get(0)?) => {
            (None, crate::bulk::sketch_pool(rayon::current_num_threads()))
        }
        Source::Python { .. } => (None, None),
    };
    // A reader with a core of its own sketches too whenever the sketching thread is behind.
    let help = pool.as_ref().map(|p| p.current_num_threads());
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Msg>(2);
        let stager = s.spawn(move || {
            let go = || stage_all(coll, keys, arrow, rx, upsert, strict);
            match pool {
                Some(pool) => pool.install(go),
                None => go(),
            }
        });
        let read = match source {
            Source::Python { items, texts } => read_python(py, items, *texts, coll, issues, help, &tx),
            Source::Arrow(a) => py.detach(|| read_arrow(a, issues, &tx)),
        };
        drop(tx);
        let staged = py.detach(|| stager.join());
        let (rejects, batch) = staged.map_err(|_| PyRuntimeError::new_err("insert_many: sketching panicked"))?;
        // A failed read leaves the batch unwritten.
        read?;
        Ok((rejects, batch))
    })
}

fn is_seq(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()
}
