//! Standard SimHash: the `Charikar` family's fingerprint equals the textbook algorithm written
//! out below over the same features (each feature's own 64-bit hash votes its bits, weighted,
//! no re-mixing), while sketchdb's own SimHash family keeps its mixing.

use sketchdb::{HashFamily, Recipe, Sketch, SketchParams, Sketcher};

/// Charikar's fingerprint, as in the textbook: v[j] += w when bit j of the feature's hash is
/// 1, else -= w; bit j of the fingerprint is 1 when v[j] > 0.
fn textbook(features: &[(u64, f64)]) -> u64 {
    let mut v = [0f64; 64];
    for &(h, w) in features {
        for (j, vj) in v.iter_mut().enumerate() {
            if h >> j & 1 == 1 {
                *vj += w;
            } else {
                *vj -= w;
            }
        }
    }
    v.iter().enumerate().fold(0u64, |fp, (j, &vj)| if vj > 0.0 { fp | 1 << j } else { fp })
}

fn fingerprint(s: Sketch) -> u64 {
    let Sketch::SimHash(fp) = s else { panic!("a SimHash sketch") };
    u64::try_from(fp.value()).unwrap()
}

#[test]
fn charikar_equals_the_textbook_on_text_features() {
    let sketcher = Sketcher::new(SketchParams::simhash_charikar().unwrap()).unwrap();
    let words = Recipe::preset("words-5").unwrap();
    let texts = [
        "the quick brown fox jumps over the lazy dog and the quick brown fox jumps again",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z",
        "Café déjà-vu: naïve façade, Straße und 日本語 text with emoji 🙂 and more words here",
        "short",
    ];
    for text in texts {
        let tokens = words.tokens(text);
        // Term frequency: each occurrence of a shingle weighs 1.
        let features: Vec<(u64, f64)> = tokens.iter().map(|&h| (h, 1.0)).collect();
        let fp = fingerprint(sketcher.sketch_multiset(&tokens).unwrap());
        assert_eq!(fp, textbook(&features), "{text:?}");
        assert_eq!(fingerprint(sketcher.sketch_weighted(&features).unwrap()), fp, "{text:?}");
    }
}

#[test]
fn charikar_equals_the_textbook_with_weights() {
    let sketcher = Sketcher::new(SketchParams::simhash_charikar().unwrap()).unwrap();
    let mut state = 0x1234_5678_9abc_def0u64;
    for n in [1usize, 2, 3, 10, 100, 1000] {
        let features: Vec<(u64, f64)> = (0..n)
            .map(|i| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (state ^ (state >> 29), 0.25 + (i % 7) as f64)
            })
            .collect();
        assert_eq!(fingerprint(sketcher.sketch_weighted(&features).unwrap()), textbook(&features), "n = {n}");
    }
}

#[test]
fn sketchdbs_own_simhash_still_mixes() {
    let own = Sketcher::new(SketchParams::simhash(64, 0).unwrap()).unwrap();
    let features = [(0xFFFF_0000_FFFF_0000u64, 1.0)];
    // One feature: the textbook fingerprint is the feature hash itself; the mixed one is not.
    assert_eq!(textbook(&features), 0xFFFF_0000_FFFF_0000);
    assert_ne!(fingerprint(own.sketch_weighted(&features).unwrap()), 0xFFFF_0000_FFFF_0000);
    let p = SketchParams::simhash_charikar().unwrap();
    assert_eq!(p.family(), HashFamily::Charikar);
    assert!(p.check_compatible(&SketchParams::simhash(64, 0).unwrap()).is_err());
}
