//! The LSH banding index: band keys ([`band`]), the choice of a banding ([`params`]), the
//! chunk byte format ([`format`]), the persisted runs ([`table`], [`dead`], [`delta`],
//! [`write`], [`merge`]), probes ([`read`], [`cache`]), in-memory banding ([`mem`]) and
//! verification ([`verify`]). This file is the face the rest of `index` uses.
//!
//! Layers inside, lowest first: `params` -> `band` -> `format` -> `table` -> `dead` ->
//! `merge` -> `write` -> `delta`; `cache` -> `read`; `mem`; `verify`.

mod band;
mod cache;
mod dead;
mod delta;
mod format;
mod held;
mod mem;
mod merge;
mod params;
mod read;
mod table;
mod verify;
mod write;

pub use band::{
    BAND_HASH_VERSION, BandKeyScheme, KEY_BITS_V2, LshRows, RowWidth, band_key_u32, band_key_u64, band_key_v3, lsh_rows,
};
pub use params::{
    CollisionModel, LshChoice, LshParams, LshWeights, candidate_probability, candidate_probability_with,
    expected_recall_above, false_negative_area, false_positive_area, optimal_lsh_params,
};

pub(crate) use dead::{listed, listed_in};
pub(crate) use delta::LshDelta;
pub(crate) use format::{ChunkView, Groups, append_split};
pub(crate) use format::{MAX_GROUP_BITS, push_band_keys};
pub(crate) use mem::BandedKeys;
pub(crate) use read::{for_each_lsh_pair, lsh_candidate_records, lsh_candidates};
pub(crate) use table::RunKey;
pub(crate) use verify::{Removed, check_lsh};
pub(crate) use write::merge_all;

#[cfg(test)]
pub(crate) use format::encode_chunk;
