//! Errors of the index layer's pure half: key derivation, LSH parameter choice and probing.

use thiserror::Error;

use crate::sketch::error::SketchError;
use crate::sketch::params::SketchKind;

/// An error from designing, keying or probing an index.
///
/// Every variant names the offending parameter or structure and the values involved.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum IndexError {
    /// An index parameter is outside its allowed range.
    #[error("invalid index parameter `{param}` = {value}: {expected}")]
    InvalidParam {
        /// The parameter's name (`f`, `k`, `m`, `threshold`, `bands`, ...).
        param: &'static str,
        /// The value that was given, rendered as text.
        value: String,
        /// What the parameter must be.
        expected: &'static str,
    },
    /// A sketch kind that an LSH band index cannot take (SimHash uses permuted tables).
    #[error("{kind} sketches are not banded for LSH; use a SimHash table index")]
    NotBanded {
        /// The sketch's kind.
        kind: SketchKind,
    },
    /// A fingerprint, run or table list does not have the size the design expects.
    #[error("{what}: expected {expected}, got {got}")]
    SizeMismatch {
        /// What was measured (`fingerprint bits`, `tables`, `rows of run`, `signature rows`...).
        what: &'static str,
        /// The size the design or parameters require.
        expected: u64,
        /// The size that was given.
        got: u64,
    },
    /// A run of a SimHash table is not sorted by permuted key.
    #[error("run of table {table} is not sorted by permuted key at position {position}")]
    UnsortedRun {
        /// The table's index in the design.
        table: usize,
        /// The first position whose key is smaller than its predecessor's.
        position: usize,
    },
    /// The same row id was given twice to one index build.
    #[error("row id {row} appears more than once")]
    DuplicateRow {
        /// The repeated row id.
        row: u64,
    },
    /// A stored design or scheme fails its own invariants (decoded from storage).
    #[error("inconsistent {what}: {detail}")]
    Inconsistent {
        /// The structure (`simhash table design`, `band key scheme`).
        what: &'static str,
        /// Which invariant fails.
        detail: String,
    },
    /// From the sketch layer (for example densifying an all-empty OPH sketch).
    #[error(transparent)]
    Sketch(#[from] SketchError),
}

impl IndexError {
    pub(crate) fn invalid(param: &'static str, value: impl ToString, expected: &'static str) -> Self {
        IndexError::InvalidParam { param, value: value.to_string(), expected }
    }

    pub(crate) fn size(what: &'static str, expected: impl TryInto<u64>, got: impl TryInto<u64>) -> Self {
        IndexError::SizeMismatch {
            what,
            expected: expected.try_into().unwrap_or(u64::MAX),
            got: got.try_into().unwrap_or(u64::MAX),
        }
    }

    pub(crate) fn inconsistent(what: &'static str, detail: impl ToString) -> Self {
        IndexError::Inconsistent { what, detail: detail.to_string() }
    }
}
