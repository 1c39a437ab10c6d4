//! Accuracy of the set estimators against exact Jaccard on random sets (fixed seeds).
//!
//! Each test states its bound; the bounds are the acceptance criteria, and the
//! coverage window 93-97% checks that 95% intervals are calibrated rather than padded.

mod common;

use common::{Rng, set_pair, spanning_pair};
use rayon::prelude::*;
use sketchdb::{SketchParams, Sketcher, TokenSet};

const PAIRS: usize = 4000;

struct Summary {
    mean_abs: f64,
    mean_err: f64,
    rmse: f64,
    coverage: f64,
}

fn evaluate(params: SketchParams, pairs: &[(TokenSet, TokenSet)]) -> Summary {
    let sk = Sketcher::new(params).unwrap();
    let rows: Vec<(f64, bool)> = pairs
        .par_iter()
        .map(|(a, b)| {
            let truth = a.jaccard(b);
            let e = sk.sketch(a).unwrap().similarity(&sk.sketch(b).unwrap(), 0.95).unwrap();
            assert!(e.lower <= e.value && e.value <= e.upper, "{e:?}");
            assert!((0.0..=1.0).contains(&e.lower) && (0.0..=1.0).contains(&e.upper), "{e:?}");
            (e.value - truth, e.contains(truth))
        })
        .collect();
    let n = rows.len() as f64;
    Summary {
        mean_abs: rows.iter().map(|r| r.0.abs()).sum::<f64>() / n,
        mean_err: rows.iter().map(|r| r.0).sum::<f64>() / n,
        rmse: (rows.iter().map(|r| r.0 * r.0).sum::<f64>() / n).sqrt(),
        coverage: rows.iter().filter(|r| r.1).count() as f64 / n,
    }
}

fn spanning_pairs(seed: u64) -> Vec<(TokenSet, TokenSet)> {
    let mut rng = Rng(seed);
    (0..PAIRS).map(|_| spanning_pair(&mut rng, 100.0, 3000.0)).collect()
}

fn check_spanning(name: &str, params: SketchParams) {
    let pairs = spanning_pairs(0x5ca1ab1e);
    let s = evaluate(params, &pairs);
    eprintln!(
        "{name}: mean|err| {:.4} bias {:+.4} rmse {:.4} coverage {:.2}%",
        s.mean_abs,
        s.mean_err,
        s.rmse,
        100.0 * s.coverage
    );
    assert!(s.mean_abs <= 0.03, "{name}: mean |estimate - J| = {:.4} > 0.03", s.mean_abs);
    assert!((0.93..=0.97).contains(&s.coverage), "{name}: 95% interval coverage {:.3}", s.coverage);
}

#[test]
fn minhash_k128_is_accurate_and_calibrated() {
    check_spanning("minhash k=128", SketchParams::minhash(128, 32, 1).unwrap());
}

#[test]
fn minhash_64bit_values_behave_like_32bit() {
    check_spanning("minhash k=128 64-bit", SketchParams::minhash(128, 64, 2).unwrap());
}

#[test]
fn bbit_b8_k128_is_accurate_and_calibrated() {
    check_spanning("bbit b=8 k=128", SketchParams::bbit(128, 8, 3).unwrap());
}

#[test]
fn oph_t128_is_accurate_and_calibrated() {
    check_spanning("oph t=128 32-bit", SketchParams::oph(128, 32, 4).unwrap());
}

#[test]
fn oph_one_byte_bins_are_accurate_and_calibrated() {
    check_spanning("oph t=128 8-bit", SketchParams::oph(128, 8, 5).unwrap());
}

#[test]
fn bbit_512_bytes_beats_minhash_512_bytes() {
    // Equal storage: 512 one-byte values vs 128 four-byte values.
    let pairs = spanning_pairs(0xb17);
    let bbit = evaluate(SketchParams::bbit(512, 8, 6).unwrap(), &pairs);
    let mh = evaluate(SketchParams::minhash(128, 32, 6).unwrap(), &pairs);
    eprintln!("rmse: bbit b=8 k=512 {:.4} vs minhash 32-bit k=128 {:.4}", bbit.rmse, mh.rmse);
    assert!(bbit.rmse < mh.rmse, "b-bit rmse {:.4} not below minhash rmse {:.4}", bbit.rmse, mh.rmse);
}

fn bbit_bias(b: u8, set_size: usize, seed: u64) -> f64 {
    bbit_bias_of(SketchParams::bbit(128, b, seed).unwrap(), set_size, seed)
}

fn bbit_bias_of(params: SketchParams, set_size: usize, seed: u64) -> f64 {
    let b = params.bits();
    let mut rng = Rng(seed);
    let pairs: Vec<_> = (0..5000)
        .map(|_| {
            let j = 0.2 + 0.7 * rng.f64();
            // Both sets of about `set_size` tokens: union = 2n / (1 + J).
            let union = (2.0 * set_size as f64 / (1.0 + j)).round() as usize;
            set_pair(&mut rng, union, j)
        })
        .collect();
    let s = evaluate(params, &pairs);
    eprintln!("bbit b={b} {} sets~{set_size}: bias {:+.5} mean|err| {:.4}", params.family(), s.mean_err, s.mean_abs);
    s.mean_err
}

#[test]
fn bbit_is_unbiased_for_small_sets() {
    for b in [1u8, 2, 4, 8] {
        let bias = bbit_bias(b, 50, 100 + u64::from(b));
        assert!(bias.abs() <= 0.01, "b={b}: mean error {bias:+.5} outside ±0.01");
    }
}

#[test]
fn bbit_is_unbiased_for_large_sets() {
    for b in [1u8, 8] {
        let bias = bbit_bias(b, 5000, 200 + u64::from(b));
        assert!(bias.abs() <= 0.01, "b={b}: mean error {bias:+.5} outside ±0.01");
    }
}

#[test]
fn minhash_cardinality_interval_is_calibrated() {
    check_cardinality(SketchParams::minhash(256, 64, 9).unwrap());
}

#[test]
fn minhash_lanes32_cardinality_interval_is_calibrated() {
    check_cardinality(lanes32(SketchParams::minhash(256, 32, 9).unwrap()));
}

#[test]
fn bbit_lanes32_is_unbiased_for_small_and_large_sets() {
    for (b, size) in [(1u8, 50), (8, 50), (1, 5000), (8, 5000)] {
        let seed = 300 + u64::from(b) + size as u64;
        let bias = bbit_bias_of(lanes32(SketchParams::bbit(128, b, seed).unwrap()), size, seed);
        assert!(bias.abs() <= 0.01, "b={b}, sets of ~{size}: mean error {bias:+.5} outside ±0.01");
    }
}

fn check_cardinality(params: SketchParams) {
    let sk = Sketcher::new(params).unwrap();
    let mut rng = Rng(77);
    let mut covered = 0;
    let trials = 1000;
    let mut rel_err = 0.0;
    for _ in 0..trials {
        let n = rng.range(10, 20_000) as usize;
        let set = TokenSet::from_unsorted((0..n).map(|_| rng.next_u64()).collect());
        let n = set.len() as f64;
        let sketchdb::Sketch::MinHash(m) = sk.sketch(&set).unwrap() else { unreachable!() };
        let e = m.cardinality_estimate(0.95).unwrap();
        covered += usize::from(e.contains(n));
        rel_err += ((e.value - n) / n).abs();
    }
    let coverage = covered as f64 / trials as f64;
    eprintln!("cardinality {params}: coverage {coverage:.3}, mean relative error {:.4}", rel_err / trials as f64);
    assert!((0.93..=0.97).contains(&coverage), "coverage {coverage}");
    // The relative standard error of (k-1)/S is 1/sqrt(k-2), about 0.063 at k = 256.
    assert!(rel_err / (trials as f64) < 0.07);
}

/// The 32-bit lane family (the default of MinHash with 32-bit values and of b-bit MinHash)
/// under the same bounds as `MixMultiplyShift`.
fn lanes32(p: SketchParams) -> SketchParams {
    p.with_family(sketchdb::HashFamily::MixMultiplyShift32).unwrap()
}

#[test]
fn minhash_lanes32_k128_is_accurate_and_calibrated() {
    check_spanning("minhash k=128 lanes32", lanes32(SketchParams::minhash(128, 32, 5).unwrap()));
}

#[test]
fn bbit_lanes32_b8_k128_is_accurate_and_calibrated() {
    check_spanning("bbit b=8 k=128 lanes32", lanes32(SketchParams::bbit(128, 8, 6).unwrap()));
}
