//! Indexes, the pure half: key derivation ([`keys`]), LSH parameter choice
//! ([`lsh_params`]), exact SimHash radius probing over sorted runs ([`simhash_probe`]) and an
//! in-memory SimHash table index ([`simhash_mem`]). Nothing here touches storage; the
//! persisted tables call into these.

pub(crate) mod error;
pub(crate) mod fingerprint;
pub(crate) mod keys;
pub(crate) mod lsh_params;
mod popcnt;
pub(crate) mod simhash_mem;
pub(crate) mod simhash_probe;

#[cfg(test)]
mod tests;
