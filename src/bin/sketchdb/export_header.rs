//! The export header's `params`, `tokenizer` and `index` objects: the JSON shapes the export format
//! version 1 fixed, written and read here field by field (the library's public types carry no
//! serde derives, so this format is the CLI's own).
//!
//! `params`: `{"kind":"MinHash"|"BBitMinHash"|"Oph"|"SimHash","family":"MixMultiplyShift",
//! "family_version":1,"seed":u64,"size":u32,"bits":u8,"universe":u64|null}`.
//! `tokenizer`: `{"kind":{"Shingles":{"w":u32}}|{"CharNgrams":{"n":u32}},"seed":u64}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sketchdb::{HashFamily, IndexConfig, SketchKind, SketchParams, Tokenizer, TokenizerKind};

#[derive(Serialize, Deserialize)]
enum KindJson {
    MinHash,
    BBitMinHash,
    Oph,
    SimHash,
}

#[derive(Serialize, Deserialize)]
enum FamilyJson {
    MixMultiplyShift,
}

#[derive(Serialize, Deserialize)]
struct ParamsJson {
    kind: KindJson,
    family: FamilyJson,
    family_version: u16,
    seed: u64,
    size: u32,
    bits: u8,
    universe: Option<u64>,
}

#[derive(Serialize, Deserialize)]
enum TokenizerKindJson {
    Shingles { w: u32 },
    CharNgrams { n: u32 },
}

#[derive(Serialize, Deserialize)]
struct TokenizerJson {
    kind: TokenizerKindJson,
    seed: u64,
}

fn invalid(param: &str, value: impl std::fmt::Display, expected: &str) -> String {
    format!("invalid sketch parameter `{param}` = {value}: {expected}")
}

/// The `params` object of `p`.
pub fn params_to_json(p: &SketchParams) -> Result<Value, String> {
    let kind = match p.kind() {
        SketchKind::MinHash => KindJson::MinHash,
        SketchKind::BBitMinHash => KindJson::BBitMinHash,
        SketchKind::Oph => KindJson::Oph,
        SketchKind::SimHash => KindJson::SimHash,
        other => return Err(format!("sketch kind `{other}` has no export form")),
    };
    let family = match p.family() {
        HashFamily::MixMultiplyShift => FamilyJson::MixMultiplyShift,
        other => return Err(format!("hash family `{other}` has no export form")),
    };
    let j = ParamsJson {
        kind,
        family,
        family_version: p.family_version(),
        seed: p.seed(),
        size: p.size(),
        bits: p.bits(),
        universe: p.universe(),
    };
    serde_json::to_value(j).map_err(|e| e.to_string())
}

/// The validated parameters of a `params` object (errors as `SketchParams::validate` words
/// them).
pub fn params_from_json(v: Value) -> Result<SketchParams, String> {
    let j: ParamsJson = serde_json::from_value(v).map_err(|e| e.to_string())?;
    if j.family_version != HashFamily::CURRENT_VERSION {
        return Err(invalid("family_version", j.family_version, "the hash family version this build computes (1)"));
    }
    let FamilyJson::MixMultiplyShift = j.family;
    let e = |e: sketchdb::SketchError| e.to_string();
    let p = match (j.kind, j.universe) {
        (KindJson::MinHash, _) => SketchParams::minhash(j.size, j.bits, j.seed).map_err(e)?,
        (KindJson::BBitMinHash, None) => SketchParams::bbit(j.size, j.bits, j.seed).map_err(e)?,
        (KindJson::BBitMinHash, Some(d)) => SketchParams::bbit_with_universe(j.size, j.bits, d, j.seed).map_err(e)?,
        (KindJson::Oph, _) => SketchParams::oph(j.size, j.bits, j.seed).map_err(e)?,
        (KindJson::SimHash, _) => {
            if j.size != u32::from(j.bits) {
                return Err(invalid("bits", j.bits, "64 or 128 fingerprint bits"));
            }
            SketchParams::simhash(j.bits, j.seed).map_err(e)?
        }
    };
    if p.kind() != SketchKind::BBitMinHash && j.universe.is_some() {
        return Err(invalid("universe", format!("{:?}", j.universe), "only b-bit MinHash takes a universe"));
    }
    Ok(p)
}

/// The `tokenizer` object of `t`.
pub fn tokenizer_to_json(t: &Tokenizer) -> Result<Value, String> {
    let kind = match t.kind() {
        TokenizerKind::Shingles { w } => TokenizerKindJson::Shingles { w },
        TokenizerKind::CharNgrams { n } => TokenizerKindJson::CharNgrams { n },
        other => return Err(format!("tokenizer {other:?} has no export form")),
    };
    serde_json::to_value(TokenizerJson { kind, seed: t.seed() }).map_err(|e| e.to_string())
}

/// The validated tokenizer of a `tokenizer` object.
pub fn tokenizer_from_json(v: Value) -> Result<Tokenizer, String> {
    let j: TokenizerJson = serde_json::from_value(v).map_err(|e| e.to_string())?;
    match j.kind {
        TokenizerKindJson::Shingles { w } => Tokenizer::shingles(w, j.seed),
        TokenizerKindJson::CharNgrams { n } => Tokenizer::char_ngrams(n, j.seed),
    }
    .map_err(|e| e.to_string())
}

#[derive(Serialize, Deserialize)]
enum IndexJson {
    None,
    SimhashTables { radius: u32 },
    Lsh { threshold: f64, bands: Option<u32>, rows: Option<u32> },
}

/// The `index` object of `i`: `"None"`, `{"SimhashTables":{"radius":u32}}` or
/// `{"Lsh":{"threshold":f64,"bands":u32|null,"rows":u32|null}}`.
pub fn index_to_json(i: &IndexConfig) -> Result<Value, String> {
    let j = match *i {
        IndexConfig::None => IndexJson::None,
        IndexConfig::SimhashTables { radius } => IndexJson::SimhashTables { radius },
        IndexConfig::Lsh { threshold, bands, rows } => IndexJson::Lsh { threshold, bands, rows },
        ref other => return Err(format!("index {other:?} has no export form")),
    };
    serde_json::to_value(j).map_err(|e| e.to_string())
}

/// The index settings of an `index` object (checked with the rest of the configuration).
pub fn index_from_json(v: Value) -> Result<IndexConfig, String> {
    Ok(match serde_json::from_value(v).map_err(|e| e.to_string())? {
        IndexJson::None => IndexConfig::None,
        IndexJson::SimhashTables { radius } => IndexConfig::SimhashTables { radius },
        IndexJson::Lsh { threshold, bands, rows } => IndexConfig::Lsh { threshold, bands, rows },
    })
}
