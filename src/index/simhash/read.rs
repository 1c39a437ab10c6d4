//! Probing the persisted SimHash tables: radius queries (single and batch) and the
//! self-join, on a read snapshot. Exact: every live row within the radius, each once (the
//! canonical-table rule), identical fingerprints never merged.

use std::cell::Cell;
use std::sync::Arc;

use crate::index::error::IndexError;

use super::design::{SimhashTableDesign, TablePermutation};
use super::format::{BucketView, Geometry, table_field};
use super::held::{HeldView, held_of};
use super::probe::{SimhashMatch, join_prefix_runs};
use super::runs::{for_each_merged_bucket, merged_bucket};
use super::tables::bucket_err;
use crate::index::defs::{IndexDef, IndexSpec};
use crate::index::fingerprint::Fingerprint;
use crate::index::probe_cache::{ProbeCache, Value};
use crate::simd::prefetch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::contain;
use crate::storage::index_tables::BucketKey;
use crate::storage::index_tables::BytesView;
use crate::storage::reader::{ReadSnapshot, RowRecord};

type BucketTable = BytesView<BucketKey>;

/// An opened SimHash index of one snapshot: reuse it for many probes.
pub(crate) struct SimhashProber<'i> {
    snap: &'i ReadSnapshot,
    info: &'i CollectionInfo,
    /// The design, geometry and runs of the index version, shared by its probes.
    shape: Arc<Shape>,
    /// The buckets probes read, across transactions while the tables are unchanged.
    cache: Arc<ProbeCache>,
    /// `sketchdb.simhash_buckets`, opened on first need (outer `None`: not yet).
    table: Option<Option<BucketTable>>,
    /// Work buffers, taken from this thread's spare set and given back on drop.
    bufs: Buffers,
}

/// A prober's work buffers. A warm query opens a prober of its own; taking these from the
/// thread's spare set saves it their allocations.
#[derive(Default)]
struct Buffers {
    /// Per table, the probed key and its bucket.
    probe_keys: Vec<(u128, u32)>,
    keys128: Vec<u128>,
    rows: Vec<u64>,
    scratch_hits: Vec<(u32, usize)>,
    hits: Vec<SimhashMatch>,
}

thread_local! {
    /// The buffers of the last prober this thread dropped.
    static SPARE: Cell<Option<Buffers>> = const { Cell::new(None) };
}

impl Drop for SimhashProber<'_> {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut self.bufs);
        // Buffers that grew past a few thousand entries (a self-join) are not kept.
        if bufs.keys128.capacity() <= SPARE_MAX
            && bufs.rows.capacity() <= SPARE_MAX
            && bufs.hits.capacity() <= SPARE_MAX
        {
            SPARE.with(|s| s.set(Some(bufs)));
        }
    }
}

/// Entries a kept buffer may hold, at most.
const SPARE_MAX: usize = 1 << 14;

/// Bytes of each held bucket requested before the first is filtered, at most (a bucket
/// holds about 128 entries: 512 bytes of `hi` words).
const HELD_PREFETCH: usize = 2048;

/// About where a held bucket's `hi` words end, from its length alone (reading its entry
/// count would wait for its first line): of `8 + n(8 + w)` bytes, `8 + 4n(8 + w) / 9`,
/// which is `8 + 4n` for w = 1 and a little past it for wider row ids.
#[inline]
fn held_hi_end(bytes: &[u8]) -> usize {
    8 + (bytes.len().saturating_sub(8)) * 4 / 9
}

/// Tables whose buckets are requested together before they are filtered.
const TABLE_BLOCK: usize = 8;

/// What every probe of one SimHash index version reads of its definition (derived once per
/// probe cache).
struct Shape {
    design: SimhashTableDesign,
    geometry: Vec<Geometry>,
    /// Per table, its permutation (64-bit designs use `apply64`).
    perms: Vec<TablePermutation>,
    /// The index's run numbers: a bucket is read from each and merged (once per cache).
    runs: Vec<u32>,
}

impl Shape {
    /// The shape of `def`; `None` when it is not a SimHash index.
    fn of(def: &IndexDef) -> Option<Shape> {
        let IndexSpec::Simhash { design, bucket_bits, runs, .. } = &def.spec else { return None };
        Some(Shape {
            design: design.clone(),
            geometry: (0..design.table_count()).map(|t| Geometry::of(design, *bucket_bits, t)).collect(),
            perms: (0..design.table_count()).map(|t| design.table_permutation(t)).collect(),
            runs: runs.iter().map(|r| r.id).collect(),
        })
    }
}

fn not_simhash(info: &CollectionInfo) -> IndexError {
    IndexError::Collection {
        collection: info.def.name.clone(),
        source: Box::new(IndexError::invalid("index", "none or LSH", "a SimHash table index")),
    }
}

impl<'i> SimhashProber<'i> {
    /// Opens the collection's SimHash index; `None` when it has none.
    pub(crate) fn open(snap: &'i ReadSnapshot, info: &'i CollectionInfo) -> Result<Option<Self>, IndexError> {
        let state = snap.state(info)?;
        let version = u128::from(state.next_row) << 64 | u128::from(state.live);
        let Some(cache) = ProbeCache::of(snap, info, version)? else { return Ok(None) };
        Ok(Self::open_in(snap, info, &cache))
    }

    /// Opens the SimHash index whose probe cache as of `snap` is `cache`; `None` when it is
    /// not a SimHash index.
    pub(crate) fn open_in(snap: &'i ReadSnapshot, info: &'i CollectionInfo, cache: &Arc<ProbeCache>) -> Option<Self> {
        let shape = match cache.derived(Shape::of) {
            Some(shape) => shape,
            None => Arc::new(Shape::of(&cache.def)?),
        };
        let bufs = SPARE.with(Cell::take).unwrap_or_default();
        Some(SimhashProber { snap, info, shape, cache: cache.clone(), table: None, bufs })
    }

    /// The bucket table, opened on first need (`None`: never created).
    fn table<'t>(
        table: &'t mut Option<Option<BucketTable>>,
        snap: &ReadSnapshot,
    ) -> Result<Option<&'t BucketTable>, IndexError> {
        if table.is_none() {
            *table = Some(snap.simhash_buckets()?);
        }
        Ok(table.as_ref().and_then(Option::as_ref))
    }

    pub(crate) fn radius(&self) -> u32 {
        self.shape.design.k()
    }

    fn check_radius(&self, radius: u32) -> Result<(), IndexError> {
        if radius <= self.radius() {
            return Ok(());
        }
        Err(IndexError::Collection {
            collection: self.info.def.name.clone(),
            source: Box::new(IndexError::invalid("radius", radius, "at most the radius the tables were designed for")),
        })
    }

    /// Every live row within `radius` (<= the design's k) of `fp`, sorted by (distance, row).
    pub(crate) fn within(&mut self, fp: u128, radius: u32) -> Result<Vec<(u64, u32)>, IndexError> {
        self.probe_into_hits(fp, radius)?;
        Ok(self.bufs.hits.iter().map(|m| (m.row, m.distance)).collect())
    }

    /// Probes `fp` and leaves in `bufs.hits` the matches within `radius` (<= the design's
    /// k), sorted by (distance, row).
    fn probe_into_hits(&mut self, fp: u128, radius: u32) -> Result<(), IndexError> {
        self.check_radius(radius)?;
        self.bufs.hits.clear();
        if self.shape.design.f() == 64 {
            self.probe_held(fp as u64)?;
        } else {
            self.probe_wide(fp)?;
        }
        self.bufs.hits.retain(|m| m.distance <= radius);
        self.bufs.hits.sort_unstable();
        Ok(())
    }

    /// The probe of a 64-bit design, over buckets held as words ([`super::held`]): tables
    /// [`TABLE_BLOCK`] at a time, each table's place and then its bucket's first lines asked
    /// for before any is filtered, so that their cache misses overlap.
    fn probe_held(&mut self, fp: u64) -> Result<(), IndexError> {
        let (info, snap, shape, cache) = (self.info, self.snap, &*self.shape, &*self.cache);
        let table = &mut self.table;
        let Buffers { probe_keys, scratch_hits, hits, .. } = &mut self.bufs;
        probe_keys.clear();
        probe_keys.extend(shape.geometry.iter().zip(&shape.perms).enumerate().map(|(t, (g, perm))| {
            let key = u128::from(perm.apply64(fp));
            cache.prefetch_slot(t, g.bits, u64::from(g.bucket(key)));
            (key, g.bucket(key))
        }));
        let design = &shape.design;
        for first in (0..probe_keys.len()).step_by(TABLE_BLOCK) {
            let end = (first + TABLE_BLOCK).min(probe_keys.len());
            let mut values: [Option<Value<'_>>; TABLE_BLOCK] = Default::default();
            for t in first..end {
                let (g, bucket) = (shape.geometry[t], probe_keys[t].1);
                let value = cache.value(t, g.bits, u64::from(bucket), || {
                    let Some(table) = Self::table(table, snap)? else { return Ok(None) };
                    let Some(stored) = merged_bucket(table, info, &shape.runs, t as u32, g, bucket)? else {
                        return Ok(None);
                    };
                    let field = table_field(shape.runs.first().copied().unwrap_or(0), t as u32);
                    held_of(&stored, g, bucket).map(Some).map_err(|d| bucket_err(info, field, bucket, d))
                })?;
                if let Some(bytes) = &value {
                    // The lines of its `hi` words (up to a bound; the filter reads those, and
                    // little else), all asked for before the first bucket is filtered: left to
                    // the filter's stream, each bucket's lines came in one after another.
                    for at in (0..held_hi_end(bytes).min(HELD_PREFETCH)).step_by(64) {
                        prefetch(bytes, at);
                    }
                }
                values[t - first] = value;
            }
            for (t, value) in (first..end).zip(values) {
                let Some(bytes) = value else { continue };
                let (key, bucket) = (probe_keys[t].0 as u64, probe_keys[t].1);
                let field = table_field(shape.runs.first().copied().unwrap_or(0), t as u32);
                let view = HeldView::parse(&bytes).map_err(|d| bucket_err(info, field, bucket, d))?;
                scratch_hits.clear();
                view.within(key, design.k(), scratch_hits);
                for &(distance, i) in scratch_hits.iter() {
                    // The canonical-table rule: a pair is reported by one table only.
                    if design.is_canonical(t, u128::from(view.key(bucket, i) ^ key)) {
                        hits.push(SimhashMatch { distance, row: view.row(i) });
                    }
                }
            }
        }
        Ok(())
    }

    /// The probe of a design wider than 64 bits, over buckets held as stored.
    fn probe_wide(&mut self, fp: u128) -> Result<(), IndexError> {
        let (info, snap, shape, cache) = (self.info, self.snap, &*self.shape, &*self.cache);
        let table = &mut self.table;
        let Buffers { probe_keys, keys128, scratch_hits, hits, .. } = &mut self.bufs;
        probe_keys.clear();
        probe_keys.extend(shape.geometry.iter().zip(&shape.perms).enumerate().map(|(t, (g, perm))| {
            let key = perm.apply(fp);
            cache.prefetch_slot(t, g.bits, u64::from(g.bucket(key)));
            (key, g.bucket(key))
        }));
        let design = &shape.design;
        for (t, (g, &(key, bucket))) in shape.geometry.iter().zip(probe_keys.iter()).enumerate() {
            let value = cache.value(t, g.bits, u64::from(bucket), || {
                let Some(table) = Self::table(table, snap)? else { return Ok(None) };
                merged_bucket(table, info, &shape.runs, t as u32, *g, bucket)
            })?;
            let Some(bytes) = value else { continue };
            // One run's value as stored, or several runs' merged: the field names the first.
            let field = table_field(shape.runs.first().copied().unwrap_or(0), t as u32);
            let view = BucketView::parse(&bytes, *g).map_err(|d| bucket_err(info, field, bucket, d))?;
            scratch_hits.clear();
            keys128.clear();
            view.keys_into::<u128>(*g, bucket, keys128);
            u128::within(key, keys128, design.k(), scratch_hits);
            for &(distance, i) in scratch_hits.iter() {
                // The canonical-table rule: a pair is reported by one table only.
                if design.is_canonical(t, keys128[i] ^ key) {
                    hits.push(SimhashMatch { distance, row: view.row(i) });
                }
            }
        }
        Ok(())
    }

    /// Every pair of live rows within `radius` (<= k), each once as (a, b, distance) with
    /// a < b, sorted by (distance, a, b).
    pub(crate) fn pairs(&mut self, radius: u32) -> Result<Vec<(u64, u64, u32)>, IndexError> {
        self.check_radius(radius)?;
        let mut out = Vec::new();
        let Some(table) = Self::table(&mut self.table, self.snap)? else { return Ok(out) };
        let design = &self.shape.design;
        let (keys, rows) = (&mut self.bufs.keys128, &mut self.bufs.rows);
        let mut hits = Vec::new();
        for (t, g) in self.shape.geometry.iter().enumerate() {
            for_each_merged_bucket(table, self.info, &self.shape.runs, t as u32, *g, |_, entries| {
                keys.clear();
                rows.clear();
                keys.extend(entries.iter().map(|e| e.0));
                rows.extend(entries.iter().map(|e| e.1));
                join_prefix_runs(design, t, keys, rows, radius, &mut hits, |d, a, b| out.push((a, b, d)));
                Ok(())
            })?;
        }
        out.sort_unstable_by_key(|&(a, b, d)| (d, a, b));
        Ok(out)
    }
}

/// Every live row within `radius` of `fp`, sorted by (distance, row). `radius` must not
/// exceed the design's k; a collection without SimHash tables is an `Index` error.
pub(crate) fn simhash_within(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    fp: u128,
    radius: u32,
) -> Result<Vec<(u64, u32)>, IndexError> {
    contain("simhash probe", || {
        let mut p = SimhashProber::open(snap, info)?.ok_or_else(|| not_simhash(info))?;
        p.within(fp, radius)
    })
}

/// The number of [`simhash_within`]'s matches and their records, in row order, for
/// scoring: records an earlier query of the same index version read come from the probe
/// cache, the others from their pages (each page checked), then kept there within the
/// cache's budget. `cache` is the probe cache of the collection's index as of `snap` when
/// the caller has it (`None`: looked up here).
pub(crate) fn simhash_within_records(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    cache: Option<&Arc<ProbeCache>>,
    fp: u128,
    radius: u32,
) -> Result<(usize, Vec<Arc<RowRecord>>), IndexError> {
    contain("simhash probe", || {
        let p = match cache {
            Some(c) => SimhashProber::open_in(snap, info, c),
            None => SimhashProber::open(snap, info)?,
        };
        let mut p = p.ok_or_else(|| not_simhash(info))?;
        p.probe_into_hits(fp, radius)?;
        let Buffers { hits, rows, .. } = &mut p.bufs;
        rows.clear();
        rows.extend(hits.iter().map(|m| m.row));
        rows.sort_unstable();
        let records = p.cache.records(snap, info, rows)?;
        Ok((hits.len(), records))
    })
}

/// The batch form: one result list per query, in query order.
pub(crate) fn simhash_within_batch(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    fps: &[u128],
    radius: u32,
) -> Result<Vec<Vec<(u64, u32)>>, IndexError> {
    contain("simhash probe", || {
        let mut p = SimhashProber::open(snap, info)?.ok_or_else(|| not_simhash(info))?;
        fps.iter().map(|&fp| p.within(fp, radius)).collect()
    })
}

/// The self-join: every pair within `radius`, each once (a < b), sorted by (distance, a, b).
pub(crate) fn simhash_pairs(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    radius: u32,
) -> Result<Vec<(u64, u64, u32)>, IndexError> {
    contain("simhash self-join", || {
        let mut p = SimhashProber::open(snap, info)?.ok_or_else(|| not_simhash(info))?;
        p.pairs(radius)
    })
}
