//! Round trips of the SimHash bucket value and key field.

use proptest::prelude::*;

use super::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Sorted entries of one bucket encode to `encoded_len` bytes and decode back to the same
    /// (key, row) pairs, for 64- and 128-bit fingerprints and any bucket width.
    #[test]
    fn buckets_round_trip(
        suffixes in prop::collection::vec(any::<u128>(), 1..100),
        rows in prop::collection::vec(any::<u64>(), 1..100),
        wide in any::<bool>(),
        bits in 0u32..=24,
        bucket in any::<u32>(),
    ) {
        let f = if wide { 128 } else { 64 };
        let g = Geometry { f, bits, suffix_bytes: (f - bits).div_ceil(8) as usize };
        let bucket = if bits == 0 { 0 } else { bucket & ((1u32 << bits) - 1) };
        let mut entries: Vec<(u128, u64)> = suffixes
            .iter()
            .zip(&rows)
            .map(|(&s, &r)| (g.base(bucket) | (s & g.suffix_mask() & if wide { u128::MAX } else { u128::from(u64::MAX) }), r))
            .collect();
        entries.sort_unstable();
        entries.dedup();
        let mut bytes = vec![0u8; encoded_len(&entries, g)];
        encode_bucket(&entries, g, &mut bytes);
        let view = BucketView::parse(&bytes, g).expect("parse");
        let mut back = Vec::new();
        view.entries_into(g, bucket, &mut back);
        prop_assert_eq!(&back, &entries);
        for (i, &(key, row)) in entries.iter().enumerate() {
            prop_assert_eq!(g.bucket(key), bucket);
            prop_assert_eq!(view.row(i), row);
        }
    }

    /// The key field packs (run, table) and splits back.
    #[test]
    fn table_fields_round_trip(run in 0u32..RUN_IDS, t in 0u32..256) {
        prop_assert_eq!(split_field(table_field(run, t)), (run, t));
    }
}
