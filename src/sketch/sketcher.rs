//! `Sketch`, the closed set of sketch kinds, and `Sketcher`, which builds them.

use rayon::prelude::*;

use super::bbit::BBitMinHash;
use super::compat::CompatPerms;
use super::error::SketchError;
use super::estimate::{Estimate, set_hamming_from_resemblance};
use super::hash::{Permutations, stream};
use super::minhash::MinHash;
use super::oph::OphSketch;
use super::params::{HashFamily, SketchKind, SketchParams};
use super::simhash::SimHash;
use super::tokenize::Tokenizer;
use super::tokens::{TokenSet, distinct};

/// A sketch of any kind. Comparisons between sketches check their parameters first and
/// fail with [`SketchError::Incompatible`] naming the differing field.
///
/// ```
/// use sketchdb::{Sketch, SketchKind, SketchParams, Sketcher, Tokenizer};
///
/// let sketcher = Sketcher::new(SketchParams::oph(128, 16, 42)?)?;
/// let words = Tokenizer::shingles(2, 0)?;
/// let a = sketcher.sketch_text(&words, "the quick brown fox jumps over the lazy dog")?;
/// let b = sketcher.sketch_text(&words, "the quick brown fox jumped over the lazy dog")?;
/// assert_eq!(a.kind(), SketchKind::Oph);
/// assert_eq!(a.cardinality(), Some(8)); // eight distinct 2-word shingles
/// let j = a.similarity(&b, 0.95)?; // Jaccard, with its interval
/// assert!(j.contains(a.similarity_value(&b)?));
/// if let Sketch::Oph(oph) = &a {
///     assert_eq!(oph.bins().len(), 128);
/// }
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sketch {
    /// k-permutation MinHash.
    MinHash(MinHash),
    /// b-bit MinHash.
    BBit(BBitMinHash),
    /// One Permutation Hashing.
    Oph(OphSketch),
    /// SimHash fingerprint.
    SimHash(SimHash),
}

impl Sketch {
    /// The sketch's parameters.
    pub fn params(&self) -> &SketchParams {
        match self {
            Sketch::MinHash(s) => s.params(),
            Sketch::BBit(s) => s.params(),
            Sketch::Oph(s) => s.params(),
            Sketch::SimHash(s) => s.params(),
        }
    }

    /// The sketch's kind.
    pub fn kind(&self) -> SketchKind {
        self.params().kind()
    }

    /// The exact number of distinct tokens of the sketched set; `None` for SimHash.
    pub fn cardinality(&self) -> Option<u64> {
        match self {
            Sketch::MinHash(s) => Some(s.cardinality()),
            Sketch::BBit(s) => Some(s.cardinality()),
            Sketch::Oph(s) => Some(s.cardinality()),
            Sketch::SimHash(_) => None,
        }
    }

    /// The similarity estimate the kind supports, with its interval at `level`: the Jaccard
    /// resemblance for set sketches, the cosine for SimHash.
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher, TokenSet};
    ///
    /// let minhash = Sketcher::new(SketchParams::minhash(128, 32, 1)?)?;
    /// let a = minhash.sketch(&TokenSet::from_unsorted((0..500).collect()))?;
    /// let b = minhash.sketch(&TokenSet::from_unsorted((0..500).collect()))?;
    /// assert_eq!(a.similarity(&b, 0.95)?.value, 1.0);
    /// // Sketches of other parameters do not compare: the error names the differing field.
    /// let other_seed = Sketcher::new(SketchParams::minhash(128, 32, 2)?)?;
    /// let c = other_seed.sketch(&TokenSet::from_unsorted((0..500).collect()))?;
    /// assert!(a.similarity(&c, 0.95).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn similarity(&self, other: &Sketch, level: f64) -> Result<Estimate, SketchError> {
        self.params().check_compatible(other.params())?;
        match (self, other) {
            (Sketch::MinHash(a), Sketch::MinHash(b)) => a.jaccard(b, level),
            (Sketch::BBit(a), Sketch::BBit(b)) => a.jaccard(b, level),
            (Sketch::Oph(a), Sketch::Oph(b)) => a.jaccard(b, level),
            (Sketch::SimHash(a), Sketch::SimHash(b)) => a.cosine(b, level),
            _ => Err(SketchError::incompatible("kind", self.kind(), other.kind())),
        }
    }

    /// The `value` of [`Sketch::similarity`] alone, bit-identical to it, without the
    /// interval (an incomplete-beta inversion): for deciding a threshold before paying for
    /// the interval.
    pub fn similarity_value(&self, other: &Sketch) -> Result<f64, SketchError> {
        self.params().check_compatible(other.params())?;
        match (self, other) {
            (Sketch::MinHash(a), Sketch::MinHash(b)) => a.jaccard_value(b),
            (Sketch::BBit(a), Sketch::BBit(b)) => a.jaccard_value(b),
            (Sketch::Oph(a), Sketch::Oph(b)) => a.jaccard_value(b),
            (Sketch::SimHash(a), Sketch::SimHash(b)) => a.cosine_value(b),
            _ => Err(SketchError::incompatible("kind", self.kind(), other.kind())),
        }
    }

    /// The Hamming distance |X Δ Y| between two sketched sets, from the resemblance and the
    /// stored cardinalities. For SimHash, the exact fingerprint distance (a degenerate
    /// interval).
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher, TokenSet};
    ///
    /// let sketcher = Sketcher::new(SketchParams::minhash(256, 64, 1)?)?;
    /// let a = sketcher.sketch(&TokenSet::from_unsorted((0..1000).collect()))?;
    /// let b = sketcher.sketch(&TokenSet::from_unsorted((100..1100).collect()))?;
    /// let d = a.hamming(&b, 0.95)?; // |A Δ B| = 200
    /// assert!(d.lower <= d.value && d.value <= d.upper);
    /// assert!((d.value - 200.0).abs() < 120.0);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn hamming(&self, other: &Sketch, level: f64) -> Result<Estimate, SketchError> {
        if let (Sketch::SimHash(a), Sketch::SimHash(b)) = (self, other) {
            let h = f64::from(a.hamming(b)?);
            return Ok(Estimate { value: h, lower: h, upper: h, level, samples: f64::from(a.params().bits()) });
        }
        let r = self.similarity(other, level)?;
        let (x, y) = (self.cardinality().unwrap_or(0), other.cardinality().unwrap_or(0));
        Ok(set_hamming_from_resemblance(&r, x, y))
    }
}

/// Builds sketches for one set of parameters, with the permutation coefficients derived from
/// the seed once. `Sketcher` is `Send + Sync`; batch methods use all cores through rayon.
///
/// ```
/// use sketchdb::{SketchParams, Sketcher, TokenSet, Tokenizer};
///
/// let sketcher = Sketcher::new(SketchParams::minhash(128, 32, 42)?)?;
/// // From text through a tokenizer, from token hashes, or many sets at once on all cores.
/// let text = sketcher.sketch_text(&Tokenizer::default(), "five words make one shingle here")?;
/// let set = sketcher.sketch(&TokenSet::from_unsorted(vec![3, 1, 2]))?;
/// let many = sketcher.sketch_batch(&[TokenSet::from_unsorted(vec![1]), TokenSet::default()]);
/// assert_eq!(text.cardinality(), Some(2));
/// assert_eq!(set.cardinality(), Some(3));
/// assert!(many[0].is_ok() && many[1].is_err()); // an empty set has no sketch
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sketcher {
    params: SketchParams,
    perms: Permutations,
    simhash_keys: [u64; 2],
    /// The coefficients of a compatibility family (`None` for sketchdb's own families).
    compat: Option<CompatPerms>,
}

impl Sketcher {
    /// A sketcher for `params` (validated).
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher};
    ///
    /// let sketcher = Sketcher::new(SketchParams::bbit(512, 8, 42)?)?;
    /// assert_eq!(sketcher.params().bits(), 8);
    /// assert!(SketchParams::bbit(512, 3, 42).is_err()); // b divides 64
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn new(params: SketchParams) -> Result<Self, SketchError> {
        params.validate()?;
        let slots = match params.kind() {
            SketchKind::MinHash | SketchKind::BBitMinHash => params.slots(),
            SketchKind::Oph => 1,
            SketchKind::SimHash => 0,
        };
        let keys = stream(params.seed(), 2);
        if params.family().is_compat() {
            let compat = Some(CompatPerms::new(params.family(), params.seed(), params.slots())?);
            return Ok(Sketcher { params, perms: Permutations::new(params.seed(), 0), simhash_keys: [0, 0], compat });
        }
        let perms = match params.family() {
            HashFamily::MixMultiplyShift32 => Permutations::lanes32(params.seed(), slots),
            _ => Permutations::new(params.seed(), slots),
        };
        Ok(Sketcher { params, perms, simhash_keys: [keys[0], keys[1]], compat: None })
    }

    /// The parameters every sketch from this sketcher carries.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// Sketches a set of token hashes. SimHash gives every token weight 1.
    /// An empty set is `SketchError::EmptySet`.
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher, TokenSet};
    ///
    /// let sketcher = Sketcher::new(SketchParams::minhash(64, 64, 42)?)?;
    /// let s = sketcher.sketch(&TokenSet::from_unsorted(vec![10, 20, 30]))?;
    /// assert_eq!(s.cardinality(), Some(3));
    /// assert!(sketcher.sketch(&TokenSet::default()).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn sketch(&self, tokens: &TokenSet) -> Result<Sketch, SketchError> {
        self.sketch_distinct(tokens.as_slice())
    }

    /// [`Sketcher::sketch`] of the set whose tokens are `tokens`, which are distinct (for
    /// SimHash, each weighs 1).
    fn sketch_distinct(&self, tokens: &[u64]) -> Result<Sketch, SketchError> {
        if let Some(compat) = &self.compat {
            return Ok(Sketch::MinHash(MinHash::compute_compat(self.params, compat, tokens)?));
        }
        match self.params.kind() {
            SketchKind::MinHash => Ok(Sketch::MinHash(MinHash::compute(self.params, &self.perms, tokens)?)),
            SketchKind::BBitMinHash => Ok(Sketch::BBit(BBitMinHash::compute(self.params, &self.perms, tokens)?)),
            SketchKind::Oph => Ok(Sketch::Oph(OphSketch::compute(self.params, &self.perms, tokens)?)),
            SketchKind::SimHash => {
                Ok(Sketch::SimHash(SimHash::from_features(self.params, &self.simhash_keys, tokens)?))
            }
        }
    }

    /// Sketches a multiset of tokens: set sketches use its distinct tokens, SimHash weighs
    /// each token by its number of occurrences (term frequency).
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher};
    ///
    /// // A set sketch counts distinct tokens; SimHash weighs repeats.
    /// let minhash = Sketcher::new(SketchParams::minhash(64, 64, 42)?)?;
    /// assert_eq!(minhash.sketch_multiset(&[7, 7, 7, 8])?.cardinality(), Some(2));
    /// let simhash = Sketcher::new(SketchParams::simhash(64, 42)?)?;
    /// let tripled = simhash.sketch_multiset(&[7, 7, 7, 8])?;
    /// assert_eq!(tripled, simhash.sketch_weighted(&[(7, 3.0), (8, 1.0)])?);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn sketch_multiset(&self, tokens: &[u64]) -> Result<Sketch, SketchError> {
        match self.params.kind() {
            SketchKind::SimHash => {
                Ok(Sketch::SimHash(SimHash::from_features(self.params, &self.simhash_keys, tokens)?))
            }
            // Strictly increasing tokens are already a set: sketched in place, without the
            // copy and sort (the same sketch either way).
            _ if tokens.windows(2).all(|w| w[0] < w[1]) => self.sketch_distinct(tokens),
            // Any other order: the distinct tokens in the order first seen (a set sketch's
            // minima and cardinality do not depend on order).
            _ => self.sketch_distinct(&distinct(tokens)),
        }
    }

    /// Sketches text through `tokenizer` (term frequency for SimHash).
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher, Tokenizer};
    ///
    /// let sketcher = Sketcher::new(SketchParams::oph(64, 8, 42)?)?;
    /// let grams = Tokenizer::char_ngrams(3, 0)?;
    /// let s = sketcher.sketch_text(&grams, "banana")?; // ban, ana, nan, ana
    /// assert_eq!(s.cardinality(), Some(3));
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn sketch_text(&self, tokenizer: &Tokenizer, text: &str) -> Result<Sketch, SketchError> {
        self.sketch_multiset(&tokenizer.tokens(text))
    }

    /// A SimHash over caller-weighted features. Other kinds: `Incompatible` on `kind`.
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher};
    ///
    /// let simhash = Sketcher::new(SketchParams::simhash(64, 42)?)?;
    /// let a = simhash.sketch_weighted(&[(1, 5.0), (2, 0.5), (3, 0.5)])?;
    /// let b = simhash.sketch_weighted(&[(1, 5.0), (2, 0.5), (4, 0.5)])?;
    /// assert_eq!(a, b); // the heavy feature sets the sign of every bit
    /// let minhash = Sketcher::new(SketchParams::minhash(64, 64, 42)?)?;
    /// assert!(minhash.sketch_weighted(&[(1, 1.0)]).is_err()); // SimHash only
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn sketch_weighted(&self, features: &[(u64, f64)]) -> Result<Sketch, SketchError> {
        if self.params.kind() != SketchKind::SimHash {
            return Err(SketchError::incompatible("kind", SketchKind::SimHash, self.params.kind()));
        }
        Ok(Sketch::SimHash(SimHash::from_weighted(self.params, &self.simhash_keys, features)?))
    }

    /// Sketches many sets in parallel on the rayon pool, results in input order.
    ///
    /// ```
    /// use sketchdb::{SketchParams, Sketcher, TokenSet};
    ///
    /// let sketcher = Sketcher::new(SketchParams::minhash(64, 32, 42)?)?;
    /// let sets: Vec<TokenSet> = (1..=100u64).map(|n| TokenSet::from_unsorted((0..n).collect())).collect();
    /// let sketches = sketcher.sketch_batch(&sets);
    /// assert_eq!(sketches.len(), 100);
    /// assert_eq!(sketches[99].as_ref().ok().and_then(|s| s.cardinality()), Some(100));
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn sketch_batch(&self, sets: &[TokenSet]) -> Vec<Result<Sketch, SketchError>> {
        sets.par_iter().map(|s| self.sketch(s)).collect()
    }
}
