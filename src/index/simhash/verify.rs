//! Verifying SimHash tables against the live rows: every run's buckets decode, sort and
//! hold only rows of the run's range, each run holds its counted rows once per table, and
//! over all runs each table holds exactly the live rows' entries.

use crate::index::error::IndexError;
use std::collections::BTreeMap;

use super::format::{BucketView, Geometry};
use super::format::{split_field, table_field};
use crate::index::defs::{IndexDef, IndexSpec};
use crate::index::problems::Out;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::BytesRead;
use crate::storage::reader::ReadSnapshot;
use crate::storage::tables::SIMHASH_BUCKETS_NAME;

pub(crate) fn check_simhash(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    def: &IndexDef,
    live: &[(u64, Sketch)],
    out: &mut Out<'_>,
) -> Result<(), IndexError> {
    let IndexSpec::Simhash { design, bucket_bits, runs, .. } = &def.spec else { return Ok(()) };
    if def.entries != live.len() as u64 {
        out.problem(
            None,
            format!("simhash index counts {} rows, the pages hold {} live rows", def.entries, live.len()),
        );
    }
    let n = design.table_count();
    let id = info.def.id;
    let Some(table) = snap.simhash_buckets()? else {
        if !live.is_empty() {
            out.problem(None, format!("{SIMHASH_BUCKETS_NAME} is missing ({} live rows)", live.len()));
        }
        return Ok(());
    };
    // Keys of runs the definition does not list, or of tables the design does not have.
    for e in table.range((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), "scan")? {
        let (k, _) = e?;
        let (_, field, bucket) = k;
        let (run, t) = split_field(field);
        let where_ = format!("{SIMHASH_BUCKETS_NAME}, run {run}, table {t}, bucket {bucket:#x}");
        if !runs.iter().any(|r| r.id == run) {
            out.problem(None, format!("{where_}: a run the index definition does not list"));
        } else if t as usize >= n {
            out.problem(None, format!("{where_}: the design has {n} tables"));
        }
    }
    // Table by table (one table's entries in memory at a time): each run's buckets, then
    // the union against the live rows.
    for t in 0..n {
        let g = Geometry::of(design, *bucket_bits, t);
        let mut stored: BTreeMap<u32, Vec<(u128, u64)>> = BTreeMap::new();
        for (ri, r) in runs.iter().enumerate() {
            let field = table_field(r.id, t as u32);
            let end = runs.get(ri + 1).map_or(u64::MAX, |r| r.first_row);
            let mut held = 0u64;
            for e in table.range((id, field, 0u32)..=(id, field, u32::MAX), "scan")? {
                let (k, v) = e?;
                let bucket = k.2;
                let where_ = format!("{SIMHASH_BUCKETS_NAME}, run {}, table {t}, bucket {bucket:#x}", r.id);
                let view = match BucketView::parse(v.value(), g) {
                    Err(d) => {
                        out.problem(None, format!("{where_}: {d}"));
                        continue;
                    }
                    Ok(view) => view,
                };
                let mut entries = Vec::new();
                view.entries_into(g, bucket, &mut entries);
                if entries.windows(2).any(|w| w[1] <= w[0]) {
                    out.problem(None, format!("{where_}: entries not sorted by (key, row)"));
                }
                if let Some(e) = entries.iter().find(|e| !(r.first_row..end).contains(&e.1)) {
                    out.problem(Some(e.1), format!("{where_}: a row outside the run's rows"));
                }
                held += entries.len() as u64;
                stored.entry(bucket).or_default().extend(entries);
            }
            if held != r.rows {
                out.problem(
                    None,
                    format!("simhash run {} counts {} rows, its table {t} holds {held} entries", r.id, r.rows),
                );
            }
        }
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
