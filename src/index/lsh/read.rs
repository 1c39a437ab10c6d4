//! Probing the persisted LSH buckets: candidate row ids for a signature.

use super::band::BandKeyScheme;
use crate::index::error::IndexError;
use std::collections::HashMap;
use std::sync::Arc;

use super::cache::LshProbe;
use super::dead::{DeadRows, listed};
use super::table::{Groups, read_run_band};
use crate::index::defs::{IndexDef, IndexSpec, LshRun};
use crate::index::error::inconsistent;
use crate::index::error::index_err;
use crate::index::probe_cache::ProbeCache;
use crate::sketch::sketcher::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::{contain, contain_any};
use crate::storage::reader::{ReadSnapshot, RowRecord};

fn not_lsh(info: &CollectionInfo) -> IndexError {
    IndexError::Collection {
        collection: info.def.name.clone(),
        source: Box::new(IndexError::invalid("index", "none or SimHash", "an LSH index")),
    }
}

/// The scheme and runs of the collection's LSH index definition (`None`: no index); an
/// `Index` error for a SimHash index or the earlier single-run LSH layout.
fn scheme_runs<'d>(
    info: &CollectionInfo,
    def: Option<&'d IndexDef>,
) -> Result<(BandKeyScheme, &'d [LshRun]), IndexError> {
    match def.map(|d| &d.spec) {
        Some(IndexSpec::Lsh { scheme, runs, .. }) => Ok((*scheme, runs)),
        Some(IndexSpec::LshGroups { .. }) => Err(crate::index::defs::legacy_lsh(info)),
        _ => Err(not_lsh(info)),
    }
}

/// The distinct live row ids sharing at least one of the first `bands` band keys with
/// `sketch` (all bands when `bands` exceeds the banding), ascending. A collection without
/// an LSH index is an `Index` error.
pub(crate) fn lsh_candidates(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    sketch: &Sketch,
    bands: u32,
) -> Result<Vec<u64>, IndexError> {
    contain("lsh probe", || {
        let mut rows = probe(snap, info, sketch, bands)?.0;
        let dead = listed(snap, info)?;
        rows.retain(|r| dead.binary_search(r).is_err());
        Ok(rows)
    })
}

/// The distinct row ids of [`lsh_candidates`], with the removed rows whose entries the
/// runs still hold, and the cache of the index version probed.
fn probe(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    sketch: &Sketch,
    bands: u32,
) -> Result<(Vec<u64>, Arc<ProbeCache>), IndexError> {
    let Some(cache) = ProbeCache::of(snap, info, 0)? else { return Err(not_lsh(info)) };
    Ok((probe_in(snap, info, &cache, sketch, bands)?, cache))
}

/// [`probe`] through `cache`, the probe cache of the collection's index as of `snap`.
fn probe_in(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    cache: &ProbeCache,
    sketch: &Sketch,
    bands: u32,
) -> Result<Vec<u64>, IndexError> {
    let (scheme, runs) = scheme_runs(info, Some(&cache.def))?;
    info.def
        .params
        .check_compatible(sketch.params())
        .map_err(|source| StorageError::Incompatible { collection: info.def.name.clone(), source })?;
    let keys = scheme.sketch_keys(sketch).map_err(index_err(info))?;
    let mut out = Vec::new();
    let probe = LshProbe::new(cache, scheme.key_bits());
    probe.candidates(snap, info, runs, &keys[..keys.len().min(bands as usize)], &mut out)?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The candidates of [`lsh_candidates`] (their count) and their records, in row order, for
/// verification: records an earlier probe of the same index version read come from the
/// probe cache, the others from their pages (each page checked), then kept there within
/// the cache's budget. Removed rows whose entries the runs still hold are counted (their
/// pages were read once per index version) but have no record. `cache` is the probe cache
/// of the collection's index as of `snap` when the caller has it (`None`: looked up here).
pub(crate) fn lsh_candidate_records(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    cache: Option<&Arc<ProbeCache>>,
    sketch: &Sketch,
    bands: u32,
) -> Result<(usize, Vec<Arc<RowRecord>>), IndexError> {
    contain("lsh probe", || {
        let (rows, cache) = match cache {
            Some(c) => (probe_in(snap, info, c, sketch, bands)?, c.clone()),
            None => probe(snap, info, sketch, bands)?,
        };
        let records = cache.records(snap, info, &rows)?;
        Ok((rows.len(), records))
    })
}

/// The self-join's candidates, streamed: calls `f(a, b)` (a < b) once for every pair of
/// rows sharing a band key in one of the first `bands` bands (all bands when `bands` exceeds
/// the banding). One sequential pass over the bucket table, band after band: the same pairs
/// as probing every row's own band keys, without a lookup per row and band.
///
/// Entries of removed rows the runs still hold (listed in `sketchdb.lsh_dead`) are passed
/// over. A pair is passed on only in the first band the two rows share (their earlier band keys
/// are computed from their stored signatures, once per row that shares a bucket, read a band
/// at a time in row order, and kept for the pass), so nothing proportional to the number of
/// pairs is held: m identical signatures share a bucket in every band, and their m(m-1)/2
/// pairs are passed on once, in band 0.
pub(crate) fn for_each_lsh_pair<E: From<IndexError> + From<StorageError>>(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    bands: u32,
    mut f: impl FnMut(u64, u64) -> Result<(), E>,
) -> Result<(), E> {
    // Storage-engine panics are contained; a panic of `f` (the caller's code) is passed on.
    let mut caller_panic = None;
    let r = contain_any("lsh self-join", || {
        lsh_pairs_unguarded(snap, info, bands, |a, b| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(a, b))).unwrap_or_else(|payload| {
                caller_panic = Some(payload);
                Err(StorageError::EnginePanic { op: "lsh self-join", detail: "stopped by the caller".into() }.into())
            })
        })
    });
    if let Some(payload) = caller_panic {
        std::panic::resume_unwind(payload);
    }
    r?
}

fn lsh_pairs_unguarded<E: From<IndexError> + From<StorageError>>(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    bands: u32,
    mut f: impl FnMut(u64, u64) -> Result<(), E>,
) -> Result<(), E> {
    let def = IndexDef::load(snap, info)?;
    let (scheme, runs) = scheme_runs(info, def.as_deref())?;
    let Some(table) = snap.lsh_runs()? else { return Ok(()) };
    let span = runs.first().map_or(0, |r| r.first_row)..runs.last().map_or(0, |r| r.end_row);
    let dead = DeadRows::new(listed(snap, info)?, span);
    let mut keys_of: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut entries: Vec<(u64, u64)> = Vec::new();
    let mut missing: Vec<u64> = Vec::new();
    for band in 0..scheme.params.bands.min(bands) {
        // The band's entries of every run, in one sorted sequence.
        entries.clear();
        for run in runs {
            read_run_band(&table, info, Groups::new(scheme.key_bits(), run.group_bits), band, run.id, &mut entries)?;
        }
        if !dead.is_empty() {
            entries.retain(|e| !dead.contains(e.1));
        }
        entries.sort_unstable();
        // The band keys of the rows in shared buckets first seen in this band.
        missing.clear();
        for bucket in entries.chunk_by(|a, b| a.0 == b.0).filter(|b| b.len() > 1) {
            missing.extend(bucket.iter().map(|e| e.1).filter(|row| !keys_of.contains_key(row)));
        }
        missing.sort_unstable();
        missing.dedup();
        for rec in snap.get_rows(info, &missing)? {
            keys_of.insert(rec.row, scheme.sketch_keys(&rec.sketch).map_err(index_err(info))?);
        }
        if let Some(&row) = missing.iter().find(|row| !keys_of.contains_key(row)) {
            return Err(inconsistent(info, row, "a row in an LSH bucket is not a live row").into());
        }
        for bucket in entries.chunk_by(|a, b| a.0 == b.0).filter(|b| b.len() > 1) {
            for (i, &(_, a)) in bucket.iter().enumerate() {
                for &(_, b) in &bucket[i + 1..] {
                    let (ka, kb) = (&keys_of[&a], &keys_of[&b]);
                    if (0..band as usize).all(|b_| ka[b_] != kb[b_]) {
                        f(a.min(b), a.max(b))?;
                    }
                }
            }
        }
    }
    Ok(())
}
