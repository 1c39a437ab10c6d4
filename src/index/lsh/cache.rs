//! LSH probes through the [`ProbeCache`]: one shelf per band, one slot per group at the
//! widest group width `P` of the index's runs.
//!
//! A slot's value is its group's entries in every run together, (band key, row id) strictly
//! ascending (runs hold disjoint row ranges), encoded as chunk values of width `P` laid end
//! to end, split evenly over the fewest chunks as a run's groups are. A run of narrower
//! groups gives the entries of its wider group that fall in the slot's group. So a warm
//! probe visits one place per band however many runs the index has (visiting each run's
//! group costs bands times runs cache misses, and an index loaded in batches keeps a few
//! runs between merges); the merge is paid once per group and index version, by the probe
//! that first reads the group.
//!
//! Sound because the cache is keyed by the definition's bytes, which fix the runs and their
//! entries (see [`crate::index::probe_cache`]). The stored chunks are checked as they are read; an
//! index of one run at width `P` gives its chunks as stored.

use crate::index::error::IndexError;

use super::format::{append_chunk, group_chunks};
use super::held::{Held, WordView, words_of};
use super::table::{At, ChunkView, Groups, RunKey, lsh_err};
use crate::index::defs::LshRun;
use crate::index::probe_cache::{ProbeCache, Value};
use crate::simd::prefetch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::BytesRead;
use crate::storage::index_tables::BytesView;
use crate::storage::reader::ReadSnapshot;

/// A table of `sketchdb.lsh_runs`, opened on first need.
type LazyTable = Option<Option<BytesView<RunKey>>>;

/// The group width of the probe cache's slots for `runs`: the widest run's.
fn merged_bits(runs: &[LshRun]) -> u32 {
    runs.iter().map(|r| r.group_bits).max().unwrap_or(0)
}

/// LSH probing of one index version.
pub(crate) struct LshProbe<'c> {
    pub(crate) cache: &'c ProbeCache,
    /// The significant bits of the scheme's band keys.
    key_bits: u32,
}

impl<'c> LshProbe<'c> {
    pub(crate) fn new(cache: &'c ProbeCache, key_bits: u32) -> Self {
        LshProbe { cache, key_bits }
    }

    /// The merged value of `group` (of width `g`) in `band`, in the form `held`: from the
    /// cache, or read from the runs and kept while the budget allows.
    #[allow(clippy::too_many_arguments)]
    fn group(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        table: &mut LazyTable,
        runs: &[LshRun],
        (g, held): (Groups, Held),
        band: u32,
        group: u64,
    ) -> Result<Option<Value<'c>>, IndexError> {
        self.cache.value(band as usize, g.bits, group, || {
            if table.is_none() {
                *table = Some(snap.lsh_runs()?);
            }
            let Some(Some(t)) = table.as_ref() else { return Ok(None) };
            let merged = read_merged(t, info, runs, g, band, group)?;
            match (held, merged) {
                (Held::Words { base }, Some(chunks)) => words_of(&chunks, g, base)
                    .map(Some)
                    .map_err(|d| merged_err(info, runs, band as usize, g, g.key(group, 0), d)),
                (_, merged) => Ok(merged),
            }
        })
    }

    /// Appends the row ids stored under each band's key (`keys[band]`) in every run. Passes
    /// over the bands: prefetch each group's cache place; find each group's value and
    /// prefetch its first header; read the header and prefetch the guessed entry; then
    /// search. The lines one pass asks for do not depend on each other, and a prefetch does
    /// not wait for its line (an early load held the reorder buffer until it arrived), so
    /// the misses of all bands overlap instead of following one another band after band.
    pub(crate) fn candidates(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        runs: &[LshRun],
        keys: &[u64],
        out: &mut Vec<u64>,
    ) -> Result<(), IndexError> {
        let g = Groups::new(self.key_bits, merged_bits(runs));
        let held = Held::of(g, runs);
        if let Held::Words { base } = held {
            return self.words_candidates(snap, info, runs, (g, base), keys, out);
        }
        for (band, &key) in keys.iter().enumerate() {
            self.cache.prefetch_slot(band, g.bits, g.group(key));
        }
        let mut table: LazyTable = None;
        let mut values = Vec::with_capacity(keys.len());
        for (band, &key) in keys.iter().enumerate() {
            let value = self.group(snap, info, &mut table, runs, (g, held), band as u32, g.group(key))?;
            if let Some(bytes) = &value {
                prefetch(bytes, 0);
            }
            values.push(value);
        }
        // Each first chunk with its key's suffix and guessed position, whose entry is
        // prefetched here: the search below then starts from a cache line already on its way.
        let mut views = Vec::with_capacity(values.len());
        for (band, (&key, value)) in keys.iter().zip(&values).enumerate() {
            let Some(bytes) = value else { continue };
            let (view, len) = ChunkView::parse_prefix(bytes, g).map_err(|d| merged_err(info, runs, band, g, key, d))?;
            let suffix = g.suffix(key);
            let guess = view.guess(g, suffix);
            view.prefetch_suffix(guess);
            views.push((band, key, &bytes[..], view, len, suffix, guess));
        }
        for (band, key, bytes, mut view, mut at, suffix, mut guess) in views {
            // A chunk whose last entry matches may be followed by more matches in the next.
            while view.rows_of(suffix, guess, out) && at < bytes.len() {
                let (next, len) =
                    ChunkView::parse_prefix(&bytes[at..], g).map_err(|d| merged_err(info, runs, band, g, key, d))?;
                (view, guess) = (next, 0);
                at += len;
            }
        }
        Ok(())
    }

    /// [`Self::candidates`] of an index whose groups the cache holds as words (see
    /// [`super::held`]), [`WORDS_BLOCK`] bands at a time: each band's place requested, then
    /// each value found and its guessed suffix requested (the place gives the value's
    /// length, so no header is waited for), then each value searched.
    fn words_candidates(
        &self,
        snap: &ReadSnapshot,
        info: &CollectionInfo,
        runs: &[LshRun],
        (g, base): (Groups, u64),
        keys: &[u64],
        out: &mut Vec<u64>,
    ) -> Result<(), IndexError> {
        let held = Held::Words { base };
        let mut table: LazyTable = None;
        for (b, block) in keys.chunks(WORDS_BLOCK).enumerate() {
            let first = b * WORDS_BLOCK;
            for (i, &key) in block.iter().enumerate() {
                self.cache.prefetch_slot(first + i, g.bits, g.group(key));
            }
            let mut views = [(WordView::EMPTY, 0u32, 0usize); WORDS_BLOCK];
            let mut found = 0;
            for (i, &key) in block.iter().enumerate() {
                let band = first + i;
                // K - P <= 32 for an index held as words, so the suffix fits.
                let suffix = g.suffix(key) as u32;
                let bytes = match self.cache.kept(band, g.bits, g.group(key)) {
                    Some(kept) => kept,
                    None => match self.group(snap, info, &mut table, runs, (g, held), band as u32, g.group(key))? {
                        None => None,
                        Some(Value::Borrowed(bytes)) => Some(bytes),
                        // Not kept (past the budget): searched at once.
                        Some(value) => {
                            let view = word_view(info, runs, band, g, key, &value)?;
                            view.rows_of(suffix, view.guess(g, suffix), base, out);
                            continue;
                        }
                    },
                };
                let Some(bytes) = bytes else { continue };
                let view = word_view(info, runs, band, g, key, bytes)?;
                let guess = view.guess(g, suffix);
                view.prefetch(guess);
                views[found] = (view, suffix, guess);
                found += 1;
            }
            for &(view, suffix, guess) in &views[..found] {
                view.rows_of(suffix, guess, base, out);
            }
        }
        Ok(())
    }
}

/// Bands a word probe requests together (about the misses a core keeps in flight).
const WORDS_BLOCK: usize = 16;

/// The view of a word value the cache holds (built by [`words_of`], so a failure is a defect,
/// reported rather than a panic).
fn word_view<'a>(
    info: &CollectionInfo,
    runs: &[LshRun],
    band: usize,
    g: Groups,
    key: u64,
    bytes: &'a [u8],
) -> Result<WordView<'a>, IndexError> {
    WordView::new(bytes)
        .ok_or_else(|| merged_err(info, runs, band, g, key, format!("word value of {} bytes", bytes.len())))
}

/// The merged value of `group` (of width `g`, at least every run's) in `band` as stored in
/// `runs`: `None` when no run has an entry there.
fn read_merged(
    table: &BytesView<RunKey>,
    info: &CollectionInfo,
    runs: &[LshRun],
    g: Groups,
    band: u32,
    group: u64,
) -> Result<Option<Vec<u8>>, IndexError> {
    let as_stored = matches!(runs, [run] if run.group_bits == g.bits);
    let (mut bytes, mut entries) = (Vec::new(), Vec::new());
    for run in runs {
        let rg = Groups::new(g.key_bits(), run.group_bits);
        // The run's group holding `group`: its top `rg.bits` bits (rg.bits <= g.bits < 64).
        let shift = g.bits - rg.bits;
        let of_run = group >> shift;
        let at = At { band, run: run.id, group: of_run };
        // A narrower run's suffixes of the keys in `group` (then g.suffix_bits() < 64):
        // `lo..hi`, hi `None` past the last suffix.
        let lo = if shift == 0 { 0 } else { (group & ((1u64 << shift) - 1)) << g.suffix_bits() };
        let hi =
            if shift == 0 { None } else { lo.checked_add(1u64 << g.suffix_bits()).filter(|&h| h <= rg.suffix_mask()) };
        let mut chunk = 0u32;
        while let Some(v) = table.get((info.def.id, band, run.id, of_run, chunk), "read lsh group")? {
            let view = ChunkView::parse(v.value(), rg).map_err(|d| lsh_err(info, at, d))?;
            if as_stored {
                bytes.extend_from_slice(v.value());
            } else if shift == 0 {
                view.decode_into(rg, of_run, &mut entries);
            } else {
                let from = view.lower_bound_from(lo, view.guess(rg, lo));
                let to = hi.map_or(view.len(), |hi| view.lower_bound_from(hi, view.guess(rg, hi)));
                view.decode_range_into(rg, of_run, from..to, &mut entries);
            }
            let Some(next) = chunk.checked_add(1) else { break };
            chunk = next;
        }
    }
    if !as_stored {
        // Each run's entries ascend: a stable sort finds those runs and merges them.
        entries.sort();
        for c in group_chunks(&entries) {
            append_chunk(g, c, &mut bytes);
        }
    }
    Ok((!bytes.is_empty()).then_some(bytes))
}

/// A merged value the probe cache holds that does not parse (it was checked as read and
/// encoded here, so this is a defect, reported rather than a panic).
fn merged_err(info: &CollectionInfo, runs: &[LshRun], band: usize, g: Groups, key: u64, detail: String) -> IndexError {
    let ids: Vec<u32> = runs.iter().map(|r| r.id).collect();
    IndexError::Corrupt {
        collection: info.def.name.clone(),
        row: None,
        detail: format!(
            "probe cache of index table sketchdb.lsh_runs, band {band}, group {:#x} of {} bits over runs {ids:?}: {detail}",
            g.group(key),
            g.bits
        ),
    }
}
