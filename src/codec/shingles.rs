//! A record's exact shingle set (its distinct 64-bit token hashes) as stored in the shingle
//! table: sorted, delta-coded and Golomb-Rice bit-packed.
//!
//! Layout (also `storage-format.md`, "Shingle sets"):
//! * `count`: LEB128 varint, the number of hashes n (0 allowed);
//! * `k`: one byte, the Rice parameter (0..=63); absent when n = 0;
//! * the bit stream, least significant bit first within each byte: for each hash in
//!   ascending order its gap d (the first hash's gap is the hash itself, every later gap is the
//!   difference to the previous hash, at least 1) as the quotient `d >> k` in unary (that many
//!   1 bits, then a 0 bit) followed by the low `k` bits of d, least significant first; then
//!   zero bits to the byte's end. No byte follows the last one the stream needs.
//!
//! The encoder picks k = floor(log2(max / n)) (0 when that is below 1), close to optimal for
//! uniformly spread hashes: about log2(2^64 / n) + 2 bits per hash, 7.2 bytes for n = 300
//! against 8 unpacked.

use super::error::CodecError;

const WHAT: &str = "shingle set";

/// The most hashes a stored set may hold (a bound for decoders of damaged bytes).
pub(crate) const MAX_SHINGLES: u64 = 1 << 32;

/// Encodes `sorted` (strictly ascending) hashes.
pub(crate) fn encode_shingles(sorted: &[u64]) -> Vec<u8> {
    debug_assert!(sorted.windows(2).all(|w| w[0] < w[1]), "shingle hashes must be strictly ascending");
    let mut out = Vec::with_capacity(sorted.len() * 15 / 2 + 10);
    push_varint(&mut out, sorted.len() as u64);
    let Some(&max) = sorted.last() else { return out };
    let k = rice_k(max, sorted.len() as u64);
    out.push(k);
    let mut bits = BitWriter { out, acc: 0, used: 0 };
    let mut prev = 0u64;
    for (i, &h) in sorted.iter().enumerate() {
        let d = if i == 0 { h } else { h - prev };
        prev = h;
        let mut q = d >> k;
        while q > 0 {
            let n = q.min(32) as u32;
            bits.put((1u64 << n) - 1, n);
            q -= u64::from(n);
        }
        bits.put(0, 1);
        if k > 0 {
            bits.put(d & ((1u64 << k) - 1), u32::from(k));
        }
    }
    bits.finish()
}

/// Decodes a shingle set; every malformed input is a [`CodecError`], never a panic.
pub(crate) fn decode_shingles(bytes: &[u8]) -> Result<Vec<u64>, CodecError> {
    let (n, mut at) = read_varint(bytes)?;
    if n > MAX_SHINGLES {
        return Err(bad("count", n, format!("at most {MAX_SHINGLES}")));
    }
    if n == 0 {
        return if at == bytes.len() { Ok(Vec::new()) } else { Err(bad("length", bytes.len(), at.to_string())) };
    }
    let k = *bytes.get(at).ok_or(CodecError::Truncated { what: WHAT, need: at + 1, got: bytes.len() })?;
    if k > 63 {
        return Err(bad("k", k, "0..=63".into()));
    }
    at += 1;
    let mut reader = BitReader { bytes: &bytes[at..], pos: 0 };
    // Each hash takes at least one bit: a count beyond the bits present is damage.
    if n > reader.bytes.len() as u64 * 8 {
        return Err(CodecError::Truncated { what: WHAT, need: at + n.div_ceil(8) as usize, got: bytes.len() });
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut prev = 0u64;
    for i in 0..n {
        let q = reader.unary(u64::MAX >> k).map_err(|e| match e {
            Unary::Truncated(t) => t,
            Unary::Over => bad("gap", format!("over 2^64 at hash {i}"), "a 64-bit gap".into()),
        })?;
        let low = reader.bits(u32::from(k))?;
        let d = (q << k) | low;
        if i > 0 && d == 0 {
            return Err(bad("gap", format!("0 at hash {i}"), "strictly ascending hashes".into()));
        }
        prev = if i == 0 { d } else { prev.checked_add(d).ok_or_else(|| bad("hash", i, "below 2^64".into()))? };
        out.push(prev);
    }
    let used = reader.pos.div_ceil(8);
    if used != reader.bytes.len() || (!reader.pos.is_multiple_of(8) && reader.bytes[used - 1] >> (reader.pos % 8) != 0)
    {
        return Err(bad("length", bytes.len(), format!("{} bytes with zero padding", at + used)));
    }
    // One encoding per set: the encoder's k only.
    if k != rice_k(prev, n) {
        return Err(bad("k", k, rice_k(prev, n).to_string()));
    }
    Ok(out)
}

/// The Rice parameter of `n` hashes whose largest is `max`: floor(log2(max / n)), 0 below 1.
fn rice_k(max: u64, n: u64) -> u8 {
    let mean = max / n.max(1);
    if mean == 0 { 0 } else { (63 - mean.leading_zeros()) as u8 }
}

fn bad(field: &'static str, found: impl ToString, expected: String) -> CodecError {
    CodecError::BadField { what: WHAT, field, found: found.to_string(), expected }
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(bytes: &[u8]) -> Result<(u64, usize), CodecError> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        let part = u64::from(b & 0x7f);
        if i == 9 && part > 1 {
            return Err(bad("count", "a varint over 64 bits", "a LEB128 u64".into()));
        }
        v |= part << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err(bad("count", "a varint with a zero last byte", "a minimal LEB128 u64".into()));
            }
            return Ok((v, i + 1));
        }
    }
    Err(CodecError::Truncated { what: WHAT, need: bytes.len() + 1, got: bytes.len() })
}

struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    used: u32,
}

impl BitWriter {
    /// Appends the low `n` (<= 63) bits of `v`.
    fn put(&mut self, v: u64, n: u32) {
        let mut v = v;
        let mut n = n;
        while n > 0 {
            let take = n.min(64 - self.used).min(32);
            let part = v & ((1u64 << take) - 1);
            self.acc |= part << self.used;
            self.used += take;
            v >>= take;
            n -= take;
            while self.used >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.used -= 8;
            }
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.used > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Why a unary count stopped short.
enum Unary {
    Truncated(CodecError),
    /// The count passed the caller's limit.
    Over,
}

impl BitReader<'_> {
    /// The bits from `pos` on, least significant first, with how many of them are real (up to
    /// 57; the rest are zero).
    fn window(&self) -> (u64, u32) {
        let byte = self.pos / 8;
        let avail = self.bytes.len().saturating_sub(byte).min(8);
        let mut buf = [0u8; 8];
        buf[..avail].copy_from_slice(&self.bytes[byte..byte + avail]);
        let shift = (self.pos % 8) as u32;
        (u64::from_le_bytes(buf) >> shift, (avail as u32 * 8).saturating_sub(shift))
    }

    fn truncated(&self, bits: usize) -> CodecError {
        CodecError::Truncated { what: WHAT, need: (self.pos + bits).div_ceil(8), got: self.bytes.len() }
    }

    /// Counts 1 bits up to and including the first 0 bit; the count, at most `limit`.
    fn unary(&mut self, limit: u64) -> Result<u64, Unary> {
        let mut q = 0u64;
        loop {
            let (w, valid) = self.window();
            if valid == 0 {
                return Err(Unary::Truncated(self.truncated(1)));
            }
            let ones = w.trailing_ones().min(valid);
            q += u64::from(ones);
            if q > limit {
                return Err(Unary::Over);
            }
            if ones < valid {
                self.pos += ones as usize + 1;
                return Ok(q);
            }
            self.pos += valid as usize;
        }
    }

    /// The next `n` (<= 64) bits, least significant first.
    fn bits(&mut self, n: u32) -> Result<u64, CodecError> {
        if n > 32 {
            let low = self.bits(32)?;
            return Ok(low | self.bits(n - 32)? << 32);
        }
        if n == 0 {
            return Ok(0);
        }
        let (w, valid) = self.window();
        if valid < n {
            return Err(self.truncated(n as usize));
        }
        self.pos += n as usize;
        Ok(w & (u64::MAX >> (64 - n)))
    }
}

/// |a ∩ b| / |a ∪ b| of two strictly ascending hash lists; 1 when both are empty.
pub(crate) fn exact_jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - both;
    if union == 0 { 1.0 } else { both as f64 / union as f64 }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn set(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn edge_sets_round_trip() {
        for s in [vec![], vec![0], vec![u64::MAX], vec![0, 1, 2, 3], vec![0, u64::MAX], vec![5, 1 << 63, u64::MAX - 1]]
        {
            let s = set(s);
            assert_eq!(decode_shingles(&encode_shingles(&s)).unwrap(), s, "{s:?}");
        }
        assert_eq!(encode_shingles(&[]), vec![0]);
    }

    #[test]
    fn uniform_hashes_pack_below_eight_bytes_each() {
        let mut x = 7u64;
        let s = set((0..300)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x ^ (x >> 29)
            })
            .collect());
        let bytes = encode_shingles(&s);
        assert!(bytes.len() < s.len() * 15 / 2, "{} bytes for {}", bytes.len(), s.len());
        assert_eq!(decode_shingles(&bytes).unwrap(), s);
    }

    #[test]
    fn damaged_bytes_are_errors() {
        let s = set(vec![3, 900, 1 << 40, u64::MAX]);
        let good = encode_shingles(&s);
        for cut in 0..good.len() {
            assert!(decode_shingles(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(decode_shingles(&extra).is_err());
        assert!(decode_shingles(&[1, 64, 0]).is_err(), "k over 63");
        assert!(decode_shingles(&[0xff; 11]).is_err(), "varint over 64 bits");
        // A gap of 0 after the first hash: unary 0, then k = 0 low bits.
        assert!(decode_shingles(&[2, 0, 0b00]).is_err());
    }

    #[test]
    fn jaccard_counts_common_hashes() {
        assert_eq!(exact_jaccard(&[1, 2, 3, 4], &[3, 4, 5]), 2.0 / 5.0);
        assert_eq!(exact_jaccard(&[], &[]), 1.0);
        assert_eq!(exact_jaccard(&[1], &[]), 0.0);
    }

    proptest! {
        #[test]
        fn any_set_round_trips(v in proptest::collection::vec(any::<u64>(), 0..400), small in proptest::collection::vec(0u64..1000, 0..200)) {
            for s in [set(v.clone()), set(small.clone())] {
                prop_assert_eq!(decode_shingles(&encode_shingles(&s)).unwrap(), s);
            }
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(s) = decode_shingles(&bytes) {
                prop_assert!(s.windows(2).all(|w| w[0] < w[1]));
                prop_assert_eq!(encode_shingles(&s), bytes);
            }
        }
    }
}
