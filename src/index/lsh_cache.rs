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
//! definitions keep theirs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, RwLock};
use redb::ReadOnlyTable;

use super::lsh::{At, ChunkView, Groups, RunKey, lsh_err};
use super::meta::IndexDef;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::{ReadSnapshot, open};
use crate::storage::tables::{INDEX_DEFS, LSH_BUCKETS};

/// Bytes of chunk values all caches together may hold.
pub(crate) const CACHE_BUDGET: usize = 1 << 30;
/// Definitions whose caches are kept.
pub(crate) const MAX_CACHES: usize = 8;

/// Bytes currently held by all caches.
static HELD: AtomicUsize = AtomicUsize::new(0);
/// Live caches, least recently used first.
static CACHES: Mutex<Vec<Arc<ProbeCache>>> = Mutex::new(Vec::new());

/// (band, run, group, chunk).
type ChunkKey = (u32, u32, u64, u32);

/// The decoded definition of one index version and the chunks probes have read from it.
pub(crate) struct ProbeCache {
    store: u64,
    collection: u32,
    def_bytes: Vec<u8>,
    pub(crate) def: Arc<IndexDef>,
    /// `None`: no such chunk.
    chunks: RwLock<HashMap<ChunkKey, Option<Arc<[u8]>>>>,
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
        let c = Arc::new(ProbeCache {
            store,
            collection,
            def_bytes: bytes.to_vec(),
            def,
            chunks: RwLock::new(HashMap::new()),
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

    /// The chunk value at `key`, from the cache or read through `table` (opened on first
    /// need) and kept while the budget allows.
    fn chunk(
        &self,
        snap: &ReadSnapshot,
        table: &mut Option<Option<ReadOnlyTable<RunKey, &'static [u8]>>>,
        key: ChunkKey,
    ) -> Result<Option<Arc<[u8]>>, StorageError> {
        if let Some(v) = self.chunks.read().get(&key) {
            return Ok(v.clone());
        }
        if table.is_none() {
            *table = Some(open(snap.txn(), LSH_BUCKETS)?);
        }
        let Some(Some(t)) = table.as_ref() else { return Ok(None) };
        let (band, run, group, chunk) = key;
        let value = t
            .get((self.collection, band, run, group, chunk))
            .map_err(StorageError::backend("read lsh group"))?
            .map(|v| Arc::<[u8]>::from(v.value()));
        let len = value.as_ref().map_or(0, |v| v.len()) + 64;
        if HELD.fetch_add(len, Ordering::Relaxed) + len <= CACHE_BUDGET {
            self.held.fetch_add(len, Ordering::Relaxed);
            self.chunks.write().insert(key, value.clone());
        } else {
            HELD.fetch_sub(len, Ordering::Relaxed);
        }
        Ok(value)
    }

    /// Appends the row ids stored under band key `key` of `band` in run `run` (group width
    /// `g`): chunk by chunk, the next chunk only when the suffix reaches a chunk's last.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rows_of(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        table: &mut Option<Option<ReadOnlyTable<RunKey, &'static [u8]>>>,
        g: Groups,
        band: u32,
        run: u32,
        key: u64,
        out: &mut Vec<u64>,
    ) -> Result<(), StorageError> {
        let (group, suffix) = (g.group(key), g.suffix(key));
        let mut chunk = 0u32;
        loop {
            let Some(bytes) = self.chunk(snap, table, (band, run, group, chunk))? else { return Ok(()) };
            let view = ChunkView::parse(&bytes, g).map_err(|d| lsh_err(info, At { band, run, group }, d))?;
            view.rows_of(suffix, out);
            if suffix < view.last_suffix() || chunk == u32::MAX {
                return Ok(());
            }
            chunk += 1;
        }
    }
}
