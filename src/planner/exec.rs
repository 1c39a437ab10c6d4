//! `exec`: runs a chosen plan over one read snapshot. Every result is verified with the
//! estimator on the stored signature and scored with its interval; no access path returns
//! raw candidates.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::codec::page::PageView;
use crate::sketch::error::defined;
use crate::sketch::estimate::Estimate;
use crate::sketch::params::SketchKind;
use crate::sketch::simhash::SimHash;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, decode};

use super::cost::Stats;
use super::error::QueryError;

type Result<T, E = QueryError> = std::result::Result<T, E>;
use super::kernels::scan_page;
use super::plan::{Access, EarlyStop, Finish, Plan};
use super::query::{Query, QueryKind, QueryOptions};
use super::scan::{BinColumns, OphProbe, Pruning, ScanCounters};
use crate::index::{ProbeCache, lsh_candidate_records, simhash_within_records};

/// One verified result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The record's key.
    pub key: Vec<u8>,
    /// Its row id.
    pub row_id: u64,
    /// The similarity estimate with its interval (for Hamming queries: the exact distance as
    /// a degenerate interval).
    pub estimate: Estimate,
    /// The exact fingerprint distance, for SimHash collections.
    pub distance: Option<u32>,
    /// The exact Jaccard over the stored shingle sets, on a collection that keeps them
    /// ([`crate::CollectionConfig::exact_shingles`]) when the question's own set is known
    /// (asked from a stored key or from text); such hits are kept and ordered by it.
    pub exact: Option<f64>,
}

impl Hit {
    /// The key as UTF-8, if it is.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

/// What execution did, for EXPLAIN ANALYZE.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Analyze {
    /// Rows read from pages (live and deleted) or fetched by row id.
    pub rows_touched: u64,
    /// Candidates verified with the estimator.
    pub candidates: u64,
    /// OPH bin values compared (bin scans).
    pub bins_compared: u64,
    /// Rows dropped early by the bin scan's bounds.
    pub pruned: u64,
    /// Results returned.
    pub results: u64,
    /// Wall-clock time of execution.
    pub elapsed: Duration,
}

/// Checks that the question fits the collection before anything runs.
pub(crate) fn validate(query: &Query, kind: SketchKind) -> std::result::Result<(), QueryError> {
    validate_question(query.kind, &query.options, kind)
}

/// [`validate`] without a probe sketch: the question and its options against the
/// collection's sketch kind.
pub(crate) fn validate_question(
    question: QueryKind,
    o: &QueryOptions,
    kind: SketchKind,
) -> std::result::Result<(), QueryError> {
    let q = question.name();
    if !(o.level.is_finite() && o.level > 0.0 && o.level < 1.0) {
        return Err(QueryError::InvalidParam {
            param: "level",
            value: o.level.to_string(),
            expected: "a confidence level strictly between 0 and 1",
        });
    }
    if !(0.0..=1.0).contains(&o.recall_target) {
        return Err(QueryError::InvalidParam {
            param: "recall_target",
            value: o.recall_target.to_string(),
            expected: "a recall in [0, 1]",
        });
    }
    match question {
        QueryKind::Threshold(t) if !(0.0..=1.0).contains(&t) => Err(QueryError::InvalidParam {
            param: "threshold",
            value: t.to_string(),
            expected: "a similarity in [0, 1]",
        }),
        QueryKind::TopK(0) => {
            Err(QueryError::InvalidParam { param: "k", value: "0".into(), expected: "at least one result" })
        }
        QueryKind::Hamming(_) if kind != SketchKind::SimHash => Err(QueryError::Unsupported {
            query: q,
            kind: kind.name(),
            reason: "Hamming-radius queries need SimHash fingerprints",
        }),
        QueryKind::Hamming(r) if r > 128 => Err(QueryError::InvalidParam {
            param: "radius",
            value: r.to_string(),
            expected: "a radius of at most the fingerprint width",
        }),
        _ => Ok(()),
    }
}

impl BinColumns for PageView<'_> {
    fn rows(&self) -> usize {
        self.row_count()
    }
    fn is_deleted(&self, i: usize) -> bool {
        PageView::is_deleted(self, i)
    }
    fn bin_column(&self, j: usize) -> &[u8] {
        self.value_column(j)
    }
    fn empty_word(&self, w: usize, i: usize) -> u64 {
        self.word(w, i)
    }
    fn cardinality(&self, i: usize) -> u64 {
        PageView::cardinality(self, i).unwrap_or(0)
    }
}

/// Orders hits best first: higher estimate, then lower distance, then lower row id.
fn better(a: &Hit, b: &Hit) -> Ordering {
    match (a.distance, b.distance) {
        (Some(x), Some(y)) if x != y => return x.cmp(&y),
        _ => {}
    }
    b.estimate.value.total_cmp(&a.estimate.value).then(a.row_id.cmp(&b.row_id))
}

/// A max-heap entry whose top is the worst kept hit.
struct Worst(Hit);
impl PartialEq for Worst {
    fn eq(&self, o: &Self) -> bool {
        better(&self.0, &o.0) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Worst {
    fn cmp(&self, o: &Self) -> Ordering {
        better(&self.0, &o.0)
    }
}

/// Collects hits for the finish step.
struct Collector {
    finish: Finish,
    hits: Vec<Hit>,
    heap: BinaryHeap<Worst>,
}

impl Collector {
    fn new(finish: Finish) -> Self {
        Collector { finish, hits: Vec::new(), heap: BinaryHeap::new() }
    }

    /// The least estimate a new hit needs to be kept (top-k once full).
    fn bar(&self) -> Option<f64> {
        match self.finish {
            Finish::Verify { threshold } => Some(threshold),
            Finish::TopK { k } if self.heap.len() >= k => self.heap.peek().map(|w| w.0.estimate.value),
            _ => None,
        }
    }

    fn push(&mut self, hit: Hit) {
        match self.finish {
            Finish::Verify { threshold } => {
                if hit.estimate.value >= threshold {
                    self.hits.push(hit);
                }
            }
            Finish::Radius { radius } => {
                if hit.distance.is_some_and(|d| d <= radius) {
                    self.hits.push(hit);
                }
            }
            Finish::TopK { k } => {
                self.heap.push(Worst(hit));
                if self.heap.len() > k {
                    self.heap.pop();
                }
            }
        }
    }

    fn finish(mut self) -> Vec<Hit> {
        self.hits.extend(self.heap.into_iter().map(|w| w.0));
        self.hits.sort_by(better);
        self.hits
    }
}

fn simhash_value(s: &Sketch) -> Option<&SimHash> {
    match s {
        Sketch::SimHash(h) => Some(h),
        _ => None,
    }
}

/// The fingerprint stored in row i (one or two u64 word columns).
fn stored_fingerprint(view: &PageView<'_>, words: usize, i: usize) -> u128 {
    let lo = u128::from(view.value(0, i));
    if words == 2 { lo | (u128::from(view.value(1, i)) << 64) } else { lo }
}

/// A SimHash hit: the distance and the cosine estimate.
fn simhash_hit(query: &SimHash, key: Vec<u8>, row_id: u64, value: u128, level: f64, hamming: bool) -> Result<Hit> {
    let other = SimHash::from_parts(*query.params(), value)?;
    let d = query.hamming(&other)?;
    let estimate = if hamming {
        let h = f64::from(d);
        Estimate { value: h, lower: h, upper: h, level, samples: f64::from(query.params().bits()) }
    } else {
        query.cosine(&other, level)?
    };
    Ok(Hit { key, row_id, estimate, distance: Some(d), exact: None })
}

fn full_scan(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    out: &mut Collector,
    a: &mut Analyze,
) -> Result<()> {
    let level = query.options.level;
    let hamming = matches!(query.kind, QueryKind::Hamming(_));
    let sim = simhash_value(&query.sketch);
    let words = info.def.params.slots();
    let mut failed: Option<QueryError> = None;
    snap.for_each_page(info, |first, view| {
        a.rows_touched += view.row_count() as u64;
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            a.candidates += 1;
            let row_id = view.first_row() + i as u64;
            let hit = if let Some(q) = sim {
                let fp = stored_fingerprint(view, words, i);
                // Cheap reject before building the hit.
                if let Finish::Radius { radius } = out.finish
                    && (fp ^ q.value()).count_ones() > radius
                {
                    continue;
                }
                simhash_hit(q, view.key(i).to_vec(), row_id, fp, level, hamming)
            } else {
                let stored = decode(info, view, first, i)?;
                if let Some(t) = threshold_of(out.finish) {
                    match defined(query.sketch.similarity_value(&stored)) {
                        Ok(Some(v)) if v >= t => {}
                        Ok(_) => continue,
                        Err(e) => {
                            failed = Some(e.into());
                            return Ok(false);
                        }
                    }
                }
                match defined(query.sketch.similarity(&stored, level)) {
                    Ok(Some(estimate)) => {
                        Ok(Hit { key: view.key(i).to_vec(), row_id, estimate, distance: None, exact: None })
                    }
                    Ok(None) => continue,
                    Err(e) => Err(e.into()),
                }
            };
            match hit {
                Ok(h) => out.push(h),
                Err(e) => {
                    failed = Some(e);
                    return Ok(false);
                }
            }
        }
        Ok(true)
    })?;
    failed.map_or(Ok(()), Err)
}

fn oph_scan(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    early: EarlyStop,
    out: &mut Collector,
    a: &mut Analyze,
) -> Result<()> {
    query.sketch.params().check_compatible(&info.def.params)?;
    let probe = match &query.sketch {
        Sketch::Oph(q) => OphProbe::new(q),
        Sketch::MinHash(q) => OphProbe::for_minhash(q)
            .ok_or_else(|| unavailable("oph-bin-scan", "column scans compare 32-bit MinHash values only"))?,
        _ => return Err(unavailable("oph-bin-scan", "column scans need an OPH or 32-bit MinHash sketch")),
    };
    let level = query.options.level;
    let mut counters = ScanCounters::default();
    let mut bar = out.bar();
    let mut prune = Pruning::new(&probe, bar, early);
    let mut failed: Option<QueryError> = None;
    snap.for_each_page(info, |_, view| {
        // Top-k raises its bar as it fills; re-derive the pruning counts when it moves.
        let now = out.bar();
        if now != bar {
            bar = now;
            prune = Pruning::new(&probe, bar, if early == EarlyStop::Never { early } else { EarlyStop::ExactBound });
        }
        let mut page_hits = Vec::new();
        if let Err(e) = scan_page(&probe, view, &prune, bar, level, &mut counters, |i, e| page_hits.push((i, e))) {
            failed = Some(e.into());
            return Ok(false);
        }
        for (i, estimate) in page_hits {
            out.push(Hit {
                key: view.key(i).to_vec(),
                row_id: view.first_row() + i as u64,
                estimate,
                distance: None,
                exact: None,
            });
        }
        Ok(true)
    })?;
    a.rows_touched += counters.rows;
    a.candidates += counters.scored;
    a.bins_compared += counters.bins_compared;
    a.pruned += counters.pruned;
    failed.map_or(Ok(()), Err)
}

fn unavailable(plan: &'static str, reason: &str) -> QueryError {
    QueryError::PlanUnavailable { plan, reason: reason.into() }
}

/// LSH candidates from the first `bands` bands, each fetched and verified with the estimator.
#[allow(clippy::too_many_arguments)]
fn lsh_probe(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    cache: Option<&Arc<ProbeCache>>,
    query: &Query,
    bands: u32,
    stats: &Stats,
    out: &mut Collector,
    a: &mut Analyze,
) -> Result<()> {
    if stats.lsh.is_none() {
        return Err(unavailable("lsh-probe", "the collection has no LSH index"));
    }
    let (touched, records) = lsh_candidate_records(snap, info, cache, &query.sketch, bands)?;
    a.rows_touched += touched as u64;
    let threshold = threshold_of(out.finish);
    for rec in records {
        let row = rec.row;
        a.candidates += 1;
        // The point estimate decides (bit-identical to the estimate's value); the interval
        // is computed for qualifying candidates only.
        // A pair without an estimate (two sketches of empty sets) is no match.
        if let Some(t) = threshold
            && !defined(query.sketch.similarity_value(&rec.sketch))?.is_some_and(|v| v >= t)
        {
            continue;
        }
        let Some(estimate) = defined(query.sketch.similarity(&rec.sketch, query.options.level))? else { continue };
        out.push(Hit { key: rec.key.clone(), row_id: row, estimate, distance: None, exact: None });
    }
    Ok(())
}

/// Every fingerprint within the radius from the SimHash tables (exact), scored.
fn simhash_probe(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    cache: Option<&Arc<ProbeCache>>,
    query: &Query,
    stats: &Stats,
    out: &mut Collector,
    a: &mut Analyze,
) -> Result<()> {
    let Some(stats) = stats.simhash else {
        return Err(unavailable("simhash-probe", "the collection has no SimHash tables"));
    };
    let Some(q) = simhash_value(&query.sketch) else {
        return Err(unavailable("simhash-probe", "the query is not a SimHash fingerprint"));
    };
    let radius = match query.kind {
        QueryKind::Hamming(r) if r <= stats.radius => r,
        QueryKind::Hamming(r) => {
            return Err(unavailable(
                "simhash-probe",
                &format!("radius {r} exceeds the tables' radius {}", stats.radius),
            ));
        }
        _ => return Err(unavailable("simhash-probe", "the tables answer Hamming-radius queries only")),
    };
    let (matches, records) = simhash_within_records(snap, info, cache, q.value(), radius)?;
    a.rows_touched += matches as u64;
    for rec in records {
        let Some(stored) = simhash_value(&rec.sketch) else { continue };
        a.candidates += 1;
        out.push(simhash_hit(q, rec.key.clone(), rec.row, stored.value(), query.options.level, true)?);
    }
    Ok(())
}

/// The threshold a finish keeps estimates at or above, if it is a threshold.
fn threshold_of(finish: Finish) -> Option<f64> {
    match finish {
        Finish::Verify { threshold } => Some(threshold),
        _ => None,
    }
}

/// Runs `plan` for `query` on one snapshot; `stats` are the planner's statistics of that
/// same snapshot (which indexes exist).
pub(crate) fn execute(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    plan: &Plan,
    stats: &Stats,
) -> Result<(Vec<Hit>, Analyze)> {
    execute_in(snap, info, query, plan, stats, None)
}

/// [`execute`] with the probe cache of the collection's index as of `snap` when the caller
/// has it (read with the statistics; `None`: an index probe looks it up).
pub(crate) fn execute_in(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    plan: &Plan,
    stats: &Stats,
    cache: Option<&Arc<ProbeCache>>,
) -> Result<(Vec<Hit>, Analyze)> {
    validate(query, info.def.params.kind())?;
    query.sketch.params().check_compatible(&info.def.params)?;
    let start = Instant::now();
    let mut a = Analyze::default();
    let mut out = Collector::new(plan.finish);
    match plan.access {
        Access::FullScan => full_scan(snap, info, query, &mut out, &mut a)?,
        Access::OphBinScan { early } => oph_scan(snap, info, query, early, &mut out, &mut a)?,
        Access::LshProbe { bands } => lsh_probe(snap, info, cache, query, bands, stats, &mut out, &mut a)?,
        Access::SimhashProbe { .. } => simhash_probe(snap, info, cache, query, stats, &mut out, &mut a)?,
        Access::LshBanding { .. } | Access::SimhashInMemory { .. } => {
            return Err(QueryError::PlanUnavailable {
                plan: plan.access.label(),
                reason: "an in-memory self-join answers a dedup, not a single query".into(),
            });
        }
    }
    let hits = out.finish();
    a.results = hits.len() as u64;
    a.elapsed = start.elapsed();
    Ok((hits, a))
}
