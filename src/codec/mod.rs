//! The codec layer: the only code that knows byte layouts.
//!
//! * [`envelope`]: the metadata envelope (magic, format version, record kind, length, crc32)
//!   around a postcard payload.
//! * [`header`]: the columnar page header, a zerocopy struct whose `*_OFFSET` constants mirror
//!   `storage-format.md` field by field.
//! * [`layout`]: which fixed-width columns a sketch kind is stored as.
//! * [`page`]: the page layout and [`page::PageView`] (zero-copy reader); [`page_builder`]:
//!   [`page_builder::PageBuilder`] (writer).
//! * [`record`]: one row of columns <-> a [`crate::Sketch`], always through `from_parts`.
//! * [`shingles`]: a record's exact shingle hashes, sorted, delta-coded and Rice bit-packed.
//! * [`signature`]: one record's cells as fixed-width bytes (the Arrow kernels' signatures).
//! * [`meta`]: the postcard-encoded metadata records and the fixed-width table values.
//! * [`wire`]: the stored shapes of the public configuration types (sketch parameters,
//!   tokenizer, index settings, LSH banding), which carry no serde derives themselves.
//!
//! Nothing here panics on any input: every decoder checks lengths before slicing and
//! returns a [`CodecError`] (the page and envelope decoders are fuzzed and proptested).
#![forbid(unsafe_code)]

pub(crate) mod envelope;
pub(crate) mod error;
pub(crate) mod header;
pub(crate) mod layout;
pub(crate) mod meta;
pub(crate) mod page;
pub(crate) mod page_builder;
pub(crate) mod record;
pub(crate) mod rows;
pub(crate) mod shingles;
pub(crate) mod signature;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

/// The layout version of metadata envelopes and page headers: the one this build writes and
/// the only one it reads. Stored in every envelope frame and every page header.
pub(crate) const FORMAT_VERSION: u16 = 1;

/// The file format version the format record of a file this build creates states
/// (`storage-format.md`, section 7.1): 2 = the file may list removed rows in
/// `sketchdb.row_dead` (by page), which builds reading only version 1 would miss; 3 = it may
/// list them in `sketchdb.row_dead64` (by 64-row chunk), which version-2 builds would miss.
pub(crate) const FILE_FORMAT_VERSION: u16 = 3;

/// The oldest file format version this build reads (and upgrades in place to
/// [`FILE_FORMAT_VERSION`] when it first records a removed row in the side table).
pub(crate) const OLDEST_FILE_FORMAT_VERSION: u16 = 1;
