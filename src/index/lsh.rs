//! Persisted LSH banding buckets with a reverse map.
//!
//! * `sketchdb.lsh_buckets`, key `(collection id, band, band key, chunk)`: the bucket's row
//!   ids, ascending across chunks, at most [`CHUNK_ROWS`] per chunk, so a huge bucket never
//!   makes a huge value. Chunk 0 always exists for a non-empty bucket and starts with a
//!   16-byte header: `u64 total rows | u32 last chunk number | u32 reserved (0)`, then its
//!   row ids (u64 LE); chunks `1..=last` hold row ids only (some numbers may be absent after
//!   deletes emptied them).
//! * `sketchdb.lsh_rows`, key `(collection id, row id)`: the row's band keys, u64 LE in band
//!   order (`8 * bands` bytes): deletes find the buckets without the row's sketch.
//!
//! Writes of a transaction are buffered ([`LshDelta`]) and applied bucket by bucket in key
//! order at its end: new rows (whose ids exceed every stored id) append to the last chunk;
//! a bucket that loses rows is read whole and rewritten.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use super::keys::band::{BandKeyScheme, lsh_rows};
use super::meta::index_err;
use crate::sketch::sketch::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::tables::{LSH_BUCKETS, LSH_ROWS};

/// The most row ids in one chunk value (16 KiB of ids).
pub(crate) const CHUNK_ROWS: usize = 2048;
/// Bytes of chunk 0's header.
pub(crate) const CHUNK0_HEADER_LEN: usize = 16;

/// A bucket's chunk-0 header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BucketHeader {
    pub total: u64,
    pub last_chunk: u32,
}

/// Parses chunk 0: header and its row-id bytes.
pub(crate) fn parse_chunk0(bytes: &[u8]) -> Result<(BucketHeader, &[u8]), String> {
    if bytes.len() < CHUNK0_HEADER_LEN || !(bytes.len() - CHUNK0_HEADER_LEN).is_multiple_of(8) {
        return Err(format!("chunk 0 of {} bytes", bytes.len()));
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&bytes[0..8]);
    let mut l = [0u8; 4];
    l.copy_from_slice(&bytes[8..12]);
    if bytes[12..16] != [0; 4] {
        return Err("chunk 0 reserved bytes are not zero".into());
    }
    Ok((BucketHeader { total: u64::from_le_bytes(t), last_chunk: u32::from_le_bytes(l) }, &bytes[CHUNK0_HEADER_LEN..]))
}

/// Appends the u64 LE row ids in `bytes` to `out` (a trailing partial id is ignored).
pub(crate) fn push_rows(bytes: &[u8], out: &mut Vec<u64>) {
    out.extend(bytes.chunks_exact(8).map(|c| {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        u64::from_le_bytes(a)
    }));
}

fn encode_chunk(header: Option<BucketHeader>, rows: &[u64]) -> Vec<u8> {
    let mut v = Vec::with_capacity(CHUNK0_HEADER_LEN + 8 * rows.len());
    if let Some(h) = header {
        v.extend_from_slice(&h.total.to_le_bytes());
        v.extend_from_slice(&h.last_chunk.to_le_bytes());
        v.extend_from_slice(&[0; 4]);
    }
    rows.iter().for_each(|r| v.extend_from_slice(&r.to_le_bytes()));
    v
}

pub(crate) fn lsh_err(info: &CollectionInfo, band: u32, key: u64, detail: impl std::fmt::Display) -> StorageError {
    StorageError::Inconsistent {
        collection: info.def.name.clone(),
        row: None,
        detail: format!("index table sketchdb.lsh_buckets, band {band}, bucket {key:#018x}: {detail}"),
    }
}

/// The LSH changes of one write transaction.
pub(crate) struct LshDelta {
    scheme: BandKeyScheme,
    /// Rows added in this transaction, with their band keys.
    added: BTreeMap<u64, Vec<u64>>,
    removed: Vec<u64>,
    /// Change of sum(s) and sum(s^2) over buckets.
    pub d_entries: i128,
    pub d_sum_sq: i128,
}

impl LshDelta {
    pub(crate) fn new(scheme: BandKeyScheme) -> LshDelta {
        LshDelta { scheme, added: BTreeMap::new(), removed: Vec::new(), d_entries: 0, d_sum_sq: 0 }
    }

    pub(crate) fn add(&mut self, info: &CollectionInfo, row: u64, sketch: &Sketch) -> Result<(), StorageError> {
        let rows = lsh_rows(sketch).map_err(index_err(info))?;
        let keys = self.scheme.keys(&rows).map_err(index_err(info))?;
        self.added.insert(row, keys);
        Ok(())
    }

    pub(crate) fn remove(&mut self, row: u64) {
        // A row added and removed in one transaction never reaches the tables.
        if self.added.remove(&row).is_none() {
            self.removed.push(row);
        }
    }

    /// Applies the changes: reverse map first, then each touched bucket in key order.
    pub(crate) fn flush(&mut self, txn: &WriteTransaction, info: &CollectionInfo) -> Result<(), StorageError> {
        let id = info.def.id;
        // (band, key) -> (rows to add, rows to remove)
        let mut touched: BTreeMap<(u32, u64), (Vec<u64>, Vec<u64>)> = BTreeMap::new();
        {
            let mut rev = txn.open_table(LSH_ROWS).map_err(StorageError::backend("open table"))?;
            for &row in &self.removed {
                let v = rev.remove((id, row)).map_err(StorageError::backend("remove lsh reverse entry"))?;
                let Some(v) = v else {
                    return Err(crate::storage::writer::inconsistent(
                        info,
                        row,
                        "a removed row has no entry in sketchdb.lsh_rows",
                    ));
                };
                let mut keys = Vec::new();
                push_rows(v.value(), &mut keys);
                for (b, k) in keys.into_iter().enumerate() {
                    touched.entry((b as u32, k)).or_default().1.push(row);
                }
            }
            let mut bytes = Vec::new();
            for (&row, keys) in &self.added {
                bytes.clear();
                keys.iter().for_each(|k| bytes.extend_from_slice(&k.to_le_bytes()));
                rev.insert((id, row), bytes.as_slice()).map_err(StorageError::backend("write lsh reverse entry"))?;
                for (b, &k) in keys.iter().enumerate() {
                    touched.entry((b as u32, k)).or_default().0.push(row);
                }
            }
        }
        let mut table = txn.open_table(LSH_BUCKETS).map_err(StorageError::backend("open table"))?;
        for ((band, key), (adds, mut removes)) in touched {
            removes.sort_unstable();
            let (old, new) = apply_bucket(&mut table, info, band, key, &adds, &removes)?;
            let (old, new) = (i128::from(old), i128::from(new));
            self.d_entries += new - old;
            self.d_sum_sq += new * new - old * old;
        }
        self.added.clear();
        self.removed.clear();
        Ok(())
    }
}

type BucketTable<'t> = Table<'t, (u32, u32, u64, u32), &'static [u8]>;

/// Reads every row id of a bucket (all chunks), with its header; `None` when absent.
pub(crate) fn read_bucket(
    table: &impl ReadableTable<(u32, u32, u64, u32), &'static [u8]>,
    info: &CollectionInfo,
    band: u32,
    key: u64,
    out: &mut Vec<u64>,
) -> Result<Option<BucketHeader>, StorageError> {
    let id = info.def.id;
    let Some(v) = table.get((id, band, key, 0)).map_err(StorageError::backend("read lsh bucket"))? else {
        return Ok(None);
    };
    let (h, rows) = parse_chunk0(v.value()).map_err(|d| lsh_err(info, band, key, d))?;
    push_rows(rows, out);
    if h.last_chunk > 0 {
        let range = table
            .range((id, band, key, 1u32)..=(id, band, key, h.last_chunk))
            .map_err(StorageError::backend("read lsh bucket"))?;
        for e in range {
            let (_, v) = e.map_err(StorageError::backend("read lsh bucket"))?;
            push_rows(v.value(), out);
        }
    }
    Ok(Some(h))
}

/// Applies sorted `adds` and `removes` to one bucket; returns its (old, new) size.
fn apply_bucket(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    band: u32,
    key: u64,
    adds: &[u64],
    removes: &[u64],
) -> Result<(u64, u64), StorageError> {
    let id = info.def.id;
    let head = match table.get((id, band, key, 0)).map_err(StorageError::backend("read lsh bucket"))? {
        Some(v) => {
            let (h, rows) = parse_chunk0(v.value()).map_err(|d| lsh_err(info, band, key, d))?;
            let mut r = Vec::with_capacity(rows.len() / 8 + adds.len());
            push_rows(rows, &mut r);
            Some((h, r))
        }
        None => None,
    };
    let old_total = head.as_ref().map_or(0, |(h, _)| h.total);
    // Fast path: only appends of rows above every stored id, into the last chunk.
    if removes.is_empty()
        && let Some((h, chunk0)) = &head
    {
        {
            let (mut last_rows, last_no) = if h.last_chunk == 0 {
                (chunk0.clone(), 0)
            } else {
                let mut r = Vec::new();
                if let Some(v) =
                    table.get((id, band, key, h.last_chunk)).map_err(StorageError::backend("read lsh bucket"))?
                {
                    push_rows(v.value(), &mut r);
                }
                (r, h.last_chunk)
            };
            let ascending = match (last_rows.last(), adds.first()) {
                (Some(&l), Some(&a)) => a > l,
                _ => h.last_chunk == 0 || !last_rows.is_empty(),
            };
            if ascending {
                let mut total = h.total;
                let mut chunk_no = last_no;
                let mut rest = adds;
                let room = CHUNK_ROWS.saturating_sub(last_rows.len()).min(rest.len());
                last_rows.extend_from_slice(&rest[..room]);
                rest = &rest[room..];
                total += room as u64;
                let mut chunks: Vec<(u32, Vec<u64>)> = vec![(chunk_no, last_rows)];
                for c in rest.chunks(CHUNK_ROWS) {
                    chunk_no += 1;
                    total += c.len() as u64;
                    chunks.push((chunk_no, c.to_vec()));
                }
                let header = BucketHeader { total, last_chunk: chunk_no };
                for (no, rows) in &chunks {
                    if *no != 0 {
                        write_chunk(table, id, band, key, *no, None, rows)?;
                    }
                }
                let c0: &[u64] = if last_no == 0 { &chunks[0].1 } else { chunk0 };
                write_chunk(table, id, band, key, 0, Some(header), c0)?;
                return Ok((old_total, total));
            }
        }
    }
    // General path: read the whole bucket, merge, rewrite every chunk.
    let mut all = Vec::new();
    if let Some((h, chunk0)) = head {
        all = chunk0;
        if h.last_chunk > 0 {
            let range = table
                .range((id, band, key, 1u32)..=(id, band, key, h.last_chunk))
                .map_err(StorageError::backend("read lsh bucket"))?;
            for e in range {
                let (_, v) = e.map_err(StorageError::backend("read lsh bucket"))?;
                push_rows(v.value(), &mut all);
            }
            table
                .retain_in((id, band, key, 1u32)..=(id, band, key, h.last_chunk), |_, _| false)
                .map_err(StorageError::backend("rewrite lsh bucket"))?;
        }
    }
    let before = all.len();
    all.retain(|r| removes.binary_search(r).is_err());
    if before - all.len() != removes.len() {
        return Err(lsh_err(
            info,
            band,
            key,
            format!("{} rows to remove, {} found", removes.len(), before - all.len()),
        ));
    }
    all.extend_from_slice(adds);
    all.sort_unstable();
    if all.is_empty() {
        table.remove((id, band, key, 0)).map_err(StorageError::backend("remove lsh bucket"))?;
        return Ok((old_total, 0));
    }
    let chunks: Vec<&[u64]> = all.chunks(CHUNK_ROWS).collect();
    let header = BucketHeader { total: all.len() as u64, last_chunk: (chunks.len() - 1) as u32 };
    for (no, rows) in chunks.iter().enumerate() {
        write_chunk(table, id, band, key, no as u32, (no == 0).then_some(header), rows)?;
    }
    Ok((old_total, all.len() as u64))
}

fn write_chunk(
    table: &mut BucketTable<'_>,
    id: u32,
    band: u32,
    key: u64,
    no: u32,
    header: Option<BucketHeader>,
    rows: &[u64],
) -> Result<(), StorageError> {
    let v = encode_chunk(header, rows);
    table.insert((id, band, key, no), v.as_slice()).map_err(StorageError::backend("write lsh bucket"))?;
    Ok(())
}
