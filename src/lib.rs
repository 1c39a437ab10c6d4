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
mod sketch;
mod storage;
#[doc(hidden)]
pub mod testing;

pub use codec::error::CodecError;
pub use db::batch::Batch;
pub use db::collection::Collection;
pub use db::config::{CollectionConfig, IndexConfig};
pub use db::database::{Database, DatabaseBuilder};
pub use db::recipes;
pub use db::snapshot::{PageColumns, Record, Scan, Snapshot};
pub use db::stats::{CollectionStats, IndexSummary};
pub use error::{Error, Result};
pub use index::error::IndexError;
pub use index::fingerprint::Fingerprint;
pub use index::keys::band::{
    BAND_HASH_VERSION, BandKeyScheme, KEY_BITS_V2, LshRows, RowWidth, band_key_u32, band_key_u64, band_key_v3, lsh_rows,
};
pub use index::keys::simhash_design::{
    DEFAULT_SIMHASH_RADIUS, MAX_SIMHASH_TABLES, SIMHASH_PROBE_COST, SimhashBlock, SimhashTableDesign,
};
pub use index::lsh_params::{
    CollisionModel, LshChoice, LshParams, LshWeights, candidate_probability, candidate_probability_with,
    expected_recall_above, false_negative_area, false_positive_area, optimal_lsh_params,
};
#[doc(hidden)]
pub use index::simhash_mem::SimhashMemIndex;
#[doc(hidden)]
pub use index::simhash_probe::{
    ProbeScratch, RunView, SimhashMatch, SimhashPair, brute_force as simhash_brute_force, filter_bucket,
    probe as simhash_probe, self_join as simhash_self_join,
};
pub use planner::cost::{Alternative, Choice, CostModel, LshStats, SimhashStats, Stats as PlannerStats, choose};
pub use planner::dedup::choose_dedup;
pub use planner::dedup_exec::{Cluster, DedupResult};
pub use planner::error::QueryError;
pub use planner::exec::{Analyze, Hit};
pub use planner::explain::Explain;
pub use planner::plan::{Access, EarlyStop, Finish, Plan, PlanKind};
pub use planner::query::{Query, QueryKind, QueryOptions};
pub use planner::run::QueryResult;
pub use sketch::bbit::{BBitMinHash, li_koenig_constants};
pub use sketch::error::SketchError;
pub use sketch::estimate::{DEFAULT_LEVEL, Estimate, clopper_pearson, set_hamming_from_resemblance};
pub use sketch::hash::token_hash;
pub use sketch::minhash::MinHash;
pub use sketch::oph::{OphCounts, OphSketch, oph_estimate};
pub use sketch::params::{DEFAULT_SEED, HashFamily, MAX_SLOTS, SketchKind, SketchParams};
pub use sketch::simhash::SimHash;
pub use sketch::sketch::{Sketch, Sketcher};
pub use sketch::tokenize::{DEFAULT_SHINGLE_WORDS, DEFAULT_TOKEN_SEED, Tokenizer, TokenizerKind};
pub use sketch::tokens::TokenSet;
pub use storage::compact::CompactionSummary;
pub use storage::store::Durability;
pub use storage::verify::{Problem, VerifyReport};
pub use storage::writer::WriteSummary;
pub use storage::{MAX_COLLECTION_NAME_LEN, MAX_KEY_LEN, StorageError};
