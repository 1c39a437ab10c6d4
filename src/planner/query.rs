//! `Query`: what the user asked, independent of how it is answered.

use crate::sketch::estimate::DEFAULT_LEVEL;
use crate::sketch::sketcher::Sketch;

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
    /// ([`crate::lsh::expected_recall_above`]).
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
    /// A threshold query with default options: every record whose estimated similarity
    /// (Jaccard, or cosine for SimHash) is at least `t`, best first.
    ///
    /// ```
    /// use sketchdb::{CollectionConfig, Database, Query, SketchParams};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("t.sketchdb"))?;
    /// let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(128, 32, 7)?))?;
    /// docs.insert_text("a", "the quick brown fox jumps over the lazy dog")?;
    /// docs.insert_text("b", "an entirely different sentence about something else")?;
    /// let hits = docs.query(&Query::threshold(docs.sketch_of("a")?, 0.5))?.hits;
    /// assert_eq!(hits.len(), 1);
    /// assert_eq!(hits[0].key_str(), Some("a"));
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn threshold(sketch: Sketch, t: f64) -> Self {
        Query { sketch, kind: QueryKind::Threshold(t), options: QueryOptions::default() }
    }
    /// A top-k query with default options: the `k` most similar records, best first.
    ///
    /// ```
    /// use sketchdb::{CollectionConfig, Database, Query, SketchParams};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("k.sketchdb"))?;
    /// let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::oph(128, 16, 7)?))?;
    /// for (key, text) in [("a", "one two three four five six"), ("b", "one two three four five seven"), ("c", "eight nine ten")] {
    ///     docs.insert_text(key, text)?;
    /// }
    /// let hits = docs.query(&Query::top_k(docs.sketch_of("a")?, 2))?.hits;
    /// assert_eq!(hits.len(), 2);
    /// assert_eq!(hits[0].key_str(), Some("a"));
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn top_k(sketch: Sketch, k: usize) -> Self {
        Query { sketch, kind: QueryKind::TopK(k), options: QueryOptions::default() }
    }
    /// A Hamming-radius query with default options (SimHash collections): every fingerprint
    /// within `radius` bits, nearest first, each hit carrying its exact `distance`.
    ///
    /// ```
    /// use sketchdb::{CollectionConfig, Database, IndexConfig, Query, SketchParams};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("h.sketchdb"))?;
    /// let config = CollectionConfig::new(SketchParams::simhash(64, 7)?).with_index(IndexConfig::simhash_tables(3));
    /// let pages = db.create_collection("pages", config)?;
    /// pages.insert_text("a", "the quick brown fox jumps over the lazy dog")?;
    /// let hits = pages.query(&Query::hamming(pages.sketch_of("a")?, 3))?.hits;
    /// assert_eq!(hits[0].distance, Some(0));
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn hamming(sketch: Sketch, radius: u32) -> Self {
        Query { sketch, kind: QueryKind::Hamming(radius), options: QueryOptions::default() }
    }
    /// With other options.
    pub fn with_options(mut self, options: QueryOptions) -> Self {
        self.options = options;
        self
    }
}
