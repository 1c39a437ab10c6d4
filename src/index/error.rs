//! The index layer's error: bad parameters, sketches an index cannot take, stored index data
//! that fails its checks, and the storage errors under the index (wrapped, never the reverse).

use thiserror::Error;

use crate::sketch::error::SketchError;
use crate::sketch::params::SketchKind;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;

/// An error from designing, keying or probing an index.
///
/// Every variant names the offending parameter or structure and the values involved.
#[derive(Debug, Error)]
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
    /// The storage layer failed under the index (opening, reading or writing its tables).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An index error of one collection: a record the index cannot take, or a stored index
    /// definition this build cannot use.
    #[error("index of collection `{collection}`: {source}")]
    Collection {
        /// The collection.
        collection: String,
        /// What is wrong.
        #[source]
        source: Box<IndexError>,
    },
    /// The index's stored tables disagree with each other or with the rows (damaged data):
    /// the detail names the index table and the band, run, table or bucket.
    #[error("inconsistent collection `{collection}`{}: {detail}", row.map(|r| format!(" at row {r}")).unwrap_or_default())]
    Corrupt {
        /// The collection.
        collection: String,
        /// The row involved, if any.
        row: Option<u64>,
        /// What disagrees, and where.
        detail: String,
    },
}

/// Equal variants with equal fields; a wrapped storage error (which holds I/O and engine
/// errors that have no equality) equals another when both say the same.
impl PartialEq for IndexError {
    fn eq(&self, other: &Self) -> bool {
        use IndexError as E;
        match (self, other) {
            (
                E::InvalidParam { param: a, value: b, expected: c },
                E::InvalidParam { param: x, value: y, expected: z },
            ) => (a, b, c) == (x, y, z),
            (E::NotBanded { kind: a }, E::NotBanded { kind: x }) => a == x,
            (E::SizeMismatch { what: a, expected: b, got: c }, E::SizeMismatch { what: x, expected: y, got: z }) => {
                (a, b, c) == (x, y, z)
            }
            (E::UnsortedRun { table: a, position: b }, E::UnsortedRun { table: x, position: y }) => (a, b) == (x, y),
            (E::DuplicateRow { row: a }, E::DuplicateRow { row: x }) => a == x,
            (E::Inconsistent { what: a, detail: b }, E::Inconsistent { what: x, detail: y }) => (a, b) == (x, y),
            (E::Sketch(a), E::Sketch(x)) => a == x,
            (E::Storage(a), E::Storage(x)) => a.to_string() == x.to_string(),
            (E::Collection { collection: a, source: b }, E::Collection { collection: x, source: y }) => {
                (a, b) == (x, y)
            }
            (E::Corrupt { collection: a, row: b, detail: c }, E::Corrupt { collection: x, row: y, detail: z }) => {
                (a, b, c) == (x, y, z)
            }
            _ => false,
        }
    }
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

    /// Whether the error reports damaged data (as opposed to bad input or I/O), as
    /// [`StorageError::is_corruption`].
    pub fn is_corruption(&self) -> bool {
        match self {
            IndexError::Storage(e) => e.is_corruption(),
            IndexError::Corrupt { .. } => true,
            _ => false,
        }
    }

    /// The storage error under this one, if it is one.
    pub(crate) fn into_storage(self) -> Result<StorageError, IndexError> {
        match self {
            IndexError::Storage(e) => Ok(e),
            e => Err(e),
        }
    }
}

/// Tables of `info` disagree at `row`: [`IndexError::Corrupt`].
pub(crate) fn inconsistent(info: &CollectionInfo, row: u64, detail: impl ToString) -> IndexError {
    IndexError::Corrupt { collection: info.def.name.clone(), row: Some(row), detail: detail.to_string() }
}

/// An index error of the collection `info` ([`IndexError::Collection`]).
pub(crate) fn index_err(info: &CollectionInfo) -> impl FnOnce(IndexError) -> IndexError + '_ {
    move |e| IndexError::Collection { collection: info.def.name.clone(), source: Box::new(e) }
}
