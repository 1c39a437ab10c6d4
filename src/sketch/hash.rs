//! The hash family `MixMultiplyShift` v1 and the token hash.
//!
//! Specification (also in `storage-format.md`, section 8):
//!
//! * `splitmix64(state)`: `state += 0x9E3779B97F4A7C15; z = state;
//!   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//!   return z ^ (z >> 31)` (all arithmetic modulo 2^64). A *stream* seeded with `seed` starts
//!   with `state = seed` and yields outputs #0, #1, #2, ...
//! * `fmix64(k)`: murmur3's finaliser, `k ^= k >> 33; k *= 0xFF51AFD7ED558CCD; k ^= k >> 33;
//!   k *= 0xC4CEB9FE1A85EC53; k ^= k >> 33`. A bijection on u64.
//! * Pre-mix of a token hash `h`: `x = fmix64(h ^ pre)`, `pre` = stream output #0.
//! * Slot i (MinHash and b-bit: i in 0..k; OPH: i = 0 only) uses `a_i = output #(1 + 2i) | 1`
//!   and `b_i = output #(2 + 2i)`; its permuted value is `v_i(h) = a_i * x + b_i mod 2^64`.
//!   Because `a_i` is odd, `v_i` is a permutation of the 64-bit space.
//! * OPH densification key: output #3 of the stream (after `pre`, `a_0`, `b_0`).
//! * `MixMultiplyShift32` (32-bit lanes, MinHash with 32-bit values and b-bit MinHash): the
//!   same stream; with `y = h ^ pre`, `x32 = fmix32(lo32(y) ^ hi32(y))` (murmur3's 32-bit
//!   finaliser of the two halves' XOR), slot i uses `a_i = (output #(1 + 2i) >> 32) | 1`
//!   and `b_i = output #(2 + 2i) >> 32` as u32, and `v_i(h) = a_i * x32 + b_i mod 2^32`.
//! * SimHash word w (0 or 1) of feature `h`: `g_w = fmix64(h ^ key_w)` with `key_0` = output #0
//!   and `key_1` = output #1.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// One step of splitmix64, as specified in the module docs.
#[inline]
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// murmur3's 64-bit finaliser: a bijection on u64 with full avalanche.
#[inline(always)]
pub(crate) fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    k ^= k >> 33;
    k = k.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    k ^ (k >> 33)
}

/// The first `n` outputs of the splitmix64 stream seeded with `seed`.
pub(crate) fn stream(seed: u64, n: usize) -> Vec<u64> {
    let mut state = seed;
    (0..n).map(|_| splitmix64(&mut state)).collect()
}

/// The pre-mix key and the per-slot affine coefficients for `slots` permutations.
///
/// Invariant: the 64-bit coefficients (`a`, `b`) or the 32-bit ones (`a32`, `b32`) are set,
/// never both: [`Permutations::new`] makes the first, [`Permutations::lanes32`] the second.
#[derive(Debug, Clone)]
pub(crate) struct Permutations {
    pub(crate) pre: u64,
    pub(crate) a: Vec<u64>,
    pub(crate) b: Vec<u64>,
    pub(crate) a32: Vec<u32>,
    pub(crate) b32: Vec<u32>,
}

impl Permutations {
    /// `MixMultiplyShift`'s coefficients.
    pub(crate) fn new(seed: u64, slots: usize) -> Self {
        let s = stream(seed, 1 + 2 * slots);
        let a = (0..slots).map(|i| s[1 + 2 * i] | 1).collect();
        let b = (0..slots).map(|i| s[2 + 2 * i]).collect();
        Permutations { pre: s[0], a, b, a32: Vec::new(), b32: Vec::new() }
    }

    /// `MixMultiplyShift32`'s coefficients: the top halves of the same stream outputs.
    pub(crate) fn lanes32(seed: u64, slots: usize) -> Self {
        let s = stream(seed, 1 + 2 * slots);
        let a32 = (0..slots).map(|i| (s[1 + 2 * i] >> 32) as u32 | 1).collect();
        let b32 = (0..slots).map(|i| (s[2 + 2 * i] >> 32) as u32).collect();
        Permutations { pre: s[0], a: Vec::new(), b: Vec::new(), a32, b32 }
    }

    /// Whether these are the 32-bit lane coefficients.
    pub(crate) fn is_lanes32(&self) -> bool {
        !self.a32.is_empty()
    }
}

/// murmur3's 32-bit finaliser: a bijection on u32 with full avalanche.
#[inline(always)]
pub(crate) fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// `MixMultiplyShift32`'s pre-mix of a token hash: `fmix32` of the XOR of the two halves of
/// `h ^ pre`. Every step has 32-bit lanes, so a chunk of tokens is pre-mixed in vectors too.
#[inline(always)]
pub(crate) fn premix32(h: u64, pre: u64) -> u32 {
    let y = h ^ pre;
    fmix32(y as u32 ^ (y >> 32) as u32)
}

/// Hashes a byte string to a token with xxh3-64 and the given seed (the token hash of text).
#[inline]
pub fn token_hash(bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_vector() {
        // Reference outputs of splitmix64 seeded with 1234567 (Vigna's published test vector).
        let s = stream(1_234_567, 5);
        assert_eq!(
            s,
            vec![
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821
            ]
        );
    }

    #[test]
    fn fmix_is_murmur3_finaliser() {
        assert_eq!(fmix64(0), 0);
        assert_eq!(fmix64(1), 0xB456_BCFC_34C2_CB2C);
        // murmur3's fmix32 of 1 (the 32-bit finaliser's published constants).
        assert_eq!(fmix32(0), 0);
        assert_eq!(fmix32(1), 0x514E_28B7);
    }

    #[test]
    fn permutation_multipliers_are_odd() {
        let p = Permutations::new(42, 300);
        assert!(p.a.iter().all(|a| a & 1 == 1));
        assert_eq!(p.b.len(), 300);
        assert!(!p.is_lanes32());
        let q = Permutations::lanes32(42, 300);
        assert!(q.is_lanes32() && q.a.is_empty() && q.b.is_empty());
        assert!(q.a32.iter().all(|a| a & 1 == 1));
        assert_eq!(q.pre, p.pre);
        // The top halves of the same outputs (the low bit forced on for a).
        assert!(q.a32.iter().zip(&p.a).all(|(&a32, &a)| a32 == (a >> 32) as u32 | 1));
        assert!(q.b32.iter().zip(&p.b).all(|(&b32, &b)| b32 == (b >> 32) as u32));
    }
}
