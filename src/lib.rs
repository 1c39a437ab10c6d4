//! # sketchdb
//!
//! An embedded, persistent database of similarity sketches: MinHash, b-bit MinHash, One
//! Permutation Hashing and SimHash, with estimators that come with confidence intervals.
//!
//! ```
//! use sketchdb::{SketchParams, Sketcher, Tokenizer};
//!
//! let params = SketchParams::minhash(128, 32, 42)?;
//! let sketcher = Sketcher::new(params)?;
//! let words = Tokenizer::shingles(2, 0)?;
//! let a = sketcher.sketch_text(&words, "the quick brown fox jumps over the lazy dog")?;
//! let b = sketcher.sketch_text(&words, "the quick brown fox jumped over the lazy dog")?;
//! let j = a.similarity(&b, 0.95)?;
//! assert!(j.lower <= j.value && j.value <= j.upper);
//! println!("Jaccard ~ {:.2} (95% CI {:.2}..{:.2})", j.value, j.lower, j.upper);
//! # Ok::<(), sketchdb::Error>(())
//! ```
//!
//! A database file with a collection, queried by a stored key:
//!
//! ```
//! use sketchdb::{CollectionConfig, Database, Query, SketchParams};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Database::create(dir.path().join("docs.sketchdb"))?;
//! let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::oph(128, 8, 42)?))?;
//! docs.insert_text("a", "the quick brown fox jumps over the lazy dog")?;
//! docs.insert_text("b", "the quick brown fox jumped over the lazy dog")?;
//! let probe = docs.sketch_of("a")?;
//! let hits = docs.query(&Query::threshold(probe, 0.3))?.hits;
//! assert_eq!(hits[0].key_str(), Some("a"));
//! for hit in hits {
//!     let e = hit.estimate;
//!     println!("{:?}: {:.2} [{:.2}, {:.2}]", hit.key_str(), e.value, e.lower, e.upper);
//! }
//! # Ok::<(), sketchdb::Error>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(clippy::host_endian_bytes, clippy::big_endian_bytes)]

pub mod admin;
mod codec;
mod db;
mod error;
mod index;
#[cfg(feature = "io")]
pub mod io;
mod planner;
#[allow(unsafe_code)]
mod simd;
mod sketch;
mod storage;
#[doc(hidden)]
pub mod testing;

// The root: what an application needs. Expert modules below hold the rest.
pub use codec::error::CodecError;
pub use db::batch::Batch;
pub use db::collection::Collection;
pub use db::config::{CollectionConfig, IndexConfig};
pub use db::database::{Database, DatabaseBuilder};
pub use db::many::{BatchAnswers, Probe, ProbeError};
pub use db::recipes;
pub use db::snapshot::{PageColumns, Record, Scan, Snapshot};
pub use db::stats::{CacheStats, CollectionStats, IndexSummary};
pub use error::{Error, Result};
pub use index::IndexError;
pub use planner::dedup_exec::{Cluster, Clustering, DedupResult, JoinStages};
pub use planner::error::QueryError;
pub use planner::exec::Hit;
pub use planner::explain::Explain;
pub use planner::query::{Query, QueryKind, QueryOptions};
pub use planner::run::QueryResult;
pub use sketch::bbit::BBitMinHash;
pub use sketch::error::SketchError;
pub use sketch::estimate::Estimate;
pub use sketch::minhash::MinHash;
pub use sketch::oph::OphSketch;
pub use sketch::params::{HashFamily, SketchKind, SketchParams};
pub use sketch::recipe::Recipe;
pub use sketch::simhash::SimHash;
pub use sketch::sketcher::{Sketch, Sketcher};
pub use sketch::tokenize::{Tokenizer, TokenizerKind};
pub use sketch::tokens::TokenSet;
pub use storage::store::Durability;
pub use storage::writer::WriteSummary;
pub use storage::{MAX_KEY_LEN, StorageError};

/// LSH banding for experts: choosing (bands, rows) for a threshold, and the collision
/// probabilities behind the choice.
///
/// ```
/// use sketchdb::lsh::{CollisionModel, LshWeights, candidate_probability, optimal_lsh_params};
///
/// let choice = optimal_lsh_params(128, 0.8, LshWeights::default(), CollisionModel::Exact)?;
/// let p = choice.params;
/// assert!(p.bands * p.rows <= 128);
/// // A pair well above the threshold is very likely a candidate; one far below rarely is.
/// assert!(candidate_probability(0.95, p) > 0.9);
/// assert!(candidate_probability(0.3, p) < 0.05);
/// # Ok::<(), sketchdb::Error>(())
/// ```
pub mod lsh {
    pub use crate::index::{BandKeyScheme, RowWidth, index_band_scheme};
    pub use crate::index::{BandingPurpose, IndexBanding, index_band_scheme_for};
    pub use crate::index::{
        CollisionModel, LshChoice, LshParams, LshWeights, candidate_probability, candidate_probability_with,
        expected_recall_above, false_negative_area, false_positive_area, optimal_lsh_params,
    };
}

/// Signatures as fixed-width bytes: one record's cells in column order at their stored widths,
/// little-endian, exactly as a collection stores them (the Arrow kernels of the Python package
/// emit these). [`signature::width`] is the collection's `record_width`.
///
/// ```
/// use sketchdb::{SketchParams, Sketcher, signature};
///
/// let params = SketchParams::minhash(64, 32, 7)?;
/// let s = Sketcher::new(params)?.sketch_multiset(&[1, 2, 3])?;
/// let bytes = signature::encode(&s);
/// assert_eq!(bytes.len(), signature::width(&params)); // 64 * 4 + 8 (the cardinality)
/// assert_eq!(signature::decode(&params, &bytes)?, s);
/// # Ok::<(), sketchdb::Error>(())
/// ```
pub mod signature {
    pub use crate::codec::signature::{decode, encode, encode_into, width};
}

/// SimHash table designs for experts: how a Hamming radius is covered by permuted tables.
///
/// ```
/// use sketchdb::simhash::{DEFAULT_SIMHASH_RADIUS, SimhashTableDesign};
///
/// // Tables that find every 64-bit fingerprint within distance 3, sized for 1M rows.
/// let design = SimhashTableDesign::design(1_000_000, DEFAULT_SIMHASH_RADIUS, 64)?;
/// assert_eq!(design.k(), DEFAULT_SIMHASH_RADIUS);
/// assert!(design.table_count() >= 1);
/// # Ok::<(), sketchdb::Error>(())
/// ```
pub mod simhash {
    pub use crate::index::Fingerprint;
    pub use crate::index::{DEFAULT_SIMHASH_RADIUS, MAX_SIMHASH_TABLES, SimhashBlock, SimhashTableDesign};
}

/// Plans for experts: what the planner can choose, its cost model and the statistics it
/// reads ([`crate::Collection::planner_stats`]); [`crate::Collection::explain`] shows the choice.
///
/// ```
/// use sketchdb::plan::{CostModel, PlanKind};
///
/// assert_eq!(PlanKind::from_name("full-scan"), Some(PlanKind::FullScan));
/// let costs = CostModel::default();
/// assert!(costs.decode_per_slot > 0.0);
/// ```
pub mod plan {
    pub use crate::index::{BandingPurpose, IndexBanding, LshStats, SimhashStats};
    pub use crate::planner::cost::{Alternative, Choice, CostModel, Stats, choose};
    pub use crate::planner::dedup::choose_dedup;
    pub use crate::planner::exec::Analyze;
    pub use crate::planner::explain::Scoring;
    pub use crate::planner::plan::{Access, EarlyStop, Finish, Plan, PlanKind};
}

/// Estimators for experts: confidence intervals, the OPH estimator, the b-bit correction and
/// the hash that turns tokens into set elements.
///
/// ```
/// use sketchdb::estimate::{DEFAULT_LEVEL, clopper_pearson};
///
/// // 100 matching slots of 128: the interval brackets 100/128.
/// let (lo, hi) = clopper_pearson(100.0, 128.0, DEFAULT_LEVEL);
/// assert!(lo < 100.0 / 128.0 && 100.0 / 128.0 < hi);
/// ```
pub mod estimate {
    pub use crate::sketch::bbit::li_koenig_constants;
    pub use crate::sketch::estimate::{DEFAULT_LEVEL, Estimate, clopper_pearson, set_hamming_from_resemblance};
    pub use crate::sketch::hash::token_hash;
    pub use crate::sketch::oph::{OphCounts, oph_estimate};
    pub use crate::sketch::params::MAX_SLOTS;
}
