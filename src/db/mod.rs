//! The public face: [`Database`], [`Collection`], [`CollectionConfig`], batches, snapshots
//! and scans. Storage and sketch logic live below; this layer validates configuration,
//! builds sketches from tokens or text, and converts between public and internal types.
#![forbid(unsafe_code)]

pub(crate) mod batch;
pub(crate) mod calibrate;
pub(crate) mod collection;
pub(crate) mod config;
pub(crate) mod database;
pub(crate) mod many;
pub mod recipes;
pub(crate) mod snapshot;
pub(crate) mod stats;

#[cfg(test)]
mod dedup_tests;
#[cfg(test)]
mod load_tests;
#[cfg(test)]
mod warm_tests;
#[cfg(test)]
mod wire_tests;
