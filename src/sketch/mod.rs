//! The pure sketch layer: token hashing, sketches, estimators and confidence intervals.
//! No I/O and no byte layouts live here.
//!
//! The hash family is specified in [`hash`]'s docs (and `storage-format.md`); the tokenizer
//! recipe in [`tokenize`]'s. Golden values in `tests/sketch_golden.rs` pin both.
#![forbid(unsafe_code)]

pub(crate) mod bbit;
pub(crate) mod compat;
pub(crate) mod densify;
pub(crate) mod error;
pub(crate) mod estimate;
pub(crate) mod hash;
pub(crate) mod minhash;
pub(crate) mod oph;
pub(crate) mod oph_column;
pub(crate) mod params;
pub(crate) mod recipe;
pub(crate) mod simhash;
#[allow(clippy::module_inception)]
pub(crate) mod sketcher;
pub(crate) mod tokenize;
pub(crate) mod tokens;
