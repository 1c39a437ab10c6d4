//! The two ends of the pipeline's channel: the calling thread reads records into chunks
//! and hands them on ([`read_python`], [`read_arrow`]); the sketching thread stages each
//! chunk's records and moves their sketches into the call's batch ([`stage_all`]).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use rayon::prelude::*;
use sketchdb::{Batch, Collection};

use super::super::ingest::not_text;
use super::super::probe::Staged;
use super::{ArrowRows, KeyIssue, Staging, Why};
use crate::bulk::Items;
use crate::convert;

/// A chunk is handed on once it holds this many tokens (text bytes count one token per 8)
/// or [`CHUNK_ROWS`] records: each chunk is one part of the transaction.
const CHUNK_TOKENS: usize = 1 << 18;
const CHUNK_ROWS: usize = 4096;

/// One record of a chunk: its content's place in the chunk's buffers, or its row of the
/// Arrow column, or why it is left out.
enum Item {
    Bad(Why),
    Text(Range<usize>),
    Tokens(Range<usize>),
    Row(usize),
}

pub(super) struct Chunk {
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

/// What the reader hands the sketching thread, in input order: a chunk to sketch, or the
/// records of a chunk the reader sketched itself (from its first record's index on).
pub(super) enum Msg {
    Chunk(Chunk),
    Sketched(usize, Vec<Result<Staged, Why>>),
}

/// The item of record `i` whose key keeps it out, if it does.
fn key_item(issues: &[Option<KeyIssue>], i: usize) -> Option<Item> {
    issues[i].as_ref().map(|issue| Item::Bad(Why::Key(issue.clone())))
}

/// A reader's help with the sketching: the collection, and the workers of the pool it
/// sketches beside.
#[derive(Clone, Copy)]
pub(super) struct Help<'a> {
    pub(super) coll: &'a Collection,
    pub(super) workers: usize,
}

/// Hands a chunk on; false once the sketching thread has stopped.
///
/// While the sketching thread is behind (the channel full), a reader given `help` sketches
/// records of the chunk itself (without the GIL) instead of waiting, and hands on their
/// sketches, then the rest: a share of one worker in `help.workers` (the whole chunk beside
/// one worker), which takes it about as long as the pool takes per waiting chunk, so it is
/// back to reading before the pool runs dry. Neither side idles, whichever of reading and
/// sketching is the slower.
fn send(py: Option<Python<'_>>, tx: &SyncSender<Msg>, chunk: Chunk, help: Option<Help<'_>>) -> bool {
    let mut c = match tx.try_send(Msg::Chunk(chunk)) {
        Ok(()) => return true,
        Err(TrySendError::Disconnected(_)) => return false,
        Err(TrySendError::Full(Msg::Chunk(c))) => c,
        Err(TrySendError::Full(m)) => return tx.send(m).is_ok(),
    };
    let wait = move || {
        let Some(help) = help else { return tx.send(Msg::Chunk(c)).is_ok() };
        let share = c.items.len().div_ceil(help.workers.max(1));
        loop {
            let part: Vec<Item> = c.items.drain(..share.min(c.items.len())).collect();
            let first = c.first;
            c.first += part.len();
            let staged = sketch(help.coll, None, &c.flat, &c.text, part, false);
            if tx.send(Msg::Sketched(first, staged)).is_err() {
                return false;
            }
            if c.items.is_empty() {
                return true;
            }
            c = match tx.try_send(Msg::Chunk(c)) {
                Ok(()) => return true,
                Err(TrySendError::Disconnected(_)) => return false,
                Err(TrySendError::Full(Msg::Chunk(c))) => c,
                Err(TrySendError::Full(m)) => return tx.send(m).is_ok(),
            };
        }
    };
    match py {
        Some(py) => py.detach(wait),
        None => wait(),
    }
}

/// The calling thread's part for Python contents: reads each record's text or tokens into
/// its chunk's buffers (a bad content is that record's reject). Fails only when the input
/// itself cannot be read (a list that shrank while read).
pub(super) fn read_python(
    py: Python<'_>,
    items: &Items<'_, '_>,
    texts: bool,
    coll: &Collection,
    issues: &[Option<KeyIssue>],
    help: Option<usize>,
    tx: &SyncSender<Msg>,
) -> PyResult<()> {
    let seed = coll.config().tokenizer.seed();
    let help = help.map(|workers| Help { coll, workers });
    send_chunks(Some(py), items.len(), tx, help, |i, c| {
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
/// reaches [`CHUNK_TOKENS`] (see [`send`] for `help`); stops early when the sketching thread
/// has gone.
fn send_chunks(
    py: Option<Python<'_>>,
    n: usize,
    tx: &SyncSender<Msg>,
    help: Option<Help<'_>>,
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
        if !send(py, tx, c, help) {
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
pub(super) fn read_arrow(rows: &ArrowRows<'_>, issues: &[Option<KeyIssue>], tx: &SyncSender<Msg>) -> PyResult<()> {
    send_chunks(None, issues.len(), tx, None, |i, _| {
        let cost = 1 + match rows {
            ArrowRows::Texts(t) => t[i].map_or(0, |t| t.len() / 8),
            ArrowRows::Tokens(t) => t.rows()[i].map_or(0, |(_, start, end)| end - start),
        };
        Ok((key_item(issues, i).unwrap_or(Item::Row(i)), cost))
    })
}

/// The sketching thread: each chunk's records staged on the current pool and moved into
/// the call's batch. Stops at the first chunk with a reject under `strict` (no batch).
pub(super) fn stage_all(
    coll: &Collection,
    keys: &[Option<Vec<u8>>],
    arrow: Option<&ArrowRows<'_>>,
    rx: Receiver<Msg>,
    upsert: bool,
    strict: bool,
) -> Staging {
    let mut rejects = Vec::new();
    let mut batch = Batch::with_capacity(keys.len());
    for m in rx {
        let (first, staged) = match m {
            Msg::Chunk(c) => (c.first, sketch(coll, arrow, &c.flat, &c.text, c.items, true)),
            Msg::Sketched(first, staged) => (first, staged),
        };
        for (j, r) in staged.into_iter().enumerate() {
            let i = first + j;
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

/// Records of a chunk (`items` over its buffers `flat` and `text`) staged, on the current
/// rayon pool (`par`) or on this thread.
fn sketch(
    coll: &Collection,
    arrow: Option<&ArrowRows<'_>>,
    flat: &[u64],
    text: &str,
    items: Vec<Item>,
    par: bool,
) -> Vec<Result<Staged, Why>> {
    let one = |item| stage(coll, arrow, flat, text, item);
    if par { items.into_par_iter().map(one).collect() } else { items.into_iter().map(one).collect() }
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
