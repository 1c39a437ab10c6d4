//! Errors of the planner and executor.

use thiserror::Error;

use crate::index::IndexError;
use crate::sketch::error::SketchError;
use crate::storage::StorageError;

/// A query that cannot be answered as asked, or a failure below the planner while running
/// it. The root [`crate::Error`] presents the wrapped lower-layer errors as its own
/// `Sketch`, `Index` and `Storage` variants (one route per failure), the rest as `Query`.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The question does not fit the collection's sketch kind.
    #[error("a {query} query cannot run on a {kind} collection: {reason}")]
    Unsupported {
        /// The query kind (`threshold`, `top-k`, `hamming`).
        query: &'static str,
        /// The collection's sketch kind.
        kind: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// A query parameter is out of range.
    #[error("invalid query parameter `{param}` = {value}: {expected}")]
    InvalidParam {
        /// The parameter.
        param: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// A query by key names a key the collection does not hold.
    #[error("collection `{collection}` has no key `{key}`")]
    UnknownKey {
        /// The collection.
        collection: String,
        /// The key (lossy UTF-8).
        key: String,
    },
    /// A forced plan that this collection cannot run.
    #[error("plan {plan} is not available: {reason}")]
    PlanUnavailable {
        /// The plan's name.
        plan: &'static str,
        /// Why.
        reason: String,
    },
    /// A batch was asked over a snapshot of another collection or another open database.
    #[error("a batch of collection `{collection}` cannot read a snapshot of `{snapshot}` or of another database")]
    ForeignSnapshot {
        /// The collection asked.
        collection: String,
        /// The collection the snapshot views.
        snapshot: String,
    },
    /// The sketch layer refused the probe or a stored sketch (incompatible parameters, an
    /// estimate that is undefined).
    #[error(transparent)]
    Sketch(#[from] SketchError),
    /// The index layer refused an index operation.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Reading the snapshot failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
