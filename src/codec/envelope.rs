//! The metadata envelope: every metadata value (format record, catalog, collection
//! definitions and states) is a postcard payload inside this frame.
//!
//! ```text
//! offset width field
//!      0     4 magic          b"SKDM"
//!      4     2 format_version u16, FORMAT_VERSION (1)
//!      6     2 record_kind    u16, RecordKind code
//!      8     4 payload_len    u32, bytes of payload that follow the 16-byte frame
//!     12     4 crc32          u32, crc32 (IEEE) of bytes 0..12 followed by the payload
//!     16     n payload        postcard encoding of the record
//! ```
//!
//! All integers little-endian. The value is exactly `16 + payload_len` bytes.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::FORMAT_VERSION;
use super::error::CodecError;

/// The envelope's magic bytes.
pub(crate) const ENVELOPE_MAGIC: [u8; 4] = *b"SKDM";
/// Offset and width of `magic`.
pub(crate) const MAGIC_OFFSET: usize = 0;
/// Offset of `format_version` (u16).
pub(crate) const VERSION_OFFSET: usize = 4;
/// Offset of `record_kind` (u16).
pub(crate) const KIND_OFFSET: usize = 6;
/// Offset of `payload_len` (u32).
pub(crate) const LEN_OFFSET: usize = 8;
/// Offset of `crc32` (u32).
pub(crate) const CRC_OFFSET: usize = 12;
/// Length of the frame before the payload.
pub(crate) const ENVELOPE_HEADER_LEN: usize = 16;

/// What an envelope holds. Codes are persisted: never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub(crate) enum RecordKind {
    /// The file's format record (`meta` table, key `"format"`).
    Format = 1,
    /// The catalog record (`meta` table, key `"catalog"`).
    Catalog = 2,
    /// A collection definition (`collections` table).
    CollectionDef = 3,
    /// A collection's mutable state (`collection_state` table).
    CollectionState = 4,
    /// A collection's index definition (`index_defs` table).
    IndexDef = 5,
    /// The planner's measured cost constants (`meta` table, key `"planner.costs"`).
    PlannerCosts = 6,
}

impl RecordKind {
    fn what(self) -> &'static str {
        match self {
            RecordKind::Format => "format record",
            RecordKind::Catalog => "catalog record",
            RecordKind::CollectionDef => "collection definition",
            RecordKind::CollectionState => "collection state",
            RecordKind::IndexDef => "index definition",
            RecordKind::PlannerCosts => "planner costs",
        }
    }
}

fn read_u16(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        a.copy_from_slice(s);
    }
    u16::from_le_bytes(a)
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    u32::from_le_bytes(a)
}

fn crc_of(frame: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(frame.get(..CRC_OFFSET).unwrap_or(&[]));
    h.update(payload);
    h.finalize()
}

/// Encodes `record` as a `kind` envelope of the current format version.
pub(crate) fn encode<T: Serialize>(kind: RecordKind, record: &T) -> Result<Vec<u8>, CodecError> {
    encode_with_version(kind, FORMAT_VERSION, record)
}

/// Encodes with an explicit version (tests use it to write files of unknown versions).
pub(crate) fn encode_with_version<T: Serialize>(
    kind: RecordKind,
    version: u16,
    record: &T,
) -> Result<Vec<u8>, CodecError> {
    let payload = to_postcard(kind.what(), record)?;
    let len = u32::try_from(payload.len())
        .map_err(|_| CodecError::field(kind.what(), "payload_len", payload.len(), "a payload below 4 GiB"))?;
    let mut out = Vec::with_capacity(ENVELOPE_HEADER_LEN + payload.len());
    out.extend_from_slice(&ENVELOPE_MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(kind as u16).to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    let crc = crc_of(&out, &payload);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Frames raw payload bytes as a valid `kind` envelope (tests feed decoders payloads no
/// encoder would write).
#[cfg(test)]
pub(crate) fn frame_raw(kind: RecordKind, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENVELOPE_HEADER_LEN + payload.len());
    out.extend_from_slice(&ENVELOPE_MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(kind as u16).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = crc_of(&out, payload);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Checks the frame (magic, version, kind, exact length, crc) and decodes the payload.
pub(crate) fn decode<T: DeserializeOwned>(kind: RecordKind, bytes: &[u8]) -> Result<T, CodecError> {
    let what = kind.what();
    if bytes.len() < ENVELOPE_HEADER_LEN {
        return Err(CodecError::Truncated { what, need: ENVELOPE_HEADER_LEN, got: bytes.len() });
    }
    let mut magic = [0u8; 4];
    magic.copy_from_slice(bytes.get(MAGIC_OFFSET..MAGIC_OFFSET + 4).unwrap_or(&[0; 4]));
    if magic != ENVELOPE_MAGIC {
        return Err(CodecError::BadMagic { what, found: magic, expected: ENVELOPE_MAGIC });
    }
    // The version is checked before the crc: a later version may frame its payload differently.
    let version = read_u16(bytes, VERSION_OFFSET);
    if version != FORMAT_VERSION {
        return Err(CodecError::UnsupportedVersion { what, found: version, supported: FORMAT_VERSION });
    }
    let len = read_u32(bytes, LEN_OFFSET) as usize;
    let payload = bytes.get(ENVELOPE_HEADER_LEN..).unwrap_or(&[]);
    let stored = read_u32(bytes, CRC_OFFSET);
    let computed = crc_of(bytes, payload);
    if stored != computed {
        return Err(CodecError::Checksum { what, stored, computed });
    }
    let found_kind = read_u16(bytes, KIND_OFFSET);
    if found_kind != kind as u16 {
        return Err(CodecError::field(what, "record_kind", found_kind, kind as u16));
    }
    if payload.len() != len {
        return Err(CodecError::field(what, "payload_len", len, payload.len()));
    }
    from_postcard(what, payload)
}

/// postcard-encodes a value (an envelope's payload, or a db-layer value stored inside
/// [`super::meta::CollectionDef::settings`]).
pub(crate) fn to_postcard<T: Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, CodecError> {
    postcard::to_allocvec(value).map_err(|e| CodecError::Payload { what, detail: e.to_string() })
}

/// Decodes [`to_postcard`]'s output, refusing trailing bytes.
pub(crate) fn from_postcard<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, CodecError> {
    let (v, rest) =
        postcard::take_from_bytes::<T>(bytes).map_err(|e| CodecError::Payload { what, detail: e.to_string() })?;
    if !rest.is_empty() {
        return Err(CodecError::Payload { what, detail: format!("{} trailing bytes after the record", rest.len()) });
    }
    Ok(v)
}
