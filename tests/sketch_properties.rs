//! Properties every sketch kind must hold on arbitrary small sets (proptest).

use proptest::prelude::*;
use sketchdb::*;

fn all_params(seed: u64) -> Vec<SketchParams> {
    vec![
        SketchParams::minhash(32, 32, seed).unwrap(),
        SketchParams::minhash(17, 64, seed).unwrap(),
        SketchParams::bbit(40, 1, seed).unwrap(),
        SketchParams::bbit(33, 2, seed).unwrap(),
        SketchParams::bbit(24, 16, seed).unwrap(),
        SketchParams::bbit(9, 32, seed).unwrap(),
        SketchParams::oph(32, 8, seed).unwrap(),
        SketchParams::oph(100, 16, seed).unwrap(),
        SketchParams::simhash(64, seed).unwrap(),
        SketchParams::simhash(128, seed).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn estimates_are_symmetric_bounded_and_exact_on_identity(
        a in prop::collection::vec(any::<u64>(), 1..300),
        b in prop::collection::vec(any::<u64>(), 1..300),
        seed in any::<u64>(),
    ) {
        let (a, b) = (TokenSet::from_unsorted(a), TokenSet::from_unsorted(b));
        for p in all_params(seed) {
            let sk = Sketcher::new(p).unwrap();
            let (sa, sb) = (sk.sketch(&a).unwrap(), sk.sketch(&b).unwrap());
            let ab = sa.similarity(&sb, 0.9).unwrap();
            let ba = sb.similarity(&sa, 0.9).unwrap();
            prop_assert_eq!(ab, ba);
            prop_assert!(ab.lower <= ab.value && ab.value <= ab.upper);
            let same = sa.similarity(&sa, 0.9).unwrap();
            prop_assert_eq!(same.value, 1.0);
            prop_assert_eq!(same.upper, 1.0);
            if p.kind() != SketchKind::SimHash {
                prop_assert_eq!(sa.cardinality(), Some(a.len() as u64));
                let h = sa.hamming(&sb, 0.9).unwrap();
                prop_assert!(h.lower <= h.value && h.value <= h.upper);
                prop_assert!(h.upper <= (a.len() + b.len()) as f64 + 1e-9);
            }
        }
    }

    #[test]
    fn sketches_survive_a_round_trip_through_their_parts(
        a in prop::collection::vec(any::<u64>(), 1..200),
        seed in any::<u64>(),
    ) {
        let a = TokenSet::from_unsorted(a);
        for p in all_params(seed) {
            let s = Sketcher::new(p).unwrap().sketch(&a).unwrap();
            let back = match &s {
                Sketch::MinHash(m) => Sketch::MinHash(MinHash::from_parts(p, m.values().to_vec(), m.cardinality()).unwrap()),
                Sketch::BBit(m) => Sketch::BBit(BBitMinHash::from_parts(p, m.words().to_vec(), m.cardinality()).unwrap()),
                Sketch::Oph(m) => Sketch::Oph(OphSketch::from_parts(p, m.bins().to_vec(), m.empty_bitmap().to_vec(), m.cardinality()).unwrap()),
                Sketch::SimHash(m) => Sketch::SimHash(SimHash::from_parts(p, m.value()).unwrap()),
                _ => unreachable!(),
            };
            prop_assert_eq!(s, back);
        }
    }

    #[test]
    fn bbit_match_count_equals_slotwise_comparison(
        a in prop::collection::vec(any::<u64>(), 1..100),
        b in prop::collection::vec(any::<u64>(), 1..100),
        bexp in 0u32..6,
    ) {
        let bits = 1u8 << bexp;
        let p = SketchParams::bbit(77, bits, 3).unwrap();
        let sk = Sketcher::new(p).unwrap();
        let (Sketch::BBit(x), Sketch::BBit(y)) =
            (sk.sketch(&TokenSet::from_unsorted(a)).unwrap(), sk.sketch(&TokenSet::from_unsorted(b)).unwrap())
        else { unreachable!() };
        let want = (0..77).filter(|&i| x.value(i) == y.value(i)).count();
        prop_assert_eq!(x.matches(&y).unwrap(), want);
    }

    #[test]
    fn densification_fills_every_bin_and_keeps_filled_ones(
        a in prop::collection::vec(any::<u64>(), 1..80),
        t in 1u32..300,
    ) {
        let p = SketchParams::oph(t, 16, 11).unwrap();
        let Sketch::Oph(o) = Sketcher::new(p).unwrap().sketch(&TokenSet::from_unsorted(a)).unwrap() else { unreachable!() };
        let d = o.densify().unwrap();
        prop_assert_eq!(d.len(), t as usize);
        let filled: std::collections::HashSet<u32> =
            (0..t as usize).filter(|&i| !o.is_empty_bin(i)).map(|i| o.bins()[i]).collect();
        for (i, &v) in d.iter().enumerate() {
            if o.is_empty_bin(i) {
                prop_assert!(filled.contains(&v));
            } else {
                prop_assert_eq!(v, o.bins()[i]);
            }
        }
    }

    /// `sketch_multiset` sketches strictly increasing input in place and anything else through
    /// a sorted copy: both equal the sketch of the distinct set, whatever the order and repeats.
    #[test]
    fn multisets_in_any_order_sketch_as_their_distinct_set(
        a in prop::collection::vec(any::<u64>(), 1..700),
        repeat in 0usize..5,
        seed in any::<u64>(),
    ) {
        let set = TokenSet::from_unsorted(a.clone());
        let sorted = set.as_slice().to_vec();
        let mut reversed = sorted.clone();
        reversed.reverse();
        let mut repeated = a.clone();
        repeated.extend(a.iter().take(repeat));
        for p in all_params(seed).into_iter().filter(|p| p.kind() != SketchKind::SimHash) {
            let sk = Sketcher::new(p).unwrap();
            let want = sk.sketch(&set).unwrap();
            for input in [&sorted, &reversed, &a, &repeated] {
                prop_assert_eq!(&sk.sketch_multiset(input).unwrap(), &want);
            }
        }
    }

    #[test]
    fn exact_jaccard_matches_a_hash_set_oracle(
        a in prop::collection::vec(0u64..50, 0..60),
        b in prop::collection::vec(0u64..50, 0..60),
    ) {
        let sa: std::collections::HashSet<u64> = a.iter().copied().collect();
        let sb: std::collections::HashSet<u64> = b.iter().copied().collect();
        let union = sa.union(&sb).count();
        let want = if union == 0 { 1.0 } else { sa.intersection(&sb).count() as f64 / union as f64 };
        prop_assert_eq!(TokenSet::from_unsorted(a).jaccard(&TokenSet::from_unsorted(b)), want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `Sketch::similarity_value` decides thresholds before the interval is computed (LSH
    /// verification, the full scan, dedup): it must equal `similarity(..).value` bit for bit,
    /// for every kind, on near and far pairs.
    #[test]
    fn similarity_value_equals_the_estimates_value_bit_for_bit(
        shared in prop::collection::vec(any::<u64>(), 0..300),
        only_a in prop::collection::vec(any::<u64>(), 0..200),
        only_b in prop::collection::vec(any::<u64>(), 0..200),
        level in 0.5f64..0.999,
        seed in any::<u64>(),
    ) {
        let a: Vec<u64> = shared.iter().chain(&only_a).copied().collect();
        let b: Vec<u64> = shared.iter().chain(&only_b).copied().collect();
        prop_assume!(!a.is_empty() && !b.is_empty());
        for params in all_params(seed) {
            let s = Sketcher::new(params).unwrap();
            let x = s.sketch(&TokenSet::from_unsorted(a.clone())).unwrap();
            let y = s.sketch(&TokenSet::from_unsorted(b.clone())).unwrap();
            let full = x.similarity(&y, level).unwrap();
            prop_assert_eq!(x.similarity_value(&y).unwrap().to_bits(), full.value.to_bits(), "{:?}", params);
            prop_assert_eq!(x.similarity_value(&x).unwrap().to_bits(), x.similarity(&x, level).unwrap().value.to_bits());
        }
    }
}

#[test]
fn similarity_value_refuses_incompatible_sketches_like_similarity() {
    let set = TokenSet::from_unsorted(vec![1, 2]);
    let a = Sketcher::new(SketchParams::minhash(64, 32, 3).unwrap()).unwrap().sketch(&set).unwrap();
    let b = Sketcher::new(SketchParams::minhash(64, 32, 4).unwrap()).unwrap().sketch(&set).unwrap();
    let c = Sketcher::new(SketchParams::oph(64, 8, 3).unwrap()).unwrap().sketch(&set).unwrap();
    assert_eq!(a.similarity_value(&b).unwrap_err(), a.similarity(&b, 0.95).unwrap_err());
    assert_eq!(a.similarity_value(&c).unwrap_err(), a.similarity(&c, 0.95).unwrap_err());
}
