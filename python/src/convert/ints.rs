//! Python ints read as `u64` token hashes in a tight loop over a list or tuple.
//!
//! The general path ([`super::token`]) makes an owned reference per item, checks its type and
//! extracts through PyO3, whose `u64` conversion calls `PyLong_AsUnsignedLongLong`: under
//! CPython 3.11 that copies every int above 2^30 through `_PyLong_AsByteArray` (30% of the
//! CPU of sketching `list[list[int]]` in a `perf` profile). Where a C `unsigned long` is 64
//! bits (every 64-bit platform but Windows), `PyLong_AsUnsignedLong` gives the same value
//! and the same errors from a loop over the int's digits, and it checks the type itself.
//!
//! This file and `arrow/ffi.rs` hold the binding's `unsafe` code.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

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
}
