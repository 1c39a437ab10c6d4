//! The sketch classes: `MinHash`, `BBitMinHash`, `OPH`, `SimHash`, and `Estimate`.
//!
//! A sketch object is either *open* (it keeps the hashed tokens it was given, so `update`
//! and `merge` work and the signature is computed from them on demand, exactly as
//! [`sketchdb::Sketcher::sketch_multiset`] computes it) or *frozen* (a signature read from a
//! collection, unpickled from one, or made by `bulk`: no tokens, so no `update`/`merge`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use sketchdb::{Estimate, Sketch, SketchKind, recipes::DEFAULT_SEED};

use crate::convert;
use crate::errors::IntoPy;

mod objects;
mod pickle;
mod state;

pub(crate) use objects::{GcPause, bulk_sketch, extract, to_py};
pub(crate) use state::{Core, CoreLock};

/// An estimate with its two-sided confidence interval.
#[pyclass(name = "Estimate", module = "sketchdb._sketchdb", frozen, get_all)]
#[derive(Clone, Copy)]
pub(crate) struct PyEstimate {
    /// The point estimate.
    value: f64,
    /// The interval's lower end.
    lower: f64,
    /// The interval's upper end.
    upper: f64,
    /// The confidence level.
    level: f64,
    /// The effective number of comparisons behind it.
    samples: f64,
}

impl From<Estimate> for PyEstimate {
    fn from(e: Estimate) -> Self {
        PyEstimate { value: e.value, lower: e.lower, upper: e.upper, level: e.level, samples: e.samples }
    }
}

#[pymethods]
impl PyEstimate {
    fn __float__(&self) -> f64 {
        self.value
    }
    fn __repr__(&self) -> String {
        format!(
            "Estimate(value={:.6}, lower={:.6}, upper={:.6}, level={})",
            self.value, self.lower, self.upper, self.level
        )
    }
    /// Whether `x` lies in the closed interval.
    fn __contains__(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

/// The shared methods of the four classes. Each class is `frozen` to Python's borrow
/// checker and guards its core with a lock, so one sketch object is safe to share between
/// threads (updates serialise).
macro_rules! sketch_class {
    ($rust:ident, $py:literal, $doc:literal, { $($ctor:tt)* }) => {
        #[doc = $doc]
        #[pyclass(name = $py, module = "sketchdb._sketchdb", frozen)]
        pub(crate) struct $rust {
            pub(crate) core: CoreLock,
        }

        impl $rust {
            fn wrap(core: Core) -> Self {
                $rust { core: CoreLock::new(core) }
            }
        }

        #[pymethods]
        impl $rust {
            $($ctor)*

            /// Adds one token (`str`, `bytes` or an `int` hash).
            fn update(&self, token: &Bound<'_, PyAny>) -> PyResult<()> {
                let mut core = self.core.write();
                let h = convert::token(token, core.tokenizer.seed())?;
                core.extend([h])
            }

            /// Adds every token of an iterable.
            fn update_batch(&self, tokens: &Bound<'_, PyAny>) -> PyResult<()> {
                let seed = self.core.read().tokenizer.seed();
                let hashed = convert::tokens(tokens, seed)?;
                self.core.write().extend(hashed)
            }

            /// Adds the tokens of `text`, cut by the sketch's tokenizer.
            fn update_text(&self, py: Python<'_>, text: &str) -> PyResult<()> {
                let tokenizer = *self.core.read().tokenizer();
                let hashed = py.detach(|| tokenizer.tokens(text));
                self.core.write().extend(hashed)
            }

            /// The estimated similarity (Jaccard; cosine for SimHash) as a float.
            fn similarity(&self, other: &Bound<'_, Self>) -> PyResult<f64> {
                let a = self.core.read().sketch()?.clone();
                let b = other.get().core.read().sketch()?.clone();
                a.similarity_value(&b).py_err()
            }

            /// The estimated similarity with its confidence interval at `level`.
            #[pyo3(signature = (other, level = 0.95))]
            fn estimate(&self, other: &Bound<'_, Self>, level: f64) -> PyResult<PyEstimate> {
                let a = self.core.read().sketch()?.clone();
                let b = other.get().core.read().sketch()?.clone();
                Ok(a.similarity(&b, level).py_err()?.into())
            }

            /// The signature's values as a NumPy array (a fresh copy).
            #[getter]
            fn hashvalues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.core.read().hashvalues(py)
            }

            /// The signature's values as a NumPy array (as `hashvalues`).
            fn digest<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.core.read().hashvalues(py)
            }

            /// The signature's bytes: exactly what a collection stores for this sketch and
            /// what `sketchdb.arrow.sketch` emits (see `sketchdb.arrow`).
            fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
                let core = self.core.read();
                Ok(pyo3::types::PyBytes::new(py, &sketchdb::signature::encode(core.sketch()?)))
            }

            /// The frozen sketch whose signature bytes are `data` (`to_bytes`' inverse); keyword
            /// arguments are the constructor's and must name the same parameters.
            #[classmethod]
            #[pyo3(signature = (data, **kwargs))]
            fn from_bytes(
                cls: &Bound<'_, PyType>,
                data: &[u8],
                kwargs: Option<&Bound<'_, PyDict>>,
            ) -> PyResult<Self> {
                let template = cls.call((), kwargs)?;
                let template = template.cast::<Self>()?;
                let (params, tokenizer) = {
                    let core = template.get().core.read();
                    (core.params, core.tokenizer)
                };
                let sketch = sketchdb::signature::decode(&params, data)
                    .map_err(|e| crate::errors::to_py(sketchdb::Error::from(e)))?;
                Ok(Self::wrap(Core::frozen(sketch, tokenizer)))
            }

            /// An independent copy.
            fn copy(&self) -> Self {
                Self::wrap(self.core.read().copy())
            }

            /// Adds `other`'s tokens (both must be open and alike).
            fn merge(&self, other: &Bound<'_, Self>) -> PyResult<()> {
                let theirs = other.get().core.read().copy();
                self.core.write().merge(&theirs)
            }

            /// Whether the sketch keeps its tokens (`update` and `merge` work).
            #[getter]
            fn is_open(&self) -> bool {
                self.core.read().open.is_some()
            }

            /// The exact number of distinct tokens (None for SimHash).
            #[getter]
            fn cardinality(&self) -> PyResult<Option<u64>> {
                Ok(self.core.read().sketch()?.cardinality())
            }

            /// The sketch kind: "minhash", "bbit", "oph" or "simhash".
            #[getter]
            fn kind(&self) -> &'static str {
                convert::kind_name(self.core.read().params.kind())
            }

            /// The hash family's seed.
            #[getter]
            fn seed(&self) -> u64 {
                self.core.read().params.seed()
            }

            /// The hash family's name (`sketchdb recipes` and `stats()["family"]` use the same).
            #[getter]
            fn family(&self) -> &'static str {
                self.core.read().params.family().name()
            }

            /// Bits per value (fingerprint bits for SimHash).
            #[getter]
            fn bits(&self) -> u8 {
                self.core.read().params.bits()
            }

            /// Permutations, bins, or fingerprint bits.
            #[getter]
            fn size(&self) -> u32 {
                self.core.read().params.size()
            }

            fn __len__(&self) -> usize {
                self.core.read().params.slots()
            }

            fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
                let Ok(other) = other.cast::<Self>() else { return Ok(false) };
                let a = self.core.read().sketch()?.clone();
                let b = other.get().core.read().sketch()?.clone();
                Ok(a == b && self.core.read().tokenizer == other.get().core.read().tokenizer)
            }

            fn __repr__(&self) -> String {
                self.core.read().repr($py)
            }

            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyTuple>,))> {
                let restore = slf.get_type().getattr("_from_state")?;
                let state = slf.get().core.read().state(slf.py())?;
                Ok((restore, (state,)))
            }

            /// Rebuilds a sketch from `__reduce__`'s state.
            #[staticmethod]
            fn _from_state(state: &Bound<'_, PyAny>) -> PyResult<Self> {
                let core = Core::from_state(state)?;
                Ok(Self::wrap(core))
            }

            /// Sketches many texts (`str`) or token iterables on all cores, with the GIL
            /// released; keyword arguments are the constructor's. The results are frozen.
            #[classmethod]
            #[pyo3(signature = (items, **kwargs))]
            fn bulk<'py>(
                cls: &Bound<'py, PyType>,
                items: &Bound<'py, PyAny>,
                kwargs: Option<&Bound<'py, PyDict>>,
            ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
                let py = cls.py();
                let template = cls.call((), kwargs)?;
                let template = template.cast::<Self>()?;
                let (sketcher, tokenizer) = {
                    let core = template.get().core.read();
                    match &core.open {
                        Some((s, _)) => (s.clone(), core.tokenizer),
                        None => return Err(PyValueError::new_err("bulk needs an open template")),
                    }
                };
                let sketches = bulk_sketch(py, &sketcher, &tokenizer, items)?;
                let _paused = GcPause::new(py)?;
                let objects = sketches
                    .into_iter()
                    .map(|s| Py::new(py, Self::wrap(Core::frozen(s, tokenizer))))
                    .collect::<PyResult<Vec<_>>>()?;
                pyo3::types::PyList::new(py, objects)
            }
        }
    };
}

sketch_class!(PyMinHash, "MinHash", "k-permutation MinHash of a token set.", {
    #[new]
    #[pyo3(signature = (num_perm = 128, seed = DEFAULT_SEED, bits = None, *, shingle = None, ngram = None, token_seed = 0, recipe = None, family = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        num_perm: u32,
        seed: u64,
        bits: Option<u8>,
        shingle: Option<u32>,
        ngram: Option<u32>,
        token_seed: u64,
        recipe: Option<&str>,
        family: Option<&str>,
    ) -> PyResult<Self> {
        let (params, tokenizer) =
            convert::config(SketchKind::MinHash, num_perm, bits, seed, recipe, shingle, ngram, token_seed, family)?;
        Ok(Self::wrap(Core::open(params, tokenizer)?))
    }

    /// The estimated Jaccard resemblance as a float.
    fn jaccard(&self, other: &Bound<'_, Self>) -> PyResult<f64> {
        self.similarity(other)
    }
});

sketch_class!(PyBBitMinHash, "BBitMinHash", "b-bit MinHash of a token set.", {
    #[new]
    #[pyo3(signature = (num_perm = 128, b = 8, seed = DEFAULT_SEED, *, shingle = None, ngram = None, token_seed = 0, recipe = None, family = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        num_perm: u32,
        b: u8,
        seed: u64,
        shingle: Option<u32>,
        ngram: Option<u32>,
        token_seed: u64,
        recipe: Option<&str>,
        family: Option<&str>,
    ) -> PyResult<Self> {
        let (params, tokenizer) = convert::config(
            SketchKind::BBitMinHash,
            num_perm,
            Some(b),
            seed,
            recipe,
            shingle,
            ngram,
            token_seed,
            family,
        )?;
        Ok(Self::wrap(Core::open(params, tokenizer)?))
    }

    /// The estimated Jaccard resemblance as a float.
    fn jaccard(&self, other: &Bound<'_, Self>) -> PyResult<f64> {
        self.similarity(other)
    }
});

sketch_class!(PyOph, "OPH", "One Permutation Hashing sketch of a token set.", {
    #[new]
    #[pyo3(signature = (bins = 128, bits = 8, seed = DEFAULT_SEED, *, shingle = None, ngram = None, token_seed = 0, recipe = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        bins: u32,
        bits: u8,
        seed: u64,
        shingle: Option<u32>,
        ngram: Option<u32>,
        token_seed: u64,
        recipe: Option<&str>,
    ) -> PyResult<Self> {
        let (params, tokenizer) =
            convert::config(SketchKind::Oph, bins, Some(bits), seed, recipe, shingle, ngram, token_seed, None)?;
        Ok(Self::wrap(Core::open(params, tokenizer)?))
    }

    /// The estimated Jaccard resemblance as a float.
    fn jaccard(&self, other: &Bound<'_, Self>) -> PyResult<f64> {
        self.similarity(other)
    }
});

sketch_class!(PySimHash, "SimHash", "SimHash fingerprint of a weighted token multiset.", {
    #[new]
    #[pyo3(signature = (bits = 64, seed = DEFAULT_SEED, *, shingle = None, ngram = None, token_seed = 0, recipe = None, family = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        bits: u8,
        seed: u64,
        shingle: Option<u32>,
        ngram: Option<u32>,
        token_seed: u64,
        recipe: Option<&str>,
        family: Option<&str>,
    ) -> PyResult<Self> {
        let (params, tokenizer) =
            convert::config(SketchKind::SimHash, 0, Some(bits), seed, recipe, shingle, ngram, token_seed, family)?;
        Ok(Self::wrap(Core::open(params, tokenizer)?))
    }

    /// The fingerprint as an int.
    #[getter]
    fn value(&self) -> PyResult<u128> {
        match self.core.read().sketch()? {
            Sketch::SimHash(s) => Ok(s.value()),
            _ => Err(PyTypeError::new_err("not a SimHash")),
        }
    }

    /// The estimated cosine as a float.
    fn cosine(&self, other: &Bound<'_, Self>) -> PyResult<f64> {
        self.similarity(other)
    }

    /// The exact Hamming distance between the fingerprints.
    fn hamming(&self, other: &Bound<'_, Self>) -> PyResult<u32> {
        let a = self.core.read().sketch()?.clone();
        let b = other.get().core.read().sketch()?.clone();
        match (a, b) {
            (Sketch::SimHash(a), Sketch::SimHash(b)) => a.hamming(&b).py_err(),
            _ => Err(PyTypeError::new_err("not a SimHash")),
        }
    }
});
