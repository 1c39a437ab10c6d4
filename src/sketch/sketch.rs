//! `Sketch`, the closed set of sketch kinds, and `Sketcher`, which builds them.

use rayon::prelude::*;

use super::bbit::BBitMinHash;
use super::error::SketchError;
use super::estimate::{Estimate, set_hamming_from_resemblance};
use super::hash::{Permutations, stream};
use super::minhash::MinHash;
use super::oph::OphSketch;
use super::params::{SketchKind, SketchParams};
use super::simhash::SimHash;
use super::tokenize::Tokenizer;
use super::tokens::TokenSet;

/// A sketch of any kind. Comparisons between sketches check their parameters first and
/// fail with [`SketchError::Incompatible`] naming the differing field.
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
#[derive(Debug, Clone)]
pub struct Sketcher {
    params: SketchParams,
    perms: Permutations,
    simhash_keys: [u64; 2],
}

impl Sketcher {
    /// A sketcher for `params` (validated).
    pub fn new(params: SketchParams) -> Result<Self, SketchError> {
        params.validate()?;
        let slots = match params.kind() {
            SketchKind::MinHash | SketchKind::BBitMinHash => params.slots(),
            SketchKind::Oph => 1,
            SketchKind::SimHash => 0,
        };
        let keys = stream(params.seed(), 2);
        Ok(Sketcher { params, perms: Permutations::new(params.seed(), slots), simhash_keys: [keys[0], keys[1]] })
    }

    /// The parameters every sketch from this sketcher carries.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// Sketches a set of token hashes. SimHash gives every token weight 1.
    /// An empty set is `SketchError::EmptySet`.
    pub fn sketch(&self, tokens: &TokenSet) -> Result<Sketch, SketchError> {
        match self.params.kind() {
            SketchKind::MinHash => Ok(Sketch::MinHash(MinHash::compute(self.params, &self.perms, tokens)?)),
            SketchKind::BBitMinHash => Ok(Sketch::BBit(BBitMinHash::compute(self.params, &self.perms, tokens)?)),
            SketchKind::Oph => Ok(Sketch::Oph(OphSketch::compute(self.params, &self.perms, tokens)?)),
            SketchKind::SimHash => {
                Ok(Sketch::SimHash(SimHash::from_features(self.params, &self.simhash_keys, tokens.as_slice())?))
            }
        }
    }

    /// Sketches a multiset of tokens: set sketches use its distinct tokens, SimHash weighs
    /// each token by its number of occurrences (term frequency).
    pub fn sketch_multiset(&self, tokens: &[u64]) -> Result<Sketch, SketchError> {
        match self.params.kind() {
            SketchKind::SimHash => {
                Ok(Sketch::SimHash(SimHash::from_features(self.params, &self.simhash_keys, tokens)?))
            }
            _ => self.sketch(&TokenSet::from_unsorted(tokens.to_vec())),
        }
    }

    /// Sketches text through `tokenizer` (term frequency for SimHash).
    pub fn sketch_text(&self, tokenizer: &Tokenizer, text: &str) -> Result<Sketch, SketchError> {
        self.sketch_multiset(&tokenizer.tokens(text))
    }

    /// A SimHash over caller-weighted features. Other kinds: `Incompatible` on `kind`.
    pub fn sketch_weighted(&self, features: &[(u64, f64)]) -> Result<Sketch, SketchError> {
        if self.params.kind() != SketchKind::SimHash {
            return Err(SketchError::incompatible("kind", SketchKind::SimHash, self.params.kind()));
        }
        Ok(Sketch::SimHash(SimHash::from_weighted(self.params, &self.simhash_keys, features)?))
    }

    /// Sketches many sets in parallel on the rayon pool, results in input order.
    pub fn sketch_batch(&self, sets: &[TokenSet]) -> Vec<Result<Sketch, SketchError>> {
        sets.par_iter().map(|s| self.sketch(s)).collect()
    }
}
