//! Dedup: the self-join of a collection into clusters (connected components of verified
//! pairs), on one snapshot, planned by [`crate::choose_dedup`].

use std::collections::HashMap;

use super::collection::Collection;
use crate::error::Result;
use crate::index::{
    BandedKeys, IndexError, SimhashMemIndex, SimhashTableDesign, for_each_lsh_pair, lsh_scheme_for, simhash_pairs,
};
use crate::planner::cost::{Choice, Stats};
use crate::planner::dedup::choose_dedup;
use crate::planner::error::QueryError;
use crate::planner::exec::{execute, validate_question};
use crate::planner::explain::Explain;
use crate::planner::plan::{Access, Finish, Plan};
use crate::planner::query::{Query, QueryKind, QueryOptions};
use crate::sketch::sketch::Sketch;
use crate::storage::reader::decode;

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
    /// The plan of the self-join (none for an empty collection).
    pub plan: Option<Plan>,
    /// Why the planner chose it.
    pub reason: String,
}

/// A loaded live record: row id, key, sketch.
type Row = (u64, Vec<u8>, Sketch);

impl Collection {
    fn check_dedup_question(&self, kind: QueryKind, options: &QueryOptions) -> Result<()> {
        if matches!(kind, QueryKind::TopK(_)) {
            return Err(QueryError::InvalidParam {
                param: "dedup",
                value: "top-k".into(),
                expected: "a similarity threshold or a Hamming radius",
            }
            .into());
        }
        Ok(validate_question(kind, options, self.info().def.params.kind())?)
    }

    /// The dedup plan for statistics `stats` of a collection whose first live record's
    /// sketch is `first` (`choose_dedup` reads the question, options and statistics, never
    /// the probe sketch).
    fn dedup_choice(&self, stats: &Stats, kind: QueryKind, options: QueryOptions, first: &Sketch) -> Choice {
        choose_dedup(&Query { sketch: first.clone(), kind, options }, stats, &self.costs())
    }

    /// An index-layer error of this collection.
    fn index_error(&self, source: IndexError) -> IndexError {
        IndexError::Collection { collection: self.name().to_string(), source: Box::new(source) }
    }

    /// Calls `on_pair` for every pair of `rows` sharing a band of the banding `bands` x
    /// `per_band` for `threshold` (each pair once) whose estimate reaches the threshold.
    fn join_banded(
        &self,
        rows: &[Row],
        bands: u32,
        per_band: u32,
        threshold: f64,
        on_pair: &mut impl FnMut(u64, u64),
    ) -> Result<()> {
        let p = self.params();
        let scheme = lsh_scheme_for(p.kind(), p.bits(), p.slots(), threshold, Some(bands), Some(per_band))
            .map_err(|e| self.index_error(e))?;
        let keys = BandedKeys::new(&scheme, rows, |r| &r.2).map_err(|(i, e)| {
            let row = rows[i].0;
            self.index_error(IndexError::inconsistent("signature", format!("row {row}: {e}")))
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
    fn join_simhash_in_memory(&self, rows: &[Row], radius: u32, on_pair: &mut impl FnMut(u64, u64)) -> Result<()> {
        let f = u32::from(self.params().bits());
        let design = SimhashTableDesign::design(rows.len() as u64, radius, f).map_err(|e| self.index_error(e))?;
        // The plan is chosen for SimHash collections only, whose rows all hold fingerprints.
        let fp = |s: &Sketch| if let Sketch::SimHash(h) = s { h.value() } else { 0 };
        let pairs = if f == 64 {
            let items: Vec<(u64, u64)> = rows.iter().map(|r| (r.0, fp(&r.2) as u64)).collect();
            SimhashMemIndex::build(design, &items).and_then(|m| m.self_join())
        } else {
            let items: Vec<(u64, u128)> = rows.iter().map(|r| (r.0, fp(&r.2))).collect();
            SimhashMemIndex::build(design, &items).and_then(|m| m.self_join())
        }
        .map_err(|e| self.index_error(e))?;
        pairs.into_iter().filter(|p| p.distance <= radius).for_each(|p| on_pair(p.a, p.b));
        Ok(())
    }

    /// EXPLAIN for a dedup: the self-join plan [`Collection::dedup`] would run, why, and the
    /// alternatives with their estimated costs; `None` for a collection without records.
    pub fn explain_dedup(&self, kind: QueryKind, options: QueryOptions) -> Result<Option<Explain>> {
        self.check_dedup_question(kind, &options)?;
        let snap = self.store().snapshot()?;
        let mut from = 0;
        let sketch = loop {
            let Some((end, records)) = snap.next_page_records(self.info(), from)? else { return Ok(None) };
            if let Some(r) = records.into_iter().next() {
                break r.sketch;
            }
            from = end;
        };
        let stats = self.planner_stats_in(&snap)?;
        Ok(Some(Explain { choice: self.dedup_choice(&stats, kind, options, &sketch), analyze: None }))
    }

    /// Groups near-duplicates: every record is probed with `kind` (a similarity threshold, or
    /// a Hamming radius for SimHash); verified pairs are joined into connected components.
    ///
    /// The plan comes from [`crate::choose_dedup`]. Where an index can answer the whole
    /// self-join, it does, in one pass: SimHash tables covering the radius give every pair
    /// within it (exact), and an LSH index the planner may probe gives the same candidate
    /// pairs as probing every record. Without an LSH index, a threshold dedup that need not
    /// be exact bands the loaded signatures in memory ([`Access::LshBanding`], the banding an
    /// index for the threshold would get, eligible when its expected recall over [t, 1]
    /// reaches `options.recall_target`); a Hamming dedup without tables covering the radius
    /// builds them in memory ([`Access::SimhashInMemory`], exact). Otherwise every record
    /// runs the planner's plan (`options.exact` asks for that for set sketches). Every
    /// candidate pair is verified with the estimator. Memory holds every live record's
    /// sketch and key, plus `8 * bands` bytes per record when banding.
    pub fn dedup(&self, kind: QueryKind, options: QueryOptions) -> Result<DedupResult> {
        self.check_dedup_question(kind, &options)?;
        let snap = self.store().snapshot()?;
        let mut rows: Vec<Row> = Vec::new();
        snap.for_each_page(self.info(), |first, view| {
            for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
                let sketch = decode(self.info(), view, first, i)?;
                rows.push((view.first_row() + i as u64, view.key(i).to_vec(), sketch));
            }
            Ok(true)
        })?;
        // Row ids ascend: pages come in row order, rows ascend within a page.
        let Some(first) = rows.first() else {
            return Ok(DedupResult { clusters: vec![], pairs: 0, plan: None, reason: "no records".into() });
        };
        let stats = self.planner_stats_in(&snap)?;
        let choice = self.dedup_choice(&stats, kind, options, &first.2);
        let probe = |sketch: &Sketch| Query { sketch: sketch.clone(), kind, options };
        let plan = choice.plan;
        let mut parent: HashMap<u64, u64> = HashMap::new();
        let mut pairs = 0u64;
        let mut on_pair = |a: u64, b: u64| {
            pairs += 1;
            union(&mut parent, a, b);
        };
        match plan {
            // An LSH probe of every record becomes one pass over the buckets (the same
            // candidate pairs), each pair verified on the sketches already in memory.
            Plan { access: Access::LshProbe { bands }, finish: Finish::Verify { threshold } }
                if stats.lsh.is_some() =>
            {
                let at = |row: u64| rows.binary_search_by_key(&row, |r| r.0).ok();
                for_each_lsh_pair(&snap, self.info(), bands, |a, b| -> Result<()> {
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
                self.join_banded(&rows, bands, per_band, threshold, &mut on_pair)?;
            }
            // No SimHash tables covering the radius: build them in memory over the loaded
            // fingerprints and self-join them (exact, like the persisted tables).
            Plan { access: Access::SimhashInMemory { .. }, finish: Finish::Radius { radius } } => {
                self.join_simhash_in_memory(&rows, radius, &mut on_pair)?;
            }
            // SimHash tables answer the self-join directly: every pair within the radius.
            Plan { access: Access::SimhashProbe { .. }, finish: Finish::Radius { radius } }
                if stats.simhash.is_some_and(|s| radius <= s.radius) =>
            {
                for (a, b, _) in simhash_pairs(&snap, self.info(), radius)? {
                    on_pair(a, b);
                }
            }
            _ => {
                for (row, _, sketch) in &rows {
                    let (hits, _) = execute(&snap, self.info(), &probe(sketch), &plan, &stats)?;
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
        Ok(DedupResult { clusters, pairs, plan: Some(plan), reason: choice.reason })
    }
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
