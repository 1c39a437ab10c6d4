//! Typed access to the index's tables, for the index layer: the only door from `index` to
//! redb. Each table has a read handle (over a [`ReadSnapshot`] or the write transaction)
//! and a write handle (over an [`IndexTxn`]) with exactly the operations the index uses;
//! redb errors become [`StorageError::Backend`] here, named by the caller's `op`.
//!
//! Keys are plain tuples ([`RunKey`], [`BucketKey`], [`RowKey`], collection ids); values
//! are the index's bytes (the index's own format) or nothing (the removed-row listing).

use std::ops::{Bound, RangeInclusive};

use redb::{AccessGuard, CursorError, CursorMut, ReadOnlyTable, ReadableTable, Table, WriteTransaction};

use super::error::StorageError;
use super::tables::{
    INDEX_DEFS, LSH_BUCKETS, LSH_DEAD, LSH_DEAD_NAME, LSH_GROUPS_V1, LSH_GROUPS_V1_NAME, LSH_ROWS, LSH_ROWS_NAME,
    SIMHASH_BUCKETS,
};

/// `sketchdb.lsh_runs` key: (collection id, band, run, group, chunk).
pub(crate) type RunKey = (u32, u32, u32, u64, u32);
/// `sketchdb.simhash_buckets` key: (collection id, run << 8 | table, bucket).
pub(crate) type BucketKey = (u32, u32, u32);
/// `sketchdb.lsh_dead` and `sketchdb.lsh_rows` key: (collection id, row id).
pub(crate) type RowKey = (u32, u64);
/// Key of the earlier single-run LSH layout's table (never written but by test fixtures):
/// (collection id, band, group, chunk).
pub(crate) type GroupKey = (u32, u32, u64, u32);

/// A stored value, borrowed from the engine while the handle that read it lives.
pub(crate) struct Stored<'a>(AccessGuard<'a, &'static [u8]>);

impl Stored<'_> {
    /// The value's bytes.
    pub(crate) fn value(&self) -> &[u8] {
        self.0.value()
    }
}

/// The entries of a key range, in key order.
pub(crate) struct Entries<'a, K: redb::Key + 'static> {
    range: redb::Range<'a, K, &'static [u8]>,
    op: &'static str,
}

/// Read operations of a bytes-valued index table, through a snapshot or a write transaction.
pub(crate) trait BytesRead<K> {
    /// The value under `key`.
    fn get(&self, key: K, op: &'static str) -> Result<Option<Stored<'_>>, StorageError>;
    /// The entries of `range`, in key order.
    fn range(&self, range: RangeInclusive<K>, op: &'static str) -> Result<Entries<'_, K>, StorageError>
    where
        K: redb::Key + 'static;
    /// Whether `range` holds any entry.
    fn any_in(&self, range: RangeInclusive<K>, op: &'static str) -> Result<bool, StorageError>;
}

/// A bytes-valued index table opened in a read snapshot.
pub(crate) struct BytesView<K: redb::Key + 'static>(pub(super) ReadOnlyTable<K, &'static [u8]>);
/// A bytes-valued index table opened in a write transaction.
pub(crate) struct BytesTable<'t, K: redb::Key + 'static>(Table<'t, K, &'static [u8]>);

/// Appends values in key order after a position through one cursor (an insert each would
/// descend the tree); the appends take effect at [`Appender::close`].
pub(crate) struct Appender<'c, K: redb::Key + 'static> {
    cursor: CursorMut<'c, K, &'static [u8]>,
}

macro_rules! bytes_key {
    ($K:ty) => {
        impl<'a> Iterator for Entries<'a, $K> {
            type Item = Result<($K, Stored<'a>), StorageError>;
            fn next(&mut self) -> Option<Self::Item> {
                let e = self.range.next()?;
                Some(e.map(|(k, v)| (k.value(), Stored(v))).map_err(StorageError::backend(self.op)))
            }
        }

        impl BytesRead<$K> for BytesView<$K> {
            fn get(&self, key: $K, op: &'static str) -> Result<Option<Stored<'_>>, StorageError> {
                Ok(self.0.get(key).map_err(StorageError::backend(op))?.map(Stored))
            }
            fn range(&self, range: RangeInclusive<$K>, op: &'static str) -> Result<Entries<'_, $K>, StorageError> {
                Ok(Entries { range: self.0.range(range).map_err(StorageError::backend(op))?, op })
            }
            fn any_in(&self, range: RangeInclusive<$K>, op: &'static str) -> Result<bool, StorageError> {
                Ok(self.range(range, op)?.next().transpose()?.is_some())
            }
        }

        impl BytesRead<$K> for BytesTable<'_, $K> {
            fn get(&self, key: $K, op: &'static str) -> Result<Option<Stored<'_>>, StorageError> {
                Ok(self.0.get(key).map_err(StorageError::backend(op))?.map(Stored))
            }
            fn range(&self, range: RangeInclusive<$K>, op: &'static str) -> Result<Entries<'_, $K>, StorageError> {
                Ok(Entries { range: self.0.range(range).map_err(StorageError::backend(op))?, op })
            }
            fn any_in(&self, range: RangeInclusive<$K>, op: &'static str) -> Result<bool, StorageError> {
                Ok(self.range(range, op)?.next().transpose()?.is_some())
            }
        }

        // Not every table uses every operation.
        #[allow(dead_code)]
        impl<'t> BytesTable<'t, $K> {
            /// Stores `value` under `key`, replacing any value there.
            pub(crate) fn insert(&mut self, key: $K, value: &[u8], op: &'static str) -> Result<(), StorageError> {
                self.0.insert(key, value).map_err(StorageError::backend(op))?;
                Ok(())
            }
            /// Stores a value of `len` bytes under `key`, written in place by `fill`.
            pub(crate) fn insert_with(
                &mut self,
                key: $K,
                len: usize,
                op: &'static str,
                fill: impl FnOnce(&mut [u8]),
            ) -> Result<(), StorageError> {
                let mut guard = self.0.insert_reserve(key, len).map_err(StorageError::backend(op))?;
                fill(guard.as_mut());
                Ok(())
            }
            /// Removes the value under `key`, if any.
            pub(crate) fn remove(&mut self, key: $K, op: &'static str) -> Result<(), StorageError> {
                self.0.remove(key).map_err(StorageError::backend(op))?;
                Ok(())
            }
            /// Removes every entry of `range`.
            pub(crate) fn remove_range(
                &mut self,
                range: RangeInclusive<$K>,
                op: &'static str,
            ) -> Result<(), StorageError> {
                self.0.retain_in(range, |_, _| false).map_err(StorageError::backend(op))
            }
            /// An appender positioned at `from`.
            pub(crate) fn appender(&mut self, from: $K, op: &'static str) -> Result<Appender<'_, $K>, StorageError> {
                let cursor = self.0.lower_bound_mut(Bound::Included(from)).map_err(StorageError::backend(op))?;
                Ok(Appender { cursor })
            }
        }

        #[allow(dead_code)]
        impl Appender<'_, $K> {
            /// Inserts `value` under `key` before the cursor's position; `Ok(false)` (nothing
            /// written) when `key` does not sort between the entry before and the cursor's
            /// (a value already stored under it, or keys out of order).
            pub(crate) fn append(&mut self, key: $K, value: &[u8], op: &'static str) -> Result<bool, StorageError> {
                match self.cursor.insert_before(key, value) {
                    Ok(()) => Ok(true),
                    Err(CursorError::UnorderedKey) => Ok(false),
                    Err(e) => Err(StorageError::backend(op)(e)),
                }
            }
            /// Writes the appends.
            pub(crate) fn close(self, op: &'static str) -> Result<(), StorageError> {
                self.cursor.close().map_err(StorageError::backend(op))
            }
        }
    };
}

bytes_key!(RunKey);
bytes_key!(BucketKey);
bytes_key!(RowKey);
bytes_key!(GroupKey);
bytes_key!(u32);

/// `sketchdb.lsh_dead` (rows listed as removed) opened in a read snapshot or a write
/// transaction.
pub(crate) trait RowsRead {
    /// The row ids listed for collection `id` in `rows`, ascending.
    fn rows_in(&self, id: u32, rows: std::ops::Range<u64>, op: &'static str) -> Result<Vec<u64>, StorageError>;
}

/// `sketchdb.lsh_dead` opened in a read snapshot.
pub(crate) struct RowsView(pub(super) ReadOnlyTable<RowKey, ()>);
/// `sketchdb.lsh_dead` opened in a write transaction.
pub(crate) struct RowsTable<'t>(Table<'t, RowKey, ()>);

fn rows_in(
    t: &impl ReadableTable<RowKey, ()>,
    id: u32,
    rows: std::ops::Range<u64>,
    op: &'static str,
) -> Result<Vec<u64>, StorageError> {
    let mut out = Vec::new();
    if rows.is_empty() {
        return Ok(out);
    }
    for e in t.range((id, rows.start)..(id, rows.end)).map_err(StorageError::backend(op))? {
        out.push(e.map_err(StorageError::backend(op))?.0.value().1);
    }
    Ok(out)
}

impl RowsRead for RowsView {
    fn rows_in(&self, id: u32, rows: std::ops::Range<u64>, op: &'static str) -> Result<Vec<u64>, StorageError> {
        rows_in(&self.0, id, rows, op)
    }
}

impl RowsRead for RowsTable<'_> {
    fn rows_in(&self, id: u32, rows: std::ops::Range<u64>, op: &'static str) -> Result<Vec<u64>, StorageError> {
        rows_in(&self.0, id, rows, op)
    }
}

impl RowsTable<'_> {
    /// Lists `key`; whether it was listed already.
    pub(crate) fn insert(&mut self, key: RowKey, op: &'static str) -> Result<bool, StorageError> {
        Ok(self.0.insert(key, ()).map_err(StorageError::backend(op))?.is_some())
    }
    /// Removes the listing of collection `id`'s rows in `rows`.
    pub(crate) fn remove_rows(
        &mut self,
        id: u32,
        rows: std::ops::Range<u64>,
        op: &'static str,
    ) -> Result<(), StorageError> {
        if rows.is_empty() {
            return Ok(());
        }
        self.0.retain_in((id, rows.start)..(id, rows.end), |_, _| false).map_err(StorageError::backend(op))
    }
}

/// A write transaction as the index sees it: its tables, and the rows it maintains them
/// from. The storage layer makes one for [`super::hook::IndexHook`] calls and index writes.
#[derive(Clone, Copy)]
pub(crate) struct IndexTxn<'t>(pub(super) &'t WriteTransaction);

impl<'t> IndexTxn<'t> {
    fn open<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: redb::TableDefinition<K, V>,
    ) -> Result<Table<'t, K, V>, StorageError> {
        self.0.open_table(def).map_err(StorageError::backend("open table"))
    }
    /// `sketchdb.lsh_runs`.
    pub(crate) fn lsh_runs(&self) -> Result<BytesTable<'t, RunKey>, StorageError> {
        Ok(BytesTable(self.open(LSH_BUCKETS)?))
    }
    /// `sketchdb.simhash_buckets`.
    pub(crate) fn simhash_buckets(&self) -> Result<BytesTable<'t, BucketKey>, StorageError> {
        Ok(BytesTable(self.open(SIMHASH_BUCKETS)?))
    }
    /// `sketchdb.index_defs`.
    pub(crate) fn index_defs(&self) -> Result<BytesTable<'t, u32>, StorageError> {
        Ok(BytesTable(self.open(INDEX_DEFS)?))
    }
    /// `sketchdb.lsh_dead`.
    pub(crate) fn lsh_dead(&self) -> Result<RowsTable<'t>, StorageError> {
        Ok(RowsTable(self.open(LSH_DEAD)?))
    }
    /// `sketchdb.lsh_rows` (written by test fixtures of earlier builds' files only).
    pub(crate) fn lsh_rows(&self) -> Result<BytesTable<'t, RowKey>, StorageError> {
        Ok(BytesTable(self.open(LSH_ROWS)?))
    }
    /// `sketchdb.lsh_buckets` (written by test fixtures of earlier builds' files only).
    pub(crate) fn lsh_groups_v1(&self) -> Result<BytesTable<'t, GroupKey>, StorageError> {
        Ok(BytesTable(self.open(LSH_GROUPS_V1)?))
    }

    /// Removes every index entry of collection `id` (its definition, SimHash buckets, LSH
    /// buckets, removed-row listing and reverse map): used by drop and by index rebuilds.
    pub(crate) fn drop_index_entries(&self, id: u32) -> Result<(), StorageError> {
        let txn = self.0;
        let rm = || StorageError::backend("remove index entries");
        txn.open_table(INDEX_DEFS).map_err(StorageError::backend("open table"))?.remove(id).map_err(rm())?;
        txn.open_table(SIMHASH_BUCKETS)
            .map_err(StorageError::backend("open table"))?
            .retain_in((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), |_, _| false)
            .map_err(rm())?;
        txn.open_table(LSH_BUCKETS)
            .map_err(StorageError::backend("open table"))?
            .retain_in((id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), |_, _| false)
            .map_err(rm())?;
        // The single-run layout of earlier builds: cleared where a file has it, never created.
        if self.has_table(LSH_GROUPS_V1_NAME)? {
            txn.open_table(LSH_GROUPS_V1)
                .map_err(StorageError::backend("open table"))?
                .retain_in((id, 0u32, 0u64, 0u32)..=(id, u32::MAX, u64::MAX, u32::MAX), |_, _| false)
                .map_err(rm())?;
        }
        if self.has_table(LSH_DEAD_NAME)? {
            txn.open_table(LSH_DEAD)
                .map_err(StorageError::backend("open table"))?
                .retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false)
                .map_err(rm())?;
        }
        self.drop_lsh_reverse_map(id)
    }

    /// Removes collection `id`'s entries from `sketchdb.lsh_rows`, the LSH reverse map earlier
    /// builds kept (cleared where a file has the table, never created).
    pub(crate) fn drop_lsh_reverse_map(&self, id: u32) -> Result<(), StorageError> {
        if self.has_table(LSH_ROWS_NAME)? {
            self.0
                .open_table(LSH_ROWS)
                .map_err(StorageError::backend("open table"))?
                .retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false)
                .map_err(StorageError::backend("remove lsh reverse map"))?;
        }
        Ok(())
    }

    fn has_table(&self, name: &str) -> Result<bool, StorageError> {
        Ok(self
            .0
            .list_tables()
            .map_err(StorageError::backend("list tables"))?
            .any(|t| redb::TableHandle::name(&t) == name))
    }
}

impl super::store::Store {
    /// Runs `f` in a write transaction of its own, committed when `f` succeeds.
    pub(crate) fn write_index<T, E: From<StorageError>>(
        &self,
        f: impl FnOnce(&IndexTxn<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let txn = self.begin_write("write index")?;
        let out = f(&IndexTxn(&txn))?;
        txn.commit().map_err(StorageError::backend("commit"))?;
        Ok(out)
    }
}
