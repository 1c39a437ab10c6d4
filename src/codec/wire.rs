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
use crate::sketch::recipe::hashes::TokenHash;
use crate::sketch::recipe::steps::{
    CaseFold, Digits, Normalization, Pipeline, PunctClass, Punctuation, Shingles, ShortText, Tokens,
};
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

/// [`HashFamily`] as stored: variant index 0 MixMultiplyShift, then the compatibility
/// families 1 DatasketchLegacy .. 5 DatasketchAffine32, 6 Charikar and 7 MixMultiplyShift32
/// (index = code - 1). Variants are only appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum HashFamilyWire {
    MixMultiplyShift,
    DatasketchLegacy,
    TextDedup,
    TextDedupSpark,
    NemoCurator,
    DatasketchAffine32,
    Charikar,
    MixMultiplyShift32,
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

/// [`TokenizerKind`] as stored: 0 Shingles, 1 CharNgrams, 2 Pipeline (a recipe).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum TokenizerKindWire {
    Shingles { w: u32 },
    CharNgrams { n: u32 },
    Pipeline(PipelineWire),
}

/// A recipe's [`Pipeline`] as stored: one field per step, in step order. Every step enum's
/// variant index is its declaration order (storage-format.md section 8.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PipelineWire {
    pub normalization: NormalizationWire,
    pub case: CaseFoldWire,
    pub digits: DigitsWire,
    pub punctuation: PunctuationWire,
    pub tokens: TokensWire,
    pub shingles: ShinglesWire,
    pub short: ShortTextWire,
    pub hash: TokenHashWire,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum NormalizationWire {
    None,
    Nfc,
    Nfkc,
    NfdStripMarks,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum CaseFoldWire {
    None,
    Ascii,
    Unicode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum DigitsWire {
    Keep,
    Zero,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum PunctClassWire {
    Ascii,
    Unicode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum PunctuationWire {
    Keep,
    StripWordEnds(PunctClassWire),
    Space(PunctClassWire),
    Split(PunctClassWire),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum TokensWire {
    Whitespace,
    UnicodeWords,
    NonWordSplit,
    Text,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ShinglesWire {
    Words { n: u32 },
    Chars { n: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ShortTextWire {
    One,
    DropBelow { min: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum TokenHashWire {
    Xxh3_64 { seed: u64 },
    Xxh3Low32 { seed: u64 },
    Xxh32 { seed: u32 },
    Sha1Le32,
    Sha1Le64,
    Murmur3_32 { seed: u32 },
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

/// Pairs each public enum with its wire enum, both ways, variant by variant.
macro_rules! wire_enum {
    ($public:ident <=> $wire:ident { $($v:ident),* $(,)? }) => {
        impl From<$public> for $wire {
            fn from(x: $public) -> Self {
                match x { $($public::$v => $wire::$v),* }
            }
        }
        impl From<$wire> for $public {
            fn from(x: $wire) -> Self {
                match x { $($wire::$v => $public::$v),* }
            }
        }
    };
}

wire_enum!(HashFamily <=> HashFamilyWire {
    MixMultiplyShift, DatasketchLegacy, TextDedup, TextDedupSpark, NemoCurator, DatasketchAffine32, Charikar,
    MixMultiplyShift32
});
wire_enum!(Normalization <=> NormalizationWire { None, Nfc, Nfkc, NfdStripMarks });
wire_enum!(CaseFold <=> CaseFoldWire { None, Ascii, Unicode });
wire_enum!(Digits <=> DigitsWire { Keep, Zero });
wire_enum!(PunctClass <=> PunctClassWire { Ascii, Unicode });
wire_enum!(Tokens <=> TokensWire { Whitespace, UnicodeWords, NonWordSplit, Text });

impl From<Punctuation> for PunctuationWire {
    fn from(p: Punctuation) -> Self {
        match p {
            Punctuation::Keep => PunctuationWire::Keep,
            Punctuation::StripWordEnds(c) => PunctuationWire::StripWordEnds(c.into()),
            Punctuation::Space(c) => PunctuationWire::Space(c.into()),
            Punctuation::Split(c) => PunctuationWire::Split(c.into()),
        }
    }
}

impl From<PunctuationWire> for Punctuation {
    fn from(p: PunctuationWire) -> Self {
        match p {
            PunctuationWire::Keep => Punctuation::Keep,
            PunctuationWire::StripWordEnds(c) => Punctuation::StripWordEnds(c.into()),
            PunctuationWire::Space(c) => Punctuation::Space(c.into()),
            PunctuationWire::Split(c) => Punctuation::Split(c.into()),
        }
    }
}

impl From<Shingles> for ShinglesWire {
    fn from(s: Shingles) -> Self {
        match s {
            Shingles::Words { n } => ShinglesWire::Words { n },
            Shingles::Chars { n } => ShinglesWire::Chars { n },
        }
    }
}

impl From<ShinglesWire> for Shingles {
    fn from(s: ShinglesWire) -> Self {
        match s {
            ShinglesWire::Words { n } => Shingles::Words { n },
            ShinglesWire::Chars { n } => Shingles::Chars { n },
        }
    }
}

impl From<ShortText> for ShortTextWire {
    fn from(s: ShortText) -> Self {
        match s {
            ShortText::One => ShortTextWire::One,
            ShortText::DropBelow { min } => ShortTextWire::DropBelow { min },
        }
    }
}

impl From<ShortTextWire> for ShortText {
    fn from(s: ShortTextWire) -> Self {
        match s {
            ShortTextWire::One => ShortText::One,
            ShortTextWire::DropBelow { min } => ShortText::DropBelow { min },
        }
    }
}

impl From<TokenHash> for TokenHashWire {
    fn from(h: TokenHash) -> Self {
        match h {
            TokenHash::Xxh3_64 { seed } => TokenHashWire::Xxh3_64 { seed },
            TokenHash::Xxh3Low32 { seed } => TokenHashWire::Xxh3Low32 { seed },
            TokenHash::Xxh32 { seed } => TokenHashWire::Xxh32 { seed },
            TokenHash::Sha1Le32 => TokenHashWire::Sha1Le32,
            TokenHash::Sha1Le64 => TokenHashWire::Sha1Le64,
            TokenHash::Murmur3_32 { seed } => TokenHashWire::Murmur3_32 { seed },
        }
    }
}

impl From<TokenHashWire> for TokenHash {
    fn from(h: TokenHashWire) -> Self {
        match h {
            TokenHashWire::Xxh3_64 { seed } => TokenHash::Xxh3_64 { seed },
            TokenHashWire::Xxh3Low32 { seed } => TokenHash::Xxh3Low32 { seed },
            TokenHashWire::Xxh32 { seed } => TokenHash::Xxh32 { seed },
            TokenHashWire::Sha1Le32 => TokenHash::Sha1Le32,
            TokenHashWire::Sha1Le64 => TokenHash::Sha1Le64,
            TokenHashWire::Murmur3_32 { seed } => TokenHash::Murmur3_32 { seed },
        }
    }
}

impl From<Pipeline> for PipelineWire {
    fn from(p: Pipeline) -> Self {
        PipelineWire {
            normalization: p.normalization.into(),
            case: p.case.into(),
            digits: p.digits.into(),
            punctuation: p.punctuation.into(),
            tokens: p.tokens.into(),
            shingles: p.shingles.into(),
            short: p.short.into(),
            hash: p.hash.into(),
        }
    }
}

impl From<PipelineWire> for Pipeline {
    /// Unvalidated: check with [`Pipeline::validate`].
    fn from(w: PipelineWire) -> Self {
        Pipeline::words(1)
            .with_normalization(w.normalization.into())
            .with_case(w.case.into())
            .with_digits(w.digits.into())
            .with_punctuation(w.punctuation.into())
            .with_tokens(w.tokens.into())
            .with_shingles(w.shingles.into())
            .with_short(w.short.into())
            .with_hash(w.hash.into())
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
            TokenizerKind::Pipeline(p) => TokenizerKindWire::Pipeline(p.into()),
        }
    }
}

impl From<TokenizerKindWire> for TokenizerKind {
    fn from(k: TokenizerKindWire) -> Self {
        match k {
            TokenizerKindWire::Shingles { w } => TokenizerKind::Shingles { w },
            TokenizerKindWire::CharNgrams { n } => TokenizerKind::CharNgrams { n },
            TokenizerKindWire::Pipeline(p) => TokenizerKind::Pipeline(p.into()),
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
