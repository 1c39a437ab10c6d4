//! Text to tokens: the documented tokenizer.
//!
//! The recipe, exact enough to reimplement (also in `storage-format.md`, section 8.4):
//!
//! 1. **Normalise**: lower-case every character with Unicode's default case mapping
//!    (`char::to_lowercase`), then split into *words*: maximal runs of characters for which
//!    `char::is_alphanumeric` holds (Unicode Alphabetic or Numeric). Everything else
//!    (punctuation, symbols, white space, control characters) only separates words.
//! 2. **Word shingles** (`Shingles { w }`): every run of `w` consecutive words, joined by one
//!    space (U+0020). A text with fewer than `w` words (but at least one) gives one shingle of
//!    all its words.
//!    **Character n-grams** (`CharNgrams { n }`): the words joined by single spaces form the
//!    normalised text; every run of `n` consecutive Unicode scalar values of it is a gram. A
//!    normalised text shorter than `n` characters (but not empty) gives one gram, the whole.
//! 3. **Hash**: each shingle or gram's UTF-8 bytes with xxh3-64 and the tokenizer's seed.
//!
//! A text with no words gives no tokens. Case mapping and the alphanumeric classes follow the
//! Unicode version of the Rust standard library that built sketchdb; golden tests pin the
//! results for ASCII and common non-ASCII text.

use std::ops::Range;

use super::error::SketchError;
use super::hash::token_hash;
use super::recipe::steps::Pipeline;
use super::tokens::TokenSet;

/// The default shingle width in words.
pub const DEFAULT_SHINGLE_WORDS: u32 = 5;
/// The default token seed.
pub const DEFAULT_TOKEN_SEED: u64 = 0;

/// How text is cut into tokens before hashing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenizerKind {
    /// w-word shingles.
    Shingles {
        /// Words per shingle (>= 1).
        w: u32,
    },
    /// Character n-grams of the normalised text.
    CharNgrams {
        /// Characters per gram (>= 1).
        n: u32,
    },
    /// A recipe's pipeline of steps ([`crate::Recipe`]); its token hash is its own step, so
    /// the tokenizer's seed is 0 and unused.
    Pipeline(Pipeline),
}

/// A tokenizer: how to cut text, plus the seed its xxh3-64 token hash uses.
///
/// ```
/// use sketchdb::Tokenizer;
///
/// // Lower-cased words of letters and digits; punctuation separates them.
/// let words = Tokenizer::shingles(1, 0)?;
/// assert_eq!(words.tokens("Hello, hello WORLD").len(), 3);
/// assert_eq!(words.token_set("Hello, hello WORLD").len(), 2);
/// // The default cuts 5-word shingles; a shorter text is one shingle.
/// assert_eq!(Tokenizer::default().tokens("too short to split").len(), 1);
/// # Ok::<(), sketchdb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tokenizer {
    kind: TokenizerKind,
    seed: u64,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer { kind: TokenizerKind::Shingles { w: DEFAULT_SHINGLE_WORDS }, seed: DEFAULT_TOKEN_SEED }
    }
}

impl Tokenizer {
    /// The tokenizer of the given fields, unvalidated (the codec's wire struct decodes
    /// through it): check with [`Tokenizer::validate`].
    pub(crate) fn from_parts(kind: TokenizerKind, seed: u64) -> Self {
        Tokenizer { kind, seed }
    }

    /// w-word shingles hashed with `seed`.
    ///
    /// ```
    /// use sketchdb::Tokenizer;
    ///
    /// let pairs = Tokenizer::shingles(2, 0)?;
    /// assert_eq!(pairs.tokens("one two three four").len(), 3); // one two, two three, three four
    /// assert_ne!(pairs.tokens("one two"), Tokenizer::shingles(2, 1)?.tokens("one two")); // seeded
    /// assert!(Tokenizer::shingles(0, 0).is_err());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn shingles(w: u32, seed: u64) -> Result<Self, SketchError> {
        if w == 0 || w > 64 {
            return Err(SketchError::invalid("shingle_words", w, "1..=64 words per shingle"));
        }
        Ok(Tokenizer { kind: TokenizerKind::Shingles { w }, seed })
    }

    /// Character n-grams hashed with `seed`.
    ///
    /// ```
    /// use sketchdb::Tokenizer;
    ///
    /// let grams = Tokenizer::char_ngrams(3, 0)?;
    /// // "ab cd" (words joined by one space): "ab ", "b c", " cd"
    /// assert_eq!(grams.tokens("AB,  cd").len(), 3);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn char_ngrams(n: u32, seed: u64) -> Result<Self, SketchError> {
        if n == 0 || n > 256 {
            return Err(SketchError::invalid("ngram_chars", n, "1..=256 characters per gram"));
        }
        Ok(Tokenizer { kind: TokenizerKind::CharNgrams { n }, seed })
    }

    /// The tokenizer of a recipe's pipeline (seed 0: the pipeline names its own hash).
    pub fn from_pipeline(pipeline: Pipeline) -> Self {
        Tokenizer { kind: TokenizerKind::Pipeline(pipeline), seed: 0 }
    }

    /// The cutting rule.
    pub fn kind(&self) -> TokenizerKind {
        self.kind
    }

    /// The xxh3-64 seed of the token hash.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Checks a tokenizer decoded from storage.
    pub fn validate(&self) -> Result<(), SketchError> {
        match self.kind {
            TokenizerKind::Shingles { w } => Self::shingles(w, self.seed).map(|_| ()),
            TokenizerKind::CharNgrams { n } => Self::char_ngrams(n, self.seed).map(|_| ()),
            TokenizerKind::Pipeline(p) => p.validate(),
        }
    }

    /// Every token of `text` in order, with repeats (term frequency is kept for SimHash).
    ///
    /// ```
    /// use sketchdb::Tokenizer;
    ///
    /// let words = Tokenizer::shingles(1, 0)?;
    /// let t = words.tokens("to be or not to be");
    /// assert_eq!(t.len(), 6);
    /// assert_eq!(t[0], t[4]); // "to" both times
    /// assert!(words.tokens(" ,;. ").is_empty()); // no words, no tokens
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn tokens(&self, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        match self.kind {
            TokenizerKind::Pipeline(p) => p.for_each_shingle(text, |s| out.push(p.hash.hash(s.as_bytes()))),
            _ => self.for_each_shingle(text, |s| out.push(token_hash(s.as_bytes(), self.seed))),
        }
        out
    }

    /// Every shingle (or gram) of `text` as text, in order, with repeats: what [`Tokenizer::tokens`]
    /// hashes.
    ///
    /// ```
    /// use sketchdb::Tokenizer;
    ///
    /// assert_eq!(Tokenizer::shingles(2, 0)?.shingle_texts("One, two; THREE"), vec!["one two", "two three"]);
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn shingle_texts(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_shingle(text, |s| out.push(s.to_owned()));
        out
    }

    fn for_each_shingle(&self, text: &str, mut f: impl FnMut(&str)) {
        let (w, n) = match self.kind {
            TokenizerKind::Pipeline(p) => return p.for_each_shingle(text, f),
            TokenizerKind::Shingles { w } => (w as usize, 0),
            TokenizerKind::CharNgrams { n } => (0, n as usize),
        };
        let (norm, words) = normalised_words(text);
        if words.is_empty() {
            return;
        }
        if n == 0 {
            // Words are joined by one space in `norm`, so a window of w words is one slice.
            if words.len() <= w {
                return f(&norm);
            }
            for win in words.windows(w) {
                f(&norm[win[0].start..win[w - 1].end]);
            }
        } else {
            let starts: Vec<usize> = norm.char_indices().map(|(i, _)| i).collect();
            if starts.len() <= n {
                return f(&norm);
            }
            for i in 0..=starts.len() - n {
                let end = starts.get(i + n).copied().unwrap_or(norm.len());
                f(&norm[starts[i]..end]);
            }
        }
    }

    /// The distinct tokens of `text`.
    pub fn token_set(&self, text: &str) -> TokenSet {
        TokenSet::from_unsorted(self.tokens(text))
    }
}

/// Step 1 of the recipe: the lower-cased alphanumeric words of `text`, joined by one space
/// (the returned text), and each word's byte range in it. One buffer for the whole text: the
/// shingles are slices of it.
fn normalised_words(text: &str) -> (String, Vec<Range<usize>>) {
    let mut norm = String::with_capacity(text.len());
    let mut words = Vec::new();
    let mut start: Option<usize> = None;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if start.is_none() {
                if !norm.is_empty() {
                    norm.push(' ');
                }
                start = Some(norm.len());
            }
            if c.is_ascii() {
                norm.push(c.to_ascii_lowercase());
            } else {
                norm.extend(c.to_lowercase());
            }
        } else if let Some(s) = start.take() {
            words.push(s..norm.len());
        }
    }
    if let Some(s) = start {
        words.push(s..norm.len());
    }
    (norm, words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_lowercases_and_splits_on_non_alphanumerics() {
        let (norm, words) = normalised_words("Hello, WORLD!  Straße--42 ");
        assert_eq!(norm, "hello world straße 42");
        let words: Vec<&str> = words.iter().map(|r| &norm[r.clone()]).collect();
        assert_eq!(words, vec!["hello", "world", "straße", "42"]);
        let (norm, words) = normalised_words(" ,.; ");
        assert!(norm.is_empty() && words.is_empty());
    }

    /// The recipe's steps written plainly: a String per word, windows joined by one space.
    fn reference_shingles(text: &str, w: usize) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in text.chars() {
            if c.is_alphanumeric() {
                cur.extend(c.to_lowercase());
            } else if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            words.push(cur);
        }
        match words.len() {
            0 => vec![],
            n if n <= w => vec![words.join(" ")],
            _ => words.windows(w).map(|win| win.join(" ")).collect(),
        }
    }

    proptest::proptest! {
        #[test]
        fn word_shingles_equal_the_plain_recipe(
            text in "[a-zA-Z0-9 ,.;!\\n\\t\\u{e9}\\u{130}\\u{df}\\u{4e2d}\\u{1f600}\\u{2003}-]{0,80}",
            w in 1usize..6,
        ) {
            let t = Tokenizer::shingles(w as u32, 0).unwrap();
            proptest::prop_assert_eq!(t.shingle_texts(&text), reference_shingles(&text, w));
        }
    }

    #[test]
    fn shingles_join_words_with_one_space() {
        let t = Tokenizer::shingles(2, 7).unwrap();
        let toks = t.tokens("The quick, brown fox");
        let expect: Vec<u64> =
            ["the quick", "quick brown", "brown fox"].iter().map(|s| token_hash(s.as_bytes(), 7)).collect();
        assert_eq!(toks, expect);
        // Fewer words than w: one shingle of all of them.
        assert_eq!(t.tokens("Alone"), vec![token_hash(b"alone", 7)]);
        assert!(t.tokens("...").is_empty());
    }

    #[test]
    fn char_ngrams_span_the_normalised_text() {
        let t = Tokenizer::char_ngrams(3, 0).unwrap();
        let toks = t.tokens("A  Bé!");
        let want: Vec<u64> = ["a b", " bé"].iter().map(|s| token_hash(s.as_bytes(), 0)).collect();
        assert_eq!(toks, want);
        assert_eq!(t.tokens("ab"), vec![token_hash(b"ab", 0)]);
    }

    #[test]
    fn bad_widths_are_typed_errors() {
        assert!(matches!(Tokenizer::shingles(0, 0), Err(SketchError::InvalidParam { param: "shingle_words", .. })));
        assert!(matches!(Tokenizer::char_ngrams(0, 0), Err(SketchError::InvalidParam { param: "ngram_chars", .. })));
    }
}
