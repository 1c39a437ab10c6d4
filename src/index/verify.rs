//! Index verification: recomputes every index entry from the live rows and compares it with
//! the stored tables (SimHash buckets; LSH groups, their chunks and the reverse map) and
//! the definition's counters. Each problem names collection, index table, table or band,
//! and bucket.

use std::collections::BTreeMap;

use redb::ReadTransaction;

use super::keys::band::lsh_rows;
use super::lsh::{ChunkView, Groups, band_keys_of};
use super::meta::{IndexDef, IndexSpec};
use super::simhash_tables::{BucketView, Geometry};
use crate::sketch::sketch::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::contain;
use crate::storage::reader::{ReadSnapshot, decode, open};
use crate::storage::store::Store;
use crate::storage::tables::{
    LSH_BUCKETS, LSH_BUCKETS_NAME, LSH_ROWS, LSH_ROWS_NAME, SIMHASH_BUCKETS, SIMHASH_BUCKETS_NAME,
};
use crate::storage::verify::{Problem, VerifyReport};

/// Problems reported per collection at most (the rest are counted in one last problem).
const MAX_PROBLEMS: usize = 50;

struct Out<'a> {
    report: &'a mut VerifyReport,
    name: String,
    count: usize,
}

impl Out<'_> {
    fn problem(&mut self, row: Option<u64>, detail: String) {
        self.count += 1;
        if self.count <= MAX_PROBLEMS {
            self.report.problems.push(Problem { collection: Some(self.name.clone()), page: None, row, detail });
        }
    }
}

/// Checks every collection's index against its rows, adding problems to `report`.
pub(crate) fn verify_indexes(store: &Store, report: &mut VerifyReport) -> Result<(), StorageError> {
    let collections = match store.collections() {
        Ok(c) => c,
        Err(e) if e.is_corruption() => return Ok(()), // reported by the storage checks
        Err(e) => return Err(e),
    };
    for info in &collections {
        let snap = store.snapshot()?;
        let mut out = Out { report, name: info.def.name.clone(), count: 0 };
        // redb panics on some damaged files: contained here, they become problems.
        let def = match contain("read index definition", || IndexDef::load(snap.txn(), info)) {
            Ok(d) => d,
            Err(e) if e.is_corruption() => {
                out.problem(None, format!("index definition: {e}"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut live: Vec<(u64, Sketch)> = Vec::new();
        let scanned = snap.for_each_page(info, |first, view| {
            for i in (0..view.row_count()).filter(|&i| !view.is_deleted(i)) {
                live.push((view.first_row() + i as u64, decode(info, view, first, i)?));
            }
            Ok(true)
        });
        if scanned.is_err() {
            continue; // damaged pages are the storage checks' problems
        }
        let r = contain("verify index", || match def.as_deref() {
            None => check_empty(snap.txn(), info, &mut out),
            Some(d @ IndexDef { spec: IndexSpec::Simhash { .. }, .. }) => {
                check_simhash(snap.txn(), info, d, &live, &mut out)
            }
            Some(d) => check_lsh(&snap, info, d, &live, &mut out),
        });
        match r {
            Ok(()) => {}
            Err(e) if e.is_corruption() => out.problem(None, e.to_string()),
            Err(e) => return Err(e),
        }
        if out.count > MAX_PROBLEMS {
            let more = out.count - MAX_PROBLEMS;
            out.report.problems.push(Problem {
                collection: Some(out.name.clone()),
                page: None,
                row: None,
                detail: format!("... and {more} more index problems"),
            });
        }
    }
    Ok(())
}

fn check_empty(txn: &ReadTransaction, info: &CollectionInfo, out: &mut Out<'_>) -> Result<(), StorageError> {
    let id = info.def.id;
    let backend = StorageError::backend;
    if let Some(t) = open(txn, SIMHASH_BUCKETS)?
        && t.range((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX)).map_err(backend("scan"))?.next().is_some()
    {
        out.problem(None, format!("no index definition, but {SIMHASH_BUCKETS_NAME} has entries"));
    }
    if let Some(t) = open(txn, LSH_BUCKETS)?
        && t.range((id, 0u32, 0u64, 0u32)..=(id, u32::MAX, u64::MAX, u32::MAX))
            .map_err(backend("scan"))?
            .next()
            .is_some()
    {
        out.problem(None, format!("no index definition, but {LSH_BUCKETS_NAME} has entries"));
    }
    if let Some(t) = open(txn, LSH_ROWS)?
        && t.range((id, 0u64)..=(id, u64::MAX)).map_err(backend("scan"))?.next().is_some()
    {
        out.problem(None, format!("no index definition, but {LSH_ROWS_NAME} has entries"));
    }
    Ok(())
}

fn check_simhash(
    txn: &ReadTransaction,
    info: &CollectionInfo,
    def: &IndexDef,
    live: &[(u64, Sketch)],
    out: &mut Out<'_>,
) -> Result<(), StorageError> {
    let IndexSpec::Simhash { design, bucket_bits } = &def.spec else { return Ok(()) };
    if def.entries != live.len() as u64 {
        out.problem(
            None,
            format!("simhash index counts {} rows, the pages hold {} live rows", def.entries, live.len()),
        );
    }
    let id = info.def.id;
    let table = open(txn, SIMHASH_BUCKETS)?;
    for t in 0..design.table_count() {
        let g = Geometry::of(design, *bucket_bits, t);
        let mut want: BTreeMap<u32, Vec<(u128, u64)>> = BTreeMap::new();
        for (row, s) in live {
            let fp = match s {
                Sketch::SimHash(s) => s.value(),
                _ => 0,
            };
            let key = design.permute_u128(t, fp);
            want.entry(g.bucket(key)).or_default().push((key, *row));
        }
        let mut stored: BTreeMap<u32, Vec<(u128, u64)>> = BTreeMap::new();
        if let Some(table) = &table {
            let t32 = t as u32;
            for e in table.range((id, t32, 0u32)..=(id, t32, u32::MAX)).map_err(StorageError::backend("scan"))? {
                let (k, v) = e.map_err(StorageError::backend("scan"))?;
                let bucket = k.value().2;
                let where_ = format!("{SIMHASH_BUCKETS_NAME}, table {t}, bucket {bucket:#x}");
                match BucketView::parse(v.value(), g) {
                    Err(d) => out.problem(None, format!("{where_}: {d}")),
                    Ok(view) => {
                        let (mut keys, mut rows) = (Vec::<u128>::new(), Vec::new());
                        view.decode_into(g, bucket, &mut keys, &mut rows);
                        let entries: Vec<(u128, u64)> = keys.into_iter().zip(rows).collect();
                        if entries.windows(2).any(|w| w[1] < w[0]) {
                            out.problem(None, format!("{where_}: entries not sorted by (key, row)"));
                        }
                        stored.insert(bucket, entries);
                    }
                }
            }
        }
        for (bucket, mut w) in want {
            w.sort_unstable();
            let where_ = format!("{SIMHASH_BUCKETS_NAME}, table {t}, bucket {bucket:#x}");
            match stored.remove(&bucket) {
                None => out.problem(Some(w[0].1), format!("{where_}: missing ({} live rows belong there)", w.len())),
                Some(mut s) => {
                    s.sort_unstable();
                    if s != w {
                        let extra = s.iter().find(|e| w.binary_search(e).is_err()).map(|e| e.1);
                        let missing = w.iter().find(|e| s.binary_search(e).is_err()).map(|e| e.1);
                        out.problem(
                            extra.or(missing),
                            format!(
                                "{where_}: {} entries stored, {} expected (first stale row {extra:?}, first missing row {missing:?})",
                                s.len(),
                                w.len()
                            ),
                        );
                    }
                }
            }
        }
        for (bucket, s) in stored {
            out.problem(
                s.first().map(|e| e.1),
                format!("{SIMHASH_BUCKETS_NAME}, table {t}, bucket {bucket:#x}: {} entries of no live row", s.len()),
            );
        }
    }
    Ok(())
}

fn check_lsh(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    def: &IndexDef,
    live: &[(u64, Sketch)],
    out: &mut Out<'_>,
) -> Result<(), StorageError> {
    let IndexSpec::Lsh { scheme, group_bits, .. } = &def.spec else { return Ok(()) };
    let id = info.def.id;
    let txn = snap.txn();
    // Expected reverse map and buckets.
    let mut want_rev: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut want: BTreeMap<(u32, u64), Vec<u64>> = BTreeMap::new();
    for (row, s) in live {
        let keys = match lsh_rows(s).and_then(|r| scheme.keys(&r)) {
            Ok(k) => k,
            Err(e) => {
                out.problem(Some(*row), format!("row cannot be banded: {e}"));
                continue;
            }
        };
        for (b, &k) in keys.iter().enumerate() {
            want.entry((b as u32, k)).or_default().push(*row);
        }
        want_rev.insert(*row, keys);
    }
    if let Some(rev) = open(txn, LSH_ROWS)? {
        for e in rev.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan"))? {
            let (k, v) = e.map_err(StorageError::backend("scan"))?;
            let row = k.value().1;
            let keys = band_keys_of(v.value(), scheme.params.bands as usize);
            match (want_rev.remove(&row), keys) {
                (None, _) => out.problem(Some(row), format!("{LSH_ROWS_NAME}: entry for a row that is not live")),
                (Some(_), Err(d)) => out.problem(Some(row), d),
                (Some(w), Ok(keys)) if w != keys => {
                    out.problem(Some(row), format!("{LSH_ROWS_NAME}: band keys differ from the row's"))
                }
                (Some(_), Ok(_)) => {}
            }
        }
    }
    for row in want_rev.keys() {
        out.problem(Some(*row), format!("{LSH_ROWS_NAME}: live row has no entry"));
    }
    // Stored buckets, from the packed groups.
    let g = Groups::new(*group_bits);
    let mut stored: BTreeMap<(u32, u64), Vec<u64>> = BTreeMap::new();
    if let Some(t) = open(txn, LSH_BUCKETS)? {
        // The group being read: (band, group), next chunk number expected, last entry.
        let mut cur: Option<(u32, u64)> = None;
        let mut next_chunk = 0u32;
        let mut last: Option<(u64, u64)> = None;
        let mut entries = Vec::new();
        for e in t
            .range((id, 0u32, 0u64, 0u32)..=(id, u32::MAX, u64::MAX, u32::MAX))
            .map_err(StorageError::backend("scan"))?
        {
            let (k, v) = e.map_err(StorageError::backend("scan"))?;
            let (_, band, group, chunk) = k.value();
            let where_ = format!("{LSH_BUCKETS_NAME}, band {band}, group {group:#x}, chunk {chunk}");
            if cur != Some((band, group)) {
                cur = Some((band, group));
                next_chunk = 0;
                last = None;
            }
            if chunk != next_chunk {
                out.problem(None, format!("{where_}: chunk numbers must run 0, 1, ... (expected {next_chunk})"));
            }
            next_chunk = chunk.saturating_add(1);
            if band >= scheme.params.bands || group >> g.bits != 0 {
                out.problem(None, format!("{where_}: no such band or group under the recorded scheme"));
            }
            let view = match ChunkView::parse(v.value(), g) {
                Ok(view) => view,
                Err(d) => {
                    out.problem(None, format!("{where_}: {d}"));
                    continue;
                }
            };
            if !view.suffixes_fit(g) {
                out.problem(None, format!("{where_}: a key suffix exceeds {} bits", 64 - g.bits));
            }
            entries.clear();
            view.decode_into(g, group, &mut entries);
            let first = entries.first().copied();
            if entries.windows(2).any(|w| w[1] <= w[0]) || matches!((last, first), (Some(l), Some(f)) if f <= l) {
                out.problem(None, format!("{where_}: entries not strictly ascending by (band key, row)"));
            }
            last = entries.last().copied();
            for &(key, row) in &entries {
                stored.entry((band, key)).or_default().push(row);
            }
        }
    }
    let (mut entries, mut sum_sq) = (0u64, 0u128);
    for ((band, key), mut rows) in stored {
        let where_ = format!("{LSH_BUCKETS_NAME}, band {band}, bucket {key:#018x} (group {:#x})", g.group(key));
        rows.sort_unstable();
        let n = rows.len() as u64;
        entries += n;
        sum_sq += u128::from(n) * u128::from(n);
        match want.remove(&(band, key)) {
            None => out.problem(rows.first().copied(), format!("{where_}: bucket of no live row's band key")),
            Some(w) if w != rows => {
                let stale = rows.iter().find(|r| w.binary_search(r).is_err()).copied();
                let missing = w.iter().find(|r| rows.binary_search(r).is_err()).copied();
                out.problem(
                    stale.or(missing),
                    format!("{where_}: rows differ (first stale {stale:?}, first missing {missing:?})"),
                );
            }
            Some(_) => {}
        }
    }
    for ((band, key), rows) in want {
        out.problem(
            rows.first().copied(),
            format!(
                "{LSH_BUCKETS_NAME}, band {band}, bucket {key:#018x} (group {:#x}): missing ({} live rows)",
                g.group(key),
                rows.len()
            ),
        );
    }
    if entries != def.entries || sum_sq != def.sum_sq {
        out.problem(
            None,
            format!(
                "lsh counters: definition says sum(s) = {}, sum(s^2) = {}; buckets give {entries}, {sum_sq}",
                def.entries, def.sum_sq
            ),
        );
    }
    Ok(())
}
