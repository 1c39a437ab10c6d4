//! Estimates with confidence intervals, and the distributions behind them.
//!
//! Every interval here is the image of an interval for a binomial (or Poisson-process)
//! parameter under a monotone map, so its coverage is that of the underlying interval:
//!
//! * Clopper-Pearson for a proportion: the exact binomial interval, inverting the binomial
//!   tails through the regularised incomplete beta function.
//! * The Gamma law of the sum of exponential spacings for cardinality from MinHash.

use statrs::distribution::{ContinuousCDF, Gamma};
use statrs::function::beta::inv_beta_reg;

use super::error::SketchError;

/// The default confidence level of every interval.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// A point estimate with a two-sided confidence interval at `level`.
///
/// ```
/// use sketchdb::{SketchParams, Sketcher, TokenSet};
///
/// let sketcher = Sketcher::new(SketchParams::minhash(128, 32, 42)?)?;
/// let a = sketcher.sketch(&TokenSet::from_unsorted((0..300).collect()))?;
/// let b = sketcher.sketch(&TokenSet::from_unsorted((100..400).collect()))?;
/// let e = a.similarity(&b, 0.9)?;
/// println!("Jaccard {:.2} (90% CI {:.2}..{:.2}, {} slots)", e.value, e.lower, e.upper, e.samples);
/// assert_eq!((e.level, e.samples), (0.9, 128.0));
/// assert!(e.contains(e.value) && e.width() < 0.3);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// The interval's lower end.
    pub lower: f64,
    /// The interval's upper end.
    pub upper: f64,
    /// The confidence level, in (0, 1).
    pub level: f64,
    /// The number of independent comparisons behind the estimate (effective sample size):
    /// k for MinHash, t - N_emp for OPH, f for SimHash.
    pub samples: f64,
}

impl Estimate {
    /// Whether `x` lies in the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }

    /// The interval's width.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }
}

/// Validates a confidence level: strictly between 0 and 1.
pub fn check_level(level: f64) -> Result<(), SketchError> {
    if level.is_finite() && level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(SketchError::invalid("level", level, "a confidence level strictly between 0 and 1"))
    }
}

/// The Clopper-Pearson interval for a proportion with `x` successes in `n` trials.
///
/// Real-valued `x` and `n` are allowed (effective sample sizes); requires `0 <= x <= n`,
/// `n > 0` and a valid level. Returns `(lower, upper)` in [0, 1].
pub fn clopper_pearson(x: f64, n: f64, level: f64) -> (f64, f64) {
    // A pure function of its arguments' bits, and the sketches' counts repeat (MinHash and
    // b-bit: x is a whole number of k slots): recently computed intervals are looked up in
    // a small per-thread table (two incomplete-beta inversions cost thousands of
    // instructions, a lookup a few).
    let key = [x.to_bits(), n.to_bits(), level.to_bits()];
    let slot = (key[0].wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key[1].wrapping_mul(0xc2b2_ae3d_27d4_eb4f) ^ key[2])
        .wrapping_mul(0x1656_67b1_9e37_79f9)
        >> (64 - INTERVAL_MEMO_BITS);
    INTERVAL_MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let entry = &mut memo[slot as usize];
        if let Some((k, v)) = *entry
            && k == key
        {
            return v;
        }
        let v = clopper_pearson_uncached(x, n, level);
        *entry = Some((key, v));
        v
    })
}

/// log2 of the entries of the per-thread table of recent [`clopper_pearson`] intervals.
const INTERVAL_MEMO_BITS: u32 = 9;

/// A recent interval: the bits of `(x, n, level)` and `(lower, upper)`.
type MemoEntry = Option<([u64; 3], (f64, f64))>;

thread_local! {
    static INTERVAL_MEMO: std::cell::RefCell<Box<[MemoEntry]>> =
        std::cell::RefCell::new(vec![None; 1 << INTERVAL_MEMO_BITS].into_boxed_slice());
}

/// [`clopper_pearson`] computed.
fn clopper_pearson_uncached(x: f64, n: f64, level: f64) -> (f64, f64) {
    let alpha = 1.0 - level;
    let x = x.clamp(0.0, n);
    let lower = if x <= 0.0 { 0.0 } else { inv_beta_reg(x, n - x + 1.0, alpha / 2.0) };
    let upper = if x >= n { 1.0 } else { inv_beta_reg(x + 1.0, n - x, 1.0 - alpha / 2.0) };
    (lower.clamp(0.0, 1.0), upper.clamp(0.0, 1.0))
}

/// The `p`-quantile of the Gamma(shape, rate 1) distribution.
pub(crate) fn gamma_quantile(shape: f64, p: f64) -> Result<f64, SketchError> {
    let g = Gamma::new(shape, 1.0).map_err(|_| SketchError::invalid("k", shape, "a positive shape"))?;
    Ok(g.inverse_cdf(p))
}

/// A proportion estimate `x / n` with its Clopper-Pearson interval.
pub(crate) fn proportion(x: f64, n: f64, level: f64) -> Estimate {
    let (lower, upper) = clopper_pearson(x, n, level);
    Estimate { value: proportion_value(x, n), lower, upper, level, samples: n }
}

/// The point estimate of [`proportion`], without the interval.
#[inline]
pub(crate) fn proportion_value(x: f64, n: f64) -> f64 {
    (x / n).clamp(0.0, 1.0)
}

/// The expected Hamming distance |X Δ Y| of two sets from their resemblance R and sizes:
/// H = (1 - R) / (1 + R) * (|X| + |Y|). Decreasing in R, so the interval maps end to end.
pub fn set_hamming_from_resemblance(r: &Estimate, size_x: u64, size_y: u64) -> Estimate {
    let total = size_x as f64 + size_y as f64;
    let h = |r: f64| (1.0 - r) / (1.0 + r) * total;
    Estimate { value: h(r.value), lower: h(r.upper), upper: h(r.lower), level: r.level, samples: r.samples }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-thread table gives bit-identical intervals to computing them, on first and
    /// repeated calls, across more distinct arguments than it has entries (so entries are
    /// replaced) and across levels and real-valued counts.
    #[test]
    fn remembered_intervals_are_the_computed_ones() {
        for round in 0..2 {
            for level in [0.9, 0.95, 0.99] {
                for n in [64.0, 128.0, 512.0, 100.5] {
                    for x in (0..=512).map(f64::from).chain([0.25, 7.5, 99.75]).filter(|&x| x <= n) {
                        let want = clopper_pearson_uncached(x, n, level);
                        let got = clopper_pearson(x, n, level);
                        assert_eq!(
                            (got.0.to_bits(), got.1.to_bits()),
                            (want.0.to_bits(), want.1.to_bits()),
                            "round {round}, x {x}, n {n}, level {level}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn clopper_pearson_known_values() {
        // Reference values (R: binom.test(5, 20)$conf.int) = 0.08657147 0.49104587.
        let (lo, hi) = clopper_pearson(5.0, 20.0, 0.95);
        assert!((lo - 0.086_571_47).abs() < 1e-6, "{lo}");
        assert!((hi - 0.491_045_87).abs() < 1e-6, "{hi}");
        // Edge cases: zero and all successes.
        let (lo, hi) = clopper_pearson(0.0, 10.0, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.308_497_1).abs() < 1e-6, "{hi}");
        let (lo, hi) = clopper_pearson(10.0, 10.0, 0.95);
        assert!((lo - 0.691_502_9).abs() < 1e-6, "{lo}");
        assert_eq!(hi, 1.0);
    }

    #[test]
    fn bad_levels_are_rejected() {
        for l in [0.0, 1.0, -0.5, f64::NAN, 2.0] {
            assert!(check_level(l).is_err());
        }
        assert!(check_level(0.9).is_ok());
    }

    #[test]
    fn gamma_quantile_matches_chi_square() {
        // Gamma(k, 1) quantiles are half the chi-square(2k) quantiles: qchisq(0.975, 10)/2.
        let q = gamma_quantile(5.0, 0.975).unwrap();
        assert!((q - 20.483_177 / 2.0).abs() < 1e-5, "{q}");
    }
}
