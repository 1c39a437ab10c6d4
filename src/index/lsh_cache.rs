//! LSH probes through the [`ProbeCache`]: one shelf per (run position, band), one slot per
//! group of the run, chunk numbers as the group's chunks.

use redb::ReadOnlyTable;

use super::lsh::{At, ChunkView, Groups, RunKey, lsh_err};
use super::meta::LshRun;
use super::prefetch::prefetch;
use super::probe_cache::{ProbeCache, Value};
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, open};
use crate::storage::tables::LSH_BUCKETS;

/// A table of `sketchdb.lsh_runs`, opened on first need.
type LazyTable = Option<Option<ReadOnlyTable<RunKey, &'static [u8]>>>;

/// (band, run, group, chunk).
type ChunkKey = (u32, u32, u64, u32);

/// LSH probing of one index version.
pub(crate) struct LshProbe<'c> {
    pub(crate) cache: &'c ProbeCache,
    bands: usize,
    /// The significant bits of the scheme's band keys.
    key_bits: u32,
}

impl<'c> LshProbe<'c> {
    pub(crate) fn new(cache: &'c ProbeCache, bands: usize, key_bits: u32) -> Self {
        LshProbe { cache, bands, key_bits }
    }

    /// The chunk at `key` of the run at position `pos` (with `bits` group bits).
    fn chunk(
        &self,
        snap: &ReadSnapshot,
        table: &mut LazyTable,
        pos: usize,
        bits: u32,
        key: ChunkKey,
    ) -> Result<Option<Value<'c>>, StorageError> {
        let (band, run, group, chunk) = key;
        let collection = self.cache.collection();
        self.cache.value(pos * self.bands + band as usize, bits, group, chunk, || {
            if table.is_none() {
                *table = Some(open(snap.txn(), LSH_BUCKETS)?);
            }
            let Some(Some(t)) = table.as_ref() else { return Ok(None) };
            Ok(t.get((collection, band, run, group, chunk))
                .map_err(StorageError::backend("read lsh group"))?
                .map(|v| v.value().to_vec()))
        })
    }

    /// Appends the row ids stored under each band's key (`keys[band]`) in every run. Passes
    /// over the (band, run) pairs: prefetch each group's cache place; find each group's first
    /// chunk and prefetch its header; read the header and prefetch the guessed entry; then
    /// search. The lines one pass asks for do not depend on each other, and a prefetch does
    /// not wait for its line (an early load held the reorder buffer until it arrived), so
    /// the misses of all bands overlap instead of following one another band after band.
    pub(crate) fn candidates(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        runs: &[LshRun],
        keys: &[u64],
        out: &mut Vec<u64>,
    ) -> Result<(), StorageError> {
        let mut table: LazyTable = None;
        for (band, &key) in keys.iter().enumerate() {
            for (pos, run) in runs.iter().enumerate() {
                let g = Groups::new(self.key_bits, run.group_bits);
                self.cache.prefetch_slot(pos * self.bands + band, g.bits, g.group(key));
            }
        }
        let mut firsts = Vec::with_capacity(keys.len() * runs.len());
        for (band, &key) in keys.iter().enumerate() {
            for (pos, run) in runs.iter().enumerate() {
                let g = Groups::new(self.key_bits, run.group_bits);
                let chunk = self.chunk(snap, &mut table, pos, g.bits, (band as u32, run.id, g.group(key), 0))?;
                if let Some(bytes) = &chunk {
                    prefetch(bytes, 0);
                }
                firsts.push((band as u32, pos, key, chunk));
            }
        }
        // Each view with its key's suffix and guessed position, whose entry is prefetched
        // here: the search below then starts from a cache line already on its way.
        let mut views = Vec::with_capacity(firsts.len());
        for (band, pos, key, chunk) in &firsts {
            let Some(bytes) = chunk else { continue };
            let run = &runs[*pos];
            let g = Groups::new(self.key_bits, run.group_bits);
            let at = At { band: *band, run: run.id, group: g.group(*key) };
            let view = ChunkView::parse(bytes, g).map_err(|d| lsh_err(info, at, d))?;
            let suffix = g.suffix(*key);
            let guess = view.guess(g, suffix);
            view.prefetch_suffix(guess);
            views.push((*band, *pos, *key, view, suffix, guess));
        }
        for (band, pos, key, view, suffix, guess) in views {
            if view.rows_of(suffix, guess, out) {
                self.rows_from(snap, info, &mut table, pos, &runs[pos], band, key, 1, out)?;
            }
        }
        Ok(())
    }

    /// Appends the row ids stored under band key `key` of `band` in `run`, the run at
    /// position `pos` of the definition's runs, from chunk `first` of the key's group on:
    /// chunk by chunk, the next chunk only when the suffix reaches a chunk's last.
    #[allow(clippy::too_many_arguments)]
    fn rows_from(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        table: &mut LazyTable,
        pos: usize,
        run: &LshRun,
        band: u32,
        key: u64,
        first: u32,
        out: &mut Vec<u64>,
    ) -> Result<(), StorageError> {
        let g = Groups::new(self.key_bits, run.group_bits);
        let (group, suffix) = (g.group(key), g.suffix(key));
        let mut chunk = first;
        loop {
            let Some(bytes) = self.chunk(snap, table, pos, g.bits, (band, run.id, group, chunk))? else {
                return Ok(());
            };
            let at = At { band, run: run.id, group };
            let view = ChunkView::parse(&bytes, g).map_err(|d| lsh_err(info, at, d))?;
            if !view.rows_of(suffix, view.guess(g, suffix), out) || chunk == u32::MAX {
                return Ok(());
            }
            chunk += 1;
        }
    }
}
