//! The named presets: each a tokenizer, and for the compatibility presets the hash family,
//! NumPy seed and permutation count of the implementation they reproduce.

use super::super::compat::nemo_murmur_seed;
use super::super::params::HashFamily;
use super::super::tokenize::Tokenizer;
use super::hashes::TokenHash;
use super::steps::{CaseFold, Digits, Normalization, Pipeline, PunctClass, Punctuation, ShortText, Shingles, Tokens};

/// A named recipe preset. Shown by name (`sketchdb recipes`), never persisted: a collection
/// stores its tokenizer and hash family, and its preset is the one whose tokenizer and family
/// those equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// sketchdb's own tokenizer, unchanged (every collection made before recipes has it).
    Sketchdb,
    /// NFC, lower case, whitespace words with ASCII punctuation stripped from their ends, word
    /// 5-grams: the common "lowercase, split on whitespace, 5-grams" recipe.
    Words5,
    /// NFC, lower case, Unicode words (UAX #29), word 5-grams.
    UnicodeWords5,
    /// datasketch `MinHash(num_perm=128, seed=1, scheme="legacy")` over whitespace words.
    Datasketch,
    /// datasketch 2.0's default `affine32` scheme over whitespace words.
    DatasketchAffine32,
    /// text-dedup's `minhash.py --hash_func xxh3`: lower case, `\W` split, word 5-grams.
    TextDedup,
    /// text-dedup's `minhash.py` with its default SHA-1 token hash.
    TextDedupSha1,
    /// text-dedup's `minhash_spark.py` (BigCode): xxh32, uint32 arithmetic mod 2^32 - 5.
    TextDedupSpark,
    /// NeMo Curator's GPU MinHash: character 24-grams of the raw text, MurmurHash3.
    NemoCurator,
    /// Approximately datatrove's `MinhashDedupSignature` (its word tokenizer is a language
    /// model sketchdb does not ship).
    DatatroveLike,
}

/// How a preset relates to another implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compatibility {
    /// sketchdb's own.
    Native,
    /// Shingles and signatures equal the library's bit for bit (golden vectors in the tests).
    Exact {
        /// The library and the version the golden vectors came from.
        reference: &'static str,
    },
    /// Close to the library's recipe, not equal.
    Approximate {
        /// The library, and what differs.
        reference: &'static str,
    },
}

impl Preset {
    /// Every preset, the default first.
    pub const ALL: [Preset; 10] = [
        Preset::Sketchdb,
        Preset::Words5,
        Preset::UnicodeWords5,
        Preset::Datasketch,
        Preset::DatasketchAffine32,
        Preset::TextDedup,
        Preset::TextDedupSha1,
        Preset::TextDedupSpark,
        Preset::NemoCurator,
        Preset::DatatroveLike,
    ];

    /// The preset's name.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Sketchdb => "sketchdb",
            Preset::Words5 => "words-5",
            Preset::UnicodeWords5 => "unicode-words-5",
            Preset::Datasketch => "datasketch",
            Preset::DatasketchAffine32 => "datasketch-affine32",
            Preset::TextDedup => "text-dedup",
            Preset::TextDedupSha1 => "text-dedup-sha1",
            Preset::TextDedupSpark => "text-dedup-spark",
            Preset::NemoCurator => "nemo-curator",
            Preset::DatatroveLike => "datatrove-like",
        }
    }

    /// The preset of a name.
    pub fn from_name(name: &str) -> Option<Preset> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What the preset reproduces.
    pub fn compatibility(self) -> Compatibility {
        match self {
            Preset::Sketchdb | Preset::Words5 | Preset::UnicodeWords5 => Compatibility::Native,
            Preset::Datasketch | Preset::DatasketchAffine32 => Compatibility::Exact { reference: "datasketch 2.0.0" },
            Preset::TextDedup | Preset::TextDedupSha1 | Preset::TextDedupSpark => {
                Compatibility::Exact { reference: "text-dedup 0.4.0" }
            }
            Preset::NemoCurator => Compatibility::Exact {
                reference: "NeMo Curator 1.x GPUMinHash (cuDF >= 25.02 nvtext::minhash), re-implemented",
            },
            Preset::DatatroveLike => Compatibility::Approximate {
                reference: "datatrove MinhashDedupSignature: whitespace words instead of its language word tokenizer; sketchdb's own permutations",
            },
        }
    }

    /// The tokenizer.
    pub(crate) fn tokenizer(self) -> Tokenizer {
        let lower_words = Pipeline::words(5).with_case(CaseFold::Unicode).with_normalization(Normalization::Nfc);
        let text_dedup = Pipeline::words(5)
            .with_case(CaseFold::Unicode)
            .with_tokens(Tokens::NonWordSplit)
            .with_short(ShortText::DropBelow { min: 5 });
        let pipeline = match self {
            Preset::Sketchdb => return Tokenizer::default(),
            Preset::Words5 => lower_words.with_punctuation(Punctuation::StripWordEnds(PunctClass::Ascii)),
            Preset::UnicodeWords5 => lower_words.with_tokens(Tokens::UnicodeWords),
            Preset::Datasketch | Preset::DatasketchAffine32 => Pipeline::words(1).with_hash(TokenHash::Sha1Le32),
            Preset::TextDedup => text_dedup.with_hash(TokenHash::Xxh3Low32 { seed: 0 }),
            Preset::TextDedupSha1 => text_dedup.with_hash(TokenHash::Sha1Le32),
            Preset::TextDedupSpark => text_dedup.with_hash(TokenHash::Xxh32 { seed: 0 }),
            Preset::NemoCurator => {
                let (_, seed, _) = self.signature();
                let murmur = nemo_murmur_seed(seed).unwrap_or_else(|_| unreachable!("the preset's seed is 42"));
                Pipeline::words(1)
                    .with_tokens(Tokens::Text)
                    .with_shingles(Shingles::Chars { n: 24 })
                    .with_hash(TokenHash::Murmur3_32 { seed: murmur })
            }
            Preset::DatatroveLike => Pipeline::words(5)
                .with_normalization(Normalization::NfdStripMarks)
                .with_case(CaseFold::Unicode)
                .with_digits(Digits::Zero)
                .with_punctuation(Punctuation::Space(PunctClass::Unicode))
                .with_short(ShortText::DropBelow { min: 5 })
                .with_hash(TokenHash::Sha1Le64),
        };
        Tokenizer::from_pipeline(pipeline)
    }

    /// The hash family, NumPy seed and permutation count of the implementation reproduced
    /// (sketchdb's own family, with no seed or count of its own, for the others).
    pub(crate) fn signature(self) -> (HashFamily, u64, u32) {
        match self {
            Preset::Datasketch => (HashFamily::DatasketchLegacy, 1, 128),
            Preset::DatasketchAffine32 => (HashFamily::DatasketchAffine32, 1, 128),
            Preset::TextDedup | Preset::TextDedupSha1 => (HashFamily::TextDedup, 42, 250),
            Preset::TextDedupSpark => (HashFamily::TextDedupSpark, 42, 250),
            Preset::NemoCurator => (HashFamily::NemoCurator, 42, 260),
            _ => (HashFamily::MixMultiplyShift, 0, 0),
        }
    }
}
