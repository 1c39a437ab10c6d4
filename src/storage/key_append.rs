//! Appending a batch's new keys past a collection's largest key with one redb cursor.
//!
//! `Table::insert` descends the keys B-tree once per key. When keys grow over time (row
//! numbers, timestamps, sequence ids), a batch's new keys all sort after every key the
//! collection already has; inserted through one cursor at that gap they fill leaves in order
//! without a descent each (4-5x faster for 10M ascending 8-byte keys measured here).
//!
//! Only keys that cannot meet an existing entry or another op of the batch take this path:
//! an insert or upsert whose key sorts after the collection's largest key, passes
//! [`check_key`], and occurs once in the batch. Such a key is new, so its op's outcome is
//! the same as through `insert` (no old row, no duplicate), and no other op of the batch
//! reads its entry. Every other op goes through the writer's per-op path unchanged. The
//! ops' row ids are fixed by their order alone (each insert or upsert takes the next row
//! id), so the cursor can write them before the per-op pass; any later error drops the
//! whole transaction.

use std::ops::Bound;

use redb::{ReadableTable, Table};

use super::StorageError;
use super::catalog::CollectionInfo;
use super::rules::{WriteOp, check_key, inconsistent};

/// Batches with fewer candidate keys than this use the per-op path only (the cursor's setup
/// is not worth it).
const MIN_APPEND: usize = 64;

/// The keys table's type.
pub(crate) type KeysTable<'t> = Table<'t, (u32, &'static [u8]), u64>;

/// Writes the batch's appendable keys (see the module docs) through one cursor, each with
/// the row id its op takes (`first_row` + the inserts and upserts before it). Returns, per
/// op, whether its key was written here.
pub(crate) fn append_new_keys(
    keys: &mut KeysTable<'_>,
    info: &CollectionInfo,
    ops: &[WriteOp<'_>],
    first_row: u64,
) -> Result<Vec<bool>, StorageError> {
    let mut appended = vec![false; ops.len()];
    let adds = |op: &&WriteOp<'_>| matches!(op, WriteOp::Insert(..) | WriteOp::Upsert(..));
    if ops.iter().filter(adds).count() < MIN_APPEND {
        return Ok(appended);
    }
    let id = info.def.id;
    let largest = largest_key(keys, id)?;
    let after = |k: &[u8]| largest.as_deref().is_none_or(|l| k > l);
    // Every op whose key sorts after the largest (deletes too: a key an insert and a delete
    // of this batch share is not appendable), with the row id an insert or upsert takes.
    let mut row = first_row;
    let mut late: Vec<(&[u8], usize, Option<u64>)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let key = match *op {
            WriteOp::Insert(k, _, _) | WriteOp::Upsert(k, _, _) => {
                row += 1;
                (k, Some(row - 1))
            }
            WriteOp::Delete(k) => (k, None),
        };
        if after(key.0) && check_key(info, key.0).is_ok() {
            late.push((key.0, i, key.1));
        }
    }
    if late.len() < MIN_APPEND {
        return Ok(appended);
    }
    // Ascending keys come sorted already: the sort then costs one pass.
    late.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
    let mut cursor = match largest.as_deref() {
        Some(l) => keys.upper_bound_mut(Bound::Included((id, l))),
        None => keys.lower_bound_mut(Bound::Included((id, &[][..]))),
    }
    .map_err(StorageError::backend("position key cursor"))?;
    let mut j = 0;
    while j < late.len() {
        let mut end = j + 1;
        while end < late.len() && late[end].0 == late[j].0 {
            end += 1;
        }
        if let (1, Some(row)) = (end - j, late[j].2) {
            let (key, i, _) = late[j];
            cursor.insert_before((id, key), row).map_err(|e| match e {
                redb::CursorError::UnorderedKey => inconsistent(info, row, "an appended key is out of order"),
                e => StorageError::backend("append key")(e),
            })?;
            appended[i] = true;
        }
        j = end;
    }
    cursor.close().map_err(StorageError::backend("append keys"))?;
    Ok(appended)
}

/// The collection's largest key, if it has any.
fn largest_key(keys: &KeysTable<'_>, id: u32) -> Result<Option<Vec<u8>>, StorageError> {
    let from = (id, &[][..]);
    let mut range = match id.checked_add(1) {
        Some(next) => keys.range::<(u32, &[u8])>(from..(next, &[][..])),
        None => keys.range::<(u32, &[u8])>(from..),
    }
    .map_err(StorageError::backend("read keys"))?;
    match range.next_back() {
        Some(entry) => Ok(Some(entry.map_err(StorageError::backend("read keys"))?.0.value().1.to_vec())),
        None => Ok(None),
    }
}
