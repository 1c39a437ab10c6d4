//! `Query`: what the user asked, independent of how it is answered.

use crate::sketch::estimate::DEFAULT_LEVEL;
use crate::sketch::sketch::Sketch;

use super::plan::PlanKind;

/// The question a query asks of a collection.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum QueryKind {
    /// Every record whose estimated similarity is >= the threshold (Jaccard for set sketches,
    /// cosine for SimHash).
    Threshold(f64),
    /// The k records with the highest estimated similarity (ties broken by row id).
    TopK(usize),
    /// Every record whose SimHash fingerprint is within this Hamming distance, inclusive.
    Hamming(u32),
}

impl QueryKind {
    /// A short name for EXPLAIN and errors.
    pub fn name(&self) -> &'static str {
        match self {
            QueryKind::Threshold(_) => "threshold",
            QueryKind::TopK(_) => "top-k",
            QueryKind::Hamming(_) => "hamming",
        }
    }
}

/// How a query may be answered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryOptions {
    /// The confidence level of every interval (and of probabilistic early termination).
    pub level: f64,
    /// Require an answer exact with respect to the stored sketches: no LSH candidates and no
    /// probabilistic early termination (exact bounds still prune).
    pub exact: bool,
    /// The least expected recall an approximate (LSH) plan must offer to be eligible: the
    /// banding's candidate probability averaged over similarities in `[threshold, 1]`
    /// ([`crate::expected_recall_above`]).
    pub recall_target: f64,
    /// Force an access path (for tests and experts); `choose` still reports the costs.
    pub force: Option<PlanKind>,
    /// Allow scans to stop counting a row early (exact bounds always; probabilistic ones
    /// unless `exact`). Off: every bin of every row is compared (for measurement).
    pub early_termination: bool,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions { level: DEFAULT_LEVEL, exact: false, recall_target: 0.95, force: None, early_termination: true }
    }
}

/// A query: the probe sketch, the question and the options.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The query's sketch, built with the collection's parameters.
    pub sketch: Sketch,
    /// What is asked.
    pub kind: QueryKind,
    /// How it may be answered.
    pub options: QueryOptions,
}

impl Query {
    /// A threshold query with default options.
    pub fn threshold(sketch: Sketch, t: f64) -> Self {
        Query { sketch, kind: QueryKind::Threshold(t), options: QueryOptions::default() }
    }
    /// A top-k query with default options.
    pub fn top_k(sketch: Sketch, k: usize) -> Self {
        Query { sketch, kind: QueryKind::TopK(k), options: QueryOptions::default() }
    }
    /// A Hamming-radius query with default options.
    pub fn hamming(sketch: Sketch, radius: u32) -> Self {
        Query { sketch, kind: QueryKind::Hamming(radius), options: QueryOptions::default() }
    }
    /// With other options.
    pub fn with_options(mut self, options: QueryOptions) -> Self {
        self.options = options;
        self
    }
}
