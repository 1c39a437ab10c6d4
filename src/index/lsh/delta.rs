//! The LSH changes of one write transaction ([`LshDelta`]) and how they are flushed:
//! removals (listed, [`super::dead`]), the added rows' new run, then merges and the
//! rewrite of runs with many removed rows ([`super::write`]).
//!
//! A large batch's band keys and per-band sorted entries are computed by a prepare job
//! ([`LshDelta::prepare`]) on the other cores while the writer stores the records; rows
//! the job does not cover (a rebuild, a small batch) keep a copy of their sketch and are
//! keyed at flush.

use rayon::prelude::*;

use super::band::BandKeyScheme;
use super::dead::mark_removed;
use super::format::{WORD_ROWS, word, word_entry};
use super::table::lsh_rows_err;
use super::table::{EncodedBand, Groups, Sums, bucket_sums, encode_run_band, insert_run_band, run_group_bits};
use super::write::{MergeTables, merge_into_one, merge_span, recount, rewrite_dead_runs};
use crate::index::defs::{IndexDef, IndexSpec, LshRun};
use crate::index::error::IndexError;
use crate::index::error::inconsistent;
use crate::index::error::index_err;
use crate::index::radix::{sort_hashed, sort_hashed_pairs};
use crate::sketch::sketcher::Sketch;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::panic_message;
use crate::storage::hook::{PrepareJob, Prepared};
use crate::storage::index_tables::IndexTxn;

/// Batches of at least this many new sketches get a prepare job (below it, a thread costs
/// more than it saves).
pub(crate) const PREPARE_MIN_ROWS: usize = 1024;

/// What a prepare job computes for rows `first_row..first_row + n`.
struct PreparedAdds {
    /// Every row's band keys, flat (`n * bands`, row-major).
    keys: Vec<u64>,
    /// Per band, the rows' (band key, row) entries, sorted.
    by_band: Vec<Vec<(u64, u64)>>,
}

/// The band keys of `sketches` (flat, in order) and their entries per band for rows
/// `first_row, first_row + 1, ...`, sorted; computed on all cores.
fn prepare_adds(scheme: BandKeyScheme, sketches: &[&Sketch], first_row: u64) -> Result<PreparedAdds, IndexError> {
    let n_bands = scheme.params.bands as usize;
    let keys = sketches.par_iter().map(|s| scheme.sketch_keys(s)).collect::<Result<Vec<Vec<u64>>, _>>()?.concat();
    let rows: Vec<(u64, &[u64])> = (first_row..).zip(keys.chunks_exact(n_bands.max(1))).collect();
    let by_band = sorted_by_band(n_bands, scheme.key_bits(), &rows);
    Ok(PreparedAdds { keys, by_band })
}

/// Rows transposed together: a block's band keys (`TRANSPOSE_ROWS * bands * 8` bytes, 80 KB
/// at 39 bands) stay in cache while each band takes its column.
const TRANSPOSE_ROWS: usize = 256;

/// Per band, the (band key, row) entries of `rows` (each with its band keys in band order,
/// keys of `key_bits` significant bits), sorted. The bands are split in two shares a core;
/// each is transposed block by block of rows (a band at a time over all rows would miss the
/// cache on every row), then sorted. With 32-bit keys and rows spanning less than 2^32, an
/// entry is sorted as one word (key over the row's offset): half the bytes each radix pass
/// moves.
fn sorted_by_band(n_bands: usize, key_bits: u32, rows: &[(u64, &[u64])]) -> Vec<Vec<(u64, u64)>> {
    let share = n_bands.div_ceil(2 * rayon::current_num_threads().max(1)).max(1);
    let bands: Vec<usize> = (0..n_bands).collect();
    let (lo, hi) = rows.iter().fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.0), hi.max(r.0)));
    let packed = key_bits <= 32 && hi.saturating_sub(lo) <= WORD_ROWS;
    let shares: Vec<Vec<Vec<(u64, u64)>>> = bands
        .par_chunks(share)
        .map(|bands| if packed { sorted_packed(bands, lo, rows) } else { sorted_pairs(bands, rows) })
        .collect();
    shares.into_iter().flatten().collect()
}

/// [`sorted_by_band`] for `bands` as pairs.
fn sorted_pairs(bands: &[usize], rows: &[(u64, &[u64])]) -> Vec<Vec<(u64, u64)>> {
    let mut out = transposed(bands, rows, |key, row| (key, row));
    let mut scratch = Vec::new();
    out.iter_mut().for_each(|v| sort_hashed_pairs(v, &mut scratch));
    out
}

/// [`sorted_by_band`] for `bands` as words `key | (row - base)` (keys with their low 32 bits
/// clear, rows in `base..base + 2^32`).
fn sorted_packed(bands: &[usize], base: u64, rows: &[(u64, &[u64])]) -> Vec<Vec<(u64, u64)>> {
    let mut scratch = Vec::new();
    transposed(bands, rows, |key, row| word(key, row - base))
        .into_iter()
        .map(|mut v| {
            sort_hashed(&mut v, &mut scratch, |&w| w);
            v.iter().map(|&w| word_entry(w, base)).collect()
        })
        .collect()
}

/// Per band of `bands`, `entry(band key, row)` of every row, in row order: block by block
/// of rows, so a block's keys stay in cache while each band takes its column.
fn transposed<T>(bands: &[usize], rows: &[(u64, &[u64])], entry: impl Fn(u64, u64) -> T) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = bands.iter().map(|_| Vec::with_capacity(rows.len())).collect();
    for block in rows.chunks(TRANSPOSE_ROWS) {
        for (v, &b) in out.iter_mut().zip(bands) {
            v.extend(block.iter().map(|&(row, keys)| entry(keys[b], row)));
        }
    }
    out
}

/// The LSH changes of one write transaction: flat vectors, grouped by band and sorted at
/// flush (a map keyed by (band, group) costs a cache miss per entry).
pub(crate) struct LshDelta {
    scheme: BandKeyScheme,
    /// Rows added in this transaction, in the order added.
    added_rows: Vec<u64>,
    /// The rows a prepare job was started for: `(first row, count)`.
    expected: Option<(u64, usize)>,
    /// `added_rows[..covered]` are the job's rows `first, first + 1, ...` (a prefix).
    covered: usize,
    /// The job's result, once handed over.
    prepared: Option<Result<PreparedAdds, IndexError>>,
    /// The sketches of `added_rows[covered..]`, in order: keyed at flush, in parallel.
    added: Vec<Sketch>,
    /// Whether each added row was removed again in this transaction (it never reaches the tables).
    dropped: Vec<bool>,
    /// Whether `added_rows` ascends (the writer appends rows in id order): removals then search.
    ascending: bool,
    /// Rows stored before this transaction and removed in it.
    removed: Vec<u64>,
}

impl LshDelta {
    pub(crate) fn new(scheme: BandKeyScheme) -> LshDelta {
        LshDelta {
            scheme,
            added_rows: Vec::new(),
            expected: None,
            covered: 0,
            prepared: None,
            added: Vec::new(),
            dropped: Vec::new(),
            ascending: true,
            removed: Vec::new(),
        }
    }

    /// A job keying `sketches`, the batch's new rows `first_row, first_row + 1, ...` (see
    /// [`crate::storage::hook::IndexHook::prepare`]); `None` for a small batch or once rows
    /// were added.
    pub(crate) fn prepare<'a>(&mut self, sketches: &'a [&'a Sketch], first_row: u64) -> Option<PrepareJob<'a>> {
        if sketches.len() < PREPARE_MIN_ROWS || !self.added_rows.is_empty() || self.expected.is_some() {
            return None;
        }
        self.expected = Some((first_row, sketches.len()));
        let scheme = self.scheme;
        Some(Box::new(move || -> Prepared { Box::new(prepare_adds(scheme, sketches, first_row)) }))
    }

    /// Takes the result of the job [`Self::prepare`] returned.
    pub(crate) fn prepared(&mut self, result: Prepared, info: &CollectionInfo) -> Result<(), IndexError> {
        match result.downcast::<Result<PreparedAdds, IndexError>>() {
            Ok(r) if self.expected.is_some() => {
                self.prepared = Some(*r);
                Ok(())
            }
            _ => Err(inconsistent(info, 0, "an LSH index was handed a prepare result it did not ask for")),
        }
    }

    pub(crate) fn add(&mut self, row: u64, sketch: &Sketch) {
        if self.added_rows.last().is_some_and(|&last| last >= row) {
            self.ascending = false;
        }
        let covered = self.expected.is_some_and(|(first, n)| {
            self.covered == self.added_rows.len() && self.covered < n && row == first + self.covered as u64
        });
        if covered {
            self.covered += 1;
        } else {
            self.added.push(sketch.clone());
        }
        self.added_rows.push(row);
        self.dropped.push(false);
    }

    /// Row `row` is removed.
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

    /// Applies the changes to the tables and to `def` (its runs and counters): removals, the
    /// new run, merges, then rewrites of runs with many removed rows; first, the reverse map
    /// of an earlier build goes.
    pub(crate) fn flush(
        &mut self,
        txn: &IndexTxn<'_>,
        info: &CollectionInfo,
        def: &mut IndexDef,
    ) -> Result<(), IndexError> {
        let IndexSpec::Lsh { next_run, runs, reverse_map, .. } = &mut def.spec else {
            return Err(inconsistent(info, 0, "an LSH write met a definition that is not an LSH index"));
        };
        if *reverse_map {
            txn.drop_lsh_reverse_map(info.def.id)?;
            *reverse_map = false;
        }
        let n_bands = self.scheme.params.bands as usize;
        let removes = std::mem::take(&mut self.removed);
        let (added_keys, prepared) = self.added_keys(info)?;
        let live_rows = self.live_rows(&added_keys, n_bands);
        let adds = prepared.unwrap_or_else(|| sorted_by_band(n_bands, self.scheme.key_bits(), &live_rows));
        let mut table = txn.lsh_runs()?;
        let mut dead = txn.lsh_dead()?;
        let last_end = runs.last().map(|r| r.end_row);
        // The new run is encoded on the worker threads while this thread lists the removals
        // (neither reads what the other writes).
        let (this, new_id) = (&*self, *next_run);
        let new = std::thread::scope(|scope| {
            // `live_rows` ascends: its ends are the new run's row span.
            let span = live_rows.first().zip(live_rows.last()).map(|(f, l)| (f.0, l.0));
            let job = scope.spawn(move || this.new_run(info, new_id, last_end, span, adds));
            let written = mark_removed(&mut dead, info, runs, &removes);
            let new = job.join().map_err(|payload| StorageError::EnginePanic {
                op: "encode lsh run",
                detail: panic_message(payload.as_ref()),
            })?;
            written.and(new)
        })?;
        // The new run, while not stored: it stays the newest run until a merge takes it.
        let mut unwritten = None;
        if let Some((run, encoded)) = new {
            *next_run = next_run.checked_add(1).ok_or_else(|| inconsistent(info, 0, "LSH run numbers exhausted"))?;
            unwritten = Some((run.id, encoded));
            runs.push(run);
        }
        let mut tables = MergeTables { buckets: &mut table, dead: &mut dead };
        while let Some(span) = merge_span(runs) {
            // A merge that takes the new run reads it from memory: its values are never
            // written, read back and dropped.
            let from_memory = if span.end == runs.len() { unwritten.take().map(|(_, e)| e) } else { None };
            merge_into_one(&mut tables, info, self.scheme, next_run, runs, span, from_memory)?;
        }
        if let Some((id, encoded)) = unwritten {
            for (band, e) in encoded.iter().enumerate() {
                insert_run_band(tables.buckets, info, band as u32, id, e)?;
            }
        }
        rewrite_dead_runs(&mut tables, info, self.scheme, next_run, runs)?;
        recount(def);
        *self = LshDelta::new(self.scheme);
        Ok(())
    }

    /// The band keys of every added row, flat in `added_rows` order, and the job's entries
    /// per band when they are exactly the live added rows'.
    #[allow(clippy::type_complexity)]
    fn added_keys(&mut self, info: &CollectionInfo) -> Result<(Vec<u64>, Option<Vec<Vec<(u64, u64)>>>), IndexError> {
        let n_bands = self.scheme.params.bands as usize;
        let (mut keys, mut by_band) = (Vec::new(), None);
        if self.covered > 0 {
            match self.prepared.take() {
                Some(Ok(p)) => {
                    let whole = self.expected.is_some_and(|(_, n)| n == self.covered);
                    if whole && self.added.is_empty() && !self.dropped.contains(&true) {
                        by_band = Some(p.by_band);
                    }
                    keys = p.keys;
                    keys.truncate(self.covered * n_bands);
                }
                Some(Err(e)) => return Err(index_err(info)(e)),
                None => return Err(inconsistent(info, 0, "an LSH prepare job's result never arrived")),
            }
        }
        // Rows the job did not cover, keyed on all cores; a sketch that cannot be banded
        // fails the transaction.
        let scheme = self.scheme;
        let rest = self.added.par_iter().map(|s| scheme.sketch_keys(s).map_err(index_err(info)));
        keys.extend(rest.collect::<Result<Vec<Vec<u64>>, IndexError>>()?.concat());
        Ok((keys, by_band))
    }

    /// The added rows that stay (not dropped again), ascending, each with its band keys (a
    /// slice of `added_keys`, flat in `added_rows` order).
    fn live_rows<'k>(&self, added_keys: &'k [u64], n_bands: usize) -> Vec<(u64, &'k [u64])> {
        let mut live_rows: Vec<(u64, &[u64])> = self
            .added_rows
            .iter()
            .zip(added_keys.chunks_exact(n_bands.max(1)))
            .zip(&self.dropped)
            .filter(|(_, dropped)| !**dropped)
            .map(|((&row, keys), _)| (row, keys))
            .collect();
        if !self.ascending {
            live_rows.sort_unstable_by_key(|r| r.0);
        }
        live_rows
    }

    /// The added rows' entries as run `id` over rows `span` (first, last), encoded band by band
    /// (not yet stored); `None` when nothing was added.
    fn new_run(
        &self,
        info: &CollectionInfo,
        id: u32,
        last_end: Option<u64>,
        span: Option<(u64, u64)>,
        adds: Vec<Vec<(u64, u64)>>,
    ) -> Result<Option<(LshRun, Vec<EncodedBand>)>, IndexError> {
        let Some((first_row, last_row)) = span else { return Ok(None) };
        if last_end.is_some_and(|end| first_row < end) {
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
        let mut bands = Vec::with_capacity(encoded.len());
        for (e, (s, q)) in encoded {
            entries += s;
            sum_sq += q;
            bands.push(e);
        }
        let run = LshRun { id, group_bits: g.bits, first_row, end_row: last_row + 1, entries, sum_sq, dead: 0 };
        Ok(Some((run, bands)))
    }
}

#[cfg(test)]
mod tests {
    use super::sorted_by_band;
    use crate::index::radix::tests::xorshift;

    /// The blocked, shared-out transposition gives every band its entries sorted, for band
    /// counts that do and do not divide among the cores and row counts around the block size;
    /// repeated keys keep every row.
    #[test]
    fn sorted_by_band_equals_a_plain_sort_per_band() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // 64-bit keys (pairs), 32-bit keys over rows in one 2^32 span (words) and over a
        // wider span (pairs again).
        for (key_bits, gap) in [(64u32, 1u64), (32, 1), (32, 1 << 31), (32, 1 << 33)] {
            let mask = if key_bits == 64 { u64::MAX } else { !0xffff_ffff };
            for n_bands in [1usize, 3, 39] {
                for n_rows in [0usize, 1, 255, 257, 5_000] {
                    let keys: Vec<u64> =
                        (0..n_rows * n_bands).map(|i| if i % 7 == 0 { 42 << 40 } else { next() & mask }).collect();
                    // Rows ascending from 1000, the last one `gap` past the one before.
                    let row = |i: usize| 1000 + i as u64 + if i + 1 == n_rows && i > 0 { gap } else { 0 };
                    let rows: Vec<(u64, &[u64])> =
                        keys.chunks_exact(n_bands).enumerate().map(|(i, k)| (row(i), k)).collect();
                    let got = sorted_by_band(n_bands, key_bits, &rows);
                    assert_eq!(got.len(), n_bands);
                    for (b, entries) in got.iter().enumerate() {
                        let mut want: Vec<(u64, u64)> = rows.iter().map(|&(row, k)| (k[b], row)).collect();
                        want.sort_unstable();
                        assert!(
                            entries == &want,
                            "{key_bits}-bit keys, gap {gap}, {n_bands} bands, {n_rows} rows: band {b} differs"
                        );
                    }
                }
            }
        }
    }
}
