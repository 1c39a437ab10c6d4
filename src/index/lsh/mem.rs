//! The LSH self-join over signatures held in memory: how a dedup runs on a collection without
//! an LSH index. Pure (no I/O).
//!
//! It keys the signatures with a [`BandKeyScheme`], the same one an LSH index for the same
//! threshold would persist, and passes a pair on in the *first* band the two signatures share,
//! the rule of the persisted bucket self-join. Both therefore find the same candidate pairs,
//! each once; only the pairs of the bands being worked on are held.

use rayon::prelude::*;

use super::band::BandKeyScheme;
use crate::index::error::IndexError;
use crate::index::radix::sort_hashed;
use crate::sketch::error::SketchError;
use crate::sketch::sketcher::Sketch;

/// The band keys of n signatures, `bands` per signature in band order (row-major).
///
/// Invariant: `keys` holds `bands * keyed.len()` keys; a signature with `keyed[i] == false`
/// (an OPH sketch of the empty set, which cannot be densified) has zero keys and joins
/// nothing.
#[derive(Debug)]
pub(crate) struct BandedKeys {
    bands: usize,
    keys: Keys,
    keyed: Vec<bool>,
}

/// The keys themselves: a scheme of 32 significant bits (every version-2 and version-3 one)
/// keeps each key's top half only (the bottom half is zero), which orders and compares as
/// the key does at half the memory (81 bands of 1M signatures: 324 MB, not 648).
#[derive(Debug)]
enum Keys {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl BandedKeys {
    /// Keys every item's signature, in parallel, straight into one buffer (no list of keys is
    /// held per item). A signature the scheme cannot key (another width, too few slots) is an
    /// error naming its position, the first such position whatever the threads' order.
    pub(crate) fn new<T: Sync>(
        scheme: &BandKeyScheme,
        items: &[T],
        sketch_of: impl Fn(&T) -> &Sketch + Sync,
    ) -> Result<BandedKeys, (usize, IndexError)> {
        BandedKeys::from_fn(scheme, items.len(), |i| scheme.sketch_keys(sketch_of(&items[i])))
    }

    /// [`BandedKeys::new`] over `n` signatures whose band keys `keys_of(i)` computes (as
    /// `scheme` keys signature i; `Sketch(EmptySet)` for one of no keys).
    pub(crate) fn from_fn(
        scheme: &BandKeyScheme,
        n: usize,
        keys_of: impl Fn(usize) -> Result<Vec<u64>, IndexError> + Sync,
    ) -> Result<BandedKeys, (usize, IndexError)> {
        let bands = scheme.params.bands as usize;
        let mut keyed = vec![false; n];
        let keys = if scheme.key_bits() <= 32 {
            let mut keys = vec![0u32; bands * n];
            fill(bands, &keys_of, &mut keys, &mut keyed, |k| (k >> 32) as u32)?;
            Keys::Narrow(keys)
        } else {
            let mut keys = vec![0u64; bands * n];
            fill(bands, &keys_of, &mut keys, &mut keyed, |k| k)?;
            Keys::Wide(keys)
        };
        Ok(BandedKeys { bands, keys, keyed })
    }

    /// The key of `item` in `band`, as its buffer holds it (compares and orders as the key).
    #[inline]
    fn key(&self, item: usize, band: usize) -> u64 {
        match &self.keys {
            Keys::Narrow(k) => u64::from(k[item * self.bands + band]),
            Keys::Wide(k) => k[item * self.bands + band],
        }
    }

    /// Calls `f(i, j)` (i < j, positions in the keyed items) once for every pair sharing a
    /// band key, in the first band they share, in band order and within a band in (key, i, j)
    /// order whatever the number of threads. Bands are worked on in groups, in parallel: one
    /// sort of the n keys per band, then bucket by bucket the pairs of a bucket are checked
    /// against the earlier bands' keys. Held at once: the sort buffers and pairs of one group.
    pub(crate) fn for_each_pair<E>(&self, mut f: impl FnMut(usize, usize) -> Result<(), E>) -> Result<(), E> {
        let keyed: Vec<usize> = (0..self.keyed.len()).filter(|&i| self.keyed[i]).collect();
        let threads = rayon::current_num_threads().max(1);
        match &self.keys {
            Keys::Narrow(k) if u32::try_from(self.keyed.len()).is_ok() => {
                // A group's keys are gathered in one pass over the item-major buffer: one band
                // at a time would read every cache line of it once per band.
                let width = threads.max(GATHER_BANDS).min(self.bands.max(1));
                let mut words: Vec<Vec<u64>> = (0..width).map(|_| Vec::new()).collect();
                let mut spare: Vec<Vec<u64>> = (0..width).map(|_| Vec::new()).collect();
                for first in (0..self.bands).step_by(width) {
                    let group = width.min(self.bands - first);
                    self.gather(k, &keyed, first, &mut words[..group]);
                    let pairs: Vec<Vec<(usize, usize)>> = words[..group]
                        .par_iter_mut()
                        .zip(spare[..group].par_iter_mut())
                        .enumerate()
                        .map(|(b, (words, spare))| {
                            // The key halves are hashes: a radix pass or two on the top bits,
                            // then an insertion sort; whole words order as (key, position).
                            sort_hashed(words, spare, |&w| w);
                            self.bucket_pairs(first + b, words, |w| w >> 32, |w| w as u32 as usize)
                        })
                        .collect();
                    for (i, j) in pairs.into_iter().flatten() {
                        f(i, j)?;
                    }
                }
            }
            _ => {
                // One (key, position) buffer per band worked on at once, reused group after
                // group (fresh ones per band would page-fault in the n entries every time).
                let width = threads.min(self.bands.max(1));
                let mut buffers: Vec<Vec<(u64, usize)>> = (0..width).map(|_| Vec::new()).collect();
                let bands: Vec<usize> = (0..self.bands).collect();
                for group in bands.chunks(width) {
                    let pairs: Vec<Vec<(usize, usize)>> = group
                        .par_iter()
                        .zip(buffers.par_iter_mut())
                        .map(|(&band, order)| {
                            order.clear();
                            order.extend(keyed.iter().map(|&i| (self.key(i, band), i)));
                            order.par_sort_unstable();
                            self.bucket_pairs(band, order, |e| e.0, |e| e.1)
                        })
                        .collect();
                    for (i, j) in pairs.into_iter().flatten() {
                        f(i, j)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Fills `words[b]` with `key(i, first + b) << 32 | i` for every i of `keyed`, in order:
    /// narrow keys and positions below 2^32 (the caller's check). Blocks of items are
    /// gathered in parallel, each reading its items' keys of the group from one place.
    fn gather(&self, keys: &[u32], keyed: &[usize], first: usize, words: &mut [Vec<u64>]) {
        let group = words.len();
        let mut blocks: Vec<Vec<&mut [u64]>> =
            (0..keyed.len().div_ceil(GATHER_BLOCK)).map(|_| Vec::with_capacity(group)).collect();
        for w in words.iter_mut() {
            w.clear();
            w.resize(keyed.len(), 0);
            for (block, part) in blocks.iter_mut().zip(w.chunks_mut(GATHER_BLOCK)) {
                block.push(part);
            }
        }
        blocks.into_par_iter().zip(keyed.par_chunks(GATHER_BLOCK)).for_each(|(mut outs, items)| {
            for (p, &i) in items.iter().enumerate() {
                let row = &keys[i * self.bands + first..][..group];
                for (out, &key) in outs.iter_mut().zip(row) {
                    out[p] = (u64::from(key) << 32) | i as u64;
                }
            }
        });
    }

    /// The pairs within each run of equal keys of `sorted` (ordered by (key, position)) that
    /// share no band before `band`, in (key, i, j) order.
    fn bucket_pairs<T: Copy>(
        &self,
        band: usize,
        sorted: &[T],
        key: impl Fn(T) -> u64,
        position: impl Fn(T) -> usize,
    ) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        let mut start = 0;
        while start < sorted.len() {
            let k = key(sorted[start]);
            let end = start + sorted[start..].iter().take_while(|&&e| key(e) == k).count();
            // Within a bucket the positions ascend.
            for x in start..end {
                for y in x + 1..end {
                    let (i, j) = (position(sorted[x]), position(sorted[y]));
                    if (0..band).all(|b| self.key(i, b) != self.key(j, b)) {
                        pairs.push((i, j));
                    }
                }
            }
            start = end;
        }
        pairs
    }
}

/// Bands whose narrow keys are gathered in one pass over the item-major key buffer (at
/// least; as many as threads when there are more): 32 bytes of each item's keys, about one
/// cache line read per item and group instead of one per item and band.
const GATHER_BANDS: usize = 8;

/// Items per block of a parallel gather.
const GATHER_BLOCK: usize = 1 << 14;

/// Keys every item's signature into `keys` (`bands` per item, `narrow` of each key), in
/// parallel, item i's keys from `keys_of(i)`; `keyed[i]` false for a signature of no keys.
/// A signature the scheme cannot key (another width, too few slots) is an error naming its
/// position, the first such position whatever the threads' order.
fn fill<K: Copy + Send>(
    bands: usize,
    keys_of: &(impl Fn(usize) -> Result<Vec<u64>, IndexError> + Sync),
    keys: &mut [K],
    keyed: &mut [bool],
    narrow: impl Fn(u64) -> K + Sync,
) -> Result<(), (usize, IndexError)> {
    let check = |i: usize, out: &mut [K]| match keys_of(i) {
        Ok(k) if k.len() == out.len() => {
            for (o, &k) in out.iter_mut().zip(&k) {
                *o = narrow(k);
            }
            Ok(true)
        }
        Ok(k) => Err(IndexError::size("band keys per signature", out.len(), k.len())),
        Err(IndexError::Sketch(SketchError::EmptySet)) => Ok(false),
        Err(e) => Err(e),
    };
    let first_error = if bands == 0 {
        // Nothing to write, but every signature is still checked.
        keyed.iter_mut().enumerate().find_map(|(i, flag)| match check(i, &mut []) {
            Ok(k) => {
                *flag = k;
                None
            }
            Err(e) => Some((i, e)),
        })
    } else {
        keys.par_chunks_mut(bands)
            .zip(keyed.par_iter_mut())
            .enumerate()
            .filter_map(|(i, (out, flag))| match check(i, out) {
                Ok(k) => {
                    *flag = k;
                    None
                }
                Err(e) => Some((i, e)),
            })
            .min_by_key(|(i, _)| *i)
    };
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::index::lsh::{LshParams, RowWidth};
    use crate::sketch::oph::OphSketch;
    use crate::sketch::params::SketchParams;
    use crate::sketch::sketcher::Sketcher;
    use crate::sketch::tokens::TokenSet;

    fn sketches(sets: &[Vec<u64>], params: SketchParams) -> Vec<Sketch> {
        let s = Sketcher::new(params).unwrap();
        sets.iter().map(|t| s.sketch(&TokenSet::from_unsorted(t.clone())).unwrap()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// The pairs passed on are exactly the pairs sharing at least one band key (brute
        /// force over every pair and band), each exactly once.
        #[test]
        fn pairs_are_those_sharing_a_band_each_once(
            bases in prop::collection::vec(prop::collection::vec(0u64..400, 5..40), 1..5),
            picks in prop::collection::vec((0usize..5, 0u64..400, 0usize..8), 2..40),
            bands in 1u32..21,
        ) {
            // Near-copies of a few base sets, so buckets are shared; some exact copies.
            let sets: Vec<Vec<u64>> = picks
                .iter()
                .map(|&(b, extra, drop)| {
                    let base = &bases[b % bases.len()];
                    let mut s: Vec<u64> = base.iter().skip(drop.min(base.len() - 1)).copied().collect();
                    if drop % 2 == 0 { s.push(1000 + extra) }
                    s
                })
                .collect();
            let sk = sketches(&sets, SketchParams::minhash(32, 32, 11).unwrap());
            let rows = 32 / bands;
            // Version 3 keeps 32-bit keys narrowed, version 1 its 64-bit keys whole.
            let scheme = BandKeyScheme::new(5, LshParams { bands, rows }, RowWidth::U32);
            let scheme = if bands % 2 == 0 { BandKeyScheme { version: 1, ..scheme } } else { scheme };
            let keys = BandedKeys::new(&scheme, &sk, |s| s).unwrap();
            prop_assert_eq!(matches!(keys.keys, Keys::Narrow(_)), scheme.key_bits() == 32);
            let mut got = Vec::new();
            keys.for_each_pair(|i, j| -> Result<(), ()> { got.push((i, j)); Ok(()) }).unwrap();
            let all: Vec<Vec<u64>> = sk.iter().map(|s| scheme.sketch_keys(s).unwrap()).collect();
            let mut want = BTreeSet::new();
            for (i, ki) in all.iter().enumerate() {
                for (j, kj) in all.iter().enumerate().skip(i + 1) {
                    if ki.iter().zip(kj).any(|(a, b)| a == b) {
                        want.insert((i, j));
                    }
                }
            }
            let unique: BTreeSet<(usize, usize)> = got.iter().copied().collect();
            prop_assert_eq!(unique.len(), got.len(), "a pair was passed on twice");
            prop_assert_eq!(unique, want);
        }
    }

    /// Every pair `keys` passes on, in order, on a pool of `threads`.
    fn pairs_on(keys: &BandedKeys, threads: usize) -> Vec<(usize, usize)> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut got = Vec::new();
        pool.install(|| {
            keys.for_each_pair(|i, j| -> Result<(), ()> {
                got.push((i, j));
                Ok(())
            })
        })
        .unwrap();
        got
    }

    /// The pairs come in the same order on 1, 2 and 3 threads (clustering by stars depends on
    /// the order of the pairs).
    #[test]
    fn pair_order_does_not_depend_on_the_threads() {
        let sets: Vec<Vec<u64>> = (0..300u64).map(|i| ((i % 17) * 50..(i % 17) * 50 + 40 + i % 5).collect()).collect();
        let sk = sketches(&sets, SketchParams::minhash(32, 32, 11).unwrap());
        let scheme = BandKeyScheme::new(5, LshParams { bands: 8, rows: 4 }, RowWidth::U32);
        let keys = BandedKeys::new(&scheme, &sk, |s| s).unwrap();
        let run = |threads: usize| pairs_on(&keys, threads);
        let one = run(1);
        assert!(one.len() > 300, "few pairs: {}", one.len());
        assert_eq!(run(2), one);
        assert_eq!(run(3), one);
    }

    /// Over more items than one gather block and more bands than one gather group, the
    /// radix path over narrow keys passes on the same pairs in the same order as the
    /// comparison-sort path over the same keys held wide, on 1 and 3 threads.
    #[test]
    fn narrow_and_wide_paths_agree_across_blocks_and_groups() {
        let n = 2 * GATHER_BLOCK as u64 + 777;
        let sets: Vec<Vec<u64>> =
            (0..n).map(|i| ((i % 4001) * 30..(i % 4001) * 30 + 24 + i % 3).chain([1_000_000 + i]).collect()).collect();
        let sk = sketches(&sets, SketchParams::minhash(32, 32, 11).unwrap());
        let scheme = BandKeyScheme::new(5, LshParams { bands: 3 * GATHER_BANDS as u32 + 2, rows: 1 }, RowWidth::U32);
        let narrow = BandedKeys::new(&scheme, &sk, |s| s).unwrap();
        let Keys::Narrow(k) = &narrow.keys else { panic!("32-bit keys are held narrow") };
        let wide = BandedKeys {
            bands: narrow.bands,
            keys: Keys::Wide(k.iter().map(|&x| u64::from(x)).collect()),
            keyed: narrow.keyed.clone(),
        };
        let pairs = pairs_on;
        let want = pairs(&wide, 1);
        assert!(want.len() as u64 > n, "few pairs: {}", want.len());
        assert_eq!(pairs(&narrow, 1), want);
        assert_eq!(pairs(&narrow, 3), want);
    }

    #[test]
    fn empty_oph_sketches_join_nothing_and_bad_widths_name_the_item() {
        let params = SketchParams::oph(16, 8, 3).unwrap();
        // A stored all-empty OPH sketch (cardinality 0) cannot be densified.
        let empty = || Sketch::Oph(OphSketch::from_parts(params, vec![0; 16], vec![0xffff], 0).unwrap());
        let mut sk = vec![empty(), empty()];
        sk.extend(sketches(&[(0..50).collect(), (0..50).collect()], params));
        let scheme = BandKeyScheme::new(5, LshParams { bands: 4, rows: 4 }, RowWidth::U32);
        let keys = BandedKeys::new(&scheme, &sk, |s| s).unwrap();
        let mut got = Vec::new();
        keys.for_each_pair(|i, j| -> Result<(), ()> {
            got.push((i, j));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![(2, 3)]);
        let wide = BandKeyScheme::new(5, LshParams { bands: 4, rows: 4 }, RowWidth::U64);
        let (at, _) = BandedKeys::new(&wide, &sk[2..], |s| s).unwrap_err();
        assert_eq!(at, 0);
    }
}
