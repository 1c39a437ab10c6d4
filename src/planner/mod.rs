//! The query planner: `Query` (what is asked), `Plan` (how), a pure `choose` over collection
//! statistics and a measured cost model, `exec` that runs a plan, and EXPLAIN.
#![forbid(unsafe_code)]

pub(crate) mod cluster;
pub(crate) mod cost;
pub(crate) mod dedup;
pub(crate) mod dedup_exec;
pub(crate) mod dedup_load;
pub(crate) mod error;
pub(crate) mod exact;
pub(crate) mod exec;
pub(crate) mod explain;
mod kernels;
pub(crate) mod plan;
pub(crate) mod query;
pub(crate) mod run;
pub(crate) mod scan;

#[cfg(test)]
mod tests;
