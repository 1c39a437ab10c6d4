//! Dedup: the self-join of a collection into clusters, on one snapshot, planned by
//! [`super::dedup::choose_dedup`] and run here. The verified pairs are grouped by
//! [`super::cluster`].

use std::cell::{Cell, OnceCell, RefCell};
use std::time::Instant;

use crate::index::{
    BandedKeys, Banding, IndexError, LshParams, LshRows, SimhashMemIndex, SimhashTableDesign, for_each_lsh_pair,
    lsh_scheme_for, simhash_pairs,
};
use crate::sketch::error::defined;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::StorageError;
use crate::storage::reader::ReadSnapshot;

use super::cost::{Choice, CostModel, Stats};
use super::dedup::{choose_dedup, warm_banding};
use super::dedup_load::{Loaded, Sketches, load};
use super::error::QueryError;
use super::exact::candidate_floor;
use super::exec::{execute, validate_question};
use super::explain::{Explain, Scoring};
use super::plan::{Access, Finish, Plan};
use super::query::{Query, QueryKind, QueryOptions};
use super::run::{banding_shown, stats_in};
use crate::codec::shingles::exact_jaccard;

type Result<T, E = QueryError> = std::result::Result<T, E>;

pub use super::cluster::Clustering;

/// One group of near-duplicates, as the [`Clustering`] groups verified pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Row ids, ascending.
    pub rows: Vec<u64>,
    /// The keys, in the same order.
    pub keys: Vec<Vec<u8>>,
    /// With [`Clustering::Representative`], the row id of the cluster's representative:
    /// every other member is a verified pair with it. `None` for connected components.
    pub representative: Option<u64>,
}

/// The result of a dedup self-join.
#[derive(Clone, Debug, PartialEq)]
pub struct DedupResult {
    /// Clusters of two or more records, largest first (then by first row id).
    pub clusters: Vec<Cluster>,
    /// Verified pairs found (each unordered pair once).
    pub pairs: u64,
    /// The verified pairs as row ids, the smaller first, each once, in the order found.
    pub verified: Vec<(u64, u64)>,
    /// Candidate pairs verified (by estimate, then on a collection that keeps shingles by
    /// exact Jaccard where the estimate reaches the candidate floor): what the banding or
    /// the per-record plan proposed.
    pub candidates: u64,
    /// The plan of the self-join (none for an empty collection).
    pub plan: Option<Plan>,
    /// Why the planner chose it.
    pub reason: String,
    /// Whether pairs were kept by their estimate or by exact Jaccard (a collection that
    /// keeps shingles, threshold dedup).
    pub scoring: Scoring,
    /// Where the join's time went.
    pub stages: JoinStages,
}

/// Where a dedup's time went: wall-clock seconds of each stage, in the order they run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct JoinStages {
    /// Reading and decoding the live records.
    pub load: f64,
    /// Computing every signature's band keys (banding in memory; 0 for other plans).
    pub keys: f64,
    /// Finding and verifying the candidate pairs (sorting band keys, or probing an index).
    pub pairs: f64,
    /// Grouping the verified pairs into clusters and ordering them.
    pub cluster: f64,
}

/// The value in `cell`, made by `load` on first use.
fn cached(cell: &OnceCell<Vec<u64>>, load: impl FnOnce() -> Result<Vec<u64>>) -> Result<&[u64]> {
    if let Some(v) = cell.get() {
        return Ok(v);
    }
    let v = load()?;
    Ok(cell.get_or_init(|| v))
}

/// Refuses a dedup question that is not a threshold or Hamming radius, or does not fit a
/// collection of `info`'s sketch kind.
fn check_question(info: &CollectionInfo, kind: QueryKind, options: &QueryOptions) -> Result<()> {
    if matches!(kind, QueryKind::TopK(_)) {
        return Err(QueryError::InvalidParam {
            param: "dedup",
            value: "top-k".into(),
            expected: "a similarity threshold or a Hamming radius",
        });
    }
    validate_question(kind, options, info.def.params.kind())
}

/// The dedup plan for statistics `stats` of a collection whose first live record's sketch
/// is `first` (`choose_dedup` reads the question, options and statistics, never the probe
/// sketch).
fn choice(stats: &Stats, kind: QueryKind, options: QueryOptions, first: &Sketch, costs: &CostModel) -> Choice {
    choose_dedup(&Query { sketch: first.clone(), kind, options }, stats, costs)
}

/// An index-layer error of the collection `info`, naming it.
fn index_error(info: &CollectionInfo, source: IndexError) -> QueryError {
    IndexError::Collection { collection: info.name().to_string(), source: Box::new(source) }.into()
}

thread_local! {
    /// The densified bins of the OPH row being keyed on this thread (one buffer, reused).
    static DENSIFIED: RefCell<LshRows> = const { RefCell::new(LshRows::U32(Vec::new())) };
}

/// Calls `on_pair` for every pair of the records `rows` sharing a band of the banding
/// `banding` for `threshold` (each pair once) that `keep` accepts (by position).
fn join_banded(
    info: &CollectionInfo,
    rows: &Loaded,
    banding: LshParams,
    threshold: f64,
    keep: &impl Fn(usize, usize) -> Result<bool>,
    on_pair: &mut impl FnMut(u64, u64),
    key_seconds: &mut f64,
) -> Result<()> {
    let p = &info.def.params;
    let scheme = lsh_scheme_for(p.kind(), p.bits(), p.slots(), threshold, Banding::given(banding))
        .map_err(|e| index_error(info, e))?;
    let started = Instant::now();
    let keys = match &rows.sketches {
        Sketches::Each(sketches) => BandedKeys::new(&scheme, sketches, |s| s),
        // The densified bins of each column row, keyed as the sketch's own rows would be.
        Sketches::Oph(column) => BandedKeys::from_fn(&scheme, column.len(), |i| {
            DENSIFIED.with_borrow_mut(|rows| {
                if let LshRows::U32(densified) = rows {
                    column.densify_into(i, densified)?;
                }
                scheme.keys(rows)
            })
        }),
    }
    .map_err(|(i, e)| {
        let row = rows.rows[i];
        index_error(info, IndexError::inconsistent("signature", format!("row {row}: {e}")))
    })?;
    *key_seconds = started.elapsed().as_secs_f64();
    keys.for_each_pair(|i, j| -> Result<()> {
        if keep(i, j)? {
            on_pair(rows.rows[i], rows.rows[j]);
        }
        Ok(())
    })
}

/// Calls `on_pair` for every pair of the records `rows` (SimHash fingerprints) within
/// `radius`, each once, through permuted tables built in memory.
fn join_simhash_in_memory(
    info: &CollectionInfo,
    rows: &Loaded,
    radius: u32,
    on_pair: &mut impl FnMut(u64, u64),
) -> Result<()> {
    let f = u32::from(info.def.params.bits());
    let design = SimhashTableDesign::design(rows.len() as u64, radius, f).map_err(|e| index_error(info, e))?;
    // The plan is chosen for SimHash collections only, whose rows all hold fingerprints.
    let fp = |s: &Sketch| if let Sketch::SimHash(h) = s { h.value() } else { 0 };
    // SimHash collections hold their sketches one per record (columns are for OPH).
    let sketches: &[Sketch] = match &rows.sketches {
        Sketches::Each(sketches) => sketches,
        Sketches::Oph(_) => &[],
    };
    let records = || rows.rows.iter().copied().zip(sketches);
    let pairs = if f == 64 {
        let items: Vec<(u64, u64)> = records().map(|(r, s)| (r, fp(s) as u64)).collect();
        SimhashMemIndex::build(design, &items).and_then(|m| m.self_join())
    } else {
        let items: Vec<(u64, u128)> = records().map(|(r, s)| (r, fp(s))).collect();
        SimhashMemIndex::build(design, &items).and_then(|m| m.self_join())
    }
    .map_err(|e| index_error(info, e))?;
    pairs.into_iter().filter(|p| p.distance <= radius).for_each(|p| on_pair(p.a, p.b));
    Ok(())
}

/// EXPLAIN for a dedup of the collection `info` at `snap`: the self-join plan [`dedup`]
/// would run; `None` for a collection without records.
pub(crate) fn explain_dedup(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    kind: QueryKind,
    options: QueryOptions,
    costs: &CostModel,
) -> Result<Option<Explain>> {
    check_question(info, kind, &options)?;
    let mut from = 0;
    let sketch = loop {
        let Some((end, records)) = snap.next_page_records(info, from)? else { return Ok(None) };
        if let Some(r) = records.into_iter().next() {
            break r.sketch;
        }
        from = end;
    };
    let stats = stats_in(snap, info)?;
    let scoring = Scoring::of(info, kind);
    let choice = choice(&stats, kind, options, &sketch, costs);
    let banding = banding_shown(snap, info, &choice.plan, kind, &stats)?;
    Ok(Some(Explain { choice, analyze: None, scoring, banding }))
}

/// Groups the near-duplicates of the collection `info` at `snap` (see
/// `Collection::dedup` for the plans and their guarantees).
pub(crate) fn dedup(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    kind: QueryKind,
    options: QueryOptions,
    clustering: Clustering,
    costs: &CostModel,
) -> Result<DedupResult> {
    dedup_with(snap, info, kind, options, clustering, costs, || load(snap, info))
}

/// [`dedup`] of the records `load` reads (the collection's live records at `snap`, however
/// they are held).
pub(crate) fn dedup_with(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    kind: QueryKind,
    options: QueryOptions,
    clustering: Clustering,
    costs: &CostModel,
    load: impl FnOnce() -> Result<Loaded, StorageError> + Send,
) -> Result<DedupResult> {
    check_question(info, kind, &options)?;
    let started = Instant::now();
    let mut stages = JoinStages::default();
    let stats = stats_in(snap, info)?;
    let (rows, ()) = rayon::join(load, || {
        if let QueryKind::Threshold(t) = kind {
            warm_banding(t, &stats);
        }
    });
    let rows = rows?;
    stages.load = started.elapsed().as_secs_f64();
    if rows.len() == 0 {
        let scoring = Scoring::of(info, kind);
        return Ok(DedupResult {
            clusters: vec![],
            pairs: 0,
            verified: vec![],
            candidates: 0,
            plan: None,
            reason: "no records".into(),
            scoring,
            stages,
        });
    }
    let choice = choice(&stats, kind, options, rows.sketches.get(0)?.as_ref(), costs);
    let plan = choice.plan;
    // On a collection that keeps shingles, a threshold pair is a candidate from its estimate
    // (down to the candidate floor) and kept by its exact Jaccard.
    // Sets are read and decoded on first use: only rows of a pair whose estimate passes the
    // floor need one.
    let sets: Option<Vec<OnceCell<Vec<u64>>>> = match (Scoring::of(info, kind), kind) {
        (Scoring::Exact, QueryKind::Threshold(_)) => Some((0..rows.len()).map(|_| OnceCell::new()).collect()),
        _ => None,
    };
    let set = |i: usize| -> Result<Vec<u64>> { Ok(snap.shingles(info, rows.rows[i])?) };
    let exact_t = match kind {
        QueryKind::Threshold(t) if sets.is_some() => Some(t),
        _ => None,
    };
    let floor = exact_t.map(|t| candidate_floor(t, &info.def.params));
    let proposed = Cell::new(0u64);
    // At least `at`: a pair without an estimate (two sketches of empty sets) never is.
    let at_least = |i: usize, j: usize, at: f64| -> Result<bool> {
        Ok(defined(rows.sketches.similarity_value(i, j))?.is_some_and(|v| v >= at))
    };
    let keep = |i: usize, j: usize| -> Result<bool> {
        proposed.set(proposed.get() + 1);
        Ok(match (&sets, exact_t, floor) {
            (Some(sets), Some(t), Some(floor)) => {
                at_least(i, j, floor)? && exact_jaccard(cached(&sets[i], || set(i))?, cached(&sets[j], || set(j))?) >= t
            }
            _ => match plan.finish {
                Finish::Verify { threshold } => at_least(i, j, threshold)?,
                _ => true,
            },
        })
    };
    let probe_kind = match (kind, floor) {
        (QueryKind::Threshold(_), Some(floor)) => QueryKind::Threshold(floor),
        _ => kind,
    };
    let probe = |sketch: &Sketch| Query { sketch: sketch.clone(), kind: probe_kind, options };
    let mut edges: Vec<(u64, u64)> = Vec::new();
    let mut on_pair = |a: u64, b: u64| edges.push((a, b));
    let joined = Instant::now();
    match plan {
        // An LSH probe of every record becomes one pass over the buckets (the same
        // candidate pairs), each pair verified on the sketches already in memory.
        Plan { access: Access::LshProbe { bands }, finish: Finish::Verify { .. } } if stats.lsh.is_some() => {
            for_each_lsh_pair(snap, info, bands, |a, b| -> Result<()> {
                if let (Some(i), Some(j)) = (rows.index_of(a), rows.index_of(b))
                    && keep(i, j)?
                {
                    on_pair(a, b);
                }
                Ok(())
            })?;
        }
        // No LSH index: band the loaded signatures in memory with the banding an index
        // for this threshold would get on this collection (the planner chose it by the
        // collection's rule: for candidate recall when it keeps exact shingles), and verify
        // each candidate pair the same way.
        Plan { access: Access::LshBanding { bands, rows: per_band }, finish: Finish::Verify { threshold } } => {
            let banding = LshParams { bands, rows: per_band };
            join_banded(info, &rows, banding, threshold, &keep, &mut on_pair, &mut stages.keys)?;
        }
        // No SimHash tables covering the radius: build them in memory over the loaded
        // fingerprints and self-join them (exact, like the persisted tables).
        Plan { access: Access::SimhashInMemory { .. }, finish: Finish::Radius { radius } } => {
            join_simhash_in_memory(info, &rows, radius, &mut on_pair)?;
        }
        // SimHash tables answer the self-join directly: every pair within the radius.
        Plan { access: Access::SimhashProbe { .. }, finish: Finish::Radius { radius } }
            if stats.simhash.is_some_and(|s| radius <= s.radius) =>
        {
            for (a, b, _) in simhash_pairs(snap, info, radius)? {
                on_pair(a, b);
            }
        }
        _ => {
            let plan = match (plan.finish, floor) {
                (Finish::Verify { .. }, Some(floor)) => Plan { finish: Finish::Verify { threshold: floor }, ..plan },
                _ => plan,
            };
            // Each record's probe verifies its own candidates (every pair twice, once from
            // each side); `keep` then only scores exactly those that pass the floor.
            let mut probed = 0u64;
            for (i, row) in rows.rows.iter().enumerate() {
                let (hits, analyze) = execute(snap, info, &probe(rows.sketches.get(i)?.as_ref()), &plan, &stats)?;
                probed += analyze.candidates;
                for h in hits.iter().filter(|h| h.row_id > *row) {
                    let Some(j) = rows.index_of(h.row_id) else { continue };
                    if sets.is_none() || keep(i, j)? {
                        on_pair(*row, h.row_id);
                    }
                }
            }
            proposed.set(probed);
        }
    }
    stages.pairs = joined.elapsed().as_secs_f64() - stages.keys;
    let grouped = Instant::now();
    let key_of = |r: &u64| rows.index_of(*r).map(|i| rows.key(i).to_vec()).unwrap_or_default();
    let mut clusters: Vec<Cluster> = super::cluster::group(&edges, clustering)
        .into_iter()
        .map(|g| Cluster { keys: g.rows.iter().map(key_of).collect(), rows: g.rows, representative: g.representative })
        .collect();
    clusters.sort_by(|a, b| b.rows.len().cmp(&a.rows.len()).then(a.rows[0].cmp(&b.rows[0])));
    let pairs = edges.len() as u64;
    let scoring = if sets.is_some() { Scoring::Exact } else { Scoring::Estimated };
    let mut verified: Vec<(u64, u64)> = edges.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    verified.sort_unstable();
    let candidates = proposed.get();
    stages.cluster = grouped.elapsed().as_secs_f64();
    Ok(DedupResult { clusters, pairs, verified, candidates, plan: Some(plan), reason: choice.reason, scoring, stages })
}
