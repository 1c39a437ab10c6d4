//! Errors of the codec layer: malformed bytes, described by what was being decoded.

use thiserror::Error;

use crate::sketch::error::SketchError;

/// Bytes that do not decode. `what` names the structure being decoded (`"page"`,
/// `"collection definition"`, ...); the storage layer wraps this error with the collection,
/// page and row it came from.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Fewer bytes than the structure needs.
    #[error("{what}: truncated: need {need} bytes, have {got}")]
    Truncated {
        /// The structure being decoded.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        got: usize,
    },
    /// The magic bytes are not the structure's.
    #[error("{what}: bad magic {found:02x?} (expected {expected:02x?})")]
    BadMagic {
        /// The structure being decoded.
        what: &'static str,
        /// The bytes found.
        found: [u8; 4],
        /// The magic expected.
        expected: [u8; 4],
    },
    /// A format version this build does not read.
    #[error("{what}: unsupported format version {found} (this build reads version {supported} only)")]
    UnsupportedVersion {
        /// The structure being decoded.
        what: &'static str,
        /// The version found.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// The stored crc32 does not match the bytes.
    #[error("{what}: crc32 mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The structure being decoded.
        what: &'static str,
        /// The stored checksum.
        stored: u32,
        /// The checksum of the bytes as read.
        computed: u32,
    },
    /// A header field holds a value that is impossible or disagrees with its context.
    #[error("{what}: field `{field}` is {found}, expected {expected}")]
    BadField {
        /// The structure being decoded.
        what: &'static str,
        /// The field's name, as in `storage-format.md`.
        field: &'static str,
        /// The value found.
        found: String,
        /// What was expected.
        expected: String,
    },
    /// A postcard payload that does not decode (or encode) as the expected type.
    #[error("{what}: postcard payload: {detail}")]
    Payload {
        /// The structure being decoded.
        what: &'static str,
        /// postcard's description of the problem.
        detail: String,
    },
    /// The columns of a row do not form a valid sketch (checked by the sketch's
    /// `from_parts`).
    #[error("{what}: {source}")]
    Sketch {
        /// The structure being decoded.
        what: &'static str,
        /// The sketch layer's complaint.
        #[source]
        source: SketchError,
    },
    /// A row index outside the page.
    #[error("row index {index} outside a page of {rows} rows")]
    RowOutOfRange {
        /// The index asked for.
        index: usize,
        /// The page's row count.
        rows: usize,
    },
}

impl CodecError {
    pub(crate) fn field(
        what: &'static str,
        field: &'static str,
        found: impl ToString,
        expected: impl ToString,
    ) -> Self {
        CodecError::BadField { what, field, found: found.to_string(), expected: expected.to_string() }
    }
}
