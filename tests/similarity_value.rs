//! `Sketch::similarity_value` decides thresholds before the interval is computed (LSH
//! verification, the full scan, dedup): it must equal `similarity(..).value` bit for bit, for
//! every sketch kind, on near and far pairs.

use proptest::prelude::*;
use sketchdb::*;

fn kinds() -> Vec<SketchParams> {
    vec![
        SketchParams::minhash(64, 32, 3).unwrap(),
        SketchParams::minhash(32, 64, 3).unwrap(),
        SketchParams::bbit(128, 1, 3).unwrap(),
        SketchParams::bbit(256, 8, 3).unwrap(),
        SketchParams::oph(128, 8, 3).unwrap(),
        SketchParams::oph(64, 16, 3).unwrap(),
        SketchParams::oph(32, 32, 3).unwrap(),
        SketchParams::simhash(64, 3).unwrap(),
        SketchParams::simhash(128, 3).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn value_equals_the_estimates_value_bit_for_bit(
        shared in prop::collection::vec(any::<u64>(), 0..300),
        only_a in prop::collection::vec(any::<u64>(), 0..200),
        only_b in prop::collection::vec(any::<u64>(), 0..200),
        level in 0.5f64..0.999,
    ) {
        let a: Vec<u64> = shared.iter().chain(&only_a).copied().collect();
        let b: Vec<u64> = shared.iter().chain(&only_b).copied().collect();
        prop_assume!(!a.is_empty() && !b.is_empty());
        for params in kinds() {
            let s = Sketcher::new(params).unwrap();
            let (x, y) = (s.sketch(&TokenSet::from_unsorted(a.clone())).unwrap(), s.sketch(&TokenSet::from_unsorted(b.clone())).unwrap());
            let full = x.similarity(&y, level).unwrap();
            prop_assert_eq!(x.similarity_value(&y).unwrap().to_bits(), full.value.to_bits(), "{:?}", params);
            prop_assert_eq!(x.similarity_value(&x).unwrap().to_bits(), x.similarity(&x, level).unwrap().value.to_bits());
        }
    }
}

#[test]
fn incompatible_sketches_are_refused_like_similarity() {
    let a = Sketcher::new(SketchParams::minhash(64, 32, 3).unwrap())
        .unwrap()
        .sketch(&TokenSet::from_unsorted(vec![1, 2]))
        .unwrap();
    let b = Sketcher::new(SketchParams::minhash(64, 32, 4).unwrap())
        .unwrap()
        .sketch(&TokenSet::from_unsorted(vec![1, 2]))
        .unwrap();
    let c = Sketcher::new(SketchParams::oph(64, 8, 3).unwrap())
        .unwrap()
        .sketch(&TokenSet::from_unsorted(vec![1, 2]))
        .unwrap();
    assert_eq!(a.similarity_value(&b).unwrap_err(), a.similarity(&b, 0.95).unwrap_err());
    assert_eq!(a.similarity_value(&c).unwrap_err(), a.similarity(&c, 0.95).unwrap_err());
}
