//! Index verification: recomputes every index entry from the live rows (and, for LSH, the
//! removed rows its runs still hold, listed in `sketchdb.lsh_dead`) and compares it with
//! the stored tables (SimHash buckets; LSH groups, their chunks, the removed-row listing and
//! the reverse map) and the definition's counters. Each problem names collection, index table, table or band,
//! and bucket.

use crate::index::error::IndexError;

use super::defs::{IndexDef, IndexSpec};
use super::lsh::{Removed, check_lsh, listed};
use super::problems::{MAX_PROBLEMS, Out};
use super::simhash::check_simhash;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::contain;
use crate::storage::index_tables::BytesRead;
use crate::storage::integrity::{Problem, VerifyReport};
use crate::storage::reader::ReadSnapshot;
use crate::storage::reader::decode;
use crate::storage::store::Store;
use crate::storage::tables::{LSH_BUCKETS_NAME, LSH_DEAD_NAME, LSH_ROWS_NAME, SIMHASH_BUCKETS_NAME};

/// Checks every collection's index against its rows, adding problems to `report`.
pub(crate) fn verify_indexes(store: &Store, report: &mut VerifyReport) -> Result<(), IndexError> {
    let collections = match store.collections() {
        Ok(c) => c,
        Err(e) if e.is_corruption() => return Ok(()), // reported by the storage checks
        Err(e) => return Err(e.into()),
    };
    for info in &collections {
        let snap = store.snapshot()?;
        let mut out = Out { report, name: info.def.name.clone(), count: 0 };
        // The storage engine panics on some damaged files: contained here, they become problems.
        let def = match contain("read index definition", || IndexDef::load(&snap, info)) {
            Ok(d) => d,
            Err(e) if e.is_corruption() => {
                out.problem(None, format!("index definition: {e}"));
                continue;
            }
            Err(e) => return Err(e),
        };
        // The rows listed as removed with entries still in LSH runs, ascending.
        let dead = match contain("read sketchdb.lsh_dead", || listed(&snap, info)) {
            Ok(d) => d,
            Err(e) if e.is_corruption() => {
                out.problem(None, format!("{LSH_DEAD_NAME}: {e}"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let is_listed = |row: u64| dead.binary_search(&row).is_ok();
        // Live rows, and the listed rows' records (removed: their pages still hold them).
        let mut live: Vec<(u64, Sketch)> = Vec::new();
        let mut removed: Vec<(u64, Sketch)> = Vec::new();
        let scanned = snap.for_each_page(info, |first, view| {
            for i in 0..view.row_count() {
                let row = view.first_row() + i as u64;
                if !view.is_deleted(i) {
                    live.push((row, decode(info, view, first, i)?));
                } else if is_listed(row) {
                    removed.push((row, decode(info, view, first, i)?));
                }
            }
            Ok(true)
        });
        if scanned.is_err() {
            continue; // damaged pages are the storage checks' problems
        }
        for (row, _) in live.iter().filter(|(row, _)| is_listed(*row)) {
            out.problem(Some(*row), format!("{LSH_DEAD_NAME}: lists a live row as removed"));
        }
        let lsh = matches!(def.as_deref(), Some(IndexDef { spec: IndexSpec::Lsh { .. }, .. }));
        if !lsh && !dead.is_empty() {
            out.problem(
                Some(dead[0]),
                format!("{LSH_DEAD_NAME}: {} rows listed, but there is no LSH index", dead.len()),
            );
        }
        let r = contain("verify index", || match def.as_deref() {
            None => check_empty(&snap, info, &mut out),
            Some(d @ IndexDef { spec: IndexSpec::Simhash { .. }, .. }) => {
                check_simhash(&snap, info, d, &live, &mut out)
            }
            Some(d) => check_lsh(&snap, info, d, &live, Removed { listed: &dead, held: &removed }, &mut out),
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

fn check_empty(snap: &ReadSnapshot, info: &CollectionInfo, out: &mut Out<'_>) -> Result<(), IndexError> {
    let id = info.def.id;
    if let Some(t) = snap.simhash_buckets()?
        && t.any_in((id, 0u32, 0u32)..=(id, u32::MAX, u32::MAX), "scan")?
    {
        out.problem(None, format!("no index definition, but {SIMHASH_BUCKETS_NAME} has entries"));
    }
    if let Some(t) = snap.lsh_runs()?
        && t.any_in((id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), "scan")?
    {
        out.problem(None, format!("no index definition, but {LSH_BUCKETS_NAME} has entries"));
    }
    if let Some(t) = snap.lsh_rows()?
        && t.any_in((id, 0u64)..=(id, u64::MAX), "scan")?
    {
        out.problem(None, format!("no index definition, but {LSH_ROWS_NAME} has entries"));
    }
    Ok(())
}
