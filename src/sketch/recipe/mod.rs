//! Named text recipes: how text becomes tokens ([`Pipeline`]'s steps, or sketchdb's original
//! tokenizer), and for the compatibility presets the hash family that makes the signatures
//! equal another implementation's. `docs/recipes.md` lists every preset.

pub(crate) mod hashes;
pub(crate) mod presets;
pub(crate) mod steps;

use super::error::SketchError;
use super::params::{HashFamily, SketchParams};
use super::tokenize::{Tokenizer, TokenizerKind};
use presets::{Compatibility, Preset};
use steps::{Pipeline, ShortText, Shingles};

/// A text recipe: the tokenizer a collection cuts text with and, for a compatibility preset,
/// the hash family, NumPy seed and permutation count that make its MinHash signatures equal
/// the reference implementation's.
///
/// ```
/// use sketchdb::{CollectionConfig, HashFamily, Recipe, SketchParams};
///
/// let words = Recipe::preset("words-5")?;
/// assert_eq!(words.shingles("Hello, World!"), vec!["hello world"]);
/// // A compatibility preset brings its family: the collection's signatures equal datasketch's.
/// let ds = Recipe::preset("datasketch")?;
/// let config = CollectionConfig::new(SketchParams::minhash(128, 32, 7)?).with_recipe(ds);
/// assert_eq!(config.params.family(), HashFamily::DatasketchLegacy);
/// assert_eq!((config.params.size(), config.params.seed()), (128, 1));
/// assert!(Recipe::preset("no-such-recipe").is_err());
/// assert_eq!(Recipe::presets()[0].name(), "sketchdb");
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Recipe {
    preset: Option<Preset>,
    tokenizer: Tokenizer,
}

impl Recipe {
    /// The preset called `name` (see [`Recipe::presets`]).
    pub fn preset(name: &str) -> Result<Recipe, SketchError> {
        Preset::from_name(name)
            .map(Recipe::of)
            .ok_or_else(|| SketchError::invalid("recipe", name, "a recipe preset (`sketchdb recipes` lists them)"))
    }

    /// Every preset, the default (`sketchdb`) first.
    pub fn presets() -> Vec<Recipe> {
        Preset::ALL.into_iter().map(Recipe::of).collect()
    }

    /// The recipe of a preset.
    pub fn of(preset: Preset) -> Recipe {
        Recipe { preset: Some(preset), tokenizer: preset.tokenizer() }
    }

    /// A recipe of your own steps, with sketchdb's hash family.
    pub fn custom(pipeline: Pipeline) -> Result<Recipe, SketchError> {
        pipeline.validate()?;
        Ok(Recipe::identify(Tokenizer::from_pipeline(pipeline), HashFamily::MixMultiplyShift))
    }

    /// The recipe of a collection's tokenizer and hash family: the preset they equal, else a
    /// custom recipe.
    pub fn identify(tokenizer: Tokenizer, family: HashFamily) -> Recipe {
        let preset = Preset::ALL.into_iter().find(|p| {
            let (pf, _, _) = p.signature();
            p.tokenizer() == tokenizer && (pf == family || !pf.is_compat())
        });
        Recipe { preset, tokenizer }
    }

    /// The preset's name, or `custom`.
    pub fn name(&self) -> &'static str {
        self.preset.map_or("custom", Preset::name)
    }

    /// The preset, if the recipe is one.
    pub fn as_preset(&self) -> Option<Preset> {
        self.preset
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// What the recipe reproduces.
    pub fn compatibility(&self) -> Compatibility {
        self.preset.map_or(Compatibility::Native, Preset::compatibility)
    }

    /// The hash family the recipe's signatures need: a compatibility family, or sketchdb's own.
    pub fn family(&self) -> HashFamily {
        self.preset.map_or(HashFamily::MixMultiplyShift, |p| p.signature().0)
    }

    /// For a compatibility recipe, its MinHash parameters with `k` permutations (default: the
    /// reference's own count) and the reference's seed; `None` for the others, which work
    /// with any sketch kind and parameters.
    pub fn compat_params(&self, k: Option<u32>) -> Result<Option<SketchParams>, SketchError> {
        match self.preset.map(Preset::signature) {
            Some((family, seed, default_k)) if family.is_compat() => {
                SketchParams::compat(family, k.unwrap_or(default_k), seed).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Every shingle of `text`, in order, repeats included.
    pub fn shingles(&self, text: &str) -> Vec<String> {
        self.tokenizer.shingle_texts(text)
    }

    /// Every token hash of `text`, in order, repeats included.
    pub fn tokens(&self, text: &str) -> Vec<u64> {
        self.tokenizer.tokens(text)
    }

    /// The recipe's steps as (step, rule) rows, as `sketchdb recipes` shows them.
    pub fn steps(&self) -> Vec<(&'static str, String)> {
        let mut rows = match self.tokenizer.kind() {
            TokenizerKind::Pipeline(p) => pipeline_steps(&p),
            kind => legacy_steps(kind, self.tokenizer.seed()),
        };
        if let Some((family, seed, k)) = self.preset.map(Preset::signature).filter(|s| s.0.is_compat()) {
            rows.push(("signature", format!("{family} MinHash, k = {k}, NumPy RandomState({seed}), 32-bit values")));
        }
        rows
    }
}

fn legacy_steps(kind: TokenizerKind, seed: u64) -> Vec<(&'static str, String)> {
    let shingles = match kind {
        TokenizerKind::CharNgrams { n } => format!("{n}-character grams of the words joined by one space"),
        TokenizerKind::Shingles { w } => format!("{w}-word shingles joined by one space"),
        _ => String::new(),
    };
    vec![
        ("normalize", "none".into()),
        ("case", "Unicode lower case of each character inside words (char::to_lowercase)".into()),
        ("digits", "kept (letters and digits make words)".into()),
        ("punctuation", "every character that is not alphanumeric separates words".into()),
        ("tokens", "maximal runs of alphanumeric characters (Unicode Alphabetic or Numeric)".into()),
        ("shingles", shingles),
        ("short", "one shingle of all its words; no words, no shingles".into()),
        ("hash", format!("xxh3-64 (seed {seed})")),
    ]
}

fn pipeline_steps(p: &Pipeline) -> Vec<(&'static str, String)> {
    use steps::{CaseFold, Digits, Normalization, PunctClass, Punctuation, Tokens};
    let class = |c: PunctClass| match c {
        PunctClass::Ascii => "ASCII punctuation",
        PunctClass::Unicode => "Unicode punctuation and symbols (P*, S*)",
    };
    let normalize = match p.normalization {
        Normalization::None => "none",
        Normalization::Nfc => "NFC",
        Normalization::Nfkc => "NFKC",
        Normalization::NfdStripMarks => "NFD, combining marks removed",
    };
    let case = match p.case {
        CaseFold::None => "kept",
        CaseFold::Ascii => "ASCII lower case",
        CaseFold::Unicode => "Unicode lower case (as Python str.lower)",
    };
    let digits = match p.digits {
        Digits::Keep => "kept",
        Digits::Zero => "each run of numbers becomes 0",
    };
    let punctuation = match p.punctuation {
        Punctuation::Keep => "kept".to_string(),
        Punctuation::StripWordEnds(c) => format!("{} stripped from both ends of each token", class(c)),
        Punctuation::Space(c) => format!("{} replaced by a space", class(c)),
        Punctuation::Split(c) => format!("{} split off as tokens", class(c)),
    };
    let tokens = match p.tokens {
        Tokens::Whitespace => "split on white space (Python str.split())",
        Tokens::UnicodeWords => "Unicode words (UAX #29)",
        Tokens::NonWordSplit => r"Python re.split(r'\W'): every non-word character splits, empty tokens kept",
        Tokens::Text => "the whole text is one token",
    };
    let shingles = match p.shingles {
        Shingles::Words { n } => format!("{n}-token shingles joined by one space"),
        Shingles::Chars { n } => format!("{n}-character grams"),
    };
    let short = match p.short {
        ShortText::One => "a shorter text is one shingle; an empty one none".to_string(),
        ShortText::DropBelow { min } => format!("none below {min}, else a shorter text is one shingle"),
    };
    vec![
        ("normalize", normalize.into()),
        ("case", case.into()),
        ("digits", digits.into()),
        ("punctuation", punctuation),
        ("tokens", tokens.into()),
        ("shingles", shingles),
        ("short", short),
        ("hash", p.hash.describe()),
    ]
}
