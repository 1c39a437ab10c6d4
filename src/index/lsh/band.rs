//! LSH band keys for MinHash, b-bit MinHash and densified OPH signatures.
//!
//! # Specification (versions 1 to 3; the version is persisted with the index)
//!
//! A signature's *rows* are its slot values in slot order ([`lsh_rows`]): MinHash minima (as
//! u64 for 64-bit MinHash, as u32 for 32-bit MinHash), b-bit values as u32, and the densified
//! OPH bins ([`crate::OphSketch::densify`]) as u32. Band i of a banding with r rows per band
//! covers slots `[i * r, (i + 1) * r)`; slots at and beyond `bands * r` are unused.
//!
//! **Versions 1 and 2.** Band i's hash is `xxh3_64_with_seed(bytes, seed)` (XXH3, 64-bit
//! output, from the `xxhash-rust` crate) over
//!
//! ```text
//! bytes = u32_le(i) ++ value_le(slot i*r) ++ value_le(slot i*r + 1) ++ ... ++ value_le(slot i*r + r - 1)
//! ```
//!
//! where `value_le` is the value's 4 little-endian bytes for u32 rows (whatever the scheme's
//! [`RowWidth`], when that is 1, 2 or 4 bytes) and 8 for u64 rows, so a band of r rows hashes
//! exactly 4 + 4r or 4 + 8r bytes ([`band_key_u32`], [`band_key_u64`]). The band *key* is
//! that hash under version 1, and under version 2 its top [`KEY_BITS_V2`] bits with the low
//! bits cleared (`hash & !(2^32 - 1)`): half the bytes per stored entry, and two different
//! bands collide by chance with probability 2^-32, which verification filters like any other
//! false candidate.
//!
//! **Version 3** (the current one). Band i's hash is
//! `xxh3_64_with_seed(bytes, seed ^ (i * 0x9E37_79B9_7F4A_7C15 mod 2^64))` over
//!
//! ```text
//! bytes = value_w(slot i*r) ++ value_w(slot i*r + 1) ++ ... ++ value_w(slot i*r + r - 1)
//! ```
//!
//! where `value_w` is the value's `w` little-endian bytes and `w` the scheme's
//! [`RowWidth::bytes`]: 1 for b-bit MinHash with b <= 8, 2 for b <= 16, 4 for the other u32
//! rows, 8 for u64 rows ([`band_key_v3`]); a value that does not fit `w` bytes is an error,
//! never truncated. The key is the hash's top [`KEY_BITS_V2`] bits, as in version 2. The
//! band index moves into the seed, and the values are hashed at their own width: a b-bit
//! band of 13 one-byte values is 13 bytes (XXH3's path for inputs of 9 to 16 bytes) where version 2
//! hashed 56, and for b = 8, 16 or 32 those bytes are the packed signature's own bytes.
//!
//! `seed` is chosen when the index is created and stored with it, with the version, in a
//! [`BandKeyScheme`]. No per-process random state enters (never `ahash` or std's
//! `RandomState`).

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;
use zerocopy::IntoBytes;

use super::params::LshParams;
use crate::index::error::IndexError;
use crate::sketch::bbit::BBitMinHash;
use crate::sketch::sketcher::Sketch;

/// The version of the band-key byte encoding and hash specified in the module docs that new
/// indexes use (versions 1, full 64-bit keys, and 2 are still read and maintained).
pub const BAND_HASH_VERSION: u16 = 3;
/// The significant (top) bits of a version 2 or 3 band key.
pub const KEY_BITS_V2: u32 = 32;
/// The per-band seed multiplier of version 3 (`seed ^ band * V3_BAND_MIX`).
const V3_BAND_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// Single band keys of at most this many bytes are encoded on the stack.
const STACK_BYTES: usize = 4 + 8 * 16;
/// Values of a 32-bit MinHash signature narrowed on the stack for its band keys (bands times
/// rows up to 128; more narrow into the heap).
const NARROW_VALUES: usize = 128;

/// The width of a signature's row values in band-key bytes (persisted: postcard variant
/// index 0 = `U32`, 1 = `U64`, 2 = `U8`, 3 = `U16`). `U8` and `U16` are the widths of b-bit
/// rows under band-hash version 3; versions 1 and 2 hash every narrower-than-u64 value in 4
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RowWidth {
    /// 4 little-endian bytes per value.
    U32,
    /// 8 little-endian bytes per value.
    U64,
    /// 1 byte per value (version 3; u32 rows whose values are below 2^8).
    U8,
    /// 2 little-endian bytes per value (version 3; u32 rows whose values are below 2^16).
    U16,
}

impl RowWidth {
    /// Bytes per value under version 3.
    pub fn bytes(self) -> usize {
        match self {
            RowWidth::U8 => 1,
            RowWidth::U16 => 2,
            RowWidth::U32 => 4,
            RowWidth::U64 => 8,
        }
    }

    /// The version-3 width of b-bit values (b in 1..=32): the fewest of 1, 2 or 4 bytes.
    pub fn for_bits(bits: u8) -> RowWidth {
        match bits {
            0..=8 => RowWidth::U8,
            9..=16 => RowWidth::U16,
            _ => RowWidth::U32,
        }
    }
}

/// A signature's LSH rows: its slot values in slot order, at their band-key width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LshRows {
    /// 32-bit MinHash, b-bit MinHash (b <= 32) and densified OPH values.
    U32(Vec<u32>),
    /// 64-bit MinHash values.
    U64(Vec<u64>),
}

impl LshRows {
    /// The number of rows (slots).
    pub fn len(&self) -> usize {
        match self {
            LshRows::U32(v) => v.len(),
            LshRows::U64(v) => v.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The width of each value in band-key bytes.
    pub fn width(&self) -> RowWidth {
        match self {
            LshRows::U32(_) => RowWidth::U32,
            LshRows::U64(_) => RowWidth::U64,
        }
    }

    /// Every band's key in band order, appended to `out`. Fails with `SizeMismatch` when the
    /// signature has fewer than `bands * rows` values.
    pub fn band_keys_into(&self, params: LshParams, seed: u64, out: &mut Vec<u64>) -> Result<(), IndexError> {
        let (b, r) = (params.bands as usize, params.rows as usize);
        let need = b.saturating_mul(r);
        if self.len() < need {
            return Err(IndexError::size("signature rows for bands * rows", need, self.len()));
        }
        out.reserve(b);
        let range = |i: u32| i as usize * r..(i as usize + 1) * r;
        match self {
            LshRows::U32(v) => out.extend((0..params.bands).map(|i| band_key_u32(i, &v[range(i)], seed))),
            LshRows::U64(v) => out.extend((0..params.bands).map(|i| band_key_u64(i, &v[range(i)], seed))),
        }
        Ok(())
    }

    /// Every band's key in band order.
    pub fn band_keys(&self, params: LshParams, seed: u64) -> Result<Vec<u64>, IndexError> {
        let mut out = Vec::with_capacity(params.bands as usize);
        self.band_keys_into(params, seed, &mut out)?;
        Ok(out)
    }
}

/// The LSH rows of a sketch (see the module docs). SimHash is not banded:
/// `IndexError::NotBanded`; an all-empty OPH sketch cannot be densified: `Sketch(EmptySet)`.
pub fn lsh_rows(sketch: &Sketch) -> Result<LshRows, IndexError> {
    match sketch {
        Sketch::MinHash(s) if s.params().bits() == 64 => Ok(LshRows::U64(s.values().to_vec())),
        // 32-bit MinHash values are below 2^32 (the type's invariant); truncation is exact.
        Sketch::MinHash(s) => Ok(LshRows::U32(s.values().iter().map(|&v| v as u32).collect())),
        // b <= 32, so every b-bit value fits.
        Sketch::BBit(s) => {
            let mut v = Vec::with_capacity(s.params().slots());
            s.values_into(&mut v);
            Ok(LshRows::U32(v))
        }
        Sketch::Oph(s) => Ok(LshRows::U32(s.densify()?)),
        Sketch::SimHash(s) => Err(IndexError::NotBanded { kind: s.params().kind() }),
    }
}

/// XXH3-64 with `seed` of the band bytes `u32_le(band) ++ le(values...)`; on the stack when
/// they fit [`STACK_BYTES`] (only the used part is written), else in one allocation.
#[inline]
fn hash_band<const W: usize, T: Copy>(band: u32, values: &[T], le: impl Fn(T) -> [u8; W], seed: u64) -> u64 {
    let len = 4 + W * values.len();
    let fill = |buf: &mut [u8]| {
        buf[..4].copy_from_slice(&band.to_le_bytes());
        for (dst, &v) in buf[4..].chunks_exact_mut(W).zip(values) {
            dst.copy_from_slice(&le(v));
        }
        xxh3_64_with_seed(buf, seed)
    };
    if len <= STACK_BYTES {
        let mut stack = [0u8; STACK_BYTES];
        fill(&mut stack[..len])
    } else {
        fill(&mut vec![0u8; len])
    }
}

/// The key of band `band` over u32 row values: XXH3-64 with `seed` of
/// `u32_le(band) ++ u32_le(v_0) ++ ... ++ u32_le(v_{r-1})`.
pub fn band_key_u32(band: u32, values: &[u32], seed: u64) -> u64 {
    hash_band(band, values, u32::to_le_bytes, seed)
}

/// The key of band `band` over u64 row values: XXH3-64 with `seed` of
/// `u32_le(band) ++ u64_le(v_0) ++ ... ++ u64_le(v_{r-1})`.
pub fn band_key_u64(band: u32, values: &[u64], seed: u64) -> u64 {
    hash_band(band, values, u64::to_le_bytes, seed)
}

/// The version-3 hash of band `band` whose values, each in the scheme's width, are `bytes`:
/// XXH3-64 of `bytes` with seed `seed ^ band * 0x9E37_79B9_7F4A_7C15` (wrapping). The
/// version-3 key is its top [`KEY_BITS_V2`] bits.
#[inline]
pub fn band_key_v3(band: u32, bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed ^ u64::from(band).wrapping_mul(V3_BAND_MIX))
}

/// Appends the version-3 keys (masked by `mask`) of `bands` bands of `r` b-bit values packed
/// in `words` (as in [`bbit_band_keys`]), each value in `w` bytes (`BITS <= 8 * w`). When a
/// value's width is its packing width (b = 8, 16, 32), a band's bytes are the packed words'
/// own little-endian bytes, hashed in place.
fn bbit_band_keys_v3<const BITS: usize>(
    words: &[u64],
    (bands, r, w): (usize, usize, usize),
    seed: u64,
    mask: u64,
    out: &mut Vec<u64>,
) {
    let len = r * w;
    if cfg!(target_endian = "little") && BITS == 8 * w {
        // Native order is little-endian here: the words' bytes are slot values in order.
        let bytes = words.as_bytes();
        for band in 0..bands {
            out.push(band_key_v3(band as u32, &bytes[band * len..(band + 1) * len], seed) & mask);
        }
        return;
    }
    let mut stack = [0u8; STACK_BYTES];
    let mut heap = Vec::new();
    let buf: &mut [u8] = if len <= STACK_BYTES {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    for band in 0..bands {
        put_bbit_values::<BITS>(words, band * r, w, buf);
        out.push(band_key_v3(band as u32, buf, seed) & mask);
    }
}

/// Writes b-bit values `first, first + 1, ...` (packed in `words` as in [`bbit_band_keys`])
/// into `buf`, each in `w` LE bytes, as many as `buf` holds.
#[inline]
fn put_bbit_values<const BITS: usize>(words: &[u64], first: usize, w: usize, buf: &mut [u8]) {
    let value_mask = if BITS >= 32 { u64::from(u32::MAX) } else { (1u64 << BITS) - 1 };
    for (j, dst) in buf.chunks_exact_mut(w).enumerate() {
        let bit = (first + j) * BITS;
        let v = (words[bit / 64] >> (bit % 64)) & value_mask;
        dst.copy_from_slice(&v.to_le_bytes()[..w]);
    }
}

/// Appends the keys (masked by `mask`) of `bands` bands of `r` rows of the b-bit values
/// packed in `words` (`BITS` in 1, 2, 4, 8, 16, 32: slot i's value is at bit `i * BITS` of
/// the LE word array, never straddling two words); `4 + 4r <= STACK_BYTES` and
/// `bands * r` slots exist.
fn bbit_band_keys<const BITS: usize>(words: &[u64], bands: usize, r: usize, seed: u64, mask: u64, out: &mut Vec<u64>) {
    let len = 4 + 4 * r;
    let mut buf = [0u8; STACK_BYTES];
    for band in 0..bands {
        buf[..4].copy_from_slice(&(band as u32).to_le_bytes());
        put_bbit_values::<BITS>(words, band * r, 4, &mut buf[4..len]);
        out.push(xxh3_64_with_seed(&buf[..len], seed) & mask);
    }
}

/// Everything that determines an LSH index's band keys, stored with the index: the hash
/// scheme version, its seed, the banding and the row width.
///
/// Invariant: `version` is 1 or [`BAND_HASH_VERSION`] and the banding is non-empty; check
/// decoded values with [`BandKeyScheme::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandKeyScheme {
    /// The band-hash version (1 or [`BAND_HASH_VERSION`]).
    pub version: u16,
    /// The XXH3 seed.
    pub seed: u64,
    /// Bands and rows per band.
    #[serde(with = "crate::codec::wire::via")]
    pub params: LshParams,
    /// The row width of the signatures keyed.
    pub width: RowWidth,
}

impl BandKeyScheme {
    /// The current-version scheme.
    pub fn new(seed: u64, params: LshParams, width: RowWidth) -> Self {
        BandKeyScheme { version: BAND_HASH_VERSION, seed, params, width }
    }

    /// Checks a decoded scheme: a version this build computes and a non-empty banding.
    pub fn validate(&self) -> Result<(), IndexError> {
        if !(1..=BAND_HASH_VERSION).contains(&self.version) {
            return Err(IndexError::inconsistent(
                "band key scheme",
                format!("version {} (this build computes 1 to {BAND_HASH_VERSION})", self.version),
            ));
        }
        if self.params.bands == 0 || self.params.rows == 0 {
            return Err(IndexError::inconsistent("band key scheme", format!("empty banding {:?}", self.params)));
        }
        Ok(())
    }

    /// The significant (top) bits of this version's band keys: 64 (version 1) or
    /// [`KEY_BITS_V2`]; the bits below are zero.
    pub fn key_bits(&self) -> u32 {
        if self.version == 1 { 64 } else { KEY_BITS_V2 }
    }

    /// The band keys of a signature's rows; u64 rows need a `U64` scheme, u32 rows one of
    /// the narrower widths (under version 3 every value must fit it).
    pub fn keys(&self, rows: &LshRows) -> Result<Vec<u64>, IndexError> {
        self.check_width(rows.width())?;
        let mask = self.key_mask();
        if self.version < 3 {
            let mut keys = rows.band_keys(self.params, self.seed)?;
            keys.iter_mut().for_each(|k| *k &= mask);
            return Ok(keys);
        }
        let (b, r, w) = (self.params.bands as usize, self.params.rows as usize, self.width.bytes());
        let need = b.saturating_mul(r);
        if rows.len() < need {
            return Err(IndexError::size("signature rows for bands * rows", need, rows.len()));
        }
        if let (LshRows::U32(v), RowWidth::U32) = (rows, self.width)
            && cfg!(target_endian = "little")
        {
            // A u32's bytes in memory are its little-endian bytes: each band's bytes are a
            // slice of the rows, hashed in place (the bytes the loop below would build).
            let bands = v[..need].as_bytes().chunks_exact(r * 4).enumerate();
            return Ok(bands.map(|(band, bytes)| band_key_v3(band as u32, bytes, self.seed) & mask).collect());
        }
        let mut keys = Vec::with_capacity(b);
        let mut bytes = Vec::with_capacity(r * w);
        for band in 0..b {
            bytes.clear();
            for j in band * r..(band + 1) * r {
                let v = match rows {
                    LshRows::U32(v) => u64::from(v[j]),
                    LshRows::U64(v) => v[j],
                };
                if w < 8 && v >> (8 * w) != 0 {
                    let need = (64 - v.leading_zeros()).div_ceil(8);
                    return Err(IndexError::size("row value bytes (a value wider than the scheme's rows)", w, need));
                }
                bytes.extend_from_slice(&v.to_le_bytes()[..w]);
            }
            keys.push(band_key_v3(band as u32, &bytes, self.seed) & mask);
        }
        Ok(keys)
    }

    /// The band keys of a sketch: `keys(&lsh_rows(sketch)?)`, without the rows in between for
    /// b-bit sketches (each band's bytes are built straight from the packed words).
    pub fn sketch_keys(&self, sketch: &Sketch) -> Result<Vec<u64>, IndexError> {
        match sketch {
            Sketch::BBit(s) if self.version >= 3 || 4 + 4 * self.params.rows as usize <= STACK_BYTES => {
                self.bbit_keys(s)
            }
            // Rows as wide as the scheme's: every value's bytes fit, as `keys` checks.
            Sketch::MinHash(s)
                if self.version >= 3 && self.width.bytes() == if s.params().bits() == 64 { 8 } else { 4 } =>
            {
                self.minhash_keys(s.values(), s.params().bits() == 64)
            }
            _ => self.keys(&lsh_rows(sketch)?),
        }
    }

    /// [`Self::sketch_keys`] of a MinHash sketch under version 3 whose values are as wide as
    /// the scheme's rows (4 bytes for 32-bit values, 8 for 64-bit): each band's bytes are
    /// written straight from the values into one buffer (no row copy, no per-value width
    /// check: a 32-bit MinHash value is below 2^32 by the type's invariant), the same bytes
    /// [`Self::keys`] hashes.
    fn minhash_keys(&self, values: &[u64], wide: bool) -> Result<Vec<u64>, IndexError> {
        self.check_width(if wide { RowWidth::U64 } else { RowWidth::U32 })?;
        let (b, r, w) = (self.params.bands as usize, self.params.rows as usize, self.width.bytes());
        let need = b.saturating_mul(r);
        if values.len() < need {
            return Err(IndexError::size("signature rows for bands * rows", need, values.len()));
        }
        let mask = self.key_mask();
        let mut keys = Vec::with_capacity(b);
        if !wide {
            // All bands' 4-byte values at once (one narrowing loop, no copy per band), each
            // band's bytes then a slice of them.
            let (mut stack, mut heap) = ([0u32; NARROW_VALUES], Vec::new());
            let narrow: &mut [u32] = if need <= NARROW_VALUES {
                &mut stack[..need]
            } else {
                heap.resize(need, 0);
                &mut heap
            };
            for (dst, &v) in narrow.iter_mut().zip(&values[..need]) {
                *dst = (v as u32).to_le();
            }
            for (band, bytes) in narrow.as_bytes().chunks_exact(r * 4).enumerate() {
                keys.push(band_key_v3(band as u32, bytes, self.seed) & mask);
            }
            return Ok(keys);
        }
        let (mut stack, mut heap) = ([0u8; STACK_BYTES], Vec::new());
        let buf: &mut [u8] = if r * w <= STACK_BYTES {
            &mut stack[..r * w]
        } else {
            heap.resize(r * w, 0);
            &mut heap
        };
        for (band, vals) in values[..need].chunks_exact(r).enumerate() {
            // Fixed-width copies (a copy of the runtime width `w` is a call per value).
            for (dst, &v) in buf.chunks_exact_mut(8).zip(vals) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
            keys.push(band_key_v3(band as u32, buf, self.seed) & mask);
        }
        Ok(keys)
    }

    /// [`Self::sketch_keys`] of a b-bit sketch whose bands fit the stack buffer.
    fn bbit_keys(&self, s: &BBitMinHash) -> Result<Vec<u64>, IndexError> {
        self.check_width(RowWidth::U32)?;
        let (b, r) = (self.params.bands as usize, self.params.rows as usize);
        let need = b.saturating_mul(r);
        if s.params().slots() < need {
            return Err(IndexError::size("signature rows for bands * rows", need, s.params().slots()));
        }
        let mut keys = Vec::with_capacity(b);
        let (words, seed, mask) = (s.words(), self.seed, self.key_mask());
        if self.version >= 3 {
            let w = self.width.bytes();
            if usize::from(s.params().bits()) > 8 * w {
                let need = s.params().bits().div_ceil(8);
                return Err(IndexError::size("row value bytes (b-bit values wider than the scheme's rows)", w, need));
            }
            let shape = (b, r, w);
            match s.params().bits() {
                1 => bbit_band_keys_v3::<1>(words, shape, seed, mask, &mut keys),
                2 => bbit_band_keys_v3::<2>(words, shape, seed, mask, &mut keys),
                4 => bbit_band_keys_v3::<4>(words, shape, seed, mask, &mut keys),
                8 => bbit_band_keys_v3::<8>(words, shape, seed, mask, &mut keys),
                16 => bbit_band_keys_v3::<16>(words, shape, seed, mask, &mut keys),
                _ => bbit_band_keys_v3::<32>(words, shape, seed, mask, &mut keys),
            }
            return Ok(keys);
        }
        // The width as a constant: the slot arithmetic folds to shifts and masks.
        match s.params().bits() {
            1 => bbit_band_keys::<1>(words, b, r, seed, mask, &mut keys),
            2 => bbit_band_keys::<2>(words, b, r, seed, mask, &mut keys),
            4 => bbit_band_keys::<4>(words, b, r, seed, mask, &mut keys),
            8 => bbit_band_keys::<8>(words, b, r, seed, mask, &mut keys),
            16 => bbit_band_keys::<16>(words, b, r, seed, mask, &mut keys),
            _ => bbit_band_keys::<32>(words, b, r, seed, mask, &mut keys),
        }
        Ok(keys)
    }

    /// u64 rows need a `U64` scheme; u32 rows (`width` = `U32`) any narrower one.
    fn check_width(&self, width: RowWidth) -> Result<(), IndexError> {
        if (width == RowWidth::U64) != (self.width == RowWidth::U64) {
            return Err(IndexError::size("row width in bytes", self.width.bytes(), width.bytes()));
        }
        Ok(())
    }

    /// The significant bits of a key: the top [`Self::key_bits`].
    fn key_mask(&self) -> u64 {
        let bits = self.key_bits();
        if bits >= 64 { u64::MAX } else { !((1u64 << (64 - bits)) - 1) }
    }
}

#[cfg(test)]
#[path = "band_tests.rs"]
mod tests;
