//! The crate's root error type, wrapping each layer's error.

use thiserror::Error;

use crate::index::error::IndexError;
use crate::sketch::error::SketchError;

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
    Index(#[from] IndexError),
}

/// `Result` with sketchdb's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
