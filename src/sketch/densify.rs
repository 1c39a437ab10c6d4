//! Optimal densification of an OPH sketch (Shrivastava, ICML 2017): every empty bin takes the
//! value of the first non-empty bin along its own probe sequence.
//!
//! The probe sequence of bin j is `bin_of(fmix64(key ^ (j << 32 | attempt)), t)` for attempt =
//! 0, 1, ... [`MAX_PROBES`] - 1, then the bins after j cyclically. It depends on the seed's key
//! and t only, never on the sketch, so the first [`TABLE_PROBES`] probes of every bin are
//! computed once per (key, t) and kept per thread ([`ProbeTable`]); the probes after them are
//! computed as needed. Both paths give the same bins: `table_densify_equals_the_definition`.

use std::cell::RefCell;
use std::rc::Rc;

use super::hash::fmix64;

/// Random probes per empty bin before the cyclic scan (reached with probability
/// (1 - filled/t)^64, the documented fallback).
pub(crate) const MAX_PROBES: u32 = 64;

/// Probes per bin kept in a [`ProbeTable`]: with 37% of the bins filled (240 tokens in 512
/// bins) all eight miss for 2.5% of the empty bins.
const TABLE_PROBES: usize = 8;

/// Which of t bins a permuted value (or a probe hash) falls into.
#[inline(always)]
pub(crate) fn bin_of(v: u64, t: u64) -> usize {
    (((v >> 32) * t) >> 32) as usize
}

#[inline(always)]
fn probe(key: u64, j: usize, attempt: u32, t: usize) -> usize {
    bin_of(fmix64(key ^ ((j as u64) << 32 | u64::from(attempt))), t as u64)
}

#[inline(always)]
fn is_empty(empty: &[u64], i: usize) -> bool {
    empty[i / 64] >> (i % 64) & 1 == 1
}

/// The source bin of the empty bin j of t from probe `from` on (the definition, probe by probe).
fn source_from(empty: &[u64], key: u64, j: usize, from: u32, t: usize) -> usize {
    (from..MAX_PROBES)
        .map(|attempt| probe(key, j, attempt, t))
        .find(|&c| !is_empty(empty, c))
        .unwrap_or_else(|| (1..t).map(|d| (j + d) % t).find(|&c| !is_empty(empty, c)).unwrap_or(j))
}

/// The first [`TABLE_PROBES`] probes of every bin for one (key, t), bin-major.
struct ProbeTable {
    key: u64,
    t: usize,
    probes: Vec<[u16; TABLE_PROBES]>,
}

impl ProbeTable {
    fn new(key: u64, t: usize) -> ProbeTable {
        // t <= MAX_SLOTS (4096), so a bin index fits 16 bits.
        let probes = (0..t).map(|j| std::array::from_fn(|a| probe(key, j, a as u32, t) as u16)).collect();
        ProbeTable { key, t, probes }
    }
}

thread_local! {
    /// The table of the last (key, t) densified on this thread.
    static TABLE: RefCell<Option<Rc<ProbeTable>>> = const { RefCell::new(None) };
}

fn table(key: u64, t: usize) -> Rc<ProbeTable> {
    TABLE.with(|cell| {
        let mut cell = cell.borrow_mut();
        match &*cell {
            Some(tab) if tab.key == key && tab.t == t => Rc::clone(tab),
            _ => {
                let tab = Rc::new(ProbeTable::new(key, t));
                *cell = Some(Rc::clone(&tab));
                tab
            }
        }
    })
}

/// The densified bins: `bins` with every bin flagged in `empty` replaced by its source's value.
/// At least one bin must be non-empty (the caller checks), `bins.len() <= u16::MAX + 1`.
pub(crate) fn densify(bins: &[u32], empty: &[u64], key: u64) -> Vec<u32> {
    let mut out = Vec::with_capacity(bins.len());
    densify_into(bins, empty, key, &mut out);
    out
}

/// [`densify`] of bins held in any integer type, written into `out` (cleared first) widened
/// to `U`: the same sources, so the values equal [`densify`]'s of the bins widened to u32.
pub(crate) fn densify_into<T: Copy, U: From<T>>(bins: &[T], empty: &[u64], key: u64, out: &mut Vec<U>) {
    let t = bins.len();
    let tab = table(key, t);
    out.clear();
    out.extend(bins.iter().map(|&b| U::from(b)));
    FILLED.with_borrow_mut(|filled| {
        // Bin i's flag at byte i: a probe tests one byte, indexed by a u16 below the
        // array's length (no bounds check). Bytes at t and above are never read: every
        // probe is a bin below t.
        for (w, &word) in empty.iter().enumerate() {
            let spread = (!word).to_le_bytes().map(|byte| SPREAD[usize::from(byte)].to_le_bytes());
            for (dst, src) in filled[w * 64..].chunks_exact_mut(8).zip(spread) {
                dst.copy_from_slice(&src);
            }
        }
        fill_sources(bins, empty, key, &tab, filled, out);
    });
}

/// The bin indices a u16 probe can name.
const BIN_INDICES: usize = 1 << 16;

/// Per byte value, the u64 whose byte i is bit i of it (0 or 1).
const SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut x = 0;
    while x < 256 {
        let mut i = 0;
        while i < 8 {
            table[x] |= ((x as u64 >> i) & 1) << (8 * i);
            i += 1;
        }
        x += 1;
    }
    table
};

thread_local! {
    /// Per bin, 1 when it is filled in the row being densified on this thread.
    static FILLED: RefCell<Box<[u8; BIN_INDICES]>> = RefCell::new(Box::new([0; BIN_INDICES]));
}

/// Sets every empty bin of `out` (the row's bins, as `densify_into` copied them) to its
/// source's value; `filled` flags the row's filled bins.
#[inline(always)]
fn fill_sources<T: Copy, U: From<T>>(
    bins: &[T],
    empty: &[u64],
    key: u64,
    tab: &ProbeTable,
    filled: &[u8; BIN_INDICES],
    out: &mut [U],
) {
    let t = bins.len();
    for (w, &word) in empty.iter().enumerate() {
        let mut left = word;
        while left != 0 {
            let j = w * 64 + left.trailing_zeros() as usize;
            left &= left - 1;
            // The first filled bin among the tabled probes, scanned from the last so that the
            // earliest wins; `usize::MAX` when all are empty.
            let row = &tab.probes[j];
            let mut src = usize::MAX;
            for &c in row.iter().rev() {
                if filled[usize::from(c)] != 0 {
                    src = usize::from(c);
                }
            }
            if src == usize::MAX {
                src = source_from(empty, key, j, TABLE_PROBES as u32, t);
            }
            out[j] = U::from(bins[src]);
        }
    }
}

/// The definition, probe by probe, with no table: what [`densify`] must equal.
#[cfg(test)]
pub(crate) fn densify_by_definition(bins: &[u32], empty: &[u64], key: u64) -> Vec<u32> {
    let t = bins.len();
    (0..t).map(|j| if is_empty(empty, j) { bins[source_from(empty, key, j, 0, t)] } else { bins[j] }).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The tabled probes and the fallback give the definition's bins for every fill, from
        /// one filled bin (most bins reach the cyclic scan) to all filled, for t not a multiple
        /// of 64 too, on one thread that keeps switching keys and t (the table is rebuilt).
        #[test]
        fn table_densify_equals_the_definition(
            t in prop::sample::select(vec![1usize, 7, 64, 100, 512, 4096]),
            fill in 0.0f64..1.0,
            seed in any::<u64>(),
            key in any::<u64>(),
        ) {
            let mut state = seed;
            let mut next = || { state = fmix64(state.wrapping_add(0x9E37_79B9_7F4A_7C15)); state };
            let mut empty = vec![0u64; t.div_ceil(64)];
            let mut bins = vec![0u32; t];
            for (j, bin) in bins.iter_mut().enumerate() {
                if (next() >> 11) as f64 / (1u64 << 53) as f64 >= fill {
                    empty[j / 64] |= 1 << (j % 64);
                } else {
                    *bin = next() as u32;
                }
            }
            let filled = (0..t).find(|&j| !is_empty(&empty, j)).unwrap_or(next() as usize % t);
            empty[filled / 64] &= !(1 << (filled % 64));
            bins[filled] = next() as u32;
            let want = densify_by_definition(&bins, &empty, key);
            prop_assert_eq!(densify(&bins, &empty, key), want.clone());
            // Again with the table of this (key, t) already built.
            prop_assert_eq!(densify(&bins, &empty, key), want);
            // Bins held as bytes, widened on the way out: the definition over the same bytes.
            let bytes: Vec<u8> = bins.iter().map(|&b| b as u8).collect();
            let mut out: Vec<u32> = vec![7; 3];
            densify_into(&bytes, &empty, key, &mut out);
            let widened: Vec<u32> = bytes.iter().map(|&b| u32::from(b)).collect();
            prop_assert_eq!(out, densify_by_definition(&widened, &empty, key));
        }
    }
}
