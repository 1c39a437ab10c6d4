//! Merging neighbouring LSH runs into one ([`merge_runs`]), a few bands at a time: this
//! thread reads each band of each run as stored ([`RawBand`]) and writes the merged run;
//! the bands merge on all cores, group by group of the merged run ([`merge_band`]), so the
//! decoded entries of a group (a few hundred) stay in the core's cache and the only full
//! passes over a band are its stored bytes read once and the merged bytes written once.
//! With 32-bit band keys an entry is merged as one word (key over the row's offset from the
//! merged run's first row; 30-38% fewer merge samples per 1M rows in batches of 10k than as
//! (key, row) pairs).

use rayon::prelude::*;

use super::band::BandKeyScheme;
use super::dead::DeadRows;
use super::format::{WORD_ROWS, word_entry};
use super::table::lsh_rows_err;
use super::table::{
    BucketTable, CHUNK_HEADER_LEN, EncodedBand, Groups, RawBand, Sums, bucket_sums_by, drop_run_band, insert_run_band,
    run_group_bits,
};
use crate::index::defs::LshRun;
use crate::index::error::IndexError;
use crate::index::error::inconsistent;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::panic_message;

/// Bands merged at once: their stored bytes and the merged encodings are held in memory
/// together (at 1M rows per run, about 6 MB per band and run).
const MERGE_BANDS_AT_ONCE: u32 = 4;

/// Merges neighbouring runs `span` (oldest first) into run `id`, a few bands at a time, and
/// drops them. A pipeline: while the bands of one batch merge on the worker threads, this
/// thread writes the previous batch's merged bands and reads the next batch.
///
/// `unwritten`: the bands (in band order) of the span's newest run when that run was never
/// stored (a new run this transaction merges at once); they are merged from memory and
/// nothing of that run is read or dropped. Entries of the rows in `dead` (removed rows the
/// runs still hold) are left out.
pub(crate) fn merge_runs(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    scheme: BandKeyScheme,
    id: u32,
    span: &[LshRun],
    unwritten: Option<Vec<EncodedBand>>,
    dead: &DeadRows,
) -> Result<LshRun, IndexError> {
    let (Some(first_run), Some(last_run)) = (span.first(), span.last()) else {
        return Err(inconsistent(info, 0, "an LSH merge of no runs"));
    };
    let removed: u64 = span.iter().map(|r| r.dead).sum();
    let total: u64 =
        span.iter().map(|r| r.entries).sum::<u64>().saturating_sub(removed * u64::from(scheme.params.bands));
    let (bands, key_bits) = (scheme.params.bands, scheme.key_bits());
    let g = Groups::new(key_bits, run_group_bits(total / u64::from(bands.max(1))));
    let rows = first_run.first_row..last_run.end_row;
    let mut unwritten: Option<Vec<Option<EncodedBand>>> = unwritten.map(|bands| bands.into_iter().map(Some).collect());
    if unwritten.as_ref().is_some_and(|u| u.len() != bands as usize) {
        return Err(inconsistent(info, last_run.first_row, "an unwritten LSH run without one encoding a band"));
    }
    // The runs whose values are stored (all but an unwritten newest one).
    let stored = if unwritten.is_some() { &span[..span.len() - 1] } else { span };
    let mut sums = (0u64, 0u128);
    std::thread::scope(|scope| {
        let mut merging = None;
        let mut first = 0;
        while first < bands {
            let last = (first + MERGE_BANDS_AT_ONCE).min(bands);
            let mut inputs = Vec::with_capacity((last - first) as usize);
            for band in first..last {
                let mut raw = stored
                    .iter()
                    .map(|run| RawBand::read(table, info, Groups::new(key_bits, run.group_bits), band, run.id))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(encoded) = unwritten.as_mut().and_then(|u| u[band as usize].take()) {
                    raw.push(RawBand::from_unwritten(
                        Groups::new(key_bits, last_run.group_bits),
                        band,
                        last_run.id,
                        encoded,
                    ));
                }
                inputs.push((band, raw));
            }
            let rows = rows.clone();
            let job = scope.spawn(move || {
                inputs
                    .into_par_iter()
                    .map(|(band, raw)| {
                        merge_band(info, &raw, g, band, id, rows.clone(), dead).map(|(e, s)| (band, e, s))
                    })
                    .collect::<Result<Vec<_>, IndexError>>()
            });
            if let Some(previous) = merging.replace(job) {
                write_merged(table, info, id, stored, joined(previous)?, &mut sums)?;
            }
            first = last;
        }
        match merging {
            Some(job) => write_merged(table, info, id, stored, joined(job)?, &mut sums),
            None => Ok(()),
        }
    })?;
    let (entries, sum_sq) = sums;
    let (first_row, end_row) = (first_run.first_row, last_run.end_row);
    Ok(LshRun { id, group_bits: g.bits, first_row, end_row, entries, sum_sq, dead: 0 })
}

/// The result of a merge job; its panic as an error.
fn joined<T>(job: std::thread::ScopedJoinHandle<'_, Result<T, IndexError>>) -> Result<T, IndexError> {
    job.join().map_err(|payload| StorageError::EnginePanic {
        op: "merge lsh runs",
        detail: panic_message(payload.as_ref()),
    })?
}

/// Writes merged bands of run `id`, drops those bands of the stored runs `span` and adds
/// the bands' sums to `sums`.
fn write_merged(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    id: u32,
    span: &[LshRun],
    merged: Vec<(u32, EncodedBand, Sums)>,
    sums: &mut Sums,
) -> Result<(), IndexError> {
    for (band, e, (s, q)) in &merged {
        sums.0 += s;
        sums.1 += q;
        insert_run_band(table, info, *band, id, e)?;
        for run in span {
            drop_run_band(table, info.def.id, *band, run.id)?;
        }
    }
    Ok(())
}

/// An entry as a merge handles it: a (band key, row) pair, or, for 32-bit keys over rows
/// that span less than 2^32, one word `key | (row - base)` (half the bytes to move, one
/// integer compare). Both order as (key, row).
trait Entry: Copy + Ord {
    /// The band key.
    fn key(&self) -> u64;
    /// Appends the entries of chunk `i` of `raw`.
    fn decode(raw: &RawBand, info: &CollectionInfo, i: usize, base: u64, out: &mut Vec<Self>)
    -> Result<(), IndexError>;
    /// The (band key, row) pair.
    fn pair(self, base: u64) -> (u64, u64);
    /// `self < other`, without a branch.
    fn before(self, other: Self) -> bool;
}

impl Entry for (u64, u64) {
    #[inline]
    fn key(&self) -> u64 {
        self.0
    }
    fn decode(raw: &RawBand, info: &CollectionInfo, i: usize, _: u64, out: &mut Vec<Self>) -> Result<(), IndexError> {
        raw.decode_chunk_into(info, i, out)
    }
    #[inline]
    fn pair(self, _: u64) -> (u64, u64) {
        self
    }
    #[inline]
    fn before(self, other: Self) -> bool {
        let wide = |e: (u64, u64)| u128::from(e.0) << 64 | u128::from(e.1);
        wide(self) < wide(other)
    }
}

impl Entry for u64 {
    #[inline]
    fn key(&self) -> u64 {
        self & !WORD_ROWS
    }
    fn decode(
        raw: &RawBand,
        info: &CollectionInfo,
        i: usize,
        base: u64,
        out: &mut Vec<Self>,
    ) -> Result<(), IndexError> {
        raw.decode_chunk_words_into(info, i, base, out)
    }
    #[inline]
    fn pair(self, base: u64) -> (u64, u64) {
        word_entry(self, base)
    }
    #[inline]
    fn before(self, other: Self) -> bool {
        self < other
    }
}

/// One band of one run, decoded a chunk at a time as the merge consumes it.
struct Cursor<'r, E> {
    raw: &'r RawBand,
    /// The row entries' offsets count from (words).
    base: u64,
    /// The next chunk to decode.
    chunk: usize,
    /// The decoded chunk; `buf[pos..]` is not consumed yet.
    buf: Vec<E>,
    pos: usize,
}

impl<'r, E: Entry> Cursor<'r, E> {
    fn new(raw: &'r RawBand, base: u64) -> Cursor<'r, E> {
        Cursor { raw, base, chunk: 0, buf: Vec::new(), pos: 0 }
    }

    /// The next entry's band key, decoding the next chunk when the current one is used up.
    fn peek(&mut self, info: &CollectionInfo) -> Result<Option<u64>, IndexError> {
        while self.pos == self.buf.len() && self.chunk < self.raw.chunk_count() {
            self.buf.clear();
            self.pos = 0;
            E::decode(self.raw, info, self.chunk, self.base, &mut self.buf)?;
            self.chunk += 1;
        }
        Ok(self.buf.get(self.pos).map(Entry::key))
    }

    /// Moves the leading entries whose key is below `end` (all when `None`) to `out`.
    fn take_below(&mut self, info: &CollectionInfo, end: Option<u64>, out: &mut Vec<E>) -> Result<(), IndexError> {
        while self.peek(info)?.is_some() {
            let rest = &self.buf[self.pos..];
            let n = match end {
                Some(end) => rest.iter().position(|e| e.key() >= end).unwrap_or(rest.len()),
                None => rest.len(),
            };
            out.extend_from_slice(&rest[..n]);
            self.pos += n;
            if self.pos < self.buf.len() {
                break;
            }
        }
        Ok(())
    }
}

/// Merges one band of the runs `raws` into the encoding of the band of run `id` in geometry
/// `g`, with its (sum(s), sum(s^2)): group by group of `g`, each group's entries gathered
/// from every run, merged and encoded, without the entries of rows in `dead`. Entries must
/// be strictly ascending in every run and held by one run only; anything else is an error.
pub(crate) fn merge_band(
    info: &CollectionInfo,
    raws: &[RawBand],
    g: Groups,
    band: u32,
    id: u32,
    rows: std::ops::Range<u64>,
    dead: &DeadRows,
) -> Result<(EncodedBand, Sums), IndexError> {
    if g.key_bits() <= 32 && rows.end.saturating_sub(rows.start) <= WORD_ROWS {
        merge_band_of::<u64>(info, raws, g, band, id, rows.start, dead)
    } else {
        merge_band_of::<(u64, u64)>(info, raws, g, band, id, 0, dead)
    }
}

/// [`merge_band`] with entries of type `E` (row offsets from `base`).
fn merge_band_of<E: Entry>(
    info: &CollectionInfo,
    raws: &[RawBand],
    g: Groups,
    band: u32,
    id: u32,
    base: u64,
    dead: &DeadRows,
) -> Result<(EncodedBand, Sums), IndexError> {
    let disorder = || lsh_rows_err(info, band, id, "merged runs hold an entry twice or out of order");
    let mut cursors: Vec<Cursor<'_, E>> = raws.iter().map(|raw| Cursor::new(raw, base)).collect();
    // The merged encoding is about as long as the runs' together (the same entries; headers
    // and widths differ a little).
    let bytes: usize = raws.iter().map(|r| r.encoded_len()).sum();
    let chunks = raws.iter().map(|r| r.chunk_count()).sum::<usize>() + (1usize << g.bits);
    let mut out = EncodedBand::with_capacity(bytes + bytes / 16 + chunks * CHUNK_HEADER_LEN + 8, chunks);
    let (mut sum, mut sum_sq) = (0u64, 0u128);
    let (mut merged, mut scratch, mut order, mut pairs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut parts: Vec<Vec<E>> = vec![Vec::new(); raws.len()];
    let mut previous: Option<u64> = None;
    loop {
        let mut next: Option<u64> = None;
        for c in &mut cursors {
            if let Some(key) = c.peek(info)? {
                next = Some(next.map_or(key, |n| n.min(key)));
            }
        }
        let Some(key) = next else { break };
        let group = g.group(key);
        if previous.is_some_and(|p| p >= group) {
            return Err(disorder());
        }
        previous = Some(group);
        // The group's keys end below the next group's first key.
        let end = group.checked_add(1).filter(|&next| g.holds(next)).map(|next| g.key(next, 0));
        for (c, part) in cursors.iter_mut().zip(parts.iter_mut()) {
            part.clear();
            c.take_below(info, end, part)?;
        }
        // Smallest first: each entry is copied about once per part merged after its own,
        // so the big run's entries (most of a group) are copied once.
        order.clear();
        order.extend((0..parts.len()).filter(|&i| !parts[i].is_empty()));
        order.sort_unstable_by_key(|&i| parts[i].len());
        merged.clear();
        for &i in &order {
            if merged.is_empty() {
                merged.extend_from_slice(&parts[i]);
            } else {
                merge_sorted_into(&merged, &parts[i], &mut scratch);
                std::mem::swap(&mut merged, &mut scratch);
            }
        }
        if merged.windows(2).any(|w| w[0] >= w[1]) {
            return Err(disorder());
        }
        if !dead.is_empty() {
            merged.retain(|e| !dead.contains(e.pair(base).1));
        }
        let (s, q) = bucket_sums_by(&merged, Entry::key);
        sum += s;
        sum_sq += q;
        pairs.clear();
        pairs.extend(merged.iter().map(|e| e.pair(base)));
        out.push_group(g, group, &pairs);
    }
    Ok((out, (sum, sum_sq)))
}

/// The merge of two ascending sequences into `out` (its contents replaced). Branch-free in
/// the loop: band keys are hashes, so which side comes next is a coin toss a branch would
/// mispredict. Equal entries are both kept (the caller checks).
fn merge_sorted_into<E: Entry>(x: &[E], y: &[E], out: &mut Vec<E>) {
    out.clear();
    out.reserve(x.len() + y.len());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let (a, b) = (x[i], y[j]);
        let take_x = a.before(b);
        out.push(if take_x { a } else { b });
        i += usize::from(take_x);
        j += usize::from(!take_x);
    }
    out.extend_from_slice(&x[i..]);
    out.extend_from_slice(&y[j..]);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::codec::meta::CollectionDef;
    use crate::index::lsh::table::{bucket_sums, encode_run_band};
    use crate::sketch::params::SketchParams;

    fn info() -> CollectionInfo {
        let params = SketchParams::bbit(64, 8, 1).expect("params");
        CollectionInfo::from_def(CollectionDef { id: 1, name: "c".into(), params, capacity: 1024, settings: vec![] })
    }

    /// Entries of `n` rows from `first_row` with keys of `key_bits` significant bits drawn
    /// from `key_space` values (a small space makes rows share keys), sorted.
    fn run_entries(seed: u64, first_row: u64, n: u64, key_space: u32, key_bits: u32) -> Vec<(u64, u64)> {
        let mut x = seed | 1;
        let mask = if key_bits == 64 { u64::MAX } else { !((1u64 << (64 - key_bits)) - 1) };
        let mut out: Vec<(u64, u64)> = (first_row..first_row + n)
            .map(|row| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x % u64::from(key_space)).wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask, row)
            })
            .collect();
        out.sort_unstable();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The group-by-group merge of runs of any group widths (narrower and wider than the
        /// merged run's) equals the sorted union without the removed rows' entries, encoded
        /// as one run would be; its sums are that union's.
        #[test]
        fn merge_band_equals_the_sorted_union(
            runs in prop::collection::vec((0u64..3000, 0u32..=10, any::<u64>()), 1..6),
            key_space in prop::sample::select(vec![50u32, 5000, u32::MAX]),
            out_bits in 0u32..=10,
            key_bits in prop::sample::select(vec![32u32, 64]),
            row_base in prop::sample::select(vec![0u64, 1 << 40]),
            gap in prop::sample::select(vec![0u64, 1 << 33]),
            dead_every in prop::sample::select(vec![0u64, 1, 3, 50]),
        ) {
            // Rows from `row_base`, the runs after the first `gap` further on: 32-bit keys
            // merge as words unless the rows span 2^32 or more.
            let info = info();
            let (mut raws, mut union, mut first_row) = (Vec::new(), Vec::new(), row_base);
            for (run, &(n, bits, seed)) in runs.iter().enumerate() {
                let g = Groups::new(key_bits, bits);
                let entries = run_entries(seed, first_row, n, key_space, key_bits);
                raws.push(RawBand::from_encoded(g, 3, run as u32, &encode_run_band(g, &entries)));
                union.extend_from_slice(&entries);
                first_row += n + if run == 0 { gap } else { 0 };
            }
            union.sort_unstable();
            // Every `dead_every`-th row (none for 0) is a removed row the runs still hold.
            let is_dead = |row: u64| dead_every > 0 && row.is_multiple_of(dead_every);
            let mut dead_rows: Vec<u64> = union.iter().map(|e| e.1).filter(|&r| is_dead(r)).collect();
            dead_rows.sort_unstable();
            union.retain(|e| !is_dead(e.1));
            let dead = DeadRows::new(dead_rows, row_base..first_row);
            let g = Groups::new(key_bits, out_bits);
            let (encoded, sums) = merge_band(&info, &raws, g, 3, 9, row_base..first_row, &dead).expect("merge");
            let want = encode_run_band(g, &union);
            prop_assert!(encoded == want, "the merged encoding differs from the union's");
            prop_assert_eq!(sums, bucket_sums(&union));
        }
    }

    #[test]
    fn merge_band_refuses_an_entry_held_twice() {
        let (info, none) = (info(), DeadRows::none());
        for key_bits in [32, 64] {
            let g = Groups::new(key_bits, 2);
            let entries = run_entries(5, 0, 300, 1000, key_bits);
            let raw = |run| RawBand::from_encoded(g, 0, run, &encode_run_band(g, &entries));
            let err = merge_band(&info, &[raw(0), raw(1)], Groups::new(key_bits, 3), 0, 2, 0..300, &none).unwrap_err();
            assert!(err.to_string().contains("twice or out of order"), "{err}");
            // One run alone merges to itself.
            let (one, _) = merge_band(&info, &[raw(0)], g, 0, 2, 0..300, &none).expect("merge");
            assert!(one == encode_run_band(g, &entries));
        }
    }

    /// A stored row below the merged runs' first row (damage) is refused, never wrapped
    /// into another row.
    #[test]
    fn merge_band_refuses_rows_outside_the_runs() {
        let (info, g) = (info(), Groups::new(32, 2));
        let entries = run_entries(5, 0, 300, 1000, 32);
        let raw = RawBand::from_encoded(g, 0, 0, &encode_run_band(g, &entries));
        let err = merge_band(&info, &[raw], g, 0, 2, 100..400, &DeadRows::none()).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
    }

    #[test]
    fn merge_sorted_into_interleaves_and_keeps_both_of_equal_entries() {
        let mut out: Vec<(u64, u64)> = vec![(9, 9)];
        merge_sorted_into(&[(1, 1), (3, 0)], &[(1, 2), (2, 0)], &mut out);
        assert_eq!(out, vec![(1, 1), (1, 2), (2, 0), (3, 0)]);
        merge_sorted_into(&[], &[(5, 5)], &mut out);
        assert_eq!(out, vec![(5, 5)]);
        merge_sorted_into(&[(1, 1)], &[(1, 1)], &mut out);
        assert_eq!(out, vec![(1, 1), (1, 1)]);
        let mut words: Vec<u64> = Vec::new();
        merge_sorted_into(&[1 << 32 | 1, 3 << 32], &[1 << 32 | 2, 2 << 32], &mut words);
        assert_eq!(words, vec![1 << 32 | 1, 1 << 32 | 2, 2 << 32, 3 << 32]);
    }
}
