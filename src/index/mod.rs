//! Indexes. The pure half: key derivation ([`keys`]), LSH parameter choice
//! ([`lsh_params`]), exact SimHash radius probing over sorted runs ([`simhash_probe`]) and an
//! in-memory SimHash table index ([`simhash_mem`]). The persisted half, in redb tables next
//! to the records and maintained in the same write transactions: the index definition
//! ([`meta`]), SimHash tables ([`simhash_tables`], [`simhash_runs`], [`simhash_write`], [`simhash_read`]), size-tiered run merging ([`tiers`]), LSH buckets ([`lsh`], [`lsh_chunk`],
//! [`lsh_read`], [`lsh_delta`], [`lsh_dead`], [`lsh_write`], [`lsh_merge`], [`lsh_cache`]), the probes' cache ([`probe_cache`]), maintenance and rebuilds ([`maintain`]), planner statistics ([`stats`])
//! and verification ([`verify`], [`verify_listing`], [`verify_simhash`]).
#![forbid(unsafe_code)]

pub(crate) mod error;
pub(crate) mod fingerprint;
pub(crate) mod keys;
pub(crate) mod lsh;
pub(crate) mod lsh_cache;
mod lsh_chunk;
pub(crate) mod lsh_dead;
pub(crate) mod lsh_delta;
pub(crate) mod lsh_mem;
pub(crate) mod lsh_merge;
pub(crate) mod lsh_params;
pub(crate) mod lsh_read;
pub(crate) mod lsh_write;
pub(crate) mod maintain;
pub(crate) mod meta;
pub(crate) mod probe_cache;
mod radix;
pub(crate) mod simhash_adds;
pub(crate) mod simhash_mem;
pub(crate) mod simhash_probe;
pub(crate) mod simhash_read;
pub(crate) mod simhash_runs;
pub(crate) mod simhash_tables;
pub(crate) mod simhash_write;
pub(crate) mod stats;
mod tiers;
pub(crate) mod verify;
mod verify_listing;
mod verify_simhash;

#[cfg(test)]
mod packed_tests;
#[cfg(test)]
mod tests;
