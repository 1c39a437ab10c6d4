//! Codec unit tests: round trips for every sketch kind, corruption detection, and proptests
//! that decoding arbitrary bytes never panics.

use proptest::prelude::*;

use super::envelope::{self, RecordKind};
use super::error::CodecError;
use super::layout::ColumnLayout;
use super::meta::{CollectionDef, CollectionState, FormatRecord};
use super::page::{PageSpec, PageView};
use super::page_builder::PageBuilder;
use super::record::{decode_row, push_sketch};
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::{Sketch, Sketcher};
use crate::sketch::tokens::TokenSet;

fn all_params() -> Vec<SketchParams> {
    let mut v = vec![];
    for bits in [32, 64] {
        v.push(SketchParams::minhash(128, bits, 7).unwrap());
        v.push(SketchParams::minhash(3, bits, 7).unwrap());
    }
    for b in [1, 2, 4, 8, 16, 32] {
        v.push(SketchParams::bbit(100, b, 7).unwrap());
    }
    for bits in [8, 16, 32] {
        v.push(SketchParams::oph(200, bits, 7).unwrap());
        v.push(SketchParams::oph(64, bits, 7).unwrap());
    }
    v.push(SketchParams::simhash(64, 7).unwrap());
    v.push(SketchParams::simhash(128, 7).unwrap());
    let lanes32 = crate::sketch::params::HashFamily::MixMultiplyShift32;
    v.push(SketchParams::minhash(128, 32, 7).unwrap().with_family(lanes32).unwrap());
    v.push(SketchParams::bbit(100, 4, 7).unwrap().with_family(lanes32).unwrap());
    v
}

fn sketches(params: SketchParams, n: usize) -> Vec<Sketch> {
    let s = Sketcher::new(params).unwrap();
    (0..n)
        .map(|i| {
            let len = 1 + (i * 7) % 40;
            s.sketch(&TokenSet::from_unsorted((0..len as u64).map(|t| t * 1_000_003 + i as u64).collect())).unwrap()
        })
        .collect()
}

fn spec(params: &SketchParams, capacity: u32) -> PageSpec {
    PageSpec { collection_id: 9, layout: ColumnLayout::for_params(params), capacity }
}

/// A row reads back from the builder it is being written into (as a delete reads the row it
/// tombstones) equal to what was pushed, in a page filled only in part (the builder's column
/// stride is its capacity, not its row count) and after a reload from stored bytes; a row
/// past the end is an error.
#[test]
fn every_kind_decodes_from_a_builder() {
    for params in all_params() {
        let spec = spec(&params, 70);
        let input = sketches(params, 23);
        let mut b = PageBuilder::new(spec, 7);
        for (i, s) in input.iter().enumerate() {
            push_sketch(&mut b, format!("key{i}").as_bytes(), s).unwrap();
        }
        let reloaded = b.finish();
        let view = PageView::parse_expected(&reloaded, &spec, 7).unwrap();
        let again = PageBuilder::from_view(&view);
        for (i, s) in input.iter().enumerate() {
            assert_eq!(&decode_row(&b, i, &params).unwrap(), s, "{params}, row {i}");
            assert_eq!(&decode_row(&again, i, &params).unwrap(), s, "{params}, row {i} after reload");
        }
        assert!(matches!(decode_row(&b, 23, &params), Err(CodecError::RowOutOfRange { index: 23, rows: 23 })));
    }
}

/// A builder stages rows and moves them into the columns in blocks: every row reads back
/// equal whether it is staged, settled, or written after a finish (which settles), across
/// several stage blocks and a page of a capacity that is no multiple of a block.
#[test]
fn rows_read_back_while_staged_and_after_settling() {
    for params in all_params() {
        let spec = spec(&params, 203);
        let input = sketches(params, 203);
        let mut b = PageBuilder::new(spec, 0);
        for (i, s) in input.iter().enumerate() {
            push_sketch(&mut b, format!("k{i}").as_bytes(), s).unwrap();
            for j in [i, i / 2, i.saturating_sub(64), i.saturating_sub(65)] {
                assert_eq!(&decode_row(&b, j, &params).unwrap(), &input[j], "{params}, row {j} after {i}");
            }
            if i == 100 {
                // A finish part way settles every row; appending goes on after it.
                let part = b.finish();
                let view = PageView::parse_expected(&part, &spec, 0).unwrap();
                assert_eq!(view.row_count(), 101);
                assert_eq!(&decode_row(&view, 100, &params).unwrap(), s, "{params}");
            }
        }
        b.set_deleted(202).unwrap();
        let bytes = b.finish();
        let view = PageView::parse_expected(&bytes, &spec, 0).unwrap();
        assert!(view.is_deleted(202) && !view.is_deleted(201));
        for (i, s) in input.iter().enumerate() {
            assert_eq!(&decode_row(&view, i, &params).unwrap(), s, "{params}, row {i} stored");
            assert_eq!(view.key(i), format!("k{i}").as_bytes());
        }
    }
}

#[test]
fn every_kind_round_trips_through_a_page() {
    for params in all_params() {
        let spec = spec(&params, 70);
        let input = sketches(params, 70);
        let mut b = PageBuilder::new(spec, 140);
        for (i, s) in input.iter().enumerate() {
            assert_eq!(push_sketch(&mut b, format!("key{i}").as_bytes(), s).unwrap(), 140 + i as u64);
        }
        assert!(b.is_full());
        b.set_deleted(3).unwrap();
        let bytes = b.finish();
        assert_eq!(bytes.len(), b.len());
        let view = PageView::parse_expected(&bytes, &spec, 140).unwrap();
        assert_eq!(view.row_count(), 70);
        assert!(view.is_deleted(3) && !view.is_deleted(4));
        assert_eq!(view.deleted_count(), 1);
        for (i, s) in input.iter().enumerate() {
            assert_eq!(&decode_row(&view, i, &params).unwrap(), s, "{params}");
            assert_eq!(view.key(i), format!("key{i}").as_bytes());
        }
        // Rebuilding from the view and appending nothing gives the same bytes.
        assert_eq!(PageBuilder::from_view(&view).finish(), bytes);
    }
}

#[test]
fn columns_are_contiguous() {
    let params = SketchParams::minhash(4, 32, 1).unwrap();
    let spec = spec(&params, 8);
    let input = sketches(params, 5);
    let mut b = PageBuilder::new(spec, 0);
    for s in &input {
        push_sketch(&mut b, b"k", s).unwrap();
    }
    let bytes = b.finish();
    let view = PageView::parse(&bytes).unwrap();
    let col1 = view.value_column(1);
    assert_eq!(col1.len(), 5 * 4);
    for (i, s) in input.iter().enumerate() {
        let Sketch::MinHash(m) = s else { panic!() };
        assert_eq!(u64::from(u32::from_le_bytes(col1[i * 4..i * 4 + 4].try_into().unwrap())), m.values()[1]);
    }
}

#[test]
fn a_partial_page_grows_from_its_view() {
    let params = SketchParams::oph(100, 16, 3).unwrap();
    let spec = spec(&params, 50);
    let input = sketches(params, 30);
    let mut b = PageBuilder::new(spec, 55);
    for (i, s) in input[..10].iter().enumerate() {
        push_sketch(&mut b, &[i as u8 + 1; 3], s).unwrap();
    }
    let first = b.finish();
    let mut b = PageBuilder::from_view(&PageView::parse(&first).unwrap());
    for (i, s) in input.iter().enumerate().skip(10) {
        push_sketch(&mut b, &[i as u8 + 1; 3], s).unwrap();
    }
    assert_eq!(b.row_count(), 30);
    let bytes = b.finish();
    let view = PageView::parse_expected(&bytes, &spec, 55).unwrap();
    for (i, s) in input.iter().enumerate() {
        assert_eq!(&decode_row(&view, i, &params).unwrap(), s);
        assert_eq!(view.key(i), &[i as u8 + 1; 3]);
    }
}

#[test]
fn every_flipped_byte_is_caught() {
    let params = SketchParams::minhash(8, 32, 1).unwrap();
    let spec = spec(&params, 16);
    let mut b = PageBuilder::new(spec, 0);
    for (i, s) in sketches(params, 10).iter().enumerate() {
        push_sketch(&mut b, format!("k{i}").as_bytes(), s).unwrap();
    }
    let bytes = b.finish();
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(PageView::parse_expected(&bad, &spec, 0).is_err(), "flip at {at} not caught");
    }
}

#[test]
fn wrong_page_number_and_collection_are_refused() {
    let params = SketchParams::simhash(64, 1).unwrap();
    let spec = spec(&params, 16);
    let mut b = PageBuilder::new(spec, 16);
    push_sketch(&mut b, b"key", &sketches(params, 1)[0]).unwrap();
    let bytes = b.finish();
    assert!(PageView::parse_expected(&bytes, &spec, 16).is_ok());
    assert!(matches!(
        PageView::parse_expected(&bytes, &spec, 17),
        Err(CodecError::BadField { field: "first_row", .. })
    ));
    let other = PageSpec { collection_id: 10, ..spec };
    assert!(matches!(
        PageView::parse_expected(&bytes, &other, 16),
        Err(CodecError::BadField { field: "collection_id", .. })
    ));
}

#[test]
fn envelopes_round_trip_and_refuse_unknown_versions() {
    let def = CollectionDef {
        id: 3,
        name: "docs".into(),
        params: SketchParams::bbit(64, 2, 5).unwrap(),
        capacity: 100,
        settings: vec![1, 2, 3],
    };
    let bytes = def.encode().unwrap();
    assert_eq!(CollectionDef::decode(&bytes).unwrap(), def);
    let st = CollectionState { next_row: 10, live: 7, deleted: 3 };
    assert_eq!(CollectionState::decode(&st.encode().unwrap()).unwrap(), st);
    // The wrong record kind is refused.
    assert!(CollectionState::decode(&bytes).is_err());
    let v2 = envelope::encode_with_version(RecordKind::CollectionDef, 2, &def).unwrap();
    assert!(matches!(CollectionDef::decode(&v2), Err(CodecError::UnsupportedVersion { found: 2, supported: 1, .. })));
    let f = FormatRecord { format_version: 1, engine_file_format: 3, created_by: "t".into() };
    assert_eq!(FormatRecord::decode(&f.encode().unwrap()).unwrap(), f);
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        assert!(CollectionDef::decode(&bad).is_err(), "flip at {at} not caught");
    }
}

#[test]
fn a_capacity_no_page_can_hold_is_refused_before_any_buffer_is_sized() {
    let params = SketchParams::minhash(4, 32, 1).unwrap();
    // A page header stating a huge capacity (re-sealed so only the bound can refuse it).
    let mut b = PageBuilder::new(spec(&params, 4), 0);
    push_sketch(&mut b, b"k", &sketches(params, 1)[0]).unwrap();
    let mut bytes = b.finish();
    bytes[28..32].copy_from_slice(&(1u32 << 30).to_le_bytes());
    let crc = super::header::page_crc(&bytes);
    bytes[8..12].copy_from_slice(&crc.to_le_bytes());
    match PageView::parse(&bytes) {
        Err(CodecError::BadField { field: "capacity", .. }) => {}
        other => panic!("expected a capacity error, got {other:?}"),
    }
    // A collection definition stating one.
    for capacity in [0, super::page::MAX_PAGE_ROWS + 1, u32::MAX] {
        let def = CollectionDef { id: 1, name: "c".into(), params, capacity, settings: vec![] };
        match CollectionDef::decode(&def.encode().unwrap()) {
            Err(CodecError::BadField { field: "capacity", .. }) => {}
            other => panic!("capacity {capacity}: expected a capacity error, got {other:?}"),
        }
    }
    let ok = CollectionDef { id: 1, name: "c".into(), params, capacity: super::page::MAX_PAGE_ROWS, settings: vec![] };
    assert_eq!(CollectionDef::decode(&ok.encode().unwrap()).unwrap().capacity, super::page::MAX_PAGE_ROWS);
}

#[test]
fn a_stored_value_beyond_its_width_is_an_error_not_a_sketch() {
    // A MinHash-32 page whose value column says 8 bytes is refused by the layout check; a
    // b-bit row with bits past k*b is refused by from_parts.
    let params = SketchParams::bbit(3, 4, 1).unwrap();
    let spec = spec(&params, 4);
    let mut b = PageBuilder::new(spec, 0);
    assert!(b.begin_row(b"").is_err());
    assert!(b.begin_row(&[0; 1025]).is_err());
    let cells = b.begin_row_cells(b"x").unwrap();
    // One packed word with every bit set, then the cardinality.
    cells[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    cells[8..16].copy_from_slice(&5u64.to_le_bytes());
    let bytes = b.finish();
    let view = PageView::parse(&bytes).unwrap();
    assert!(matches!(decode_row(&view, 0, &params), Err(CodecError::Sketch { .. })));
    assert!(matches!(decode_row(&view, 1, &params), Err(CodecError::RowOutOfRange { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let params = SketchParams::minhash(4, 32, 1).unwrap();
        let spec = spec(&params, 8);
        if let Ok(view) = PageView::parse(&bytes) {
            for i in 0..view.row_count().min(16) {
                let _ = decode_row(&view, i, &params);
            }
        }
        let _ = PageView::parse_expected(&bytes, &spec, 0);
        let _ = CollectionDef::decode(&bytes);
        let _ = CollectionState::decode(&bytes);
        let _ = FormatRecord::decode(&bytes);
    }

    #[test]
    fn mutated_valid_pages_never_panic_nor_decode_differently(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        skip_crc in any::<bool>(),
    ) {
        let params = SketchParams::oph(70, 8, 2).unwrap();
        let spec = spec(&params, 8);
        let input = sketches(params, 5);
        let mut b = PageBuilder::new(spec, 0);
        for s in &input {
            push_sketch(&mut b, b"key", s).unwrap();
        }
        let mut bytes = b.finish();
        for (at, x) in flips {
            let at = at % bytes.len();
            bytes[at] ^= x;
        }
        if skip_crc {
            // Re-seal so the structural checks and from_parts, not the crc, face the damage.
            let crc = super::header::page_crc(&bytes);
            bytes[8..12].copy_from_slice(&crc.to_le_bytes());
        }
        if let Ok(view) = PageView::parse_expected(&bytes, &spec, 0) {
            for i in 0..view.row_count() {
                if let Ok(s) = decode_row(&view, i, &params) {
                    prop_assert_eq!(s.params(), &params);
                }
                prop_assert!(view.key(i).len() <= 1024);
            }
        }
    }
}

/// A removed-rows bitmap is ORed into a view, folded into a builder, and refused when it does
/// not fit the page (wrong length, a bit past the rows, no bit, a bit the page already has).
#[test]
fn removed_rows_bitmaps_overlay_fold_and_are_checked() {
    use super::page::{check_dead_words, dead_bytes, dead_words};
    let params = SketchParams::minhash(8, 32, 3).unwrap();
    let spec = spec(&params, 100);
    let mut b = PageBuilder::new(spec, 500);
    for (i, s) in sketches(params, 70).iter().enumerate() {
        push_sketch(&mut b, format!("key{i}").as_bytes(), s).unwrap();
    }
    b.set_deleted(1).unwrap();
    let bytes = b.finish();
    let view = PageView::parse_expected(&bytes, &spec, 500).unwrap();
    let words = vec![1u64 << 5, 1 << (66 - 64)];
    assert_eq!(dead_words(&dead_bytes(&words)).unwrap(), words);
    check_dead_words(&view, &words).unwrap();
    let both = view.with_dead(&words);
    let deleted: Vec<usize> = (0..70).filter(|&i| both.is_deleted(i)).collect();
    assert_eq!(deleted, [1, 5, 66]);
    assert_eq!((view.deleted_count(), both.deleted_count()), (1, 3));
    // Folded into a builder, the page's own bitmap says the same.
    let mut folded = PageBuilder::from_view(&view);
    folded.or_deleted(&words).unwrap();
    let again = folded.finish();
    let folded_view = PageView::parse_expected(&again, &spec, 500).unwrap();
    assert_eq!((0..70).filter(|&i| folded_view.is_deleted(i)).collect::<Vec<_>>(), deleted);
    assert_eq!(PageBuilder::from_view(&both).finish(), again, "a builder from an overlaid view folds it");
    for (bad, says) in [
        (vec![1u64], "length"),
        (vec![0, 1 << 6], "row index 70 removed"),
        (vec![0, 0], "at least one"),
        (vec![1 << 1, 0], "removed twice"),
    ] {
        let e = check_dead_words(&view, &bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad:?}: {e}");
    }
    assert!(folded.or_deleted(&[0, 1 << 6]).is_err());
    assert!(dead_words(&[]).is_err() && dead_words(&[1, 2, 3]).is_err());
}
