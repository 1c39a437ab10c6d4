//! Verifying SimHash tables against the live rows: every run's buckets decode, sort and
//! hold only rows of the run's range, each run holds its counted rows once per table, and
//! over all runs each table holds exactly the live rows' entries.

use std::collections::BTreeMap;

use redb::ReadTransaction;

use super::meta::{IndexDef, IndexSpec};
use super::simhash_runs::split_field;
use super::simhash_tables::{BucketView, Geometry};
use super::verify::Out;
use crate::sketch::sketch::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::open;
use crate::storage::tables::{SIMHASH_BUCKETS, SIMHASH_BUCKETS_NAME};

pub(super) fn check_simhash(
    txn: &ReadTransaction,
    info: &CollectionInfo,
    def: &IndexDef,
    live: &[(u64, Sketch)],
    out: &mut Out<'_>,
) -> Result<(), StorageError> {
    let IndexSpec::Simhash { design, bucket_bits, runs, .. } = &def.spec else { return Ok(()) };
    if def.entries != live.len() as u64 {
        out.problem(
            None,
            format!("simhash index counts {} rows, the pages hold {} live rows", def.entries, live.len()),
        );
    }
    let n = design.table_count();
    let geometry: Vec<Geometry> = (0..n).map(|t| Geometry::of(design, *bucket_bits, t)).collect();
    // Every table's stored entries over all runs, and per run and table the entries held.
    let mut stored: Vec<BTreeMap<u32, Vec<(u128, u64)>>> = vec![BTreeMap::new(); n];
    let mut held = vec![vec![0u64; n]; runs.len()];
    let id = info.def.id;
    if let Some(table) = open(txn, SIMHASH_BUCKETS)? {
        for e in table.range((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX)).map_err(StorageError::backend("scan"))? {
            let (k, v) = e.map_err(StorageError::backend("scan"))?;
            let (_, field, bucket) = k.value();
            let (run, t) = split_field(field);
            let where_ = format!("{SIMHASH_BUCKETS_NAME}, run {run}, table {t}, bucket {bucket:#x}");
            let Some(ri) = runs.iter().position(|r| r.id == run) else {
                out.problem(None, format!("{where_}: a run the index definition does not list"));
                continue;
            };
            let Some(g) = geometry.get(t as usize) else {
                out.problem(None, format!("{where_}: the design has {n} tables"));
                continue;
            };
            let view = match BucketView::parse(v.value(), *g) {
                Err(d) => {
                    out.problem(None, format!("{where_}: {d}"));
                    continue;
                }
                Ok(view) => view,
            };
            let (mut keys, mut rows) = (Vec::<u128>::new(), Vec::new());
            view.decode_into(*g, bucket, &mut keys, &mut rows);
            let entries: Vec<(u128, u64)> = keys.into_iter().zip(rows).collect();
            if entries.windows(2).any(|w| w[1] <= w[0]) {
                out.problem(None, format!("{where_}: entries not sorted by (key, row)"));
            }
            let end = runs.get(ri + 1).map_or(u64::MAX, |r| r.first_row);
            if let Some(e) = entries.iter().find(|e| !(runs[ri].first_row..end).contains(&e.1)) {
                out.problem(Some(e.1), format!("{where_}: a row outside the run's rows"));
            }
            held[ri][t as usize] += entries.len() as u64;
            stored[t as usize].entry(bucket).or_default().extend(entries);
        }
    }
    for (r, held) in runs.iter().zip(&held) {
        if let Some((t, h)) = held.iter().enumerate().find(|(_, h)| **h != r.rows) {
            out.problem(None, format!("simhash run {} counts {} rows, its table {t} holds {h} entries", r.id, r.rows));
        }
    }
    for (t, (g, mut stored)) in geometry.iter().zip(stored).enumerate() {
        let mut want: BTreeMap<u32, Vec<(u128, u64)>> = BTreeMap::new();
        for (row, s) in live {
            let fp = match s {
                Sketch::SimHash(s) => s.value(),
                _ => 0,
            };
            let key = design.permute_u128(t, fp);
            want.entry(g.bucket(key)).or_default().push((key, *row));
        }
        for (bucket, mut w) in want {
            w.sort_unstable();
            let where_ = format!("{SIMHASH_BUCKETS_NAME}, table {t}, bucket {bucket:#x} (all runs)");
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
