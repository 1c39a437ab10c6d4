//! SimHash (Charikar, STOC 2002): random-hyperplane fingerprints of weighted feature vectors.

use super::error::SketchError;
use super::estimate::{Estimate, check_level, clopper_pearson};
use super::hash::fmix64;
use super::params::{HashFamily, SketchKind, SketchParams};
use crate::simd::simhash_accumulate;

/// A 64- or 128-bit SimHash fingerprint.
///
/// Feature h contributes its weight w to every bit: bit j of word w' is set in the
/// fingerprint when the sum over features of (+w if bit j of `g_w'(h)` is set, else -w) is
/// positive (a zero sum gives 0). Each bit is thus the sign of a projection on a
/// pseudo-random ±1 hyperplane. Bits 0..64 are word 0, bits 64..128 word 1.
///
/// The family decides `g`: `MixMultiplyShift` re-mixes, `g_w'(h) = fmix64(h ^ key_w')`;
/// `Charikar` (64 bits only) uses the feature hash itself, `g_0(h) = h`, as the textbook does.
///
/// ```
/// use sketchdb::{Sketch, SketchParams, Sketcher, Tokenizer};
///
/// let sketcher = Sketcher::new(SketchParams::simhash(64, 7)?)?;
/// let words = Tokenizer::shingles(1, 0)?;
/// let text = "a fingerprint of the words of a text, each word a feature weighted by its count";
/// let Sketch::SimHash(a) = sketcher.sketch_text(&words, text)? else { unreachable!() };
/// let Sketch::SimHash(b) = sketcher.sketch_text(&words, &text.replace("count", "counts"))? else {
///     unreachable!()
/// };
/// assert_eq!(a.value() >> 64, 0); // a 64-bit fingerprint
/// assert!(a.hamming(&b)? < 32); // near texts, near fingerprints
/// let cos = a.cosine(&b, 0.95)?;
/// assert!(cos.lower <= cos.value && cos.value <= cos.upper);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimHash {
    params: SketchParams,
    value: u128,
}

impl SimHash {
    /// From a multiset of feature hashes: each occurrence adds weight 1 (term frequency).
    pub(crate) fn from_features(params: SketchParams, keys: &[u64; 2], features: &[u64]) -> Result<Self, SketchError> {
        if features.is_empty() {
            return Err(SketchError::EmptySet);
        }
        let words = params.slots();
        let mut counters = vec![0i64; 64 * words];
        if params.family() == HashFamily::Charikar {
            simhash_accumulate(&mut counters, &[0][..words], features, |h| h);
        } else {
            simhash_accumulate(&mut counters, &keys[..words], features, fmix64);
        }
        Ok(SimHash { params, value: fold_signs(counters.iter().map(|&c| c > 0)) })
    }

    /// From features with caller weights (finite; a feature may repeat, weights add).
    pub(crate) fn from_weighted(
        params: SketchParams,
        keys: &[u64; 2],
        features: &[(u64, f64)],
    ) -> Result<Self, SketchError> {
        if features.is_empty() {
            return Err(SketchError::EmptySet);
        }
        if let Some((h, w)) = features.iter().find(|(_, w)| !w.is_finite()) {
            return Err(SketchError::invalid("weight", format!("{w} (feature {h:#x})"), "a finite weight"));
        }
        let words = params.slots();
        let mut counters = vec![0f64; 64 * words];
        let charikar = params.family() == HashFamily::Charikar;
        for (w, key) in keys[..words].iter().enumerate() {
            for &(h, weight) in features {
                let g = if charikar { h } else { fmix64(h ^ key) };
                for j in 0..64 {
                    counters[64 * w + j] += if (g >> j) & 1 == 1 { weight } else { -weight };
                }
            }
        }
        Ok(SimHash { params, value: fold_signs(counters.iter().map(|&c| c > 0.0)) })
    }

    /// Reassembles a stored fingerprint; a 64-bit one must have its high word zero.
    ///
    /// ```
    /// use sketchdb::{SimHash, SketchParams};
    ///
    /// let a = SimHash::from_parts(SketchParams::simhash(64, 7)?, 0b1011)?;
    /// let b = SimHash::from_parts(SketchParams::simhash(64, 7)?, 0b0001)?;
    /// assert_eq!(a.hamming(&b)?, 2);
    /// assert!(SimHash::from_parts(SketchParams::simhash(64, 7)?, 1 << 64).is_err()); // above 64 bits
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn from_parts(params: SketchParams, value: u128) -> Result<Self, SketchError> {
        params.validate()?;
        if params.kind() != SketchKind::SimHash {
            return Err(SketchError::incompatible("kind", SketchKind::SimHash, params.kind()));
        }
        if params.bits() == 64 && value >> 64 != 0 {
            return Err(SketchError::malformed("simhash", "a 64-bit fingerprint with bits above 63"));
        }
        Ok(SimHash { params, value })
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }
    /// The fingerprint (the high 64 bits are zero for 64-bit fingerprints).
    pub fn value(&self) -> u128 {
        self.value
    }

    /// The exact Hamming distance between two fingerprints.
    pub fn hamming(&self, other: &SimHash) -> Result<u32, SketchError> {
        self.params.check_compatible(&other.params)?;
        Ok((self.value ^ other.value).count_ones())
    }

    /// The cosine similarity of the two feature vectors, cos(pi h / f): a bit differs with
    /// probability theta / pi, so the Clopper-Pearson interval of h / f maps to an interval
    /// of the angle and, cos being decreasing on [0, pi], to one of the cosine. The ±1
    /// hyperplanes make theta / pi exact only as features grow many (a Gaussian limit).
    ///
    /// ```
    /// use sketchdb::{SimHash, SketchParams};
    ///
    /// let params = SketchParams::simhash(128, 7)?;
    /// let a = SimHash::from_parts(params, u128::MAX)?;
    /// let b = SimHash::from_parts(params, u128::MAX >> 64)?; // 64 of 128 bits differ
    /// let c = a.cosine(&b, 0.95)?;
    /// assert!(c.value.abs() < 1e-9); // cos(pi / 2)
    /// assert!(c.lower < 0.0 && 0.0 < c.upper);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn cosine(&self, other: &SimHash, level: f64) -> Result<Estimate, SketchError> {
        check_level(level)?;
        let h = f64::from(self.hamming(other)?);
        let f = f64::from(self.params.bits());
        let (lo, hi) = clopper_pearson(h, f, level);
        let pi = std::f64::consts::PI;
        Ok(Estimate { value: cosine_of(h, f), lower: (pi * hi).cos(), upper: (pi * lo).cos(), level, samples: f })
    }

    /// [`SimHash::cosine`]'s `value` alone (bit-identical), without the interval.
    pub(crate) fn cosine_value(&self, other: &SimHash) -> Result<f64, SketchError> {
        Ok(cosine_of(f64::from(self.hamming(other)?), f64::from(self.params.bits())))
    }
}

/// Charikar's cosine from h differing bits of f: cos(pi * h / f).
#[inline]
fn cosine_of(h: f64, f: f64) -> f64 {
    (std::f64::consts::PI * h / f).cos()
}

fn fold_signs(bits: impl Iterator<Item = bool>) -> u128 {
    bits.enumerate().fold(0u128, |acc, (j, set)| acc | (u128::from(set) << j))
}
