//! Compatibility presets against golden vectors made once by the reference libraries
//! (`tests/fixtures/compat/make_fixtures.py` says how and with which versions): on 1,000
//! documents, every signature equals the reference's, and the documents that have no shingles
//! are exactly the ones the reference gave an empty signature.

use std::collections::BTreeMap;

use serde_json::Value;
use sketchdb::{Recipe, Sketch, SketchError, Sketcher, TokenSet};
use xxhash_rust::xxh3::xxh3_64;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/compat");

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/{name}.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn docs() -> Vec<String> {
    let v = load("docs");
    v["docs"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
}

/// The fixture's digest of a signature: xxh3-64 of the values as little-endian u32.
fn digest(values: &[u64]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|&v| u32::try_from(v).unwrap().to_le_bytes()).collect();
    format!("{:016x}", xxh3_64(&bytes))
}

fn check(preset: &str) {
    let fixture = load(preset);
    let recipe = Recipe::preset(preset).unwrap();
    let k = u32::try_from(fixture["k"].as_u64().unwrap()).unwrap();
    let params = recipe.compat_params(None).unwrap().expect("a compatibility preset");
    assert_eq!(params.size(), k, "{preset}: the reference's permutation count");
    assert_eq!(params.seed(), fixture["seed"].as_u64().unwrap(), "{preset}: the reference's seed");
    let sketcher = Sketcher::new(params).unwrap();
    let docs = docs();
    assert_eq!(docs.len(), 1000);
    let digests = fixture["digests"].as_array().unwrap();
    let full: BTreeMap<usize, Vec<u64>> = fixture["full"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(i, v)| (i.parse().unwrap(), v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()))
        .collect();
    let (mut matched, mut empty) = (0, 0);
    for (i, text) in docs.iter().enumerate() {
        let tokens = TokenSet::from_unsorted(recipe.tokens(text));
        match (sketcher.sketch(&tokens), digests[i].as_str()) {
            (Ok(Sketch::MinHash(m)), Some(want)) => {
                if let Some(values) = full.get(&i) {
                    assert_eq!(m.values(), &values[..], "{preset}: document {i}'s signature");
                }
                assert_eq!(digest(m.values()), want, "{preset}: document {i} ({text:?})");
                matched += 1;
            }
            (Err(SketchError::EmptySet), None) => empty += 1,
            (got, want) => panic!("{preset}: document {i} ({text:?}): got {got:?}, reference {want:?}"),
        }
    }
    assert_eq!(matched + empty, 1000);
    assert!(matched >= 800, "{preset}: only {matched} non-empty documents");
    assert_eq!(fixture["empty"].as_array().unwrap().len(), empty);
}

#[test]
fn datasketch_legacy_signatures_equal_datasketch() {
    check("datasketch");
}

#[test]
fn datasketch_affine32_signatures_equal_datasketch() {
    check("datasketch-affine32");
}

#[test]
fn text_dedup_signatures_equal_text_dedup() {
    check("text-dedup");
}

#[test]
fn text_dedup_sha1_signatures_equal_text_dedup() {
    check("text-dedup-sha1");
}

#[test]
fn text_dedup_spark_signatures_equal_text_dedup_spark() {
    check("text-dedup-spark");
}

#[test]
fn nemo_curator_signatures_equal_the_reimplemented_reference() {
    check("nemo-curator");
}

#[test]
fn reference_shingles_equal_the_recipes() {
    let docs = docs();
    for (preset, fixture) in [("text-dedup", load("text-dedup")), ("nemo-curator", load("nemo-curator"))] {
        let recipe = Recipe::preset(preset).unwrap();
        for (i, want) in fixture["shingles"].as_object().unwrap() {
            let want: Vec<&str> = want.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
            let i: usize = i.parse().unwrap();
            assert_eq!(recipe.shingles(&docs[i]), want, "{preset}: document {i}");
        }
    }
}
