//! Dedup: the self-join of a collection into clusters (connected components of verified
//! pairs), on one snapshot, planned by [`super::dedup::choose_dedup`] and run here.

use std::collections::HashMap;

use crate::index::{
    BandedKeys, IndexError, SimhashMemIndex, SimhashTableDesign, for_each_lsh_pair, lsh_scheme_for, simhash_pairs,
};
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, decode};

use super::cost::{Choice, CostModel, Stats};
use super::dedup::choose_dedup;
use super::error::QueryError;
use super::exec::{execute, validate_question};
use super::explain::Explain;
use super::plan::{Access, Finish, Plan};
use super::query::{Query, QueryKind, QueryOptions};
use super::run::stats_in;

type Result<T, E = QueryError> = std::result::Result<T, E>;

/// One group of near-duplicates: the connected component of verified pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Row ids, ascending.
    pub rows: Vec<u64>,
    /// The keys, in the same order.
    pub keys: Vec<Vec<u8>>,
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
    /// The plan of the self-join (none for an empty collection).
    pub plan: Option<Plan>,
    /// Why the planner chose it.
    pub reason: String,
}

/// A loaded live record: row id, key, sketch.
type Row = (u64, Vec<u8>, Sketch);

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

/// Calls `on_pair` for every pair of `rows` sharing a band of the banding `bands` x
/// `per_band` for `threshold` (each pair once) whose estimate reaches the threshold.
fn join_banded(
    info: &CollectionInfo,
    rows: &[Row],
    bands: u32,
    per_band: u32,
    threshold: f64,
    on_pair: &mut impl FnMut(u64, u64),
) -> Result<()> {
    let p = &info.def.params;
    let scheme = lsh_scheme_for(p.kind(), p.bits(), p.slots(), threshold, Some(bands), Some(per_band))
        .map_err(|e| index_error(info, e))?;
    let keys = BandedKeys::new(&scheme, rows, |r| &r.2).map_err(|(i, e)| {
        let row = rows[i].0;
        index_error(info, IndexError::inconsistent("signature", format!("row {row}: {e}")))
    })?;
    keys.for_each_pair(|i, j| -> Result<()> {
        if rows[i].2.similarity_value(&rows[j].2)? >= threshold {
            on_pair(rows[i].0, rows[j].0);
        }
        Ok(())
    })
}

/// Calls `on_pair` for every pair of `rows` (SimHash fingerprints) within `radius`, each
/// once, through permuted tables built in memory.
fn join_simhash_in_memory(
    info: &CollectionInfo,
    rows: &[Row],
    radius: u32,
    on_pair: &mut impl FnMut(u64, u64),
) -> Result<()> {
    let f = u32::from(info.def.params.bits());
    let design = SimhashTableDesign::design(rows.len() as u64, radius, f).map_err(|e| index_error(info, e))?;
    // The plan is chosen for SimHash collections only, whose rows all hold fingerprints.
    let fp = |s: &Sketch| if let Sketch::SimHash(h) = s { h.value() } else { 0 };
    let pairs = if f == 64 {
        let items: Vec<(u64, u64)> = rows.iter().map(|r| (r.0, fp(&r.2) as u64)).collect();
        SimhashMemIndex::build(design, &items).and_then(|m| m.self_join())
    } else {
        let items: Vec<(u64, u128)> = rows.iter().map(|r| (r.0, fp(&r.2))).collect();
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
    Ok(Some(Explain { choice: choice(&stats, kind, options, &sketch, costs), analyze: None }))
}

/// Groups the near-duplicates of the collection `info` at `snap` (see
/// `Collection::dedup` for the plans and their guarantees).
pub(crate) fn dedup(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    kind: QueryKind,
    options: QueryOptions,
    costs: &CostModel,
) -> Result<DedupResult> {
    check_question(info, kind, &options)?;
    let mut rows: Vec<Row> = Vec::new();
    snap.for_each_page(info, |first, view| {
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            let sketch = decode(info, view, first, i)?;
            rows.push((view.first_row() + i as u64, view.key(i).to_vec(), sketch));
        }
        Ok(true)
    })?;
    // Row ids ascend: pages come in row order, rows ascend within a page.
    let Some(first) = rows.first() else {
        return Ok(DedupResult {
            clusters: vec![],
            pairs: 0,
            verified: vec![],
            plan: None,
            reason: "no records".into(),
        });
    };
    let stats = stats_in(snap, info)?;
    let choice = choice(&stats, kind, options, &first.2, costs);
    let probe = |sketch: &Sketch| Query { sketch: sketch.clone(), kind, options };
    let plan = choice.plan;
    let mut parent: HashMap<u64, u64> = HashMap::new();
    let mut verified: Vec<(u64, u64)> = Vec::new();
    let mut on_pair = |a: u64, b: u64| {
        verified.push((a.min(b), a.max(b)));
        union(&mut parent, a, b);
    };
    match plan {
        // An LSH probe of every record becomes one pass over the buckets (the same
        // candidate pairs), each pair verified on the sketches already in memory.
        Plan { access: Access::LshProbe { bands }, finish: Finish::Verify { threshold } } if stats.lsh.is_some() => {
            let at = |row: u64| rows.binary_search_by_key(&row, |r| r.0).ok();
            for_each_lsh_pair(snap, info, bands, |a, b| -> Result<()> {
                if let (Some(i), Some(j)) = (at(a), at(b))
                    && rows[i].2.similarity_value(&rows[j].2)? >= threshold
                {
                    on_pair(a, b);
                }
                Ok(())
            })?;
        }
        // No LSH index: band the loaded signatures in memory with the banding an index
        // for this threshold would get, and verify each candidate pair the same way.
        Plan { access: Access::LshBanding { bands, rows: per_band }, finish: Finish::Verify { threshold } } => {
            join_banded(info, &rows, bands, per_band, threshold, &mut on_pair)?;
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
            for (row, _, sketch) in &rows {
                let (hits, _) = execute(snap, info, &probe(sketch), &plan, &stats)?;
                hits.iter().filter(|h| h.row_id > *row).for_each(|h| on_pair(*row, h.row_id));
            }
        }
    }
    let mut groups: HashMap<u64, Vec<u64>> = HashMap::new();
    let members: Vec<u64> = parent.keys().copied().collect();
    for r in members {
        let root = find(&mut parent, r);
        groups.entry(root).or_default().push(r);
    }
    let mut clusters: Vec<Cluster> = groups
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|mut g| {
            g.sort_unstable();
            let keys = g
                .iter()
                .map(|r| rows.binary_search_by_key(r, |x| x.0).map(|i| rows[i].1.clone()).unwrap_or_default())
                .collect();
            Cluster { rows: g, keys }
        })
        .collect();
    clusters.sort_by(|a, b| b.rows.len().cmp(&a.rows.len()).then(a.rows[0].cmp(&b.rows[0])));
    Ok(DedupResult { clusters, pairs: verified.len() as u64, verified, plan: Some(plan), reason: choice.reason })
}

fn find(parent: &mut HashMap<u64, u64>, x: u64) -> u64 {
    let mut root = x;
    while let Some(&p) = parent.get(&root) {
        if p == root {
            break;
        }
        root = p;
    }
    // Path compression.
    let mut cur = x;
    while cur != root {
        let next = parent.get(&cur).copied().unwrap_or(root);
        parent.insert(cur, root);
        cur = next;
    }
    root
}

fn union(parent: &mut HashMap<u64, u64>, a: u64, b: u64) {
    parent.entry(a).or_insert(a);
    parent.entry(b).or_insert(b);
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        // The smaller row id becomes the root: deterministic clusters.
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        parent.insert(hi, lo);
    }
}
