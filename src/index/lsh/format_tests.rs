//! Round trips and layouts of the LSH chunk format.

use super::*;

/// Every encoding of `entries` (all of `group`) that applies: the chosen one, layout 1,
/// and layout 2 when its words fit 64 bits.
fn encodings(g: Groups, entries: &[(u64, u64)]) -> Vec<Vec<u8>> {
    let (mut chosen, mut split) = (Vec::new(), Vec::new());
    encode_chunk(g, entries, &mut chosen);
    append_split(g, entries, &mut split);
    let mut out = vec![chosen, split];
    let (lo, hi) = (entries.iter().map(|e| e.1).min().unwrap(), entries.iter().map(|e| e.1).max().unwrap());
    let d = 64 - (hi - lo).leading_zeros();
    if g.suffix_bits() + d <= 64 {
        let mut packed = Vec::new();
        append_packed(g, entries, lo, d, &mut packed);
        out.push(packed);
    }
    out
}

#[test]
fn chunk_round_trip_and_lookup() {
    // Every suffix width at both key widths, row ids of 2, 3, 4 and 6 bytes, and row
    // ranges of 9 and 41 bits, in both layouts (the decoders have fixed-width paths).
    let cases = [64, 32].into_iter().flat_map(|k| [0, 1, 10, 17, 24].map(|p| (k, p)));
    let rows = [(0, 2, 1), (1 << 16, 3, 1), (1 << 24, 4, 1), (1 << 40, 6, 1), (5, 6, 1 << 32)];
    for ((key_bits, bits), (row_base, w, step)) in cases.flat_map(|c| rows.map(|r| (c, r))) {
        let g = Groups::new(key_bits, bits);
        assert_eq!(g.suffix_bytes, (key_bits - bits).div_ceil(8) as usize);
        let group = 0x2a_u64 & ((1 << bits) - 1);
        let mut entries: Vec<(u64, u64)> = (0..300u64)
            .map(|i| (g.key(group, (i / 3).wrapping_mul(0x9e37_79b9) & g.suffix_mask()), row_base + i * step))
            .collect();
        entries.sort_unstable();
        // The chosen layout: 2 when its words fit 64 bits and it is no longer.
        let d = 64 - (299 * step).leading_zeros();
        let packed = (g.suffix_bits() + d <= 64).then(|| HEADER_V2 + 300 * (g.suffix_bits() + d).div_ceil(8) as usize);
        let split = HEADER_V1 + 300 * (g.suffix_bytes + w);
        let all = encodings(g, &entries);
        assert_eq!(all[0].len(), packed.filter(|&p| p <= split).unwrap_or(split), "{key_bits}/{bits}/{row_base}");
        assert_eq!(all[1].len(), split);
        assert_eq!(all.len(), 2 + usize::from(packed.is_some()));
        for bytes in &all {
            let view = ChunkView::parse(bytes, g).expect("parse");
            assert!(view.suffixes_fit(g));
            let mut back = Vec::new();
            view.decode_into(g, group, &mut back);
            assert_eq!(back, entries);
            for &(k, _) in &entries {
                let mut rows = Vec::new();
                view.rows_of(g.suffix(k), view.guess(g, g.suffix(k)), &mut rows);
                let want: Vec<u64> = entries.iter().filter(|e| e.0 == k).map(|e| e.1).collect();
                assert_eq!(rows, want);
                assert_eq!(g.group(k), group);
                // Keys of K significant bits: the bits below are zero and survive the trip.
                assert_eq!(k & ((1u128 << (64 - key_bits)) - 1) as u64, 0);
                assert_eq!(g.key(g.group(k), g.suffix(k)), k);
            }
        }
    }
}

/// Words hold a row as its offset from the merge's base: offsets up to 2^32 - 1 are
/// kept, anything outside is refused, in the 5-byte fast path and the general one.
#[test]
fn words_hold_row_offsets_below_2_32_only() {
    // 31 suffix bits and 9 row bits: 5-byte words.
    let g = Groups::new(32, 1);
    let top = 1u64 << 32;
    for (first, base, fits) in [(top - 300, 0, true), (top - 299, 0, false), (1000, 1001, false), (1000, 1000, true)] {
        let entries: Vec<(u64, u64)> = (0..300u64).map(|i| (g.key(1, i * 1000), first + i)).collect();
        for (bytes, fast) in encodings(g, &entries).iter().zip([true, false]) {
            let view = ChunkView::parse(bytes, g).expect("parse");
            assert_eq!(view.w == 0 && view.s == 5, fast, "rows from {first}");
            let mut words = Vec::new();
            assert_eq!(view.decode_words_into(g, 1, base, &mut words), fits, "rows from {first}, base {base}");
            if fits {
                let back: Vec<(u64, u64)> = words.iter().map(|&w| word_entry(w, base)).collect();
                assert_eq!(back, entries);
            }
        }
    }
}

/// The bytes of a layout-2 chunk, as `storage-format.md` specifies them.
#[test]
fn layout_2_bytes_are_as_specified() {
    // K = 32, P = 10: 22-bit suffixes; rows B, B + 3, B + 1: d = 2, 24-bit words in 3
    // bytes (25 bytes in all; layout 1 would take 8 + 3 * (3 + 5)).
    let (g, b) = (Groups::new(32, 10), 10_000_000_000u64);
    let key = |suffix: u64| g.key(5, suffix);
    let entries = [(key(1), b), (key(1), b + 3), (key(0x3f_ffff), b + 1)];
    let mut bytes = Vec::new();
    encode_chunk(g, &entries, &mut bytes);
    let mut want = vec![2, 3, 2, 0, 3, 0, 0, 0];
    want.extend_from_slice(&b.to_le_bytes());
    for word in [1u32 << 2, 1 << 2 | 3, 0x3f_ffff << 2 | 1] {
        want.extend_from_slice(&word.to_le_bytes()[..3]);
    }
    assert_eq!(bytes, want);
}

/// Damage a layout-2 header can carry is refused by name.
#[test]
fn bad_layout_2_headers_are_refused() {
    let g = Groups::new(32, 10);
    let mut good = Vec::new();
    encode_chunk(g, &[(g.key(1, 7), 1 << 40), (g.key(1, 9), (1 << 40) + 2)], &mut good);
    assert_eq!(good[0], LAYOUT_PACKED);
    assert!(ChunkView::parse(&good, g).is_ok());
    let cases: [(usize, u8, &str); 5] = [
        (0, 3, "unknown chunk layout 3"),
        (1, 4, "word bytes 4 for 22 suffix bits and 2 row-offset bits"),
        (2, 43, "at most 64 bits"),
        (3, 1, "reserved byte 1"),
        (15, 0xff, "overflows a row id"),
    ];
    for (at, value, want) in cases {
        let mut bad = good.clone();
        bad[at] = value;
        if at == 2 {
            bad[1] = 9;
        }
        if at == 15 {
            bad[8..16].fill(0xff);
        }
        let err = ChunkView::parse(&bad, g).unwrap_err();
        assert!(err.contains(want), "byte {at} = {value}: {err}");
    }
    let err = ChunkView::parse(&good[..good.len() - 1], g).unwrap_err();
    assert!(err.contains(&format!("need {} bytes; the chunk value has {}", good.len(), good.len() - 1)), "{err}");
    let mut long = good.clone();
    long.push(0);
    let err = ChunkView::parse(&long, g).unwrap_err();
    assert!(err.contains(&format!("need {} bytes; the chunk value has {}", good.len(), long.len())), "{err}");
}

#[test]
fn chunks_laid_end_to_end_parse_one_by_one() {
    let g = Groups::new(32, 10);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_chunk(g, &[(g.key(1, 7), 1 << 40), (g.key(1, 9), (1 << 40) + 2)], &mut a);
    let wide: Vec<(u64, u64)> = (0..5).map(|i| (g.key(1, 20 + i), i << 50)).collect();
    encode_chunk(g, &wide, &mut b);
    assert_eq!((a[0], b[0]), (LAYOUT_PACKED, LAYOUT_SPLIT));
    for (first, second) in [(&a, &b), (&b, &a)] {
        let both = [first.as_slice(), second.as_slice()].concat();
        let (one, len) = ChunkView::parse_prefix(&both, g).expect("first");
        assert_eq!(len, first.len());
        let (two, len2) = ChunkView::parse_prefix(&both[len..], g).expect("second");
        assert_eq!(len2, second.len());
        for (view, alone) in [(one, first), (two, second)] {
            let (mut got, mut want) = (Vec::new(), Vec::new());
            view.decode_into(g, 1, &mut got);
            ChunkView::parse(alone, g).expect("alone").decode_into(g, 1, &mut want);
            assert_eq!(got, want);
            for from in 0..=view.len() {
                for to in from..=view.len() {
                    let mut part = Vec::new();
                    view.decode_range_into(g, 1, from..to, &mut part);
                    assert_eq!(part, want[from..to], "entries {from}..{to}");
                }
            }
        }
        let err = ChunkView::parse_prefix(&both[..first.len() - 1], g).unwrap_err();
        assert!(err.contains("the chunk value has"), "{err}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// The galloping search finds the first suffix >= the probe on any sorted chunk from
    /// any start: skewed or clustered suffixes, runs of duplicates, probes absent, below
    /// the first and above the last, good and bad guesses.
    #[test]
    fn lower_bound_equals_partition_point(
        raw in proptest::collection::vec((0u64..64, 1usize..4), 1..300),
        spread in 0u32..54,
        probes in proptest::collection::vec(0u64..70, 1..20),
        guesses in proptest::collection::vec(0usize..2000, 1..8),
    ) {
        let g = Groups::new(64, 10);
        let mut suffixes: Vec<u64> = raw
            .iter()
            .flat_map(|&(v, dup)| std::iter::repeat_n((v * v) << spread & g.suffix_mask(), dup))
            .collect();
        suffixes.sort_unstable();
        suffixes.truncate(GROUP_CHUNK_ENTRIES);
        let entries: Vec<(u64, u64)> = suffixes.iter().enumerate().map(|(i, &x)| (g.key(3, x), i as u64)).collect();
        let mut bytes = Vec::new();
        encode_chunk(g, &entries, &mut bytes);
        let view = ChunkView::parse(&bytes, g).unwrap();
        for p in probes {
            let probe = (p * p) << spread & g.suffix_mask();
            for q in [probe, probe.saturating_sub(1), probe + 1] {
                let want = suffixes.partition_point(|&x| x < q);
                for &guess in guesses.iter().chain([view.guess(g, q)].iter()) {
                    proptest::prop_assert_eq!(view.lower_bound_from(q, guess), want, "probe {} from {}", q, guess);
                }
            }
        }
    }
}

#[test]
fn run_group_bits_grow_with_entries() {
    assert_eq!(run_group_bits(0), 0);
    assert_eq!(run_group_bits(255), 0);
    assert_eq!(run_group_bits(256), 1);
    assert_eq!(run_group_bits(128 * 1024), 10);
    assert_eq!(run_group_bits(128 * 1024 + 128), 11);
    assert_eq!(run_group_bits(u64::MAX), MAX_GROUP_BITS);
}

#[test]
fn reverse_entries_round_trip_at_each_key_width() {
    let keys = [0u64, 0xffff_ffff_0000_0000, 0x1234_5678_0000_0000, 0x8000_0000_0000_0000];
    for key_bits in [64, 32] {
        let mut bytes = Vec::new();
        push_band_keys(&keys, key_bits, &mut bytes);
        assert_eq!(bytes.len(), keys.len() * key_bits as usize / 8);
        assert_eq!(band_keys_of(&bytes, keys.len(), key_bits).expect("decode"), keys);
        let err = band_keys_of(&bytes[1..], keys.len(), key_bits).unwrap_err();
        assert!(err.contains("sketchdb.lsh_rows holds"), "{err}");
    }
    let full = [0x0123_4567_89ab_cdefu64];
    let mut bytes = Vec::new();
    push_band_keys(&full, 64, &mut bytes);
    assert_eq!(bytes, 0x0123_4567_89ab_cdefu64.to_le_bytes());
}
