//! b-bit MinHash (Li and Koenig, "b-Bit Minwise Hashing", WWW 2010).

use super::error::SketchError;
use super::estimate::{Estimate, check_level, clopper_pearson};
use super::hash::{Permutations, fmix64};
use super::minhash::full_minima;
use super::params::{SketchKind, SketchParams};

/// A b-bit MinHash signature: b bits of each of k minima, packed, plus the set's cardinality.
///
/// Slot i's value is the low b bits of `fmix64(min_i)`, where `min_i` is the slot's full
/// 64-bit minimum. (Re-mixing the minimum first makes the kept bits of two different minima
/// collide with probability 2^-b independently per slot; the low bits of the raw
/// multiply-shift value would depend only on the low bits of the token.) Values are packed
/// little-endian: slot i occupies bits `[i*b, (i+1)*b)` of word `i*b / 64`.
///
/// ```
/// use sketchdb::{Sketch, SketchParams, Sketcher, TokenSet};
///
/// // 512 slots of 8 bits: 512 bytes per signature.
/// let sketcher = Sketcher::new(SketchParams::bbit(512, 8, 7)?)?;
/// let a = TokenSet::from_unsorted((0..1000).collect());
/// let b = TokenSet::from_unsorted((200..1200).collect());
/// let (Sketch::BBit(x), Sketch::BBit(y)) = (sketcher.sketch(&a)?, sketcher.sketch(&b)?) else {
///     unreachable!("b-bit parameters give b-bit sketches")
/// };
/// assert_eq!(x.words().len(), 512 * 8 / 64);
/// assert!(x.value(0) < 256);
/// let j = x.jaccard(&y, 0.95)?; // true Jaccard 800 / 1200
/// assert!(j.contains(j.value) && (j.value - 2.0 / 3.0).abs() < 0.15);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BBitMinHash {
    params: SketchParams,
    words: Vec<u64>,
    cardinality: u64,
}

/// The number of 64-bit words holding k values of b bits.
pub(crate) fn packed_words(k: usize, b: u8) -> usize {
    (k * usize::from(b)).div_ceil(64)
}

fn mask(b: u8) -> u64 {
    if b == 64 { u64::MAX } else { (1u64 << b) - 1 }
}

/// Li and Koenig's A_{j,b} = r (1 - r)^(2^b - 1) / (1 - (1 - r)^(2^b)), computed through
/// `ln_1p`/`exp_m1` so r near zero (D = 2^64) keeps full precision (A -> 2^-b).
fn a_coef(r: f64, b: u8) -> f64 {
    let m = 2f64.powi(i32::from(b));
    if r <= 0.0 {
        return 1.0 / m;
    }
    let l = (-r).ln_1p();
    r * ((m - 1.0) * l).exp() / -(m * l).exp_m1()
}

/// Li and Koenig's Theorem 1 constants (C1, C2) for sets of sizes f1, f2 in a universe of D.
pub fn li_koenig_constants(f1: u64, f2: u64, universe: f64, b: u8) -> (f64, f64) {
    let r1 = f1 as f64 / universe;
    let r2 = f2 as f64 / universe;
    let (a1, a2) = (a_coef(r1, b), a_coef(r2, b));
    let sum = r1 + r2;
    if sum <= 0.0 {
        let c = 1.0 / 2f64.powi(i32::from(b));
        return (c, c);
    }
    let c1 = a1 * r2 / sum + a2 * r1 / sum;
    let c2 = a1 * r1 / sum + a2 * r2 / sum;
    (c1, c2)
}

impl BBitMinHash {
    pub(crate) fn compute(params: SketchParams, perms: &Permutations, tokens: &[u64]) -> Result<Self, SketchError> {
        let mins = full_minima(perms, tokens)?;
        let b = params.bits();
        let mut words = vec![0u64; packed_words(mins.len(), b)];
        for (i, &m) in mins.iter().enumerate() {
            let bit = i * usize::from(b);
            words[bit / 64] |= (fmix64(m) & mask(b)) << (bit % 64);
        }
        Ok(BBitMinHash { params, words, cardinality: tokens.len() as u64 })
    }

    /// Reassembles a stored signature, checking it against its parameters.
    ///
    /// ```
    /// use sketchdb::{BBitMinHash, SketchParams};
    ///
    /// // 64 slots of 1 bit fill one word.
    /// let params = SketchParams::bbit(64, 1, 7)?;
    /// let s = BBitMinHash::from_parts(params, vec![0b1011], 40)?;
    /// assert_eq!((s.value(0), s.value(1), s.value(2)), (1, 1, 0));
    /// assert!(BBitMinHash::from_parts(params, vec![0, 0], 40).is_err()); // one word, not two
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn from_parts(params: SketchParams, words: Vec<u64>, cardinality: u64) -> Result<Self, SketchError> {
        params.validate()?;
        if params.kind() != SketchKind::BBitMinHash {
            return Err(SketchError::incompatible("kind", SketchKind::BBitMinHash, params.kind()));
        }
        let k = params.slots();
        let b = params.bits();
        if words.len() != packed_words(k, b) {
            return Err(SketchError::malformed("bbit", format!("{} words for k = {k}, b = {b}", words.len())));
        }
        let used = (k * usize::from(b)) % 64;
        if used != 0 && words.last().is_some_and(|last| last >> used != 0) {
            return Err(SketchError::malformed("bbit", "bits set beyond the last value"));
        }
        if cardinality == 0 {
            return Err(SketchError::malformed("bbit", "cardinality 0: a b-bit sketch is of a non-empty set"));
        }
        Ok(BBitMinHash { params, words, cardinality })
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }
    /// The packed values.
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    /// The exact number of distinct tokens sketched.
    pub fn cardinality(&self) -> u64 {
        self.cardinality
    }
    /// Every slot's b-bit value, in slot order, appended to `out`: word by word (b divides
    /// 64, so no value straddles two words).
    pub fn values_into(&self, out: &mut Vec<u32>) {
        let b = u32::from(self.params.bits());
        let per_word = (64 / b) as usize;
        let m = mask(self.params.bits());
        let k = self.params.slots();
        out.reserve(k);
        for (w, &word) in self.words.iter().enumerate() {
            let n = per_word.min(k.saturating_sub(w * per_word));
            out.extend((0..n as u32).map(|j| ((word >> (j * b)) & m) as u32));
        }
    }

    /// Slot i's b-bit value.
    pub fn value(&self, i: usize) -> u64 {
        let b = self.params.bits();
        let bit = i * usize::from(b);
        (self.words[bit / 64] >> (bit % 64)) & mask(b)
    }

    /// The number of slots whose b-bit values are equal, by XOR and a per-field OR-fold.
    pub fn matches(&self, other: &BBitMinHash) -> Result<usize, SketchError> {
        self.params.check_compatible(&other.params)?;
        let b = u32::from(self.params.bits());
        let k = self.params.slots();
        // The low bit of each field, repeated across the word.
        let low: u64 = (0..64 / b).fold(0u64, |acc, i| acc | (1u64 << (i * b)));
        let mut differing = 0usize;
        for (x, y) in self.words.iter().zip(&other.words) {
            let mut z = x ^ y;
            let mut s = 1;
            while s < b {
                z |= z >> s;
                s <<= 1;
            }
            differing += (z & low).count_ones() as usize;
        }
        // Padding fields of the last word are zero in both, so they never differ.
        Ok(k - differing)
    }

    /// The corrected resemblance R_b = (P_b - C1) / (1 - C2) of Li and Koenig's Theorem 1,
    /// with P_b the fraction of equal b-bit values; its interval is the Clopper-Pearson
    /// interval of P_b mapped through the same (increasing) correction and clamped to [0, 1].
    ///
    /// ```
    /// use sketchdb::{BBitMinHash, SketchParams};
    ///
    /// let params = SketchParams::bbit(64, 8, 7)?;
    /// let a = BBitMinHash::from_parts(params, vec![0x0102_0304_0506_0708; 8], 100)?;
    /// let j = a.jaccard(&a.clone(), 0.95)?;
    /// assert_eq!(a.matches(&a)?, 64);
    /// assert_eq!(j.value, 1.0);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn jaccard(&self, other: &BBitMinHash, level: f64) -> Result<Estimate, SketchError> {
        check_level(level)?;
        let m = self.matches(other)? as f64;
        let k = self.params.slots() as f64;
        let (c1, c2) =
            li_koenig_constants(self.cardinality, other.cardinality, self.params.universe_f64(), self.params.bits());
        let correct = |p: f64| bbit_correct(p, c1, c2);
        let (lo, hi) = clopper_pearson(m, k, level);
        Ok(Estimate { value: correct(m / k), lower: correct(lo), upper: correct(hi), level, samples: k })
    }

    /// [`BBitMinHash::jaccard`]'s `value` alone (bit-identical), without the interval.
    pub(crate) fn jaccard_value(&self, other: &BBitMinHash) -> Result<f64, SketchError> {
        let m = self.matches(other)? as f64;
        let k = self.params.slots() as f64;
        let (c1, c2) =
            li_koenig_constants(self.cardinality, other.cardinality, self.params.universe_f64(), self.params.bits());
        Ok(bbit_correct(m / k, c1, c2))
    }
}

/// Li and Koenig's correction of a b-bit match rate p: (p - C1) / (1 - C2), clamped to [0, 1].
#[inline]
fn bbit_correct(p: f64, c1: f64, c2: f64) -> f64 {
    ((p - c1) / (1.0 - c2)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-by-word extraction gives every slot's `value(i)`, for each b and for k that
    /// does and does not fill the last word.
    #[test]
    fn values_into_equals_value_per_slot() {
        for b in [1u8, 2, 4, 8, 16, 32] {
            for k in [1u32, 7, 64, 100, 512] {
                let params = SketchParams::bbit(k, b, 9).unwrap();
                let mut words = vec![0u64; packed_words(k as usize, b)];
                let mut x = 0x9e37_79b9_7f4a_7c15u64;
                for i in 0..k as usize {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    let bit = i * usize::from(b);
                    words[bit / 64] |= ((x >> 17) & mask(b)) << (bit % 64);
                }
                let s = BBitMinHash::from_parts(params, words, 3).unwrap();
                let mut out = vec![77];
                s.values_into(&mut out);
                let want: Vec<u32> = std::iter::once(77).chain((0..k as usize).map(|i| s.value(i) as u32)).collect();
                assert_eq!(out, want, "b = {b}, k = {k}");
            }
        }
    }

    #[test]
    fn constants_tend_to_two_to_minus_b_for_a_huge_universe() {
        for b in [1u8, 2, 4, 8, 16, 32] {
            let (c1, c2) = li_koenig_constants(100, 5000, 2f64.powi(64), b);
            let c = 1.0 / 2f64.powi(i32::from(b));
            assert!((c1 - c).abs() < 1e-5 * c, "b={b} c1={c1}");
            assert!((c2 - c).abs() < 1e-5 * c, "b={b} c2={c2}");
        }
    }

    #[test]
    fn constants_match_the_closed_form_for_a_small_universe() {
        // Direct evaluation of Theorem 1 for r1 = 0.1, r2 = 0.3, b = 1.
        let (r1, r2) = (0.1f64, 0.3f64);
        let a = |r: f64| r * (1.0 - r) / (1.0 - (1.0 - r).powi(2));
        let c1 = a(r1) * r2 / (r1 + r2) + a(r2) * r1 / (r1 + r2);
        let c2 = a(r1) * r1 / (r1 + r2) + a(r2) * r2 / (r1 + r2);
        let (g1, g2) = li_koenig_constants(10, 30, 100.0, 1);
        assert!((g1 - c1).abs() < 1e-12 && (g2 - c2).abs() < 1e-12);
    }
}
