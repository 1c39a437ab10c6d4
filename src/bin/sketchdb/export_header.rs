//! The export header's `params`, `tokenizer` and `index` objects: the JSON shapes the export format
//! version 1 fixed, written and read here field by field (the library's public types carry no
//! serde derives, so this format is the CLI's own).
//!
//! `params`: `{"kind":"MinHash"|"BBitMinHash"|"Oph"|"SimHash","family":FAMILY,
//! "family_version":1,"seed":u64,"size":u32,"bits":u8,"universe":u64|null}`, FAMILY one of
//! `"MixMultiplyShift"` (sketchdb's own), the compatibility families `"DatasketchLegacy"`,
//! `"TextDedup"`, `"TextDedupSpark"`, `"NemoCurator"`, `"DatasketchAffine32"` (32-bit MinHash)
//! and `"Charikar"` (64-bit SimHash), and `"MixMultiplyShift32"` (sketchdb's 32-bit lane family:
//! MinHash with 32-bit values, b-bit MinHash).
//! `tokenizer`: `{"kind":{"Shingles":{"w":u32}}|{"CharNgrams":{"n":u32}}|{"Recipe":NAME},
//! "seed":u64}`: a recipe's pipeline by its preset name (`sketchdb recipes`), seed 0.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sketchdb::{HashFamily, IndexConfig, Recipe, SketchKind, SketchParams, Tokenizer, TokenizerKind};

#[derive(Serialize, Deserialize)]
enum KindJson {
    MinHash,
    BBitMinHash,
    Oph,
    SimHash,
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq)]
enum FamilyJson {
    MixMultiplyShift,
    DatasketchLegacy,
    TextDedup,
    TextDedupSpark,
    NemoCurator,
    DatasketchAffine32,
    Charikar,
    MixMultiplyShift32,
}

impl FamilyJson {
    const ALL: [(FamilyJson, HashFamily); 8] = [
        (FamilyJson::MixMultiplyShift, HashFamily::MixMultiplyShift),
        (FamilyJson::DatasketchLegacy, HashFamily::DatasketchLegacy),
        (FamilyJson::TextDedup, HashFamily::TextDedup),
        (FamilyJson::TextDedupSpark, HashFamily::TextDedupSpark),
        (FamilyJson::NemoCurator, HashFamily::NemoCurator),
        (FamilyJson::DatasketchAffine32, HashFamily::DatasketchAffine32),
        (FamilyJson::Charikar, HashFamily::Charikar),
        (FamilyJson::MixMultiplyShift32, HashFamily::MixMultiplyShift32),
    ];

    fn family(self) -> HashFamily {
        Self::ALL.iter().find(|(j, _)| *j == self).map_or(HashFamily::MixMultiplyShift, |(_, f)| *f)
    }

    fn of(family: HashFamily) -> Option<FamilyJson> {
        Self::ALL.iter().find(|(_, f)| *f == family).map(|(j, _)| *j)
    }
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
    Recipe(String),
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
    let family =
        FamilyJson::of(p.family()).ok_or_else(|| format!("hash family `{}` has no export form", p.family()))?;
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
    let e = |e: sketchdb::SketchError| e.to_string();
    let family = j.family.family();
    if !matches!(family, HashFamily::MixMultiplyShift | HashFamily::MixMultiplyShift32) {
        let p = match (j.kind, family) {
            (KindJson::SimHash, HashFamily::Charikar) => SketchParams::simhash_charikar().map_err(e)?,
            (KindJson::MinHash, f) if f.is_compat() => SketchParams::compat(f, j.size, j.seed).map_err(e)?,
            _ => return Err(invalid("family", family, "charikar for SimHash, a compatibility family for MinHash")),
        };
        if (p.size(), p.bits(), p.seed(), j.universe) != (j.size, j.bits, j.seed, None) {
            let found = format!("size {} bits {} seed {} universe {:?}", j.size, j.bits, j.seed, j.universe);
            return Err(invalid("params", found, &format!("the {family} family's: {p}")));
        }
        return Ok(p);
    }
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
    if family == HashFamily::MixMultiplyShift32 {
        return p.with_family(family).map_err(e);
    }
    Ok(p)
}

/// The `tokenizer` object of `t` (in a collection of hash family `family`, which tells
/// compatibility presets with one pipeline apart).
pub fn tokenizer_to_json(t: &Tokenizer, family: HashFamily) -> Result<Value, String> {
    let kind = match t.kind() {
        TokenizerKind::Shingles { w } => TokenizerKindJson::Shingles { w },
        TokenizerKind::CharNgrams { n } => TokenizerKindJson::CharNgrams { n },
        _ => match Recipe::identify(*t, family).as_preset() {
            Some(p) if Recipe::of(p).tokenizer() == *t => TokenizerKindJson::Recipe(p.name().to_string()),
            _ => return Err("a custom recipe (one that is no preset) has no export form".to_string()),
        },
    };
    serde_json::to_value(TokenizerJson { kind, seed: t.seed() }).map_err(|e| e.to_string())
}

/// The validated tokenizer of a `tokenizer` object.
pub fn tokenizer_from_json(v: Value) -> Result<Tokenizer, String> {
    let j: TokenizerJson = serde_json::from_value(v).map_err(|e| e.to_string())?;
    match j.kind {
        TokenizerKindJson::Shingles { w } => Tokenizer::shingles(w, j.seed),
        TokenizerKindJson::CharNgrams { n } => Tokenizer::char_ngrams(n, j.seed),
        TokenizerKindJson::Recipe(name) => {
            let t = Recipe::preset(&name).map_err(|e| e.to_string())?.tokenizer();
            if t.seed() != j.seed {
                return Err(format!("recipe `{name}` hashes tokens with seed {}, not {}", t.seed(), j.seed));
            }
            Ok(t)
        }
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
