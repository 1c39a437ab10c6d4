//! Probing the persisted LSH buckets: candidate row ids for a signature.

use super::keys::band::{BandKeyScheme, lsh_rows};
use super::lsh::{ChunkView, Groups, lsh_err, read_bucket};
use super::meta::{IndexDef, IndexSpec, index_err};
use crate::sketch::sketch::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, open};
use crate::storage::tables::LSH_BUCKETS;

/// The collection's LSH band-key scheme and group geometry; an `Index` error when it has no
/// LSH index.
fn lsh_index(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<(BandKeyScheme, Groups), StorageError> {
    match IndexDef::load(snap.txn(), info)?.as_deref().map(|d| &d.spec) {
        Some(IndexSpec::Lsh { scheme, group_bits, .. }) => Ok((*scheme, Groups::new(*group_bits))),
        _ => Err(StorageError::Index {
            collection: info.def.name.clone(),
            source: Box::new(super::error::IndexError::invalid("index", "none or SimHash", "an LSH index")),
        }),
    }
}

/// The distinct live row ids sharing at least one of the first `bands` band keys with
/// `sketch` (all bands when `bands` exceeds the banding), ascending. A collection without
/// an LSH index is an `Index` error.
pub(crate) fn lsh_candidates(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    sketch: &Sketch,
    bands: u32,
) -> Result<Vec<u64>, StorageError> {
    let (scheme, g) = lsh_index(snap, info)?;
    info.def
        .params
        .check_compatible(sketch.params())
        .map_err(|source| StorageError::Incompatible { collection: info.def.name.clone(), source })?;
    let rows = lsh_rows(sketch).map_err(index_err(info))?;
    let keys = scheme.keys(&rows).map_err(index_err(info))?;
    let mut out = Vec::new();
    let Some(table) = open(snap.txn(), LSH_BUCKETS)? else { return Ok(out) };
    for (band, &key) in keys.iter().enumerate().take(bands as usize) {
        read_bucket(&table, info, g, band as u32, key, &mut out)?;
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The self-join's candidates: every pair of rows `(a, b)`, `a < b`, sharing a band key in
/// one of the first `bands` bands (all bands when `bands` exceeds the banding), each pair
/// once, ascending. One sequential pass over the bucket table: the same pairs as probing
/// every row's own band keys, without a lookup per row and band. A bucket of m rows gives
/// m(m-1)/2 pairs (identical signatures share every bucket).
pub(crate) fn lsh_pairs(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    bands: u32,
) -> Result<Vec<(u64, u64)>, StorageError> {
    let (scheme, g) = lsh_index(snap, info)?;
    let mut out = Vec::new();
    let Some(table) = open(snap.txn(), LSH_BUCKETS)? else { return Ok(out) };
    let id = info.def.id;
    let mut entries: Vec<(u64, u64)> = Vec::new();
    let mut run: Vec<u64> = Vec::new();
    for band in 0..scheme.params.bands.min(bands) {
        let range = table
            .range((id, band, 0u64, 0u32)..=(id, band, u64::MAX, u32::MAX))
            .map_err(StorageError::backend("scan lsh buckets"))?;
        let mut current: Option<u64> = None;
        run.clear();
        for e in range {
            let (k, v) = e.map_err(StorageError::backend("scan lsh buckets"))?;
            let group = k.value().2;
            let view = ChunkView::parse(v.value(), g).map_err(|d| lsh_err(info, band, group, d))?;
            entries.clear();
            view.decode_into(g, group, &mut entries);
            for &(key, row) in &entries {
                if current != Some(key) {
                    emit_pairs(&mut run, &mut out);
                    current = Some(key);
                }
                run.push(row);
            }
        }
        emit_pairs(&mut run, &mut out);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Appends every pair of the rows of one bucket (ordered a < b) and clears it.
fn emit_pairs(run: &mut Vec<u64>, out: &mut Vec<(u64, u64)>) {
    for (i, &a) in run.iter().enumerate() {
        for &b in &run[i + 1..] {
            out.push((a.min(b), a.max(b)));
        }
    }
    run.clear();
}
