//! Indexes: LSH banding ([`lsh`]) and SimHash permuted tables ([`simhash`]), each in its own
//! folder with its own byte format; and what they share: the persisted index definition
//! ([`defs`]), maintenance inside the records' write transactions ([`maintain`]), planner
//! statistics ([`stats`]), size tiers of runs ([`tiers`]), the probes' cache
//! ([`probe_cache`]), fingerprints ([`fingerprint`]), radix sorts ([`radix`]), verification
//! ([`verify`], [`problems`]) and the index error ([`error`]).
//!
//! This file is the face of the index: db, planner, admin and the testing hooks use the items
//! re-exported here, never a path inside. Layers inside, lowest first: `error`,
//! `fingerprint`, `radix`, `tiers`, `problems` -> `lsh::{params, band,
//! format}`, `simhash::{design, format}` -> `defs` -> `probe_cache` -> the rest of `lsh` and
//! `simhash` -> `banding` -> `maintain`, `stats`, `verify`.
#![forbid(unsafe_code)]

mod banding;
mod defs;
mod error;
mod fingerprint;
mod lsh;
mod maintain;
mod probe_cache;
mod problems;
mod radix;
mod simhash;
mod stats;
mod tiers;
mod verify;

#[cfg(test)]
mod packed_tests;

pub use error::IndexError;
pub use fingerprint::Fingerprint;
pub use lsh::{
    BAND_HASH_VERSION, BandKeyScheme, CollisionModel, KEY_BITS_V2, LshChoice, LshParams, LshRows, LshWeights, RowWidth,
    band_key_u32, band_key_u64, band_key_v3, candidate_probability, candidate_probability_with, expected_recall_above,
    false_negative_area, false_positive_area, lsh_rows, optimal_lsh_params,
};
pub use simhash::{
    DEFAULT_SIMHASH_RADIUS, MAX_SIMHASH_TABLES, ProbeScratch, RunView, SIMHASH_PROBE_COST, SimhashBlock, SimhashMatch,
    SimhashMemIndex, SimhashPair, SimhashTableDesign, brute_force as simhash_brute_force, filter_bucket,
    probe as simhash_probe, self_join as simhash_self_join,
};

pub use banding::{BandingPurpose, IndexBanding};
pub(crate) use banding::{EXACT_INDEX_LSH_WEIGHTS, INDEX_LSH_WEIGHTS};
pub(crate) use defs::{IndexDef, IndexSpec, SimhashRun};
pub(crate) use error::index_err;
pub(crate) use lsh::{
    BandedKeys, ChunkView, Groups, RunKey, append_split, for_each_lsh_pair, listed as lsh_listed,
    listed_in as lsh_listed_in, lsh_candidate_records, lsh_candidates, push_band_keys,
};
pub(crate) use maintain::{
    Banding, IndexMaintainer, IndexRequest, banding_model, create_index_in, lsh_scheme_for, rebuild, spec_for,
};
pub use maintain::{index_band_scheme, index_band_scheme_for};
pub(crate) use probe_cache::{DEFAULT_BUDGET as DEFAULT_PROBE_BUDGET, ProbeCache, ProbeCaches};
pub(crate) use simhash::{simhash_pairs, simhash_within, simhash_within_batch, simhash_within_records};
pub use stats::{LshStats, SimhashStats};
pub(crate) use stats::{index_stats, lsh_stats, query_index, simhash_stats};
pub(crate) use verify::verify_indexes;

/// The limit on SimHash run numbers a unit test imposes (0: none).
#[cfg(test)]
pub(crate) use simhash::TEST_RUN_IDS as SIMHASH_TEST_RUN_IDS;
