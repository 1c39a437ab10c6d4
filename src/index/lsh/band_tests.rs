//! Tests of the band-key specification (every version), the fast b-bit paths and the rows
//! of each sketch kind.

use super::*;
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::Sketcher;
use crate::sketch::tokens::TokenSet;

#[test]
fn band_bytes_are_as_specified() {
    let mut bytes = vec![7, 0, 0, 0];
    for v in [1u32, 0xdead_beef, 3] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(bytes.len(), 4 + 4 * 3);
    assert_eq!(band_key_u32(7, &[1, 0xdead_beef, 3], 99), xxh3_64_with_seed(&bytes, 99));
    let mut bytes = 2u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&u64::MAX.to_le_bytes());
    bytes.extend_from_slice(&5u64.to_le_bytes());
    assert_eq!(band_key_u64(2, &[u64::MAX, 5], 0), xxh3_64_with_seed(&bytes, 0));
    // Longer than the stack buffer: the heap path hashes the same bytes.
    let long: Vec<u64> = (0..17).collect();
    let mut bytes = 1u32.to_le_bytes().to_vec();
    long.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    assert_eq!(band_key_u64(1, &long, 4), xxh3_64_with_seed(&bytes, 4));
}

#[test]
fn golden_band_keys() {
    // Pinned: changing these changes every stored LSH index (needs a new version).
    assert_eq!(band_key_u32(0, &[1, 2, 3, 4], 0), GOLDEN[0]);
    assert_eq!(band_key_u64(3, &[u64::MAX, 0], 42), GOLDEN[1]);
    assert_eq!(band_key_u32(1, &[], 7), GOLDEN[2]);
}

const GOLDEN: [u64; 3] = [0x3757_3ad4_0b49_16e8, 0x3dbd_27ce_1a13_2f46, 0xdbac_54f5_3741_3bcc];

/// Version 3: pinned hashes, the bytes and seed as specified, and a scheme's keys of each
/// width equal to those hashes' top 32 bits.
#[test]
fn version_3_keys_are_as_specified() {
    // Pinned: changing these changes every stored version-3 LSH index.
    assert_eq!(band_key_v3(0, &[1, 2, 3, 4], 0), GOLDEN_V3[0]);
    assert_eq!(band_key_v3(5, &[0xff; 13], 0x736b_6574_6368_6462), GOLDEN_V3[1]);
    assert_eq!(band_key_v3(7, &[], 9), xxh3_64_with_seed(&[], 9 ^ 7u64.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let params = LshParams { bands: 2, rows: 3 };
    let values = [1u32, 200, 3, 40, 5, 255];
    let mask = 0xffff_ffff_0000_0000;
    for (width, w) in [(RowWidth::U8, 1), (RowWidth::U16, 2), (RowWidth::U32, 4)] {
        let scheme = BandKeyScheme::new(77, params, width);
        assert_eq!(scheme.version, 3);
        let keys = scheme.keys(&LshRows::U32(values.to_vec())).expect("keys");
        for (band, key) in keys.iter().enumerate() {
            let bytes: Vec<u8> =
                values[3 * band..3 * band + 3].iter().flat_map(|v| v.to_le_bytes()[..w].to_vec()).collect();
            assert_eq!(*key, band_key_v3(band as u32, &bytes, 77) & mask, "{width:?}");
        }
    }
    let scheme = BandKeyScheme::new(77, params, RowWidth::U64);
    let wide = [u64::MAX, 1, 2, 3, 4, 5];
    let keys = scheme.keys(&LshRows::U64(wide.to_vec())).expect("keys");
    let bytes: Vec<u8> = wide[3..].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(keys[1], band_key_v3(1, &bytes, 77) & mask);
    // A value that needs 2 bytes under a 1-byte scheme.
    let err = BandKeyScheme::new(77, params, RowWidth::U8).keys(&LshRows::U32(vec![1, 2, 3, 4, 256, 6]));
    assert_eq!(
        err,
        Err(IndexError::SizeMismatch {
            what: "row value bytes (a value wider than the scheme's rows)",
            expected: 1,
            got: 2
        })
    );
}

// Computed independently (Python `xxhash.xxh3_64_intdigest`).
const GOLDEN_V3: [u64; 2] = [0x988b_7b90_33ac_4622, 0x9dfd_467f_9201_8536];

/// The direct b-bit path gives exactly the keys of the rows, for every b, for bandings
/// that do and do not use every slot and for bands too long for the stack buffer; other
/// kinds and mismatches take the rows path with its errors.
#[test]
fn sketch_keys_equal_the_keys_of_the_rows() {
    let tokens = TokenSet::from_unsorted((0..300u64).map(|t| t * 7919).collect());
    let sk = |p: SketchParams| Sketcher::new(p).expect("sketcher").sketch(&tokens).expect("sketch");
    for bits in [1u8, 2, 4, 8, 16, 32] {
        let sketch = sk(SketchParams::bbit(128, bits, 5).expect("params"));
        for (bands, rows) in [(1, 1), (32, 4), (9, 13), (3, 40), (1, 128)] {
            for (version, width) in [
                (1, RowWidth::U32),
                (2, RowWidth::U32),
                (2, RowWidth::U8),
                (3, RowWidth::U32),
                (3, RowWidth::for_bits(bits)),
            ] {
                if usize::from(bits) > 8 * width.bytes() {
                    continue;
                }
                let scheme = BandKeyScheme { version, ..BandKeyScheme::new(11, LshParams { bands, rows }, width) };
                let want = scheme.keys(&lsh_rows(&sketch).expect("rows")).expect("keys");
                assert_eq!(
                    scheme.sketch_keys(&sketch).expect("keys"),
                    want,
                    "b = {bits}, {bands}x{rows}, v{version}, {width:?}"
                );
            }
        }
        // Version 3 never truncates: b-bit values wider than the scheme's rows are refused
        // on both paths; versions 1 and 2 hash every u32 value in 4 bytes, whatever the width.
        if bits > 8 {
            let narrow = BandKeyScheme::new(11, LshParams { bands: 4, rows: 4 }, RowWidth::U8);
            let want = IndexError::SizeMismatch {
                what: "row value bytes (b-bit values wider than the scheme's rows)",
                expected: 1,
                got: u64::from(bits.div_ceil(8)),
            };
            assert_eq!(narrow.sketch_keys(&sketch), Err(want), "b = {bits}");
            assert!(matches!(
                narrow.keys(&lsh_rows(&sketch).expect("rows")),
                Err(IndexError::SizeMismatch { what: "row value bytes (a value wider than the scheme's rows)", .. })
            ));
        }
        let too_many = BandKeyScheme::new(11, LshParams { bands: 33, rows: 4 }, RowWidth::U32);
        let err = too_many.sketch_keys(&sketch).unwrap_err();
        assert_eq!(err, IndexError::SizeMismatch { what: "signature rows for bands * rows", expected: 132, got: 128 });
        let wide = BandKeyScheme::new(11, LshParams { bands: 4, rows: 4 }, RowWidth::U64);
        assert!(matches!(wide.sketch_keys(&sketch), Err(IndexError::SizeMismatch { what: "row width in bytes", .. })));
    }
    for params in [SketchParams::minhash(64, 64, 1), SketchParams::minhash(64, 32, 1), SketchParams::oph(64, 16, 1)] {
        let sketch = sk(params.expect("params"));
        let rows = lsh_rows(&sketch).expect("rows");
        let scheme = BandKeyScheme::new(3, LshParams { bands: 16, rows: 4 }, rows.width());
        assert_eq!(scheme.sketch_keys(&sketch).expect("keys"), scheme.keys(&rows).expect("keys"));
    }
}

/// The direct MinHash path (32- and 64-bit values) gives exactly the keys of the rows for
/// every version and width, for bandings that do and do not use every slot and for bands
/// too long for the stack buffer, and the rows path's errors.
#[test]
fn minhash_sketch_keys_equal_the_keys_of_the_rows() {
    let tokens = TokenSet::from_unsorted((0..300u64).map(|t| t * 7919).collect());
    // 128 slots narrow on the stack, 256 (with 200 or 256 used) in the heap.
    for (k, bits) in [(128, 32u8), (128, 64), (256, 32)] {
        let sketch = Sketcher::new(SketchParams::minhash(k, bits, 5).expect("params"))
            .expect("sketcher")
            .sketch(&tokens)
            .expect("sketch");
        let rows = lsh_rows(&sketch).expect("rows");
        let big: &[(u32, u32)] = if k > 128 { &[(20, 10), (64, 4)] } else { &[] };
        for &(bands, rows_per) in [(1, 1), (14, 9), (32, 4), (9, 13), (3, 40), (1, 128)].iter().chain(big) {
            for version in [1u16, 2, 3] {
                for width in [RowWidth::U16, RowWidth::U32, RowWidth::U64] {
                    let params = LshParams { bands, rows: rows_per };
                    let scheme = BandKeyScheme { version, ..BandKeyScheme::new(11, params, width) };
                    let what = format!("{bits}-bit, {bands}x{rows_per}, v{version}, {width:?}");
                    assert_eq!(scheme.sketch_keys(&sketch), scheme.keys(&rows), "{what}");
                }
            }
        }
        let too_many = BandKeyScheme::new(11, LshParams { bands: k / 4 + 1, rows: 4 }, rows.width());
        assert_eq!(
            too_many.sketch_keys(&sketch),
            Err(IndexError::SizeMismatch {
                what: "signature rows for bands * rows",
                expected: u64::from(k) + 4,
                got: u64::from(k)
            })
        );
    }
}

#[test]
fn band_index_and_seed_matter() {
    let v = [10u32, 20];
    assert_ne!(band_key_u32(0, &v, 1), band_key_u32(1, &v, 1));
    assert_ne!(band_key_u32(0, &v, 1), band_key_u32(0, &v, 2));
    assert_ne!(band_key_u32(0, &v, 1), band_key_u64(0, &[10, 20], 1));
}

#[test]
fn rows_of_each_sketch_kind() {
    let tokens = TokenSet::from_unsorted((0..200u64).collect());
    let other = TokenSet::from_unsorted((0..180u64).chain(1000..1020).collect());
    let sk = |p: SketchParams, t: &TokenSet| Sketcher::new(p).expect("sketcher").sketch(t).expect("sketch");
    let mh = sk(SketchParams::minhash(32, 64, 1).expect("params"), &tokens);
    let Sketch::MinHash(m) = &mh else { panic!("kind") };
    assert_eq!(lsh_rows(&mh).expect("rows"), LshRows::U64(m.values().to_vec()));
    let mh32 = sk(SketchParams::minhash(32, 32, 1).expect("params"), &tokens);
    let Sketch::MinHash(m) = &mh32 else { panic!("kind") };
    assert_eq!(lsh_rows(&mh32).expect("rows"), LshRows::U32(m.values().iter().map(|&v| v as u32).collect()));
    let bb = sk(SketchParams::bbit(32, 4, 1).expect("params"), &tokens);
    let Sketch::BBit(b) = &bb else { panic!("kind") };
    let rows = lsh_rows(&bb).expect("rows");
    assert_eq!(rows, LshRows::U32((0..32).map(|i| b.value(i) as u32).collect()));
    let oph = sk(SketchParams::oph(64, 16, 1).expect("params"), &tokens);
    let Sketch::Oph(o) = &oph else { panic!("kind") };
    assert_eq!(lsh_rows(&oph).expect("rows"), LshRows::U32(o.densify().expect("densify")));
    let sim = sk(SketchParams::simhash(64, 1).expect("params"), &tokens);
    assert_eq!(lsh_rows(&sim), Err(IndexError::NotBanded { kind: crate::SketchKind::SimHash }));

    // Similar sets share some band keys; the scheme checks widths and lengths.
    let scheme = BandKeyScheme { version: 2, ..BandKeyScheme::new(9, LshParams { bands: 16, rows: 2 }, RowWidth::U64) };
    scheme.validate().expect("valid");
    let a = scheme.keys(&lsh_rows(&mh).expect("rows")).expect("keys");
    let mh_other = sk(SketchParams::minhash(32, 64, 1).expect("params"), &other);
    let b = scheme.keys(&lsh_rows(&mh_other).expect("rows")).expect("keys");
    assert_eq!(a.len(), 16);
    let Sketch::MinHash(m) = &mh else { panic!("kind") };
    for (i, key) in a.iter().enumerate() {
        assert_eq!(*key, band_key_u64(i as u32, &m.values()[2 * i..2 * i + 2], 9) & 0xffff_ffff_0000_0000);
    }
    // Version 1 keeps the whole hash.
    let v1 = BandKeyScheme { version: 1, ..scheme };
    v1.validate().expect("version 1 is read");
    assert_eq!((v1.key_bits(), scheme.key_bits()), (64, 32));
    let full = v1.keys(&lsh_rows(&mh).expect("rows")).expect("keys");
    for (i, key) in full.iter().enumerate() {
        assert_eq!(*key, band_key_u64(i as u32, &m.values()[2 * i..2 * i + 2], 9));
        assert_eq!(a[i], key & 0xffff_ffff_0000_0000);
    }
    assert!(a.iter().zip(&b).any(|(x, y)| x == y));
    assert!(matches!(scheme.keys(&rows), Err(IndexError::SizeMismatch { .. })));
    let too_many = LshParams { bands: 17, rows: 2 };
    let err = lsh_rows(&mh).expect("rows").band_keys(too_many, 0).unwrap_err();
    assert_eq!(err, IndexError::SizeMismatch { what: "signature rows for bands * rows", expected: 34, got: 32 });
    for version in [0, 4] {
        let bad = BandKeyScheme { version, ..scheme };
        assert!(matches!(bad.validate(), Err(IndexError::Inconsistent { .. })), "version {version}");
    }
}
