//! The byte format of SimHash index values and keys: the packed bucket value ([`BucketView`],
//! [`encode_bucket`]) and the key's table field, which carries the run ([`table_field`]).
//!
//! Table `sketchdb.simhash_buckets`, key `(collection id, run << 8 | table t, bucket)`, where
//! the bucket is the top `B_t = min(bucket_bits, p_t)` bits of the row's permuted key in table
//! t (at most 256 tables, at most 2^24 run numbers; files written before runs existed hold
//! exactly run 0). The value (all integers little-endian; `storage-format.md`, "Index tables"):
//!
//! ```text
//! offset  width      field
//!      0      1      layout      1
//!      1      1      s           suffix bytes per entry: ceil((f - B_t) / 8)
//!      2      1      w           row-id bytes per entry, 1..=8 (the fewest holding the largest)
//!      3      1      reserved    0
//!      4      4      n           entries, >= 1
//!      8    n*s      suffixes    the low f - B_t bits of each permuted key, s bytes LE
//!  8+n*s    n*w      rows        each row id, w bytes LE
//! ```
//!
//! Entries are sorted by (permuted key, row id); a row appears once per table of its run.

use super::design::SimhashTableDesign;
use crate::index::fingerprint::Fingerprint;

/// Run numbers: 0 ..= 2^24 - 1 (the key field's bits above the table number).
pub(crate) const RUN_IDS: u32 = 1 << 24;

/// The key field of run `run`'s table `t`.
#[inline]
pub(crate) fn table_field(run: u32, t: u32) -> u32 {
    debug_assert!(run < RUN_IDS && t < 256);
    run << 8 | t
}

/// `(run, table)` of a key field.
#[inline]
pub(crate) fn split_field(field: u32) -> (u32, u32) {
    (field >> 8, field & 0xff)
}

/// Bytes of the bucket value header.
pub(crate) const BUCKET_HEADER_LEN: usize = 8;
/// The bucket value layout version (byte 0).
pub(crate) const BUCKET_LAYOUT: u8 = 1;

/// Table t's bucket geometry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    /// f.
    pub f: u32,
    /// B_t.
    pub bits: u32,
    /// Suffix bytes s.
    pub suffix_bytes: usize,
}

impl Geometry {
    pub(crate) fn of(design: &SimhashTableDesign, bucket_bits: u32, table: usize) -> Geometry {
        let bits = bucket_bits.min(design.prefix_bits(table));
        Geometry { f: design.f(), bits, suffix_bytes: (design.f() - bits).div_ceil(8) as usize }
    }
    /// The bucket of a permuted key.
    #[inline]
    pub(crate) fn bucket(&self, key: u128) -> u32 {
        if self.bits == 0 { 0 } else { (key >> (self.f - self.bits)) as u32 }
    }
    #[inline]
    fn suffix_mask(&self) -> u128 {
        let n = self.f - self.bits;
        if n >= 128 { u128::MAX } else { (1u128 << n) - 1 }
    }
    #[inline]
    fn base(&self, bucket: u32) -> u128 {
        if self.bits == 0 { 0 } else { u128::from(bucket) << (self.f - self.bits) }
    }
}

/// A decoded bucket value's header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BucketView<'a> {
    n: usize,
    row_bytes: usize,
    /// Suffixes then row ids.
    tail: &'a [u8],
    suffixes: &'a [u8],
    rows: &'a [u8],
    suffix_bytes: usize,
}

impl<'a> BucketView<'a> {
    /// Checks the header and length against the geometry.
    pub(crate) fn parse(bytes: &'a [u8], g: Geometry) -> Result<BucketView<'a>, String> {
        if bytes.len() < BUCKET_HEADER_LEN {
            return Err(format!("bucket value of {} bytes is shorter than its header", bytes.len()));
        }
        if bytes[0] != BUCKET_LAYOUT || bytes[3] != 0 {
            return Err(format!("unknown bucket layout {} / reserved {}", bytes[0], bytes[3]));
        }
        let (s, w) = (usize::from(bytes[1]), usize::from(bytes[2]));
        if s != g.suffix_bytes || !(1..=8).contains(&w) {
            return Err(format!("suffix bytes {s} (expected {}), row bytes {w} (1..=8)", g.suffix_bytes));
        }
        let n = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        if n == 0 || bytes.len() != BUCKET_HEADER_LEN + n * (s + w) {
            return Err(format!("{n} entries do not fill a value of {} bytes", bytes.len()));
        }
        let tail = &bytes[BUCKET_HEADER_LEN..];
        let (suffixes, rows) = tail.split_at(n * s);
        Ok(BucketView { n, row_bytes: w, tail, suffixes, rows, suffix_bytes: s })
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Row-id bytes per entry.
    pub(crate) fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// The row ids as stored: `len()` ids of `row_bytes()` bytes each, LE.
    pub(crate) fn row_bytes_slice(&self) -> &'a [u8] {
        self.rows
    }

    /// Appends the full permuted keys (bucket bits restored), without the row ids. Suffixes
    /// of up to 8 bytes are read with one unaligned 8-byte load and a mask wherever 8 bytes
    /// remain in the value (the row ids follow the suffixes, so all but the last few).
    pub(crate) fn keys_into<F: Fingerprint>(&self, g: Geometry, bucket: u32, keys: &mut Vec<F>) {
        let base = g.base(bucket);
        let s = self.suffix_bytes;
        keys.reserve(self.n);
        if s > 8 {
            for c in self.suffixes.chunks_exact(s) {
                let mut a = [0u8; 16];
                a[..s].copy_from_slice(c);
                keys.push(F::from_u128_truncating(base | u128::from_le_bytes(a)));
            }
            return;
        }
        let mask = if s == 8 { u64::MAX } else { (1u64 << (8 * s)) - 1 };
        let tail = self.tail;
        for i in 0..self.n {
            let off = i * s;
            let v = match tail.get(off..off + 8) {
                Some(b) => u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) & mask,
                None => {
                    let mut a = [0u8; 8];
                    a[..s].copy_from_slice(&self.suffixes[off..off + s]);
                    u64::from_le_bytes(a)
                }
            };
            keys.push(F::from_u128_truncating(base | u128::from(v)));
        }
    }

    /// Entry i's row id (i < the entry count).
    #[inline]
    pub(crate) fn row(&self, i: usize) -> u64 {
        let w = self.row_bytes;
        let mut a = [0u8; 8];
        a[..w].copy_from_slice(&self.rows[i * w..(i + 1) * w]);
        u64::from_le_bytes(a)
    }

    /// Appends every entry as `(full permuted key, row id)`, in stored order.
    pub(crate) fn entries_into(&self, g: Geometry, bucket: u32, out: &mut Vec<(u128, u64)>) {
        let base = g.base(bucket);
        let (s, w) = (self.suffix_bytes, self.row_bytes);
        out.reserve(self.n);
        for (suffix, row) in self.suffixes.chunks_exact(s).zip(self.rows.chunks_exact(w)) {
            let (mut k, mut r) = ([0u8; 16], [0u8; 8]);
            k[..s].copy_from_slice(suffix);
            r[..w].copy_from_slice(row);
            out.push((base | u128::from_le_bytes(k), u64::from_le_bytes(r)));
        }
    }

    /// Appends the full permuted keys (bucket bits restored) and row ids.
    #[cfg(test)]
    pub(crate) fn decode_into<F: Fingerprint>(&self, g: Geometry, bucket: u32, keys: &mut Vec<F>, rows: &mut Vec<u64>) {
        let base = g.base(bucket);
        let s = self.suffix_bytes;
        keys.reserve(self.n);
        if s <= 8 {
            for c in self.suffixes.chunks_exact(s) {
                let mut a = [0u8; 8];
                a[..s].copy_from_slice(c);
                keys.push(F::from_u128_truncating(base | u128::from(u64::from_le_bytes(a))));
            }
        } else {
            for c in self.suffixes.chunks_exact(s) {
                let mut a = [0u8; 16];
                a[..s].copy_from_slice(c);
                keys.push(F::from_u128_truncating(base | u128::from_le_bytes(a)));
            }
        }
        let w = self.row_bytes;
        rows.reserve(self.n);
        for c in self.rows.chunks_exact(w) {
            let mut a = [0u8; 8];
            a[..w].copy_from_slice(c);
            rows.push(u64::from_le_bytes(a));
        }
    }
}

/// Encodes sorted entries `(full permuted key, row)` of one bucket.
pub(crate) fn encode_bucket(entries: &[(u128, u64)], g: Geometry, out: &mut [u8]) {
    let s = g.suffix_bytes;
    let max_row = entries.iter().map(|e| e.1).max().unwrap_or(0);
    let w = (8 - (max_row.leading_zeros() / 8) as usize).max(1);
    out[0] = BUCKET_LAYOUT;
    out[1] = s as u8;
    out[2] = w as u8;
    out[3] = 0;
    out[4..8].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    let mask = g.suffix_mask();
    let (suf, rows) = out[BUCKET_HEADER_LEN..].split_at_mut(entries.len() * s);
    for ((key, _), d) in entries.iter().zip(suf.chunks_exact_mut(s)) {
        d.copy_from_slice(&(key & mask).to_le_bytes()[..s]);
    }
    for ((_, row), d) in entries.iter().zip(rows.chunks_exact_mut(w)) {
        d.copy_from_slice(&row.to_le_bytes()[..w]);
    }
}

/// The encoded length of `entries`.
pub(crate) fn encoded_len(entries: &[(u128, u64)], g: Geometry) -> usize {
    let max_row = entries.iter().map(|e| e.1).max().unwrap_or(0);
    let w = (8 - (max_row.leading_zeros() / 8) as usize).max(1);
    BUCKET_HEADER_LEN + entries.len() * (g.suffix_bytes + w)
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
