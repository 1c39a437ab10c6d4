//! The cache of index values for probes of one opened database, valid across transactions.
//!
//! What an index holds is a function of the collection, its definition's bytes and, for
//! SimHash tables, the collection's `(next_row, live)`:
//!
//! * LSH: every write that changes the index changes the definition (a new run takes a fresh
//!   run number, never reused; a removal raises its run's `dead`), and a run's entries change
//!   only when it is rewritten under a new number, so equal bytes mean equal entries and an
//!   equal set of live rows among them.
//! * SimHash: the tables hold exactly the live rows. `next_row` never decreases, and while it
//!   stays the same the live set only shrinks, one row per decrement of `live`, so equal
//!   `(next_row, live)` mean an equal live set (the definition's row count does not: an
//!   upsert keeps it).
//!
//! A probe reads the definition (as it must anyway) and keeps the values it reads in the cache
//! of (database handle, collection, definition bytes, version): a later probe of the same
//! index finds them without a B-tree descent. A commit that changes the index makes a new
//! key and so a new, empty cache; snapshots of older commits keep using theirs while it
//! lasts.
//!
//! Each opened database has its own [`ProbeCaches`] (kept in the store's per-database state):
//! its budget and held bytes are its own, so two databases in one process never evict or
//! count against each other. The cache holds copies of values, packed into slabs of up to
//! 16 MiB (advised as transparent huge pages) so that the values of one probe share few pages
//! and TLB entries, at most the budget's bytes in all
//! ([`DEFAULT_BUDGET`] unless [`ProbeCaches::set_budget`] says otherwise; values read once
//! the budget is spent are not kept); the [`MAX_CACHES`] most recently used keys keep theirs.
//! Values live on shelves (LSH: one per band, a slot per group, its value the group's
//! entries of all runs, see [`super::lsh`]; SimHash: one per table, a slot per bucket):
//! a slot's value sits in a place of its own, found by shelf and slot number without hashing
//! or locking (the shelf's page table, then the place, before the value's bytes; pages of
//! places are made as probes first reach them); shelves of more than `2^DIRECT_BITS` slots
//! go through a map. Beside the values, the cache keeps the records of rows queries scored
//! and the rows of keys queries looked up ([`records`]).

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, RwLock};

use super::defs::{IndexDef, IndexSpec};
use crate::index::error::IndexError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::BytesRead;
use crate::storage::reader::ReadSnapshot;
use crate::storage::store::Store;

mod records;
mod row_hash;

use row_hash::RecordMap;

/// Bytes of values (and slots) one database's caches may hold unless
/// [`ProbeCaches::set_budget`] changed it.
pub(crate) const DEFAULT_BUDGET: usize = 1 << 30;
/// Keys whose caches are kept.
pub(crate) const MAX_CACHES: usize = 8;
/// Shelves of at most `2^DIRECT_BITS` slots get a place per slot.
const DIRECT_BITS: u32 = 18;
/// Slots per page of places, at most (`2^PAGE_BITS`, 64 KiB): a first probe makes a page per
/// shelf it reads, not the whole shelf (a shelf of `2^18` places is 16 MiB, and making every
/// table's at once made the first query after an open take milliseconds).
const PAGE_BITS: u32 = 10;

/// Slots per page of places on a shelf of `2^bits` slots: `2^(bits / 2)`, at most
/// `2^PAGE_BITS`, so that the page table and a page are about equally small (a first probe
/// writes both: at `2^13` slots, a 3 KiB table and a 4 KiB page, not 64 KiB of places, which
/// cost the first query after an open half its time in page faults).
#[inline]
fn page_bits(bits: u32) -> u32 {
    (bits / 2).min(PAGE_BITS)
}
/// Bookkeeping bytes counted per cached value.
const VALUE_OVERHEAD: usize = 64;

/// One database's budget and the bytes its caches hold (shared by the caches, which give
/// their bytes back when dropped).
struct Budget {
    bytes: AtomicUsize,
    held: AtomicUsize,
}

/// The probe caches of one opened database: its budget, held bytes and live caches.
pub(crate) struct ProbeCaches {
    budget: Arc<Budget>,
    /// Live caches, least recently used first.
    caches: Mutex<Vec<Arc<ProbeCache>>>,
}

impl Default for ProbeCaches {
    fn default() -> Self {
        let budget = Budget { bytes: AtomicUsize::new(DEFAULT_BUDGET), held: AtomicUsize::new(0) };
        ProbeCaches { budget: Arc::new(budget), caches: Mutex::new(Vec::new()) }
    }
}

impl ProbeCaches {
    /// The caches of the database `store` opened.
    pub(crate) fn of_store(store: &Store) -> Arc<ProbeCaches> {
        store.layer_state::<ProbeCaches>().unwrap_or_default()
    }

    /// The caches of the database `snap` reads.
    fn of_snapshot(snap: &ReadSnapshot) -> Arc<ProbeCaches> {
        snap.layer_state::<ProbeCaches>().unwrap_or_default()
    }

    /// Sets the budget. When it is below what the caches hold, every cache is let go (its
    /// memory returns once the probes using it finish) and probes start afresh.
    pub(crate) fn set_budget(&self, bytes: usize) {
        self.budget.bytes.store(bytes, Ordering::Relaxed);
        if self.budget.held.load(Ordering::Relaxed) > bytes {
            self.caches.lock().clear();
        }
    }

    /// The budget.
    pub(crate) fn budget(&self) -> usize {
        self.budget.bytes.load(Ordering::Relaxed)
    }

    /// Bytes the caches hold now.
    pub(crate) fn held(&self) -> usize {
        self.budget.held.load(Ordering::Relaxed)
    }
}

/// The version a cache of `def` is keyed by: `simhash_version` for SimHash tables, 0 for an
/// LSH index (its definition's bytes fix its entries and live rows, see the module comment).
fn version_of(def: &IndexDef, simhash_version: u128) -> u128 {
    match def.spec {
        IndexSpec::Simhash { .. } => simhash_version,
        _ => 0,
    }
}

/// A value's place: the value, `None` when the index has no such value. Its 40 bytes (a
/// `Bytes` handle and the lock's state) are aligned to a 64-byte cache line, so that no place
/// straddles two lines (at 24 bytes unaligned one place in four did, and a probe then waited
/// for two lines; at 32-byte alignment a 40-byte place straddles them whenever the array
/// starts halfway through a line).
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct Slot(OnceLock<Option<Bytes>>);

impl Slot {
    /// The value kept here: `Some(None)` for a value kept as absent, `None` when nothing is
    /// kept yet.
    #[inline]
    pub(crate) fn kept(&self) -> Option<Option<&[u8]>> {
        self.0.get().map(|v| v.as_deref())
    }
}

/// A page of places.
type Page = Box<[Slot]>;
/// A shelf's pages, each made on first use.
type PageTable = Box<[OnceLock<Page>]>;

/// Bytes of one slab the cache copies values into, at most (a 64th of the budget, at least
/// 4 KiB): at the default budget, 8 transparent huge pages (`simd::HUGE_PAGE`), of which
/// at least 7 lie whole inside the slab wherever the allocator puts it.
const SLAB: usize = 8 * crate::simd::HUGE_PAGE;
/// Values outside the direct places, by (shelf, slot).
type OtherValues = HashMap<(usize, u64), Option<Arc<[u8]>>>;

/// A value as a probe gets it: borrowed from its place, shared from the map, or read and
/// not kept (the budget was spent).
pub(crate) enum Value<'c> {
    Borrowed(&'c [u8]),
    Shared(Arc<[u8]>),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Value<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Value::Borrowed(b) => b,
            Value::Shared(b) => b,
            Value::Owned(b) => b,
        }
    }
}

/// The decoded definition of one index version and the values probes have read from it.
pub(crate) struct ProbeCache {
    /// The database's budget this cache counts against.
    budget: Arc<Budget>,
    store: u64,
    collection: u32,
    def_bytes: Vec<u8>,
    version: u128,
    pub(crate) def: Arc<IndexDef>,
    /// Per shelf (of at most `2^DIRECT_BITS` slots): its pages of places, each page made
    /// when a probe first reads one of its slots.
    direct: Box<[OnceLock<PageTable>]>,
    /// Every other value, by (shelf, slot).
    other: RwLock<OtherValues>,
    /// The records of rows queries have scored (LSH candidates, SimHash matches), by row id,
    /// `None` for a row the index holds that is not live (see [`Self::records`]).
    records: RwLock<RecordMap>,
    /// The rows of keys queries looked up by stored key, `None` for a key with no live row
    /// (see [`Self::row_of_key`]).
    key_rows: RwLock<HashMap<Box<[u8]>, Option<u64>>>,
    held: AtomicUsize,
    /// The slab values are copied into, one after another: the values probes read together
    /// then share pages (copied one allocation each, into a heap a bulk load left scattered,
    /// they landed on a page each, and a probe's time went on TLB misses).
    slab: Mutex<BytesMut>,
    /// What readers of this index version derive from its definition once (see
    /// [`Self::derived`]).
    derived: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl Drop for ProbeCache {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(*self.held.get_mut(), Ordering::Relaxed);
    }
}

impl ProbeCache {
    /// The cache of the collection's index as of `snap`, or `None` without an index.
    /// `simhash_version` is the collection's `next_row << 64 | live` in `snap`: the version
    /// of SimHash tables (an LSH index's version is 0 whatever it is).
    pub(crate) fn of(
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        simhash_version: u128,
    ) -> Result<Option<Arc<ProbeCache>>, IndexError> {
        let Some(t) = snap.index_defs()? else { return Ok(None) };
        let Some(v) = t.get(info.def.id, "read index definition")? else {
            return Ok(None);
        };
        let bytes = v.value();
        let (store, collection) = (snap.store_id(), info.def.id);
        let registry = ProbeCaches::of_snapshot(snap);
        let mut caches = registry.caches.lock();
        // Equal bytes mean an equal definition, so of the same kind and version rule.
        if let Some(i) = caches.iter().position(|c| {
            c.store == store
                && c.collection == collection
                && c.def_bytes == bytes
                && c.version == version_of(&c.def, simhash_version)
        }) {
            let c = caches.remove(i);
            caches.push(c.clone());
            return Ok(Some(c));
        }
        let def = Arc::new(IndexDef::decode(collection, bytes)?);
        let version = version_of(&def, simhash_version);
        let shelves = match &def.spec {
            IndexSpec::Lsh { scheme, .. } => scheme.params.bands as usize,
            IndexSpec::Simhash { design, .. } => design.table_count(),
            IndexSpec::LshGroups { .. } => 0,
        };
        let c = Arc::new(ProbeCache::empty(
            registry.budget.clone(),
            (store, collection),
            bytes.to_vec(),
            version,
            def,
            shelves,
        ));
        // The newest index of a collection supersedes its older ones.
        caches.retain(|o| !(o.store == store && o.collection == collection));
        if caches.len() >= MAX_CACHES {
            caches.remove(0);
        }
        caches.push(c.clone());
        Ok(Some(c))
    }

    /// A cache holding nothing yet for index version (`def_bytes`, `version`) of `collection`
    /// in `store`, with `shelves` shelves, counting against `budget`.
    fn empty(
        budget: Arc<Budget>,
        (store, collection): (u64, u32),
        def_bytes: Vec<u8>,
        version: u128,
        def: Arc<IndexDef>,
        shelves: usize,
    ) -> ProbeCache {
        ProbeCache {
            budget,
            store,
            collection,
            def_bytes,
            version,
            def,
            direct: (0..shelves).map(|_| OnceLock::new()).collect(),
            other: RwLock::new(HashMap::new()),
            records: RwLock::new(RecordMap::default()),
            key_rows: RwLock::new(HashMap::new()),
            held: AtomicUsize::new(0),
            slab: Mutex::new(BytesMut::new()),
            derived: OnceLock::new(),
        }
    }

    /// What `make` derives from this index version's definition, made once (a probe's fixed
    /// setup); `None` when `make` gives nothing or another type was derived first.
    pub(crate) fn derived<T: Any + Send + Sync>(&self, make: impl FnOnce(&IndexDef) -> Option<T>) -> Option<Arc<T>> {
        if let Some(any) = self.derived.get() {
            return any.clone().downcast::<T>().ok();
        }
        let made: Arc<dyn Any + Send + Sync> = Arc::new(make(&self.def)?);
        // Another probe may have derived it meanwhile: the same function of the same
        // definition, so either is right.
        self.derived.get_or_init(|| made).clone().downcast::<T>().ok()
    }

    /// Reserves `len` bytes of the budget for this cache; false when they do not fit.
    fn reserve(&self, len: usize) -> bool {
        let budget = &self.budget;
        if budget.held.fetch_add(len, Ordering::Relaxed) + len <= budget.bytes.load(Ordering::Relaxed) {
            self.held.fetch_add(len, Ordering::Relaxed);
            true
        } else {
            budget.held.fetch_sub(len, Ordering::Relaxed);
            false
        }
    }

    /// Returns reserved bytes that were not used.
    fn release(&self, len: usize) {
        self.budget.held.fetch_sub(len, Ordering::Relaxed);
        self.held.fetch_sub(len, Ordering::Relaxed);
    }

    /// `bytes` copied into the slab (a new slab when it has no room left), or `None` when
    /// the budget cannot take it. A slab counts against the budget whole when it is made, a
    /// value its bookkeeping.
    fn copy_to_slab(&self, bytes: &[u8]) -> Option<Bytes> {
        let mut slab = self.slab.lock();
        if !self.reserve(VALUE_OVERHEAD) {
            return None;
        }
        if slab.capacity() - slab.len() < bytes.len() {
            let size = (self.budget.bytes.load(Ordering::Relaxed) / 64).clamp(4 << 10, SLAB).max(bytes.len());
            if !self.reserve(size) {
                self.release(VALUE_OVERHEAD);
                return None;
            }
            *slab = BytesMut::with_capacity(size);
            // Probes read a slab's values at random for as long as the cache lives: its whole
            // huge pages are backed as such where the system allows (a hint, see
            // `simd::advise_huge_pages`; a slab of the default budget is mostly huge pages).
            crate::simd::advise_huge_pages(slab.spare_capacity_mut());
        }
        slab.extend_from_slice(bytes);
        Some(slab.split().freeze())
    }

    /// The place of slot `slot` on a shelf of `2^bits` slots, if its page exists.
    #[inline]
    fn place(&self, shelf: usize, bits: u32, slot: u64) -> Option<&Slot> {
        if bits > DIRECT_BITS {
            return None;
        }
        let pages = self.direct.get(shelf)?.get()?;
        let pb = page_bits(bits);
        pages.get((slot >> pb) as usize)?.get()?.get((slot & ((1 << pb) - 1)) as usize)
    }

    /// [`Self::place`], making the shelf's page table and the page when they do not exist
    /// yet and the budget takes them (`None` when it does not).
    fn place_or_make(&self, shelf: usize, bits: u32, slot: u64) -> Option<&Slot> {
        if bits > DIRECT_BITS {
            return None;
        }
        let pb = page_bits(bits);
        let pages = self.made(self.direct.get(shelf)?, 1usize << (bits - pb), OnceLock::new)?;
        let page = self.made(pages.get((slot >> pb) as usize)?, 1usize << pb, Slot::default)?;
        page.get((slot & ((1 << pb) - 1)) as usize)
    }

    /// The array in `cell`, made of `n` times `item()` (its bytes reserved from the budget)
    /// when it does not exist yet; `None` when the budget cannot take it.
    fn made<'c, T>(&self, cell: &'c OnceLock<Box<[T]>>, n: usize, item: impl Fn() -> T) -> Option<&'c [T]> {
        if let Some(a) = cell.get() {
            return Some(a);
        }
        let len = n * std::mem::size_of::<T>();
        if !self.reserve(len) {
            return None;
        }
        let mut made = false;
        let a = cell.get_or_init(|| {
            made = true;
            (0..n).map(|_| item()).collect()
        });
        if !made {
            // Another probe made it first.
            self.release(len);
        }
        Some(a)
    }

    /// Asks for the cache line of the place of slot `slot` on `shelf` ahead of
    /// [`Self::value`]; nothing when the slot has no direct place yet.
    #[inline]
    pub(crate) fn prefetch_slot(&self, shelf: usize, bits: u32, slot: u64) {
        let _ = self.prefetched_place(shelf, bits, slot);
    }

    /// The place of slot `slot` on `shelf` (a shelf of `2^bits` slots), its line asked for:
    /// `None` when it has no direct place yet. Its [`Slot::kept`] is then read without a
    /// second lookup; [`Self::value`] when nothing is kept.
    #[inline]
    pub(crate) fn prefetched_place(&self, shelf: usize, bits: u32, slot: u64) -> Option<&Slot> {
        let place = self.place(shelf, bits, slot)?;
        crate::simd::prefetch_ref(place);
        Some(place)
    }

    /// The value of slot `slot` on `shelf` (a shelf of `2^bits` slots): from the cache,
    /// or from `read` and kept while the budget allows.
    pub(crate) fn value<'c>(
        &'c self,
        shelf: usize,
        bits: u32,
        slot: u64,
        read: impl FnOnce() -> Result<Option<Vec<u8>>, IndexError>,
    ) -> Result<Option<Value<'c>>, IndexError> {
        if bits <= DIRECT_BITS {
            let place = match self.place(shelf, bits, slot) {
                Some(p) => Some(p),
                None => self.place_or_make(shelf, bits, slot),
            };
            if let Some(place) = place {
                if let Some(v) = place.0.get() {
                    return Ok(v.as_deref().map(Value::Borrowed));
                }
                let value = read()?;
                let kept = match &value {
                    None => self.reserve(VALUE_OVERHEAD).then_some(None),
                    Some(v) => self.copy_to_slab(v).map(Some),
                };
                let Some(kept) = kept else { return Ok(value.map(Value::Owned)) };
                let mut fresh = Some(kept);
                let v = place.0.get_or_init(|| fresh.take().flatten());
                if fresh.is_some() {
                    // Another probe filled the place first (the copy's slab bytes stay spent).
                    self.release(VALUE_OVERHEAD);
                }
                return Ok(v.as_deref().map(Value::Borrowed));
            }
        }
        let key = (shelf, slot);
        if let Some(v) = self.other.read().get(&key) {
            return Ok(v.clone().map(Value::Shared));
        }
        let value = read()?;
        let len = value.as_ref().map_or(0, Vec::len) + VALUE_OVERHEAD;
        if !self.reserve(len) {
            return Ok(value.map(Value::Owned));
        }
        let shared: Option<Arc<[u8]>> = value.map(Arc::from);
        self.other.write().insert(key, shared.clone());
        Ok(shared.map(Value::Shared))
    }
}

#[cfg(test)]
#[path = "probe_cache_tests.rs"]
mod tests;
