//! Collection configuration: sketch parameters, tokenizer and index settings.

use crate::codec::envelope::{from_postcard, to_postcard};
use crate::codec::wire::{IndexConfigWire, SettingsWire};
use crate::error::Error;
use crate::sketch::params::SketchParams;
use crate::sketch::recipe::Recipe;
use crate::sketch::tokenize::Tokenizer;
use crate::storage::StorageError;

/// Which index a collection maintains besides its columnar pages.
///
/// ```
/// use sketchdb::{CollectionConfig, IndexConfig, SketchParams};
///
/// // SimHash tables exact for every fingerprint within 3 bits:
/// CollectionConfig::new(SketchParams::simhash(64, 1)?).with_index(IndexConfig::simhash_tables(3)).validate()?;
/// // LSH tuned for Jaccard 0.7, with a banding of 16 bands of 8 rows:
/// let lsh = IndexConfig::Lsh { threshold: 0.7, bands: Some(16), rows: Some(8) };
/// CollectionConfig::new(SketchParams::minhash(128, 64, 1)?).with_index(lsh).validate()?;
/// # Ok::<(), sketchdb::Error>(())
/// ```
///
/// Persisted as the codec's `IndexConfigWire` (inside the collection definition's settings):
/// variants may only be appended there, never reordered. A build that meets a variant it
/// does not know refuses the collection with a typed error rather than guessing.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub enum IndexConfig {
    /// No index: queries scan the columnar pages.
    #[default]
    None,
    /// SimHash permuted tables (Manku, Jain, Das Sarma) that find every fingerprint within
    /// Hamming distance `radius` exactly. The table design (blocks, tables, prefix and bucket
    /// widths) is chosen from the collection's size when it is created or rebuilt
    /// ([`crate::Collection::rebuild_index`]) and recorded in the file. SimHash collections
    /// only.
    SimhashTables {
        /// The radius k every probe is exact for (default 3).
        radius: u32,
    },
    /// LSH banding buckets over MinHash, b-bit MinHash or densified OPH signatures, tuned for
    /// a Jaccard `threshold`. Without `bands` and `rows` the banding is chosen for recall:
    /// the (b, r) with b * r <= the signature's slots minimising `0.1 * FP + 0.9 * FN`, the
    /// weighted false-positive and false-negative areas of the candidate curve at the
    /// threshold (candidates are always verified by the estimator, so a false positive only
    /// costs time while a false negative loses an answer; `optimal_lsh_params`'s own default
    /// stays 0.5 / 0.5). On a collection that keeps exact shingles
    /// ([`CollectionConfig::exact_shingles`]) the weights are `0.005 * FP + 0.995 * FN`
    /// ([`crate::lsh::BandingPurpose::ExactRecall`]): exact scoring makes precision 1 whatever
    /// the candidates, so the banding is tuned for candidate recall. With only one given,
    /// the other is the most the signature allows.
    /// The band-key hash (XXH3-64, versioned), its seed and the bucket grouping (chosen from
    /// the row count at creation or [`crate::Collection::rebuild_index`]) are recorded in the
    /// file.
    Lsh {
        /// The similarity threshold the banding is tuned for, in (0, 1).
        threshold: f64,
        /// Bands b.
        bands: Option<u32>,
        /// Rows per band r (b * r <= the signature's slots).
        rows: Option<u32>,
    },
}

impl PartialEq for IndexConfig {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (IndexConfig::None, IndexConfig::None) => true,
            (IndexConfig::SimhashTables { radius: a }, IndexConfig::SimhashTables { radius: b }) => a == b,
            (
                IndexConfig::Lsh { threshold: t1, bands: b1, rows: r1 },
                IndexConfig::Lsh { threshold: t2, bands: b2, rows: r2 },
            ) => t1.to_bits() == t2.to_bits() && b1 == b2 && r1 == r2,
            _ => false,
        }
    }
}

impl Eq for IndexConfig {}

impl std::hash::Hash for IndexConfig {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            IndexConfig::None => {}
            IndexConfig::SimhashTables { radius } => radius.hash(state),
            IndexConfig::Lsh { threshold, bands, rows } => {
                threshold.to_bits().hash(state);
                bands.hash(state);
                rows.hash(state);
            }
        }
    }
}

impl IndexConfig {
    /// SimHash tables of radius `radius`.
    pub fn simhash_tables(radius: u32) -> Self {
        IndexConfig::SimhashTables { radius }
    }

    /// LSH bands for `threshold` with the optimised banding.
    pub fn lsh(threshold: f64) -> Self {
        IndexConfig::Lsh { threshold, bands: None, rows: None }
    }

    /// The index to build on a collection that keeps exact shingles (`exact_shingles`) or
    /// not: that decides an LSH banding's rule ([`crate::lsh::BandingPurpose`]).
    pub(crate) fn request(&self, exact_shingles: bool) -> Option<crate::index::IndexRequest> {
        use crate::index::{BandingPurpose, IndexRequest};
        match *self {
            IndexConfig::None => None,
            IndexConfig::SimhashTables { radius } => Some(IndexRequest::Simhash { radius }),
            IndexConfig::Lsh { threshold, bands, rows } => Some(IndexRequest::Lsh {
                threshold,
                bands,
                rows,
                purpose: BandingPurpose::for_collection(exact_shingles),
            }),
        }
    }
}

/// How a collection is configured: fixed when it is created.
///
/// ```
/// use sketchdb::{CollectionConfig, IndexConfig, SketchParams, Tokenizer};
///
/// let config = CollectionConfig::new(SketchParams::minhash(128, 32, 42)?)
///     .with_tokenizer(Tokenizer::char_ngrams(4, 0)?)
///     .with_index(IndexConfig::lsh(0.8));
/// config.validate()?;
/// assert_eq!(config.index, IndexConfig::lsh(0.8));
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectionConfig {
    /// The sketch kind and parameters every record has.
    pub params: SketchParams,
    /// How `insert_text` cuts text into tokens.
    pub tokenizer: Tokenizer,
    /// The index settings.
    pub index: IndexConfig,
    /// Keep each record's exact shingle set (its distinct token hashes) beside its sketch, so
    /// that threshold, top-k and dedup questions asked from stored records or from text
    /// re-rank their candidates by exact Jaccard ([`crate::Hit::exact`]). Costs about 7.2
    /// bytes per distinct token; records must then be written from text or tokens.
    /// Recorded in the shingle table, not in the settings; fixed at creation.
    pub exact_shingles: bool,
}

impl CollectionConfig {
    /// A configuration with `params`, the default tokenizer and no index.
    pub fn new(params: SketchParams) -> Self {
        CollectionConfig { params, tokenizer: Tokenizer::default(), index: IndexConfig::None, exact_shingles: false }
    }

    /// With or without exact shingle sets ([`CollectionConfig::exact_shingles`]).
    ///
    /// ```
    /// use sketchdb::{CollectionConfig, Database, Query, QueryKind, QueryOptions, SketchParams};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("x.sketchdb"))?;
    /// let config = CollectionConfig::new(SketchParams::bbit(512, 8, 1)?).with_exact_shingles(true);
    /// let docs = db.create_collection("docs", config)?;
    /// docs.insert_text("a", "one two three four five six seven eight nine ten")?;
    /// docs.insert_text("b", "one two three four five six seven eight nine eleven")?;
    /// let r = docs.query_key("a", QueryKind::Threshold(0.5), QueryOptions::default())?;
    /// let b = r.hits.iter().find(|h| h.key == b"b").unwrap();
    /// assert_eq!(b.exact, Some(5.0 / 7.0)); // 5 of 7 distinct 5-word shingles
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn with_exact_shingles(mut self, on: bool) -> Self {
        self.exact_shingles = on;
        self
    }

    /// With another tokenizer.
    pub fn with_tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// With a text recipe: its tokenizer, and for a compatibility recipe its hash family
    /// too (MinHash, 32-bit, the reference's seed; the permutation count stays when `params`
    /// already has that family, else it is the reference's default). Every later insert and
    /// query of text cuts it with this recipe: the collection stores it.
    ///
    /// ```
    /// use sketchdb::{CollectionConfig, HashFamily, Recipe, SketchParams};
    ///
    /// let p = SketchParams::oph(256, 16, 9)?;
    /// let words = CollectionConfig::new(p).with_recipe(Recipe::preset("words-5")?);
    /// assert_eq!(words.params, p); // a native recipe keeps the sketch
    /// assert_eq!(words.recipe().name(), "words-5");
    /// let td = CollectionConfig::new(SketchParams::compat(HashFamily::TextDedup, 64, 42)?)
    ///     .with_recipe(Recipe::preset("text-dedup")?);
    /// assert_eq!(td.params.size(), 64); // the family matched: k kept
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn with_recipe(mut self, recipe: Recipe) -> Self {
        self.tokenizer = recipe.tokenizer();
        if recipe.family().is_compat() {
            let k = (self.params.family() == recipe.family()).then(|| self.params.size());
            if let Ok(Some(params)) = recipe.compat_params(k) {
                self.params = params;
            }
        }
        self
    }

    /// The recipe of this configuration: the preset its tokenizer and hash family equal, else
    /// `custom`.
    pub fn recipe(&self) -> Recipe {
        Recipe::identify(self.tokenizer, self.params.family())
    }

    /// With other index settings.
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = index;
        self
    }

    /// Checks parameters and tokenizer.
    pub fn validate(&self) -> Result<(), Error> {
        self.params.validate()?;
        self.tokenizer.validate()?;
        if let Some(request) = self.index.request(self.exact_shingles) {
            crate::index::spec_for(request, &self.params, 0)?;
        }
        Ok(())
    }
}

impl From<IndexConfig> for IndexConfigWire {
    fn from(c: IndexConfig) -> Self {
        match c {
            IndexConfig::None => IndexConfigWire::None,
            IndexConfig::SimhashTables { radius } => IndexConfigWire::SimhashTables { radius },
            IndexConfig::Lsh { threshold, bands, rows } => IndexConfigWire::Lsh { threshold, bands, rows },
        }
    }
}

impl From<IndexConfigWire> for IndexConfig {
    fn from(w: IndexConfigWire) -> Self {
        match w {
            IndexConfigWire::None => IndexConfig::None,
            IndexConfigWire::SimhashTables { radius } => IndexConfig::SimhashTables { radius },
            IndexConfigWire::Lsh { threshold, bands, rows } => IndexConfig::Lsh { threshold, bands, rows },
        }
    }
}

/// The part of the configuration the storage layer keeps opaque (`CollectionDef::settings`).
fn settings_wire(config: &CollectionConfig) -> SettingsWire {
    SettingsWire { tokenizer: config.tokenizer.into(), index: config.index.into() }
}

const SETTINGS: &str = "collection settings";

pub(crate) fn encode_settings(config: &CollectionConfig) -> Result<Vec<u8>, Error> {
    to_postcard(SETTINGS, &settings_wire(config)).map_err(|source| {
        Error::Storage(StorageError::CorruptMeta {
            table: "sketchdb.collections",
            key: "(new)".into(),
            source: Box::new(source),
        })
    })
}

pub(crate) fn decode_settings(id: u32, params: SketchParams, bytes: &[u8]) -> Result<CollectionConfig, Error> {
    let corrupt = |source| StorageError::CorruptMeta {
        table: "sketchdb.collections",
        key: id.to_string(),
        source: Box::new(source),
    };
    let s: SettingsWire = from_postcard(SETTINGS, bytes).map_err(corrupt)?;
    let tokenizer = Tokenizer::from(s.tokenizer);
    tokenizer.validate().map_err(|e| corrupt(crate::codec::error::CodecError::Sketch { what: SETTINGS, source: e }))?;
    Ok(CollectionConfig { params, tokenizer, index: s.index.into(), exact_shingles: false })
}
