//! Golden shingles: for one text mixing a decomposed accent, capitals with accents, a hyphen,
//! CRLF, CJK, an emoji glued to a word, `_`, a digit and punctuation, each preset's shingle
//! list equals the list written out below by hand from the preset's steps (docs/recipes.md).

use sketchdb::Recipe;

/// "Cafe" + U+0301 (a combining acute: NFD "Café"), "DÉJÀ-vu,", CRLF, "日本", "🙂ok", "Straße_2!".
const TEXT: &str = "Cafe\u{301} DÉJÀ-vu,\r\n日本 🙂ok Straße_2!";

fn shingles(preset: &str) -> Vec<String> {
    Recipe::preset(preset).unwrap().shingles(TEXT)
}

#[test]
fn sketchdb_keeps_todays_tokenizer() {
    // Words are runs of alphanumerics, lower-cased per character: U+0301, '-', ',', CRLF, the
    // emoji, '_' and '!' separate. 7 words, 5-word shingles.
    assert_eq!(
        shingles("sketchdb"),
        vec!["cafe déjà vu 日本 ok", "déjà vu 日本 ok straße", "vu 日本 ok straße 2"]
    );
    // And it is the tokenizer every collection made before recipes has.
    assert_eq!(Recipe::preset("sketchdb").unwrap().tokenizer(), sketchdb::Tokenizer::default());
}

#[test]
fn words_5_is_the_docs_workload_recipe() {
    // NFC joins e + U+0301; lower case; whitespace split (CRLF is white space); ASCII
    // punctuation stripped from word ends ("déjà-vu," -> "déjà-vu", "straße_2!" -> "straße_2");
    // 5 words: one shingle.
    assert_eq!(shingles("words-5"), vec!["café déjà-vu 日本 🙂ok straße_2"]);
}

#[test]
fn unicode_words_5_cuts_at_word_boundaries() {
    // UAX #29: the hyphen breaks, each ideograph is a word, the emoji is no word, '_' joins.
    assert_eq!(
        shingles("unicode-words-5"),
        vec!["café déjà vu 日 本", "déjà vu 日 本 ok", "vu 日 本 ok straße_2"]
    );
}

#[test]
fn datasketch_hashes_whitespace_words_as_given() {
    let want = vec!["Cafe\u{301}", "DÉJÀ-vu,", "日本", "🙂ok", "Straße_2!"];
    assert_eq!(shingles("datasketch"), want);
    assert_eq!(shingles("datasketch-affine32"), want);
}

#[test]
fn text_dedup_splits_at_every_non_word_character() {
    // lower(); re.split(r"\W"): U+0301, ' ', '-', ',', CR, LF, ' ', emoji, ' ', '!' each split,
    // leaving 11 tokens: cafe, "", déjà, vu, "", "", 日本, "", ok, straße_2, "".
    let want = vec![
        "cafe  déjà vu ",
        " déjà vu  ",
        "déjà vu   日本",
        "vu   日本 ",
        "  日本  ok",
        " 日本  ok straße_2",
        "日本  ok straße_2 ",
    ];
    for preset in ["text-dedup", "text-dedup-sha1", "text-dedup-spark"] {
        assert_eq!(shingles(preset), want, "{preset}");
    }
    // Fewer than 5 tokens: no shingles at all.
    assert!(Recipe::preset("text-dedup").unwrap().shingles("two words").is_empty());
}

#[test]
fn nemo_curator_takes_24_character_windows_of_the_raw_text() {
    // 32 characters (U+0301, CR and LF count as one each): 9 windows.
    let want = vec![
        "Cafe\u{301} DÉJÀ-vu,\r\n日本 🙂ok S",
        "afe\u{301} DÉJÀ-vu,\r\n日本 🙂ok St",
        "fe\u{301} DÉJÀ-vu,\r\n日本 🙂ok Str",
        "e\u{301} DÉJÀ-vu,\r\n日本 🙂ok Stra",
        "\u{301} DÉJÀ-vu,\r\n日本 🙂ok Straß",
        " DÉJÀ-vu,\r\n日本 🙂ok Straße",
        "DÉJÀ-vu,\r\n日本 🙂ok Straße_",
        "ÉJÀ-vu,\r\n日本 🙂ok Straße_2",
        "JÀ-vu,\r\n日本 🙂ok Straße_2!",
    ];
    assert_eq!(shingles("nemo-curator"), want);
    // A text shorter than 24 characters is one window.
    assert_eq!(Recipe::preset("nemo-curator").unwrap().shingles("short text"), vec!["short text"]);
}

#[test]
fn datatrove_like_simplifies_the_text() {
    // NFD with marks removed (É -> E, À -> A, e + U+0301 -> e), lower case, numbers -> 0,
    // Unicode punctuation and symbols (-, ',', emoji, '_', '!') -> space, whitespace split.
    assert_eq!(
        shingles("datatrove-like"),
        vec!["cafe deja vu 日本 ok", "deja vu 日本 ok straße", "vu 日本 ok straße 0"]
    );
}

#[test]
fn every_preset_has_a_golden_list_here() {
    let names: Vec<&str> = Recipe::presets().iter().map(|r| r.name()).collect();
    assert_eq!(
        names,
        vec![
            "sketchdb",
            "words-5",
            "unicode-words-5",
            "datasketch",
            "datasketch-affine32",
            "text-dedup",
            "text-dedup-sha1",
            "text-dedup-spark",
            "nemo-curator",
            "datatrove-like"
        ]
    );
}
