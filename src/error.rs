//! The crate's root error type, wrapping each layer's error.
#![forbid(unsafe_code)]

use thiserror::Error;

use crate::codec::error::CodecError;
use crate::index::IndexError;
use crate::planner::error::QueryError;
use crate::sketch::error::SketchError;
use crate::storage::StorageError;

/// Any error sketchdb returns. Each layer has its own typed error; this wraps them.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// From the sketch layer: bad parameters, incompatible or malformed sketches.
    #[error(transparent)]
    Sketch(#[from] SketchError),
    /// From the index layer: bad index parameters, sketches that cannot be indexed, malformed
    /// table runs or stored designs.
    #[error(transparent)]
    Index(IndexError),
    /// From the planner: a query that does not fit the collection or a plan it cannot run.
    #[error(transparent)]
    Query(QueryError),
    /// From the codec layer: bytes that do not decode (usually wrapped in a storage error
    /// that says where they came from).
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// From the storage layer: the file, collections, keys, pages and transactions.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// From the corpus readers: an input that cannot be read on, or (strict mode) the first
    /// bad record.
    #[cfg(feature = "io")]
    #[error(transparent)]
    Read(#[from] crate::io::ReadError),
}

/// `Result` with sketchdb's [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<QueryError> for Error {
    /// A lower-layer failure the planner passes on keeps the variant of its layer, so each
    /// failure reaches the caller by one route.
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Sketch(e) => Error::Sketch(e),
            QueryError::Index(e) => Error::from(e),
            QueryError::Storage(e) => Error::Storage(e),
            other => Error::Query(other),
        }
    }
}

/// One route per failure: a storage error under the index is the storage error itself.
impl From<IndexError> for Error {
    fn from(e: IndexError) -> Self {
        match e.into_storage() {
            Ok(e) => Error::Storage(e),
            Err(e) => Error::Index(e),
        }
    }
}
