//! The SimHash permuted-table index: the table design ([`design`]), the bucket byte format
//! ([`format`]), the persisted tables as runs ([`tables`], [`runs`], [`adds`], [`write`]),
//! exact radius probes over sorted runs ([`probe`]) and reads of the stored tables
//! ([`read`]) through the form warm probes hold buckets in ([`held`]), an in-memory table
//! index ([`mem`]) and verification ([`verify`]). This file is the face the rest of `index`
//! uses.
//!
//! Layers inside, lowest first: `design` -> `format` -> `probe` -> `mem`; `format` ->
//! `held`, `adds` -> `tables` -> `runs` -> `write`, `read`, `verify`.

mod adds;
mod design;
mod format;
mod held;
mod mem;
mod probe;
mod read;
mod runs;
mod tables;
mod verify;
mod write;

#[cfg(test)]
mod tests;

pub use design::{DEFAULT_SIMHASH_RADIUS, MAX_SIMHASH_TABLES, SIMHASH_PROBE_COST, SimhashBlock, SimhashTableDesign};
pub use mem::SimhashMemIndex;
pub use probe::{ProbeScratch, RunView, SimhashMatch, SimhashPair, brute_force, filter_bucket, probe, self_join};

pub(crate) use format::RUN_IDS;
pub(crate) use read::{simhash_pairs, simhash_within, simhash_within_batch, simhash_within_records};
pub(crate) use tables::bucket_bits_for;
pub(crate) use verify::check_simhash;
pub(crate) use write::{SimhashDelta, merge_all};

#[cfg(test)]
pub(crate) use format::{BucketView, Geometry, encode_bucket, encoded_len};
#[cfg(test)]
pub(crate) use held::{HeldView, held_of};
#[cfg(test)]
pub(crate) use write::TEST_RUN_IDS;
