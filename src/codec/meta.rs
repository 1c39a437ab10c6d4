//! Metadata records (postcard payloads inside an [`super::envelope`]) and helpers for the
//! db layer's own postcard settings.
//!
//! postcard is not self-describing: fields are decoded in declaration order, so a record's
//! fields may never be reordered or removed; a change that older builds cannot read bumps
//! [`super::FORMAT_VERSION`], which those builds then refuse by name.

use serde::{Deserialize, Serialize};

use super::page::MAX_PAGE_ROWS;

use super::envelope::{self, RecordKind};
use super::error::CodecError;
use crate::sketch::params::SketchParams;

/// The file's format record: written once when the file is created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FormatRecord {
    /// The sketchdb format version (also in the envelope frame).
    pub format_version: u16,
    /// The storage engine's file-format version the file was created with (storage-format.md §3).
    pub engine_file_format: u8,
    /// `"sketchdb <crate version>"` of the build that created the file (informational).
    pub created_by: String,
}

/// Catalog-wide counters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CatalogRecord {
    /// The id the next created collection gets. Ids are never reused.
    pub next_collection_id: u32,
}

/// A collection's immutable definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CollectionDef {
    /// The collection id (the key of its pages, keys and state).
    pub id: u32,
    /// The unique name.
    pub name: String,
    /// The sketch parameters every record has (stored as [`super::wire::SketchParamsWire`]).
    #[serde(with = "super::wire::via")]
    pub params: SketchParams,
    /// Rows per page.
    pub capacity: u32,
    /// The db layer's settings (tokenizer, index configuration): a postcard
    /// [`super::wire::SettingsWire`].
    pub settings: Vec<u8>,
}

/// A collection's mutable counters, rewritten by every transaction that changes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CollectionState {
    /// The row id the next record gets; every row id in use is below it.
    pub next_row: u64,
    /// Live (not deleted) records.
    pub live: u64,
    /// Rows marked deleted and not yet compacted away.
    pub deleted: u64,
}

/// The planner's cost constants as measured on the machine by a calibration, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlannerCostsRecord {
    /// Full scan: decoding one row and estimating, per slot.
    pub decode_per_slot: f64,
    /// Bin scan: one OPH bin of one row.
    pub bin_compare: f64,
    /// Scan: one 64-bit fingerprint word.
    pub fingerprint_compare: f64,
    /// One index or row lookup.
    pub lookup: f64,
    /// Fetching and verifying one candidate, per slot.
    pub verify_per_slot: f64,
    /// `"sketchdb <version>"` of the build that measured (informational).
    pub measured_by: String,
}

impl PlannerCostsRecord {
    pub(crate) fn encode(&self) -> Result<Vec<u8>, CodecError> {
        envelope::encode(RecordKind::PlannerCosts, self)
    }
    /// Decodes and checks that every constant is finite and positive.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let r: PlannerCostsRecord = envelope::decode(RecordKind::PlannerCosts, bytes)?;
        for (name, v) in [
            ("decode_per_slot", r.decode_per_slot),
            ("bin_compare", r.bin_compare),
            ("fingerprint_compare", r.fingerprint_compare),
            ("lookup", r.lookup),
            ("verify_per_slot", r.verify_per_slot),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(CodecError::field("planner costs", name, v, "a finite, positive number of nanoseconds"));
            }
        }
        Ok(r)
    }
}

impl FormatRecord {
    pub(crate) fn encode(&self) -> Result<Vec<u8>, CodecError> {
        envelope::encode(RecordKind::Format, self)
    }
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let r: FormatRecord = envelope::decode(RecordKind::Format, bytes)?;
        if !(super::OLDEST_FILE_FORMAT_VERSION..=super::FILE_FORMAT_VERSION).contains(&r.format_version) {
            return Err(CodecError::UnsupportedVersion {
                what: "format record",
                found: r.format_version,
                supported: super::FILE_FORMAT_VERSION,
            });
        }
        Ok(r)
    }
}

impl CatalogRecord {
    pub(crate) fn encode(&self) -> Result<Vec<u8>, CodecError> {
        envelope::encode(RecordKind::Catalog, self)
    }
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        envelope::decode(RecordKind::Catalog, bytes)
    }
}

impl CollectionDef {
    pub(crate) fn encode(&self) -> Result<Vec<u8>, CodecError> {
        envelope::encode(RecordKind::CollectionDef, self)
    }
    /// Decodes and validates (parameters in range, capacity 1..=[`MAX_PAGE_ROWS`]).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let d: CollectionDef = envelope::decode(RecordKind::CollectionDef, bytes)?;
        d.params.validate().map_err(|source| CodecError::Sketch { what: "collection definition", source })?;
        if d.capacity == 0 || d.capacity > MAX_PAGE_ROWS {
            return Err(CodecError::field(
                "collection definition",
                "capacity",
                d.capacity,
                format!("1..={MAX_PAGE_ROWS} rows per page"),
            ));
        }
        Ok(d)
    }
}

impl CollectionState {
    pub(crate) fn encode(&self) -> Result<Vec<u8>, CodecError> {
        envelope::encode(RecordKind::CollectionState, self)
    }
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        envelope::decode(RecordKind::CollectionState, bytes)
    }
}
