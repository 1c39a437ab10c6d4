//! A process-wide cache of LSH bucket chunks for probes, valid across transactions.
//!
//! What an LSH index holds is a function of the collection and its definition's bytes: every
//! write that changes the index changes the definition (a new run takes a fresh run number,
//! never reused; a removal lowers its run's `entries`), and a run holds exactly the live rows
//! of its row range, a set that only shrinks, so equal bytes mean equal live rows and equal
//! entries. A probe therefore reads the definition (as it must anyway) and keeps its chunks
//! in the cache of (database handle, collection, definition bytes): a later probe of the same
//! index finds them without a B-tree descent per band and run. A commit that changes the
//! index makes a new definition and so a new, empty cache; snapshots of older commits keep
//! using theirs while it lasts.
//!
//! The cache holds copies of chunk values, at most [`CACHE_BUDGET`] bytes in all (chunks read
//! once the budget is spent are not kept); the [`MAX_CACHES`] most recently used
//! definitions keep theirs. Chunk 0 of a group sits in a slot of its own, found by the run's
//! position, the band and the group number without hashing or locking (one memory access
//! before the chunk's bytes); continuation chunks, and runs of more than `2^DIRECT_BITS`
//! groups, go through a map.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use redb::ReadOnlyTable;

use super::lsh::{At, ChunkView, Groups, RunKey, lsh_err};
use super::meta::{IndexDef, IndexSpec, LshRun};
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, open};
use crate::storage::tables::{INDEX_DEFS, LSH_BUCKETS};

/// Bytes of chunk values (and slots) all caches together may hold.
pub(crate) const CACHE_BUDGET: usize = 1 << 30;
/// Definitions whose caches are kept.
pub(crate) const MAX_CACHES: usize = 8;
/// Runs of at most `2^DIRECT_BITS` groups per band get a slot per group.
const DIRECT_BITS: u32 = 18;
/// Bookkeeping bytes counted per cached chunk.
const CHUNK_OVERHEAD: usize = 64;

/// Bytes currently held by all caches.
static HELD: AtomicUsize = AtomicUsize::new(0);
/// Live caches, least recently used first.
static CACHES: Mutex<Vec<Arc<ProbeCache>>> = Mutex::new(Vec::new());

/// (band, run, group, chunk).
type ChunkKey = (u32, u32, u64, u32);
/// A chunk value: `None` when the index has no such chunk.
type Slot = OnceLock<Option<Box<[u8]>>>;
/// A table of `sketchdb.lsh_runs`, opened on first need.
pub(crate) type LazyTable = Option<Option<ReadOnlyTable<RunKey, &'static [u8]>>>;

/// The decoded definition of one index version and the chunks probes have read from it.
pub(crate) struct ProbeCache {
    store: u64,
    collection: u32,
    def_bytes: Vec<u8>,
    pub(crate) def: Arc<IndexDef>,
    bands: usize,
    /// Per (run position, band): chunk 0 of each group of the run.
    direct: Box<[OnceLock<Box<[Slot]>>]>,
    /// Every other chunk.
    other: RwLock<HashMap<ChunkKey, Option<Arc<[u8]>>>>,
    held: AtomicUsize,
}

impl Drop for ProbeCache {
    fn drop(&mut self) {
        HELD.fetch_sub(*self.held.get_mut(), Ordering::Relaxed);
    }
}

impl ProbeCache {
    /// The cache of the collection's index as of `snap`, or `None` without an index.
    pub(crate) fn of(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Option<Arc<ProbeCache>>, StorageError> {
        let Some(t) = open(snap.txn(), INDEX_DEFS)? else { return Ok(None) };
        let Some(v) = t.get(info.def.id).map_err(StorageError::backend("read index definition"))? else {
            return Ok(None);
        };
        let bytes = v.value();
        let (store, collection) = (snap.store_id(), info.def.id);
        let mut caches = CACHES.lock();
        if let Some(i) =
            caches.iter().position(|c| c.store == store && c.collection == collection && c.def_bytes == bytes)
        {
            let c = caches.remove(i);
            caches.push(c.clone());
            return Ok(Some(c));
        }
        let def = Arc::new(IndexDef::decode(collection, bytes)?);
        let (bands, runs) = match &def.spec {
            IndexSpec::Lsh { scheme, runs, .. } => (scheme.params.bands as usize, runs.len()),
            _ => (0, 0),
        };
        let c = Arc::new(ProbeCache {
            store,
            collection,
            def_bytes: bytes.to_vec(),
            def,
            bands,
            direct: (0..bands * runs).map(|_| OnceLock::new()).collect(),
            other: RwLock::new(HashMap::new()),
            held: AtomicUsize::new(0),
        });
        // The newest definition of a collection supersedes its older ones.
        caches.retain(|o| !(o.store == store && o.collection == collection));
        if caches.len() >= MAX_CACHES {
            caches.remove(0);
        }
        caches.push(c.clone());
        Ok(Some(c))
    }

    /// Reserves `len` bytes of the budget for this cache; false when they do not fit.
    fn reserve(&self, len: usize) -> bool {
        if HELD.fetch_add(len, Ordering::Relaxed) + len <= CACHE_BUDGET {
            self.held.fetch_add(len, Ordering::Relaxed);
            true
        } else {
            HELD.fetch_sub(len, Ordering::Relaxed);
            false
        }
    }

    /// Returns reserved bytes that were not used.
    fn release(&self, len: usize) {
        HELD.fetch_sub(len, Ordering::Relaxed);
        self.held.fetch_sub(len, Ordering::Relaxed);
    }

    /// Reads one chunk value through `table` (opened on first need).
    fn read(&self, snap: &ReadSnapshot, table: &mut LazyTable, key: ChunkKey) -> Result<Option<Vec<u8>>, StorageError> {
        if table.is_none() {
            *table = Some(open(snap.txn(), LSH_BUCKETS)?);
        }
        let Some(Some(t)) = table.as_ref() else { return Ok(None) };
        let (band, run, group, chunk) = key;
        Ok(t.get((self.collection, band, run, group, chunk))
            .map_err(StorageError::backend("read lsh group"))?
            .map(|v| v.value().to_vec()))
    }

    /// The chunk value at `key` of the run at position `pos` of the definition's runs: from
    /// the cache, or read and kept while the budget allows.
    fn chunk<'c>(
        &'c self,
        snap: &ReadSnapshot,
        table: &mut LazyTable,
        pos: usize,
        bits: u32,
        key: ChunkKey,
    ) -> Result<Option<Cow<'c, [u8]>>, StorageError> {
        let (band, _, group, chunk) = key;
        if chunk == 0 && bits <= DIRECT_BITS {
            let cell = &self.direct[pos * self.bands + band as usize];
            let slots = match cell.get() {
                Some(s) => Some(s),
                None => {
                    let n = 1usize << bits;
                    let len = n * std::mem::size_of::<Slot>();
                    self.reserve(len).then(|| {
                        let mut made = false;
                        let slots = cell.get_or_init(|| {
                            made = true;
                            (0..n).map(|_| OnceLock::new()).collect()
                        });
                        if !made {
                            // Another probe made them first.
                            self.release(len);
                        }
                        slots
                    })
                }
            };
            if let Some(slot) = slots.and_then(|s| s.get(group as usize)) {
                if let Some(v) = slot.get() {
                    return Ok(v.as_deref().map(Cow::Borrowed));
                }
                let value = self.read(snap, table, key)?;
                let len = value.as_ref().map_or(0, Vec::len) + CHUNK_OVERHEAD;
                if self.reserve(len) {
                    let mut fresh = Some(value.map(Vec::into_boxed_slice));
                    let v = slot.get_or_init(|| fresh.take().flatten());
                    if fresh.is_some() {
                        // Another probe filled the slot first.
                        self.release(len);
                    }
                    return Ok(v.as_deref().map(Cow::Borrowed));
                }
                return Ok(value.map(Cow::Owned));
            }
        }
        if let Some(v) = self.other.read().get(&key) {
            return Ok(v.as_ref().map(|v| Cow::Owned(v.to_vec())));
        }
        let value = self.read(snap, table, key)?;
        let len = value.as_ref().map_or(0, Vec::len) + CHUNK_OVERHEAD;
        if self.reserve(len) {
            self.other.write().insert(key, value.as_deref().map(Arc::from));
        }
        Ok(value.map(Cow::Owned))
    }

    /// Appends the row ids stored under each band's key (`keys[band]`) in every run. Three
    /// passes over the (band, run) pairs: find each group's first chunk, read its header,
    /// then search it. The reads of one pass do not depend on each other, so their cache
    /// misses overlap instead of following one another band after band.
    pub(crate) fn candidates(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        runs: &[LshRun],
        keys: &[u64],
        out: &mut Vec<u64>,
    ) -> Result<(), StorageError> {
        let mut table = None;
        let mut firsts = Vec::with_capacity(keys.len() * runs.len());
        for (band, &key) in keys.iter().enumerate() {
            for (pos, run) in runs.iter().enumerate() {
                let g = Groups::new(run.group_bits);
                let chunk = self.chunk(snap, &mut table, pos, g.bits, (band as u32, run.id, g.group(key), 0))?;
                firsts.push((band as u32, pos, key, chunk));
            }
        }
        let mut views = Vec::with_capacity(firsts.len());
        for (band, pos, key, chunk) in &firsts {
            let Some(bytes) = chunk else { continue };
            let run = &runs[*pos];
            let g = Groups::new(run.group_bits);
            let at = At { band: *band, run: run.id, group: g.group(*key) };
            views.push((*band, *pos, *key, ChunkView::parse(bytes, g).map_err(|d| lsh_err(info, at, d))?));
        }
        for (band, pos, key, view) in views {
            let suffix = Groups::new(runs[pos].group_bits).suffix(key);
            view.rows_of(suffix, out);
            if suffix >= view.last_suffix() {
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
        let g = Groups::new(run.group_bits);
        let (group, suffix) = (g.group(key), g.suffix(key));
        let mut chunk = first;
        loop {
            let Some(bytes) = self.chunk(snap, table, pos, g.bits, (band, run.id, group, chunk))? else {
                return Ok(());
            };
            let at = At { band, run: run.id, group };
            let view = ChunkView::parse(&bytes, g).map_err(|d| lsh_err(info, at, d))?;
            view.rows_of(suffix, out);
            if suffix < view.last_suffix() || chunk == u32::MAX {
                return Ok(());
            }
            chunk += 1;
        }
    }
}
