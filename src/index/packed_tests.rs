//! The packed index values (LSH chunks, SimHash buckets) come from the database file: any
//! bytes must parse to an error or to a view whose every accessor stays in bounds. Arbitrary
//! byte strings, and valid values with bytes flipped or cut, never panic.

use proptest::prelude::*;

use super::lsh::append_split;
use super::lsh::encode_chunk;
use super::lsh::{ChunkView, Groups};
use super::simhash::{BucketView, Geometry, HeldView, encode_bucket, encoded_len, held_of};

fn exercise_chunk(bytes: &[u8], g: Groups, probes: &[u64]) {
    if let Ok(view) = ChunkView::parse(bytes, g) {
        let mut out = Vec::new();
        view.decode_into(g, 5, &mut out);
        assert_eq!(out.len(), view.len());
        let _ = view.suffixes_fit(g);
        let mut rows = Vec::new();
        for &p in probes {
            let q = p & g.suffix_mask();
            view.rows_of(q, view.guess(g, q), &mut rows);
            view.rows_of(p, view.guess(g, p), &mut rows);
            view.rows_of(q, p as usize, &mut rows);
        }
    }
}

fn exercise_bucket(bytes: &[u8], g: Geometry, probes: &[u64]) {
    if let Ok(view) = BucketView::parse(bytes, g) {
        let (mut keys, mut rows) = (Vec::<u64>::new(), Vec::new());
        view.decode_into::<u64>(g, 3, &mut keys, &mut rows);
        let mut fast = Vec::<u64>::new();
        view.keys_into::<u64>(g, 3, &mut fast);
        assert_eq!(fast, keys, "the fast key decoder equals the plain one");
        let mut wide = Vec::<u128>::new();
        view.keys_into::<u128>(g, 3, &mut wide);
        if g.f == 64 {
            // The form warm probes hold it in gives the same entries.
            let held = held_of(bytes, g, 3).expect("a parsed 64-bit bucket is held");
            let view = HeldView::parse(&held).expect("held bytes parse");
            for &p in probes {
                // A query in the bucket (the probed bucket is the query's).
                let p = if g.bits == 0 { p } else { 3u64 << (64 - g.bits) | p & (u64::MAX >> g.bits) };
                let mut hits = Vec::new();
                view.within(p, 64, &mut hits);
                assert_eq!(hits.len(), keys.len());
                for &(d, i) in &hits {
                    assert_eq!((view.key(3, i), view.row(i)), (keys[i], rows[i]));
                    assert_eq!(d, (keys[i] ^ p).count_ones());
                }
            }
        }
    }
    // Held bytes are checked too: any bytes parse to an error or to a view in bounds.
    if let Ok(view) = HeldView::parse(bytes) {
        let mut hits = Vec::new();
        view.within(probes[0], 64, &mut hits);
        for &(_, i) in &hits {
            let _ = (view.key(3, i), view.row(i));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        bits in 1u32..=24,
        probes in prop::collection::vec(any::<u64>(), 1..4),
    ) {
        for key_bits in [64, 32] {
            exercise_chunk(&bytes, Groups::new(key_bits, bits), &probes);
        }
        for (f, b) in [(64u32, bits), (64, 16), (128, 16)] {
            let g = Geometry { f, bits: b, suffix_bytes: (f - b).div_ceil(8) as usize };
            exercise_bucket(&bytes, g, &probes);
        }
    }

    #[test]
    fn damaged_valid_values_never_panic(
        keys in prop::collection::vec(any::<u64>(), 1..200),
        rows in prop::collection::vec(any::<u64>(), 1..200),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
        probes in prop::collection::vec(any::<u64>(), 1..4),
        key_bits in prop::sample::select(vec![32u32, 64]),
        narrow in any::<bool>(),
        split in any::<bool>(),
    ) {
        let g = Groups::new(key_bits, 12);
        // Narrow row ranges make layout 2 the encoder's choice (at 32-bit keys); `split`
        // forces layout 1.
        let row = |r: u64| if narrow { (1 << 40) + r % 5000 } else { r };
        let mut entries: Vec<(u64, u64)> =
            keys.iter().zip(&rows).map(|(&k, &r)| (g.key(7, g.suffix(k)), row(r))).collect();
        entries.sort_unstable();
        let mut chunk = Vec::new();
        if split {
            append_split(g, &entries, &mut chunk);
        } else {
            encode_chunk(g, &entries, &mut chunk);
        }
        let geo = Geometry { f: 64, bits: 16, suffix_bytes: 6 };
        let wide: Vec<(u128, u64)> = entries.iter().map(|&(k, r)| (u128::from(k), r)).collect();
        let mut bucket = vec![0u8; encoded_len(&wide, geo)];
        encode_bucket(&wide, geo, &mut bucket);
        // Intact values parse (so the damaged ones below start from real layouts).
        prop_assert!(ChunkView::parse(&chunk, g).is_ok());
        prop_assert!(BucketView::parse(&bucket, geo).is_ok());
        exercise_chunk(&chunk, g, &probes);
        exercise_bucket(&bucket, geo, &probes);
        for value in [&mut chunk, &mut bucket] {
            for &(at, x) in &flips {
                let n = value.len();
                value[at % n] ^= x;
            }
            let keep = cut % (value.len() + 1);
            exercise_chunk(&value[..keep], g, &probes);
            exercise_chunk(value, g, &probes);
            exercise_bucket(&value[..keep], geo, &probes);
            exercise_bucket(value, geo, &probes);
        }
    }
}
