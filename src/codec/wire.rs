//! Wire structs: the postcard shapes of the public configuration types.
//!
//! The public types ([`SketchParams`], [`Tokenizer`], the db layer's `IndexConfig`, the
//! index's `LshParams`) carry no serde derives, so renaming or reordering them cannot change
//! a file. Their stored bytes are these plain structs, whose field order and enum variant
//! order are the format (`storage-format.md` sections 3.1 and 9): fields may never be
//! reordered or removed, variants only appended.
//!
//! Conversions live with the public type's owner where that layer sits above the codec
//! (`IndexConfig` in `db`, `LshParams` in `index`); the sketch layer sits below, so its
//! conversions are here. Every conversion from a wire struct is unvalidated: decoders run
//! the public type's `validate` afterwards, as they did on the derived types.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::sketch::params::{HashFamily, SketchKind, SketchParams};
use crate::sketch::tokenize::{Tokenizer, TokenizerKind};

/// A type stored through a wire struct: [`via`] encodes the field as `Self::Wire`.
pub(crate) trait Wire: Clone + From<Self::Wire> {
    /// The stored shape.
    type Wire: Serialize + DeserializeOwned + From<Self>;
}

/// `#[serde(with = "crate::codec::wire::via")]` on a field of a [`Wire`] type encodes it
/// exactly as its wire struct.
pub(crate) mod via {
    use super::*;

    pub(crate) fn serialize<T: Wire, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        T::Wire::from(value.clone()).serialize(s)
    }

    pub(crate) fn deserialize<'de, T: Wire, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        T::Wire::deserialize(d).map(T::from)
    }
}

/// [`SketchKind`] as stored: the variant index (0 MinHash .. 3 SimHash), not its `code()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum SketchKindWire {
    MinHash,
    BBitMinHash,
    Oph,
    SimHash,
}

/// [`HashFamily`] as stored: variant index 0 MixMultiplyShift.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum HashFamilyWire {
    MixMultiplyShift,
}

/// [`SketchParams`] as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SketchParamsWire {
    pub kind: SketchKindWire,
    pub family: HashFamilyWire,
    pub family_version: u16,
    pub seed: u64,
    pub size: u32,
    pub bits: u8,
    pub universe: Option<u64>,
}

/// [`TokenizerKind`] as stored: 0 Shingles, 1 CharNgrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum TokenizerKindWire {
    Shingles { w: u32 },
    CharNgrams { n: u32 },
}

/// [`Tokenizer`] as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TokenizerWire {
    pub kind: TokenizerKindWire,
    pub seed: u64,
}

/// The db layer's `IndexConfig` as stored: 0 None, 1 SimhashTables, 2 Lsh.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum IndexConfigWire {
    None,
    SimhashTables { radius: u32 },
    Lsh { threshold: f64, bands: Option<u32>, rows: Option<u32> },
}

/// A collection's settings (`CollectionDef::settings`, postcard without an envelope).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SettingsWire {
    pub tokenizer: TokenizerWire,
    pub index: IndexConfigWire,
}

/// The index's `LshParams` as stored (inside a band-key scheme).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LshParamsWire {
    pub bands: u32,
    pub rows: u32,
}

impl From<SketchKind> for SketchKindWire {
    fn from(k: SketchKind) -> Self {
        match k {
            SketchKind::MinHash => SketchKindWire::MinHash,
            SketchKind::BBitMinHash => SketchKindWire::BBitMinHash,
            SketchKind::Oph => SketchKindWire::Oph,
            SketchKind::SimHash => SketchKindWire::SimHash,
        }
    }
}

impl From<SketchKindWire> for SketchKind {
    fn from(k: SketchKindWire) -> Self {
        match k {
            SketchKindWire::MinHash => SketchKind::MinHash,
            SketchKindWire::BBitMinHash => SketchKind::BBitMinHash,
            SketchKindWire::Oph => SketchKind::Oph,
            SketchKindWire::SimHash => SketchKind::SimHash,
        }
    }
}

impl From<HashFamily> for HashFamilyWire {
    fn from(f: HashFamily) -> Self {
        match f {
            HashFamily::MixMultiplyShift => HashFamilyWire::MixMultiplyShift,
        }
    }
}

impl From<HashFamilyWire> for HashFamily {
    fn from(f: HashFamilyWire) -> Self {
        match f {
            HashFamilyWire::MixMultiplyShift => HashFamily::MixMultiplyShift,
        }
    }
}

impl From<SketchParams> for SketchParamsWire {
    fn from(p: SketchParams) -> Self {
        SketchParamsWire {
            kind: p.kind().into(),
            family: p.family().into(),
            family_version: p.family_version(),
            seed: p.seed(),
            size: p.size(),
            bits: p.bits(),
            universe: p.universe(),
        }
    }
}

impl From<SketchParamsWire> for SketchParams {
    /// Unvalidated: check with [`SketchParams::validate`].
    fn from(w: SketchParamsWire) -> Self {
        SketchParams::from_parts(w.kind.into(), w.family.into(), w.family_version, w.seed, w.size, w.bits, w.universe)
    }
}

impl Wire for SketchParams {
    type Wire = SketchParamsWire;
}

impl From<TokenizerKind> for TokenizerKindWire {
    fn from(k: TokenizerKind) -> Self {
        match k {
            TokenizerKind::Shingles { w } => TokenizerKindWire::Shingles { w },
            TokenizerKind::CharNgrams { n } => TokenizerKindWire::CharNgrams { n },
        }
    }
}

impl From<TokenizerKindWire> for TokenizerKind {
    fn from(k: TokenizerKindWire) -> Self {
        match k {
            TokenizerKindWire::Shingles { w } => TokenizerKind::Shingles { w },
            TokenizerKindWire::CharNgrams { n } => TokenizerKind::CharNgrams { n },
        }
    }
}

impl From<Tokenizer> for TokenizerWire {
    fn from(t: Tokenizer) -> Self {
        TokenizerWire { kind: t.kind().into(), seed: t.seed() }
    }
}

impl From<TokenizerWire> for Tokenizer {
    /// Unvalidated: check with [`Tokenizer::validate`].
    fn from(w: TokenizerWire) -> Self {
        Tokenizer::from_parts(w.kind.into(), w.seed)
    }
}

impl Wire for Tokenizer {
    type Wire = TokenizerWire;
}
