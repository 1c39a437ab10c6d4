//! The steps of a text recipe and the pipeline that runs them, in this order:
//!
//! 1. [`Normalization`] of the whole text (Unicode normal forms).
//! 2. [`CaseFold`] of the whole text.
//! 3. [`Digits`]: numbers kept or each run of them made one `0`.
//! 4. [`Punctuation`] replaced by a space or split off as its own token (the `StripWordEnds`
//!    option acts after step 5, on each token).
//! 5. [`Tokens`]: how the text is cut into tokens.
//! 6. [`Shingles`] of the tokens, with [`ShortText`] deciding what a short text gives.
//! 7. [`TokenHash`] of each shingle's UTF-8 bytes.
//!
//! Every variant states its rule exactly enough to reimplement; the persisted form is the
//! codec's wire struct (variants only appended).

use std::sync::OnceLock;

use regex::Regex;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick, is_nfkc_quick};
use unicode_segmentation::UnicodeSegmentation;

use super::super::error::SketchError;
use super::hashes::TokenHash;

/// Step 1: Unicode normalization of the whole text (`unicode-normalization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Normalization {
    /// The text as given.
    None,
    /// Canonical composition (NFC).
    Nfc,
    /// Compatibility composition (NFKC): also folds ligatures, full-width forms, superscripts.
    Nfkc,
    /// Canonical decomposition (NFD), then every combining mark (general category M) removed:
    /// `é` becomes `e`.
    NfdStripMarks,
}

/// Step 2: case folding of the whole text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CaseFold {
    /// Case kept.
    None,
    /// `A`-`Z` lower-cased, nothing else.
    Ascii,
    /// Unicode's default lower-casing of the whole string (`str::to_lowercase`: full mappings
    /// and the final sigma), as Python's `str.lower()`.
    Unicode,
}

/// Step 3: digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Digits {
    /// Digits kept.
    Keep,
    /// Each maximal run of numeric characters (`char::is_numeric`, Unicode N*) becomes `0`.
    Zero,
}

/// Which characters are punctuation for [`Punctuation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PunctClass {
    /// The 32 ASCII punctuation characters (Python's `string.punctuation`).
    Ascii,
    /// Unicode punctuation and symbols: general categories P* and S* (emoji included).
    Unicode,
}

impl PunctClass {
    fn contains(self, c: char) -> bool {
        match self {
            PunctClass::Ascii => c.is_ascii_punctuation(),
            PunctClass::Unicode => {
                c.is_ascii_punctuation() || (!c.is_ascii() && unicode_punct().is_match(c.encode_utf8(&mut [0; 4])))
            }
        }
    }
}

fn unicode_punct() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[\p{P}\p{S}]$").unwrap_or_else(|_| unreachable!("a constant pattern")))
}

/// Step 4: punctuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Punctuation {
    /// Punctuation kept where it is.
    Keep,
    /// After tokenizing, punctuation is stripped from both ends of every token and tokens left
    /// empty are dropped (Python `w.strip(chars)`).
    StripWordEnds(PunctClass),
    /// Every punctuation character becomes a space.
    Space(PunctClass),
    /// Every punctuation character is surrounded by spaces, so whitespace tokenizing makes it
    /// a token of its own.
    Split(PunctClass),
}

/// Step 5: how the text is cut into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tokens {
    /// Split at runs of white space, as Python's `str.split()`: Unicode White_Space plus
    /// U+001C..U+001F; no empty tokens.
    Whitespace,
    /// Unicode word boundaries (UAX #29, `unicode-segmentation`'s `unicode_words`): the words
    /// that hold a letter or digit; each CJK ideograph is a word; punctuation and emoji are not.
    UnicodeWords,
    /// Python's `re.split(r"\W", text)`: split at *every* character that is not a word
    /// character (letters L*, numbers N*, `_`), keeping the empty strings between adjacent
    /// separators and at the ends (text-dedup's tokenizer).
    NonWordSplit,
    /// No cutting: the whole text is one token (for character n-grams over the raw text).
    Text,
}

/// Step 6: shingles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Shingles {
    /// Every run of `n` consecutive tokens, joined by one space.
    Words {
        /// Tokens per shingle, 1..=64.
        n: u32,
    },
    /// Every run of `n` consecutive characters (Unicode scalar values) of the tokens joined by
    /// one space (with [`Tokens::Text`], of the text itself).
    Chars {
        /// Characters per gram, 1..=256.
        n: u32,
    },
}

/// Step 6, continued: what a text shorter than one shingle gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShortText {
    /// One shingle of everything it has (nothing when it has no tokens or characters).
    One,
    /// Nothing when it has fewer than `min` tokens (`Words`) or characters (`Chars`), else as
    /// `One`.
    DropBelow {
        /// The least number of tokens or characters a text must have.
        min: u32,
    },
}

/// A text recipe's pipeline: every step, in order (see the module docs).
///
/// ```
/// use sketchdb::recipes::{CaseFold, Normalization, Pipeline, PunctClass, Punctuation, Shingles, Tokens};
///
/// // NFC, lower case, whitespace words with ASCII punctuation stripped from their ends, 2-word shingles.
/// let p = Pipeline::words(2)
///     .with_normalization(Normalization::Nfc)
///     .with_case(CaseFold::Unicode)
///     .with_punctuation(Punctuation::StripWordEnds(PunctClass::Ascii))
///     .with_tokens(Tokens::Whitespace);
/// assert_eq!(p.shingles("Hello, World! (Again)"), vec!["hello world", "world again"]);
/// assert_eq!(Pipeline::words(1).with_shingles(Shingles::Chars { n: 3 }).shingles("abcd"), vec!["abc", "bcd"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Pipeline {
    /// Step 1.
    pub normalization: Normalization,
    /// Step 2.
    pub case: CaseFold,
    /// Step 3.
    pub digits: Digits,
    /// Step 4.
    pub punctuation: Punctuation,
    /// Step 5.
    pub tokens: Tokens,
    /// Step 6.
    pub shingles: Shingles,
    /// Step 6, short texts.
    pub short: ShortText,
    /// Step 7.
    pub hash: TokenHash,
}

impl Pipeline {
    /// `n`-word shingles of whitespace tokens, nothing else changed, hashed with xxh3-64 seed 0;
    /// the `with_*` methods change one step each.
    pub fn words(n: u32) -> Self {
        Pipeline {
            normalization: Normalization::None,
            case: CaseFold::None,
            digits: Digits::Keep,
            punctuation: Punctuation::Keep,
            tokens: Tokens::Whitespace,
            shingles: Shingles::Words { n },
            short: ShortText::One,
            hash: TokenHash::Xxh3_64 { seed: 0 },
        }
    }

    /// With another step 1.
    pub fn with_normalization(mut self, n: Normalization) -> Self {
        self.normalization = n;
        self
    }
    /// With another step 2.
    pub fn with_case(mut self, c: CaseFold) -> Self {
        self.case = c;
        self
    }
    /// With another step 3.
    pub fn with_digits(mut self, d: Digits) -> Self {
        self.digits = d;
        self
    }
    /// With another step 4.
    pub fn with_punctuation(mut self, p: Punctuation) -> Self {
        self.punctuation = p;
        self
    }
    /// With another step 5.
    pub fn with_tokens(mut self, t: Tokens) -> Self {
        self.tokens = t;
        self
    }
    /// With another step 6.
    pub fn with_shingles(mut self, s: Shingles) -> Self {
        self.shingles = s;
        self
    }
    /// With another short-text rule.
    pub fn with_short(mut self, s: ShortText) -> Self {
        self.short = s;
        self
    }
    /// With another step 7.
    pub fn with_hash(mut self, h: TokenHash) -> Self {
        self.hash = h;
        self
    }

    /// Checks the widths.
    pub fn validate(&self) -> Result<(), SketchError> {
        match self.shingles {
            Shingles::Words { n } if n == 0 || n > 64 => {
                Err(SketchError::invalid("shingle_words", n, "1..=64 words per shingle"))
            }
            Shingles::Chars { n } if n == 0 || n > 256 => {
                Err(SketchError::invalid("ngram_chars", n, "1..=256 characters per gram"))
            }
            _ => Ok(()),
        }
    }

    /// Steps 1-4: the text as tokenizing sees it.
    fn prepare(&self, text: &str) -> String {
        // A text the quick check finds already normalised (every ASCII text is, in every form,
        // and holds no combining marks) is copied as it is: normalising it would not change it.
        let mut t: String = match self.normalization {
            Normalization::None => text.to_owned(),
            Normalization::Nfc if is_nfc_quick(text.chars()) == IsNormalized::Yes => text.to_owned(),
            Normalization::Nfc => text.nfc().collect(),
            Normalization::Nfkc if is_nfkc_quick(text.chars()) == IsNormalized::Yes => text.to_owned(),
            Normalization::Nfkc => text.nfkc().collect(),
            Normalization::NfdStripMarks if text.is_ascii() => text.to_owned(),
            Normalization::NfdStripMarks => text.nfd().filter(|&c| !is_combining_mark(c)).collect(),
        };
        t = match self.case {
            CaseFold::None => t,
            CaseFold::Ascii => t.to_ascii_lowercase(),
            CaseFold::Unicode => t.to_lowercase(),
        };
        if self.digits == Digits::Zero {
            let mut out = String::with_capacity(t.len());
            let mut in_number = false;
            for c in t.chars() {
                if c.is_numeric() {
                    if !in_number {
                        out.push('0');
                    }
                    in_number = true;
                } else {
                    out.push(c);
                    in_number = false;
                }
            }
            t = out;
        }
        match self.punctuation {
            Punctuation::Space(class) => t.chars().map(|c| if class.contains(c) { ' ' } else { c }).collect(),
            Punctuation::Split(class) => {
                let mut out = String::with_capacity(t.len() + 8);
                for c in t.chars() {
                    if class.contains(c) {
                        out.push(' ');
                        out.push(c);
                        out.push(' ');
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            Punctuation::Keep | Punctuation::StripWordEnds(_) => t,
        }
    }

    /// Step 5 (and the `StripWordEnds` punctuation rule).
    fn tokenize<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut tokens: Vec<&str> = match self.tokens {
            Tokens::Whitespace => text.split(is_python_space).filter(|w| !w.is_empty()).collect(),
            Tokens::UnicodeWords => text.unicode_words().collect(),
            Tokens::NonWordSplit => text.split(|c: char| !is_python_word(c)).collect(),
            Tokens::Text => vec![text],
        };
        if let Punctuation::StripWordEnds(class) = self.punctuation {
            tokens =
                tokens.into_iter().map(|w| w.trim_matches(|c| class.contains(c))).filter(|w| !w.is_empty()).collect();
        }
        tokens
    }

    /// Calls `f` with every shingle of `text`, in order, repeats included.
    pub(crate) fn for_each_shingle(&self, text: &str, mut f: impl FnMut(&str)) {
        let prepared = self.prepare(text);
        let tokens = self.tokenize(&prepared);
        match self.shingles {
            Shingles::Words { n } => {
                let n = n as usize;
                if let ShortText::DropBelow { min } = self.short
                    && tokens.len() < min as usize
                {
                    return;
                }
                if tokens.is_empty() {
                    return;
                }
                if tokens.len() < n {
                    f(&tokens.join(" "));
                    return;
                }
                let mut buf = String::new();
                for win in tokens.windows(n) {
                    buf.clear();
                    for (i, w) in win.iter().enumerate() {
                        if i > 0 {
                            buf.push(' ');
                        }
                        buf.push_str(w);
                    }
                    f(&buf);
                }
            }
            Shingles::Chars { n } => {
                let joined = if self.tokens == Tokens::Text { prepared.clone() } else { tokens.join(" ") };
                let starts: Vec<usize> = joined.char_indices().map(|(i, _)| i).collect();
                if let ShortText::DropBelow { min } = self.short
                    && starts.len() < min as usize
                {
                    return;
                }
                let n = n as usize;
                if starts.is_empty() {
                    return;
                }
                if starts.len() < n {
                    f(&joined);
                    return;
                }
                for i in 0..=starts.len() - n {
                    let end = starts.get(i + n).copied().unwrap_or(joined.len());
                    f(&joined[starts[i]..end]);
                }
            }
        }
    }

    /// Every shingle of `text` as text, in order, repeats included.
    pub fn shingles(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_shingle(text, |s| out.push(s.to_owned()));
        out
    }

    /// Every token hash of `text`, in order, repeats included.
    pub fn tokens(&self, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        self.for_each_shingle(text, |s| out.push(self.hash.hash(s.as_bytes())));
        out
    }
}

/// Python's `str.isspace()`: Unicode White_Space plus the four information separators.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python `re`'s `\w` on `str`: letters (L*), numbers (N*) and `_`.
fn is_python_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"^[\p{L}\p{N}]$").unwrap_or_else(|_| unreachable!("a constant pattern")));
    re.is_match(c.encode_utf8(&mut [0; 4]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_style_non_word_split_keeps_empty_tokens() {
        let p = Pipeline::words(1).with_tokens(Tokens::NonWordSplit);
        assert_eq!(p.shingles("a, b_c"), vec!["a", "", "b_c"]);
        assert_eq!(p.shingles(""), vec![""]);
    }

    #[test]
    fn short_texts_give_one_shingle_or_none() {
        let p = Pipeline::words(3);
        assert_eq!(p.shingles("a b"), vec!["a b"]);
        assert!(p.shingles("  ").is_empty());
        let drop = p.with_short(ShortText::DropBelow { min: 3 });
        assert!(drop.shingles("a b").is_empty());
        assert_eq!(drop.shingles("a b c"), vec!["a b c"]);
    }

    #[test]
    fn digits_and_punctuation() {
        let p = Pipeline::words(1).with_digits(Digits::Zero).with_punctuation(Punctuation::Space(PunctClass::Unicode));
        assert_eq!(p.shingles("v1.25 «ok»"), vec!["v0", "0", "ok"]);
        let split = Pipeline::words(1).with_punctuation(Punctuation::Split(PunctClass::Ascii));
        assert_eq!(split.shingles("hi, you"), vec!["hi", ",", "you"]);
    }

    /// Step 1 applied in full, whatever the text.
    fn normalised_in_full(text: &str, n: Normalization) -> String {
        match n {
            Normalization::None => text.to_owned(),
            Normalization::Nfc => text.nfc().collect(),
            Normalization::Nfkc => text.nfkc().collect(),
            Normalization::NfdStripMarks => text.nfd().filter(|&c| !is_combining_mark(c)).collect(),
        }
    }

    proptest::proptest! {
        // Composed and decomposed letters, combining marks, compatibility forms (ligature,
        // Ohm and Angstrom signs, circled digit, full-width), Hangul jamo and syllables.
        #[test]
        fn the_quick_check_changes_nothing(
            text in "[a-zA-Z0-9 .,\\u{e9}\\u{301}\\u{308}\\u{fb01}\\u{2126}\\u{212b}\\u{2460}\\u{ff21}\\u{1100}\\u{1161}\\u{ac00}\\u{344}\\u{1e9b}\\u{323}]{0,40}",
        ) {
            for n in [Normalization::None, Normalization::Nfc, Normalization::Nfkc, Normalization::NfdStripMarks] {
                let p = Pipeline::words(1).with_normalization(n);
                let full = Pipeline::words(1).with_normalization(Normalization::None);
                proptest::prop_assert_eq!(p.prepare(&text), full.prepare(&normalised_in_full(&text, n)), "{:?}", n);
            }
        }
    }

    #[test]
    fn bad_widths_are_refused() {
        assert!(Pipeline::words(0).validate().is_err());
        assert!(Pipeline::words(1).with_shingles(Shingles::Chars { n: 257 }).validate().is_err());
        assert!(Pipeline::words(64).validate().is_ok());
    }
}
