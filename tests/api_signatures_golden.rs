//! The golden fixture shared with the Python tests (`python/tests/test_golden.py` reads the
//! same `tests/fixtures/golden_signatures.json`): for fixed texts and parameters of every
//! kind, the signature bytes, the pairwise estimates with their intervals and the LSH band
//! keys that the Rust API computes. Also: the public band-key scheme is the one a created
//! LSH index records, and a collection stores exactly `signature::encode`'s bytes.
//!
//! `SKETCHDB_BLESS=1 cargo test --test api_signatures_golden` rewrites the fixture; without
//! it the test compares, so a change to any signature, estimate or band key fails here and
//! in pytest.

use serde_json::{Value, json};
use sketchdb::lsh::index_band_scheme;
use sketchdb::recipes::{DEFAULT_SEED, default_params};
use sketchdb::{
    CollectionConfig, Database, HashFamily, IndexConfig, SketchKind, SketchParams, Sketcher, Tokenizer, signature,
};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden_signatures.json");

const TEXTS: [&str; 6] = [
    "the quick brown fox jumps over the lazy dog near the river bank",
    "the quick brown fox jumped over the lazy dog near the river bank",
    "a completely different sentence about databases and sketches of sets",
    "Ünïcode wörds, CJK 漢字テキスト and emoji 🦀 in one line of text here",
    "the quick brown fox jumps over the lazy cat near the river bank today",
    "short text with exactly seven words in it",
];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// (kind name, kind, k, bits, LSH threshold or none, hash family when not the default)
type Case = (&'static str, SketchKind, u32, u8, Option<f64>, Option<HashFamily>);

fn cases() -> Vec<Case> {
    vec![
        ("minhash", SketchKind::MinHash, 64, 32, Some(0.8), None),
        ("minhash", SketchKind::MinHash, 64, 32, Some(0.8), Some(HashFamily::MixMultiplyShift)),
        ("minhash", SketchKind::MinHash, 32, 64, Some(0.5), None),
        ("bbit", SketchKind::BBitMinHash, 128, 8, Some(0.7), None),
        ("bbit", SketchKind::BBitMinHash, 128, 8, Some(0.7), Some(HashFamily::MixMultiplyShift)),
        ("oph", SketchKind::Oph, 128, 16, Some(0.9), None),
        ("simhash", SketchKind::SimHash, 0, 64, None, None),
    ]
}

/// A case's parameters: the kind's default family unless the case names another.
fn params_of(kind: SketchKind, k: u32, bits: u8, family: Option<HashFamily>) -> SketchParams {
    let params = default_params(kind, k, Some(bits), DEFAULT_SEED).unwrap();
    family.map_or(params, |f| params.with_family(f).unwrap())
}

fn compute() -> Value {
    let tokenizer = Tokenizer::shingles(3, 0).unwrap();
    let mut out = Vec::new();
    for (name, kind, k, bits, lsh, family) in cases() {
        let params = params_of(kind, k, bits, family);
        let sketcher = Sketcher::new(params).unwrap();
        let sketches: Vec<_> = TEXTS.iter().map(|t| sketcher.sketch_text(&tokenizer, t).unwrap()).collect();
        let sigs: Vec<String> = sketches.iter().map(|s| hex(&signature::encode(s))).collect();
        let mut estimates = Vec::new();
        for i in 0..TEXTS.len() {
            for j in i + 1..TEXTS.len() {
                let e = sketches[i].similarity(&sketches[j], 0.95).unwrap();
                estimates.push(json!([i, j, e.value, e.lower, e.upper]));
            }
        }
        let band_keys = lsh.map(|t| {
            let scheme = index_band_scheme(&params, t, None, None).unwrap();
            let keys: Vec<Vec<u64>> = sketches.iter().map(|s| scheme.sketch_keys(s).unwrap()).collect();
            json!({"threshold": t, "bands": scheme.params.bands, "rows": scheme.params.rows, "keys": keys})
        });
        out.push(json!({
            "kind": name, "k": k, "bits": bits, "seed": DEFAULT_SEED, "family": params.family().name(),
            "shingle": 3, "token_seed": 0,
            "signatures": sigs, "estimates": estimates, "band_keys": band_keys,
        }));
    }
    json!({"texts": TEXTS, "level": 0.95, "cases": out})
}

#[test]
fn golden_signatures_estimates_and_band_keys() {
    // Compared as text: floats are written in their shortest round-trip form, which Python's
    // json reads back exactly (serde_json's default parser may be an ulp off).
    let got = serde_json::to_string_pretty(&compute()).unwrap() + "\n";
    if std::env::var_os("SKETCHDB_BLESS").is_some() {
        std::fs::write(FIXTURE, &got).unwrap();
    }
    let want = std::fs::read_to_string(FIXTURE).unwrap();
    assert!(got == want, "the Rust API's signatures, estimates or band keys changed (SKETCHDB_BLESS=1 to accept)");
}

/// A collection stores `signature::encode`'s bytes, and its LSH index records the scheme
/// `index_band_scheme` returns, so the public band keys are the index's.
#[test]
fn collections_store_signature_bytes_and_index_the_public_band_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("g.sketchdb")).unwrap();
    let tokenizer = Tokenizer::shingles(3, 0).unwrap();
    for (i, (_, kind, k, bits, lsh, family)) in cases().into_iter().enumerate() {
        let params = params_of(kind, k, bits, family);
        let index = lsh.map_or(IndexConfig::None, IndexConfig::lsh);
        let config = CollectionConfig::new(params).with_tokenizer(tokenizer).with_index(index);
        let c = db.create_collection(&format!("c{i}"), config).unwrap();
        let sketcher = Sketcher::new(params).unwrap();
        for (j, t) in TEXTS.iter().enumerate() {
            c.insert_text(format!("t{j}"), t).unwrap();
            let stored = c.get(format!("t{j}")).unwrap().unwrap().sketch;
            let direct = sketcher.sketch_text(&tokenizer, t).unwrap();
            assert_eq!(signature::encode(&stored), signature::encode(&direct));
            assert_eq!(signature::decode(&params, &signature::encode(&direct)).unwrap(), direct);
        }
        assert_eq!(c.stats().unwrap().record_width, signature::width(&params));
        match lsh {
            Some(t) => {
                let scheme = c.lsh_scheme().unwrap().expect("an LSH index");
                assert_eq!(scheme, index_band_scheme(&params, t, None, None).unwrap());
            }
            None => assert!(c.lsh_scheme().unwrap().is_none()),
        }
    }
}
