//! Pickling: a sketch's state as a tuple of plain values (version, kind, size, bits, seed,
//! universe, tokenizer, the open sketch's tokens as little-endian u64 bytes, or the frozen
//! signature's words, and from version 2 the hash family's code), and back.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use sketchdb::{BBitMinHash, HashFamily, MinHash, OphSketch, SimHash, Sketch, SketchKind, SketchParams};

use super::Core;
use crate::convert;
use crate::errors::IntoPy;

/// The pickle state's format version.
const STATE_VERSION: u32 = 2;

impl Core {
    /// The pickle state: a tuple of plain values (see `from_state`).
    pub(super) fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let p = &self.params;
        let (tk, tw) = convert::tokenizer_parts(&self.tokenizer, p.family());
        let tokens = self.open.as_ref().map(|(_, t)| PyBytes::new(py, &convert::u64s_to_le(t)));
        let payload: Option<(Vec<u8>, Vec<u8>, u64, u128)> = match (&self.open, self.cached.get()) {
            (Some(_), _) => None,
            (None, Some(Sketch::MinHash(m))) => Some((convert::u64s_to_le(m.values()), vec![], m.cardinality(), 0)),
            (None, Some(Sketch::BBit(b))) => Some((convert::u64s_to_le(b.words()), vec![], b.cardinality(), 0)),
            (None, Some(Sketch::Oph(o))) => {
                let bins: Vec<u8> = o.bins().iter().flat_map(|x| x.to_le_bytes()).collect();
                Some((bins, convert::u64s_to_le(o.empty_bitmap()), o.cardinality(), 0))
            }
            (None, Some(Sketch::SimHash(s))) => Some((vec![], vec![], 0, s.value())),
            _ => return Err(PyValueError::new_err("sketch has neither tokens nor a signature")),
        };
        let payload = payload.map(|(a, b, c, v)| (PyBytes::new(py, &a), PyBytes::new(py, &b), c, v));
        (
            STATE_VERSION,
            convert::kind_name(p.kind()),
            p.size(),
            p.bits(),
            p.seed(),
            p.universe(),
            (tk, tw, self.tokenizer.seed()),
            tokens,
            payload,
            p.family().code(),
        )
            .into_pyobject(py)
    }

    #[allow(clippy::type_complexity)]
    pub(super) fn from_state(state: &Bound<'_, PyAny>) -> PyResult<Core> {
        // Version 1 states have no trailing family code (sketchdb's own family).
        let state = state.cast::<PyTuple>()?;
        let family = match state.len() {
            10 => {
                let code: u16 = state.get_item(9)?.extract()?;
                HashFamily::from_code(code)
                    .ok_or_else(|| PyValueError::new_err(format!("unknown hash family code {code}")))?
            }
            _ => HashFamily::MixMultiplyShift,
        };
        let state = state.get_slice(0, 9);
        let (version, kind, size, bits, seed, universe, (tk, tw, ts), tokens, payload): (
            u32,
            String,
            u32,
            u8,
            u64,
            Option<u64>,
            (String, u32, u64),
            Option<Vec<u8>>,
            Option<(Vec<u8>, Vec<u8>, u64, u128)>,
        ) = state.extract()?;
        if version != STATE_VERSION && version != 1 {
            return Err(PyValueError::new_err(format!(
                "pickle state version {version}; this build reads {STATE_VERSION}"
            )));
        }
        let kind = convert::kind(&kind)?;
        let params = match (kind, universe) {
            (SketchKind::BBitMinHash, Some(u)) => SketchParams::bbit_with_universe(size, bits, u, seed).py_err()?,
            _ => convert::params_in(family, kind, size, bits, seed)?,
        };
        let tokenizer = convert::tokenizer_from_parts(&tk, tw, ts)?;
        if let Some(t) = tokens {
            let mut core = Core::open(params, tokenizer)?;
            core.extend(convert::le_to_u64s(&t)?)?;
            return Ok(core);
        }
        let Some((a, b, card, v)) = payload else {
            return Err(PyValueError::new_err("pickle state has neither tokens nor a signature"));
        };
        let sketch = match kind {
            SketchKind::MinHash => {
                Sketch::MinHash(MinHash::from_parts(params, convert::le_to_u64s(&a)?, card).py_err()?)
            }
            SketchKind::BBitMinHash => {
                Sketch::BBit(BBitMinHash::from_parts(params, convert::le_to_u64s(&a)?, card).py_err()?)
            }
            SketchKind::Oph => {
                if !a.len().is_multiple_of(4) {
                    return Err(PyValueError::new_err("OPH bins are not whole u32 words"));
                }
                let bins = a.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                Sketch::Oph(OphSketch::from_parts(params, bins, convert::le_to_u64s(&b)?, card).py_err()?)
            }
            _ => Sketch::SimHash(SimHash::from_parts(params, v).py_err()?),
        };
        Ok(Core::frozen(sketch, tokenizer))
    }
}
