//! The form in which the probe cache holds an LSH index's merged groups for warm probes.
//!
//! A merged group as stored is a sequence of chunk values ([`super::format`]): bytes packed
//! to the run's widths, parsed and searched through [`ChunkView`]. When every suffix of the
//! index fits 32 bits (K - P <= 32, true of every version-2 and version-3 scheme) and every
//! row of its runs lies within `2^32` of the first, the cache holds a group as *words*
//! instead: one u64 LE per entry,
//!
//! ```text
//! suffix << 32 | (row - base)
//! ```
//!
//! ascending (so by (suffix, row)), `n` following from the length (8n bytes). A probe then
//! needs no header (the guessed position follows from the length, so its line is requested as
//! soon as the place is read), compares plain words, and finds a match's row in the line of
//! its suffix. The words are built from the checked chunk values when a group is first read,
//! and hold exactly their entries.

use zerocopy::FromBytes;
use zerocopy::little_endian::U64;

use super::format::{ChunkView, Groups};
use crate::index::defs::LshRun;

/// How the probe cache holds the merged groups of one index version (fixed by its runs and
/// group width, so every value of one cache has the same form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// The merged chunk values as [`super::format`] lays them out.
    Chunks,
    /// One word per entry: its suffix over its row's offset from `base`.
    Words { base: u64 },
}

impl Held {
    /// The form for groups of width `g` over `runs`: words when suffixes fit 32 bits and the
    /// runs' rows lie in `base..base + 2^32`, `base` their first row.
    pub(crate) fn of(g: Groups, runs: &[LshRun]) -> Held {
        let base = runs.iter().map(|r| r.first_row).min().unwrap_or(0);
        let end = runs.iter().map(|r| r.end_row).max().unwrap_or(0);
        if g.suffix_bits() <= 32 && end.saturating_sub(base) <= 1 << 32 { Held::Words { base } } else { Held::Chunks }
    }
}

/// The word form of `chunks` (a group's chunk values laid end to end, each checked against
/// `g`), or what keeps it from one: a suffix over 32 bits or a row outside
/// `base..base + 2^32`.
pub(crate) fn words_of(chunks: &[u8], g: Groups, base: u64) -> Result<Vec<u8>, String> {
    let mut views = Vec::new();
    let mut at = 0;
    while at < chunks.len() {
        let (view, len) = ChunkView::parse_prefix(&chunks[at..], g)?;
        views.push(view);
        at += len;
    }
    let n: usize = views.iter().map(ChunkView::len).sum();
    let mut out = vec![0u8; 8 * n];
    let mut words = out.chunks_exact_mut(8);
    let mut entries = Vec::new();
    for view in views {
        entries.clear();
        view.decode_into(g, 0, &mut entries);
        for (&(key, row), w) in entries.iter().zip(words.by_ref()) {
            let suffix = u32::try_from(g.suffix(key)).map_err(|_| format!("suffix of key {key:#x} over 32 bits"))?;
            let offset = row
                .checked_sub(base)
                .and_then(|o| u32::try_from(o).ok())
                .ok_or_else(|| format!("row {row} outside the index's rows {base}..{}", base + (1 << 32)))?;
            w.copy_from_slice(&(u64::from(suffix) << 32 | u64::from(offset)).to_le_bytes());
        }
    }
    Ok(out)
}

/// Positions a search steps through one by one before it gallops.
const LINEAR_STEPS: usize = 8;

/// A group held as words.
#[derive(Clone, Copy)]
pub(crate) struct WordView<'a> {
    words: &'a [U64],
}

impl<'a> WordView<'a> {
    /// The view of no entries (a placeholder: only [`Self::new`] views are searched).
    pub(crate) const EMPTY: WordView<'static> = WordView { words: &[] };

    /// The view of a value in word form; `None` unless it is 8n bytes, n >= 1.
    #[inline]
    pub(crate) fn new(bytes: &'a [u8]) -> Option<WordView<'a>> {
        if bytes.is_empty() {
            return None;
        }
        Some(WordView { words: <[U64]>::ref_from_bytes(bytes).ok()? })
    }

    /// Where `suffix` would sit if the suffixes were spread evenly over the `2^(K - P)` of
    /// the group (as hashed band keys are): below n. Any position is a correct start for
    /// [`Self::rows_of`].
    #[inline]
    pub(crate) fn guess(&self, g: Groups, suffix: u32) -> usize {
        let n = self.words.len();
        (((u64::from(suffix) * n as u64) >> g.suffix_bits()) as usize).min(n - 1)
    }

    /// Asks for the cache line of entry `i` ahead of the search.
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(w) = self.words.get(i) {
            crate::simd::prefetch_ref(w);
        }
    }

    /// The first position whose word is `>= target` (n if none), searched from `guess`: a
    /// few steps one by one (hashed keys put the answer a few places from a good guess), then
    /// gallop away to a bracket and bisect it.
    #[inline]
    fn lower_bound(&self, target: u64, guess: usize) -> usize {
        let s = self.words;
        let n = s.len();
        let mut guess = guess.min(n - 1);
        let below = |i: usize| s[i].get() < target;
        if below(guess) {
            for _ in 0..LINEAR_STEPS {
                guess += 1;
                if guess == n || !below(guess) {
                    return guess;
                }
            }
        } else {
            for _ in 0..LINEAR_STEPS {
                if guess == 0 || below(guess - 1) {
                    return guess;
                }
                guess -= 1;
            }
        }
        let (lo, hi) = if below(guess) {
            let (mut lo, mut step) = (guess + 1, 1);
            loop {
                let probe = guess + step;
                if probe >= n {
                    break (lo, n);
                }
                if !below(probe) {
                    break (lo, probe);
                }
                lo = probe + 1;
                step *= 2;
            }
        } else {
            let (mut hi, mut step) = (guess, 1);
            loop {
                if step > guess {
                    break (0, hi);
                }
                let probe = guess - step;
                if below(probe) {
                    break (probe + 1, hi);
                }
                hi = probe;
                step *= 2;
            }
        };
        lo + s[lo..hi].partition_point(|v| v.get() < target)
    }

    /// Appends the rows (`base` plus their offsets) of the entries whose suffix is `suffix`,
    /// searching from `guess`.
    #[inline]
    pub(crate) fn rows_of(&self, suffix: u32, guess: usize, base: u64, out: &mut Vec<u64>) {
        let first = u64::from(suffix) << 32;
        let mut i = self.lower_bound(first, guess);
        while let Some(w) = self.words.get(i) {
            let w = w.get();
            if w >> 32 != u64::from(suffix) {
                break;
            }
            out.push(base + (w & 0xffff_ffff));
            i += 1;
        }
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
