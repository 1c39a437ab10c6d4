//! Compatibility hash families: the permutations other MinHash implementations use, bit for
//! bit, so their signatures and sketchdb's agree (specified in `storage-format.md` section 8.5
//! and `docs/recipes.md`).
//!
//! Every family draws its coefficients from NumPy's legacy `RandomState(seed)`: MT19937
//! seeded by `init_genrand(seed)` (seed < 2^32), and `randint(low, high, dtype)` by masked
//! rejection: with `rng = high - 1 - low` and `mask` the least `2^m - 1 >= rng`, draw
//! `v = next & mask` until `v <= rng` and return `low + v`, where `next` is one 32-bit output
//! when `rng < 2^32` (the output itself when `rng = 2^32 - 1`), else two outputs `hi << 32 | lo`.
//! All arithmetic below wraps at the stated width.
//!
//! | family | coefficients (k slots) | slot value of token hash h |
//! | --- | --- | --- |
//! | `DatasketchLegacy` | per slot `a = randint(1, P61)`, `b = randint(0, P61)` (u64) | `((a*h + b) mod 2^64) mod P61 & 0xFFFFFFFF` |
//! | `TextDedup` | all `a = randint(1, P61)` first, then all `b = randint(0, P61)` (u64) | same as `DatasketchLegacy` |
//! | `TextDedupSpark` | all `a = randint(1, P32)` first, then all `b = randint(0, P32)` (u32) | `((a*h32 + b) mod 2^32) mod P32` |
//! | `NemoCurator` | per slot `a = randint(1, 2^31-1)`, `b = randint(0, 2^31-1)` (u32) | `(a*max(h32, 1) + b) mod 2^32` |
//! | `DatasketchAffine32` | all `a = randint(0, 2^31)*2+1` first, then all `b = randint(0, 2^32)` (u32) | `(a*fmix32(h32) + b) mod 2^32` |
//!
//! `P61 = 2^61 - 1`, `P32 = 2^32 - 5`, `h32` = the low 32 bits of h. Every slot value is below
//! 2^32 and a signature is the per-slot minimum, so these sketches are MinHash with 32 bits.

use rand_mt::Mt;

use super::error::SketchError;
use super::hash::fmix32;
use super::params::HashFamily;
use crate::simd::{minhash_update_reduced, minhash32_update};

const P61: u64 = (1 << 61) - 1;
const P32: u64 = (1 << 32) - 5;

/// NumPy's legacy `RandomState`: MT19937 and its bounded integer draws.
pub(crate) struct NumpyRandomState {
    mt: Mt,
}

impl NumpyRandomState {
    /// `np.random.RandomState(seed)` for an integer seed below 2^32.
    pub(crate) fn new(seed: u32) -> Self {
        NumpyRandomState { mt: Mt::new(seed) }
    }

    fn next64(&mut self) -> u64 {
        let hi = u64::from(self.mt.next_u32());
        let lo = u64::from(self.mt.next_u32());
        hi << 32 | lo
    }

    /// `randint(low, high)` for a `uint64` or `uint32` dtype (the same draws for both when the
    /// range fits 32 bits).
    pub(crate) fn randint(&mut self, low: u64, high: u64) -> u64 {
        let rng = high - 1 - low;
        if rng == 0 {
            return low;
        }
        let mask = u64::MAX >> rng.leading_zeros();
        if rng == u64::from(u32::MAX) {
            return low + u64::from(self.mt.next_u32());
        }
        loop {
            let v =
                if rng <= u64::from(u32::MAX) { u64::from(self.mt.next_u32()) & mask } else { self.next64() & mask };
            if v <= rng {
                return low + v;
            }
        }
    }
}

/// The coefficients of one compatibility family for k slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompatPerms {
    family: HashFamily,
    a: Vec<u64>,
    b: Vec<u64>,
    /// `a` and `b` as u32 for the families whose slot value is a 32-bit affine map (every
    /// coefficient below 2^32); empty for the 2^61 - 1 families.
    a32: Vec<u32>,
    b32: Vec<u32>,
}

impl CompatPerms {
    /// The coefficients `family` draws from `RandomState(seed)` for `k` slots.
    pub(crate) fn new(family: HashFamily, seed: u64, k: usize) -> Result<Self, SketchError> {
        let seed = u32::try_from(seed)
            .map_err(|_| SketchError::invalid("seed", seed, "a NumPy RandomState seed, 0..=4294967295"))?;
        let mut rs = NumpyRandomState::new(seed);
        let (a, b): (Vec<u64>, Vec<u64>) = match family {
            HashFamily::DatasketchLegacy => (0..k).map(|_| (rs.randint(1, P61), rs.randint(0, P61))).unzip(),
            HashFamily::NemoCurator => {
                let p31 = (1 << 31) - 1;
                (0..k).map(|_| (rs.randint(1, p31), rs.randint(0, p31))).unzip()
            }
            HashFamily::TextDedup => {
                let a = (0..k).map(|_| rs.randint(1, P61)).collect();
                (a, (0..k).map(|_| rs.randint(0, P61)).collect())
            }
            HashFamily::TextDedupSpark => {
                let a = (0..k).map(|_| rs.randint(1, P32)).collect();
                (a, (0..k).map(|_| rs.randint(0, P32)).collect())
            }
            HashFamily::DatasketchAffine32 => {
                let a = (0..k).map(|_| rs.randint(0, 1 << 31) * 2 + 1).collect();
                (a, (0..k).map(|_| rs.randint(0, 1 << 32)).collect())
            }
            other => return Err(SketchError::invalid("family", other, "a compatibility hash family")),
        };
        let narrow = |v: &[u64]| v.iter().map(|&x| x as u32).collect::<Vec<u32>>();
        let (a32, b32) = if Self::is_affine32(family) { (narrow(&a), narrow(&b)) } else { (Vec::new(), Vec::new()) };
        Ok(CompatPerms { family, a, b, a32, b32 })
    }

    /// Whether the family's slot value is `reduce(a * mix(h32) + b mod 2^32)` with 32-bit
    /// coefficients, computed in 32-bit lanes.
    fn is_affine32(family: HashFamily) -> bool {
        matches!(family, HashFamily::TextDedupSpark | HashFamily::NemoCurator | HashFamily::DatasketchAffine32)
    }

    /// The per-slot minima over `tokens` (each below 2^32), or `None` for no tokens.
    pub(crate) fn minima(&self, tokens: &[u64]) -> Option<Vec<u64>> {
        if tokens.is_empty() {
            return None;
        }
        match self.family {
            // v mod (2^32 - 5) for v < 2^32: v - P32 when that does not wrap, which is then
            // the smaller of the two.
            HashFamily::TextDedupSpark => self.lanes(tokens, |h| h as u32, |v| v.min(v.wrapping_sub(P32 as u32))),
            HashFamily::NemoCurator => self.lanes(tokens, |h| (h as u32).max(1), |v| v),
            HashFamily::DatasketchAffine32 => self.lanes(tokens, |h| fmix32(h as u32), |v| v),
            _ => {
                // DatasketchLegacy and TextDedup: x mod P61 for any u64 x is
                // (x & P61) + (x >> 61) (at most P61 + 7), less P61 once if that is reached.
                let mut mins = vec![u64::MAX; self.a.len()];
                let reduce = |x: u64| {
                    let r = (x & P61) + (x >> 61);
                    r.min(r.wrapping_sub(P61)) & u64::from(u32::MAX)
                };
                minhash_update_reduced(&mut mins, &self.a, &self.b, tokens, |h| h, reduce);
                Some(mins)
            }
        }
    }

    /// The minima of a 32-bit family in vector lanes: the same values as `slot`, since the
    /// low 32 bits of a u64 product and sum are the u32 wrapping product and sum.
    #[inline(always)]
    fn lanes(&self, tokens: &[u64], mix: impl Fn(u64) -> u32, reduce: impl Fn(u32) -> u32) -> Option<Vec<u64>> {
        let mut mins = vec![u32::MAX; self.a32.len()];
        minhash32_update(&mut mins, &self.a32, &self.b32, tokens, mix, reduce);
        Some(mins.into_iter().map(u64::from).collect())
    }

    /// One slot's value of token hash `h`, as the table above defines it: the reference the
    /// lane kernels are tested against.
    #[cfg(test)]
    fn slot(&self, a: u64, b: u64, h: u64) -> u64 {
        let h32 = h & u64::from(u32::MAX);
        match self.family {
            HashFamily::DatasketchLegacy | HashFamily::TextDedup => {
                (a.wrapping_mul(h).wrapping_add(b) % P61) & u64::from(u32::MAX)
            }
            HashFamily::TextDedupSpark => (a.wrapping_mul(h32).wrapping_add(b) & u64::from(u32::MAX)) % P32,
            HashFamily::NemoCurator => a.wrapping_mul(h32.max(1)).wrapping_add(b) & u64::from(u32::MAX),
            _ => {
                // DatasketchAffine32 (the constructor admits no other family).
                let x = u64::from(fmix32(h32 as u32));
                a.wrapping_mul(x).wrapping_add(b) & u64::from(u32::MAX)
            }
        }
    }

    /// Slot 0's multiplier (NeMo Curator seeds its MurmurHash3 token hash with it).
    pub(crate) fn first_a(&self) -> Option<u64> {
        self.a.first().copied()
    }
}

/// The seed of NeMo Curator's MurmurHash3 token hash for permutation seed `seed`: its first
/// permutation multiplier.
pub(crate) fn nemo_murmur_seed(seed: u64) -> Result<u32, SketchError> {
    let perms = CompatPerms::new(HashFamily::NemoCurator, seed, 1)?;
    Ok(perms.first_a().map_or(0, |a| a as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_numpy_randomstate() {
        // np.random.RandomState(42).randint(0, 2**32, size=3, dtype=np.uint64)
        let mut rs = NumpyRandomState::new(42);
        let raw: Vec<u64> = (0..3).map(|_| rs.randint(0, 1 << 32)).collect();
        assert_eq!(raw, vec![1_608_637_542, 3_421_126_067, 4_083_286_876]);
        // [(rs.randint(1, 2**61-1, dtype=np.uint64), rs.randint(0, 2**61-1, dtype=np.uint64)) x 2]
        let mut rs = NumpyRandomState::new(42);
        let pairs: Vec<(u64, u64)> = (0..2).map(|_| (rs.randint(1, P61), rs.randint(0, P61))).collect();
        assert_eq!(
            pairs,
            vec![
                (2_297_359_619_001_564_596, 1_396_682_528_897_996_046),
                (1_973_689_801_170_867_272, 1_819_927_849_474_927_636)
            ]
        );
    }

    #[test]
    fn nemo_seed_is_the_first_multiplier() {
        // 1 + (1608637542 & (2^31 - 1)): the first 32-bit draw, masked, accepted.
        assert_eq!(nemo_murmur_seed(42).unwrap(), 1_608_637_543);
        assert!(nemo_murmur_seed(1 << 32).is_err());
    }

    /// Every compatibility family.
    const COMPAT: [HashFamily; 5] = [
        HashFamily::DatasketchLegacy,
        HashFamily::TextDedup,
        HashFamily::TextDedupSpark,
        HashFamily::NemoCurator,
        HashFamily::DatasketchAffine32,
    ];

    /// The inverse of odd `a` modulo 2^64 (Newton's iteration doubles the correct bits); its
    /// low 32 bits are the inverse of `a mod 2^32` modulo 2^32.
    fn inverse64(a: u64) -> u64 {
        let mut x = a;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        }
        x
    }

    #[test]
    fn lane_minima_equal_the_slot_definition() {
        let mut state = 0x1234_5678_9ABC_DEF0u64;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let z = (state ^ (state >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z ^ (z >> 29)
        };
        for family in COMPAT {
            for k in [1usize, 63, 64, 65, 128, 250] {
                let p = CompatPerms::new(family, 42, k).unwrap();
                for n in [1usize, 2, 255, 256, 257, 700] {
                    let mut tokens: Vec<u64> = (0..n).map(|_| next()).collect();
                    tokens[0] = 0; // h32 = 0 (NeMo Curator maps it to 1)
                    // A slot with an odd multiplier, whose affine map a token can be solved for.
                    let odd = p.a.iter().position(|&a| a % 2 == 1);
                    if family == HashFamily::TextDedupSpark {
                        // Slot values in [2^32 - 5, 2^32), which the reduction moves below 5:
                        // a token that makes an odd-multiplier slot's affine value 2^32 - 3.
                        let j = odd.unwrap_or_else(|| panic!("{family}: no odd multiplier in {k} slots"));
                        let (a, b) = (p.a[j], p.b[j] as u32);
                        let h = (u32::MAX - 2).wrapping_sub(b).wrapping_mul(inverse64(a) as u32);
                        *tokens.last_mut().unwrap() = u64::from(h) | 7 << 40;
                        assert_eq!(p.slot(p.a[j], p.b[j], u64::from(h)), 2);
                    }
                    if matches!(family, HashFamily::DatasketchLegacy | HashFamily::TextDedup) && k > 1 {
                        // An affine value of 2^64 - 1, whose first fold (P61 + 7) needs the
                        // final subtraction: slot value 7.
                        let j = odd.unwrap_or_else(|| panic!("{family}: no odd multiplier in {k} slots"));
                        let h = u64::MAX.wrapping_sub(p.b[j]).wrapping_mul(inverse64(p.a[j]));
                        *tokens.last_mut().unwrap() = h;
                        assert_eq!(p.slot(p.a[j], p.b[j], h), 7);
                    }
                    let want: Vec<u64> =
                        (0..k).map(|j| tokens.iter().map(|&h| p.slot(p.a[j], p.b[j], h)).min().unwrap()).collect();
                    assert_eq!(p.minima(&tokens).unwrap(), want, "{family} k={k} n={n}");
                }
            }
        }
    }

    #[test]
    fn slot_values_fit_32_bits() {
        for family in COMPAT {
            let p = CompatPerms::new(family, 7, 16).unwrap();
            let m = p.minima(&[1, u64::MAX, 1 << 40, 0]).unwrap();
            assert!(m.iter().all(|&v| v <= u64::from(u32::MAX)), "{family}");
            assert!(p.minima(&[]).is_none());
        }
        assert!(CompatPerms::new(HashFamily::MixMultiplyShift, 1, 4).is_err());
    }
}
