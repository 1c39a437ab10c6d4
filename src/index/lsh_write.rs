//! Writing an LSH index as a short list of runs (a log-structured layout).
//!
//! A write transaction never rewrites what earlier transactions stored, except to merge:
//!
//! * rows added by the transaction become one new run (their entries sorted per band and
//!   written once; nothing is read);
//! * a removed row's entries are taken out of the one run whose row range holds it (one group
//!   per band is read and rewritten);
//! * then runs merge by size tiers ([`merge_span`]): when at least [`MERGE_WIDTH`] of the
//!   newest runs each hold at most as many entries as all newer runs of that span together,
//!   the span is merged into one run in one pass (read once, merged, written with a group
//!   width for the merged size). An index built in batches of B rows thus keeps tiers of
//!   about `B * 4^i` entries, at most `MERGE_WIDTH - 1` runs per tier, and an entry is
//!   rewritten about once per tier, `log_4(N / B)` times. Past [`MAX_RUNS`] runs the
//!   neighbouring pair with the fewest entries merges, which bounds the work of a probe.
//!
//! A run covers a row range `[first_row, end_row)`; ranges are disjoint and ascending (rows
//! are appended in id order and only neighbours merge), so a removal finds its run by
//! binary search.

use std::ops::{Bound, Range};

use rayon::prelude::*;
use redb::{CursorError, WriteTransaction};

use super::keys::band::{BandKeyScheme, lsh_rows};
use super::lsh::{
    At, BucketTable, EncodedBand, GroupScratch, Groups, RawBand, Sums, band_keys_of, bucket_sums, drop_run_band,
    encode_run_band, insert_run_band, push_band_keys, remove_from_group, run_group_bits,
};
use super::meta::{IndexDef, IndexSpec, LshRun, index_err};
use super::radix::sort_hashed_pairs;
use crate::sketch::sketch::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::tables::{LSH_BUCKETS, LSH_ROWS};
use crate::storage::writer::inconsistent;

/// The fewest runs of one size tier that merge (the tiers' growth factor).
pub(crate) const MERGE_WIDTH: usize = 4;

/// The most runs an index keeps after a write: every probe reads each band in every run.
pub(crate) const MAX_RUNS: usize = 10;

/// The LSH changes of one write transaction: flat vectors, grouped by band and sorted at
/// flush (a map keyed by (band, group) costs a cache miss per entry).
pub(crate) struct LshDelta {
    scheme: BandKeyScheme,
    /// Rows added in this transaction, in the order added.
    added_rows: Vec<u64>,
    /// Their sketches, in the same order: band keys are computed at flush, in parallel.
    added: Vec<Sketch>,
    /// Whether each added row was removed again in this transaction (it never reaches the tables).
    dropped: Vec<bool>,
    /// Whether `added_rows` ascends (the writer appends rows in id order): removals then search.
    ascending: bool,
    removed: Vec<u64>,
}

impl LshDelta {
    pub(crate) fn new(scheme: BandKeyScheme) -> LshDelta {
        LshDelta {
            scheme,
            added_rows: Vec::new(),
            added: Vec::new(),
            dropped: Vec::new(),
            ascending: true,
            removed: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, row: u64, sketch: &Sketch) {
        if self.added_rows.last().is_some_and(|&last| last >= row) {
            self.ascending = false;
        }
        self.added_rows.push(row);
        self.added.push(sketch.clone());
        self.dropped.push(false);
    }

    pub(crate) fn remove(&mut self, row: u64) {
        // A row added and removed in one transaction never reaches the tables.
        let found = if self.ascending {
            self.added_rows.binary_search(&row).ok()
        } else {
            self.added_rows.iter().rposition(|&r| r == row)
        };
        match found {
            Some(i) if !self.dropped[i] => self.dropped[i] = true,
            _ => self.removed.push(row),
        }
    }

    /// Applies the changes to the tables and to `def` (its runs and counters): reverse map,
    /// removals, the new run, then merges.
    pub(crate) fn flush(
        &mut self,
        txn: &WriteTransaction,
        info: &CollectionInfo,
        def: &mut IndexDef,
    ) -> Result<(), StorageError> {
        let IndexSpec::Lsh { next_run, runs, .. } = &mut def.spec else {
            return Err(inconsistent(info, 0, "an LSH write met a definition that is not an LSH index"));
        };
        let n_bands = self.scheme.params.bands as usize;
        let (adds, removes) = self.reverse_map(txn, info, n_bands)?;
        let mut table = txn.open_table(LSH_BUCKETS).map_err(StorageError::backend("open table"))?;
        remove_rows(&mut table, info, self.scheme.key_bits(), runs, removes)?;
        if let Some(run) = self.new_run(&mut table, info, *next_run, runs.last(), adds)? {
            *next_run = next_run.checked_add(1).ok_or_else(|| inconsistent(info, 0, "LSH run numbers exhausted"))?;
            runs.push(run);
        }
        runs.retain(|r| r.entries > 0);
        while let Some(span) = merge_span(runs) {
            merge_into_one(&mut table, info, self.scheme, next_run, runs, span)?;
        }
        recount(def);
        self.added_rows.clear();
        self.added.clear();
        self.dropped.clear();
        self.ascending = true;
        self.removed.clear();
        Ok(())
    }

    /// Updates `sketchdb.lsh_rows` and returns the added rows' entries per band (sorted) and
    /// the removed rows' entries as (row, band keys).
    #[allow(clippy::type_complexity)]
    fn reverse_map(
        &self,
        txn: &WriteTransaction,
        info: &CollectionInfo,
        n_bands: usize,
    ) -> Result<(Vec<Vec<(u64, u64)>>, Vec<(u64, Vec<u64>)>), StorageError> {
        let (id, key_bits) = (info.def.id, self.scheme.key_bits());
        let mut rev = txn.open_table(LSH_ROWS).map_err(StorageError::backend("open table"))?;
        let mut removes = Vec::with_capacity(self.removed.len());
        for &row in &self.removed {
            let v = rev.remove((id, row)).map_err(StorageError::backend("remove lsh reverse entry"))?;
            let Some(v) = v else {
                return Err(inconsistent(info, row, "a removed row has no entry in sketchdb.lsh_rows"));
            };
            removes.push((row, band_keys_of(v.value(), n_bands, key_bits).map_err(|d| inconsistent(info, row, d))?));
        }
        // Band keys of every added row, computed on all cores; a sketch that cannot be
        // banded fails the transaction.
        let scheme = self.scheme;
        let added_keys: Vec<u64> = self
            .added
            .par_iter()
            .map(|sketch| {
                let rows = lsh_rows(sketch).map_err(index_err(info))?;
                scheme.keys(&rows).map_err(index_err(info))
            })
            .collect::<Result<Vec<Vec<u64>>, StorageError>>()?
            .concat();
        let live = self.added_rows.len() - self.dropped.iter().filter(|&&d| d).count();
        let mut adds: Vec<Vec<(u64, u64)>> = (0..n_bands).map(|_| Vec::with_capacity(live)).collect();
        let mut bytes = Vec::with_capacity(8 * n_bands);
        let mut live_rows: Vec<(u64, &[u64])> = self
            .added_rows
            .iter()
            .zip(added_keys.chunks_exact(n_bands.max(1)))
            .zip(&self.dropped)
            .filter(|(_, dropped)| !**dropped)
            .map(|((&row, keys), _)| (row, keys))
            .collect();
        // Added rows are new row ids (the writer adds them in id order): appended in order
        // through one cursor; one already stored is an inconsistency.
        if !self.ascending {
            live_rows.sort_unstable_by_key(|r| r.0);
        }
        let first = live_rows.first().map_or(0, |r| r.0);
        let mut cursor = rev
            .lower_bound_mut(Bound::Included((id, first)))
            .map_err(StorageError::backend("position lsh reverse cursor"))?;
        for &(row, keys) in &live_rows {
            bytes.clear();
            push_band_keys(keys, key_bits, &mut bytes);
            cursor.insert_before((id, row), bytes.as_slice()).map_err(|e| match e {
                CursorError::UnorderedKey => inconsistent(info, row, "an added row is already in sketchdb.lsh_rows"),
                e => StorageError::backend("write lsh reverse entry")(e),
            })?;
        }
        cursor.close().map_err(StorageError::backend("write lsh reverse entries"))?;
        for &(row, keys) in &live_rows {
            for (b, &k) in keys.iter().enumerate() {
                adds[b].push((k, row));
            }
        }
        adds.par_iter_mut().for_each_init(Vec::new, |scratch, v| sort_hashed_pairs(v, scratch));
        Ok((adds, removes))
    }

    /// Writes the added rows' entries as run `id`; `None` when nothing was added.
    fn new_run(
        &self,
        table: &mut BucketTable<'_>,
        info: &CollectionInfo,
        id: u32,
        last: Option<&LshRun>,
        adds: Vec<Vec<(u64, u64)>>,
    ) -> Result<Option<LshRun>, StorageError> {
        let live = self.added_rows.iter().zip(&self.dropped).filter(|(_, d)| !**d).map(|(r, _)| *r);
        let (Some(first_row), Some(last_row)) = (live.clone().min(), live.max()) else { return Ok(None) };
        if last.is_some_and(|l| first_row < l.end_row) {
            return Err(inconsistent(info, first_row, "an added row lies below the newest LSH run's rows"));
        }
        let per_band = adds.first().map_or(0, |v| v.len() as u64);
        let g = Groups::new(self.scheme.key_bits(), run_group_bits(per_band));
        let encoded: Vec<(EncodedBand, Sums)> = adds
            .par_iter()
            .enumerate()
            .map(|(band, entries)| {
                if entries.windows(2).any(|w| w[1] <= w[0]) {
                    return Err(lsh_rows_err(info, band as u32, id, "an added entry is already stored"));
                }
                Ok((encode_run_band(g, entries), bucket_sums(entries)))
            })
            .collect::<Result<_, _>>()?;
        let (mut entries, mut sum_sq) = (0u64, 0u128);
        for (band, (e, (s, q))) in encoded.iter().enumerate() {
            entries += s;
            sum_sq += q;
            insert_run_band(table, info, band as u32, id, e)?;
        }
        Ok(Some(LshRun { id, group_bits: g.bits, first_row, end_row: last_row + 1, entries, sum_sq }))
    }
}

fn lsh_rows_err(info: &CollectionInfo, band: u32, run: u32, detail: &str) -> StorageError {
    super::lsh::lsh_err(info, At { band, run, group: 0 }, detail)
}

/// Takes the removed rows' entries out of the runs holding them, group by group.
fn remove_rows(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    key_bits: u32,
    runs: &mut [LshRun],
    removes: Vec<(u64, Vec<u64>)>,
) -> Result<(), StorageError> {
    if removes.is_empty() {
        return Ok(());
    }
    // Per run (index into `runs`), per band: the entries to remove.
    let mut by_run: Vec<Vec<Vec<(u64, u64)>>> = vec![Vec::new(); runs.len()];
    for (row, keys) in removes {
        let i = runs.partition_point(|r| r.end_row <= row);
        if runs.get(i).is_none_or(|r| r.first_row > row) {
            return Err(inconsistent(info, row, "a removed row lies in no LSH run"));
        }
        let bands = &mut by_run[i];
        if bands.is_empty() {
            bands.resize(keys.len(), Vec::new());
        }
        for (b, k) in keys.into_iter().enumerate() {
            bands[b].push((k, row));
        }
    }
    let mut scratch = GroupScratch::default();
    for (run, mut bands) in runs.iter_mut().zip(by_run) {
        let g = Groups::new(key_bits, run.group_bits);
        for (band, removes) in bands.iter_mut().enumerate() {
            removes.sort_unstable();
            let mut i = 0;
            while i < removes.len() {
                let group = g.group(removes[i].0);
                let end = i + removes[i..].partition_point(|e| g.group(e.0) == group);
                let at = At { band: band as u32, run: run.id, group };
                let ((old_s, old_sq), (new_s, new_sq)) =
                    remove_from_group(table, info, g, at, &removes[i..end], &mut scratch)?;
                let counters = run.entries.checked_sub(old_s).zip(run.sum_sq.checked_sub(old_sq));
                let Some((entries, sum_sq)) = counters else {
                    return Err(super::lsh::lsh_err(info, at, "the run's counters are below its group's"));
                };
                run.entries = entries + new_s;
                run.sum_sq = sum_sq + new_sq;
                i = end;
            }
        }
    }
    Ok(())
}

/// Sets the definition's counters to the sums over its runs (a merged run's sum(s^2) counts
/// buckets the two runs shared as one, so the sum changes with merges, not only with rows).
fn recount(def: &mut IndexDef) {
    if let IndexSpec::Lsh { runs, .. } = &def.spec {
        def.entries = runs.iter().map(|r| r.entries).sum();
        def.sum_sq = runs.iter().map(|r| r.sum_sq).sum();
    }
}

/// Merges the runs `runs[span]` (neighbours) into run `next_run` (then incremented).
fn merge_into_one(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    scheme: BandKeyScheme,
    next_run: &mut u32,
    runs: &mut Vec<LshRun>,
    span: Range<usize>,
) -> Result<(), StorageError> {
    let merged = merge_runs(table, info, scheme, *next_run, &runs[span.clone()])?;
    *next_run = next_run.checked_add(1).ok_or_else(|| inconsistent(info, 0, "LSH run numbers exhausted"))?;
    runs.splice(span, [merged]);
    Ok(())
}

/// Merges all runs of an LSH index into one, in one pass (compaction): a probe then reads
/// one bucket per band. Returns whether there was more than one run; `def` is updated, not
/// stored.
pub(crate) fn merge_all(
    txn: &WriteTransaction,
    info: &CollectionInfo,
    def: &mut IndexDef,
) -> Result<bool, StorageError> {
    let IndexSpec::Lsh { scheme, next_run, runs, .. } = &mut def.spec else { return Ok(false) };
    if runs.len() < 2 {
        return Ok(false);
    }
    let mut table = txn.open_table(LSH_BUCKETS).map_err(StorageError::backend("open table"))?;
    let all = 0..runs.len();
    merge_into_one(&mut table, info, *scheme, next_run, runs, all)?;
    recount(def);
    Ok(true)
}

/// The neighbouring runs to merge next, if any (`runs` oldest first):
///
/// * the size tier: the longest span of newest runs in which each run holds at most as many
///   entries as all newer runs of the span together, when it has at least [`MERGE_WIDTH`]
///   runs;
/// * else, past [`MAX_RUNS`] runs, the neighbouring pair with the fewest entries together
///   (the newest such pair).
pub(crate) fn merge_span(runs: &[LshRun]) -> Option<Range<usize>> {
    let n = runs.len();
    let mut start = n.checked_sub(1)?;
    let mut newer = runs[start].entries;
    while start > 0 && runs[start - 1].entries <= newer {
        start -= 1;
        newer = newer.saturating_add(runs[start].entries);
    }
    if n - start >= MERGE_WIDTH {
        return Some(start..n);
    }
    if n <= MAX_RUNS {
        return None;
    }
    let pair = |j: usize| runs[j].entries.saturating_add(runs[j + 1].entries);
    let j = (0..n - 1).rev().min_by_key(|&j| pair(j))?;
    Some(j..j + 2)
}

/// Bands merged at once: their entries are held in memory together (at 1M rows per run,
/// about 16 MB per band and run).
const MERGE_BANDS_AT_ONCE: u32 = 8;

/// Merges neighbouring runs `span` (oldest first) into run `id`, a few bands at a time (read
/// in turn, decoded, merged and encoded in parallel, written in turn); drops them.
fn merge_runs(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    scheme: BandKeyScheme,
    id: u32,
    span: &[LshRun],
) -> Result<LshRun, StorageError> {
    let (Some(first_run), Some(last_run)) = (span.first(), span.last()) else {
        return Err(inconsistent(info, 0, "an LSH merge of no runs"));
    };
    let total: u64 = span.iter().map(|r| r.entries).sum();
    let (bands, key_bits) = (scheme.params.bands, scheme.key_bits());
    let g = Groups::new(key_bits, run_group_bits(total / u64::from(bands.max(1))));
    let (mut entries, mut sum_sq) = (0u64, 0u128);
    let mut first = 0;
    while first < bands {
        let last = (first + MERGE_BANDS_AT_ONCE).min(bands);
        let mut inputs = Vec::with_capacity((last - first) as usize);
        for band in first..last {
            let raw = span
                .iter()
                .map(|run| RawBand::read(table, info, Groups::new(key_bits, run.group_bits), band, run.id))
                .collect::<Result<Vec<_>, _>>()?;
            inputs.push((band, raw));
        }
        // Decoding, merging and encoding run on all cores; this thread reads and writes.
        let encoded: Vec<(u32, EncodedBand, Sums)> = inputs
            .into_par_iter()
            .map(|(band, raw)| {
                let mut parts = Vec::with_capacity(raw.len());
                for r in &raw {
                    let mut part = Vec::new();
                    r.decode_into(info, &mut part)?;
                    parts.push(part);
                }
                drop(raw);
                let merged = merge_all_sorted(parts)
                    .ok_or_else(|| lsh_rows_err(info, band, id, "merged runs hold an entry twice or out of order"))?;
                Ok((band, encode_run_band(g, &merged), bucket_sums(&merged)))
            })
            .collect::<Result<_, StorageError>>()?;
        for (band, e, (s, q)) in &encoded {
            entries += s;
            sum_sq += q;
            insert_run_band(table, info, *band, id, e)?;
            for run in span {
                drop_run_band(table, info.def.id, *band, run.id)?;
            }
        }
        first = last;
    }
    Ok(LshRun { id, group_bits: g.bits, first_row: first_run.first_row, end_row: last_run.end_row, entries, sum_sq })
}

/// The merge of strictly ascending sequences (pairwise, neighbours first), or `None` when
/// the result would not be strictly ascending. A part left over at one level is checked
/// when it is merged at the next; only a part never merged is checked on its own.
fn merge_all_sorted(mut parts: Vec<Vec<(u64, u64)>>) -> Option<Vec<(u64, u64)>> {
    if parts.len() == 1 {
        return parts.pop().filter(|p| p.windows(2).all(|w| w[0] < w[1]));
    }
    while parts.len() > 1 {
        let mut next = Vec::with_capacity(parts.len().div_ceil(2));
        let mut it = parts.into_iter();
        while let Some(x) = it.next() {
            next.push(match it.next() {
                Some(y) => merge_sorted(&x, &y)?,
                None => x,
            });
        }
        parts = next;
    }
    Some(parts.pop().unwrap_or_default())
}

/// The merge of two strictly ascending sequences, or `None` when the result would not be
/// strictly ascending (an entry in both, or an input out of order). Branch-free in the loop:
/// band keys are hashes, so which side comes next is a coin toss a branch would mispredict.
fn merge_sorted(x: &[(u64, u64)], y: &[(u64, u64)]) -> Option<Vec<(u64, u64)>> {
    let wide = |e: (u64, u64)| u128::from(e.0) << 64 | u128::from(e.1);
    let mut out = vec![(0u64, 0u64); x.len() + y.len()];
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        let (a, b) = (x[i], y[j]);
        let take_x = wide(a) < wide(b);
        out[k] = if take_x { a } else { b };
        i += usize::from(take_x);
        j += usize::from(!take_x);
        k += 1;
    }
    out[k..k + x.len() - i].copy_from_slice(&x[i..]);
    let k = k + x.len() - i;
    out[k..].copy_from_slice(&y[j..]);
    out.windows(2).all(|w| wide(w[0]) < wide(w[1])).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(entries: u64) -> LshRun {
        LshRun { id: 0, group_bits: 0, first_row: 0, end_row: 1, entries, sum_sq: 0 }
    }

    #[test]
    fn merge_sorted_interleaves_and_refuses_duplicates() {
        assert_eq!(merge_sorted(&[(1, 1), (3, 0)], &[(1, 2), (2, 0)]), Some(vec![(1, 1), (1, 2), (2, 0), (3, 0)]));
        assert_eq!(merge_sorted(&[], &[(5, 5)]), Some(vec![(5, 5)]));
        assert_eq!(merge_sorted(&[(1, 1)], &[(1, 1)]), None);
        assert_eq!(merge_sorted(&[(2, 1), (1, 1)], &[]), None);
    }

    #[test]
    fn merge_all_sorted_merges_any_number_of_parts() {
        let parts = vec![vec![(1, 0), (9, 0)], vec![(2, 1)], vec![(0, 2), (5, 2)], vec![], vec![(3, 3)]];
        assert_eq!(merge_all_sorted(parts), Some(vec![(0, 2), (1, 0), (2, 1), (3, 3), (5, 2), (9, 0)]));
        assert_eq!(merge_all_sorted(vec![vec![(1, 1)], vec![(2, 2)], vec![(1, 1)]]), None);
        assert_eq!(merge_all_sorted(vec![vec![(1, 1)], vec![(2, 2)], vec![(4, 1), (3, 3)]]), None);
        assert_eq!(merge_all_sorted(Vec::new()), Some(Vec::new()));
        assert_eq!(merge_all_sorted(vec![vec![(1, 0), (2, 0)]]), Some(vec![(1, 0), (2, 0)]));
        assert_eq!(merge_all_sorted(vec![vec![(2, 0), (1, 0)]]), None);
    }

    #[test]
    fn merge_span_takes_a_full_size_tier_or_the_smallest_pair_past_the_cap() {
        let runs = |sizes: &[u64]| sizes.iter().map(|&e| run(e)).collect::<Vec<_>>();
        assert_eq!(merge_span(&[]), None);
        assert_eq!(merge_span(&runs(&[10])), None);
        assert_eq!(merge_span(&runs(&[10, 10, 10])), None);
        assert_eq!(merge_span(&runs(&[10, 10, 10, 10])), Some(0..4));
        // 41 > 10 + 10 + 10: the tier is the three newest runs only, then the four.
        assert_eq!(merge_span(&runs(&[41, 10, 10, 10])), None);
        assert_eq!(merge_span(&runs(&[41, 10, 10, 10, 10])), Some(1..5));
        // 30 <= 10 + 10 + 10: an older run joins once the newer ones outweigh it.
        assert_eq!(merge_span(&runs(&[500, 30, 10, 10, 10])), Some(1..5));
        // Past the cap without a full tier: the pair with the fewest entries, newest first.
        let mut many: Vec<u64> = (0..=MAX_RUNS as u64).map(|i| 1 << (2 * (MAX_RUNS as u64 - i) + 4)).collect();
        many[3] = 5;
        many[4] = 5;
        let span = merge_span(&runs(&many)).expect("over the cap");
        assert_eq!(span.len(), 2);
        let least = (0..many.len() - 1).map(|j| many[j] + many[j + 1]).min().unwrap();
        assert_eq!(many[span.start] + many[span.start + 1], least);
    }

    /// Simulated growth in equal batches: runs stay few and each entry is rewritten a
    /// logarithmic number of times.
    #[test]
    fn growth_in_batches_keeps_few_runs_and_bounded_rewrites() {
        for (batches, most_runs, most_writes) in [(100, 7, 4.0), (1000, MAX_RUNS, 5.5), (10_000, MAX_RUNS, 8.0)] {
            let (mut runs, mut written, mut peak) = (Vec::new(), 0u64, 0);
            for _ in 0..batches {
                runs.push(run(1));
                written += 1;
                while let Some(span) = merge_span(&runs) {
                    let e = runs[span.clone()].iter().map(|r| r.entries).sum();
                    written += e;
                    runs.splice(span, [run(e)]);
                }
                peak = peak.max(runs.len());
            }
            assert!(peak <= most_runs, "{batches} batches: {peak} runs");
            // 3.8, 5.1 and 7.4 here; the earlier pairwise rule (merge while the older held at
            // most 4 times the newer) rewrote 8.4 and 12.8 times at 100 and 1000 batches.
            let per_entry = written as f64 / batches as f64;
            assert!(per_entry < most_writes, "{batches} batches: {per_entry} writes per entry");
        }
    }
}
