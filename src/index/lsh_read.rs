//! Probing the persisted LSH buckets: candidate row ids for a signature.

use super::keys::band::lsh_rows;
use super::lsh::{Groups, read_bucket};
use super::meta::{IndexDef, IndexSpec, index_err};
use crate::sketch::sketch::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, open};
use crate::storage::tables::LSH_BUCKETS;

/// The distinct live row ids sharing at least one of the first `bands` band keys with
/// `sketch` (all bands when `bands` exceeds the banding), ascending. A collection without
/// an LSH index is an `Index` error.
pub(crate) fn lsh_candidates(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    sketch: &Sketch,
    bands: u32,
) -> Result<Vec<u64>, StorageError> {
    let def = IndexDef::load(snap.txn(), info)?;
    let Some(IndexSpec::Lsh { scheme, group_bits, .. }) = def.as_deref().map(|d| &d.spec) else {
        return Err(StorageError::Index {
            collection: info.def.name.clone(),
            source: Box::new(super::error::IndexError::invalid("index", "none or SimHash", "an LSH index")),
        });
    };
    info.def
        .params
        .check_compatible(sketch.params())
        .map_err(|source| StorageError::Incompatible { collection: info.def.name.clone(), source })?;
    let rows = lsh_rows(sketch).map_err(index_err(info))?;
    let keys = scheme.keys(&rows).map_err(index_err(info))?;
    let g = Groups::new(*group_bits);
    let mut out = Vec::new();
    let Some(table) = open(snap.txn(), LSH_BUCKETS)? else { return Ok(out) };
    for (band, &key) in keys.iter().enumerate().take(bands as usize) {
        read_bucket(&table, info, g, band as u32, key, &mut out)?;
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
