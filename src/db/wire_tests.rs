//! The stored bytes of the configuration types, pinned: each hex string below is what the
//! serde derives on the public types produced (captured at commit 6aaac88, before the codec's
//! wire structs replaced them). Encoding through the wire structs must give the same bytes,
//! and decoding them must give the same values.

use crate::codec::meta::CollectionDef;
use crate::db::config::{CollectionConfig, IndexConfig, decode_settings, encode_settings};
use crate::index::{BandKeyScheme, LshParams, RowWidth};
use crate::sketch::params::{HashFamily, SketchParams};
use crate::sketch::tokenize::Tokenizer;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Every sketch kind: a collection definition (envelope included) per parameter set.
#[test]
fn collection_definitions_encode_as_before() {
    let cases = [
        (
            SketchParams::minhash(128, 32, 42),
            "534b444d0100030014000000841079040704646f63730000012a80012000800803010203",
        ),
        (
            SketchParams::minhash(64, 64, 0x5eed_5ce7_c4db_0001),
            "534b444d010003001b00000044d8b3fa0704646f63730000018180eca6fc9cd7f65e404000800803010203",
        ),
        (SketchParams::bbit(256, 1, 7), "534b444d01000300140000002f6d2fd80704646f63730100010780020100800803010203"),
        (
            SketchParams::bbit_with_universe(100, 8, 1_000_000, 9),
            "534b444d0100030016000000e7cbb3650704646f637301000109640801c0843d800803010203",
        ),
        (SketchParams::oph(128, 8, 42), "534b444d0100030014000000caad84cf0704646f63730200012a80010800800803010203"),
        (
            SketchParams::oph(4096, 32, u64::MAX),
            "534b444d010003001d0000000a3ffb150704646f6373020001ffffffffffffffffff0180202000800803010203",
        ),
        (SketchParams::simhash(64, 3), "534b444d0100030013000000cf1aa3500704646f637303000103404000800803010203"),
        (SketchParams::simhash(128, 300), "534b444d0100030015000000f7475cc60704646f6373030001ac0280018000800803010203"),
    ];
    for (params, old) in cases {
        let params = params.unwrap();
        let def = CollectionDef { id: 7, name: "docs".into(), params, capacity: 1024, settings: vec![1, 2, 3] };
        assert_eq!(hex(&def.encode().unwrap()), old, "{params:?}");
        assert_eq!(CollectionDef::decode(&unhex(old)).unwrap(), def);
    }
}

/// Every tokenizer kind with every index setting (none, SimHash tables, LSH with and without
/// a banding).
#[test]
fn collection_settings_encode_as_before() {
    let cases = [
        (Tokenizer::default(), IndexConfig::None, "00050000"),
        (Tokenizer::default(), IndexConfig::simhash_tables(3), "0005000103"),
        (Tokenizer::default(), IndexConfig::simhash_tables(300), "00050001ac02"),
        (Tokenizer::default(), IndexConfig::lsh(0.8), "000500029a9999999999e93f0000"),
        (
            Tokenizer::default(),
            IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(8) },
            "00050002000000000000e03f01100108",
        ),
        (
            Tokenizer::default(),
            IndexConfig::Lsh { threshold: 0.9, bands: Some(300), rows: None },
            "00050002cdccccccccccec3f01ac0200",
        ),
        (
            Tokenizer::default(),
            IndexConfig::Lsh { threshold: 0.25, bands: None, rows: Some(2) },
            "00050002000000000000d03f000102",
        ),
        (Tokenizer::shingles(2, 0).unwrap(), IndexConfig::None, "00020000"),
        (Tokenizer::shingles(2, 0).unwrap(), IndexConfig::simhash_tables(3), "0002000103"),
        (Tokenizer::shingles(2, 0).unwrap(), IndexConfig::simhash_tables(300), "00020001ac02"),
        (Tokenizer::shingles(2, 0).unwrap(), IndexConfig::lsh(0.8), "000200029a9999999999e93f0000"),
        (
            Tokenizer::shingles(2, 0).unwrap(),
            IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(8) },
            "00020002000000000000e03f01100108",
        ),
        (
            Tokenizer::shingles(2, 0).unwrap(),
            IndexConfig::Lsh { threshold: 0.9, bands: Some(300), rows: None },
            "00020002cdccccccccccec3f01ac0200",
        ),
        (
            Tokenizer::shingles(2, 0).unwrap(),
            IndexConfig::Lsh { threshold: 0.25, bands: None, rows: Some(2) },
            "00020002000000000000d03f000102",
        ),
        (Tokenizer::shingles(64, u64::MAX).unwrap(), IndexConfig::None, "0040ffffffffffffffffff0100"),
        (Tokenizer::shingles(64, u64::MAX).unwrap(), IndexConfig::simhash_tables(3), "0040ffffffffffffffffff010103"),
        (
            Tokenizer::shingles(64, u64::MAX).unwrap(),
            IndexConfig::simhash_tables(300),
            "0040ffffffffffffffffff0101ac02",
        ),
        (
            Tokenizer::shingles(64, u64::MAX).unwrap(),
            IndexConfig::lsh(0.8),
            "0040ffffffffffffffffff01029a9999999999e93f0000",
        ),
        (
            Tokenizer::shingles(64, u64::MAX).unwrap(),
            IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(8) },
            "0040ffffffffffffffffff0102000000000000e03f01100108",
        ),
        (
            Tokenizer::shingles(64, u64::MAX).unwrap(),
            IndexConfig::Lsh { threshold: 0.9, bands: Some(300), rows: None },
            "0040ffffffffffffffffff0102cdccccccccccec3f01ac0200",
        ),
        (
            Tokenizer::shingles(64, u64::MAX).unwrap(),
            IndexConfig::Lsh { threshold: 0.25, bands: None, rows: Some(2) },
            "0040ffffffffffffffffff0102000000000000d03f000102",
        ),
        (Tokenizer::char_ngrams(3, 7).unwrap(), IndexConfig::None, "01030700"),
        (Tokenizer::char_ngrams(3, 7).unwrap(), IndexConfig::simhash_tables(3), "0103070103"),
        (Tokenizer::char_ngrams(3, 7).unwrap(), IndexConfig::simhash_tables(300), "01030701ac02"),
        (Tokenizer::char_ngrams(3, 7).unwrap(), IndexConfig::lsh(0.8), "010307029a9999999999e93f0000"),
        (
            Tokenizer::char_ngrams(3, 7).unwrap(),
            IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(8) },
            "01030702000000000000e03f01100108",
        ),
        (
            Tokenizer::char_ngrams(3, 7).unwrap(),
            IndexConfig::Lsh { threshold: 0.9, bands: Some(300), rows: None },
            "01030702cdccccccccccec3f01ac0200",
        ),
        (
            Tokenizer::char_ngrams(3, 7).unwrap(),
            IndexConfig::Lsh { threshold: 0.25, bands: None, rows: Some(2) },
            "01030702000000000000d03f000102",
        ),
        (Tokenizer::char_ngrams(256, 300).unwrap(), IndexConfig::None, "018002ac0200"),
        (Tokenizer::char_ngrams(256, 300).unwrap(), IndexConfig::simhash_tables(3), "018002ac020103"),
        (Tokenizer::char_ngrams(256, 300).unwrap(), IndexConfig::simhash_tables(300), "018002ac0201ac02"),
        (Tokenizer::char_ngrams(256, 300).unwrap(), IndexConfig::lsh(0.8), "018002ac02029a9999999999e93f0000"),
        (
            Tokenizer::char_ngrams(256, 300).unwrap(),
            IndexConfig::Lsh { threshold: 0.5, bands: Some(16), rows: Some(8) },
            "018002ac0202000000000000e03f01100108",
        ),
        (
            Tokenizer::char_ngrams(256, 300).unwrap(),
            IndexConfig::Lsh { threshold: 0.9, bands: Some(300), rows: None },
            "018002ac0202cdccccccccccec3f01ac0200",
        ),
        (
            Tokenizer::char_ngrams(256, 300).unwrap(),
            IndexConfig::Lsh { threshold: 0.25, bands: None, rows: Some(2) },
            "018002ac0202000000000000d03f000102",
        ),
    ];
    let params = SketchParams::minhash(128, 32, 42).unwrap();
    for (tokenizer, index, old) in cases {
        let config = CollectionConfig::new(params).with_tokenizer(tokenizer).with_index(index);
        assert_eq!(hex(&encode_settings(&config).unwrap()), old, "{config:?}");
        assert_eq!(decode_settings(7, params, &unhex(old)).unwrap(), config);
    }
}

/// The LSH banding inside a stored band-key scheme (both scheme versions, every row width).
#[test]
fn band_key_schemes_encode_as_before() {
    let cases = [
        (3, 16, 8, RowWidth::U32, "03f0bdf3d589cf959a12100800"),
        (1, 16, 8, RowWidth::U32, "01f0bdf3d589cf959a12100800"),
        (3, 300, 1, RowWidth::U64, "03f0bdf3d589cf959a12ac020101"),
        (1, 300, 1, RowWidth::U64, "01f0bdf3d589cf959a12ac020101"),
        (3, 1, 4096, RowWidth::U8, "03f0bdf3d589cf959a1201802002"),
        (1, 1, 4096, RowWidth::U8, "01f0bdf3d589cf959a1201802002"),
        (3, 20, 5, RowWidth::U16, "03f0bdf3d589cf959a12140503"),
        (1, 20, 5, RowWidth::U16, "01f0bdf3d589cf959a12140503"),
    ];
    for (version, bands, rows, width, old) in cases {
        let scheme =
            BandKeyScheme { version, ..BandKeyScheme::new(0x1234_5678_9abc_def0, LshParams { bands, rows }, width) };
        assert_eq!(hex(&postcard::to_allocvec(&scheme).unwrap()), old, "{scheme:?}");
        assert_eq!(postcard::from_bytes::<BandKeyScheme>(&unhex(old)).unwrap(), scheme);
    }
}

/// Recipe settings (TokenizerKind variant 2) and compatibility families (HashFamily variants
/// 1-6): every preset round-trips, and the `words-5` pipeline's bytes are pinned
/// (storage-format.md section 8.6).
#[test]
fn recipe_settings_and_compat_families_round_trip() {
    use crate::sketch::recipe::Recipe;
    let base = SketchParams::minhash(128, 32, 42).unwrap();
    for recipe in Recipe::presets() {
        let config = CollectionConfig::new(base).with_recipe(recipe);
        let bytes = encode_settings(&config).unwrap();
        assert_eq!(decode_settings(7, config.params, &bytes).unwrap(), config, "{}", recipe.name());
        let def = CollectionDef { id: 7, name: "docs".into(), params: config.params, capacity: 1024, settings: bytes };
        assert_eq!(CollectionDef::decode(&def.encode().unwrap()).unwrap(), def, "{}", recipe.name());
    }
    let words = CollectionConfig::new(base).with_recipe(Recipe::preset("words-5").unwrap());
    // kind 2 (Pipeline): Nfc 1, Unicode 2, Keep 0, StripWordEnds 1 (Ascii 0), Whitespace 0,
    // Words 0 (n 5), One 0, Xxh3_64 0 (seed 0); tokenizer seed 0; index None 0.
    assert_eq!(hex(&encode_settings(&words).unwrap()), "0201020001000000050000000000");
    let charikar = SketchParams::simhash_charikar().unwrap();
    let def = CollectionDef { id: 7, name: "docs".into(), params: charikar, capacity: 1024, settings: vec![] };
    assert_eq!(CollectionDef::decode(&def.encode().unwrap()).unwrap(), def);
}

/// The 32-bit lane family is `HashFamily` variant 7: the byte after the kind, in a definition
/// otherwise equal to family 0's (pinned above).
#[test]
fn lanes32_family_is_variant_seven() {
    let params = SketchParams::minhash(128, 32, 42).unwrap().with_family(HashFamily::MixMultiplyShift32).unwrap();
    let def = CollectionDef { id: 7, name: "docs".into(), params, capacity: 1024, settings: vec![1, 2, 3] };
    let bytes = def.encode().unwrap();
    // Envelope (magic, version, kind, length, crc: 16 bytes), id 07, name 04 "docs", kind 00.
    assert_eq!(hex(&bytes[16..]), "0704646f63730007012a80012000800803010203");
    assert_eq!(CollectionDef::decode(&bytes).unwrap(), def);
}
