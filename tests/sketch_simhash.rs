//! SimHash: exact Hamming distances and calibrated angle intervals (fixed seeds).

mod common;

use common::Rng;
use sketchdb::{Sketch, SketchParams, Sketcher};

fn fingerprint(s: &Sketch) -> u128 {
    match s {
        Sketch::SimHash(h) => h.value(),
        _ => unreachable!(),
    }
}

#[test]
fn distances_are_exact_popcounts() {
    let mut rng = Rng(1);
    for bits in [64u8, 128] {
        let sk = Sketcher::new(SketchParams::simhash(bits, 3).unwrap()).unwrap();
        for _ in 0..200 {
            let a: Vec<(u64, f64)> = (0..20).map(|_| (rng.next_u64(), rng.f64() + 0.1)).collect();
            let b: Vec<(u64, f64)> = (0..20).map(|_| (rng.next_u64(), rng.f64() + 0.1)).collect();
            let (sa, sb) = (sk.sketch_weighted(&a).unwrap(), sk.sketch_weighted(&b).unwrap());
            let want = (fingerprint(&sa) ^ fingerprint(&sb)).count_ones();
            let Sketch::SimHash(ha) = &sa else { unreachable!() };
            let Sketch::SimHash(hb) = &sb else { unreachable!() };
            assert_eq!(ha.hamming(hb).unwrap(), want);
            let e = sa.hamming(&sb, 0.95).unwrap();
            assert_eq!((e.value, e.lower, e.upper), (f64::from(want), f64::from(want), f64::from(want)));
            if bits == 64 {
                assert_eq!(fingerprint(&sa) >> 64, 0);
            }
        }
    }
}

#[test]
fn term_frequency_equals_explicit_weights() {
    let sk = Sketcher::new(SketchParams::simhash(64, 9).unwrap()).unwrap();
    let tokens = [5u64, 7, 5, 5, 9, 7];
    let tf = sk.sketch_multiset(&tokens).unwrap();
    let weighted = sk.sketch_weighted(&[(5, 3.0), (7, 2.0), (9, 1.0)]).unwrap();
    assert_eq!(tf, weighted);
}

type Weighted = Vec<(u64, f64)>;

/// Two random weighted vectors over ~400 features, with a shared part whose size and weight
/// perturbation vary, so the true cosines span (0, 1].
fn vector_pair(rng: &mut Rng) -> (Weighted, Weighted, f64) {
    let n = 400;
    let shared = rng.range(0, n as u64) as usize;
    let noise = rng.f64() * 0.8;
    let weight = |rng: &mut Rng| (0.5 * rng.normal()).exp();
    let mut x = Vec::new();
    let mut y = Vec::new();
    for _ in 0..shared {
        let f = rng.next_u64();
        let w = weight(rng);
        x.push((f, w));
        y.push((f, (w * (1.0 + noise * rng.normal())).abs()));
    }
    for _ in shared..n {
        x.push((rng.next_u64(), weight(rng)));
        y.push((rng.next_u64(), weight(rng)));
    }
    let dot: f64 = x.iter().zip(&y).take(shared).map(|(a, b)| a.1 * b.1).sum();
    let norm = |v: &[(u64, f64)]| v.iter().map(|p| p.1 * p.1).sum::<f64>().sqrt();
    let cos = dot / (norm(&x) * norm(&y));
    (x, y, cos)
}

#[test]
fn angle_interval_covers_the_true_cosine_at_the_stated_rate() {
    let mut rng = Rng(2024);
    for bits in [64u8, 128] {
        let trials = 3000;
        let mut covered = 0;
        for t in 0..trials {
            let sk = Sketcher::new(SketchParams::simhash(bits, 1000 + t).unwrap()).unwrap();
            let (x, y, cos) = vector_pair(&mut rng);
            let e = sk.sketch_weighted(&x).unwrap().similarity(&sk.sketch_weighted(&y).unwrap(), 0.95).unwrap();
            assert!(e.lower <= e.value && e.value <= e.upper);
            covered += usize::from(e.contains(cos));
        }
        let coverage = covered as f64 / trials as f64;
        eprintln!("simhash {bits}-bit: 95% angle interval coverage {:.2}%", 100.0 * coverage);
        assert!((0.93..=0.975).contains(&coverage), "{bits}-bit coverage {coverage}");
    }
}
