//! Golden values: the token hash, the tokenizer, the hash family and every sketch kind of a
//! fixed input are pinned here. Any change to hashing fails this test; such a change needs a
//! new hash-family or tokenizer version, never a silent edit of these numbers.
//!
//! The token hashes and the first MinHash values were reproduced independently from the
//! written specification (Python's `xxhash` package and a 10-line Python MinHash).

use sketchdb::estimate::*;
use sketchdb::*;

/// FNV-1a over the values, to pin long outputs in one number.
fn digest(v: &[u64]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x).wrapping_mul(0x0100_0000_01b3))
}

fn set() -> TokenSet {
    TokenSet::from_unsorted((1..=1000u64).map(|i| i * 7919).collect())
}

#[test]
fn token_hash_and_tokenizer_are_pinned() {
    assert_eq!(token_hash(b"sketchdb", 0), 6_234_754_171_698_132_591);
    let tok = Tokenizer::default();
    assert_eq!(tok.kind(), TokenizerKind::Shingles { w: 5 });
    assert_eq!(
        tok.tokens("The quick brown fox jumps over the lazy dog again and again")[..3],
        [10_403_364_002_775_130_632, 6_086_655_325_213_332_729, 15_826_396_923_637_405_732]
    );
    assert_eq!(
        Tokenizer::char_ngrams(4, 11).unwrap().tokens("Ünïcode Straße"),
        vec![
            2_666_392_394_404_621_585,
            17_548_272_871_442_529_208,
            7_311_381_530_922_431_799,
            1_056_003_880_524_556_639,
            18_218_493_431_490_689_166,
            15_778_249_160_444_369_188,
            12_836_211_204_004_130_065,
            6_995_982_872_335_756_724,
            2_507_381_868_944_275_750,
            11_371_583_284_834_829_523,
            13_040_157_566_067_193_770
        ]
    );
}

#[test]
fn minhash_is_pinned() {
    let Sketch::MinHash(m) =
        Sketcher::new(SketchParams::minhash(128, 32, 42).unwrap()).unwrap().sketch(&set()).unwrap()
    else {
        panic!("kind")
    };
    assert_eq!(m.values()[..4], [4_322_225, 211_988, 2_874_736, 7_924_356]);
    assert_eq!(digest(m.values()), 5_093_149_015_398_228_954);
    assert_eq!(m.cardinality(), 1000);
    let Sketch::MinHash(m) = Sketcher::new(SketchParams::minhash(64, 64, 42).unwrap()).unwrap().sketch(&set()).unwrap()
    else {
        panic!("kind")
    };
    assert_eq!(m.values()[..2], [18_563_817_630_800_372, 910_485_111_336_120]);
    assert_eq!(digest(m.values()), 7_247_516_016_720_226_577);
}

#[test]
fn bbit_is_pinned() {
    let Sketch::BBit(b) = Sketcher::new(SketchParams::bbit(100, 4, 42).unwrap()).unwrap().sketch(&set()).unwrap()
    else {
        panic!("kind")
    };
    assert_eq!(
        b.words(),
        [
            7_643_025_023_017_768_135,
            4_246_370_897_744_230_559,
            7_359_673_423_583_952_644,
            11_802_667_265_169_741_082,
            1_842_579_504_287_008_102,
            7_791_462_447_065_407_429,
            50_482
        ]
    );
}

#[test]
fn oph_and_densification_are_pinned() {
    let small = TokenSet::from_unsorted((1..=40u64).collect());
    let Sketch::Oph(o) = Sketcher::new(SketchParams::oph(100, 16, 42).unwrap()).unwrap().sketch(&small).unwrap() else {
        panic!("kind")
    };
    assert_eq!(o.bins()[..8], [0, 0, 51_114, 0, 0, 0, 39_456, 46_207]);
    assert_eq!(o.empty_bitmap(), [15_758_709_525_544_123_707, 68_666_752_739]);
    let bins: Vec<u64> = o.bins().iter().map(|&v| u64::from(v)).collect();
    assert_eq!(digest(&bins), 12_392_780_398_515_569_539);
    let dense: Vec<u64> = o.densify().unwrap().iter().map(|&v| u64::from(v)).collect();
    assert_eq!(digest(&dense), 4_893_137_911_459_933_277);
}

#[test]
fn simhash_is_pinned() {
    let text = "the quick brown fox jumps over the lazy dog and the cat";
    let tok = Tokenizer::default();
    let expect = [(64u8, 0xf060_44c0_490d_a6c1u128), (128, 0xa603_1560_186c_a251_f060_44c0_490d_a6c1)];
    for (bits, want) in expect {
        let Sketch::SimHash(s) =
            Sketcher::new(SketchParams::simhash(bits, 42).unwrap()).unwrap().sketch_text(&tok, text).unwrap()
        else {
            panic!("kind")
        };
        assert_eq!(s.value(), want, "{bits}-bit");
    }
}

/// `MixMultiplyShift32` computed straight from storage-format.md section 8.3.1, one token and
/// one slot at a time (no kernel of the library).
fn lanes32_by_the_spec(seed: u64, k: usize, tokens: &[u64]) -> Vec<u64> {
    fn splitmix64(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// fmix32 of the XOR of the halves of `y`.
    fn fmix32(y: u64) -> u32 {
        let mut x = (y as u32) ^ ((y >> 32) as u32);
        x ^= x >> 16;
        x = x.wrapping_mul(0x85EB_CA6B);
        x ^= x >> 13;
        x = x.wrapping_mul(0xC2B2_AE35);
        x ^ (x >> 16)
    }
    let mut state = seed;
    let out: Vec<u64> = (0..1 + 2 * k).map(|_| splitmix64(&mut state)).collect();
    (0..k)
        .map(|i| {
            let a = (out[1 + 2 * i] >> 32) as u32 | 1;
            let b = (out[2 + 2 * i] >> 32) as u32;
            let v = |h: u64| a.wrapping_mul(fmix32(h ^ out[0])).wrapping_add(b);
            u64::from(tokens.iter().map(|&h| v(h)).min().unwrap())
        })
        .collect()
}

#[test]
fn minhash_lanes32_is_pinned_and_follows_the_spec() {
    let params = SketchParams::minhash(128, 32, 42).unwrap().with_family(HashFamily::MixMultiplyShift32).unwrap();
    let Sketch::MinHash(m) = Sketcher::new(params).unwrap().sketch(&set()).unwrap() else { panic!("kind") };
    assert_eq!(m.values(), lanes32_by_the_spec(42, 128, set().as_slice()));
    // Reproduced by an independent Python transcription of the spec (arbitrary-precision
    // integers masked to 64 and 32 bits).
    assert_eq!(m.values()[..4], [1_273_566, 9_606_107, 1_626_125, 5_161_866]);
    assert_eq!(digest(m.values()), 12_213_303_513_637_642_817);
    assert_eq!(m.cardinality(), 1000);
    // k = 100 leaves a tail of slots outside the kernel's blocks of 64.
    let params = SketchParams::minhash(100, 32, 7).unwrap().with_family(HashFamily::MixMultiplyShift32).unwrap();
    let Sketch::MinHash(m) = Sketcher::new(params).unwrap().sketch(&set()).unwrap() else { panic!("kind") };
    assert_eq!(m.values(), lanes32_by_the_spec(7, 100, set().as_slice()));
}

#[test]
fn bbit_lanes32_keeps_the_low_bits_of_the_mixed_minima() {
    let params = SketchParams::bbit(100, 4, 42).unwrap().with_family(HashFamily::MixMultiplyShift32).unwrap();
    let Sketch::BBit(b) = Sketcher::new(params).unwrap().sketch(&set()).unwrap() else { panic!("kind") };
    let mins = lanes32_by_the_spec(42, 100, set().as_slice());
    let mut values = Vec::new();
    b.values_into(&mut values);
    let mixed: Vec<u32> = mins
        .iter()
        .map(|&m| {
            let mut k = m;
            k ^= k >> 33;
            k = k.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
            k ^= k >> 33;
            k = k.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
            ((k ^ (k >> 33)) & 0xF) as u32
        })
        .collect();
    assert_eq!(values, mixed);
    assert_eq!(digest(b.words()), 515_640_153_891_664_703);
}
