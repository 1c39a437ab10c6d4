//! The index definition's wire variants: round trips, earlier variants read as the
//! current spec, and checks of decoded definitions.

use proptest::prelude::*;

use super::*;
use crate::index::lsh::{LshParams, RowWidth};

fn lsh(reverse_map: bool, dead: u64) -> IndexDef {
    let scheme = BandKeyScheme::new(7, LshParams { bands: 39, rows: 13 }, RowWidth::U8);
    let run = LshRun { id: 4, group_bits: 3, first_row: 0, end_row: 10, entries: 390, sum_sq: 400, dead };
    IndexDef {
        spec: IndexSpec::Lsh { scheme, threshold: 0.8, next_run: 5, runs: vec![run], reverse_map },
        entries: 390,
        sum_sq: 400,
    }
}

/// The LSH wire variants round-trip to the same runs, told apart by the variant index:
/// 4 without a reverse map (what this build writes, removed-row counts included), 2 with
/// one (earlier builds).
#[test]
fn lsh_wire_variants_round_trip_and_keep_their_indexes() {
    for (reverse_map, dead, variant) in [(false, 0, 4u8), (false, 3, 4), (true, 0, 2)] {
        let def = lsh(reverse_map, dead);
        assert_eq!(IndexDef::decode(1, &def.encode(1).expect("encode")).expect("decode"), def);
        let spec = postcard::to_allocvec(&def.spec).expect("postcard");
        assert_eq!(spec[0], variant, "reverse map {reverse_map}");
    }
}

/// Variant 3, as the builds before removed-row counts wrote it, reads as runs with no
/// removed rows; a run counting more removed rows than it holds is refused.
#[test]
fn variant_3_reads_with_no_removed_rows_and_counts_are_checked() {
    let want = lsh(false, 0);
    let IndexSpec::Lsh { scheme, threshold, next_run, runs, .. } = want.spec.clone() else { unreachable!() };
    let runs = runs
        .into_iter()
        .map(|r| LshRunV3 {
            id: r.id,
            group_bits: r.group_bits,
            first_row: r.first_row,
            end_row: r.end_row,
            entries: r.entries,
            sum_sq: r.sum_sq,
        })
        .collect();
    #[derive(Serialize)]
    struct Def3 {
        spec: IndexSpecWire,
        entries: u64,
        sum_sq: u128,
    }
    let spec = IndexSpecWire::LshEager(LshWire { scheme, threshold, next_run, runs });
    assert_eq!(postcard::to_allocvec(&spec).expect("postcard")[0], 3);
    let bytes = envelope::encode(RecordKind::IndexDef, &Def3 { spec, entries: 390, sum_sq: 400 }).expect("encode");
    assert_eq!(IndexDef::decode(1, &bytes).expect("decode"), want);
    // 390 entries at 39 bands hold 10 rows.
    assert!(IndexDef::decode(1, &lsh(false, 10).encode(1).unwrap()).is_ok());
    match IndexDef::decode(2, &lsh(false, 11).encode(2).unwrap()) {
        Err(StorageError::CorruptMeta { table, key, .. }) => {
            assert_eq!((table, key.as_str()), (INDEX_DEFS_NAME, "2"))
        }
        other => panic!("{other:?}"),
    }
}

/// SimHash tables as builds before runs stored them (variant 0) read as one run, number
/// 0, holding every counted row, and are written back as variant 5; run lists are checked.
#[test]
fn simhash_variant_0_reads_as_run_0_and_runs_are_checked() {
    let design = SimhashTableDesign::design(1000, 3, 64).expect("design");
    let run = |id, first_row, rows| SimhashRun { id, first_row, rows };
    let def = |next_run, runs: Vec<SimhashRun>| IndexDef {
        entries: runs.iter().map(|r| r.rows).sum(),
        spec: IndexSpec::Simhash { design: design.clone(), bucket_bits: 16, next_run, runs },
        sum_sq: 0,
    };
    let one = def(1, vec![run(0, 0, 7)]);
    let old = one.encode_before_simhash_runs(1).expect("encode").expect("run 0 alone");
    assert_eq!(IndexDef::decode(1, &old).expect("decode"), one);
    let empty = def(1, vec![]);
    let old = empty.encode_before_simhash_runs(1).expect("encode").expect("no runs");
    assert_eq!(IndexDef::decode(1, &old).expect("decode"), empty);
    let two = def(9, vec![run(0, 0, 7), run(8, 10, 3)]);
    assert!(two.encode_before_simhash_runs(1).expect("encode").is_none());
    assert_eq!(postcard::to_allocvec(&two.spec).expect("postcard")[0], 5);
    assert_eq!(IndexDef::decode(1, &two.encode(1).unwrap()).expect("decode"), two);
    let bad = [
        def(8, vec![run(0, 0, 7), run(8, 10, 3)]),  // a number not below next_run
        def(9, vec![run(0, 10, 7), run(8, 10, 3)]), // rows not ascending
        def(9, vec![run(0, 0, 7), run(0, 10, 3)]),  // a number twice
        def(9, vec![run(0, 0, 0)]),                 // an empty run
    ];
    for d in bad {
        assert!(matches!(IndexDef::decode(1, &d.encode(1).unwrap()), Err(StorageError::CorruptMeta { .. })), "{d:?}");
    }
    let mut off = def(9, vec![run(0, 0, 7)]);
    off.entries = 8;
    assert!(IndexDef::decode(1, &off.encode(1).unwrap()).is_err(), "counter differs from the runs");
}

/// A variant this build does not know (as a later build might append) is refused as
/// corrupt metadata of `sketchdb.index_defs`, never read as another.
#[test]
fn an_unknown_spec_variant_is_refused() {
    #[derive(Serialize)]
    enum Later {
        _A,
        _B,
        _C,
        _D,
        _E,
        _F,
        G(u32),
    }
    #[derive(Serialize)]
    struct LaterDef {
        spec: Later,
        entries: u64,
        sum_sq: u128,
    }
    let bytes =
        envelope::encode(RecordKind::IndexDef, &LaterDef { spec: Later::G(1), entries: 0, sum_sq: 0 }).expect("encode");
    match IndexDef::decode(3, &bytes) {
        Err(StorageError::CorruptMeta { table, key, .. }) => {
            assert_eq!((table, key.as_str()), (INDEX_DEFS_NAME, "3"))
        }
        other => panic!("{other:?}"),
    }
}

/// The payloads of a few valid definitions: LSH with a removed row, SimHash runs, SimHash
/// as one set (variant 0).
fn sample_payloads() -> Vec<Vec<u8>> {
    let design = SimhashTableDesign::design(1000, 3, 64).expect("design");
    let runs = vec![SimhashRun { id: 0, first_row: 0, rows: 7 }, SimhashRun { id: 8, first_row: 10, rows: 3 }];
    let simhash =
        IndexDef { spec: IndexSpec::Simhash { design, bucket_bits: 16, next_run: 9, runs }, entries: 10, sum_sq: 0 };
    let mut one = simhash.clone();
    if let IndexSpec::Simhash { runs, .. } = &mut one.spec {
        runs.truncate(1);
    }
    one.entries = 7;
    let framed = [lsh(false, 1).encode(1), simhash.encode(1), Ok(one.encode_before_simhash_runs(1).unwrap().unwrap())];
    framed.into_iter().map(|b| b.unwrap()[crate::codec::envelope::ENVELOPE_HEADER_LEN..].to_vec()).collect()
}

proptest! {
    /// A damaged payload under a valid frame (a byte changed, the payload cut short or a
    /// byte inserted) decodes to a definition that passes its checks and round-trips, or is
    /// refused as corrupt metadata: never a panic.
    #[test]
    fn damaged_payloads_decode_checked_or_fail(
        which in 0usize..3,
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let mut payload = sample_payloads().swap_remove(which);
        let i = at.index(payload.len());
        match how {
            0 => payload[i] = byte,
            1 => payload.truncate(i),
            _ => payload.insert(i, byte),
        }
        let bytes = crate::codec::envelope::frame_raw(RecordKind::IndexDef, &payload);
        match IndexDef::decode(1, &bytes) {
            Ok(d) => {
                prop_assert!(d.validate().is_ok());
                prop_assert_eq!(IndexDef::decode(1, &d.encode(1).unwrap()).ok(), Some(d));
            }
            Err(e) => prop_assert!(matches!(e, StorageError::CorruptMeta { .. }), "{e:?}"),
        }
    }
}
