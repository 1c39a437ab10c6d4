//! Writing an LSH index as a short list of runs (a log-structured layout).
//!
//! A write transaction never rewrites what earlier transactions stored, except to merge:
//!
//! * rows added by the transaction become one new run (their entries sorted per band and
//!   written once; nothing is read);
//! * a removed row is listed in `sketchdb.lsh_dead` and counted in the one run whose row range
//!   holds it; its entries stay until a merge rewrites that run ([`super::dead`]);
//! * then runs merge by size tiers ([`crate::index::tiers`], sized by their entries): a span is
//!   merged into one run in one pass ([`super::merge`]: read once, merged group by
//!   group, written with a group width for the merged size). A merge drops the entries of the
//!   removed rows in its span; a run whose removed rows reach an eighth of its rows is then
//!   rewritten alone ([`super::dead::needs_rewrite`]).
//!
//! A run covers a row range `[first_row, end_row)`; ranges are disjoint and ascending (rows
//! are appended in id order and only neighbours merge), so a removal finds its run by
//! binary search.

use crate::index::error::IndexError;
use std::ops::Range;

use super::band::BandKeyScheme;
use super::dead::{DeadRows, DeadTable, listed_in, listing_err, needs_rewrite, unlist};
use super::table::{BucketTable, EncodedBand};
use crate::index::defs::{IndexDef, IndexSpec, LshRun};
use crate::index::error::inconsistent;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::IndexTxn;

/// Sets the definition's counters to the sums over its runs (a merged run's sum(s^2) counts
/// buckets the two runs shared as one, so the sum changes with merges, not only with rows).
pub(crate) fn recount(def: &mut IndexDef) {
    if let IndexSpec::Lsh { runs, .. } = &def.spec {
        def.entries = runs.iter().map(|r| r.entries).sum();
        def.sum_sq = runs.iter().map(|r| r.sum_sq).sum();
    }
}

/// The tables a merge writes: the buckets and the removed-row listing.
pub(crate) struct MergeTables<'a, 't> {
    pub buckets: &'a mut BucketTable<'t>,
    pub dead: &'a mut DeadTable<'t>,
}

/// Merges the runs `runs[span]` (neighbours) into run `next_run` (then incremented),
/// dropping the entries of the removed rows they hold and their listing; a merged run left
/// with no entries is dropped. `unwritten` as in [`super::merge::merge_runs`] (the
/// span's newest run never stored).
pub(crate) fn merge_into_one(
    tables: &mut MergeTables<'_, '_>,
    info: &CollectionInfo,
    scheme: BandKeyScheme,
    next_run: &mut u32,
    runs: &mut Vec<LshRun>,
    span: Range<usize>,
    unwritten: Option<Vec<EncodedBand>>,
) -> Result<(), IndexError> {
    let merging = &runs[span.clone()];
    let rows = merging.first().map_or(0, |r| r.first_row)..merging.last().map_or(0, |r| r.end_row);
    let expected: u64 = merging.iter().map(|r| r.dead).sum();
    let dead = if expected == 0 {
        DeadRows::none()
    } else {
        let listed = listed_in(&*tables.dead, info.def.id, rows.clone())?;
        if listed.len() as u64 != expected {
            let row = listed.first().copied().unwrap_or(rows.start);
            let detail = format!("{} rows listed where the runs count {expected}", listed.len());
            return Err(listing_err(info, row, &detail));
        }
        DeadRows::new(listed, rows.clone())
    };
    let merged = super::merge::merge_runs(tables.buckets, info, scheme, *next_run, merging, unwritten, &dead)?;
    *next_run = next_run.checked_add(1).ok_or_else(|| inconsistent(info, 0, "LSH run numbers exhausted"))?;
    if expected > 0 {
        unlist(tables.dead, info.def.id, rows)?;
    }
    if merged.entries == 0 {
        runs.drain(span);
    } else {
        runs.splice(span, [merged]);
    }
    Ok(())
}

/// Rewrites alone every run whose removed rows reach the share of [`needs_rewrite`].
pub(crate) fn rewrite_dead_runs(
    tables: &mut MergeTables<'_, '_>,
    info: &CollectionInfo,
    scheme: BandKeyScheme,
    next_run: &mut u32,
    runs: &mut Vec<LshRun>,
) -> Result<(), IndexError> {
    let mut i = 0;
    while i < runs.len() {
        if needs_rewrite(&runs[i], scheme.params.bands) {
            let before = runs.len();
            merge_into_one(tables, info, scheme, next_run, runs, i..i + 1, None)?;
            // An emptied run is gone; the next run now sits at `i`.
            if runs.len() < before {
                continue;
            }
        }
        i += 1;
    }
    Ok(())
}

/// Merges all runs of an LSH index into one, in one pass, without the removed rows'
/// entries (compaction): a probe then reads one bucket per band. Returns whether there was
/// anything to do (more than one run, or removed rows' entries); `def` is updated, not
/// stored.
pub(crate) fn merge_all(txn: &IndexTxn<'_>, info: &CollectionInfo, def: &mut IndexDef) -> Result<bool, IndexError> {
    let IndexSpec::Lsh { scheme, next_run, runs, .. } = &mut def.spec else { return Ok(false) };
    if runs.len() < 2 && runs.iter().all(|r| r.dead == 0) {
        return Ok(false);
    }
    let mut buckets = txn.lsh_runs()?;
    let mut dead = txn.lsh_dead()?;
    let all = 0..runs.len();
    let mut tables = MergeTables { buckets: &mut buckets, dead: &mut dead };
    merge_into_one(&mut tables, info, *scheme, next_run, runs, all, None)?;
    recount(def);
    Ok(true)
}

/// The neighbouring runs to merge next, if any ([`crate::index::tiers::merge_span`] over the
/// runs' entries).
pub(crate) fn merge_span(runs: &[LshRun]) -> Option<Range<usize>> {
    crate::index::tiers::merge_span(&runs.iter().map(|r| r.entries).collect::<Vec<_>>())
}
