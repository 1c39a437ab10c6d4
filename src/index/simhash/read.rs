//! Probing the persisted SimHash tables: radius queries (single and batch) and the
//! self-join, on a read snapshot. Exact: every live row within the radius, each once (the
//! canonical-table rule), identical fingerprints never merged.

use crate::index::error::IndexError;
use std::sync::Arc;

use super::design::SimhashTableDesign;
use super::format::table_field;
use super::format::{BucketView, Geometry};
use super::probe::{SimhashMatch, join_prefix_runs};
use super::runs::{for_each_merged_bucket, merged_bucket};
use super::tables::bucket_err;
use crate::index::defs::{IndexDef, IndexSpec};
use crate::index::fingerprint::Fingerprint;
use crate::index::probe_cache::ProbeCache;
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
    /// Per table, the probed key and its bucket.
    probe_keys: Vec<(u128, u32)>,
    keys128: Vec<u128>,
    rows: Vec<u64>,
    scratch_hits: Vec<(u32, usize)>,
    hits: Vec<SimhashMatch>,
}

/// What every probe of one SimHash index version reads of its definition (derived once per
/// probe cache).
struct Shape {
    design: SimhashTableDesign,
    geometry: Vec<Geometry>,
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
        Some(SimhashProber {
            snap,
            info,
            shape,
            cache: cache.clone(),
            table: None,
            probe_keys: Vec::new(),
            keys128: Vec::new(),
            rows: Vec::new(),
            scratch_hits: Vec::new(),
            hits: Vec::new(),
        })
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
        self.check_radius(radius)?;
        self.hits.clear();
        if self.shape.design.f() == 64 {
            self.probe::<u64>(fp)?;
        } else {
            self.probe::<u128>(fp)?;
        }
        let mut out: Vec<(u64, u32)> =
            self.hits.iter().filter(|m| m.distance <= radius).map(|m| (m.row, m.distance)).collect();
        out.sort_unstable_by_key(|&(row, d)| (d, row));
        Ok(out)
    }

    fn probe<F: Fingerprint>(&mut self, fp: u128) -> Result<(), IndexError> {
        let (info, snap, runs) = (self.info, self.snap, &self.shape.runs);
        let design = &self.shape.design;
        let cache = &self.cache;
        let table = &mut self.table;
        // The tables' places, then their buckets' first lines, are asked for up front: the
        // tables' cache misses then overlap instead of following one another.
        let keys = &mut self.probe_keys;
        keys.clear();
        keys.extend(self.shape.geometry.iter().enumerate().map(|(t, g)| {
            let key = design.permute_u128(t, fp);
            cache.prefetch_slot(t, g.bits, u64::from(g.bucket(key)));
            (key, g.bucket(key))
        }));
        let mut values = Vec::with_capacity(keys.len());
        for (t, (g, &(_, bucket))) in self.shape.geometry.iter().zip(keys.iter()).enumerate() {
            let value = cache.value(t, g.bits, u64::from(bucket), || {
                let Some(table) = Self::table(table, snap)? else { return Ok(None) };
                merged_bucket(table, info, runs, t as u32, *g, bucket)
            })?;
            if let Some(bytes) = &value {
                prefetch(bytes, 0);
                prefetch(bytes, 64);
            }
            values.push(value);
        }
        for (t, ((g, &(key, bucket)), value)) in self.shape.geometry.iter().zip(keys.iter()).zip(values).enumerate() {
            let Some(bytes) = value else { continue };
            // One run's value as stored, or several runs' merged: the field names the first.
            let field = table_field(self.shape.runs.first().copied().unwrap_or(0), t as u32);
            let view = BucketView::parse(&bytes, *g).map_err(|d| bucket_err(self.info, field, bucket, d))?;
            // Keys only; a row id is decoded for the few keys within the radius.
            self.scratch_hits.clear();
            if F::BITS == 64 {
                view.within_u64(*g, bucket, key as u64, design.k(), &mut self.scratch_hits);
            } else {
                self.keys128.clear();
                view.keys_into::<u128>(*g, bucket, &mut self.keys128);
                u128::within(key, &self.keys128, design.k(), &mut self.scratch_hits);
            }
            let query_key = if F::BITS == 64 { u128::from(key as u64) } else { key };
            for &(distance, i) in &self.scratch_hits {
                let stored = if F::BITS == 64 { u128::from(view.key_u64(*g, bucket, i)) } else { self.keys128[i] };
                // The canonical-table rule: a pair is reported by one table only.
                if design.is_canonical(t, stored ^ query_key) {
                    self.hits.push(SimhashMatch { distance, row: view.row(i) });
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
        let (keys, rows) = (&mut self.keys128, &mut self.rows);
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
        let matches = p.within(fp, radius)?;
        let mut rows: Vec<u64> = matches.iter().map(|&(row, _)| row).collect();
        rows.sort_unstable();
        let records = p.cache.records(snap, info, &rows)?;
        Ok((matches.len(), records))
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
