//! Verification of an LSH index: its runs' groups and chunks against the entries recomputed
//! from the live rows and the removed rows the runs still hold, the removed-row listing
//! (`sketchdb.lsh_dead`) against the runs and the pages, and the reverse map of earlier builds.

use super::band::BandKeyScheme;
use super::format::{ChunkView, Groups, band_keys_of};
use super::table::bucket_sums;
use crate::index::defs::{IndexDef, IndexSpec, LshRun, run_holding};
use crate::index::error::IndexError;
use crate::index::problems::Out;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::BytesRead;
use crate::storage::reader::ReadSnapshot;
use crate::storage::tables::{LSH_BUCKETS_NAME, LSH_DEAD_NAME, LSH_ROWS_NAME};

/// The rows `sketchdb.lsh_dead` lists for a collection (ascending) and the records of those
/// its pages hold (ascending).
pub(crate) struct Removed<'a> {
    pub listed: &'a [u64],
    pub held: &'a [(u64, Sketch)],
}

/// Checks the removed-row listing against the runs: every listed row's page holds its
/// (removed) record, it lies in a run, and each run's `dead` count equals its listed rows.
pub(crate) fn check_listing(runs: &[LshRun], removed: &Removed<'_>, out: &mut Out<'_>) {
    let mut held = removed.held.iter().map(|(row, _)| *row).peekable();
    let mut counts = vec![0u64; runs.len()];
    for &row in removed.listed {
        while held.next_if(|&h| h < row).is_some() {}
        if held.next_if_eq(&row).is_none() {
            out.problem(Some(row), format!("{LSH_DEAD_NAME}: lists row {row}, which no page holds as removed"));
        }
        match run_holding(runs, row) {
            Some(i) => counts[i] += 1,
            None => out.problem(Some(row), format!("{LSH_DEAD_NAME}: lists row {row}, which lies in no LSH run")),
        }
    }
    for (run, n) in runs.iter().zip(counts) {
        if run.dead != n {
            out.problem(
                None,
                format!(
                    "lsh run {}: definition counts {} removed rows; {LSH_DEAD_NAME} lists {n} in its rows",
                    run.id, run.dead
                ),
            );
        }
    }
}

/// Checks an LSH index's runs against the rows (see the module doc).
pub(crate) fn check_lsh(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    def: &IndexDef,
    live: &[(u64, Sketch)],
    removed: Removed<'_>,
    out: &mut Out<'_>,
) -> Result<(), IndexError> {
    let (scheme, runs, reverse_map) = match &def.spec {
        IndexSpec::Lsh { scheme, runs, reverse_map, .. } => (scheme, runs, *reverse_map),
        IndexSpec::LshGroups { .. } => {
            out.problem(None, crate::index::defs::legacy_lsh(info).to_string());
            return Ok(());
        }
        IndexSpec::Simhash { .. } => return Ok(()),
    };
    let id = info.def.id;
    let n_bands = scheme.params.bands as usize;
    // Every live row's band keys, flat (rows x bands u64: a tenth of the memory maps would
    // take), in row order.
    let mut rows: Vec<u64> = Vec::with_capacity(live.len());
    let mut keys: Vec<u64> = Vec::with_capacity(live.len() * n_bands);
    band_rows(scheme, live, "row", (&mut rows, &mut keys), out);
    let keys_of = |i: usize| &keys[i * n_bands..(i + 1) * n_bands];
    // The reverse map of an earlier build against the live rows (both ascend by row id); an
    // index without one owns no entries there.
    let mut next = 0usize;
    if let Some(rev) = snap.lsh_rows()? {
        for e in rev.range((id, 0u64)..=(id, u64::MAX), "scan")? {
            let (k, v) = e?;
            let row = k.1;
            if !reverse_map {
                out.problem(Some(row), format!("{LSH_ROWS_NAME}: entry, but the index keeps no reverse map"));
                continue;
            }
            while next < rows.len() && rows[next] < row {
                out.problem(Some(rows[next]), format!("{LSH_ROWS_NAME}: live row has no entry"));
                next += 1;
            }
            if rows.get(next) != Some(&row) {
                out.problem(Some(row), format!("{LSH_ROWS_NAME}: entry for a row that is not live"));
                continue;
            }
            match band_keys_of(v.value(), n_bands, scheme.key_bits()) {
                Err(d) => out.problem(Some(row), d),
                Ok(stored) if stored != keys_of(next) => {
                    out.problem(Some(row), format!("{LSH_ROWS_NAME}: band keys differ from the row's"))
                }
                Ok(_) => {}
            }
            next += 1;
        }
    }
    if reverse_map {
        for &row in &rows[next..] {
            out.problem(Some(row), format!("{LSH_ROWS_NAME}: live row has no entry"));
        }
    }
    check_listing(runs, &removed, out);
    // The listed removed rows' entries are expected too (only a merge drops them).
    let what = format!("removed row listed in {LSH_DEAD_NAME}");
    band_rows(scheme, removed.held, &what, (&mut rows, &mut keys), out);
    let keys_of = |i: usize| &keys[i * n_bands..(i + 1) * n_bands];
    // Stored buckets: every run's groups, band by band (the table is in (band, run) order);
    // a band's entries of all runs together must equal the live rows' keys of that band.
    let (mut entries, mut sum_sq) = (0u64, 0u128);
    let mut run_sums: Vec<(u64, u128)> = vec![(0, 0); runs.len()];
    let run_of = |run: u32| runs.iter().position(|r| r.id == run);
    let mut checked_bands = 0u32;
    // Compares one band's stored entries (ascending) with the live rows' keys of that band.
    let compare_band = |band: u32, stored: &[(u64, u64)], out: &mut Out<'_>| {
        let mut want: Vec<(u64, u64)> = (0..rows.len()).map(|i| (keys_of(i)[band as usize], rows[i])).collect();
        want.sort_unstable();
        let where_ = |key: u64| format!("{LSH_BUCKETS_NAME}, band {band}, bucket {key:#018x}");
        let (mut a, mut b) = (0usize, 0usize);
        while a < stored.len() || b < want.len() {
            match (stored.get(a), want.get(b)) {
                (Some(x), Some(y)) if x == y => {
                    a += 1;
                    b += 1;
                }
                (Some(x), y) if y.is_none_or(|y| x < y) => {
                    out.problem(
                        Some(x.1),
                        format!(
                            "{}: row {} is neither a live row nor a listed removed row with this band key (or is stored twice)",
                            where_(x.0),
                            x.1
                        ),
                    );
                    a += 1;
                }
                (_, Some(y)) => {
                    out.problem(Some(y.1), format!("{}: missing row {}", where_(y.0), y.1));
                    b += 1;
                }
                _ => break,
            }
        }
    };
    let mut band_entries: Vec<(u64, u64)> = Vec::new();
    // The (band, run) being read, its entries so far, and the group being read with its
    // next chunk number.
    let mut seg: Option<(u32, usize)> = None;
    let mut seg_entries: Vec<(u64, u64)> = Vec::new();
    let mut cur_group: Option<u64> = None;
    let mut next_chunk = 0u32;
    let mut chunk_entries = Vec::new();
    let mut end_segment = |seg: Option<(u32, usize)>,
                           seg_entries: &mut Vec<(u64, u64)>,
                           band_entries: &mut Vec<(u64, u64)>,
                           out: &mut Out<'_>| {
        if let Some((band, r)) = seg {
            let run = &runs[r];
            if seg_entries.windows(2).any(|w| w[1] <= w[0]) {
                out.problem(
                    None,
                    format!(
                        "{LSH_BUCKETS_NAME}, band {band}, run {}: entries not strictly ascending by (band key, row)",
                        run.id
                    ),
                );
            }
            if let Some(&(_, row)) = seg_entries.iter().find(|e| e.1 < run.first_row || e.1 >= run.end_row) {
                out.problem(
                    Some(row),
                    format!(
                        "{LSH_BUCKETS_NAME}, band {band}, run {}: row {row} outside the run's rows {}..{}",
                        run.id, run.first_row, run.end_row
                    ),
                );
            }
            let (s, q) = bucket_sums(seg_entries);
            run_sums[r].0 += s;
            run_sums[r].1 += q;
            band_entries.append(seg_entries);
        }
    };
    if let Some(t) = snap.lsh_runs()? {
        for e in t.range((id, 0u32, 0u32, 0u64, 0u32)..=(id, u32::MAX, u32::MAX, u64::MAX, u32::MAX), "scan")? {
            let (k, v) = e?;
            let (_, band, run, group, chunk) = k;
            let where_ = format!("{LSH_BUCKETS_NAME}, band {band}, run {run}, group {group:#x}, chunk {chunk}");
            let Some(r) = run_of(run) else {
                out.problem(None, format!("{where_}: no such run in the index definition"));
                continue;
            };
            let g = Groups::new(scheme.key_bits(), runs[r].group_bits);
            if band >= scheme.params.bands || !g.holds(group) {
                out.problem(None, format!("{where_}: no such band or group under the recorded scheme and run"));
                continue;
            }
            if seg != Some((band, r)) {
                end_segment(seg, &mut seg_entries, &mut band_entries, out);
                seg = Some((band, r));
                cur_group = None;
            }
            while checked_bands < band {
                band_entries.sort_unstable();
                compare_band(checked_bands, &band_entries, out);
                band_entries.clear();
                checked_bands += 1;
            }
            if cur_group != Some(group) {
                cur_group = Some(group);
                next_chunk = 0;
            }
            if chunk != next_chunk {
                out.problem(None, format!("{where_}: chunk numbers must run 0, 1, ... (expected {next_chunk})"));
            }
            next_chunk = chunk.saturating_add(1);
            let view = match ChunkView::parse(v.value(), g) {
                Ok(view) => view,
                Err(d) => {
                    out.problem(None, format!("{where_}: {d}"));
                    continue;
                }
            };
            if !view.suffixes_fit(g) {
                out.problem(None, format!("{where_}: a key suffix exceeds {} bits", g.suffix_bits()));
            }
            chunk_entries.clear();
            view.decode_into(g, group, &mut chunk_entries);
            seg_entries.extend_from_slice(&chunk_entries);
        }
    }
    end_segment(seg, &mut seg_entries, &mut band_entries, out);
    while checked_bands < scheme.params.bands {
        band_entries.sort_unstable();
        compare_band(checked_bands, &band_entries, out);
        band_entries.clear();
        checked_bands += 1;
    }
    for (run, &(s, q)) in runs.iter().zip(&run_sums) {
        entries += s;
        sum_sq += q;
        if (s, q) != (run.entries, run.sum_sq) {
            out.problem(
                None,
                format!(
                    "lsh run {}: definition says sum(s) = {}, sum(s^2) = {}; its buckets give {s}, {q}",
                    run.id, run.entries, run.sum_sq
                ),
            );
        }
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

/// Appends the rows of `list` to `rows` and their band keys to `keys` (flat, in the same
/// order); a row that cannot be banded is a problem naming it as `what`.
fn band_rows(
    scheme: &BandKeyScheme,
    list: &[(u64, Sketch)],
    what: &str,
    (rows, keys): (&mut Vec<u64>, &mut Vec<u64>),
    out: &mut Out<'_>,
) {
    for (row, s) in list {
        match scheme.sketch_keys(s) {
            Ok(k) => {
                rows.push(*row);
                keys.extend_from_slice(&k);
            }
            Err(e) => out.problem(Some(*row), format!("{what} cannot be banded: {e}")),
        }
    }
}
