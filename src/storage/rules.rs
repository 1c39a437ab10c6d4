//! What a write is made of ([`WriteOp`]) and the checks and error builders every read and
//! write path shares (key lengths, damaged pages, tables that disagree).

use super::MAX_KEY_LEN;
use super::catalog::CollectionInfo;
use super::dead::DeadTables;
use super::error::StorageError;
use crate::codec::error::CodecError;
use crate::sketch::sketcher::Sketch;

/// One write of a batch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WriteOp<'a> {
    /// Insert; the key must be absent. With the source content's hash, if any.
    Insert(&'a [u8], &'a Sketch, Option<u128>),
    /// Insert or replace. With the source content's hash, if any.
    Upsert(&'a [u8], &'a Sketch, Option<u128>),
    /// Delete if present.
    Delete(&'a [u8]),
}

/// Checks a user key's length.
pub(crate) fn check_key(info: &CollectionInfo, key: &[u8]) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::EmptyKey { collection: info.def.name.clone() });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(StorageError::KeyTooLong { collection: info.def.name.clone(), len: key.len(), max: MAX_KEY_LEN });
    }
    Ok(())
}

/// Wraps a codec error as a corrupt page of `info` starting at row `page`.
pub(crate) fn corrupt_page(info: &CollectionInfo, page: u64) -> impl FnOnce(CodecError) -> StorageError + '_ {
    // The name is cloned only on error: this is built for every row written.
    move |source| StorageError::CorruptPage {
        collection: info.def.name.clone(),
        collection_id: info.def.id,
        page,
        source: Box::new(source),
    }
}

/// Tables of `info` disagree at `row`.
pub(crate) fn inconsistent(info: &CollectionInfo, row: u64, detail: impl ToString) -> StorageError {
    StorageError::Inconsistent { collection: info.def.name.clone(), row: Some(row), detail: detail.to_string() }
}

/// `view` with `words` (its page's entry, if any) ORed in, after checking the entry against
/// the page: a damaged entry is [`StorageError::CorruptPage`] naming the page.
pub(crate) fn overlay<'b>(
    info: &CollectionInfo,
    view: crate::codec::page::PageView<'b>,
    words: Option<&'b [u64]>,
) -> Result<crate::codec::page::PageView<'b>, StorageError> {
    match words {
        None => Ok(view),
        Some(w) => {
            crate::codec::page::check_dead_words(&view, w).map_err(corrupt_page(info, view.first_row()))?;
            Ok(view.with_dead(w))
        }
    }
}

/// `f` of the stored page `bytes` of `info`'s collection whose first row is `first`, checked,
/// with its removed-rows entries in `dead` ORed in: how every page scan reads a page.
pub(crate) fn with_page<C, L, R>(
    dead: &DeadTables<C, L>,
    info: &CollectionInfo,
    first: u64,
    bytes: &[u8],
    f: impl FnOnce(&crate::codec::page::PageView<'_>) -> R,
) -> Result<R, StorageError>
where
    C: redb::ReadableTable<(u32, u64), u64>,
    L: redb::ReadableTable<(u32, u64), &'static [u8]>,
{
    let view =
        crate::codec::page::PageView::parse_expected(bytes, &info.spec, first).map_err(corrupt_page(info, first))?;
    let words = dead.page_words(info.def.id, first, view.row_count(), |e| corrupt_page(info, first)(e))?;
    Ok(f(&overlay(info, view, words.as_deref())?))
}
