//! Many items sketched at once from Python objects: texts and token lists read on the
//! calling thread (it holds the GIL) while the rows read before them are sketched on all
//! cores without it, and NumPy token arrays sketched in place. `sketch_many` returns the
//! signatures as one NumPy matrix (which `insert_many(signatures=)` reads back); the
//! classes' `bulk` returns sketch objects.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use rayon::prelude::*;
use sketchdb::recipes::DEFAULT_SEED;
use sketchdb::{Sketch, Sketcher, Tokenizer, signature};

use crate::convert::{self, Seq};
use crate::errors::sketch_to_py;

/// A chunk is handed to the sketching thread once it holds this many tokens (text bytes
/// count one token per 8) or [`CHUNK_ROWS`] rows: small enough that reading and sketching
/// overlap from the first chunk, large enough that the hand-over costs nothing.
const CHUNK_TOKENS: usize = 1 << 16;
const CHUNK_ROWS: usize = 4096;

/// One item of a chunk: its tokens' range in the chunk's buffer, or its text.
enum Row {
    Tokens(Range<usize>),
    Text(usize),
}

/// Items read under the GIL, to be sketched into `out` (`stride` elements per item).
struct Chunk<'o, T> {
    first: usize,
    rows: Vec<Row>,
    flat: Vec<u64>,
    texts: Vec<String>,
    out: &'o mut [T],
}

/// An item's failure: its index and why.
type ItemError = (usize, String);

/// The items of a Python sequence or iterable, by index.
pub(crate) enum Items<'a, 'py> {
    Seq(Seq<'a, 'py>),
    Collected(Vec<Bound<'py, PyAny>>),
}

impl<'a, 'py> Items<'a, 'py> {
    /// A list or tuple as it is; any other iterable collected first (its length is needed
    /// before the output is laid out).
    pub(crate) fn of(obj: &'a Bound<'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(
                "items must be an iterable of texts or token iterables, not one str/bytes",
            ));
        }
        if let Ok(l) = obj.cast::<PyList>() {
            return Ok(Items::Seq(Seq::List(l)));
        }
        if let Ok(t) = obj.cast::<PyTuple>() {
            return Ok(Items::Seq(Seq::Tuple(t)));
        }
        Ok(Items::Collected(obj.try_iter()?.collect::<PyResult<_>>()?))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Items::Seq(s) => s.len(),
            Items::Collected(v) => v.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Items::Seq(s) => s.get(i),
            Items::Collected(v) => Ok(v[i].clone()),
        }
    }
}

/// Reads one item into the chunk: a `str` is a text, anything else an iterable of tokens
/// (a 1-D NumPy `uint64`/`int64` array is copied whole).
fn read_item<T>(item: &Bound<'_, PyAny>, seed: u64, chunk: &mut Chunk<'_, T>) -> PyResult<usize> {
    if let Ok(s) = item.cast::<PyString>() {
        let text = s.to_cow()?.into_owned();
        let cost = text.len() / 8 + 1;
        chunk.texts.push(text);
        chunk.rows.push(Row::Text(chunk.texts.len() - 1));
        return Ok(cost);
    }
    let start = chunk.flat.len();
    if item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>() {
        convert::extend_tokens(item, seed, &mut chunk.flat)?;
    } else if item.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err("a bytes object is not a token list (give [b\"...\"] for one token)"));
    } else if let Ok(a) = item.extract::<PyReadonlyArray1<'_, u64>>() {
        chunk.flat.extend(a.as_array().iter());
    } else if let Ok(a) = item.extract::<PyReadonlyArray1<'_, i64>>() {
        chunk.flat.extend(a.as_array().iter().map(|&x| x as u64));
    } else {
        convert::extend_tokens(item, seed, &mut chunk.flat)?;
    }
    chunk.rows.push(Row::Tokens(start..chunk.flat.len()));
    Ok(chunk.flat.len() - start + 1)
}

/// Sketches every item of `items` into `out` (`stride` elements per item, in item order),
/// `put` writing each sketch. Reading (under the GIL) and sketching (all cores, GIL
/// released) overlap chunk by chunk. An error names the first failing item.
pub(crate) fn sketch_items<T, P>(
    py: Python<'_>,
    items: &Items<'_, '_>,
    sketcher: &Sketcher,
    tokenizer: &Tokenizer,
    out: &mut [T],
    stride: usize,
    put: P,
) -> PyResult<()>
where
    T: Send,
    P: Fn(Sketch, &mut [T]) -> Result<(), String> + Sync,
{
    let n = items.len();
    if out.len() != n * stride {
        return Err(PyRuntimeError::new_err("output does not fit the items"));
    }
    let seed = tokenizer.seed();
    let pool = sketch_pool(rayon::current_num_threads());
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Chunk<'_, T>>(2);
        let put = &put;
        let worker = s.spawn(move || match pool {
            Some(pool) => pool.install(|| drain(rx, sketcher, tokenizer, stride, put)),
            None => drain(rx, sketcher, tokenizer, stride, put),
        });
        let read = read_all(py, items, seed, out, stride, &tx);
        drop(tx);
        let sketched = py.detach(|| worker.join()).map_err(|_| PyRuntimeError::new_err("sketching panicked"))?;
        // Chunks go over in item order, so a sketching failure precedes any reading failure.
        sketched.map_err(|(i, e)| PyValueError::new_err(format!("item {i}: {e}")))?;
        read
    })
}

/// The pool list chunks are sketched on while the calling thread reads them: one worker
/// fewer than the caller's `threads` (the reader is the other; with all `threads` sketching
/// beside it, the serial reader was preempted and two threads ran slower than one), made once
/// per size. `None` for one thread: the sketching thread then runs its chunks itself.
pub(crate) fn sketch_pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    if threads <= 1 {
        return None;
    }
    let mut pools = POOLS.get_or_init(Default::default).lock().ok()?;
    if let Some(pool) = pools.get(&threads) {
        return Some(pool.clone());
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .thread_name(|i| format!("sketchdb-bulk-{i}"))
            .build()
            .ok()?,
    );
    pools.insert(threads, pool.clone());
    Some(pool)
}

/// Reads the items into chunks and sends each over `tx` (waiting without the GIL when the
/// sketching thread is behind).
fn read_all<'o, T: Send>(
    py: Python<'_>,
    items: &Items<'_, '_>,
    seed: u64,
    mut out: &'o mut [T],
    stride: usize,
    tx: &SyncSender<Chunk<'o, T>>,
) -> PyResult<()> {
    let n = items.len();
    let mut i = 0;
    while i < n {
        let mut chunk = Chunk {
            first: i,
            rows: Vec::new(),
            flat: Vec::with_capacity(CHUNK_TOKENS + CHUNK_TOKENS / 4),
            texts: Vec::new(),
            out: &mut [],
        };
        let mut cost = 0;
        while i < n && cost < CHUNK_TOKENS && chunk.rows.len() < CHUNK_ROWS {
            let item = items.get(i)?;
            cost += read_item(&item, seed, &mut chunk).map_err(|e| convert::prefixed(py, &format!("item {i}"), e))?;
            i += 1;
        }
        let (head, tail) = std::mem::take(&mut out).split_at_mut(chunk.rows.len() * stride);
        chunk.out = head;
        out = tail;
        let sent = match tx.try_send(chunk) {
            Err(TrySendError::Full(c)) => py.detach(|| tx.send(c).is_ok()),
            r => r.is_ok(),
        };
        if !sent {
            // The sketching thread stopped early (it failed): its error is the one to report.
            return Ok(());
        }
    }
    Ok(())
}

/// The sketching thread: each chunk on all cores, until the reader hangs up.
fn drain<T: Send>(
    rx: Receiver<Chunk<'_, T>>,
    sketcher: &Sketcher,
    tokenizer: &Tokenizer,
    stride: usize,
    put: &(impl Fn(Sketch, &mut [T]) -> Result<(), String> + Sync),
) -> Result<(), ItemError> {
    for c in rx {
        let failed = c
            .out
            .par_chunks_mut(stride)
            .zip(c.rows.par_iter())
            .enumerate()
            .filter_map(|(i, (o, r))| {
                let s = match r {
                    Row::Tokens(t) => sketcher.sketch_multiset(&c.flat[t.clone()]),
                    Row::Text(t) => sketcher.sketch_text(tokenizer, &c.texts[*t]),
                };
                s.map_err(|e| e.to_string()).and_then(|s| put(s, o)).err().map(|e| (c.first + i, e))
            })
            .min_by_key(|e| e.0);
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(())
}

/// Sketches rows given by index (`row(i)` for `i < out.len() / stride`) on all cores with the
/// GIL released; an error names the first failing row.
fn sketch_rows<'r, T: Send>(
    py: Python<'_>,
    sketcher: &Sketcher,
    out: &mut [T],
    stride: usize,
    row: impl Fn(usize) -> &'r [u64] + Sync,
    put: impl Fn(Sketch, &mut [T]) -> Result<(), String> + Sync,
) -> PyResult<()> {
    let failed = py.detach(|| {
        out.par_chunks_mut(stride)
            .enumerate()
            .filter_map(|(i, o)| {
                sketcher
                    .sketch_multiset(row(i))
                    .map_err(|e| e.to_string())
                    .and_then(|s| put(s, o))
                    .err()
                    .map(|e| (i, e))
            })
            .min_by_key(|e| e.0)
    });
    match failed {
        Some((i, e)) => Err(PyValueError::new_err(format!("item {i}: {e}"))),
        None => Ok(()),
    }
}

/// The tokens of a NumPy `uint64`/`int64` array of any shape, in row-major order: a
/// C-contiguous `uint64` array's own memory (borrowed for the call, as the Arrow kernels
/// borrow a column: nothing may write it meanwhile), anything else copied once.
struct Flat<'py> {
    array: Option<PyReadonlyArrayDyn<'py, u64>>,
    copy: Vec<u64>,
    shape: Vec<usize>,
}

impl<'py> Flat<'py> {
    fn of(obj: &Bound<'py, PyAny>) -> Option<Self> {
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, u64>>() {
            let shape = a.shape().to_vec();
            if a.is_c_contiguous() {
                return Some(Flat { array: Some(a), copy: Vec::new(), shape });
            }
            let copy = a.as_array().iter().copied().collect();
            return Some(Flat { array: None, copy, shape });
        }
        let a = obj.extract::<PyReadonlyArrayDyn<'py, i64>>().ok()?;
        let copy = a.as_array().iter().map(|&x| x as u64).collect();
        Some(Flat { array: None, copy, shape: a.shape().to_vec() })
    }

    fn values(&self) -> &[u64] {
        match self.array.as_ref().map(|a| a.as_slice()) {
            Some(Ok(v)) => v,
            _ => &self.copy,
        }
    }
}

/// Row boundaries from `offsets` over `len` flat tokens: `offsets[0] == 0`, non-decreasing,
/// the last equal to `len`.
fn bounds(offsets: &Bound<'_, PyAny>, len: usize) -> PyResult<Vec<usize>> {
    let offs: Vec<u64> = if let Ok(a) = offsets.extract::<PyReadonlyArray1<'_, u64>>() {
        a.as_array().to_vec()
    } else if let Ok(a) = offsets.extract::<PyReadonlyArray1<'_, i64>>() {
        let v = a.as_array();
        if let Some(j) = v.iter().position(|&x| x < 0) {
            return Err(PyValueError::new_err(format!("offsets[{j}] is negative")));
        }
        v.iter().map(|&x| x as u64).collect()
    } else {
        offsets.extract::<Vec<u64>>().map_err(|_| {
            PyTypeError::new_err("offsets must be a 1-D NumPy array (uint64 or int64) or a list of ints >= 0")
        })?
    };
    if offs.first() != Some(&0) {
        return Err(PyValueError::new_err("offsets must start at 0 (one more offset than rows)"));
    }
    if let Some(j) = offs.windows(2).position(|w| w[0] > w[1]) {
        return Err(PyValueError::new_err(format!("offsets[{}] < offsets[{j}]: offsets must not decrease", j + 1)));
    }
    if offs.last() != Some(&(len as u64)) {
        return Err(PyValueError::new_err(format!("the last offset must be the number of tokens ({len})")));
    }
    Ok(offs.into_iter().map(|o| o as usize).collect())
}

/// Signatures of many items as one NumPy `uint8` matrix `(n, W)`, where
/// `W = sketchdb.arrow.signature_width(...)` for the same parameters.
///
/// `items` is texts (`str`, cut by `shingle` words or `ngram` characters) and token lists
/// (`int` u64 hashes, `str`/`bytes` tokens hashed with `token_seed`, 1-D NumPy arrays) in a
/// list, tuple or any iterable; or a 2-D NumPy `uint64`/`int64` array, one row per item; or
/// a 1-D one with `offsets`, the `n + 1` row boundaries from 0 to `len(items)`. Row `i` is
/// `to_bytes()` of the sketch of item `i`: what `sketchdb.arrow.sketch`/`sketch_tokens`
/// return and a collection with the same parameters stores. Lists are read on the calling
/// thread while the rows read before them are sketched on all cores with the GIL released.
/// A bad item raises `TypeError` or `ValueError` naming the item (and the token) by index.
#[pyfunction]
#[pyo3(signature = (items, *, offsets = None, kind = "minhash", k = 128, bits = None, seed = DEFAULT_SEED, shingle = None, ngram = None, token_seed = 0, recipe = None, family = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sketch_many<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    offsets: Option<&Bound<'py, PyAny>>,
    kind: &str,
    k: u32,
    bits: Option<u8>,
    seed: u64,
    shingle: Option<u32>,
    ngram: Option<u32>,
    token_seed: u64,
    recipe: Option<&str>,
    family: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let (params, tokenizer) =
        convert::config(convert::kind(kind)?, k, bits, seed, recipe, shingle, ngram, token_seed, family)?;
    let sketcher = Sketcher::new(params).map_err(sketch_to_py)?;
    let width = signature::width(&params);
    let put = |s: Sketch, o: &mut [u8]| signature::encode_into(&s, o).map_err(|e| e.to_string());
    let flat = Flat::of(items);
    let out = if let Some(offsets) = offsets {
        let Some(flat) = flat.filter(|f| f.shape.len() == 1) else {
            return Err(PyTypeError::new_err(
                "with offsets=, items must be a 1-D NumPy array of uint64 or int64 tokens",
            ));
        };
        let flat = flat.values();
        let b = bounds(offsets, flat.len())?;
        let mut out = vec![0u8; (b.len() - 1) * width];
        sketch_rows(py, &sketcher, &mut out, width, |i| &flat[b[i]..b[i + 1]], put)?;
        out
    } else if let Some(flat) = flat {
        let [n, m] = flat.shape[..] else {
            return Err(PyTypeError::new_err(
                "a NumPy array of tokens is 2-D (one row per item), or 1-D with offsets= (the rows' boundaries)",
            ));
        };
        let flat = flat.values();
        let mut out = vec![0u8; n * width];
        sketch_rows(py, &sketcher, &mut out, width, |i| &flat[i * m..(i + 1) * m], put)?;
        out
    } else if items.hasattr("__arrow_c_array__")? || items.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(
            "items is an Arrow array: use sketchdb.arrow.sketch_tokens (token lists) or sketchdb.arrow.sketch (texts)",
        ));
    } else {
        let items = Items::of(items)?;
        let mut out = vec![0u8; items.len() * width];
        sketch_items(py, &items, &sketcher, &tokenizer, &mut out, width, put)?;
        out
    };
    let n = out.len() / width.max(1);
    Ok(PyArray1::from_vec(py, out).reshape([n, width])?.into_any())
}

/// The bytes of a 2-D NumPy `uint8` matrix of signatures (`sketchdb.sketch_many`'s output),
/// row after row; `None` for anything that is not a 2-D `uint8` array.
pub(crate) fn signature_matrix(obj: &Bound<'_, PyAny>, width: usize) -> PyResult<Option<Vec<u8>>> {
    let Ok(a) = obj.extract::<PyReadonlyArray2<'_, u8>>() else { return Ok(None) };
    if a.shape()[1] != width {
        return Err(PyValueError::new_err(format!(
            "signatures is a matrix of {}-byte rows but this collection's signatures are {width} bytes",
            a.shape()[1]
        )));
    }
    Ok(Some(match a.as_slice() {
        Ok(b) if a.is_c_contiguous() => b.to_vec(),
        _ => a.as_array().iter().copied().collect(),
    }))
}
