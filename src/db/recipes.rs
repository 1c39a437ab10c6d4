//! Defaults, recipes and rules that front ends share with the library, so that none restates
//! them: the similarity each sketch kind measures and its default threshold
//! ([`Measure`]), a kind's default parameters ([`default_params`]), the configurations new
//! collections start with ([`text_config`], [`text_config_for`], [`fingerprint_config`]), sketching a record's
//! content for a collection ([`Content`]) and the key rule ([`check_key`]).
//!
//! ```
//! use sketchdb::recipes::{Content, Measure, text_config};
//! use sketchdb::{Database, Query};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Database::create(dir.path().join("docs.sketchdb"))?;
//! let docs = db.create_collection("docs", text_config()?)?;
//! let sketch = Content::Text("the quick brown fox jumps over the lazy dog").sketch(&docs)?;
//! docs.insert("a", &sketch)?;
//! let t = Measure::of(docs.params().kind()).default_threshold();
//! assert_eq!(docs.query(&Query::threshold(sketch, t))?.hits.len(), 1);
//! # Ok::<(), sketchdb::Error>(())
//! ```

use std::fmt;

/// The confidence-level rule (strictly between 0 and 1), for front ends that check a level
/// before any estimate is made.
pub use crate::sketch::estimate::check_level;

/// The query rule: whether a question (threshold, top-k or radius) and its options (level,
/// recall target) fit a collection of sketch kind `kind`, before anything runs. Queries and
/// dedups check this themselves; front ends call it to refuse a question early, the same way
/// for every command.
pub fn check_question(
    question: crate::QueryKind,
    options: &crate::QueryOptions,
    kind: SketchKind,
) -> Result<(), crate::QueryError> {
    crate::planner::exec::validate_question(question, options, kind)
}

use crate::{
    Batch, Collection, CollectionConfig, HashFamily, MAX_KEY_LEN, SimHash, Sketch, SketchError, SketchKind,
    SketchParams, TokenSet,
};

/// The steps of a text recipe ([`crate::Recipe`]), its presets and their compatibility.
pub use crate::sketch::recipe::hashes::TokenHash;
pub use crate::sketch::recipe::presets::{Compatibility, Preset};
pub use crate::sketch::recipe::steps::{
    CaseFold, Digits, Normalization, Pipeline, PunctClass, Punctuation, Shingles, ShortText, Tokens,
};

/// The hash seed new sketches use unless a configuration names another.
pub use crate::sketch::params::DEFAULT_SEED;
/// The default tokenizer's shingle width (words) and token-hash seed.
pub use crate::sketch::tokenize::{DEFAULT_SHINGLE_WORDS, DEFAULT_TOKEN_SEED};
/// The longest collection name, in bytes (UTF-8).
pub use crate::storage::MAX_COLLECTION_NAME_LEN;

/// Permutations (MinHash, b-bit) or bins (OPH) a sketch kind gets when no size is given
/// (`create`, `bounds`).
pub const DEFAULT_SLOTS: u32 = 128;

/// Bins of the default text configuration ([`text_config`]): OPH with 512 bins of
/// [`DEFAULT_TEXT_BITS`] bits.
pub const DEFAULT_TEXT_BINS: u32 = 512;

/// Bits per bin of the default text configuration ([`text_config`]).
pub const DEFAULT_TEXT_BITS: u8 = 8;

/// The weights of the false-positive and false-negative areas that an LSH index minimises
/// when it chooses its banding ([`crate::IndexConfig::Lsh`] without bands and rows): recall
/// first. Front ends that propose a banding for a threshold use these to agree with the
/// index they would create.
pub const INDEX_LSH_WEIGHTS: crate::index::LshWeights = crate::index::INDEX_LSH_WEIGHTS;

/// The weights an LSH index minimises on a collection that keeps exact shingles
/// ([`crate::CollectionConfig::exact_shingles`]; [`crate::lsh::BandingPurpose::ExactRecall`]):
/// candidate recall almost only, since exact scoring keeps precision at 1.
pub const EXACT_INDEX_LSH_WEIGHTS: crate::index::LshWeights = crate::index::EXACT_INDEX_LSH_WEIGHTS;

/// The similarity a sketch kind estimates, which threshold queries compare against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Measure {
    /// Jaccard resemblance of token sets: MinHash, b-bit MinHash and OPH.
    Jaccard,
    /// Cosine of weighted feature vectors: SimHash.
    Cosine,
}

impl Measure {
    /// The measure of `kind`'s estimates.
    ///
    /// ```
    /// use sketchdb::SketchKind;
    /// use sketchdb::recipes::Measure;
    ///
    /// assert_eq!(Measure::of(SketchKind::Oph), Measure::Jaccard);
    /// assert_eq!(Measure::of(SketchKind::SimHash), Measure::Cosine);
    /// ```
    pub fn of(kind: SketchKind) -> Measure {
        match kind {
            SketchKind::SimHash => Measure::Cosine,
            _ => Measure::Jaccard,
        }
    }

    /// A short lower-case name: `jaccard` or `cosine`.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Jaccard => "jaccard",
            Measure::Cosine => "cosine",
        }
    }

    /// The threshold a query uses when none is given: 0.5 Jaccard, 0.9 cosine (a cosine of
    /// 0.5 is an angle of 60 degrees, far from a near-duplicate).
    ///
    /// ```
    /// use sketchdb::recipes::Measure;
    ///
    /// assert_eq!(Measure::Jaccard.default_threshold(), 0.5);
    /// assert_eq!(Measure::Cosine.default_threshold(), 0.9);
    /// ```
    pub fn default_threshold(self) -> f64 {
        match self {
            Measure::Jaccard => 0.5,
            Measure::Cosine => 0.9,
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parameters of `kind` with `size` slots and `bits` bits per value, `bits` defaulting per
/// kind: 32 for MinHash, 8 for b-bit MinHash and OPH, 64 for SimHash. A SimHash's size is its
/// bit count, so `size` is ignored for it.
///
/// MinHash with 32-bit values and b-bit MinHash are computed by the 32-bit lane family
/// [`HashFamily::MixMultiplyShift32`]: the same accuracy (`tests/sketch_accuracy.rs`) at about
/// four times the tokens per second on machines without a vector 64-bit multiply (AVX2; `sketchdb
/// bench minhash-create`). 64-bit MinHash, OPH and SimHash use [`HashFamily::MixMultiplyShift`].
/// Collections record their family, so one created with another keeps it.
///
/// ```
/// use sketchdb::recipes::default_params;
/// use sketchdb::{HashFamily, SketchKind, SketchParams};
///
/// let p = default_params(SketchKind::BBitMinHash, 256, None, 7)?;
/// assert_eq!(p, SketchParams::bbit(256, 8, 7)?.with_family(HashFamily::MixMultiplyShift32)?);
/// let m = default_params(SketchKind::MinHash, 128, Some(64), 7)?;
/// assert_eq!(m.family(), HashFamily::MixMultiplyShift);
/// let s = default_params(SketchKind::SimHash, 256, Some(128), 7)?;
/// assert_eq!(s, SketchParams::simhash(128, 7)?);
/// # Ok::<(), sketchdb::SketchError>(())
/// ```
pub fn default_params(kind: SketchKind, size: u32, bits: Option<u8>, seed: u64) -> Result<SketchParams, SketchError> {
    let lanes32 = |p: SketchParams| p.with_family(HashFamily::MixMultiplyShift32);
    match kind {
        SketchKind::MinHash => match bits.unwrap_or(32) {
            32 => lanes32(SketchParams::minhash(size, 32, seed)?),
            bits => SketchParams::minhash(size, bits, seed),
        },
        SketchKind::BBitMinHash => lanes32(SketchParams::bbit(size, bits.unwrap_or(8), seed)?),
        SketchKind::Oph => SketchParams::oph(size, bits.unwrap_or(8), seed),
        SketchKind::SimHash => SketchParams::simhash(bits.unwrap_or(64), seed),
    }
}

/// The configuration a collection of text or token sets starts with when nothing is chosen:
/// densified one-permutation hashing with [`DEFAULT_TEXT_BINS`] bins of [`DEFAULT_TEXT_BITS`]
/// bits (584 bytes per record in the pages), [`DEFAULT_SEED`], the default tokenizer, no index.
///
/// Chosen by measurement (`sketchdb bench dedup-docs` and `search-docs` on the docs workload,
/// 20k documents, thresholds 0.5 to 0.9): among MinHash 128 x 32, b-bit 512 x 8 and 1024 x 4,
/// and OPH 512 x 8, the configurations of at most 1 KB per record, OPH 512 x 8 matched the best
/// recall and precision (threshold search at 0.8 through an LSH index: 0.980 / 0.969, against
/// 0.958 / 0.945 for MinHash 128) and sketched 4 to 6 times faster than b-bit MinHash.
///
/// ```
/// use sketchdb::SketchParams;
/// use sketchdb::recipes::text_config;
///
/// let config = text_config()?;
/// assert_eq!(config.params, SketchParams::oph(512, 8, sketchdb::recipes::DEFAULT_SEED)?);
/// # Ok::<(), sketchdb::SketchError>(())
/// ```
pub fn text_config() -> Result<CollectionConfig, SketchError> {
    Ok(CollectionConfig::new(SketchParams::oph(DEFAULT_TEXT_BINS, DEFAULT_TEXT_BITS, DEFAULT_SEED)?))
}

/// [`text_config`] for a collection created to answer threshold queries or dedups at
/// `threshold`: with an LSH index tuned for it.
///
/// ```
/// use sketchdb::IndexConfig;
/// use sketchdb::recipes::{text_config, text_config_for};
///
/// let config = text_config_for(0.8)?;
/// assert_eq!(config.params, text_config()?.params);
/// assert_eq!(config.index, IndexConfig::lsh(0.8));
/// # Ok::<(), sketchdb::Error>(())
/// ```
pub fn text_config_for(threshold: f64) -> Result<CollectionConfig, crate::Error> {
    let config = text_config()?.with_index(crate::IndexConfig::lsh(threshold));
    config.validate()?;
    Ok(config)
}

/// The configuration a collection of fingerprints starts with when nothing is chosen: 64-bit
/// SimHash, [`DEFAULT_SEED`], no index.
///
/// ```
/// use sketchdb::SketchParams;
/// use sketchdb::recipes::fingerprint_config;
///
/// assert_eq!(fingerprint_config()?.params, SketchParams::simhash(64, sketchdb::recipes::DEFAULT_SEED)?);
/// # Ok::<(), sketchdb::SketchError>(())
/// ```
pub fn fingerprint_config() -> Result<CollectionConfig, SketchError> {
    Ok(CollectionConfig::new(SketchParams::simhash(64, DEFAULT_SEED)?))
}

/// A record's content before sketching, in any of the forms a front end reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content<'a> {
    /// Text, tokenized with the collection's tokenizer.
    Text(&'a str),
    /// Pre-hashed tokens; repeats count once.
    Tokens(&'a [u64]),
    /// A SimHash fingerprint given directly (for a 64-bit collection, its high word is zero).
    Fingerprint(u128),
}

impl Content<'_> {
    /// The sketch of this content under `coll`'s parameters and tokenizer. A fingerprint for
    /// a collection that is not SimHash, or wider than the collection's bits, is an error.
    ///
    /// ```
    /// use sketchdb::recipes::{Content, fingerprint_config};
    /// use sketchdb::Database;
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("fp.sketchdb"))?;
    /// let fps = db.create_collection("fp", fingerprint_config()?)?;
    /// let sketch = Content::Fingerprint(0xdead_beef).sketch(&fps)?;
    /// assert!(Content::Fingerprint(1 << 64).sketch(&fps).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn sketch(&self, coll: &Collection) -> Result<Sketch, SketchError> {
        match *self {
            Content::Text(text) => coll.sketcher().sketch_text(&coll.config().tokenizer, text),
            Content::Tokens(tokens) => coll.sketcher().sketch_multiset(tokens),
            Content::Fingerprint(value) => SimHash::from_parts(*coll.params(), value).map(Sketch::SimHash),
        }
    }
}

impl Content<'_> {
    /// Adds this content to `batch` as an insert (or an upsert) of `key` into `coll`: its
    /// sketch, and its token set when the collection keeps exact shingles.
    ///
    /// ```
    /// use sketchdb::recipes::{Content, text_config};
    /// use sketchdb::{Batch, Database};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("b.sketchdb"))?;
    /// let docs = db.create_collection("docs", text_config()?.with_exact_shingles(true))?;
    /// let mut batch = Batch::new();
    /// Content::Text("one two three four five six").add_to(&docs, &mut batch, "a", false)?;
    /// docs.apply(&batch)?;
    /// assert_eq!(docs.len()?, 1);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn add_to(&self, coll: &Collection, batch: &mut Batch, key: &str, upsert: bool) -> Result<(), SketchError> {
        let tokens = match *self {
            Content::Text(text) => coll.config().tokenizer.tokens(text),
            Content::Tokens(tokens) => tokens.to_vec(),
            Content::Fingerprint(_) => {
                let sketch = self.sketch(coll)?;
                if upsert {
                    batch.upsert(key, sketch)
                } else {
                    batch.insert(key, sketch)
                };
                return Ok(());
            }
        };
        let sketch = coll.sketcher().sketch_multiset(&tokens)?;
        match (coll.config().exact_shingles, upsert) {
            (true, up) => {
                let set = TokenSet::from_unsorted(tokens);
                if up {
                    batch.upsert_with_shingles(key, sketch, &set)
                } else {
                    batch.insert_with_shingles(key, sketch, &set)
                }
            }
            (false, true) => batch.upsert(key, sketch),
            (false, false) => batch.insert(key, sketch),
        };
        Ok(())
    }
}

/// Why a key cannot be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key is empty.
    #[error("empty key: keys are 1..={MAX_KEY_LEN} bytes")]
    Empty,
    /// The key is longer than [`MAX_KEY_LEN`].
    #[error("key of {len} bytes is longer than the {max}-byte limit")]
    TooLong {
        /// The key's length in bytes.
        len: usize,
        /// The limit, [`MAX_KEY_LEN`].
        max: usize,
    },
}

/// Checks the key rule every write applies: 1..=[`MAX_KEY_LEN`] bytes. A front end can check
/// a record's key where it reads it, before a batch fails on it.
///
/// ```
/// use sketchdb::MAX_KEY_LEN;
/// use sketchdb::recipes::{KeyError, check_key};
///
/// assert!(check_key(b"doc-1").is_ok());
/// assert_eq!(check_key(b""), Err(KeyError::Empty));
/// let long = vec![b'x'; MAX_KEY_LEN + 1];
/// assert_eq!(check_key(&long), Err(KeyError::TooLong { len: MAX_KEY_LEN + 1, max: MAX_KEY_LEN }));
/// ```
pub fn check_key(key: &[u8]) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(KeyError::TooLong { len: key.len(), max: MAX_KEY_LEN });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, Tokenizer};

    #[test]
    fn each_kind_has_its_measure_and_threshold() {
        let cases = [
            (SketchKind::MinHash, Measure::Jaccard, 0.5),
            (SketchKind::BBitMinHash, Measure::Jaccard, 0.5),
            (SketchKind::Oph, Measure::Jaccard, 0.5),
            (SketchKind::SimHash, Measure::Cosine, 0.9),
        ];
        for (kind, measure, t) in cases {
            assert_eq!(Measure::of(kind), measure);
            assert_eq!(Measure::of(kind).default_threshold(), t);
        }
        assert_eq!(Measure::Cosine.to_string(), "cosine");
        assert_eq!(Measure::Jaccard.to_string(), "jaccard");
    }

    #[test]
    fn default_params_fill_each_kinds_bits() {
        let seed = 3;
        let lanes32 = HashFamily::MixMultiplyShift32;
        assert_eq!(
            default_params(SketchKind::MinHash, 64, None, seed).unwrap(),
            SketchParams::minhash(64, 32, seed).unwrap().with_family(lanes32).unwrap()
        );
        assert_eq!(
            default_params(SketchKind::MinHash, 64, Some(64), seed).unwrap(),
            SketchParams::minhash(64, 64, seed).unwrap()
        );
        assert_eq!(
            default_params(SketchKind::BBitMinHash, 64, None, seed).unwrap(),
            SketchParams::bbit(64, 8, seed).unwrap().with_family(lanes32).unwrap()
        );
        assert_eq!(default_params(SketchKind::Oph, 64, None, seed).unwrap(), SketchParams::oph(64, 8, seed).unwrap());
        assert_eq!(
            default_params(SketchKind::SimHash, 64, None, seed).unwrap(),
            SketchParams::simhash(64, seed).unwrap()
        );
        assert!(default_params(SketchKind::MinHash, 64, Some(7), seed).is_err());
    }

    #[test]
    fn default_configs() {
        let text = text_config().unwrap();
        assert_eq!(text.params, SketchParams::oph(DEFAULT_TEXT_BINS, DEFAULT_TEXT_BITS, DEFAULT_SEED).unwrap());
        assert_eq!(text.tokenizer, Tokenizer::default());
        assert_eq!(text.index, crate::IndexConfig::None);
        assert!(!text.exact_shingles);
        assert_eq!(text_config_for(0.7).unwrap().index, crate::IndexConfig::lsh(0.7));
        assert!(text_config_for(1.5).is_err());
        assert_eq!(fingerprint_config().unwrap().params, SketchParams::simhash(64, DEFAULT_SEED).unwrap());
    }

    #[test]
    fn content_sketches_as_the_collection_does() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("r.sketchdb")).unwrap();
        let docs = db.create_collection("docs", text_config().unwrap()).unwrap();
        let text = "one two three four five six seven";
        docs.insert_text("a", text).unwrap();
        assert_eq!(Content::Text(text).sketch(&docs).unwrap(), docs.sketch_of("a").unwrap());
        let tokens = [5u64, 9, 9, 1];
        assert_eq!(Content::Tokens(&tokens).sketch(&docs).unwrap(), docs.sketcher().sketch_multiset(&tokens).unwrap());
        assert!(Content::Fingerprint(1).sketch(&docs).is_err());
        let fps = db.create_collection("fp", fingerprint_config().unwrap()).unwrap();
        let params = *fps.params();
        assert_eq!(
            Content::Fingerprint(42).sketch(&fps).unwrap(),
            Sketch::SimHash(SimHash::from_parts(params, 42).unwrap())
        );
        assert!(Content::Fingerprint(1 << 64).sketch(&fps).is_err());
    }

    #[test]
    fn keys_are_one_to_max_bytes() {
        assert_eq!(check_key(b""), Err(KeyError::Empty));
        assert_eq!(check_key(b"k"), Ok(()));
        assert_eq!(check_key(&vec![0u8; MAX_KEY_LEN]), Ok(()));
        let err = check_key(&vec![0u8; MAX_KEY_LEN + 1]).unwrap_err();
        assert_eq!(err, KeyError::TooLong { len: MAX_KEY_LEN + 1, max: MAX_KEY_LEN });
        assert_eq!(
            err.to_string(),
            format!("key of {} bytes is longer than the {MAX_KEY_LEN}-byte limit", MAX_KEY_LEN + 1)
        );
    }
}
