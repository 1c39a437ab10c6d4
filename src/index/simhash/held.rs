//! The form in which the probe cache holds a 64-bit table's bucket for warm probes.
//!
//! A bucket as stored ([`super::format`]) packs each permuted key's suffix into `s` bytes, so
//! every probe would decode every entry again. A table of 64-bit fingerprints is held instead
//! as plain words the Hamming filter compares directly (in vectors, see
//! `simd::within_words_u32`), and the row ids as stored. Every entry of a bucket shares its
//! top `B` key bits with the query, so only the suffix counts: shifted up to the top
//! (`key << B`), its high half is entry's `hi` word and its low half its `lo` word:
//!
//! ```text
//! offset  width   field
//!      0      4   n      entries, LE
//!      4      1   w      row-id bytes per entry, 1..=8
//!      5      1   B      the bucket's key bits, 0..=63
//!      6      2   0
//!      8    4*n   hi     each entry's (key << B) >> 32, u32 LE
//!  8+4*n    4*n   lo     each entry's (key << B) as u32, u32 LE
//!  8+8*n    w*n   rows   each entry's row id, w bytes LE
//! ```
//!
//! in stored order (by (key, row)). A probe filters the `hi` words first (32 of the suffix's
//! bits: a random entry passes at radius 3 with odds about 10^-6) and reads `lo` words only
//! for those that pass, so it streams 4 bytes per entry, not 8. The held bytes are built from
//! a checked stored value when a bucket is first read and hold exactly its entries; they
//! exist only in memory (no file-format change), at 8 + w bytes per entry against s + w
//! stored.

use super::format::{BucketView, Geometry};
use crate::simd;

/// Bytes before the keys.
const HEADER: usize = 8;

/// The held form of a stored (or merged) bucket value `bytes` of bucket `bucket` in a table
/// of 64-bit keys with geometry `g`, or what is wrong with the value.
pub(crate) fn held_of(bytes: &[u8], g: Geometry, bucket: u32) -> Result<Vec<u8>, String> {
    if g.f != 64 {
        return Err(format!("a bucket of {}-bit keys is not held as 64-bit words", g.f));
    }
    let view = BucketView::parse(bytes, g)?;
    let (n, w) = (view.len(), view.row_bytes());
    let mut out = vec![0u8; HEADER + n * (8 + w)];
    out[..4].copy_from_slice(&(n as u32).to_le_bytes());
    out[4] = w as u8;
    out[5] = g.bits as u8;
    let (hi, rest) = out[HEADER..].split_at_mut(4 * n);
    let (lo, rows) = rest.split_at_mut(4 * n);
    let mut full = Vec::with_capacity(n);
    view.keys_into::<u64>(g, bucket, &mut full);
    for ((k, h), l) in full.iter().zip(hi.chunks_exact_mut(4)).zip(lo.chunks_exact_mut(4)) {
        let up = k << g.bits;
        h.copy_from_slice(&((up >> 32) as u32).to_le_bytes());
        l.copy_from_slice(&(up as u32).to_le_bytes());
    }
    rows.copy_from_slice(view.row_bytes_slice());
    Ok(out)
}

/// Word i of 4-byte LE words (i in range).
#[inline]
fn word32(words: &[u8], i: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&words[4 * i..4 * i + 4]);
    u32::from_le_bytes(a)
}

/// A held bucket: its keys' halves and row ids.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeldView<'a> {
    hi: &'a [u8],
    lo: &'a [u8],
    rows: &'a [u8],
    w: usize,
    bits: u32,
}

impl<'a> HeldView<'a> {
    /// Checks the header and length (a held value is built here, so a mismatch means the
    /// cache holds something else: reported, not trusted).
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<HeldView<'a>, String> {
        let Some((head, body)) = bytes.split_first_chunk::<HEADER>() else {
            return Err(format!("held bucket of {} bytes is shorter than its header", bytes.len()));
        };
        let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let (w, bits) = (usize::from(head[4]), u32::from(head[5]));
        if !(1..=8).contains(&w) || bits > 63 || head[6..] != [0; 2] || body.len() != n * (8 + w) {
            return Err(format!("held bucket header n = {n}, w = {w}, B = {bits} does not fit {} bytes", bytes.len()));
        }
        let (hi, rest) = body.split_at(4 * n);
        let (lo, rows) = rest.split_at(4 * n);
        Ok(HeldView { hi, lo, rows, w, bits })
    }

    /// The number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.hi.len() / 4
    }

    /// Pushes `(distance, i)`, in order, for every entry whose key is within `k` of `query`,
    /// which must share the bucket's top B bits (the probed bucket is the query's): those
    /// bits are equal, so the distance is that of the suffixes.
    #[inline]
    pub(crate) fn within(&self, query: u64, k: u32, out: &mut Vec<(u32, usize)>) {
        let up = query << self.bits;
        let (q_hi, q_lo) = ((up >> 32) as u32, up as u32);
        let first = out.len();
        simd::within_words_u32(q_hi, self.hi, k, out);
        // Those whose high halves pass, completed by their low halves.
        let mut kept = first;
        for at in first..out.len() {
            let (d_hi, i) = out[at];
            let d = d_hi + (word32(self.lo, i) ^ q_lo).count_ones();
            if d <= k {
                out[kept] = (d, i);
                kept += 1;
            }
        }
        out.truncate(kept);
    }

    /// Entry i's full permuted key in bucket `bucket` (i < the entry count).
    #[inline]
    pub(crate) fn key(&self, bucket: u32, i: usize) -> u64 {
        let up = u64::from(word32(self.hi, i)) << 32 | u64::from(word32(self.lo, i));
        if self.bits == 0 { up } else { u64::from(bucket) << (64 - self.bits) | up >> self.bits }
    }

    /// Entry i's row id (i < the entry count).
    #[inline]
    pub(crate) fn row(&self, i: usize) -> u64 {
        let mut a = [0u8; 8];
        a[..self.w].copy_from_slice(&self.rows[i * self.w..(i + 1) * self.w]);
        u64::from_le_bytes(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::simhash::design::SimhashTableDesign;
    use crate::index::simhash::format::{encode_bucket, encoded_len};

    /// Held buckets give the stored entries, every key within the radius and nothing else,
    /// for every bucket width of a 64-bit design and row widths 1 to 8; damaged held bytes
    /// are refused.
    #[test]
    fn held_buckets_equal_the_stored_entries() {
        let design = SimhashTableDesign::with_blocks(64, 3, 4).expect("design");
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state ^ (state >> 29)
        };
        for bucket_bits in [0u32, 5, 16] {
            let g = Geometry::of(&design, bucket_bits, 0);
            for (n, max_row) in [(1usize, 3u64), (9, 300), (70, 1 << 20), (33, u64::MAX >> 3)] {
                let bucket = (next() as u32) & ((1u64 << g.bits) - 1) as u32;
                let base = if g.bits == 0 { 0 } else { u64::from(bucket) << (64 - g.bits) };
                let mask = if g.bits == 0 { u64::MAX } else { u64::MAX >> g.bits };
                let mut entries: Vec<(u128, u64)> =
                    (0..n).map(|_| (u128::from(base | (next() & mask)), next() % max_row)).collect();
                entries.sort_unstable();
                let mut stored = vec![0u8; encoded_len(&entries, g)];
                encode_bucket(&entries, g, &mut stored);
                let held = held_of(&stored, g, bucket).expect("held");
                let view = HeldView::parse(&held).expect("parse");
                assert_eq!(view.len(), n);
                for (i, &(key, row)) in entries.iter().enumerate() {
                    assert_eq!((u128::from(view.key(bucket, i)), view.row(i)), (key, row), "entry {i}");
                }
                // Queries in the bucket: near an entry, and far from all.
                for query in [entries[n / 2].0 as u64 ^ 0b1011, base | (!next() & mask)] {
                    for k in [0u32, 3, 33, 64] {
                        let mut got = vec![(7, 7)];
                        view.within(query, k, &mut got);
                        let want: Vec<(u32, usize)> = entries
                            .iter()
                            .enumerate()
                            .map(|(i, e)| ((e.0 as u64 ^ query).count_ones(), i))
                            .filter(|&(d, _)| d <= k)
                            .collect();
                        assert_eq!(got[0], (7, 7), "appends");
                        assert_eq!(&got[1..], &want[..], "bucket_bits {bucket_bits} n {n} k {k}");
                    }
                }
                assert!(HeldView::parse(&held[..held.len() - 1]).is_err(), "cut");
                assert!(HeldView::parse(&held[..4]).is_err(), "header cut");
                let mut bad = held.clone();
                bad[4] = 9;
                assert!(HeldView::parse(&bad).is_err(), "row width");
                let mut bad = held.clone();
                bad[5] = 64;
                assert!(HeldView::parse(&bad).is_err(), "bucket bits");
                assert!(held_of(&stored[..stored.len() - 1], g, bucket).is_err(), "stored value cut");
            }
        }
        let wide = SimhashTableDesign::with_blocks(128, 3, 4).expect("design");
        assert!(held_of(&[0u8; 16], Geometry::of(&wide, 16, 0), 0).is_err(), "128-bit keys");
    }
}
