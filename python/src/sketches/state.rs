//! The state every sketch class holds (`Core`): open (hashed tokens kept, signature computed
//! on demand and cached) or frozen (a signature only), behind a read/write lock
//! (`CoreLock`) so one sketch object can be shared between threads.

use std::sync::{Arc, OnceLock};

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use sketchdb::{Sketch, SketchKind, SketchParams, Sketcher, Tokenizer};

use crate::errors::IntoPy;

/// What every sketch class holds.
pub(crate) struct Core {
    pub(super) params: SketchParams,
    pub(super) tokenizer: Tokenizer,
    /// Open: the sketcher and the hashed tokens so far (for set kinds deduplicated now and
    /// then; SimHash keeps repeats, they are term frequencies). `None`: frozen.
    pub(super) open: Option<(Arc<Sketcher>, Vec<u64>)>,
    /// Sorted-and-deduplicated prefix length of the open token vector (set kinds).
    pub(super) deduped: usize,
    /// The signature, computed on first use after the last change.
    pub(super) cached: OnceLock<Sketch>,
}

impl Core {
    pub(crate) fn open(params: SketchParams, tokenizer: Tokenizer) -> PyResult<Self> {
        let sketcher = Arc::new(Sketcher::new(params).py_err()?);
        Ok(Core { params, tokenizer, open: Some((sketcher, Vec::new())), deduped: 0, cached: OnceLock::new() })
    }

    pub(crate) fn frozen(sketch: Sketch, tokenizer: Tokenizer) -> Self {
        let cached = OnceLock::new();
        let params = *sketch.params();
        let _ = cached.set(sketch);
        Core { params, tokenizer, open: None, deduped: 0, cached }
    }

    pub(crate) fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    fn tokens_mut(&mut self) -> PyResult<&mut Vec<u64>> {
        match &mut self.open {
            Some((_, t)) => Ok(t),
            None => Err(PyValueError::new_err(
                "this sketch is frozen (read from a collection, unpickled from a signature or made by bulk): \
                 it keeps no tokens to update or merge",
            )),
        }
    }

    pub(super) fn extend(&mut self, new: impl IntoIterator<Item = u64>) -> PyResult<()> {
        let set_kind = self.params.kind() != SketchKind::SimHash;
        let deduped = self.deduped;
        let tokens = self.tokens_mut()?;
        tokens.extend(new);
        if set_kind && tokens.len() > 2 * deduped + 1024 {
            tokens.sort_unstable();
            tokens.dedup();
            let n = tokens.len();
            self.deduped = n;
        }
        self.cached = OnceLock::new();
        Ok(())
    }

    /// The signature (computed once per change).
    pub(crate) fn sketch(&self) -> PyResult<&Sketch> {
        if let Some(s) = self.cached.get() {
            return Ok(s);
        }
        let s = match &self.open {
            Some((sketcher, tokens)) => sketcher.sketch_multiset(tokens).py_err()?,
            None => return Err(PyValueError::new_err("frozen sketch without a signature")),
        };
        Ok(self.cached.get_or_init(|| s))
    }

    pub(super) fn check_same(&self, other: &Core) -> PyResult<()> {
        self.params.check_compatible(&other.params).py_err()?;
        if self.tokenizer != other.tokenizer {
            return Err(PyValueError::new_err("the sketches' tokenizers differ"));
        }
        Ok(())
    }

    pub(super) fn copy(&self) -> Core {
        Core {
            params: self.params,
            tokenizer: self.tokenizer,
            open: self.open.clone(),
            deduped: self.deduped,
            cached: self.cached.clone(),
        }
    }

    pub(super) fn merge(&mut self, other: &Core) -> PyResult<()> {
        self.check_same(other)?;
        let theirs = match &other.open {
            Some((_, t)) => t.clone(),
            None => return Err(PyValueError::new_err("cannot merge a frozen sketch: it keeps no tokens")),
        };
        self.extend(theirs)
    }

    pub(super) fn hashvalues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.sketch()? {
            Sketch::MinHash(m) => PyArray1::from_slice(py, m.values()).into_any(),
            Sketch::BBit(b) => {
                let mut v = Vec::new();
                b.values_into(&mut v);
                v.into_pyarray(py).into_any()
            }
            Sketch::Oph(o) => PyArray1::from_slice(py, o.bins()).into_any(),
            Sketch::SimHash(s) => {
                let v = s.value();
                let words: Vec<u64> =
                    if s.params().bits() > 64 { vec![v as u64, (v >> 64) as u64] } else { vec![v as u64] };
                words.into_pyarray(py).into_any()
            }
            _ => return Err(PyTypeError::new_err("unknown sketch kind")),
        })
    }

    pub(super) fn repr(&self, class: &str) -> String {
        let p = &self.params;
        let state = match &self.open {
            Some((_, t)) => format!("{} tokens", t.len()),
            None => "frozen".to_string(),
        };
        format!("{class}(size={}, bits={}, seed={:#x}, {state})", p.size(), p.bits(), p.seed())
    }
}

/// A read/write lock around a core.
pub(crate) struct CoreLock(parking_lot::RwLock<Core>);

impl CoreLock {
    pub(super) fn new(core: Core) -> Self {
        CoreLock(parking_lot::RwLock::new(core))
    }
    pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, Core> {
        self.0.read()
    }
    pub(super) fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Core> {
        self.0.write()
    }
}
