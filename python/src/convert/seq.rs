//! Python ints and strs read in a tight loop over a list or tuple: ints as `u64` token
//! hashes, strs as their UTF-8 bytes.
//!
//! The general path ([`super::token`]) makes an owned reference per item, checks its type and
//! extracts through PyO3, whose `u64` conversion calls `PyLong_AsUnsignedLongLong`: under
//! CPython 3.11 that copies every int above 2^30 through `_PyLong_AsByteArray` (30% of the
//! CPU of sketching `list[list[int]]` in a `perf` profile). Where a C `unsigned long` is 64
//! bits (every 64-bit platform but Windows), `PyLong_AsUnsignedLong` gives the same value
//! and the same errors from a loop over the int's digits, and it checks the type itself.
//!
//! A `str` token through the general path costs a new `bytes` object (the abi3 API for
//! Python 3.9 has no borrowed UTF-8 view) and a copy. `PyUnicode_AsUTF8AndSize` returns the
//! string's own UTF-8 (an ASCII string's data; other strings cache theirs on first use): in
//! the limited API from 3.10, exported by every CPython 3 (not through Windows' `python3.dll`
//! before 3.10, so Windows builds join the tokens instead).
//!
//! This file and `arrow/ffi.rs` hold the binding's `unsafe` code.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sketchdb::estimate::token_hash;

#[cfg(not(windows))]
unsafe extern "C" {
    /// CPython's UTF-8 view of a `str`: a pointer to `*size` bytes owned by the string (NUL
    /// after them), or NULL with an exception set (not a `str`, or lone surrogates).
    fn PyUnicode_AsUTF8AndSize(unicode: *mut pyo3::ffi::PyObject, size: *mut pyo3::ffi::Py_ssize_t) -> *const u8;
}

/// A list or tuple, read item by item.
pub(crate) enum Seq<'a, 'py> {
    List(&'a Bound<'py, PyList>),
    Tuple(&'a Bound<'py, PyTuple>),
}

impl<'py> Seq<'_, 'py> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Seq::List(l) => l.len(),
            Seq::Tuple(t) => t.len(),
        }
    }

    /// Item `i` (an `IndexError` past the end: a list can shrink while it is read).
    pub(crate) fn get(&self, i: usize) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Seq::List(l) => l.get_item(i),
            Seq::Tuple(t) => t.get_item(i),
        }
    }

    /// Appends the values of the items from `start` on while each is an `int` in
    /// `0 ..= 2**64 - 1`, and returns the index of the first item that is not (the length
    /// when all are). Runs no Python code while it holds an item.
    pub(crate) fn ints_from(&self, start: usize, out: &mut Vec<u64>) -> usize {
        let n = self.len();
        #[cfg(all(target_pointer_width = "64", not(windows)))]
        {
            use pyo3::ffi;
            let (p, get): (_, unsafe extern "C" fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject) =
                match self {
                    Seq::List(l) => (l.as_ptr(), ffi::PyList_GetItem),
                    Seq::Tuple(t) => (t.as_ptr(), ffi::PyTuple_GetItem),
                };
            let py = match self {
                Seq::List(l) => l.py(),
                Seq::Tuple(t) => t.py(),
            };
            out.reserve(n.saturating_sub(start));
            for i in start..n {
                // SAFETY: `p` is a live list or tuple (borrowed from `self` for this call) and the
                // GIL is held (`py`). `i < n` and nothing shrinks the sequence between the length
                // read and this read: no Python code runs in this loop (`PyLong_AsUnsignedLong`
                // reads an int's digits and calls no `__index__`), so `get` returns a borrowed,
                // live item (never null). That item is used only inside this block. On failure
                // the function sets an exception, which is taken below, and the loop stops.
                let v = unsafe { ffi::PyLong_AsUnsignedLong(get(p, i as ffi::Py_ssize_t)) };
                if v == std::ffi::c_ulong::MAX && PyErr::occurred(py) {
                    drop(PyErr::take(py));
                    return i;
                }
                out.push(v);
            }
            n
        }
        #[cfg(not(all(target_pointer_width = "64", not(windows))))]
        {
            let _ = out;
            start.min(n)
        }
    }

    /// Appends the hash (`token_hash` with `seed`, as `update` hashes a `str`) of every
    /// item's UTF-8 to `out` when every item is a `str` that encodes; otherwise leaves `out`
    /// as it was and returns false. Runs no Python code while it holds an item.
    pub(crate) fn str_hashes(&self, seed: u64, out: &mut Vec<u64>) -> bool {
        let start = out.len();
        out.reserve(self.len());
        let read = self.strs(&mut |bytes| out.push(token_hash(bytes, seed)));
        if !read {
            out.truncate(start);
        }
        read
    }

    #[cfg(not(windows))]
    fn strs(&self, each: &mut impl FnMut(&[u8])) -> bool {
        use pyo3::ffi;
        let (p, get, py): (_, unsafe extern "C" fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject, _) =
            match self {
                Seq::List(l) => (l.as_ptr(), ffi::PyList_GetItem, l.py()),
                Seq::Tuple(t) => (t.as_ptr(), ffi::PyTuple_GetItem, t.py()),
            };
        for i in 0..self.len() {
            let mut size: ffi::Py_ssize_t = 0;
            // SAFETY: `p` is a live list or tuple (borrowed from `self`) and the GIL is held
            // (`py`). `i` is below the length read in this loop's bound, and no Python code runs
            // in the loop (`PyUnicode_AsUTF8AndSize` encodes in C; it may allocate the UTF-8
            // cache of a non-ASCII string, which starts no garbage collection; `each` hashes
            // bytes), so `get` returns a borrowed, live item. The returned pointer addresses
            // `size` bytes owned by that string, alive while the sequence holds it; they are
            // read before the next call. On NULL the exception set is taken below.
            let bytes = unsafe {
                let utf8 = PyUnicode_AsUTF8AndSize(get(p, i as ffi::Py_ssize_t), &mut size);
                if utf8.is_null() { None } else { Some(std::slice::from_raw_parts(utf8, size as usize)) }
            };
            let Some(bytes) = bytes else {
                drop(PyErr::take(py));
                return false;
            };
            each(bytes);
        }
        true
    }

    /// Windows: the tokens joined with NUL bytes by the interpreter and encoded once (none
    /// may hold a NUL itself: the count of NULs tells).
    #[cfg(windows)]
    fn strs(&self, each: &mut impl FnMut(&[u8])) -> bool {
        let (obj, py) = match self {
            Seq::List(l) => (l.as_any(), l.py()),
            Seq::Tuple(t) => (t.as_any(), t.py()),
        };
        let joined = pyo3::intern!(py, "\0").call_method1(pyo3::intern!(py, "join"), (obj,));
        let Ok(joined) = joined else { return false };
        let Ok(text) = joined.cast::<pyo3::types::PyString>() else { return false };
        let Ok(bytes) = text.encode_utf8() else { return false };
        let bytes = bytes.as_bytes();
        if self.len() == 0 || bytes.iter().filter(|&&b| b == 0).count() != self.len() - 1 {
            return false;
        }
        bytes.split(|&b| b == 0).for_each(each);
        true
    }
}
