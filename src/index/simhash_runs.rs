//! SimHash tables stored as runs: what a run's keys are, reading a bucket across runs and
//! merging runs.
//!
//! Each write transaction stores the rows it adds as one new run, a full set of permuted
//! tables over those rows; runs merge in size tiers ([`super::tiers`]). A key of
//! `sketchdb.simhash_buckets` is `(collection id, run << 8 | table, bucket)` (at most 256
//! tables, at most 2^24 run numbers), so a run's keys are contiguous, table after table,
//! and a new run, numbered above every stored one, is appended after them through one
//! cursor. Files written before runs existed hold one set of tables with the field equal to
//! the table number: exactly run 0.

use redb::{AccessGuard, CursorError, ReadableTable};

use super::meta::SimhashRun;
use super::simhash_tables::{BucketKey, BucketTable, BucketView, Geometry, bucket_err, encode_bucket, encoded_len};
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::writer::inconsistent;

/// Run numbers: 0 ..= 2^24 - 1 (the key field's bits above the table number).
pub(crate) const RUN_IDS: u32 = 1 << 24;

/// The key field of run `run`'s table `t`.
#[inline]
pub(crate) fn table_field(run: u32, t: u32) -> u32 {
    debug_assert!(run < RUN_IDS && t < 256);
    run << 8 | t
}

/// `(run, table)` of a key field.
#[inline]
pub(crate) fn split_field(field: u32) -> (u32, u32) {
    (field >> 8, field & 0xff)
}

/// The key range of run `run`'s table `t`.
fn table_range(id: u32, run: u32, t: u32) -> std::ops::RangeInclusive<BucketKey> {
    let field = table_field(run, t);
    (id, field, 0)..=(id, field, u32::MAX)
}

type Head<'a> = Option<(u32, AccessGuard<'a, &'static [u8]>)>;

fn next_head<'a>(range: &mut redb::Range<'a, BucketKey, &'static [u8]>) -> Result<Head<'a>, StorageError> {
    match range.next() {
        None => Ok(None),
        Some(e) => {
            let (k, v) = e.map_err(StorageError::backend("scan simhash buckets"))?;
            Ok(Some((k.value().2, v)))
        }
    }
}

/// Calls `f(bucket, entries)` for every bucket of table `t` holding entries in any of the
/// runs `runs`, ascending, with the bucket's entries of all those runs as `(permuted key,
/// row)`, sorted.
pub(crate) fn for_each_merged_bucket<T: ReadableTable<BucketKey, &'static [u8]>>(
    table: &T,
    info: &CollectionInfo,
    runs: &[u32],
    t: u32,
    g: Geometry,
    mut f: impl FnMut(u32, &[(u128, u64)]) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let id = info.def.id;
    let mut ranges = Vec::with_capacity(runs.len());
    for &run in runs {
        ranges.push(table.range(table_range(id, run, t)).map_err(StorageError::backend("scan simhash buckets"))?);
    }
    let mut heads = Vec::with_capacity(ranges.len());
    for r in &mut ranges {
        heads.push(next_head(r)?);
    }
    let (mut entries, mut keys, mut rows) = (Vec::new(), Vec::<u128>::new(), Vec::new());
    while let Some(bucket) = heads.iter().flatten().map(|h| h.0).min() {
        entries.clear();
        let mut sources = 0;
        for (i, head) in heads.iter_mut().enumerate() {
            if let Some((b, v)) = head.take_if(|h| h.0 == bucket) {
                let field = table_field(runs[i], t);
                let view = BucketView::parse(v.value(), g).map_err(|d| bucket_err(info, field, b, d))?;
                keys.clear();
                rows.clear();
                view.decode_into::<u128>(g, b, &mut keys, &mut rows);
                entries.extend(keys.iter().copied().zip(rows.iter().copied()));
                sources += 1;
                *head = next_head(&mut ranges[i])?;
            }
        }
        // Each run's entries are sorted; (key, row) pairs are unique across runs.
        if sources > 1 {
            entries.sort_unstable();
        }
        f(bucket, &entries)?;
    }
    Ok(())
}

/// Table `t`'s bucket `bucket` over all of `runs`, encoded as one bucket value (`None`:
/// no run holds an entry there). One run's value is returned as stored.
pub(crate) fn merged_bucket<T: ReadableTable<BucketKey, &'static [u8]>>(
    table: &T,
    info: &CollectionInfo,
    runs: &[u32],
    t: u32,
    g: Geometry,
    bucket: u32,
) -> Result<Option<Vec<u8>>, StorageError> {
    let id = info.def.id;
    let read =
        |run: u32| table.get((id, table_field(run, t), bucket)).map_err(StorageError::backend("read simhash bucket"));
    if let [run] = runs {
        return Ok(read(*run)?.map(|v| v.value().to_vec()));
    }
    let (mut entries, mut keys, mut rows) = (Vec::new(), Vec::<u128>::new(), Vec::new());
    let mut only: Option<Vec<u8>> = None;
    let mut sources = 0;
    for &run in runs {
        let Some(v) = read(run)? else { continue };
        let view = BucketView::parse(v.value(), g).map_err(|d| bucket_err(info, table_field(run, t), bucket, d))?;
        keys.clear();
        rows.clear();
        view.decode_into::<u128>(g, bucket, &mut keys, &mut rows);
        entries.extend(keys.iter().copied().zip(rows.iter().copied()));
        sources += 1;
        if sources == 1 {
            only = Some(v.value().to_vec());
        }
    }
    if sources <= 1 {
        return Ok(only);
    }
    entries.sort_unstable();
    let mut out = vec![0u8; encoded_len(&entries, g)];
    encode_bucket(&entries, g, &mut out);
    Ok(Some(out))
}

/// Merges the runs `span` (neighbours, oldest first) into one new run numbered `id`, table
/// by table: a table's buckets over the span are merged into memory, the span's keys of
/// that table removed, then the merged buckets appended through one cursor. `id` may be one
/// of the span's own numbers (renumbering). Every table must hold each of the span's rows
/// exactly once, as the runs count them.
pub(crate) fn merge_runs(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    geometry: &[Geometry],
    span: &[SimhashRun],
    id: u32,
) -> Result<SimhashRun, StorageError> {
    let cid = info.def.id;
    let ids: Vec<u32> = span.iter().map(|r| r.id).collect();
    let rows: u64 = span.iter().map(|r| r.rows).sum();
    let first_row = span.first().map_or(0, |r| r.first_row);
    let (mut encoded, mut buckets) = (Vec::<u8>::new(), Vec::<(u32, usize)>::new());
    for (t, g) in geometry.iter().enumerate() {
        let t = t as u32;
        encoded.clear();
        buckets.clear();
        let mut held = 0u64;
        for_each_merged_bucket(&*table, info, &ids, t, *g, |bucket, entries| {
            let start = encoded.len();
            encoded.resize(start + encoded_len(entries, *g), 0);
            encode_bucket(entries, *g, &mut encoded[start..]);
            buckets.push((bucket, encoded.len()));
            held += entries.len() as u64;
            Ok(())
        })?;
        if held != rows {
            let detail = format!("runs {ids:?} count {rows} rows, table {t} holds {held} entries");
            return Err(inconsistent(info, first_row, detail));
        }
        for &run in &ids {
            table
                .retain_in(table_range(cid, run, t), |_, _| false)
                .map_err(StorageError::backend("drop simhash run"))?;
        }
        let field = table_field(id, t);
        let mut cursor = table
            .lower_bound_mut(std::ops::Bound::Included((cid, field, 0)))
            .map_err(StorageError::backend("position bucket cursor"))?;
        let mut start = 0;
        for &(bucket, end) in &buckets {
            cursor.insert_before((cid, field, bucket), &encoded[start..end]).map_err(|e| match e {
                CursorError::UnorderedKey => bucket_err(info, field, bucket, "a merged bucket is already stored"),
                e => StorageError::backend("append simhash bucket")(e),
            })?;
            start = end;
        }
        cursor.close().map_err(StorageError::backend("append simhash buckets"))?;
    }
    Ok(SimhashRun { id, first_row, rows })
}
