//! One Permutation Hashing (Li, Owen and Zhang, NIPS 2012) with optimal densification
//! (Shrivastava, ICML 2017) for LSH keys.

use super::densify::{bin_of, densify};
use super::error::SketchError;
use super::estimate::{Estimate, check_level, clopper_pearson};
use super::hash::{Permutations, fmix64, stream};
use super::params::{SketchKind, SketchParams};
use crate::simd::affine_mix;

/// An OPH sketch: one permutation v(h) = a * fmix64(h ^ pre) + b, split into t bins by its top
/// 32 bits (`bin = ((v >> 32) * t) >> 32`); each bin keeps the low `bits` bits of its least v.
/// Bins no token fell into are *empty*: flagged in the bitmap (bit i of word i / 64) and
/// stored as 0. This raw form is what is stored and scanned; [`OphSketch::densify`] derives
/// the fully filled signature used only for LSH band keys.
///
/// ```
/// use sketchdb::{Sketch, SketchParams, Sketcher, TokenSet};
///
/// // 256 bins of 16 bits.
/// let sketcher = Sketcher::new(SketchParams::oph(256, 16, 7)?)?;
/// let a = TokenSet::from_unsorted((0..1000).collect());
/// let b = TokenSet::from_unsorted((200..1200).collect());
/// let (Sketch::Oph(x), Sketch::Oph(y)) = (sketcher.sketch(&a)?, sketcher.sketch(&b)?) else {
///     unreachable!("OPH parameters give OPH sketches")
/// };
/// assert_eq!(x.bins().len(), 256);
/// assert!(x.empty_bins() < 10); // 1000 tokens leave few of 256 bins empty
/// let j = x.jaccard(&y, 0.95)?; // true Jaccard 800 / 1200
/// assert!(j.contains(j.value) && (j.value - 2.0 / 3.0).abs() < 0.15);
/// // The densified signature fills every bin, for LSH band keys.
/// assert_eq!(x.densify()?.len(), 256);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OphSketch {
    params: SketchParams,
    bins: Vec<u32>,
    empty: Vec<u64>,
    cardinality: u64,
}

/// The bin counts of one OPH comparison: everything the estimator needs besides widths and
/// cardinalities. Column scans compute these without decoding sketches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OphCounts {
    /// t, the number of bins.
    pub bins: usize,
    /// N_emp: bins empty in both sketches.
    pub n_emp: usize,
    /// N_mat: bins non-empty in both with equal values.
    pub n_mat: usize,
    /// Bins non-empty in both.
    pub both: usize,
}

/// The point estimate alone (no interval): what [`oph_estimate`] returns as `value`, bit for
/// bit, at a fraction of the cost. Scans use it to discard rows below a threshold.
///
/// Runs once per row in scans, on counts consistent by construction, so it does not check
/// them ([`oph_estimate`], the public entry, does).
pub fn oph_point(c: OphCounts, bits: u8) -> Result<f64, SketchError> {
    let m = c.bins.saturating_sub(c.n_emp) as f64;
    if m == 0.0 {
        return Err(SketchError::Undefined { reason: "both OPH sketches are all empty (empty sets)" });
    }
    Ok(oph_correct(c.n_mat as f64 / m, m, c.both, bits))
}

/// Maps a match rate `p` over `m` effective bins to the resemblance, removing the chance
/// 2^-bits that two different minima agree in the `both` bins non-empty in both sketches.
fn oph_correct(p: f64, m: f64, both: usize, bits: u8) -> f64 {
    let cc = 1.0 / 2f64.powi(i32::from(bits));
    ((p * m - both as f64 * cc) / (m * (1.0 - cc))).clamp(0.0, 1.0)
}

/// The OPH resemblance estimate and interval from bin counts (see [`OphSketch::jaccard`]).
/// Every OPH comparison, decoded or scanned column by column, goes through this function, so
/// all access paths give bit-identical estimates.
pub fn oph_estimate(c: OphCounts, bits: u8, card_x: u64, card_y: u64, level: f64) -> Result<Estimate, SketchError> {
    check_level(level)?;
    // Counts are public fields: n_mat <= both <= bins - n_emp must hold, or the estimate is
    // meaningless (and `bins - n_emp` would underflow).
    if c.n_emp > c.bins || c.both > c.bins - c.n_emp || c.n_mat > c.both {
        return Err(SketchError::invalid(
            "OPH counts",
            format!("bins {}, n_emp {}, both {}, n_mat {}", c.bins, c.n_emp, c.both, c.n_mat),
            "n_mat <= both <= bins - n_emp",
        ));
    }
    let value = oph_point(c, bits)?;
    let m = (c.bins - c.n_emp) as f64;
    let correct = |p: f64| oph_correct(p, m, c.both, bits);
    let n_eff = if card_x > 0 && card_y > 0 {
        let f = (card_x + card_y) as f64 / (1.0 + value);
        m * ((f - 1.0) / (f - m).max(1.0)).max(1.0)
    } else {
        m
    };
    let (lo, hi) = clopper_pearson(c.n_mat as f64 / m * n_eff, n_eff, level);
    Ok(Estimate { value, lower: correct(lo), upper: correct(hi), level, samples: m })
}

/// Counts (N_emp, N_mat, both non-empty) over the bins and empty-bin bitmaps of two sketches
/// of the same t (bins in any integer type, as wide as the sketches' values need): the one
/// count behind every decoded or column-held OPH comparison. Equal-length inputs are the
/// caller's invariant.
pub(crate) fn bin_counts<T: Copy + Eq>(xb: &[T], xe: &[u64], yb: &[T], ye: &[u64]) -> (usize, usize, usize) {
    let t = xb.len();
    let (mut n_emp, mut n_mat, mut both) = (0, 0, 0);
    // A word of 64 bins at a time: bins past t are flagged neither empty nor filled.
    for (w, (x, y)) in xe.iter().zip(ye).enumerate() {
        let (lo, hi) = (w * 64, (w * 64 + 64).min(t));
        let in_t = if hi - lo == 64 { u64::MAX } else { (1u64 << (hi - lo)) - 1 };
        let filled = !(x | y) & in_t;
        n_emp += (x & y).count_ones() as usize;
        both += filled.count_ones() as usize;
        let mut equal = 0u64;
        for (k, (a, b)) in xb[lo..hi].iter().zip(&yb[lo..hi]).enumerate() {
            equal |= u64::from(a == b) << k;
        }
        n_mat += (equal & filled).count_ones() as usize;
    }
    (n_emp, n_mat, both)
}

/// [`OphSketch::jaccard`]'s `value` over two sketches' bins and bitmaps ([`bin_counts`], then
/// [`oph_point`]): what `Sketch::similarity_value` computes for OPH sketches, bit for bit.
pub(crate) fn oph_value<T: Copy + Eq>(
    xb: &[T],
    xe: &[u64],
    yb: &[T],
    ye: &[u64],
    bits: u8,
) -> Result<f64, SketchError> {
    let (n_emp, n_mat, both) = bin_counts(xb, xe, yb, ye);
    oph_point(OphCounts { bins: xb.len(), n_emp, n_mat, both }, bits)
}

/// The densification key of sketches of `params`: output #3 of the seed's splitmix64 stream.
pub(crate) fn densify_key(params: &SketchParams) -> u64 {
    stream(params.seed(), 4)[3]
}

fn value_mask(bits: u8) -> u64 {
    (1u64 << bits) - 1
}

impl OphSketch {
    pub(crate) fn compute(params: SketchParams, perms: &Permutations, tokens: &[u64]) -> Result<Self, SketchError> {
        if tokens.is_empty() {
            return Err(SketchError::EmptySet);
        }
        let t = params.slots();
        let (a, b) = (perms.a[0], perms.b[0]);
        let mut mins = vec![u64::MAX; t];
        let mut saw_max = false;
        // The permuted values of a chunk of tokens in one vector pass, then binned one by one.
        let mut vs = [0u64; 256];
        for chunk in tokens.chunks(vs.len()) {
            let vs = &mut vs[..chunk.len()];
            affine_mix(vs, chunk, perms.pre, a, b, fmix64);
            for &v in vs.iter() {
                let i = bin_of(v, t as u64);
                mins[i] = mins[i].min(v);
                saw_max |= v == u64::MAX;
            }
        }
        // A bin is filled when its minimum is below u64::MAX, or when some token's value is
        // u64::MAX itself (one token in 2^64 per seed), which always falls in the last bin.
        let mut filled = vec![0u64; t.div_ceil(64)];
        for (i, &m) in mins.iter().enumerate() {
            filled[i / 64] |= u64::from(m != u64::MAX) << (i % 64);
        }
        if saw_max {
            filled[(t - 1) / 64] |= 1 << ((t - 1) % 64);
        }
        let mask = value_mask(params.bits());
        let bins = mins
            .iter()
            .enumerate()
            .map(|(i, &m)| if filled[i / 64] >> (i % 64) & 1 == 1 { (m & mask) as u32 } else { 0 })
            .collect();
        let mut empty: Vec<u64> = filled.iter().map(|w| !w).collect();
        if let Some(last) = empty.last_mut().filter(|_| !t.is_multiple_of(64)) {
            *last &= (1u64 << (t % 64)) - 1;
        }
        Ok(OphSketch { params, bins, empty, cardinality: tokens.len() as u64 })
    }

    /// Reassembles a stored sketch, checking it against its parameters. An all-empty sketch is
    /// accepted only with cardinality 0 (see [`OphSketch::jaccard`] for what it estimates).
    ///
    /// ```
    /// use sketchdb::{OphSketch, SketchParams};
    ///
    /// // Four 8-bit bins; bin 2 is empty (bit 2 of the bitmap) and stores 0.
    /// let params = SketchParams::oph(4, 8, 7)?;
    /// let s = OphSketch::from_parts(params, vec![9, 4, 0, 200], vec![0b0100], 3)?;
    /// assert!(s.is_empty_bin(2) && !s.is_empty_bin(0));
    /// assert_eq!(s.empty_bins(), 1);
    /// // An empty bin must store 0.
    /// assert!(OphSketch::from_parts(params, vec![9, 4, 1, 200], vec![0b0100], 3).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn from_parts(
        params: SketchParams,
        bins: Vec<u32>,
        empty: Vec<u64>,
        cardinality: u64,
    ) -> Result<Self, SketchError> {
        check_parts(&params, &bins, &empty, cardinality)?;
        Ok(OphSketch { params, bins, empty, cardinality })
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }
    /// The raw bin values (0 for empty bins).
    pub fn bins(&self) -> &[u32] {
        &self.bins
    }
    /// The empty-bin bitmap: bit i % 64 of word i / 64 is set when bin i is empty.
    pub fn empty_bitmap(&self) -> &[u64] {
        &self.empty
    }
    /// The exact number of distinct tokens sketched.
    pub fn cardinality(&self) -> u64 {
        self.cardinality
    }
    /// Whether bin i is empty.
    pub fn is_empty_bin(&self, i: usize) -> bool {
        self.empty[i / 64] >> (i % 64) & 1 == 1
    }
    /// The number of empty bins.
    pub fn empty_bins(&self) -> usize {
        self.empty.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Counts (N_emp, N_mat, both non-empty) over the bins of two sketches.
    pub fn bin_counts(&self, other: &OphSketch) -> Result<(usize, usize, usize), SketchError> {
        self.params.check_compatible(&other.params)?;
        Ok(bin_counts(&self.bins, &self.empty, &other.bins, &other.empty))
    }

    /// The resemblance N_mat / (t - N_emp).
    ///
    /// N_emp counts bins empty in both sketches; N_mat counts bins non-empty in both with equal
    /// values. Given m = t - N_emp, the m bin minima are distinct elements of X ∪ Y drawn
    /// without replacement, so N_mat is hypergeometric. The interval is Clopper-Pearson with
    /// the effective sample size m (f - 1) / (f - m), f = |X ∪ Y| estimated from the stored
    /// cardinalities as (|X| + |Y|) / (1 + R). With `bits` < 32 the chance 2^-bits that two
    /// different minima agree is removed: R = (N_mat - m2 2^-bits) / (m (1 - 2^-bits)), m2 the
    /// bins non-empty in both.
    ///
    /// Two all-empty sketches (of empty sets) have no estimate: `SketchError::Undefined`.
    ///
    /// ```
    /// use sketchdb::{OphSketch, SketchParams};
    ///
    /// let params = SketchParams::oph(4, 32, 7)?;
    /// let a = OphSketch::from_parts(params, vec![9, 4, 0, 200], vec![0b0100], 3)?;
    /// let b = OphSketch::from_parts(params, vec![9, 5, 0, 200], vec![0b0100], 3)?;
    /// // (bins empty in both, equal non-empty bins, bins non-empty in both)
    /// assert_eq!(a.bin_counts(&b)?, (1, 2, 3));
    /// let j = a.jaccard(&b, 0.95)?;
    /// assert!((j.value - 2.0 / 3.0).abs() < 1e-9);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn jaccard(&self, other: &OphSketch, level: f64) -> Result<Estimate, SketchError> {
        check_level(level)?;
        let (n_emp, n_mat, both) = self.bin_counts(other)?;
        let counts = OphCounts { bins: self.bins.len(), n_emp, n_mat, both };
        oph_estimate(counts, self.params.bits(), self.cardinality, other.cardinality, level)
    }

    /// [`OphSketch::jaccard`]'s `value` alone (bit-identical: the same [`oph_point`]),
    /// without the interval.
    pub(crate) fn jaccard_value(&self, other: &OphSketch) -> Result<f64, SketchError> {
        self.params.check_compatible(&other.params)?;
        oph_value(&self.bins, &self.empty, &other.bins, &other.empty, self.params.bits())
    }

    /// A fully filled signature for LSH keys by optimal densification: an empty bin j takes
    /// the value of the first non-empty bin among the probes `bin_of(fmix64(key ^ (j << 32 |
    /// attempt)), t)`, attempt = 0, 1, ... (64 probes, then the next non-empty bin
    /// cyclically), `key` being output #3 of the seed's splitmix64 stream. Filled bins keep
    /// their values. Fails with `EmptySet` for an all-empty sketch.
    pub fn densify(&self) -> Result<Vec<u32>, SketchError> {
        let t = self.bins.len();
        if self.empty_bins() == t {
            return Err(SketchError::EmptySet);
        }
        Ok(densify(&self.bins, &self.empty, densify_key(&self.params)))
    }
}

/// The checks of [`OphSketch::from_parts`]: `bins` and `empty` are t values and t / 64
/// (rounded up) words of OPH `params`, every value fits `bits`, every bin marked empty holds 0
/// and the cardinality is 0 exactly when every bin is empty.
pub(crate) fn check_parts(
    params: &SketchParams,
    bins: &[u32],
    empty: &[u64],
    cardinality: u64,
) -> Result<(), SketchError> {
    params.validate()?;
    if params.kind() != SketchKind::Oph {
        return Err(SketchError::incompatible("kind", SketchKind::Oph, params.kind()));
    }
    let t = params.slots();
    if bins.len() != t || empty.len() != t.div_ceil(64) {
        return Err(SketchError::malformed(
            "oph",
            format!("{} bins / {} bitmap words for t = {t}", bins.len(), empty.len()),
        ));
    }
    if !t.is_multiple_of(64) && empty.last().is_some_and(|w| w >> (t % 64) != 0) {
        return Err(SketchError::malformed("oph", "empty-bin bitmap marks bins beyond t"));
    }
    let mask = value_mask(params.bits());
    let bad = |i: usize, v: u32| u64::from(v) > mask || (empty[i / 64] >> (i % 64) & 1 == 1 && v != 0);
    // Checked 64 bins (one bitmap word) at a time: a value above the mask (all ones below
    // bit `bits`) shows in the OR of the word's values, and only the bins the word marks
    // empty are looked at; the first bad bin is looked for only when a word has one.
    let word_ok = |(chunk, &w): (&[u32], &u64)| {
        let mut wrong = u64::from(chunk.iter().fold(0, |a, &v| a | v)) > mask;
        let mut marked = w;
        while marked != 0 {
            wrong |= chunk.get(marked.trailing_zeros() as usize).is_some_and(|&v| v != 0);
            marked &= marked - 1;
        }
        !wrong
    };
    if !bins.chunks(64).zip(empty).all(word_ok)
        && let Some((i, &v)) = bins.iter().enumerate().find(|&(i, &v)| bad(i, v))
    {
        return Err(SketchError::malformed(
            "oph",
            format!("bin {i} holds {v}, not a valid {}-bit value", params.bits()),
        ));
    }
    let all_empty = empty.iter().map(|w| w.count_ones() as usize).sum::<usize>() == t;
    if all_empty != (cardinality == 0) {
        return Err(SketchError::malformed("oph", "cardinality disagrees with the empty-bin bitmap"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of an odd multiplier mod 2^64 (Newton's iteration).
    fn inverse(a: u64) -> u64 {
        let mut x = a;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        }
        x
    }

    /// The token whose permuted value is `v`: fmix64 and the affine map undone.
    fn token_of(perms: &Permutations, v: u64) -> u64 {
        let mut k = v.wrapping_sub(perms.b[0]).wrapping_mul(inverse(perms.a[0]));
        for c in [0xC4CE_B9FE_1A85_EC53u64, 0xFF51_AFD7_ED55_8CCD] {
            k ^= k >> 33;
            k = k.wrapping_mul(inverse(c));
        }
        (k ^ (k >> 33)) ^ perms.pre
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// `from_parts` accepts exactly the parts whose every bin passes the per-bin rule, and
        /// `bin_counts` equals counting bin by bin, for t not a multiple of 64 too.
        #[test]
        fn word_wise_checks_and_counts_equal_bin_by_bin(
            t in proptest::sample::select(vec![1u32, 63, 64, 100, 512]),
            bits in proptest::sample::select(vec![8u8, 16, 32]),
            seed in proptest::prelude::any::<u64>(),
            corrupt in proptest::prelude::any::<bool>(),
        ) {
            let params = SketchParams::oph(t, bits, 5).unwrap();
            let t = t as usize;
            let mut state = seed;
            let mut next = || { state = fmix64(state ^ 0x5851_F42D_4C95_7F2D); state };
            let mut parts = |valid: bool| {
                let mut empty = vec![0u64; t.div_ceil(64)];
                let bins: Vec<u32> = (0..t).map(|j| {
                    if next() % 3 == 0 {
                        empty[j / 64] |= 1 << (j % 64);
                        0
                    } else {
                        // Few distinct values so that equal bins are common.
                        (next() % 4) as u32 & value_mask(bits) as u32
                    }
                }).collect();
                let mut bins = bins;
                if !valid {
                    let j = (next() as usize) % t;
                    bins[j] = if bits == 32 || empty[j / 64] >> (j % 64) & 1 == 1 { bins[j].max(1) | 1 } else { 1 << bits };
                    if bits == 32 && empty[j / 64] >> (j % 64) & 1 == 0 {
                        empty[j / 64] |= 1 << (j % 64); // a 32-bit value cannot be too wide
                    }
                }
                (bins, empty)
            };
            let naive_ok = |bins: &[u32], empty: &[u64]| bins.iter().enumerate().all(|(i, &v)| {
                u64::from(v) <= value_mask(bits) && !(empty[i / 64] >> (i % 64) & 1 == 1 && v != 0)
            });
            let card = |empty: &[u64]| u64::from(empty.iter().map(|w| w.count_ones()).sum::<u32>() as usize != t);
            let (b1, e1) = parts(!corrupt);
            proptest::prop_assert_eq!(naive_ok(&b1, &e1), !corrupt);
            let one = OphSketch::from_parts(params, b1.clone(), e1.clone(), card(&e1));
            proptest::prop_assert_eq!(one.is_ok(), !corrupt);
            let (b2, e2) = parts(true);
            if let Ok(one) = one {
                let two = OphSketch::from_parts(params, b2.clone(), e2.clone(), card(&e2)).unwrap();
                let is = |e: &[u64], i: usize| e[i / 64] >> (i % 64) & 1 == 1;
                let n_emp = (0..t).filter(|&i| is(&e1, i) && is(&e2, i)).count();
                let both: Vec<usize> = (0..t).filter(|&i| !is(&e1, i) && !is(&e2, i)).collect();
                let n_mat = both.iter().filter(|&&i| b1[i] == b2[i]).count();
                proptest::prop_assert_eq!(one.bin_counts(&two).unwrap(), (n_emp, n_mat, both.len()));
            }
        }
    }

    #[test]
    fn a_token_permuted_to_the_largest_value_fills_the_last_bin() {
        for (t, bits) in [(64u32, 8u8), (100, 16), (7, 32)] {
            let params = SketchParams::oph(t, bits, 42).unwrap();
            let perms = Permutations::new(42, 1);
            let top = token_of(&perms, u64::MAX);
            assert_eq!(perms.a[0].wrapping_mul(fmix64(top ^ perms.pre)).wrapping_add(perms.b[0]), u64::MAX);
            let low = token_of(&perms, 5); // bin 0, far from the last bin
            let s = OphSketch::compute(params, &perms, &[low, top]).unwrap();
            let last = t as usize - 1;
            assert!(!s.is_empty_bin(last) && !s.is_empty_bin(0), "t={t}");
            assert_eq!(s.empty_bins(), t as usize - 2);
            assert_eq!(s.bins()[last], value_mask(bits) as u32);
            let alone = OphSketch::compute(params, &perms, &[low]).unwrap();
            assert!(alone.is_empty_bin(last));
        }
    }
}
