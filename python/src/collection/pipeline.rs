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
//!    (no copy: keys already stored are found before, so the batch is written once).
//! 3. The batch is applied in one transaction ([`Collection::apply`]: the index's band keys
//!    are computed beside the record writes), with the GIL released.
//!
//! The rejects rule is `ingest`'s. Keys already stored are looked up before the pipeline
//! starts (one lookup per key, none on an empty collection); if another writer stores one of
//! the keys meanwhile, the transaction fails whole and the call runs again from its input.
//! (Writing each chunk as it is sketched, into one open transaction, was slower: keys that
//! do not ascend across chunks are then inserted into the key B-tree one by one instead of
//! appended, and the index keys each row after the last chunk instead of beside the writes.)

use std::borrow::Cow;
use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use rayon::prelude::*;
use sketchdb::{Batch, Collection, StorageError, WriteSummary};

use super::ingest::{keys_for, not_text};
use super::probe::Staged;
use super::results::{PyInsertReport, report};
use crate::arrow::ffi::arrow_chunks;
use crate::arrow::{TokenRows, text_rows};
use crate::bulk::Items;
use crate::convert;
use crate::errors::to_py;

/// A chunk is handed on once it holds this many tokens (text bytes count one token per 8)
/// or [`CHUNK_ROWS`] records: each chunk is one part of the transaction.
const CHUNK_TOKENS: usize = 1 << 18;
const CHUNK_ROWS: usize = 4096;

/// How often the call runs again when other writers store its keys while it runs.
const ATTEMPTS: usize = 3;

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

/// One record of a chunk: its content's place in the chunk's buffers, or its row of the
/// Arrow column, or why it is left out.
enum Item {
    Bad(Why),
    Text(Range<usize>),
    Tokens(Range<usize>),
    Row(usize),
}

/// The rejects (record index and why, in input order) and the batch of the other records
/// (`None` when a strict call met a reject).
type Staging = (Vec<(usize, Why)>, Option<Batch>);

struct Chunk {
    first: usize,
    items: Vec<Item>,
    flat: Vec<u64>,
    text: String,
}

impl Chunk {
    fn new(first: usize) -> Self {
        Chunk { first, items: Vec::with_capacity(CHUNK_ROWS), flat: Vec::new(), text: String::new() }
    }
}

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
                Why::Key(KeyIssue::Stored) => {
                    let k = String::from_utf8_lossy(key.as_deref().unwrap_or_default()).into_owned();
                    let msg = format!("record {i}: duplicate key {k} (already stored)");
                    crate::errors::raise(crate::errors::Class::Error, msg)
                }
            };
            out.push((i, key, err));
        }
        return report(py, written, out, strict);
    }
    Err(PyRuntimeError::new_err("insert_many: other writers kept storing this call's keys"))
}

/// Marks the records whose key is stored already (a lookup per readable, unrepeated key, on
/// all cores, without the GIL).
fn mark_stored(
    py: Python<'_>,
    coll: &Collection,
    keys: &[Option<Vec<u8>>],
    issues: &mut [Option<KeyIssue>],
) -> PyResult<()> {
    let stored: Vec<bool> = py
        .detach(|| {
            let snap = coll.snapshot()?;
            keys.par_iter()
                .zip(issues.par_iter())
                .map(|(k, issue)| match (k, issue) {
                    (Some(k), None | Some(KeyIssue::Stored)) => Ok(snap.get(k)?.is_some()),
                    _ => Ok(false),
                })
                .collect::<sketchdb::Result<Vec<bool>>>()
        })
        .map_err(to_py)?;
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
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Chunk>(2);
        let stager = s.spawn(move || {
            let go = || stage_all(coll, keys, arrow, rx, upsert, strict);
            match pool {
                Some(pool) => pool.install(go),
                None => go(),
            }
        });
        let read = match source {
            Source::Python { items, texts } => read_python(py, items, *texts, coll, issues, &tx),
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

/// The item of record `i` whose key keeps it out, if it does.
fn key_item(issues: &[Option<KeyIssue>], i: usize) -> Option<Item> {
    issues[i].as_ref().map(|issue| Item::Bad(Why::Key(issue.clone())))
}

/// Hands a chunk on; false once the sketching thread has stopped.
fn send(py: Option<Python<'_>>, tx: &SyncSender<Chunk>, chunk: Chunk) -> bool {
    match (tx.try_send(chunk), py) {
        (Err(TrySendError::Full(m)), Some(py)) => py.detach(|| tx.send(m).is_ok()),
        (Err(TrySendError::Full(m)), None) => tx.send(m).is_ok(),
        (r, _) => r.is_ok(),
    }
}

/// The calling thread's part for Python contents: reads each record's text or tokens into
/// its chunk's buffers (a bad content is that record's reject). Fails only when the input
/// itself cannot be read (a list that shrank while read).
fn read_python(
    py: Python<'_>,
    items: &Items<'_, '_>,
    texts: bool,
    coll: &Collection,
    issues: &[Option<KeyIssue>],
    tx: &SyncSender<Chunk>,
) -> PyResult<()> {
    let seed = coll.config().tokenizer.seed();
    send_chunks(Some(py), items.len(), tx, |i, c| {
        let item = match key_item(issues, i) {
            Some(bad) => bad,
            None if texts => read_text(&items.get(i)?, &mut c.text),
            None => read_tokens(&items.get(i)?, seed, &mut c.flat),
        };
        let cost = match &item {
            Item::Text(r) => r.len() / 8 + 1,
            Item::Tokens(r) => r.len() + 1,
            _ => 1,
        };
        Ok((item, cost))
    })
}

/// Reads items `0..n` by `next` (the item, and its cost in tokens with text bytes counting
/// one per 8) into chunks of at most [`CHUNK_ROWS`] items, each handed on once its cost
/// reaches [`CHUNK_TOKENS`]; stops early when the sketching thread has gone.
fn send_chunks(
    py: Option<Python<'_>>,
    n: usize,
    tx: &SyncSender<Chunk>,
    mut next: impl FnMut(usize, &mut Chunk) -> PyResult<(Item, usize)>,
) -> PyResult<()> {
    let mut i = 0;
    while i < n {
        let mut c = Chunk::new(i);
        let mut cost = 0;
        while i < n && cost < CHUNK_TOKENS && c.items.len() < CHUNK_ROWS {
            let (item, item_cost) = next(i, &mut c)?;
            c.items.push(item);
            cost += item_cost;
            i += 1;
        }
        if !send(py, tx, c) {
            break;
        }
    }
    Ok(())
}

fn read_text(obj: &Bound<'_, PyAny>, text: &mut String) -> Item {
    let Ok(s) = obj.cast::<PyString>() else { return Item::Bad(Why::Py(not_text(obj))) };
    match s.to_cow() {
        Ok(t) => {
            let start = text.len();
            text.push_str(&t);
            Item::Text(start..text.len())
        }
        Err(e) => Item::Bad(Why::Py(e)),
    }
}

fn read_tokens(obj: &Bound<'_, PyAny>, seed: u64, flat: &mut Vec<u64>) -> Item {
    let start = flat.len();
    match convert::tokens_into(obj, seed, flat) {
        Ok(()) => Item::Tokens(start..flat.len()),
        Err(e) => {
            flat.truncate(start);
            Item::Bad(Why::Py(e))
        }
    }
}

/// The chunks of an Arrow column: rows by index (read by the sketching thread in place).
fn read_arrow(rows: &ArrowRows<'_>, issues: &[Option<KeyIssue>], tx: &SyncSender<Chunk>) -> PyResult<()> {
    send_chunks(None, issues.len(), tx, |i, _| {
        let cost = 1 + match rows {
            ArrowRows::Texts(t) => t[i].map_or(0, |t| t.len() / 8),
            ArrowRows::Tokens(t) => t.rows()[i].map_or(0, |(_, start, end)| end - start),
        };
        Ok((key_item(issues, i).unwrap_or(Item::Row(i)), cost))
    })
}

/// The sketching thread: each chunk's records staged on the current pool and moved into
/// the call's batch. Stops at the first chunk with a reject under `strict` (no batch).
fn stage_all(
    coll: &Collection,
    keys: &[Option<Vec<u8>>],
    arrow: Option<&ArrowRows<'_>>,
    rx: Receiver<Chunk>,
    upsert: bool,
    strict: bool,
) -> Staging {
    let mut rejects = Vec::new();
    let mut batch = Batch::with_capacity(keys.len());
    for c in rx {
        let (flat, text) = (&c.flat, &c.text);
        let staged: Vec<Result<Staged, Why>> =
            c.items.into_par_iter().map(|item| stage(coll, arrow, flat, text, item)).collect();
        for (j, r) in staged.into_iter().enumerate() {
            let i = c.first + j;
            match (r, &keys[i]) {
                (Ok(s), Some(k)) => s.add_to(&mut batch, k, upsert),
                (Ok(_), None) => rejects.push((i, Why::Py(PyValueError::new_err("a record without a key")))),
                (Err(why), _) => rejects.push((i, why)),
            }
        }
        if strict && !rejects.is_empty() {
            return (rejects, None);
        }
    }
    (rejects, Some(batch))
}

/// One record's sketch (and set, where kept), made as [`super::probe::Probe::stage`] makes it.
fn stage(
    coll: &Collection,
    arrow: Option<&ArrowRows<'_>>,
    flat: &[u64],
    text: &str,
    item: Item,
) -> Result<Staged, Why> {
    let tokenizer = &coll.config().tokenizer;
    match item {
        Item::Bad(why) => Err(why),
        Item::Tokens(r) => Staged::of_tokens(coll, &flat[r]).map_err(Why::Core),
        Item::Text(r) => Staged::of_owned_tokens(coll, tokenizer.tokens(&text[r])).map_err(Why::Core),
        Item::Row(i) => match arrow {
            Some(ArrowRows::Texts(t)) => match t[i] {
                Some(t) => Staged::of_owned_tokens(coll, tokenizer.tokens(t)).map_err(Why::Core),
                None => Err(Why::Py(PyValueError::new_err("a null text"))),
            },
            Some(ArrowRows::Tokens(rows)) => match rows.rows()[i] {
                Some(r) => match rows.tokens(r, tokenizer.seed()) {
                    Ok(Cow::Borrowed(t)) => Staged::of_tokens(coll, t).map_err(Why::Core),
                    Ok(Cow::Owned(t)) => Staged::of_owned_tokens(coll, t).map_err(Why::Core),
                    Err(msg) => Err(Why::Py(PyValueError::new_err(msg))),
                },
                None => Err(Why::Py(PyValueError::new_err("a null token list"))),
            },
            None => Err(Why::Py(PyRuntimeError::new_err("an Arrow row without its column"))),
        },
    }
}
