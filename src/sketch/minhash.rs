//! MinHash: k independent permutations, the minimum of each (Broder 1997).

use super::compat::CompatPerms;
use super::error::SketchError;
use super::estimate::{Estimate, check_level, gamma_quantile, proportion, proportion_value};
use super::hash::{Permutations, fmix64, premix32};
use super::params::{SketchKind, SketchParams};
use crate::simd::{minhash_update, minhash32_update};

/// A MinHash signature: for each of k permutations the minimum permuted value over the set,
/// kept at full 64 bits or as its top 32 bits (`bits` = 32), plus the set's cardinality.
///
/// Invariant: `values.len() == k` and, for 32-bit sketches, every value is below 2^32.
///
/// ```
/// use sketchdb::{Sketch, SketchParams, Sketcher, TokenSet};
///
/// let sketcher = Sketcher::new(SketchParams::minhash(256, 64, 7)?)?;
/// let a = TokenSet::from_unsorted((0..1000).collect());
/// let b = TokenSet::from_unsorted((200..1200).collect());
/// let (Sketch::MinHash(x), Sketch::MinHash(y)) = (sketcher.sketch(&a)?, sketcher.sketch(&b)?) else {
///     unreachable!("MinHash parameters give MinHash sketches")
/// };
/// assert_eq!(x.values().len(), 256);
/// assert_eq!(x.cardinality(), 1000);
/// let j = x.jaccard(&y, 0.95)?; // true Jaccard 800 / 1200
/// assert!(j.lower <= j.value && j.value <= j.upper);
/// assert!((j.value - 2.0 / 3.0).abs() < 0.15);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinHash {
    params: SketchParams,
    values: Vec<u64>,
    cardinality: u64,
}

/// The minima of every slot over `tokens` (shared with b-bit MinHash): full 64-bit values
/// for `MixMultiplyShift`, 32-bit values for `MixMultiplyShift32`'s lanes.
pub(crate) fn full_minima(perms: &Permutations, tokens: &[u64]) -> Result<Vec<u64>, SketchError> {
    if tokens.is_empty() {
        return Err(SketchError::EmptySet);
    }
    if perms.is_lanes32() {
        let mut mins = vec![u32::MAX; perms.a32.len()];
        let pre = perms.pre;
        minhash32_update(&mut mins, &perms.a32, &perms.b32, tokens, |h| premix32(h, pre), |v| v);
        return Ok(mins.into_iter().map(u64::from).collect());
    }
    let mut mins = vec![u64::MAX; perms.a.len()];
    minhash_update(&mut mins, &perms.a, &perms.b, perms.pre, tokens, fmix64);
    Ok(mins)
}

impl MinHash {
    pub(crate) fn compute(params: SketchParams, perms: &Permutations, tokens: &[u64]) -> Result<Self, SketchError> {
        let mut values = full_minima(perms, tokens)?;
        // `MixMultiplyShift` keeps the top half of its 64-bit minima; the 32-bit lanes'
        // minima are already 32-bit.
        if params.bits() == 32 && !perms.is_lanes32() {
            for v in &mut values {
                *v >>= 32;
            }
        }
        Ok(MinHash { params, values, cardinality: tokens.len() as u64 })
    }

    /// A compatibility family's signature: its 32-bit minima as they are.
    pub(crate) fn compute_compat(
        params: SketchParams,
        perms: &CompatPerms,
        tokens: &[u64],
    ) -> Result<Self, SketchError> {
        let values = perms.minima(tokens).ok_or(SketchError::EmptySet)?;
        Ok(MinHash { params, values, cardinality: tokens.len() as u64 })
    }

    /// Reassembles a stored signature, checking it against its parameters.
    ///
    /// ```
    /// use sketchdb::{MinHash, SketchParams};
    ///
    /// let params = SketchParams::minhash(4, 32, 7)?;
    /// let m = MinHash::from_parts(params, vec![5, 17, 3, 9], 12)?;
    /// assert_eq!(m.values(), &[5, 17, 3, 9]);
    /// // A 32-bit sketch keeps the top 32 bits of each minimum: a wider value is refused.
    /// assert!(MinHash::from_parts(params, vec![1 << 40, 0, 0, 0], 12).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn from_parts(params: SketchParams, values: Vec<u64>, cardinality: u64) -> Result<Self, SketchError> {
        params.validate()?;
        if params.kind() != SketchKind::MinHash {
            return Err(SketchError::incompatible("kind", SketchKind::MinHash, params.kind()));
        }
        if values.len() != params.slots() {
            return Err(SketchError::malformed(
                "minhash",
                format!("{} values for k = {}", values.len(), params.size()),
            ));
        }
        if let Some(i) = values.iter().position(|&v| params.bits() == 32 && v > u64::from(u32::MAX)) {
            return Err(SketchError::malformed("minhash", format!("value {i} exceeds 32 bits")));
        }
        Ok(MinHash { params, values, cardinality })
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }
    /// The k minima (top 32 bits for 32-bit sketches).
    pub fn values(&self) -> &[u64] {
        &self.values
    }
    /// The exact number of distinct tokens sketched.
    pub fn cardinality(&self) -> u64 {
        self.cardinality
    }

    /// The number of slots whose minima are equal.
    pub fn matches(&self, other: &MinHash) -> Result<usize, SketchError> {
        self.params.check_compatible(&other.params)?;
        Ok(crate::simd::equal_count(&self.values, &other.values))
    }

    /// The Jaccard similarity: matching slots / k, with the exact Clopper-Pearson interval of
    /// the binomial law of the number of matches.
    ///
    /// ```
    /// use sketchdb::{MinHash, SketchParams};
    ///
    /// let params = SketchParams::minhash(4, 64, 7)?;
    /// let a = MinHash::from_parts(params, vec![1, 2, 3, 4], 10)?;
    /// let b = MinHash::from_parts(params, vec![1, 2, 30, 40], 10)?;
    /// assert_eq!(a.matches(&b)?, 2);
    /// let j = a.jaccard(&b, 0.95)?;
    /// assert_eq!(j.value, 0.5);
    /// assert!(j.contains(0.5) && j.width() > 0.5); // four slots say little
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn jaccard(&self, other: &MinHash, level: f64) -> Result<Estimate, SketchError> {
        check_level(level)?;
        let m = self.matches(other)?;
        Ok(proportion(m as f64, self.values.len() as f64, level))
    }

    /// [`MinHash::jaccard`]'s `value` alone (bit-identical), without the interval.
    pub(crate) fn jaccard_value(&self, other: &MinHash) -> Result<f64, SketchError> {
        let m = self.matches(other)?;
        Ok(proportion_value(m as f64, self.values.len() as f64))
    }

    /// The set's cardinality estimated from the minima alone.
    ///
    /// Each minimum, scaled to u in (0, 1), is the least of n uniform values, so
    /// E = -ln(1 - u) is exponential with rate n and their sum S over k slots is Gamma(k, n).
    /// The estimate is (k - 1) / S (unbiased; 1 / S when k = 1) and the interval
    /// [G(a/2) / S, G(1 - a/2) / S] uses the quantiles G of Gamma(k, 1). The resolution of
    /// 32-bit minima limits it to sets far smaller than 2^32.
    ///
    /// ```
    /// use sketchdb::{Sketch, SketchParams, Sketcher, TokenSet};
    ///
    /// let sketcher = Sketcher::new(SketchParams::minhash(512, 64, 7)?)?;
    /// let Sketch::MinHash(m) = sketcher.sketch(&TokenSet::from_unsorted((0..10_000).collect()))? else {
    ///     unreachable!()
    /// };
    /// let n = m.cardinality_estimate(0.99)?;
    /// assert!(n.lower < 10_000.0 && 10_000.0 < n.upper);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn cardinality_estimate(&self, level: f64) -> Result<Estimate, SketchError> {
        check_level(level)?;
        let scale = if self.params.bits() == 32 { 4_294_967_296.0 } else { 18_446_744_073_709_551_616.0 };
        let s: f64 = self.values.iter().map(|&v| -(-((v as f64 + 0.5) / scale)).ln_1p()).sum();
        let k = self.values.len() as f64;
        let alpha = 1.0 - level;
        let value = if k > 1.0 { (k - 1.0) / s } else { 1.0 / s };
        Ok(Estimate {
            value,
            lower: gamma_quantile(k, alpha / 2.0)? / s,
            upper: gamma_quantile(k, 1.0 - alpha / 2.0)? / s,
            level,
            samples: k,
        })
    }
}
