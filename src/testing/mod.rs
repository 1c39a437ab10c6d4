//! Hooks for tests, fuzz targets and benches. Not part of the stable API.
#![forbid(unsafe_code)]

use crate::db::collection::Collection;
use crate::db::database::{Database, DatabaseBuilder};
use crate::error::Result;
pub use crate::storage::backend::{Backend, MemoryBackend};

/// Index internals that tests and benches reach: band keys and their scheme, SimHash probes
/// over in-memory runs.
pub use crate::index::{
    BAND_HASH_VERSION, BandKeyScheme, KEY_BITS_V2, LshRows, RowWidth, band_key_u32, band_key_u64, band_key_v3, lsh_rows,
};
pub use crate::index::{
    ProbeScratch, RunView, SIMHASH_PROBE_COST, SimhashMatch, SimhashMemIndex, SimhashPair, filter_bucket,
    simhash_brute_force, simhash_probe, simhash_self_join,
};

pub mod crash;
pub mod faults;
pub mod fuzz;
pub mod fuzz_open;
pub mod model;
pub mod rng;
pub mod simhash;

pub use faults::{CrashPoint, FaultyBackend, IoCounters, IoFault};
pub use fuzz::{fuzz_db_ops, fuzz_meta_decode, fuzz_page_decode, fuzz_sketch_ops, seed_inputs};
pub use fuzz_open::{db_open_seeds, fuzz_db_open};

pub use crate::storage::store::Sharing;

/// Makes the free-space checks of index rebuilds and compaction see `bytes` free on the file
/// system of the database at `path` (the path as opened); `None` restores the real figure.
/// A full disk cannot be made in a test.
pub fn pretend_free_space(path: impl AsRef<std::path::Path>, bytes: Option<u64>) {
    crate::storage::space::pretend_free_space(path.as_ref(), bytes)
}

/// The bytes (keys and values) of a collection's entries in the index tables.
pub fn index_bytes(collection: &Collection, db: &Database) -> Result<u64> {
    Ok(db.store().snapshot()?.index_bytes(collection.info().def.id)?)
}

/// `builder` with another [`Sharing`] mode for read-write handles (to measure them).
pub fn with_sharing(builder: DatabaseBuilder, sharing: Sharing) -> DatabaseBuilder {
    builder.sharing(sharing)
}

/// Creates a database on a custom backend (which must be empty).
pub fn create_on<B: Backend>(builder: DatabaseBuilder, backend: B) -> Result<Database> {
    builder.create_on(backend)
}

/// Opens a database previously created on a custom backend.
pub fn open_on<B: Backend>(builder: DatabaseBuilder, backend: B) -> Result<Database> {
    builder.open_on(backend)
}

/// The first rows of a collection's pages (the pages' keys), in order.
pub fn page_starts(collection: &Collection, db: &Database) -> Result<Vec<u64>> {
    Ok(db.store().snapshot()?.page_starts(collection.info())?)
}

/// A stored page's raw bytes (`page` is its first row).
pub fn read_raw_page(collection: &Collection, db: &Database, page: u64) -> Result<Option<Vec<u8>>> {
    Ok(db.store().snapshot()?.raw_page(collection.info(), page)?)
}

/// Overwrites a stored page's bytes verbatim (no checks): to plant corruption that the storage
/// engine's own checksums do not see.
pub fn write_raw_page(collection: &Collection, db: &Database, page: u64, bytes: &[u8]) -> Result<()> {
    let store = db.store();
    let txn = store.begin_write("test write")?;
    {
        let mut t = txn
            .open_table(crate::storage::tables::PAGES)
            .map_err(crate::storage::StorageError::backend("open table"))?;
        t.insert((collection.info().def.id, page), bytes)
            .map_err(crate::storage::StorageError::backend("write page"))?;
    }
    txn.commit().map_err(crate::storage::StorageError::backend("commit"))?;
    Ok(())
}

/// Rewrites the file's format record with another format version (to test refusal).
pub fn rewrite_format_version(db: &Database, version: u16) -> Result<()> {
    Ok(db.store().rewrite_format_version(version)?)
}

/// Every live row within `radius` of `fp` by the collection's SimHash tables, as
/// `(row, distance)` sorted by (distance, row).
pub fn simhash_within(collection: &Collection, db: &Database, fp: u128, radius: u32) -> Result<Vec<(u64, u32)>> {
    simhash_within_in(&hold_snapshot(db)?, collection, fp, radius)
}

/// The batch form of [`simhash_within`] (one snapshot, one opened index).
pub fn simhash_within_batch(
    collection: &Collection,
    db: &Database,
    fps: &[u128],
    radius: u32,
) -> Result<Vec<Vec<(u64, u32)>>> {
    let snap = db.store().snapshot()?;
    Ok(crate::index::simhash_within_batch(&snap, collection.info(), fps, radius)?)
}

/// Every pair of live rows within `radius`, each once as `(a, b, distance)` with a < b.
pub fn simhash_pairs(collection: &Collection, db: &Database, radius: u32) -> Result<Vec<(u64, u64, u32)>> {
    let snap = db.store().snapshot()?;
    Ok(crate::index::simhash_pairs(&snap, collection.info(), radius)?)
}

/// A read snapshot held open across later commits.
pub struct HeldSnapshot(crate::storage::reader::ReadSnapshot);

/// Takes a snapshot of the database's last commit.
pub fn hold_snapshot(db: &Database) -> Result<HeldSnapshot> {
    Ok(HeldSnapshot(db.store().snapshot()?))
}

/// [`lsh_candidates`] as of a held snapshot.
pub fn lsh_candidates_in(
    snapshot: &HeldSnapshot,
    collection: &Collection,
    sketch: &crate::sketch::sketcher::Sketch,
    bands: u32,
) -> Result<Vec<u64>> {
    Ok(crate::index::lsh_candidates(&snapshot.0, collection.info(), sketch, bands)?)
}

/// [`simhash_within`] as of a held snapshot.
pub fn simhash_within_in(
    snapshot: &HeldSnapshot,
    collection: &Collection,
    fp: u128,
    radius: u32,
) -> Result<Vec<(u64, u32)>> {
    Ok(crate::index::simhash_within(&snapshot.0, collection.info(), fp, radius)?)
}

/// The LSH candidates of `sketch` from the first `bands` bands: distinct live row ids,
/// ascending.
pub fn lsh_candidates(
    collection: &Collection,
    db: &Database,
    sketch: &crate::sketch::sketcher::Sketch,
    bands: u32,
) -> Result<Vec<u64>> {
    lsh_candidates_in(&hold_snapshot(db)?, collection, sketch, bands)
}

/// The LSH statistics: banding and mean hit-bucket size.
pub fn lsh_stats(collection: &Collection, db: &Database) -> Result<Option<(crate::lsh::LshParams, f64)>> {
    let snap = db.store().snapshot()?;
    Ok(crate::index::lsh_stats(&snap, collection.info())?.map(|s| (s.plan.params, s.plan.mean_hit_bucket)))
}

/// The SimHash statistics: (tables, radius, shortest prefix bits).
pub fn simhash_stats(collection: &Collection, db: &Database) -> Result<Option<(u32, u32, u32)>> {
    let snap = db.store().snapshot()?;
    Ok(crate::index::simhash_stats(&snap, collection.info())?.map(|s| (s.tables, s.radius, s.prefix_bits)))
}

/// Plants an index inconsistency that the storage engine's checksums cannot see: drops the first stored
/// LSH bucket chunk or SimHash bucket of the collection. Returns whether one was found.
pub fn drop_first_index_bucket(collection: &Collection, db: &Database) -> Result<bool> {
    use crate::storage::index_tables::BytesRead;
    let id = collection.info().def.id;
    db.store().write_index(|txn| {
        let mut t = txn.lsh_runs()?;
        let first = t
            .range((id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), "scan")?
            .next()
            .transpose()?
            .map(|(k, _)| k);
        if let Some(k) = first {
            t.remove(k, "remove")?;
            return Ok(true);
        }
        let mut t = txn.simhash_buckets()?;
        if let Some((k, _)) = simhash::first_bucket(&t, id)? {
            t.remove(k, "remove")?;
            return Ok(true);
        }
        Ok(false)
    })
}

/// Writes every live row's band keys to `sketchdb.lsh_rows`, as builds before index wire
/// variant 3 kept them, and, when `as_earlier_build`, records the index definition as such a
/// build did (the reverse-map variant); without it the entries are strays the definition does
/// not own. Returns the entries written (0, changing nothing, without an LSH index).
pub fn plant_lsh_reverse_map(collection: &Collection, db: &Database, as_earlier_build: bool) -> Result<u64> {
    use crate::index::{IndexDef, IndexSpec, push_band_keys};
    let live: Vec<(u64, crate::Sketch)> =
        collection.scan()?.map(|r| r.map(|r| (r.row_id, r.sketch))).collect::<Result<_>>()?;
    let info = collection.info();
    db.store().write_index(|txn| {
        let Some(mut def) = IndexDef::load_in(txn, info)? else { return Ok(0) };
        let IndexSpec::Lsh { scheme, reverse_map, .. } = &mut def.spec else { return Ok(0) };
        let scheme = *scheme;
        *reverse_map = as_earlier_build;
        let mut t = txn.lsh_rows()?;
        let mut bytes = Vec::new();
        for (row, sketch) in &live {
            let keys = scheme.sketch_keys(sketch).map_err(crate::index::index_err(info))?;
            bytes.clear();
            push_band_keys(&keys, scheme.key_bits(), &mut bytes);
            t.insert((info.def.id, *row), &bytes, "write")?;
        }
        def.store_in(txn, info)?;
        Ok(live.len() as u64)
    })
}

/// The collection's entries in `sketchdb.lsh_rows`, the reverse map of earlier builds.
pub fn lsh_reverse_entries(collection: &Collection, db: &Database) -> Result<u64> {
    use crate::storage::index_tables::BytesRead;
    let id = collection.info().def.id;
    let snap = db.store().snapshot()?;
    let Some(t) = snap.lsh_rows()? else { return Ok(0) };
    let range = t.range((id, 0u64)..=(id, u64::MAX), "scan")?;
    Ok(range.count() as u64)
}

/// Whether the collection's LSH index definition is the reverse-map variant of earlier builds
/// (`None`: no LSH index).
pub fn lsh_keeps_reverse_map(collection: &Collection, db: &Database) -> Result<Option<bool>> {
    use crate::index::{IndexDef, IndexSpec};
    let snap = db.store().snapshot()?;
    let def = IndexDef::load(&snap, collection.info())?;
    Ok(match def.as_deref().map(|d| &d.spec) {
        Some(IndexSpec::Lsh { reverse_map, .. }) => Some(*reverse_map),
        _ => None,
    })
}

/// Plants a damaged LSH reverse entry: appends one byte to the first `sketchdb.lsh_rows`
/// value of the collection. Returns the row it belongs to, if there was one.
pub fn extend_first_lsh_reverse_entry(collection: &Collection, db: &Database) -> Result<Option<u64>> {
    use crate::storage::index_tables::BytesRead;
    let id = collection.info().def.id;
    db.store().write_index(|txn| {
        let mut t = txn.lsh_rows()?;
        let first =
            t.range((id, 0u64)..=(id, u64::MAX), "scan")?.next().transpose()?.map(|(k, v)| (k.1, v.value().to_vec()));
        Ok(match first {
            Some((row, mut bytes)) => {
                bytes.push(0);
                t.insert((id, row), &bytes, "write")?;
                Some(row)
            }
            None => None,
        })
    })
}

/// Rewrites the collection's LSH index definition in the single-run layout of earlier builds
/// (`IndexSpec::LshGroups`, same scheme) and stores one value in that layout's table, as a
/// file written by such a build holds them. Returns false without an LSH index.
pub fn plant_legacy_lsh_index(collection: &Collection, db: &Database) -> Result<bool> {
    use crate::index::{IndexDef, IndexSpec};
    db.store().write_index(|txn| {
        let Some(def) = IndexDef::load_in(txn, collection.info())? else { return Ok(false) };
        let IndexSpec::Lsh { scheme, threshold, .. } = def.spec else { return Ok(false) };
        let legacy = IndexDef { spec: IndexSpec::LshGroups { scheme, threshold, group_bits: 10 }, ..def };
        legacy.store_in(txn, collection.info())?;
        txn.lsh_groups_v1()?.insert(
            (collection.info().def.id, 0u32, 0u64, 0u32),
            &[1u8, 7, 1, 0, 0, 0, 0, 0],
            "write",
        )?;
        Ok(true)
    })
}

/// Sets the band-hash version of the collection's LSH index while it is still empty, as a
/// file an earlier build created holds it (version 1: full 64-bit band keys; versions 1 and
/// 2: b-bit rows recorded as 4-byte values). Returns false, changing nothing, without an LSH
/// index or when the index already holds entries.
pub fn set_empty_lsh_band_hash_version(collection: &Collection, db: &Database, version: u16) -> Result<bool> {
    use crate::index::{IndexDef, IndexSpec};
    db.store().write_index(|txn| {
        let Some(mut def) = IndexDef::load_in(txn, collection.info())? else { return Ok(false) };
        let IndexSpec::Lsh { scheme, runs, .. } = &mut def.spec else { return Ok(false) };
        if !runs.is_empty() {
            return Ok(false);
        }
        scheme.version = version;
        if version < 3 && matches!(scheme.width, RowWidth::U8 | RowWidth::U16) {
            scheme.width = RowWidth::U32;
        }
        def.store_in(txn, collection.info())?;
        Ok(true)
    })
}

/// Rewrites every LSH chunk value of the collection in chunk layout 1, as builds before
/// layout 2 wrote them (same entries, same keys). Returns the values rewritten.
pub fn rewrite_lsh_chunks_as_layout_1(collection: &Collection, db: &Database) -> Result<usize> {
    use crate::index::{ChunkView, Groups, IndexDef, IndexError, IndexSpec};
    use crate::storage::index_tables::BytesRead;
    db.store().write_index(|txn| {
        let Some(def) = IndexDef::load_in(txn, collection.info())? else { return Ok(0) };
        let IndexSpec::Lsh { scheme, runs, .. } = &def.spec else { return Ok(0) };
        let id = collection.info().def.id;
        let mut n = 0;
        let mut t = txn.lsh_runs()?;
        let mut values: Vec<(crate::index::RunKey, Vec<u8>)> = Vec::new();
        for e in t.range((id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), "scan")? {
            let (k, v) = e?;
            values.push((k, v.value().to_vec()));
        }
        for (key, bytes) in values {
            let bits = runs.iter().find(|r| r.id == key.2).map_or(0, |r| r.group_bits);
            let g = Groups::new(scheme.key_bits(), bits);
            let view = ChunkView::parse(&bytes, g).map_err(|d| IndexError::Corrupt {
                collection: collection.info().def.name.clone(),
                row: None,
                detail: d,
            })?;
            let mut entries = Vec::new();
            view.decode_into(g, key.3, &mut entries);
            let mut split = Vec::new();
            crate::index::append_split(g, &entries, &mut split);
            t.insert(key, &split, "write")?;
            n += 1;
        }
        Ok(n)
    })
}

/// Whether the single-run layout's table holds any value of the collection.
pub fn legacy_lsh_values(collection: &Collection, db: &Database) -> Result<bool> {
    use crate::storage::index_tables::BytesRead;
    let snap = db.store().snapshot()?;
    let id = collection.info().def.id;
    let Some(t) = snap.lsh_groups_v1()? else { return Ok(false) };
    Ok(t.any_in((id, 0u32, 0u64, 0u32)..=(id, u32::MAX, u64::MAX, u32::MAX), "scan")?)
}

/// The collection's LSH band-key scheme (seed, banding, row width), if it has an LSH index.
pub fn lsh_scheme(collection: &Collection, db: &Database) -> Result<Option<BandKeyScheme>> {
    let snap = db.store().snapshot()?;
    let def = crate::index::IndexDef::load(&snap, collection.info())?;
    Ok(def.and_then(|d| match &d.spec {
        crate::index::IndexSpec::Lsh { scheme, .. } | crate::index::IndexSpec::LshGroups { scheme, .. } => {
            Some(*scheme)
        }
        crate::index::IndexSpec::Simhash { .. } => None,
    }))
}

/// One run of an LSH index as recorded in its definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LshRunInfo {
    pub id: u32,
    pub group_bits: u32,
    pub first_row: u64,
    pub end_row: u64,
    pub entries: u64,
    /// Removed rows whose entries the run still holds.
    pub dead: u64,
}

/// One stored LSH chunk: run, band, group, chunk number, entries (0 if it does not parse)
/// and layout (its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LshChunk {
    pub run: u32,
    pub band: u32,
    pub group: u64,
    pub chunk: u32,
    pub entries: usize,
    pub layout: u8,
}

/// The collection's LSH runs (from its definition) and stored chunks in key order (`None`
/// without an LSH index).
pub fn lsh_group_chunks(collection: &Collection, db: &Database) -> Result<Option<(Vec<LshRunInfo>, Vec<LshChunk>)>> {
    use crate::index::{ChunkView, Groups};
    use crate::storage::index_tables::BytesRead;
    let snap = db.store().snapshot()?;
    let def = crate::index::IndexDef::load(&snap, collection.info())?;
    let Some(crate::index::IndexSpec::Lsh { runs, scheme, .. }) = def.as_deref().map(|d| &d.spec) else {
        return Ok(None);
    };
    let infos: Vec<LshRunInfo> = runs
        .iter()
        .map(|r| LshRunInfo {
            id: r.id,
            group_bits: r.group_bits,
            first_row: r.first_row,
            end_row: r.end_row,
            entries: r.entries,
            dead: r.dead,
        })
        .collect();
    let id = collection.info().def.id;
    let mut out = Vec::new();
    if let Some(t) = snap.lsh_runs()? {
        for e in t.range((id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), "scan")? {
            let (k, v) = e?;
            let (_, band, run, group, chunk) = k;
            let bits = runs.iter().find(|r| r.id == run).map_or(0, |r| r.group_bits);
            let entries = ChunkView::parse(v.value(), Groups::new(scheme.key_bits(), bits)).map_or(0, |c| c.len());
            let layout = v.value().first().copied().unwrap_or(0);
            out.push(LshChunk { run, band, group, chunk, entries, layout });
        }
    }
    Ok(Some((infos, out)))
}

/// The rows `sketchdb.lsh_dead` lists for the collection (removed rows whose entries an LSH
/// run still holds), ascending, each with the sketch its page still holds (`None` when no
/// page holds the row as a removed row).
pub fn lsh_removed_rows(collection: &Collection, db: &Database) -> Result<Vec<(u64, Option<crate::Sketch>)>> {
    let snap = db.store().snapshot()?;
    let info = collection.info();
    let listed = crate::index::lsh_listed(&snap, info)?;
    let mut held = std::collections::HashMap::new();
    snap.for_each_page(info, |first, view| {
        for i in (0..view.row_count()).filter(|&i| view.is_deleted(i)) {
            let row = view.first_row() + i as u64;
            if listed.binary_search(&row).is_ok() {
                held.insert(row, crate::storage::reader::decode(info, view, first, i)?);
            }
        }
        Ok(true)
    })?;
    Ok(listed.into_iter().map(|row| (row, held.remove(&row))).collect())
}

/// Removes the first row of the collection's `sketchdb.lsh_dead` listing, leaving its entries
/// and its run's count (damage verify must name); returns the row, `None` when none is listed.
pub fn unlist_first_lsh_removed_row(collection: &Collection, db: &Database) -> Result<Option<u64>> {
    let id = collection.info().def.id;
    db.store().write_index(|txn| {
        let mut t = txn.lsh_dead()?;
        let first = crate::index::lsh_listed_in(&t, id, 0..u64::MAX)?.first().copied();
        if let Some(row) = first {
            t.remove_rows(id, row..row + 1, "remove")?;
        }
        Ok(first)
    })
}

/// The live records among `rows` (ascending) read in one pass, as (row id, key): the batch
/// point read index candidates go through.
pub fn get_rows(collection: &Collection, db: &Database, rows: &[u64]) -> Result<Vec<(u64, Vec<u8>)>> {
    let snap = db.store().snapshot()?;
    Ok(snap.get_rows(collection.info(), rows)?.into_iter().map(|r| (r.row, r.key)).collect())
}

/// A collection's `sketchdb.row_dead64` entries (removed rows kept beside their pages) at the
/// last commit: (chunk = row id / 64, the chunk's word as 8 little-endian bytes).
pub fn row_dead_entries(collection: &Collection, db: &Database) -> Result<Vec<(u64, Vec<u8>)>> {
    Ok(db.store().dead_entries(collection.info())?)
}

/// The rows of a collection that have a `sketchdb.content_hashes` entry at the last commit,
/// ascending (live rows written with a hash, and removed rows not yet purged by compaction).
pub fn content_hash_rows(collection: &Collection, db: &Database) -> Result<Vec<u64>> {
    let snap = db.store().snapshot()?;
    Ok(crate::storage::content_hash::rows_in(snap.txn(), collection.info().def.id)?)
}

/// A collection's entries in the version-2 table `sketchdb.row_dead` (page first row, the
/// page's removed-rows bitmap as stored): a file this build has not yet written to.
pub fn legacy_row_dead_entries(collection: &Collection, db: &Database) -> Result<Vec<(u64, Vec<u8>)>> {
    Ok(db.store().legacy_dead_entries(collection.info())?)
}

/// Overwrites chunk `chunk`'s `sketchdb.row_dead64` word verbatim (no checks): to plant
/// damage. Bit `b` stands for row `64 * chunk + b`.
pub fn write_raw_row_dead(collection: &Collection, db: &Database, chunk: u64, word: u64) -> Result<()> {
    Ok(db.store().write_raw_dead_entry(collection.info(), chunk, word)?)
}

/// Overwrites page `page`'s version-2 `sketchdb.row_dead` entry verbatim (no checks): to
/// plant damage, or a version-2 entry.
pub fn write_raw_legacy_row_dead(collection: &Collection, db: &Database, page: u64, bytes: &[u8]) -> Result<()> {
    Ok(db.store().write_raw_legacy_dead_entry(collection.info(), page, bytes)?)
}

/// The file format version the file's format record states.
pub fn file_format_version(db: &Database) -> Result<u16> {
    Ok(db.store().file_format_version()?)
}
