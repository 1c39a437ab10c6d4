//! LSH band keys for MinHash, b-bit MinHash and densified OPH signatures.
//!
//! # Specification (versions 1 and 2; the version is persisted with the index)
//!
//! A signature's *rows* are its slot values in slot order ([`lsh_rows`]): MinHash minima (as
//! u64 for 64-bit MinHash, as u32 for 32-bit MinHash), b-bit values as u32, and the densified
//! OPH bins ([`crate::OphSketch::densify`]) as u32. Band i of a banding with r rows per band
//! covers slots `[i * r, (i + 1) * r)`; slots at and beyond `bands * r` are unused.
//!
//! Band i's hash is `xxh3_64_with_seed(bytes, seed)` (XXH3, 64-bit output, from the
//! `xxhash-rust` crate) over
//!
//! ```text
//! bytes = u32_le(i) ++ value_le(slot i*r) ++ value_le(slot i*r + 1) ++ ... ++ value_le(slot i*r + r - 1)
//! ```
//!
//! where `value_le` is the value's 4 little-endian bytes for u32 rows and 8 for u64 rows, so
//! a band of r rows hashes exactly 4 + 4r or 4 + 8r bytes ([`band_key_u32`], [`band_key_u64`]).
//! The band *key* is that hash under version 1, and under version 2 (the current one) its top
//! [`KEY_BITS_V2`] bits with the low bits cleared (`hash & !(2^32 - 1)`): half the bytes per
//! stored entry, and two different bands collide by chance with probability 2^-32, which
//! verification filters like any other false candidate. `seed` is chosen when the index is
//! created and stored with it, with the version, in a [`BandKeyScheme`]. No per-process random
//! state enters (never `ahash` or std's `RandomState`).

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::super::error::IndexError;
use super::super::lsh_params::LshParams;
use crate::sketch::bbit::BBitMinHash;
use crate::sketch::sketch::Sketch;

/// The version of the band-key byte encoding and hash specified in the module docs that new
/// indexes use (version 1, full 64-bit keys, is still read and maintained).
pub const BAND_HASH_VERSION: u16 = 2;
/// The significant (top) bits of a version 2 band key.
pub const KEY_BITS_V2: u32 = 32;

/// Single band keys of at most this many bytes are encoded on the stack.
const STACK_BYTES: usize = 4 + 8 * 16;

/// The width of a signature's row values in band-key bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RowWidth {
    /// 4 little-endian bytes per value.
    U32,
    /// 8 little-endian bytes per value.
    U64,
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

/// Appends the keys (masked by `mask`) of `bands` bands of `r` rows of the b-bit values
/// packed in `words` (`BITS` in 1, 2, 4, 8, 16, 32: slot i's value is at bit `i * BITS` of
/// the LE word array, never straddling two words); `4 + 4r <= STACK_BYTES` and
/// `bands * r` slots exist.
fn bbit_band_keys<const BITS: usize>(words: &[u64], bands: usize, r: usize, seed: u64, mask: u64, out: &mut Vec<u64>) {
    let value_mask = if BITS >= 32 { u64::from(u32::MAX) } else { (1u64 << BITS) - 1 };
    let len = 4 + 4 * r;
    let mut buf = [0u8; STACK_BYTES];
    for band in 0..bands {
        buf[..4].copy_from_slice(&(band as u32).to_le_bytes());
        for (j, dst) in buf[4..len].chunks_exact_mut(4).enumerate() {
            let bit = (band * r + j) * BITS;
            let v = (words[bit / 64] >> (bit % 64)) & value_mask;
            dst.copy_from_slice(&(v as u32).to_le_bytes());
        }
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

    /// The band keys of a signature's rows; its width must be the scheme's.
    pub fn keys(&self, rows: &LshRows) -> Result<Vec<u64>, IndexError> {
        self.check_width(rows.width())?;
        let mut keys = rows.band_keys(self.params, self.seed)?;
        let mask = self.key_mask();
        keys.iter_mut().for_each(|k| *k &= mask);
        Ok(keys)
    }

    /// The band keys of a sketch: `keys(&lsh_rows(sketch)?)`, without the rows in between for
    /// b-bit sketches (each band's bytes are built straight from the packed words).
    pub fn sketch_keys(&self, sketch: &Sketch) -> Result<Vec<u64>, IndexError> {
        match sketch {
            Sketch::BBit(s) if 4 + 4 * self.params.rows as usize <= STACK_BYTES => self.bbit_keys(s),
            _ => self.keys(&lsh_rows(sketch)?),
        }
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

    fn check_width(&self, width: RowWidth) -> Result<(), IndexError> {
        if width != self.width {
            let bytes = |w: RowWidth| if w == RowWidth::U32 { 4u64 } else { 8 };
            return Err(IndexError::size("row width in bytes", bytes(self.width), bytes(width)));
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
mod tests {
    use super::*;
    use crate::sketch::params::SketchParams;
    use crate::sketch::sketch::Sketcher;
    use crate::sketch::tokens::TokenSet;

    #[test]
    fn band_bytes_are_as_specified() {
        let mut bytes = vec![7, 0, 0, 0];
        for v in [1u32, 0xdead_beef, 3] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(bytes.len(), 4 + 4 * 3);
        assert_eq!(band_key_u32(7, &[1, 0xdead_beef, 3], 99), xxh3_64_with_seed(&bytes, 99));
        let mut bytes = 2u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(&5u64.to_le_bytes());
        assert_eq!(band_key_u64(2, &[u64::MAX, 5], 0), xxh3_64_with_seed(&bytes, 0));
        // Longer than the stack buffer: the heap path hashes the same bytes.
        let long: Vec<u64> = (0..17).collect();
        let mut bytes = 1u32.to_le_bytes().to_vec();
        long.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
        assert_eq!(band_key_u64(1, &long, 4), xxh3_64_with_seed(&bytes, 4));
    }

    #[test]
    fn golden_band_keys() {
        // Pinned: changing these changes every stored LSH index (needs a new version).
        assert_eq!(band_key_u32(0, &[1, 2, 3, 4], 0), GOLDEN[0]);
        assert_eq!(band_key_u64(3, &[u64::MAX, 0], 42), GOLDEN[1]);
        assert_eq!(band_key_u32(1, &[], 7), GOLDEN[2]);
    }

    const GOLDEN: [u64; 3] = [0x3757_3ad4_0b49_16e8, 0x3dbd_27ce_1a13_2f46, 0xdbac_54f5_3741_3bcc];

    /// The direct b-bit path gives exactly the keys of the rows, for every b, for bandings
    /// that do and do not use every slot and for bands too long for the stack buffer; other
    /// kinds and mismatches take the rows path with its errors.
    #[test]
    fn sketch_keys_equal_the_keys_of_the_rows() {
        let tokens = TokenSet::from_unsorted((0..300u64).map(|t| t * 7919).collect());
        let sk = |p: SketchParams| Sketcher::new(p).expect("sketcher").sketch(&tokens).expect("sketch");
        for bits in [1u8, 2, 4, 8, 16, 32] {
            let sketch = sk(SketchParams::bbit(128, bits, 5).expect("params"));
            for (bands, rows) in [(1, 1), (32, 4), (9, 13), (3, 40), (1, 128)] {
                for version in [1, BAND_HASH_VERSION] {
                    let scheme =
                        BandKeyScheme { version, ..BandKeyScheme::new(11, LshParams { bands, rows }, RowWidth::U32) };
                    let want = scheme.keys(&lsh_rows(&sketch).expect("rows")).expect("keys");
                    assert_eq!(
                        scheme.sketch_keys(&sketch).expect("keys"),
                        want,
                        "b = {bits}, {bands}x{rows}, v{version}"
                    );
                }
            }
            let too_many = BandKeyScheme::new(11, LshParams { bands: 33, rows: 4 }, RowWidth::U32);
            let err = too_many.sketch_keys(&sketch).unwrap_err();
            assert_eq!(
                err,
                IndexError::SizeMismatch { what: "signature rows for bands * rows", expected: 132, got: 128 }
            );
            let wide = BandKeyScheme::new(11, LshParams { bands: 4, rows: 4 }, RowWidth::U64);
            assert!(matches!(
                wide.sketch_keys(&sketch),
                Err(IndexError::SizeMismatch { what: "row width in bytes", .. })
            ));
        }
        for params in [SketchParams::minhash(64, 64, 1), SketchParams::minhash(64, 32, 1), SketchParams::oph(64, 16, 1)]
        {
            let sketch = sk(params.expect("params"));
            let rows = lsh_rows(&sketch).expect("rows");
            let scheme = BandKeyScheme::new(3, LshParams { bands: 16, rows: 4 }, rows.width());
            assert_eq!(scheme.sketch_keys(&sketch).expect("keys"), scheme.keys(&rows).expect("keys"));
        }
    }

    #[test]
    fn band_index_and_seed_matter() {
        let v = [10u32, 20];
        assert_ne!(band_key_u32(0, &v, 1), band_key_u32(1, &v, 1));
        assert_ne!(band_key_u32(0, &v, 1), band_key_u32(0, &v, 2));
        assert_ne!(band_key_u32(0, &v, 1), band_key_u64(0, &[10, 20], 1));
    }

    #[test]
    fn rows_of_each_sketch_kind() {
        let tokens = TokenSet::from_unsorted((0..200u64).collect());
        let other = TokenSet::from_unsorted((0..180u64).chain(1000..1020).collect());
        let sk = |p: SketchParams, t: &TokenSet| Sketcher::new(p).expect("sketcher").sketch(t).expect("sketch");
        let mh = sk(SketchParams::minhash(32, 64, 1).expect("params"), &tokens);
        let Sketch::MinHash(m) = &mh else { panic!("kind") };
        assert_eq!(lsh_rows(&mh).expect("rows"), LshRows::U64(m.values().to_vec()));
        let mh32 = sk(SketchParams::minhash(32, 32, 1).expect("params"), &tokens);
        let Sketch::MinHash(m) = &mh32 else { panic!("kind") };
        assert_eq!(lsh_rows(&mh32).expect("rows"), LshRows::U32(m.values().iter().map(|&v| v as u32).collect()));
        let bb = sk(SketchParams::bbit(32, 4, 1).expect("params"), &tokens);
        let Sketch::BBit(b) = &bb else { panic!("kind") };
        let rows = lsh_rows(&bb).expect("rows");
        assert_eq!(rows, LshRows::U32((0..32).map(|i| b.value(i) as u32).collect()));
        let oph = sk(SketchParams::oph(64, 16, 1).expect("params"), &tokens);
        let Sketch::Oph(o) = &oph else { panic!("kind") };
        assert_eq!(lsh_rows(&oph).expect("rows"), LshRows::U32(o.densify().expect("densify")));
        let sim = sk(SketchParams::simhash(64, 1).expect("params"), &tokens);
        assert_eq!(lsh_rows(&sim), Err(IndexError::NotBanded { kind: crate::SketchKind::SimHash }));

        // Similar sets share some band keys; the scheme checks widths and lengths.
        let scheme = BandKeyScheme::new(9, LshParams { bands: 16, rows: 2 }, RowWidth::U64);
        scheme.validate().expect("valid");
        let a = scheme.keys(&lsh_rows(&mh).expect("rows")).expect("keys");
        let mh_other = sk(SketchParams::minhash(32, 64, 1).expect("params"), &other);
        let b = scheme.keys(&lsh_rows(&mh_other).expect("rows")).expect("keys");
        assert_eq!(a.len(), 16);
        let Sketch::MinHash(m) = &mh else { panic!("kind") };
        for (i, key) in a.iter().enumerate() {
            assert_eq!(*key, band_key_u64(i as u32, &m.values()[2 * i..2 * i + 2], 9) & 0xffff_ffff_0000_0000);
        }
        // Version 1 keeps the whole hash.
        let v1 = BandKeyScheme { version: 1, ..scheme };
        v1.validate().expect("version 1 is read");
        assert_eq!((v1.key_bits(), scheme.key_bits()), (64, 32));
        let full = v1.keys(&lsh_rows(&mh).expect("rows")).expect("keys");
        for (i, key) in full.iter().enumerate() {
            assert_eq!(*key, band_key_u64(i as u32, &m.values()[2 * i..2 * i + 2], 9));
            assert_eq!(a[i], key & 0xffff_ffff_0000_0000);
        }
        assert!(a.iter().zip(&b).any(|(x, y)| x == y));
        assert!(matches!(scheme.keys(&rows), Err(IndexError::SizeMismatch { .. })));
        let too_many = LshParams { bands: 17, rows: 2 };
        let err = lsh_rows(&mh).expect("rows").band_keys(too_many, 0).unwrap_err();
        assert_eq!(err, IndexError::SizeMismatch { what: "signature rows for bands * rows", expected: 34, got: 32 });
        for version in [0, 3] {
            let bad = BandKeyScheme { version, ..scheme };
            assert!(matches!(bad.validate(), Err(IndexError::Inconsistent { .. })), "version {version}");
        }
    }
}
