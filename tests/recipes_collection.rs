//! A collection keeps its recipe: it is stored with the collection, every later insert and
//! query of text cuts text the same way after a reopen, and files written before recipes open
//! with the `sketchdb` recipe they were made with.

use std::path::Path;

use sketchdb::{
    CollectionConfig, Database, HashFamily, IndexConfig, Query, Recipe, Sketch, SketchParams, Sketcher, TokenSet,
};

const DOCS: [&str; 4] = [
    "The quick brown fox jumps over the lazy dog, again and again.",
    "the QUICK brown fox jumps over the lazy dog; again and again!",
    "Entirely different words make an entirely different document here.",
    "Café déjà-vu: naïve façade, Straße und 日本語 text 🙂 with emoji.",
];

fn sketch_of(params: SketchParams, recipe: &Recipe, text: &str) -> Sketch {
    Sketcher::new(params).unwrap().sketch(&TokenSet::from_unsorted(recipe.tokens(text))).unwrap()
}

#[test]
fn every_preset_is_stored_and_cuts_text_the_same_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sketchdb");
    let base = SketchParams::minhash(64, 32, 5).unwrap();
    {
        let db = Database::create(&path).unwrap();
        for recipe in Recipe::presets() {
            let config = CollectionConfig::new(base).with_recipe(recipe).with_index(IndexConfig::lsh(0.5));
            let c = db.create_collection(recipe.name(), config).unwrap();
            for (i, d) in DOCS.iter().enumerate() {
                // A text with no shingle under this recipe is refused, as an empty set is.
                let _ = c.insert_text(format!("d{i}"), d);
            }
        }
    }
    let db = Database::open(&path).unwrap();
    for recipe in Recipe::presets() {
        let c = db.collection(recipe.name()).unwrap();
        assert_eq!(c.config().recipe(), recipe, "{} reopened", recipe.name());
        let params = *c.params();
        match recipe.compat_params(None).unwrap() {
            Some(p) => assert_eq!(params, p, "{}: the compatibility family is stored", recipe.name()),
            None => assert_eq!(params, base),
        }
        for (i, d) in DOCS.iter().enumerate() {
            let want = sketch_of(params, &recipe, d);
            assert_eq!(c.sketch_of(format!("d{i}")).unwrap(), want, "{} d{i}", recipe.name());
            // A query of the same text finds the document with similarity 1.
            let hits = c.query(&Query::threshold(want.clone(), 0.99)).unwrap().hits;
            assert!(hits.iter().any(|h| h.key_str() == Some(&format!("d{i}"))), "{} d{i}", recipe.name());
        }
    }
}

#[test]
fn words_5_finds_a_case_and_punctuation_variant_that_sketchdb_also_finds() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("w.sketchdb")).unwrap();
    let params = SketchParams::minhash(128, 64, 3).unwrap();
    let c = db.create_collection("w", CollectionConfig::new(params).with_recipe(Recipe::preset("words-5").unwrap())).unwrap();
    c.insert_text("a", DOCS[0]).unwrap();
    c.insert_text("b", DOCS[1]).unwrap();
    let a = c.sketch_of("a").unwrap();
    let b = c.sketch_of("b").unwrap();
    // Same words after lower-casing and stripping word-end punctuation: identical shingle sets.
    assert_eq!(a, b);
}

#[test]
fn a_compat_family_needs_32_bit_minhash_and_a_numpy_seed() {
    assert!(SketchParams::compat(HashFamily::TextDedup, 250, 42).is_ok());
    assert!(SketchParams::compat(HashFamily::TextDedup, 250, 1 << 32).is_err());
    assert!(SketchParams::compat(HashFamily::Charikar, 128, 1).is_err());
    assert!(SketchParams::compat(HashFamily::MixMultiplyShift, 128, 1).is_ok());
    assert!(SketchParams::compat(HashFamily::DatasketchLegacy, 0, 1).is_err());
}

#[test]
fn files_made_before_recipes_open_with_the_sketchdb_recipe() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v1.sketchdb");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sketchdb");
    std::fs::copy(&src, &path).unwrap();
    let db = Database::open_read_only(&path).unwrap();
    let sketchdb = Recipe::preset("sketchdb").unwrap();
    for name in ["minhash", "bbit", "simhash"] {
        let c = db.collection(name).unwrap();
        assert_eq!(c.config().recipe(), sketchdb, "{name}");
        assert_eq!(c.params().family(), HashFamily::MixMultiplyShift);
    }
    // The oph collection has 3-character grams with token seed 5: a custom recipe.
    assert_eq!(db.collection("oph").unwrap().config().recipe().name(), "custom");
}
