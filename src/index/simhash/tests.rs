//! Exactness of the SimHash probes and self-join against brute force (proptest), on random
//! and planted data: neighbours at distance exactly 0..=k (and k + 1), many duplicate
//! fingerprints, f = 64 and 128, one or several runs per table.

use proptest::prelude::*;

use super::design::SimhashTableDesign;
use super::mem::SimhashMemIndex;
use super::probe::{RunView, SimhashMatch, SimhashPair, brute_force, probe, self_join};
use crate::index::fingerprint::Fingerprint;

/// splitmix64: a tiny fixed-seed generator for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

trait TestFp: Fingerprint {
    fn random(rng: &mut Rng) -> Self;
    fn flip(self, bit: u32) -> Self;
}

impl TestFp for u64 {
    fn random(rng: &mut Rng) -> Self {
        rng.next()
    }
    fn flip(self, bit: u32) -> Self {
        self ^ (1 << bit)
    }
}

impl TestFp for u128 {
    fn random(rng: &mut Rng) -> Self {
        u128::from(rng.next()) << 64 | u128::from(rng.next())
    }
    fn flip(self, bit: u32) -> Self {
        self ^ (1 << bit)
    }
}

/// `x` with exactly `d` distinct bits flipped.
fn at_distance<F: TestFp>(x: F, d: u32, rng: &mut Rng) -> F {
    let mut bits: Vec<u32> = (0..F::BITS).collect();
    let mut y = x;
    for i in 0..d as usize {
        let j = i + rng.below((bits.len() - i) as u64) as usize;
        bits.swap(i, j);
        y = y.flip(bits[i]);
    }
    y
}

/// Fingerprints around a few centres: planted at distance exactly 0..=k + 1 (with
/// duplicates), plus uniformly random ones. Row ids are spread out and shuffled in order.
fn dataset<F: TestFp>(seed: u64, n_random: usize, centres: &[F], k: u32) -> Vec<(u64, F)> {
    let mut rng = Rng(seed);
    let mut fps = Vec::new();
    for &c in centres {
        for d in 0..=k + 1 {
            for _ in 0..1 + rng.below(3) {
                let y = at_distance(c, d, &mut rng);
                fps.push(y);
                if rng.below(2) == 0 {
                    fps.push(y); // an identical fingerprint under another row id
                }
            }
        }
    }
    fps.extend((0..n_random).map(|_| F::random(&mut rng)));
    fps.into_iter().enumerate().map(|(i, fp)| ((i as u64).wrapping_mul(0x9e37_79b9) ^ seed, fp)).collect()
}

fn brute_pairs<F: Fingerprint>(items: &[(u64, F)], k: u32) -> Vec<SimhashPair> {
    let mut out = Vec::new();
    for (i, &(ra, a)) in items.iter().enumerate() {
        for &(rb, b) in &items[i + 1..] {
            let distance = a.distance(b);
            if distance <= k {
                out.push(SimhashPair { distance, a: ra.min(rb), b: ra.max(rb) });
            }
        }
    }
    out.sort_unstable();
    out
}

/// The tables of `design` split into `parts` sorted runs each (rows dealt round-robin).
fn split_runs<F: Fingerprint>(
    design: &SimhashTableDesign,
    items: &[(u64, F)],
    parts: usize,
) -> Vec<Vec<(Vec<F>, Vec<u64>)>> {
    (0..design.table_count())
        .map(|t| {
            (0..parts)
                .map(|p| {
                    let mut e: Vec<(F, u64)> =
                        items.iter().skip(p).step_by(parts).map(|&(r, fp)| (design.permute(t, fp), r)).collect();
                    e.sort_unstable();
                    e.into_iter().unzip()
                })
                .collect()
        })
        .collect()
}

fn check_all<F: TestFp>(seed: u64, k: u32, extra_m: u32, n_random: usize, n_centres: usize, parts: usize) {
    let mut rng = Rng(seed ^ 0xabcd);
    let centres: Vec<F> = (0..n_centres).map(|_| F::random(&mut rng)).collect();
    let items = dataset(seed, n_random, &centres, k);
    let design = SimhashTableDesign::with_blocks(F::BITS, k, k + 1 + extra_m).expect("design");
    let (rows, fps): (Vec<u64>, Vec<F>) = items.iter().copied().unzip();
    let index = SimhashMemIndex::build(design.clone(), &items).expect("build");
    let owned = split_runs(&design, &items, parts);
    let views: Vec<Vec<RunView<'_, F>>> =
        owned.iter().map(|runs| runs.iter().map(|(k, r)| RunView::new(k, r).expect("sorted run")).collect()).collect();
    let tables: Vec<&[RunView<'_, F>]> = views.iter().map(|v| &v[..]).collect();
    // Queries: the centres themselves, neighbours of them at distance up to k + 1, and
    // random points.
    let mut queries = centres.clone();
    for &c in &centres {
        queries.push(at_distance(c, 1 + rng.below(u64::from(k) + 1) as u32, &mut rng));
    }
    queries.extend((0..4).map(|_| F::random(&mut rng)));
    for q in queries {
        let want = brute_force(q, &fps, &rows, k);
        assert_eq!(index.probe(q), want, "in-memory probe, k = {k}, design {design:?}");
        assert_eq!(probe(&design, q, &tables).expect("probe"), want, "runs probe");
        assert!(want.iter().all(|m: &SimhashMatch| m.distance <= k));
    }
    let pairs = brute_pairs(&items, k);
    assert_eq!(index.self_join().expect("self join"), pairs, "self-join, k = {k}");
    let single: Vec<RunView<'_, F>> = (0..design.table_count()).map(|t| index.run(t).expect("run")).collect();
    assert_eq!(self_join(&design, &single).expect("self join"), pairs);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn probe_and_self_join_match_brute_force_64(seed: u64, k in 0u32..=5, extra_m in 0u32..=2,
                                                n_random in 0usize..300, n_centres in 1usize..6, parts in 1usize..4) {
        check_all::<u64>(seed, k, extra_m, n_random, n_centres, parts);
    }

    #[test]
    fn probe_and_self_join_match_brute_force_128(seed: u64, k in 0u32..=5, extra_m in 0u32..=2,
                                                 n_random in 0usize..300, n_centres in 1usize..6, parts in 1usize..4) {
        check_all::<u128>(seed, k, extra_m, n_random, n_centres, parts);
    }

    #[test]
    fn permutation_preserves_distance_and_inverts(x: u128, y: u128, k in 0u32..=6, extra_m in 0u32..=2, wide: bool) {
        let f = if wide { 128 } else { 64 };
        let (x, y) = if wide { (x, y) } else { (x & u128::from(u64::MAX), y & u128::from(u64::MAX)) };
        let d = SimhashTableDesign::with_blocks(f, k, k + 1 + extra_m).expect("design");
        let mut canonical = 0;
        for t in 0..d.table_count() {
            let (px, py) = (d.permute_u128(t, x), d.permute_u128(t, y));
            prop_assert_eq!(d.unpermute_u128(t, px), x);
            prop_assert_eq!((px ^ py).count_ones(), (x ^ y).count_ones());
            if d.is_canonical(t, px ^ py) {
                canonical += 1;
            }
        }
        prop_assert!(canonical <= 1);
    }
}

/// The pigeonhole guarantee, directly: a neighbour within k shares some table's prefix, and
/// exactly one table is canonical.
#[test]
fn every_neighbour_within_k_has_one_canonical_table_with_equal_prefix() {
    let mut rng = Rng(7);
    for f in [64u32, 128] {
        for k in 0..=6 {
            for extra in 0..=2 {
                let d = SimhashTableDesign::with_blocks(f, k, k + 1 + extra).expect("design");
                for _ in 0..200 {
                    let x = u128::from(rng.next()) << 64 | u128::from(rng.next());
                    let x = if f == 64 { x & u128::from(u64::MAX) } else { x };
                    let y = if f == 64 {
                        u128::from(at_distance(x as u64, rng.below(u64::from(k) + 1) as u32, &mut rng))
                    } else {
                        at_distance(x, rng.below(u64::from(k) + 1) as u32, &mut rng)
                    };
                    let canon: Vec<usize> = (0..d.table_count())
                        .filter(|&t| d.is_canonical(t, d.permute_u128(t, x) ^ d.permute_u128(t, y)))
                        .collect();
                    assert_eq!(canon.len(), 1);
                    let t = canon[0];
                    let shift = f - d.prefix_bits(t);
                    assert_eq!(d.permute_u128(t, x) >> shift, d.permute_u128(t, y) >> shift);
                }
            }
        }
    }
}

#[test]
fn identical_fingerprints_are_all_returned() {
    let design = SimhashTableDesign::with_blocks(64, 3, 4).expect("design");
    let items: Vec<(u64, u64)> = (0..50).map(|r| (r, 0xdead_beef)).chain([(100, 0xdead_beef ^ 0b111)]).collect();
    let index = SimhashMemIndex::build(design, &items).expect("build");
    let got = index.probe(0xdead_beef);
    assert_eq!(got.len(), 51);
    assert!(got[..50].iter().enumerate().all(|(i, m)| m.row == i as u64 && m.distance == 0));
    assert_eq!(got[50], SimhashMatch { distance: 3, row: 100 });
    assert_eq!(index.self_join().expect("join").len(), 50 * 49 / 2 + 50);
}

#[test]
fn build_and_probe_reject_bad_inputs() {
    use crate::index::error::IndexError;
    let d64 = SimhashTableDesign::with_blocks(64, 3, 4).expect("design");
    let err = SimhashMemIndex::<u128>::build(d64.clone(), &[(1, 5)]).unwrap_err();
    assert_eq!(err, IndexError::SizeMismatch { what: "fingerprint bits", expected: 64, got: 128 });
    let err = SimhashMemIndex::<u64>::build(d64.clone(), &[(1, 5), (1, 6)]).unwrap_err();
    assert_eq!(err, IndexError::DuplicateRow { row: 1 });
    let err = RunView::new(&[3u64, 1], &[0, 1]).unwrap_err();
    assert_eq!(err, IndexError::UnsortedRun { table: 0, position: 1 });
    let err = RunView::new(&[1u64, 3], &[0]).unwrap_err();
    assert!(matches!(err, IndexError::SizeMismatch { .. }));
    let run = RunView::new(&[1u64], &[0]).expect("run");
    let err = probe(&d64, 1u64, &[&[run][..]]).unwrap_err();
    assert_eq!(err, IndexError::SizeMismatch { what: "tables", expected: 4, got: 1 });
    let empty = SimhashMemIndex::<u64>::build(d64, &[]).expect("empty build");
    assert!(empty.is_empty() && empty.probe(0).is_empty() && empty.self_join().expect("join").is_empty());
}
