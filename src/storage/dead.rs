//! Removed rows kept beside their pages: `sketchdb.row_dead64` (storage-format.md, section
//! 2.3), and version 2's `sketchdb.row_dead` still read where a file has it. This file holds
//! the tables' raw access; [`super::dead_write`] records removals in a write transaction,
//! `ReadSnapshot::dead_words` (reader.rs) reads them per page, and [`super::rules::overlay`]
//! ORs a page's words into its view.
//!
//! A delete or upsert that ends a row of a page it does not otherwise rewrite sets the row's
//! bit in the entry of the row's 64-row chunk instead of rewriting the page (a 64 KiB value)
//! to set its tombstone bit; neither the page nor its row count is read. Invariants:
//! * an entry is keyed by (collection id, row id / 64), holds one u64 word with at least one
//!   set bit; bit `b` stands for row `64 * chunk + b`, which lies in a stored page and is not
//!   set in that page's own bitmap (a row is removed in one place only);
//! * a row is deleted when its bit is set in its page or in its chunk's entry; every reader
//!   of pages ORs the entries of the page's chunks in ([`DeadTables::page_words`]), taking
//!   only the bits of the page's own rows (a chunk may straddle two pages);
//! * a write that rewrites a page (appending to the tail page, compaction) folds the bits of
//!   the page's rows into its tombstones and clears them here in the same transaction;
//! * the first entry written to a file whose format record states version 1 or 2 upgrades the
//!   record to version 3 in the same transaction (older builds would read the rows as live);
//! * a version-2 entry (`sketchdb.row_dead`, one bitmap per page) is read as if its bits were
//!   in this table; the first write of a collection's records moves them here and deletes
//!   the old table once it is empty.

use redb::{ReadableTable, Table, TableHandle, WriteTransaction};

use super::error::StorageError;
use super::tables::{FORMAT_KEY, META, META_NAME, ROW_DEAD, ROW_DEAD_NAME, ROW_DEAD64, ROW_DEAD64_NAME};
use crate::codec::FILE_FORMAT_VERSION;
use crate::codec::error::CodecError;
use crate::codec::meta::FormatRecord;
use crate::codec::page::dead_words;

/// The chunk table in a write transaction.
pub(crate) type DeadTable<'t> = Table<'t, (u32, u64), u64>;
/// Version 2's per-page table in a write transaction.
pub(crate) type LegacyTable<'t> = Table<'t, (u32, u64), &'static [u8]>;

/// The 64-row chunk of `row`.
pub(crate) fn chunk_of(row: u64) -> u64 {
    row >> 6
}

/// The bits of chunk `chunk` that stand for rows in `first..end`.
pub(crate) fn chunk_mask(chunk: u64, first: u64, end: u64) -> u64 {
    let base = chunk << 6;
    let lo = first.max(base).saturating_sub(base).min(64);
    let hi = end.min(base + 64).saturating_sub(base).min(64);
    if hi <= lo {
        return 0;
    }
    let upper = if hi == 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}

/// ORs chunk `chunk`'s word `w` into `words`, the bitmap of the page of rows `first..first
/// + rows` (bits of other pages' rows are left out).
pub(crate) fn or_chunk(words: &mut [u64], first: u64, rows: usize, chunk: u64, w: u64) {
    let mut w = w & chunk_mask(chunk, first, first + rows as u64);
    while w != 0 {
        let i = ((chunk << 6) + u64::from(w.trailing_zeros()) - first) as usize;
        w &= w - 1;
        if let Some(word) = words.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }
}

/// The error for an entry of the chunk table holding no row.
pub(crate) fn empty_chunk(chunk: u64) -> CodecError {
    CodecError::field("removed-rows chunk", "word", format!("chunk {chunk}: no row"), "at least one removed row")
}

/// Both removed-rows tables as one transaction sees them (either may be absent).
pub(crate) struct DeadTables<C, L> {
    /// `sketchdb.row_dead64`.
    pub chunks: Option<C>,
    /// `sketchdb.row_dead` (version 2).
    pub legacy: Option<L>,
}

impl<C, L> DeadTables<C, L>
where
    C: ReadableTable<(u32, u64), u64>,
    L: ReadableTable<(u32, u64), &'static [u8]>,
{
    /// Whether collection `id` has any entry in either table.
    pub(crate) fn any(&self, id: u32) -> Result<bool, StorageError> {
        let err = || StorageError::backend("read removed rows");
        if let Some(t) = &self.chunks
            && t.range((id, 0u64)..=(id, u64::MAX)).map_err(err())?.next().is_some()
        {
            return Ok(true);
        }
        match &self.legacy {
            Some(t) => Ok(t.range((id, 0u64)..=(id, u64::MAX)).map_err(err())?.next().is_some()),
            None => Ok(false),
        }
    }

    /// The removed-rows words of the page of collection `id` holding rows `first..first +
    /// rows` (laid out like its tombstone bitmap), if any of its rows is listed; not yet
    /// checked against the page ([`crate::codec::page::check_dead_words`]). An entry that
    /// does not decode is `corrupt`'s error (the caller names the page).
    pub(crate) fn page_words(
        &self,
        id: u32,
        first: u64,
        rows: usize,
        corrupt: impl Fn(CodecError) -> StorageError,
    ) -> Result<Option<Vec<u64>>, StorageError> {
        page_words_with(self.chunks.as_ref(), self.legacy.as_ref(), id, first, rows, corrupt, |_| None)
    }
}

/// [`DeadTables::page_words`], where `pending(chunk)` overrides a chunk's stored word (a
/// write transaction's changes not yet written).
pub(crate) fn page_words_with(
    chunks: Option<&impl ReadableTable<(u32, u64), u64>>,
    legacy: Option<&impl ReadableTable<(u32, u64), &'static [u8]>>,
    id: u32,
    first: u64,
    rows: usize,
    corrupt: impl Fn(CodecError) -> StorageError,
    pending: impl Fn(u64) -> Option<u64>,
) -> Result<Option<Vec<u64>>, StorageError> {
    if rows == 0 {
        return Ok(None);
    }
    let err = || StorageError::backend("read removed rows");
    let mut words = vec![0u64; rows.div_ceil(64)];
    let (c0, c1) = (chunk_of(first), chunk_of(first + rows as u64 - 1));
    let mut stored = Vec::new();
    if let Some(t) = chunks {
        for entry in t.range((id, c0)..=(id, c1)).map_err(err())? {
            let (k, v) = entry.map_err(err())?;
            stored.push((k.value().1, v.value()));
        }
    }
    let mut at = 0;
    for chunk in c0..=c1 {
        while at < stored.len() && stored[at].0 < chunk {
            at += 1;
        }
        let on_file = stored.get(at).filter(|e| e.0 == chunk).map(|e| e.1);
        let w = match pending(chunk) {
            Some(w) => w,
            None => match on_file {
                Some(0) => return Err(corrupt(empty_chunk(chunk))),
                Some(w) => w,
                None => continue,
            },
        };
        or_chunk(&mut words, first, rows, chunk, w);
    }
    if let Some(t) = legacy
        && let Some(g) = t.get((id, first)).map_err(err())?
    {
        let old = dead_words(g.value()).map_err(&corrupt)?;
        if old.len() != words.len() {
            let e = CodecError::field("removed-rows bitmap", "length", old.len() * 8, format!("{} B", words.len() * 8));
            return Err(corrupt(e));
        }
        if old.iter().all(|&w| w == 0) {
            return Err(corrupt(CodecError::field(
                "removed-rows bitmap",
                "bits",
                "no row",
                "at least one removed row",
            )));
        }
        for (w, o) in words.iter_mut().zip(old) {
            *w |= o;
        }
    }
    Ok(words.iter().any(|&w| w != 0).then_some(words))
}

/// Rewrites a version-1 or -2 format record as version 3 (the file may now hold entries).
pub(crate) fn upgrade_format(txn: &WriteTransaction) -> Result<(), StorageError> {
    let meta_err =
        |source| StorageError::CorruptMeta { table: META_NAME, key: FORMAT_KEY.into(), source: Box::new(source) };
    let mut meta = txn.open_table(META).map_err(StorageError::backend("open table"))?;
    let record = match meta.get(FORMAT_KEY).map_err(StorageError::backend("read format record"))? {
        Some(g) => FormatRecord::decode(g.value()).map_err(meta_err)?,
        None => return Ok(()),
    };
    if record.format_version >= FILE_FORMAT_VERSION {
        return Ok(());
    }
    let upgraded = FormatRecord { format_version: FILE_FORMAT_VERSION, ..record };
    let bytes = upgraded.encode().map_err(meta_err)?;
    meta.insert(FORMAT_KEY, bytes.as_slice()).map_err(StorageError::backend("write format record"))?;
    Ok(())
}

/// Removes every entry of collection `id` from both tables (drop).
pub(crate) fn drop_collection(txn: &WriteTransaction, id: u32) -> Result<(), StorageError> {
    if let Some(mut t) = open_write_if_exists(txn)? {
        t.retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false).map_err(StorageError::backend("drop removed rows"))?;
    }
    if let Some(mut t) = open_legacy_if_exists(txn)? {
        t.retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false).map_err(StorageError::backend("drop removed rows"))?;
    }
    Ok(())
}

fn exists(txn: &WriteTransaction, name: &str) -> Result<bool, StorageError> {
    Ok(txn.list_tables().map_err(StorageError::backend("list tables"))?.any(|t| t.name() == name))
}

/// The chunk table in a write transaction, if the file has it.
pub(crate) fn open_write_if_exists(txn: &WriteTransaction) -> Result<Option<DeadTable<'_>>, StorageError> {
    if exists(txn, ROW_DEAD64_NAME)? {
        Ok(Some(txn.open_table(ROW_DEAD64).map_err(StorageError::backend("open table"))?))
    } else {
        Ok(None)
    }
}

/// Version 2's table in a write transaction, if the file has it.
pub(crate) fn open_legacy_if_exists(txn: &WriteTransaction) -> Result<Option<LegacyTable<'_>>, StorageError> {
    if exists(txn, ROW_DEAD_NAME)? {
        Ok(Some(txn.open_table(ROW_DEAD).map_err(StorageError::backend("open table"))?))
    } else {
        Ok(None)
    }
}

/// Both tables in a write transaction, each if the file has it.
pub(crate) fn open_both_in(txn: &WriteTransaction) -> Result<DeadTables<DeadTable<'_>, LegacyTable<'_>>, StorageError> {
    Ok(DeadTables { chunks: open_write_if_exists(txn)?, legacy: open_legacy_if_exists(txn)? })
}

#[cfg(test)]
mod tests {
    use super::{chunk_mask, or_chunk};

    #[test]
    fn a_chunk_straddling_two_pages_gives_each_its_own_rows() {
        // Chunk 1 = rows 64..128; pages 0..100 and 100..250.
        let w = (1u64 << 0) | (1 << 35) | (1 << 36) | (1 << 63); // rows 64, 99, 100, 127
        let mut a = vec![0u64; 2];
        or_chunk(&mut a, 0, 100, 1, w);
        assert_eq!(a, vec![0, (1 << 0) | (1 << 35)]);
        let mut b = vec![0u64; 3];
        or_chunk(&mut b, 100, 150, 1, w);
        assert_eq!(b, vec![(1 << 0) | (1 << 27), 0, 0]);
        assert_eq!(chunk_mask(1, 0, 100), (1u64 << 36) - 1);
        assert_eq!(chunk_mask(1, 100, 250), !((1u64 << 36) - 1));
        assert_eq!(chunk_mask(1, 0, 1000), u64::MAX);
        assert_eq!(chunk_mask(5, 0, 100), 0);
        // An unaligned page inside one chunk.
        let mut c = vec![0u64; 1];
        or_chunk(&mut c, 70, 10, 1, u64::MAX);
        assert_eq!(c, vec![(1u64 << 10) - 1]);
    }
}
