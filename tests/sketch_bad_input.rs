//! Bad parameters and mismatched sketches give typed errors naming what is wrong, never a panic.

use sketchdb::*;

fn param_of(e: SketchError) -> &'static str {
    match e {
        SketchError::InvalidParam { param, .. } => param,
        other => panic!("expected InvalidParam, got {other:?}"),
    }
}

#[test]
fn out_of_range_parameters_are_rejected() {
    assert_eq!(param_of(SketchParams::minhash(0, 32, 0).unwrap_err()), "k");
    assert_eq!(param_of(SketchParams::minhash(4097, 32, 0).unwrap_err()), "k");
    assert_eq!(param_of(SketchParams::minhash(128, 16, 0).unwrap_err()), "bits");
    assert_eq!(param_of(SketchParams::bbit(128, 3, 0).unwrap_err()), "b");
    assert_eq!(param_of(SketchParams::bbit(128, 64, 0).unwrap_err()), "b");
    assert_eq!(param_of(SketchParams::bbit_with_universe(128, 8, 0, 0).unwrap_err()), "universe");
    assert_eq!(param_of(SketchParams::oph(0, 8, 0).unwrap_err()), "bins");
    assert_eq!(param_of(SketchParams::oph(128, 12, 0).unwrap_err()), "bits");
    assert_eq!(param_of(SketchParams::simhash(32, 0).unwrap_err()), "bits");
    assert_eq!(param_of(Tokenizer::shingles(0, 0).unwrap_err()), "shingle_words");
    assert!(SketchParams::minhash(4096, 64, 0).is_ok());
}

#[test]
fn bad_confidence_levels_are_rejected() {
    let sk = Sketcher::new(SketchParams::minhash(16, 32, 0).unwrap()).unwrap();
    let a = sk.sketch(&TokenSet::from_unsorted(vec![1, 2, 3])).unwrap();
    for level in [0.0, 1.0, 1.5, -0.1, f64::NAN] {
        assert_eq!(param_of(a.similarity(&a, level).unwrap_err()), "level");
    }
}

#[test]
fn empty_input_is_an_error_for_every_kind() {
    for p in [
        SketchParams::minhash(8, 32, 0).unwrap(),
        SketchParams::bbit(8, 1, 0).unwrap(),
        SketchParams::oph(8, 8, 0).unwrap(),
        SketchParams::simhash(64, 0).unwrap(),
    ] {
        let sk = Sketcher::new(p).unwrap();
        assert_eq!(sk.sketch(&TokenSet::default()).unwrap_err(), SketchError::EmptySet, "{p}");
        assert_eq!(sk.sketch_text(&Tokenizer::default(), " ... ").unwrap_err(), SketchError::EmptySet);
    }
}

#[test]
fn unsorted_tokens_are_rejected_by_from_sorted() {
    assert_eq!(param_of(TokenSet::from_sorted(vec![1, 3, 3]).unwrap_err()), "tokens");
    assert!(TokenSet::from_sorted(vec![1, 2, 3]).is_ok());
}

#[test]
fn mismatched_sketches_name_the_differing_field() {
    let tokens = TokenSet::from_unsorted((0..100).collect());
    let sketch = |p: SketchParams| Sketcher::new(p).unwrap().sketch(&tokens).unwrap();
    let field = |a: &Sketch, b: &Sketch| match a.similarity(b, 0.95).unwrap_err() {
        SketchError::Incompatible { field, left, right } => {
            assert_ne!(left, right);
            field
        }
        other => panic!("expected Incompatible, got {other:?}"),
    };
    let base = sketch(SketchParams::minhash(64, 32, 1).unwrap());
    assert_eq!(field(&base, &sketch(SketchParams::minhash(64, 32, 2).unwrap())), "seed");
    assert_eq!(field(&base, &sketch(SketchParams::minhash(32, 32, 1).unwrap())), "k");
    assert_eq!(field(&base, &sketch(SketchParams::minhash(64, 64, 1).unwrap())), "bits");
    assert_eq!(field(&base, &sketch(SketchParams::bbit(64, 8, 1).unwrap())), "kind");
    let oph = sketch(SketchParams::oph(64, 8, 1).unwrap());
    assert_eq!(field(&oph, &sketch(SketchParams::oph(128, 8, 1).unwrap())), "bins");
    let bb = sketch(SketchParams::bbit(64, 8, 1).unwrap());
    assert_eq!(field(&bb, &sketch(SketchParams::bbit(64, 4, 1).unwrap())), "b");
    assert_eq!(field(&bb, &sketch(SketchParams::bbit_with_universe(64, 8, 1 << 20, 1).unwrap())), "universe");
}

#[test]
fn malformed_parts_are_rejected() {
    let p = SketchParams::minhash(4, 32, 0).unwrap();
    assert!(matches!(MinHash::from_parts(p, vec![1, 2, 3], 3), Err(SketchError::Malformed { .. })));
    assert!(matches!(MinHash::from_parts(p, vec![1, 2, 3, 1 << 40], 3), Err(SketchError::Malformed { .. })));
    let o = SketchParams::oph(8, 8, 0).unwrap();
    // Bin 0 flagged empty but holding a value.
    assert!(matches!(
        OphSketch::from_parts(o, vec![5, 0, 0, 0, 0, 0, 0, 0], vec![0xff], 3),
        Err(SketchError::Malformed { .. })
    ));
    // Bitmap bits beyond t.
    assert!(matches!(OphSketch::from_parts(o, vec![0; 8], vec![0x1ff], 0), Err(SketchError::Malformed { .. })));
    // A 9-bit value in an 8-bit bin.
    assert!(matches!(
        OphSketch::from_parts(o, vec![256, 0, 0, 0, 0, 0, 0, 0], vec![0xfe], 1),
        Err(SketchError::Malformed { .. })
    ));
    let s = SketchParams::simhash(64, 0).unwrap();
    assert!(matches!(SimHash::from_parts(s, 1u128 << 70), Err(SketchError::Malformed { .. })));
    let b = SketchParams::bbit(10, 4, 0).unwrap();
    assert!(matches!(BBitMinHash::from_parts(b, vec![1u64 << 45], 5), Err(SketchError::Malformed { .. })));
}

#[test]
fn oph_empty_bins_and_all_empty_sketches_are_defined() {
    let p = SketchParams::oph(128, 32, 7).unwrap();
    let sk = Sketcher::new(p).unwrap();
    // Sets far smaller than t leave most bins empty: no division by zero, a finite estimate.
    let a = sk.sketch(&TokenSet::from_unsorted(vec![1, 2, 3])).unwrap();
    let b = sk.sketch(&TokenSet::from_unsorted(vec![1, 2, 4])).unwrap();
    let e = a.similarity(&b, 0.95).unwrap();
    assert!(e.value.is_finite() && (0.0..=1.0).contains(&e.value));
    assert_eq!(a.similarity(&a, 0.95).unwrap().value, 1.0);
    // An all-empty sketch (of the empty set) is representable; against a non-empty one J = 0,
    // against another all-empty one the estimate is undefined: a typed error.
    let empty = Sketch::Oph(OphSketch::from_parts(p, vec![0; 128], vec![u64::MAX, u64::MAX], 0).unwrap());
    assert_eq!(empty.similarity(&a, 0.95).unwrap().value, 0.0);
    assert!(matches!(empty.similarity(&empty, 0.95), Err(SketchError::Undefined { .. })));
    let Sketch::Oph(e) = &empty else { unreachable!() };
    assert_eq!(e.densify().unwrap_err(), SketchError::EmptySet);
}

#[test]
fn set_hamming_distance_interval_brackets_the_truth_for_identical_and_disjoint_sets() {
    let sk = Sketcher::new(SketchParams::minhash(128, 32, 5).unwrap()).unwrap();
    let a = TokenSet::from_unsorted((0..500).collect());
    let b = TokenSet::from_unsorted((1000..1300).collect());
    let (sa, sb) = (sk.sketch(&a).unwrap(), sk.sketch(&b).unwrap());
    let same = sa.hamming(&sa, 0.95).unwrap();
    assert_eq!(same.value, 0.0);
    let disjoint = sa.hamming(&sb, 0.95).unwrap();
    assert_eq!(disjoint.value, 800.0);
    assert!(disjoint.lower < 800.0 && disjoint.upper == 800.0);
}
