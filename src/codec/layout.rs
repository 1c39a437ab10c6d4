//! Column layouts: which fixed-width columns each sketch kind is stored as.
//!
//! A record is split into three column groups, stored in this order inside a page:
//!
//! 1. `value_cols` value columns of `value_width` bytes each (1, 2, 4 or 8):
//!    MinHash: k minima (4 bytes for 32-bit sketches, 8 for 64-bit);
//!    b-bit MinHash: the ceil(k * b / 64) packed u64 words (8 bytes);
//!    OPH: t bin values of `bits / 8` bytes;
//!    SimHash: 1 or 2 u64 words of the fingerprint (word 0 = bits 0..64).
//! 2. `word_cols` u64 columns: OPH's ceil(t / 64) empty-bin bitmap words; none otherwise.
//! 3. one u64 cardinality column when `has_cardinality` (every set sketch; not SimHash).
//!
//! Column `c` of a page of `n` rows is the contiguous run of `n * width(c)` bytes starting at
//! `prefix_width(c) * n` past the start of the column area: all rows' values of one slot are
//! adjacent, so a scan reads only the columns it needs.

use crate::sketch::bbit::packed_words;
use crate::sketch::params::{SketchKind, SketchParams};

/// The column groups of one sketch kind and parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ColumnLayout {
    /// The sketch kind (its code is in the page header).
    pub kind: SketchKind,
    /// Number of value columns.
    pub value_cols: u16,
    /// Bytes per value: 1, 2, 4 or 8.
    pub value_width: u8,
    /// Number of u64 auxiliary columns (OPH bitmap words).
    pub word_cols: u16,
    /// Whether a u64 cardinality column follows.
    pub has_cardinality: bool,
}

impl ColumnLayout {
    /// The layout of sketches with `params` (already validated).
    pub(crate) fn for_params(params: &SketchParams) -> ColumnLayout {
        let slots = params.slots();
        let (value_cols, value_width, word_cols, has_cardinality) = match params.kind() {
            SketchKind::MinHash => (slots, params.bits() / 8, 0, true),
            SketchKind::BBitMinHash => (packed_words(slots, params.bits()), 8, 0, true),
            SketchKind::Oph => (slots, params.bits() / 8, slots.div_ceil(64), true),
            SketchKind::SimHash => (slots, 8, 0, false),
        };
        ColumnLayout {
            kind: params.kind(),
            // MAX_SLOTS = 4096 bounds every count well below u16::MAX.
            value_cols: u16::try_from(value_cols).unwrap_or(u16::MAX),
            value_width,
            word_cols: u16::try_from(word_cols).unwrap_or(u16::MAX),
            has_cardinality,
        }
    }

    /// Bytes per record: the sum of all column widths.
    pub(crate) fn record_width(&self) -> usize {
        usize::from(self.value_cols) * usize::from(self.value_width)
            + usize::from(self.word_cols) * 8
            + if self.has_cardinality { 8 } else { 0 }
    }

    /// Byte offset (per row of the page) at which the word columns start.
    pub(crate) fn words_prefix(&self) -> usize {
        usize::from(self.value_cols) * usize::from(self.value_width)
    }

    /// Every column in page order as `(prefix, width)`: the bytes of a record before the
    /// column, and its entry width.
    pub(crate) fn columns(&self) -> impl Iterator<Item = (usize, usize)> + use<> {
        let vw = usize::from(self.value_width);
        let (words, cardinality) = (self.words_prefix(), self.cardinality_prefix());
        (0..usize::from(self.value_cols))
            .map(move |j| (j * vw, vw))
            .chain((0..usize::from(self.word_cols)).map(move |j| (words + 8 * j, 8)))
            .chain(self.has_cardinality.then_some((cardinality, 8)))
    }

    /// Byte offset (per row of the page) at which the cardinality column starts.
    pub(crate) fn cardinality_prefix(&self) -> usize {
        self.words_prefix() + usize::from(self.word_cols) * 8
    }
}

/// Bytes of the tombstone bitmap of a page of `rows` rows: one bit per row, in u64 words.
pub(crate) fn bitmap_len(rows: usize) -> usize {
    rows.div_ceil(64) * 8
}
