//! Removed rows whose entries an LSH run still holds: table `sketchdb.lsh_dead`.
//!
//! A removal does not rewrite the groups holding the row's entries (one per band, scattered
//! over the run's groups): it lists the row here and counts it in its run's `dead`. Readers
//! pass over such entries: a probe's candidates are read from their pages, which skip
//! removed rows, and the self-join and verification read this list. A merge that rewrites a
//! run drops the entries of the rows listed in its row range, and their listing; a run
//! whose removed rows reach `1 / DEAD_SHARE` of the rows it holds is rewritten on its own
//! ([`needs_rewrite`]).
//!
//! Invariants: a listed row lies in exactly one run's row range, is not live, and its page
//! still holds its record (tombstoned; only compaction purges records, and it rewrites the
//! runs in the same transaction); each run's `dead` equals the rows listed in its range.

use std::ops::Range;

use crate::index::defs::{LshRun, run_holding};
use crate::index::error::IndexError;
use crate::index::error::inconsistent;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::{RowsRead, RowsTable};
use crate::storage::reader::ReadSnapshot;
use crate::storage::tables::LSH_DEAD_NAME;

/// `sketchdb.lsh_dead` opened for writing.
pub(crate) type DeadTable<'t> = RowsTable<'t>;

/// A run is rewritten alone once its removed rows reach this fraction's inverse of the rows
/// it holds: probes then read at most about 1/7 more entries than the live rows', and a
/// rewrite (all of the run's bytes read and written once) is paid for by that many removals.
pub(crate) const DEAD_SHARE: u64 = 8;

/// Whether `run` should be rewritten to drop its removed rows' entries.
pub(crate) fn needs_rewrite(run: &LshRun, bands: u32) -> bool {
    run.dead > 0 && run.dead.saturating_mul(DEAD_SHARE) >= run.rows_held(bands)
}

/// Lists removed `rows` (stored before this transaction) in `sketchdb.lsh_dead` and counts
/// each in the run whose row range holds it; a row in no run, or listed already, is an error.
pub(crate) fn mark_removed(
    table: &mut DeadTable<'_>,
    info: &CollectionInfo,
    runs: &mut [LshRun],
    rows: &[u64],
) -> Result<(), IndexError> {
    let id = info.def.id;
    for &row in rows {
        let Some(i) = run_holding(runs, row) else {
            return Err(inconsistent(info, row, "a removed row lies in no LSH run"));
        };
        let run = &mut runs[i];
        if table.insert((id, row), "list removed lsh row")? {
            return Err(inconsistent(info, row, "a removed row is already listed in sketchdb.lsh_dead"));
        }
        run.dead += 1;
    }
    Ok(())
}

/// The rows of `rows` listed for collection `id`, ascending.
pub(crate) fn listed_in(table: &impl RowsRead, id: u32, rows: Range<u64>) -> Result<Vec<u64>, IndexError> {
    Ok(table.rows_in(id, rows, "read sketchdb.lsh_dead")?)
}

/// Every row listed for `info`'s collection as of a read transaction, ascending (none when
/// the file has no such table).
pub(crate) fn listed(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Vec<u64>, IndexError> {
    match snap.lsh_dead()? {
        Some(t) => listed_in(&t, info.def.id, 0..u64::MAX),
        None => Ok(Vec::new()),
    }
}

/// Removes the listing of collection `id`'s rows in `rows`.
pub(crate) fn unlist(table: &mut DeadTable<'_>, id: u32, rows: Range<u64>) -> Result<(), IndexError> {
    Ok(table.remove_rows(id, rows, "clear sketchdb.lsh_dead")?)
}

/// The error naming `sketchdb.lsh_dead` for a listing that breaks an invariant.
pub(crate) fn listing_err(info: &CollectionInfo, row: u64, detail: &str) -> IndexError {
    inconsistent(info, row, format!("{LSH_DEAD_NAME}: {detail}"))
}

/// Set membership for rows listed as removed, within a row range: a bitmap over the range
/// when it is at most [`BITMAP_ROWS`] wide (one bit per row id), else a sorted list.
pub(crate) struct DeadRows {
    base: u64,
    bits: Vec<u64>,
    sorted: Vec<u64>,
}

/// The widest range held as a bitmap (32 MB).
const BITMAP_ROWS: u64 = 1 << 28;

impl DeadRows {
    /// No rows.
    pub(crate) fn none() -> DeadRows {
        DeadRows { base: 0, bits: Vec::new(), sorted: Vec::new() }
    }

    /// `rows` (ascending, within `range`).
    pub(crate) fn new(rows: Vec<u64>, range: Range<u64>) -> DeadRows {
        let width = range.end.saturating_sub(range.start);
        if rows.is_empty() || width > BITMAP_ROWS {
            return DeadRows { base: range.start, bits: Vec::new(), sorted: rows };
        }
        let mut bits = vec![0u64; width.div_ceil(64) as usize];
        for r in rows.iter().filter(|&&r| range.contains(&r)) {
            let at = r - range.start;
            bits[(at / 64) as usize] |= 1 << (at % 64);
        }
        DeadRows { base: range.start, bits, sorted: Vec::new() }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bits.is_empty() && self.sorted.is_empty()
    }

    /// Whether `row` is listed.
    #[inline]
    pub(crate) fn contains(&self, row: u64) -> bool {
        if !self.bits.is_empty() {
            let Some(at) = row.checked_sub(self.base) else { return false };
            return self.bits.get((at / 64) as usize).is_some_and(|w| w >> (at % 64) & 1 == 1);
        }
        !self.sorted.is_empty() && self.sorted.binary_search(&row).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_matches_the_list_as_bitmap_and_as_sorted_rows() {
        let rows = vec![5u64, 6, 64, 127, 128, 1000];
        for range in [0..2000u64, 5..1001, 0..(BITMAP_ROWS + 10)] {
            let set = DeadRows::new(rows.clone(), range.clone());
            assert!(!set.is_empty());
            for r in 0..1100u64 {
                assert_eq!(set.contains(r), rows.contains(&r) && range.contains(&r), "row {r}, range {range:?}");
            }
            assert!(!set.contains(u64::MAX));
        }
        let none = DeadRows::none();
        assert!(none.is_empty() && !none.contains(0));
        assert!(DeadRows::new(Vec::new(), 0..10).is_empty());
    }

    #[test]
    fn a_run_is_rewritten_once_an_eighth_of_its_rows_are_removed() {
        let run = |dead| LshRun { id: 0, group_bits: 0, first_row: 0, end_row: 80, entries: 80 * 4, sum_sq: 0, dead };
        assert!(!needs_rewrite(&run(0), 4));
        assert!(!needs_rewrite(&run(9), 4));
        assert!(needs_rewrite(&run(10), 4));
        assert!(needs_rewrite(&run(80), 4));
    }
}
