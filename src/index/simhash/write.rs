//! Writing SimHash tables as runs ([`super::runs`]).
//!
//! A write transaction never rewrites what earlier transactions stored, except to remove
//! rows and to merge:
//!
//! * rows added by the transaction become one new run: permuted into every table, sorted
//!   and appended through one cursor (nothing is read);
//! * a removed row's entries are taken out of the one run whose row range holds it (each
//!   touched bucket of that run read, filtered and rewritten); a run left with no rows is
//!   dropped;
//! * then runs merge by size tiers ([`crate::index::tiers::merge_span`]), so a write costs about
//!   its own rows times `log_4(N / B)`, where rewriting every touched bucket cost the whole
//!   index once batches touch most buckets.
//!
//! A run covers the rows from its `first_row` up to the next run's; ranges ascend with the
//! run list (rows are appended in id order and only neighbours merge), so a removal finds
//! its run by binary search.

use crate::index::error::IndexError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use rayon::prelude::*;

use super::adds::TableAdds;
use super::design::SimhashTableDesign;
use super::format::Geometry;
use super::format::{RUN_IDS, table_field};
use super::runs::merge_runs;
use super::tables::{BucketTable, BucketWriter, Out};
use crate::index::defs::{IndexDef, IndexSpec, SimhashRun, simhash_run_holding};
use crate::index::error::inconsistent;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::IndexTxn;

/// The SimHash table changes of one write transaction, applied at its end: the added
/// `(row, fingerprint)`s (permuted into every table at flush, the tables on all cores), the
/// removed rows, and per table their `(bucket, row)` entries, sorted and grouped by bucket
/// at flush (flat vectors: a map keyed by bucket costs a cache miss per entry).
pub(crate) struct SimhashDelta {
    design: SimhashTableDesign,
    geometry: Vec<Geometry>,
    added: Vec<(u64, u128)>,
    removed: Vec<u64>,
    removes: Vec<Vec<(u32, u64)>>,
}

impl SimhashDelta {
    pub(crate) fn new(design: SimhashTableDesign, bucket_bits: u32) -> SimhashDelta {
        let geometry: Vec<Geometry> =
            (0..design.table_count()).map(|t| Geometry::of(&design, bucket_bits, t)).collect();
        let n = geometry.len();
        SimhashDelta { design, geometry, added: Vec::new(), removed: Vec::new(), removes: vec![Vec::new(); n] }
    }

    /// Makes room for `rows` more added rows.
    pub(crate) fn reserve(&mut self, rows: usize) {
        self.added.reserve(rows);
    }

    /// Row `row` with fingerprint `fp` enters every table.
    pub(crate) fn add(&mut self, row: u64, fp: u128) {
        self.added.push((row, fp));
    }

    /// Row `row` with fingerprint `fp` leaves every table.
    pub(crate) fn remove(&mut self, row: u64, fp: u128) {
        for (t, g) in self.geometry.iter().enumerate() {
            let key = self.design.permute_u128(t, fp);
            self.removes[t].push((g.bucket(key), row));
        }
        self.removed.push(row);
    }

    /// Applies the transaction's changes to the stored runs (see the module notes) and
    /// updates `def`'s runs and row counter; `def` is not stored.
    pub(crate) fn flush(
        &mut self,
        txn: &IndexTxn<'_>,
        info: &CollectionInfo,
        def: &mut IndexDef,
    ) -> Result<(), IndexError> {
        let IndexSpec::Simhash { next_run, runs, .. } = &mut def.spec else {
            return Err(inconsistent(info, 0, "SimHash changes for an index that is not SimHash tables"));
        };
        let n = self.geometry.len();
        let mut added = std::mem::take(&mut self.added);
        let mut removed = std::mem::take(&mut self.removed);
        let mut removes = std::mem::replace(&mut self.removes, vec![Vec::new(); n]);
        // Rows added and removed by this transaction are never written: added rows come
        // after every stored run's.
        removed.sort_unstable();
        if let Some(first_new) = added.iter().map(|a| a.0).min() {
            let fresh = removed.len() - removed.partition_point(|&r| r < first_new);
            if fresh > 0 {
                let gone = removed.split_off(removed.len() - fresh);
                let before = added.len();
                added.retain(|a| gone.binary_search(&a.0).is_err());
                if before - added.len() != fresh {
                    return Err(inconsistent(info, gone[0], "a row removed twice from the SimHash tables"));
                }
                removes.iter_mut().for_each(|r| r.retain(|e| e.1 < first_new));
            }
        }
        let mut table = txn.simhash_buckets()?;
        if !removed.is_empty() {
            removes.par_iter_mut().for_each(|r| r.sort_unstable());
            remove_rows(&mut table, info, &self.geometry, runs, &removed, &removes)?;
        }
        if !added.is_empty() {
            let id = allocate_run(&mut table, info, &self.geometry, next_run, runs)?;
            let first_row = added.iter().map(|a| a.0).min().unwrap_or(0);
            if runs.last().is_some_and(|r| r.first_row >= first_row) {
                return Err(inconsistent(info, first_row, "added rows precede a stored SimHash run"));
            }
            write_run(&mut table, info, &self.design, &self.geometry, id, &added)?;
            runs.push(SimhashRun { id, first_row, rows: added.len() as u64 });
        }
        let span =
            |runs: &[SimhashRun]| crate::index::tiers::merge_span(&runs.iter().map(|r| r.rows).collect::<Vec<_>>());
        while span(runs).is_some() {
            // Renumbering (numbers used up) merges every run, so the span is taken after.
            let id = allocate_run(&mut table, info, &self.geometry, next_run, runs)?;
            let Some(span) = span(runs) else { break };
            let merged = merge_runs(&mut table, info, &self.geometry, &runs[span.clone()], id)?;
            runs.splice(span, [merged]);
        }
        def.entries = runs.iter().map(|r| r.rows).sum();
        Ok(())
    }
}

/// Takes each removed row (`removed`, sorted) out of the run holding it: per run, every
/// table's touched buckets (`removes[t]`, sorted `(bucket, row)`) are rewritten; a run left
/// with no rows is dropped.
fn remove_rows(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    geometry: &[Geometry],
    runs: &mut Vec<SimhashRun>,
    removed: &[u64],
    removes: &[Vec<(u32, u64)>],
) -> Result<(), IndexError> {
    let mut writer = BucketWriter::new(info);
    let none = TableAdds::Pairs(Vec::new());
    let mut i = 0;
    while i < removed.len() {
        let Some(at) = simhash_run_holding(runs, removed[i]) else {
            return Err(inconsistent(info, removed[i], "a removed row precedes every SimHash run"));
        };
        let end = runs.get(at + 1).map_or(u64::MAX, |r| r.first_row);
        let count = removed[i..].partition_point(|&r| r < end);
        i += count;
        let run = &mut runs[at];
        let (lo, hi) = (run.first_row, end);
        let mut out = Out::Table(&mut *table);
        let mut mine = Vec::new();
        for (t, g) in geometry.iter().enumerate() {
            mine.clear();
            mine.extend(removes[t].iter().filter(|e| (lo..hi).contains(&e.1)));
            writer.table(&mut out, table_field(run.id, t as u32), *g, &none, &mine)?;
        }
        run.rows = run.rows.checked_sub(count as u64).ok_or_else(|| {
            inconsistent(info, lo, format!("SimHash run {} holds fewer rows than {count} removed", run.id))
        })?;
    }
    runs.retain(|r| r.rows > 0);
    Ok(())
}

/// The number of a new run: `next_run`, then incremented. When the numbers are used up,
/// every stored run is first merged into run 0 and numbering restarts at 1.
fn allocate_run(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    geometry: &[Geometry],
    next_run: &mut u32,
    runs: &mut Vec<SimhashRun>,
) -> Result<u32, IndexError> {
    if *next_run >= run_ids() {
        if !runs.is_empty() {
            let merged = merge_runs(table, info, geometry, runs, 0)?;
            *runs = vec![merged];
        }
        *next_run = if runs.is_empty() { 0 } else { 1 };
    }
    let id = *next_run;
    *next_run += 1;
    Ok(id)
}

/// The run numbers in use ([`RUN_IDS`]; a unit test lowers it to reach renumbering).
fn run_ids() -> u32 {
    #[cfg(test)]
    {
        let limit = TEST_RUN_IDS.with(std::cell::Cell::get);
        if limit > 0 {
            return limit;
        }
    }
    RUN_IDS
}

#[cfg(test)]
thread_local! {
    pub(crate) static TEST_RUN_IDS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Merges every run into one (compaction). Returns whether there was anything to do (more
/// than one run); `def` is updated, not stored.
pub(crate) fn merge_all(txn: &IndexTxn<'_>, info: &CollectionInfo, def: &mut IndexDef) -> Result<bool, IndexError> {
    let IndexSpec::Simhash { design, bucket_bits, next_run, runs } = &mut def.spec else { return Ok(false) };
    if runs.len() < 2 {
        return Ok(false);
    }
    let geometry: Vec<Geometry> = (0..design.table_count()).map(|t| Geometry::of(design, *bucket_bits, t)).collect();
    let mut table = txn.simhash_buckets()?;
    let id = allocate_run(&mut table, info, &geometry, next_run, runs)?;
    if runs.len() > 1 {
        let merged = merge_runs(&mut table, info, &geometry, runs, id)?;
        *runs = vec![merged];
    }
    Ok(true)
}

/// Fewest added rows for which a new run's tables are sorted on worker threads (below
/// this, starting threads costs more than it saves).
const PARALLEL_MIN_ROWS: usize = 16_384;

/// Writes run `id` of the rows `added` (`(row, fingerprint)`): every table's buckets,
/// appended in key order through one cursor. Tables are permuted and sorted on worker
/// threads, in table order, while this thread writes each sorted table as it arrives:
/// sorting is about as long as writing, so the two overlap.
fn write_run(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    design: &SimhashTableDesign,
    geometry: &[Geometry],
    id: u32,
    added: &[(u64, u128)],
) -> Result<(), IndexError> {
    let n = geometry.len();
    let first = (info.def.id, table_field(id, 0), 0u32);
    let mut out = Out::Append(Box::new(table.appender(first, "position bucket cursor")?));
    let mut writer = BucketWriter::new(info);
    let field = |t: usize| table_field(id, t as u32);
    if added.len() < PARALLEL_MIN_ROWS {
        let mut scratch = Vec::new();
        for (t, g) in geometry.iter().enumerate() {
            let adds = TableAdds::build(added, &design.table_permutation(t), *g, &mut scratch);
            writer.table(&mut out, field(t), *g, &adds, &[])?;
        }
        return out.close();
    }
    let workers = rayon::current_num_threads().clamp(1, n.max(1));
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..workers {
            let (tx, next) = (tx.clone(), &next);
            s.spawn(move || {
                let mut scratch = Vec::new();
                loop {
                    let t = next.fetch_add(1, Ordering::Relaxed);
                    if t >= n {
                        break;
                    }
                    let adds = TableAdds::build(added, &design.table_permutation(t), geometry[t], &mut scratch);
                    if tx.send((t, adds)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut ready: Vec<Option<TableAdds>> = (0..n).map(|_| None).collect();
        for (t, g) in geometry.iter().enumerate() {
            let adds = loop {
                if let Some(adds) = ready[t].take() {
                    break adds;
                }
                let (u, adds) = rx.recv().map_err(|_| inconsistent(info, 0, "a SimHash table sorter stopped early"))?;
                ready[u] = Some(adds);
            };
            writer.table(&mut out, field(t), *g, &adds, &[])?;
        }
        out.close()
    })
}
