//! Reading a collection's pages inside a write transaction (index rebuilds): every live
//! row, with its page's removed rows (both side tables) ORed in.

use redb::{ReadableTable, WriteTransaction};

use super::catalog::CollectionInfo;
use super::error::StorageError;
use super::index_tables::IndexTxn;
use super::rules::inconsistent;
use super::tables::PAGES;
use crate::codec::page::PageView;
use crate::sketch::params::SketchKind;
use crate::sketch::sketcher::Sketch;

/// Calls `f(row, sketch)` for every live row of the collection, in row order, reading the
/// pages through the write transaction `txn` (index rebuilds).
pub(crate) fn for_each_live_in<E: From<StorageError>>(
    txn: &IndexTxn<'_>,
    info: &CollectionInfo,
    mut f: impl FnMut(u64, &Sketch) -> Result<(), E>,
) -> Result<(), E> {
    for_each_page_in(txn.0, info, |first, view| {
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            let sketch = super::reader::decode(info, view, first, i)?;
            f(view.first_row() + i as u64, &sketch)?;
        }
        Ok(())
    })
}

/// Calls `f(row, fingerprint)` for every live row of a SimHash collection, in row order:
/// [`for_each_live_in`] without building a sketch per row (a SimHash table rebuild).
pub(crate) fn for_each_live_fingerprint_in(
    txn: &IndexTxn<'_>,
    info: &CollectionInfo,
    mut f: impl FnMut(u64, u128),
) -> Result<(), StorageError> {
    if info.def.params.kind() != SketchKind::SimHash {
        return Err(inconsistent(info, 0, "a fingerprint scan of a collection that is not SimHash"));
    }
    // `parse_expected` checked the page's layout: one 8-byte value column per 64 bits.
    for_each_page_in(txn.0, info, |_, view| {
        let wide = view.layout().value_cols > 1;
        for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
            let hi = if wide { u128::from(view.value(1, i)) << 64 } else { 0 };
            f(view.first_row() + i as u64, u128::from(view.value(0, i)) | hi);
        }
        Ok(())
    })
}

/// Calls `f(first row, page)` for every page of the collection, in row order, each checked.
fn for_each_page_in<E: From<StorageError>>(
    txn: &WriteTransaction,
    info: &CollectionInfo,
    mut f: impl FnMut(u64, &PageView<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let pages = txn.open_table(PAGES).map_err(StorageError::backend("open table"))?;
    let dead = super::dead::open_both_in(txn)?;
    let id = info.def.id;
    for entry in pages.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))? {
        let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
        let first = k.value().1;
        super::rules::with_page(&dead, info, first, v.value(), |view| f(first, view))??;
    }
    Ok(())
}
