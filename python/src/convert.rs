//! Python values to sketchdb inputs: tokens, keys, parameters, and keys back to Python.
//!
//! A token is an `int` (an already hashed `u64`, as the CLI's JSONL `tokens` field takes),
//! a `str` (its UTF-8 bytes) or `bytes`; `str` and `bytes` tokens are hashed with
//! [`sketchdb::estimate::token_hash`] and the tokenizer's seed, as the Rust tokenizer hashes shingles.

use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};
use sketchdb::recipes::DEFAULT_SEED;
use sketchdb::recipes::default_params;
use sketchdb::{HashFamily, Recipe, SketchKind, SketchParams, Tokenizer, TokenizerKind, estimate::token_hash};

use crate::errors::IntoPy;

mod seq;

pub(crate) use seq::Seq;

/// One token's hash.
pub(crate) fn token(obj: &Bound<'_, PyAny>, seed: u64) -> PyResult<u64> {
    // Ints (already hashed tokens) first: the bulk paths' common case.
    if obj.is_instance_of::<PyInt>() {
        return obj
            .extract::<u64>()
            .map_err(|_| PyValueError::new_err(format!("token {obj} is not a u64 hash (0 ..= 2**64 - 1)")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(token_hash(s.to_cow()?.as_bytes(), seed));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(token_hash(b.as_bytes(), seed));
    }
    // NumPy integer scalars (and anything else with `__index__`) are ints too.
    if obj.hasattr("__index__")? {
        return token(&obj.call_method0("__index__")?, seed);
    }
    Err(PyTypeError::new_err(format!("a token is str, bytes or int (a u64 hash), not {}", obj.get_type().name()?)))
}

/// Every token of an iterable of tokens, hashed, in order (repeats kept).
pub(crate) fn tokens(obj: &Bound<'_, PyAny>, seed: u64) -> PyResult<Vec<u64>> {
    let mut out = Vec::new();
    tokens_into(obj, seed, &mut out)?;
    Ok(out)
}

/// Appends [`tokens`] of `obj` to `out` (on an error, `out` may hold some of them).
pub(crate) fn tokens_into(obj: &Bound<'_, PyAny>, seed: u64, out: &mut Vec<u64>) -> PyResult<()> {
    // Lists and tuples first: the common case, read without a failed NumPy extraction.
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return extend_tokens(obj, seed, out);
    }
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "tokens must be an iterable of tokens, not a single str or bytes (use text= for text)",
        ));
    }
    // A 1-D NumPy array of u64 (or i64, read as the same 64 bits) hashes: no per-token call.
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, u64>>() {
        match a.as_slice() {
            Ok(v) => out.extend_from_slice(v),
            Err(_) => out.extend(a.as_array().iter()),
        }
        return Ok(());
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, i64>>() {
        out.extend(a.as_array().iter().map(|&x| x as u64));
        return Ok(());
    }
    extend_tokens(obj, seed, out)
}

/// Appends the hashes of an iterable's tokens to `out` (as [`tokens`], without its checks for
/// a single `str`/`bytes` or a NumPy array). An error names the token's index.
pub(crate) fn extend_tokens(obj: &Bound<'_, PyAny>, seed: u64, out: &mut Vec<u64>) -> PyResult<()> {
    // Lists and tuples by index: ints in a tight loop, anything else one by one.
    let seq = if let Ok(list) = obj.cast::<PyList>() {
        Some(Seq::List(list))
    } else {
        obj.cast::<PyTuple>().ok().map(Seq::Tuple)
    };
    if let Some(seq) = seq {
        // All `str`: their UTF-8 read and hashed in one loop.
        if seq.len() > 0 && seq.get(0)?.is_instance_of::<PyString>() && seq.str_hashes(seed, out) {
            return Ok(());
        }
        let mut i = seq.ints_from(0, out);
        // After the first item that is not a u64 int (a str token, a NumPy scalar, a bad
        // value) the rest go one by one: a list of strings fails the int loop once.
        while i < seq.len() {
            out.push(token(&seq.get(i)?, seed).map_err(|e| at_token(obj.py(), i, e))?);
            i += 1;
        }
        return Ok(());
    }
    out.reserve(obj.len().unwrap_or(0));
    for (i, t) in obj.try_iter()?.enumerate() {
        out.push(token(&t?, seed).map_err(|e| at_token(obj.py(), i, e))?);
    }
    Ok(())
}

fn at_token(py: Python<'_>, i: usize, e: PyErr) -> PyErr {
    prefixed(py, &format!("token {i}"), e)
}

/// `e` with `place` (where it happened) in front of its message, same type (a `TypeError`
/// or `ValueError`; any other exception as it is).
pub(crate) fn prefixed(py: Python<'_>, place: &str, e: PyErr) -> PyErr {
    let msg = format!("{place}: {}", e.value(py));
    if e.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(msg)
    } else if e.is_instance_of::<PyValueError>(py) {
        PyValueError::new_err(msg)
    } else {
        e
    }
}

/// A key: `str` (UTF-8) or `bytes`.
pub(crate) fn key(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.cast::<PyString>() {
        // One copy: the UTF-8 the interpreter hands over becomes the key's bytes.
        return Ok(s.to_cow()?.into_owned().into_bytes());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!("a key is str or bytes, not {}", obj.get_type().name()?)))
}

/// A key's bytes as a query takes them: a key of up to [`KeyBuf::INLINE`] bytes (nearly all
/// keys) is held inline, with no heap allocation; a longer one in a vector.
pub(crate) enum KeyBuf {
    Inline { len: u8, bytes: [u8; KeyBuf::INLINE] },
    Heap(Vec<u8>),
}

impl KeyBuf {
    /// The longest key held inline.
    pub(crate) const INLINE: usize = 64;

    fn new(b: &[u8]) -> Self {
        match u8::try_from(b.len()) {
            Ok(len) if b.len() <= Self::INLINE => {
                let mut bytes = [0; Self::INLINE];
                bytes[..b.len()].copy_from_slice(b);
                KeyBuf::Inline { len, bytes }
            }
            _ => KeyBuf::Heap(b.to_vec()),
        }
    }

    /// The key's bytes in a vector of their own.
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            KeyBuf::Inline { .. } => self.as_ref().to_vec(),
            KeyBuf::Heap(v) => v,
        }
    }
}

impl AsRef<[u8]> for KeyBuf {
    fn as_ref(&self) -> &[u8] {
        match self {
            KeyBuf::Inline { len, bytes } => &bytes[..usize::from(*len)],
            KeyBuf::Heap(v) => v,
        }
    }
}

/// A key (`str` or `bytes`) for a question: [`key`]'s bytes, copied once from the
/// interpreter's (for a `str`, from the UTF-8 bytes object the abi3 API hands over).
pub(crate) fn key_buf(obj: &Bound<'_, PyAny>) -> PyResult<KeyBuf> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(KeyBuf::new(s.encode_utf8()?.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(KeyBuf::new(b.as_bytes()));
    }
    Err(PyTypeError::new_err(format!("a key is str or bytes, not {}", obj.get_type().name()?)))
}

/// A stored key as Python sees it: `str` when it is UTF-8, else `bytes`.
pub(crate) fn key_to_py(py: Python<'_>, key: &[u8]) -> PyResult<Py<PyAny>> {
    Ok(match std::str::from_utf8(key) {
        Ok(s) => PyString::new(py, s).into_any().unbind(),
        Err(_) => PyBytes::new(py, key).into_any().unbind(),
    })
}

/// A sketch kind from its Python name: `minhash`, `bbit`, `oph` or `simhash`.
pub(crate) fn kind(name: &str) -> PyResult<SketchKind> {
    match name {
        "minhash" => Ok(SketchKind::MinHash),
        "bbit" | "bbit-minhash" | "bbit_minhash" => Ok(SketchKind::BBitMinHash),
        "oph" => Ok(SketchKind::Oph),
        "simhash" => Ok(SketchKind::SimHash),
        other => Err(PyValueError::new_err(format!(
            "unknown sketch kind {other:?}: expected \"minhash\", \"bbit\", \"oph\" or \"simhash\""
        ))),
    }
}

/// The Python name of a kind (the inverse of [`kind`]).
pub(crate) fn kind_name(kind: SketchKind) -> &'static str {
    match kind {
        SketchKind::MinHash => "minhash",
        SketchKind::BBitMinHash => "bbit",
        SketchKind::Oph => "oph",
        _ => "simhash",
    }
}

/// Parameters of `kind` (bits defaulting per kind as the CLI's do).
pub(crate) fn params(kind: SketchKind, size: u32, bits: Option<u8>, seed: u64) -> PyResult<SketchParams> {
    default_params(kind, size, bits, seed).py_err()
}

/// A sketch configuration's parameters and tokenizer. With `recipe` (a preset name, see
/// `sketchdb recipes`) the tokenizer is the recipe's, and a compatibility recipe (datasketch,
/// text-dedup, ...) brings its hash family: MinHash of 32-bit values whose `seed` is the
/// reference's (the preset's own when `seed` is left at `DEFAULT_SEED`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn config(
    kind: SketchKind,
    size: u32,
    bits: Option<u8>,
    seed: u64,
    recipe: Option<&str>,
    shingle: Option<u32>,
    ngram: Option<u32>,
    token_seed: u64,
    family: Option<&str>,
) -> PyResult<(SketchParams, Tokenizer)> {
    let (params, tokenizer) = recipe_config(kind, size, bits, seed, recipe, shingle, ngram, token_seed)?;
    let Some(name) = family else { return Ok((params, tokenizer)) };
    let f = HashFamily::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown hash family {name:?}: expected \"mix-multiply-shift-32\", \"mix-multiply-shift\" or \
             \"charikar\" (compatibility families come with recipe=)"
        ))
    })?;
    if f == params.family() {
        return Ok((params, tokenizer));
    }
    Ok((params.with_family(f).map_err(|e| PyValueError::new_err(format!("family={name:?}: {e}")))?, tokenizer))
}

/// [`config`] before a `family=` choice.
#[allow(clippy::too_many_arguments)]
fn recipe_config(
    kind: SketchKind,
    size: u32,
    bits: Option<u8>,
    seed: u64,
    recipe: Option<&str>,
    shingle: Option<u32>,
    ngram: Option<u32>,
    token_seed: u64,
) -> PyResult<(SketchParams, Tokenizer)> {
    let Some(name) = recipe else {
        return Ok((params(kind, size, bits, seed)?, tokenizer(shingle, ngram, token_seed)?));
    };
    if shingle.is_some() || ngram.is_some() {
        return Err(PyValueError::new_err("recipe= sets the tokenizer: give it or shingle=/ngram=, not both"));
    }
    let r = Recipe::preset(name).py_err()?;
    if !r.family().is_compat() {
        return Ok((params(kind, size, bits, seed)?, r.tokenizer()));
    }
    if kind != SketchKind::MinHash || bits.is_some_and(|b| b != 32) {
        return Err(PyValueError::new_err(format!(
            "recipe {name:?} reproduces {}'s signatures: MinHash with 32-bit values only",
            r.family()
        )));
    }
    let p = if seed == DEFAULT_SEED { r.compat_params(Some(size)).py_err()? } else { None };
    let p = match p {
        Some(p) => p,
        None => SketchParams::compat(r.family(), size, seed).py_err()?,
    };
    Ok((p, r.tokenizer()))
}

/// The parameters of `kind` in hash family `family` (a pickled or imported sketch's).
pub(crate) fn params_in(
    family: HashFamily,
    kind: SketchKind,
    size: u32,
    bits: u8,
    seed: u64,
) -> PyResult<SketchParams> {
    if family.is_compat() {
        return SketchParams::compat(family, size, seed).py_err();
    }
    let mut p = params(kind, size, Some(bits), seed)?;
    if p.family() != family
        && let Ok(other) = p.with_family(family)
    {
        p = other;
    }
    if p.family() != family {
        return Err(PyValueError::new_err(format!(
            "hash family {family} is not one this binding rebuilds for {kind:?}"
        )));
    }
    Ok(p)
}

/// The tokenizer for text: `ngram` characters when given, else `shingle` words (default 5).
pub(crate) fn tokenizer(shingle: Option<u32>, ngram: Option<u32>, token_seed: u64) -> PyResult<Tokenizer> {
    match (shingle, ngram) {
        (Some(_), Some(_)) => Err(PyValueError::new_err("give shingle= or ngram=, not both")),
        (_, Some(n)) => Tokenizer::char_ngrams(n, token_seed).py_err(),
        (w, None) => Tokenizer::shingles(w.unwrap_or(sketchdb::recipes::DEFAULT_SHINGLE_WORDS), token_seed).py_err(),
    }
}

/// The tokenizer's fields for pickling and `spec`: (`"shingles"` | `"ngrams"`, width), or
/// (`"recipe:NAME"`, 0) for a recipe's pipeline (`family` tells compatibility presets apart).
pub(crate) fn tokenizer_parts(t: &Tokenizer, family: HashFamily) -> (String, u32) {
    match t.kind() {
        TokenizerKind::Shingles { w } => ("shingles".into(), w),
        TokenizerKind::CharNgrams { n } => ("ngrams".into(), n),
        _ => (format!("recipe:{}", Recipe::identify(*t, family).name()), 0),
    }
}

/// The tokenizer of [`tokenizer_parts`]' fields.
pub(crate) fn tokenizer_from_parts(kind: &str, width: u32, seed: u64) -> PyResult<Tokenizer> {
    match kind {
        "shingles" => Tokenizer::shingles(width, seed).py_err(),
        "ngrams" => Tokenizer::char_ngrams(width, seed).py_err(),
        other if other.starts_with("recipe:") && other != "recipe:custom" => {
            Ok(Recipe::preset(&other["recipe:".len()..]).py_err()?.tokenizer())
        }
        other => Err(PyValueError::new_err(format!("unknown tokenizer kind {other:?}"))),
    }
}

/// Little-endian bytes of `u64`s (pickled token sets and sketch words).
pub(crate) fn u64s_to_le(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The `u64`s of [`u64s_to_le`]'s bytes.
pub(crate) fn le_to_u64s(b: &[u8]) -> PyResult<Vec<u64>> {
    if !b.len().is_multiple_of(8) {
        return Err(PyValueError::new_err(format!("{} bytes is not a whole number of u64 words", b.len())));
    }
    Ok(b.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect())
}
