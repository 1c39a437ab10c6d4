//! SimHash tables stored as runs: what a run's keys are, reading a bucket across runs and
//! merging runs.
//!
//! Each write transaction stores the rows it adds as one new run, a full set of permuted
//! tables over those rows; runs merge in size tiers ([`crate::index::tiers`]). A key of
//! `sketchdb.simhash_buckets` is `(collection id, run << 8 | table, bucket)` (at most 256
//! tables, at most 2^24 run numbers), so a run's keys are contiguous, table after table,
//! and a new run, numbered above every stored one, is appended after them through one
//! cursor. Files written before runs existed hold one set of tables with the field equal to
//! the table number: exactly run 0.

use crate::index::error::IndexError;
use std::sync::mpsc;

use super::format::{BucketView, Geometry, encode_bucket, encoded_len, table_field};
use super::tables::{BucketKey, BucketTable, bucket_err};
use crate::index::defs::SimhashRun;
use crate::index::error::inconsistent;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::panic_message;
use crate::storage::index_tables::BytesRead;

/// The key range of run `run`'s table `t`.
fn table_range(id: u32, run: u32, t: u32) -> std::ops::RangeInclusive<BucketKey> {
    let field = table_field(run, t);
    (id, field, 0)..=(id, field, u32::MAX)
}

/// Calls `f(bucket, entries)` for every bucket of table `t` holding entries in any of the
/// runs `runs`, ascending, with the bucket's entries of all those runs as `(permuted key,
/// row)`, sorted. The table's values are read into memory first (one table at a time).
pub(crate) fn for_each_merged_bucket<T: BytesRead<BucketKey>>(
    table: &T,
    info: &CollectionInfo,
    runs: &[u32],
    t: u32,
    g: Geometry,
    f: impl FnMut(u32, &[(u128, u64)]) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let raw = read_raw(table, info.def.id, runs, t, Vec::new())?;
    for_each_raw_bucket(info, runs, t, g, &raw, f)
}

/// Table `t`'s bucket `bucket` over all of `runs`, encoded as one bucket value (`None`:
/// no run holds an entry there). One run's value is returned as stored.
pub(crate) fn merged_bucket<T: BytesRead<BucketKey>>(
    table: &T,
    info: &CollectionInfo,
    runs: &[u32],
    t: u32,
    g: Geometry,
    bucket: u32,
) -> Result<Option<Vec<u8>>, IndexError> {
    let id = info.def.id;
    let read = |run: u32| table.get((id, table_field(run, t), bucket), "read simhash bucket");
    if let [run] = runs {
        return Ok(read(*run)?.map(|v| v.value().to_vec()));
    }
    let mut entries = Vec::new();
    let mut only: Option<Vec<u8>> = None;
    let mut sources = 0;
    for &run in runs {
        let Some(v) = read(run)? else { continue };
        let view = BucketView::parse(v.value(), g).map_err(|d| bucket_err(info, table_field(run, t), bucket, d))?;
        view.entries_into(g, bucket, &mut entries);
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

/// One table's buckets over the runs of a span, as stored: the values one after another,
/// run after run, and per run each bucket with the end of its value in `bytes`.
struct RawTable {
    bytes: Vec<u8>,
    runs: Vec<Vec<(u32, usize)>>,
}

/// One table's merged buckets, encoded one after another: each bucket with the end of its
/// value in `bytes`, and the entries in all.
struct MergedTable {
    bytes: Vec<u8>,
    buckets: Vec<(u32, usize)>,
    entries: u64,
}

/// Byte buffers a merge hands back and forth between its tables (fresh memory costs a page
/// fault and a zeroed page per 4 KiB).
type Spares = parking_lot::Mutex<Vec<Vec<u8>>>;

fn spare(spares: &Spares) -> Vec<u8> {
    let mut b = spares.lock().pop().unwrap_or_default();
    b.clear();
    b
}

/// Table `t`'s values of the runs `runs`, read into `bytes` (cleared first).
fn read_raw<T: BytesRead<BucketKey>>(
    table: &T,
    id: u32,
    runs: &[u32],
    t: u32,
    mut bytes: Vec<u8>,
) -> Result<RawTable, IndexError> {
    bytes.clear();
    let mut raw = RawTable { bytes, runs: Vec::with_capacity(runs.len()) };
    for &run in runs {
        let mut list = Vec::new();
        for e in table.range(table_range(id, run, t), "scan simhash buckets")? {
            let (k, v) = e?;
            raw.bytes.extend_from_slice(v.value());
            list.push((k.2, raw.bytes.len()));
        }
        raw.runs.push(list);
    }
    Ok(raw)
}

/// Calls `f(bucket, entries)` for every bucket of a [`RawTable`], ascending, with the
/// bucket's entries of all its runs, sorted.
fn for_each_raw_bucket(
    info: &CollectionInfo,
    runs: &[u32],
    t: u32,
    g: Geometry,
    raw: &RawTable,
    mut f: impl FnMut(u32, &[(u128, u64)]) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    // Per run: the next bucket's index in its list, and where its value starts.
    let mut at = vec![0usize; raw.runs.len()];
    let mut start: Vec<usize> = Vec::with_capacity(raw.runs.len());
    let mut end = 0;
    for list in &raw.runs {
        start.push(end);
        end = list.last().map_or(end, |b| b.1);
    }
    let mut entries = Vec::new();
    loop {
        let heads = raw.runs.iter().zip(&at).filter_map(|(list, &i)| list.get(i));
        let Some(bucket) = heads.map(|b| b.0).min() else { return Ok(()) };
        entries.clear();
        let mut sources = 0;
        for (r, list) in raw.runs.iter().enumerate() {
            let Some(&(_, stop)) = list.get(at[r]).filter(|b| b.0 == bucket) else { continue };
            let view = BucketView::parse(&raw.bytes[start[r]..stop], g)
                .map_err(|d| bucket_err(info, table_field(runs[r], t), bucket, d))?;
            view.entries_into(g, bucket, &mut entries);
            sources += 1;
            at[r] += 1;
            start[r] = stop;
        }
        // Each run's entries are sorted; (key, row) pairs are unique across runs.
        if sources > 1 {
            entries.sort_unstable();
        }
        f(bucket, &entries)?;
    }
}

/// Merges a [`RawTable`] bucket by bucket and encodes the result.
fn merge_raw(
    spares: &Spares,
    info: &CollectionInfo,
    runs: &[u32],
    t: u32,
    g: Geometry,
    raw: &RawTable,
) -> Result<MergedTable, IndexError> {
    let mut bytes = spare(spares);
    bytes.reserve(raw.bytes.len());
    let mut out = MergedTable { bytes, buckets: Vec::new(), entries: 0 };
    for_each_raw_bucket(info, runs, t, g, raw, |bucket, entries| {
        let at = out.bytes.len();
        out.bytes.resize(at + encoded_len(entries, g), 0);
        encode_bucket(entries, g, &mut out.bytes[at..]);
        out.buckets.push((bucket, out.bytes.len()));
        out.entries += entries.len() as u64;
        Ok(())
    })?;
    Ok(out)
}

/// Merges the runs `span` (neighbours, oldest first) into one new run numbered `id`, table
/// by table: a table's buckets over the span are read into memory and merged, the span's
/// keys of that table removed, then the merged buckets appended through one cursor. A
/// worker thread merges table t while this thread reads table t + 1 and writes table t - 1.
/// `id` may be one of the span's own numbers (renumbering). Every table must hold each of
/// the span's rows exactly once, as the runs count them.
pub(crate) fn merge_runs(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    geometry: &[Geometry],
    span: &[SimhashRun],
    id: u32,
) -> Result<SimhashRun, IndexError> {
    let cid = info.def.id;
    let ids: Vec<u32> = span.iter().map(|r| r.id).collect();
    let rows: u64 = span.iter().map(|r| r.rows).sum();
    let first_row = span.first().map_or(0, |r| r.first_row);
    let n = geometry.len();
    let spares = Spares::default();
    let spares = &spares;
    let write = |table: &mut BucketTable<'_>, t: usize, merged: MergedTable| -> Result<(), IndexError> {
        if merged.entries != rows {
            let detail = format!("runs {ids:?} count {rows} rows, table {t} holds {} entries", merged.entries);
            return Err(inconsistent(info, first_row, detail));
        }
        for &run in &ids {
            let range = table_range(cid, run, t as u32);
            table.remove_range(range, "drop simhash run")?;
        }
        let field = table_field(id, t as u32);
        let mut cursor = table.appender((cid, field, 0), "position bucket cursor")?;
        let mut start = 0;
        for &(bucket, end) in &merged.buckets {
            if !cursor.append((cid, field, bucket), &merged.bytes[start..end], "append simhash bucket")? {
                return Err(bucket_err(info, field, bucket, "a merged bucket is already stored"));
            }
            start = end;
        }
        cursor.close("append simhash buckets")?;
        spares.lock().push(merged.bytes);
        Ok(())
    };
    std::thread::scope(|s| {
        let (to_worker, raw_tables) = mpsc::sync_channel::<(usize, RawTable)>(1);
        let (to_writer, merged_tables) = mpsc::sync_channel::<Result<MergedTable, IndexError>>(1);
        let ids = &ids;
        let worker = s.spawn(move || {
            for (t, raw) in raw_tables {
                let merged = merge_raw(spares, info, ids, t as u32, geometry[t], &raw);
                spares.lock().push(raw.bytes);
                let failed = merged.is_err();
                if to_writer.send(merged).is_err() || failed {
                    break;
                }
            }
        });
        let merged_of = |t: usize| -> Result<MergedTable, IndexError> {
            merged_tables
                .recv()
                .map_err(|_| inconsistent(info, first_row, format!("the merge of table {t} stopped")))?
        };
        let result = (|| -> Result<(), IndexError> {
            for t in 0..n {
                let raw = read_raw(&*table, cid, ids, t as u32, spare(spares))?;
                if to_worker.send((t, raw)).is_err() {
                    break;
                }
                if t > 0 {
                    write(table, t - 1, merged_of(t - 1)?)?;
                }
            }
            if n > 0 {
                write(table, n - 1, merged_of(n - 1)?)?;
            }
            Ok(())
        })();
        drop(to_worker);
        drop(merged_tables);
        worker.join().map_err(|payload| StorageError::EnginePanic {
            op: "merge simhash runs",
            detail: panic_message(payload.as_ref()),
        })?;
        result
    })?;
    Ok(SimhashRun { id, first_row, rows })
}
