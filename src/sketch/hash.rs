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
#[derive(Debug, Clone)]
pub(crate) struct Permutations {
    pub(crate) pre: u64,
    pub(crate) a: Vec<u64>,
    pub(crate) b: Vec<u64>,
}

impl Permutations {
    pub(crate) fn new(seed: u64, slots: usize) -> Self {
        let s = stream(seed, 1 + 2 * slots);
        let a = (0..slots).map(|i| s[1 + 2 * i] | 1).collect();
        let b = (0..slots).map(|i| s[2 + 2 * i]).collect();
        Permutations { pre: s[0], a, b }
    }
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
    }

    #[test]
    fn permutation_multipliers_are_odd() {
        let p = Permutations::new(42, 300);
        assert!(p.a.iter().all(|a| a & 1 == 1));
        assert_eq!(p.b.len(), 300);
    }
}
