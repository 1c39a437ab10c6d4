//! Page scans over runs of row ids: a collection's pages split by first row into disjoint
//! runs, each scanned on its own (with its own cursor on the snapshot's pages table), so that
//! the layers above can read and check several runs at once on threads of their own.
//!
//! Invariant: every page belongs to exactly one run of [`ReadSnapshot::page_runs`] (the run
//! holding its first row, its key in `sketchdb.pages`), and the runs ascend: scanning them in
//! order calls `f` with every page in row order, as [`ReadSnapshot::for_each_page`] does.

use std::ops::RangeInclusive;

use super::catalog::CollectionInfo;
use super::error::{StorageError, contain};
use super::reader::{ReadSnapshot, open};
use super::tables::PAGES;
use crate::codec::page::PageView;

impl ReadSnapshot {
    /// The first rows `0..next_row` of the collection (every page's first row lies in it)
    /// split into at most `runs` ascending, disjoint runs of equal length (the last one
    /// shorter); none for a collection that never had a row. `UnknownCollection` if it was
    /// dropped.
    pub(crate) fn page_runs(&self, info: &CollectionInfo, runs: u64) -> Result<Vec<RangeInclusive<u64>>, StorageError> {
        let next = self.state(info)?.next_row;
        let rows = next.div_ceil(runs.max(1)).max(1);
        Ok((0..next.div_ceil(rows)).map(|r| r * rows..=(r * rows).saturating_add(rows - 1).min(next - 1)).collect())
    }

    /// Calls `f` with every page of the collection whose first row lies in `firsts` (its first
    /// row and checked view, removed rows ORed in) in row order. `f` returns `false` to stop
    /// early. Reads nothing of the pages outside `firsts`, so runs of
    /// [`Self::page_runs`] may be scanned on several threads at once.
    pub(crate) fn for_each_page_in(
        &self,
        info: &CollectionInfo,
        firsts: RangeInclusive<u64>,
        mut f: impl FnMut(u64, &PageView<'_>) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        // redb panics are contained; a panic of `f` (the caller's code) is passed on.
        let mut caller_panic = None;
        let r = contain("scan", || {
            self.state(info)?;
            let Some(pages) = open(self.txn(), PAGES)? else { return Ok(()) };
            let dead = self.dead_tables()?;
            let id = info.def.id;
            let (from, to) = firsts.into_inner();
            if from > to {
                return Ok(());
            }
            for entry in pages.range((id, from)..=(id, to)).map_err(StorageError::backend("scan pages"))? {
                let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
                let first = k.value().1;
                let called = super::rules::with_page(&dead, info, first, v.value(), |view| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(first, view)))
                })?;
                match called {
                    Ok(go_on) => {
                        if !go_on? {
                            break;
                        }
                    }
                    Err(payload) => {
                        caller_panic = Some(payload);
                        break;
                    }
                }
            }
            Ok(())
        });
        if let Some(payload) = caller_panic {
            std::panic::resume_unwind(payload);
        }
        r
    }
}
