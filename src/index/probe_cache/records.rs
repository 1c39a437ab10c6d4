//! The probe cache's rows: the records of rows queries have scored ([`ProbeCache::records`])
//! and the rows of keys queries looked up ([`ProbeCache::row_of_key`]), kept within the
//! cache's budget beside its index values.

use std::sync::Arc;

use super::{ProbeCache, VALUE_OVERHEAD};
use crate::index::error::IndexError;
use crate::simd::{prefetch, prefetch_ref};
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, RowRecord};

impl ProbeCache {
    /// The records of `rows` (ascending) of `info`'s collection that are live in `snap`, in
    /// row order: those kept here, and the others read from their pages (each page checked),
    /// which are then kept within the budget, each counted as its key and record width. A
    /// row that is not live (a removed row whose entries the runs still hold) is kept as
    /// absent, counted as [`VALUE_OVERHEAD`], so a later probe does not look for its page.
    ///
    /// Sound because a row's record (key and sketch) never changes once written (an upsert
    /// or a compaction writes a new row id, from `next_row` up), and what keys this cache
    /// fixes the set of live rows (LSH: the definition bytes, a removal raising its run's
    /// `dead`; SimHash: `(next_row, live)`, see the module comment), so a record kept here,
    /// or its absence, is what the pages hold in every snapshot of this index version.
    pub(crate) fn records(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        rows: &[u64],
    ) -> Result<Vec<Arc<RowRecord>>, IndexError> {
        let width = info.spec.layout.record_width();
        let mut out = Vec::with_capacity(rows.len());
        {
            // Warm: every row kept, as its record or its absence. The records' lines are
            // asked for before any is cloned: a clone's locked increment waits for its line
            // and holds back every later load, so the misses would otherwise follow one
            // another. Then the keys' bytes, which the caller reads next.
            let kept = self.records.read();
            let mut all = true;
            for row in rows {
                match kept.get(row) {
                    Some(Some(rec)) => prefetch_ref::<RowRecord>(rec),
                    Some(None) => {}
                    None => {
                        all = false;
                        break;
                    }
                }
            }
            if all {
                out.extend(rows.iter().filter_map(|row| kept.get(row).cloned().flatten()));
                for rec in &out {
                    prefetch(&rec.key, 0);
                }
                return Ok(out);
            }
        }
        out.clear();
        // Each row: kept (`Some`: its record or its absence) or not (`None`).
        let known: Vec<Option<Option<Arc<RowRecord>>>> = {
            let kept = self.records.read();
            rows.iter().map(|row| kept.get(row).cloned()).collect()
        };
        let missing: Vec<u64> = rows.iter().zip(&known).filter(|(_, k)| k.is_none()).map(|(r, _)| *r).collect();
        let fresh: Vec<Arc<RowRecord>> = snap.get_rows(info, &missing)?.into_iter().map(Arc::new).collect();
        {
            let mut kept = self.records.write();
            let mut fresh = fresh.iter().peekable();
            for &row in &missing {
                let rec = fresh.next_if(|r| r.row == row).cloned();
                let len = rec.as_ref().map_or(0, |r| r.key.len() + width) + VALUE_OVERHEAD;
                if self.reserve(len) && kept.insert(row, rec).is_some() {
                    // Another probe kept it first.
                    self.release(len);
                }
            }
        }
        // Both in row order: the kept ones where found, the fresh ones in between.
        let mut fresh = fresh.into_iter().peekable();
        for (row, k) in rows.iter().zip(known) {
            match k {
                Some(Some(rec)) => out.push(rec),
                Some(None) => {}
                None => {
                    if let Some(rec) = fresh.next_if(|r| r.row == *row) {
                        out.push(rec);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The live row of `key` in every snapshot of this index version: kept from an earlier
    /// lookup, or `read` (the keys table's answer in the caller's snapshot) and kept within the
    /// budget, counted as the key's length and [`VALUE_OVERHEAD`].
    ///
    /// Sound for the reason [`Self::records`] is: live keys are unique, a row's key never
    /// changes, and what keys this cache fixes the set of live rows, so it fixes which row, if
    /// any, holds `key`.
    pub(crate) fn row_of_key<E>(
        &self,
        key: &[u8],
        read: impl FnOnce() -> Result<Option<u64>, E>,
    ) -> Result<Option<u64>, E> {
        if let Some(row) = self.key_rows.read().get(key) {
            return Ok(*row);
        }
        let row = read()?;
        let len = key.len() + VALUE_OVERHEAD;
        if self.reserve(len) && self.key_rows.write().insert(key.into(), row).is_some() {
            // Another probe kept it first.
            self.release(len);
        }
        Ok(row)
    }
}
