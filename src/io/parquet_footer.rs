//! A structural check of a Parquet file's footer (its `FileMetaData`, Thrift compact protocol)
//! before the parquet crate decodes it.
//!
//! The parquet crate skips fields it does not know by walking them, and it walks a list (or
//! map) of booleans element by element without reading a byte per element: a footer of a
//! few bytes declaring lists of 2^31 booleans keeps it busy for seconds per list, minutes for
//! a small file. On the wire every element of a list, set or map takes at least one byte, so
//! a collection declaring more elements than bytes remain is malformed; this walk refuses it
//! and does work proportional to the footer's length.
//!
//! The walk follows the compact protocol's grammar only (field headers, value encodings,
//! nesting up to [`MAX_DEPTH`]); what the fields mean is left to the parquet crate. It is a
//! bound on the walk only where the parquet crate keeps to the same grammar: the crate reads a
//! field it knows by its number whatever its wire type says, so a grammatical footer whose
//! types disagree with the format can still lead its skipping astray. Pages carry Thrift
//! headers too; those are read by the parquet crate as it decodes them.

/// The deepest nesting of structs and collections accepted (the parquet crate's own limit).
const MAX_DEPTH: u32 = 64;

/// The trailer of a plain (unencrypted) Parquet file: metadata length, then `PAR1`.
const TRAILER_LEN: usize = 8;

/// The footer metadata's bytes: `Some((start, len))` within a file of `file_len` bytes whose
/// last eight bytes are `trailer`; `None` when the trailer is not a plain Parquet trailer
/// (the parquet crate then reports what it is).
pub(crate) fn metadata_range(trailer: &[u8; TRAILER_LEN], file_len: u64) -> Option<(u64, usize)> {
    if &trailer[4..] != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let start = file_len.checked_sub(TRAILER_LEN as u64)?.checked_sub(u64::from(len))?;
    Some((start, len as usize))
}

/// Checks that `meta` begins with one well-formed Thrift compact struct whose collections
/// fit in the bytes that remain; the error says what is wrong and at which byte.
pub(crate) fn check_metadata(meta: &[u8]) -> Result<(), String> {
    let mut w = Walk { b: meta, at: 0 };
    w.value(Type::Struct, 0)
}

/// The compact protocol's value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Type {
    BoolTrue,
    BoolFalse,
    Byte,
    I16,
    I32,
    I64,
    Double,
    Binary,
    List,
    Set,
    Map,
    Struct,
    Uuid,
}

impl Type {
    fn of(nibble: u8) -> Option<Type> {
        Some(match nibble {
            1 => Type::BoolTrue,
            2 => Type::BoolFalse,
            3 => Type::Byte,
            4 => Type::I16,
            5 => Type::I32,
            6 => Type::I64,
            7 => Type::Double,
            8 => Type::Binary,
            9 => Type::List,
            10 => Type::Set,
            11 => Type::Map,
            12 => Type::Struct,
            13 => Type::Uuid,
            _ => return None,
        })
    }
}

struct Walk<'a> {
    b: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn remaining(&self) -> usize {
        self.b.len() - self.at
    }

    fn fail(&self, what: &str) -> String {
        format!("malformed footer metadata at byte {}: {what}", self.at)
    }

    fn byte(&mut self) -> Result<u8, String> {
        let v = *self.b.get(self.at).ok_or_else(|| self.fail("it ends inside a value"))?;
        self.at += 1;
        Ok(v)
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        if n > self.remaining() as u64 {
            return Err(self.fail(&format!("a value of {n} bytes with {} left", self.remaining())));
        }
        self.at += n as usize;
        Ok(())
    }

    /// An unsigned LEB128 varint of at most 10 bytes.
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.fail("a varint longer than 10 bytes"))
    }

    /// `n` elements, each at least one byte on the wire.
    fn count(&self, n: u64, per_element: u64, what: &str) -> Result<(), String> {
        if n.saturating_mul(per_element) > self.remaining() as u64 {
            return Err(self.fail(&format!("a {what} of {n} elements with {} bytes left", self.remaining())));
        }
        Ok(())
    }

    fn element_type(&self, nibble: u8) -> Result<Type, String> {
        Type::of(nibble).ok_or_else(|| self.fail(&format!("unknown element type {nibble}")))
    }

    fn value(&mut self, ty: Type, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(self.fail(&format!("nesting deeper than {MAX_DEPTH}")));
        }
        match ty {
            Type::BoolTrue | Type::BoolFalse | Type::Byte => self.skip(1),
            Type::I16 | Type::I32 | Type::I64 => self.varint().map(drop),
            Type::Double => self.skip(8),
            Type::Uuid => self.skip(16),
            Type::Binary => {
                let n = self.varint()?;
                self.skip(n)
            }
            Type::List | Type::Set => {
                let header = self.byte()?;
                let n = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                let element = self.element_type(header & 0x0f)?;
                self.count(n, 1, "list")?;
                (0..n).try_for_each(|_| self.value(element, depth + 1))
            }
            Type::Map => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kinds = self.byte()?;
                let (key, val) = (self.element_type(kinds >> 4)?, self.element_type(kinds & 0x0f)?);
                self.count(n, 2, "map")?;
                (0..n).try_for_each(|_| {
                    self.value(key, depth + 1)?;
                    self.value(val, depth + 1)
                })
            }
            Type::Struct => loop {
                let header = self.byte()?;
                if header == 0 {
                    return Ok(());
                }
                if header >> 4 == 0 {
                    // A field id that is not a small delta follows as a zigzag varint.
                    self.varint()?;
                }
                match Type::of(header & 0x0f) {
                    // A boolean field carries its value in the header.
                    Some(Type::BoolTrue | Type::BoolFalse) => {}
                    Some(t) => self.value(t, depth + 1)?,
                    None => return Err(self.fail(&format!("unknown field type {}", header & 0x0f))),
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;

    use super::*;

    fn real_file() -> Vec<u8> {
        let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let texts: ArrayRef = Arc::new(StringArray::from(vec!["a b", "c d", "e f"]));
        let batch = RecordBatch::try_from_iter([("id", ids), ("text", texts)]).unwrap();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        out
    }

    fn footer(file: &[u8]) -> &[u8] {
        let trailer: [u8; 8] = file[file.len() - 8..].try_into().unwrap();
        let (start, len) = metadata_range(&trailer, file.len() as u64).unwrap();
        &file[start as usize..start as usize + len]
    }

    #[test]
    fn a_real_footer_is_well_formed_and_its_every_prefix_is_not() {
        let file = real_file();
        let meta = footer(&file);
        assert_eq!(check_metadata(meta), Ok(()));
        for cut in 0..meta.len() {
            assert!(check_metadata(&meta[..cut]).is_err(), "cut at {cut} of {}", meta.len());
        }
    }

    #[test]
    fn collections_longer_than_the_bytes_left_are_refused() {
        // Field 1, a list of 2^31 - 1 booleans (header 0xF1, varint size), then a stop.
        let list = [0x19, 0xF1, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00];
        let e = check_metadata(&list).unwrap_err();
        assert!(e.contains("a list of 2147483647 elements with 1 bytes left"), "{e}");
        // Field 1, a map of 2^31 - 1 boolean pairs.
        let map = [0x1B, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x11, 0x00];
        assert!(check_metadata(&map).unwrap_err().contains("a map of"));
        // Three booleans fit in three bytes.
        assert_eq!(check_metadata(&[0x19, 0x31, 1, 2, 1, 0x00]), Ok(()));
    }

    #[test]
    fn nesting_and_unknown_types_are_bounded() {
        // A struct field holding a struct ... 100 deep.
        let mut deep = vec![0x1C; 100];
        deep.extend([0u8; 101]);
        assert!(check_metadata(&deep).unwrap_err().contains("nesting deeper than 64"));
        assert!(check_metadata(&[0x1E]).unwrap_err().contains("unknown field type 14"));
        assert!(check_metadata(&[0x19, 0x1E]).unwrap_err().contains("unknown element type 14"));
    }

    /// The input on which the `io_parquet` fuzzer's reader ran for seconds (the parquet crate,
    /// reading known fields by number whatever their wire type, lost the structure and
    /// skipped boolean lists its bytes do not hold); the grammar finds it malformed.
    #[test]
    fn the_fuzzers_slow_footer_is_refused() {
        let file = include_bytes!("../../fuzz/regressions/io_parquet/timeout-ff5bbf30d772cf13ede0d11a85a0d80cc2f3b9aa");
        let e = check_metadata(footer(file)).unwrap_err();
        assert_eq!(e, "malformed footer metadata at byte 891: unknown field type 15");
    }

    #[test]
    fn only_a_plain_trailer_gives_a_range() {
        assert_eq!(metadata_range(&[10, 0, 0, 0, b'P', b'A', b'R', b'1'], 100), Some((82, 10)));
        assert_eq!(metadata_range(&[10, 0, 0, 0, b'P', b'A', b'R', b'E'], 100), None);
        assert_eq!(metadata_range(&[200, 0, 0, 0, b'P', b'A', b'R', b'1'], 100), None);
    }
}
