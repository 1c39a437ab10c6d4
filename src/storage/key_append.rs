//! Writing a batch's keys in key order through redb cursors, one seek per gap between
//! stored keys instead of one descent per key.
//!
//! `Table::insert` descends the keys B-tree once per key and rewrites the leaf once per key.
//! A batch's keys sorted fall into gaps between the keys already stored: keys that grow
//! over time (row numbers, timestamps, sequence ids) all land in the gap after the largest
//! key, and names with a counter (`doc123`) land a few per gap. Inserted through a cursor
//! positioned at the gap, a gap's keys are buffered and spliced into the leaf together
//! (4-5x faster than per-key inserts for 10M ascending 8-byte keys measured here).
//!
//! Only keys that no other op of the batch touches take this path: an insert or upsert
//! whose key passes [`check_key`] and occurs once in the batch (deletes count as an
//! occurrence). Such a key's outcome does not depend on the rest of the batch:
//!
//! * absent: the key is new for either kind; written here with its op's row id
//!   ([`KeyOutcome::Added`]);
//! * present, upsert: its entry is replaced here by the new row id and the old row id is
//!   handed to the writer ([`KeyOutcome::Replaced`]);
//! * present, insert: left alone ([`KeyOutcome::PerOp`]); the writer's per-op pass reports
//!   the duplicate.
//!
//! Every other op goes through the writer's per-op path unchanged. The ops' row ids are
//! fixed by their order alone (each insert or upsert takes the next row id), so the cursor
//! can write them before the per-op pass; any later error drops the whole transaction.

use std::ops::Bound;

use redb::Table;

use super::StorageError;
use super::catalog::CollectionInfo;
use super::rules::{WriteOp, check_key, inconsistent};

/// Batches with fewer candidate keys than this use the per-op path only (the sort and the
/// cursors' setup are not worth it).
const MIN_APPEND: usize = 64;

/// Entries a cursor steps over to reach the next key's gap before it seeks afresh (a seek
/// is one descent; a step is one entry read, a new leaf now and then).
const MAX_STEPS: usize = 8;

/// The keys table's type.
pub(crate) type KeysTable<'t> = Table<'t, (u32, &'static [u8]), u64>;

/// What the cursor pass did with an op's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyOutcome {
    /// Nothing: the writer's per-op pass handles the op's key.
    PerOp,
    /// The key was absent and now maps to the op's new row.
    Added,
    /// The key (of an upsert) mapped to this row and now maps to the op's new row.
    Replaced(u64),
}

/// A candidate of the cursor pass: its key, its op's index, its row id and whether it
/// replaces a present key (an upsert).
struct Fresh<'k> {
    key: &'k [u8],
    op: usize,
    row: u64,
    upsert: bool,
}

/// Writes the batch's keys that qualify (see the module docs) through cursors, each with the
/// row id its op takes (`first_row` + the inserts and upserts before it). Returns each op's
/// [`KeyOutcome`].
pub(crate) fn append_new_keys(
    keys: &mut KeysTable<'_>,
    info: &CollectionInfo,
    ops: &[WriteOp<'_>],
    first_row: u64,
) -> Result<Vec<KeyOutcome>, StorageError> {
    let mut outcome = vec![KeyOutcome::PerOp; ops.len()];
    let adds = |op: &&WriteOp<'_>| matches!(op, WriteOp::Insert(..) | WriteOp::Upsert(..));
    if ops.iter().filter(adds).count() < MIN_APPEND {
        return Ok(outcome);
    }
    // Every op's valid key, with the row id an insert or upsert takes (deletes too: a key
    // an insert and a delete of this batch share does not qualify).
    let mut row = first_row;
    let mut all: Vec<(&[u8], usize, Option<(u64, bool)>)> = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let (key, add) = match *op {
            WriteOp::Insert(k, _, _) => (k, Some(false)),
            WriteOp::Upsert(k, _, _) => (k, Some(true)),
            WriteOp::Delete(k) => (k, None),
        };
        let taken = add.map(|upsert| {
            row += 1;
            (row - 1, upsert)
        });
        if check_key(info, key).is_ok() {
            all.push((key, i, taken));
        }
    }
    // Ascending keys come sorted already: the sort then costs one pass.
    all.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
    let mut fresh: Vec<Fresh<'_>> = Vec::with_capacity(all.len());
    let mut j = 0;
    while j < all.len() {
        let mut end = j + 1;
        while end < all.len() && all[end].0 == all[j].0 {
            end += 1;
        }
        if let (1, Some((row, upsert))) = (end - j, all[j].2) {
            fresh.push(Fresh { key: all[j].0, op: all[j].1, row, upsert });
        }
        j = end;
    }
    if fresh.len() < MIN_APPEND {
        return Ok(outcome);
    }
    let mut j = 0;
    while j < fresh.len() {
        j = through_one_cursor(keys, info, &fresh, j, &mut outcome)?;
    }
    Ok(outcome)
}

/// Writes `fresh[j..]` from a cursor seeked to `fresh[j]`'s gap, stepping forward from gap
/// to gap while the next key's gap is near; returns where the next cursor starts.
fn through_one_cursor(
    keys: &mut KeysTable<'_>,
    info: &CollectionInfo,
    fresh: &[Fresh<'_>],
    mut j: usize,
    outcome: &mut [KeyOutcome],
) -> Result<usize, StorageError> {
    let id = info.def.id;
    let mut cursor =
        keys.lower_bound_mut(Bound::Included((id, fresh[j].key))).map_err(StorageError::backend("seek key"))?;
    let mut steps = 0;
    while j < fresh.len() {
        // The collection's key after the gap, if any (a later collection's keys sort after
        // all of this one's).
        let fence: Option<(Vec<u8>, u64)> = match cursor.peek_next().map_err(StorageError::backend("read key"))? {
            Some((k, v)) => {
                let (cid, key) = k.value();
                (cid == id).then(|| (key.to_vec(), v.value()))
            }
            None => None,
        };
        let below = |k: &[u8]| fence.as_ref().is_none_or(|(f, _)| k < f.as_slice());
        while j < fresh.len() && below(fresh[j].key) {
            let f = &fresh[j];
            cursor.insert_before((id, f.key), f.row).map_err(|e| match e {
                redb::CursorError::UnorderedKey => inconsistent(info, f.row, "a key written in order is out of order"),
                e => StorageError::backend("write key")(e),
            })?;
            outcome[f.op] = KeyOutcome::Added;
            steps = 0;
            j += 1;
        }
        let Some((fence, old_row)) = fence else { break };
        if j == fresh.len() {
            break;
        }
        if fresh[j].key == fence.as_slice() {
            let f = &fresh[j];
            if f.upsert {
                // The entry after the gap is this key's: replaced by the new row id.
                cursor.remove_next().map_err(StorageError::backend("replace key"))?;
                cursor.insert_before((id, f.key), f.row).map_err(|e| match e {
                    redb::CursorError::UnorderedKey => inconsistent(info, f.row, "a replaced key is out of order"),
                    e => StorageError::backend("replace key")(e),
                })?;
                outcome[f.op] = KeyOutcome::Replaced(old_row);
                steps = 0;
            } else {
                // A duplicate insert: the per-op pass reports it.
                cursor.next().map_err(StorageError::backend("read key"))?;
            }
            j += 1;
            continue;
        }
        // The next key lies past the fence: step over it, or seek afresh when far.
        steps += 1;
        if steps > MAX_STEPS {
            break;
        }
        cursor.next().map_err(StorageError::backend("read key"))?;
    }
    cursor.close().map_err(StorageError::backend("write keys"))?;
    Ok(j)
}
