//! The fuzz targets' logic, shared by the `fuzz/` crate and `tests/fuzz_replay.rs` so that
//! every committed seed and regression input replays as an ordinary test.
//!
//! Each function panics (with a message) on a violated property; any other input must pass.

use super::crash::{CrashOnce, crash_once};
use super::faults::CrashPoint;
use super::rng::{ByteEntropy, Entropy};
use crate::codec::meta::{CatalogRecord, CollectionDef, CollectionState, FormatRecord};
use crate::codec::page::PageView;
use crate::codec::page_builder::PageBuilder;
use crate::codec::record::{decode_row, push_sketch};
use crate::index::IndexDef;
use crate::sketch::bbit::BBitMinHash;
use crate::sketch::minhash::MinHash;
use crate::sketch::oph::OphSketch;
use crate::sketch::params::SketchParams;
use crate::sketch::simhash::SimHash;
use crate::sketch::sketcher::Sketcher;
use crate::sketch::tokens::TokenSet;
use crate::storage::store::Durability;

fn sample_params() -> Vec<SketchParams> {
    [
        SketchParams::minhash(16, 32, 1),
        SketchParams::minhash(8, 64, 1),
        SketchParams::bbit(64, 2, 1),
        SketchParams::bbit(32, 8, 1),
        SketchParams::oph(32, 16, 1),
        SketchParams::oph(16, 8, 1),
        SketchParams::simhash(64, 1),
        SketchParams::simhash(128, 1),
    ]
    .into_iter()
    .filter_map(Result::ok)
    .collect()
}

/// `page_decode`: any bytes either fail to parse with an error, or parse into a page whose
/// every accessor works, whose rows decode or fail with an error, and which a builder
/// rebuilds byte for byte.
pub fn fuzz_page_decode(data: &[u8]) {
    let Ok(view) = PageView::parse(data) else { return };
    let spec = view.spec();
    if PageView::parse_expected(data, &spec, view.first_row()).is_err() {
        panic!("a page fails the checks against its own spec");
    }
    let layout = *view.layout();
    for i in 0..view.row_count() {
        let _ = view.is_deleted(i);
        let key = view.key(i);
        assert!(!key.is_empty() && key.len() <= crate::storage::MAX_KEY_LEN, "key of row {i} out of bounds");
        for j in 0..usize::from(layout.value_cols) {
            let _ = view.value(j, i);
        }
        for j in 0..usize::from(layout.word_cols) {
            let _ = view.word(j, i);
        }
        let _ = view.cardinality(i);
        let _ = view.check_row(i);
        for p in sample_params() {
            if let Ok(s) = decode_row(&view, i, &p) {
                assert_eq!(s.params(), &p, "decoded sketch has other parameters");
            }
        }
    }
    let _ = (view.value_columns(), view.cardinality_column(), view.deleted_count(), view.end_row());
    // Rebuild: a parsed page states a bounded capacity, so the builder's buffers are bounded.
    let rebuilt = PageBuilder::from_view(&view).finish();
    assert!(rebuilt == data, "a parsed page does not rebuild to the same bytes");
}

/// `meta_decode`: metadata envelopes of every kind (index definitions included) decode or fail
/// with an error; what decodes re-encodes and decodes to the same value.
pub fn fuzz_meta_decode(data: &[u8]) {
    if let Ok(r) = FormatRecord::decode(data)
        && let Ok(b) = r.encode()
    {
        assert_eq!(FormatRecord::decode(&b).ok(), Some(r), "format record round trip");
    }
    if let Ok(r) = CatalogRecord::decode(data)
        && let Ok(b) = r.encode()
    {
        assert_eq!(CatalogRecord::decode(&b).ok(), Some(r), "catalog round trip");
    }
    if let Ok(r) = CollectionDef::decode(data) {
        assert!(r.params.validate().is_ok() && r.capacity > 0, "definition decoded unvalidated");
        if let Ok(b) = r.encode() {
            assert_eq!(CollectionDef::decode(&b).ok(), Some(r.clone()), "definition round trip");
        }
        if let Ok(c) = crate::db::config::decode_settings(r.id, r.params, &r.settings) {
            assert!(c.validate().is_ok(), "settings decoded unvalidated");
        }
    }
    if let Ok(r) = CollectionState::decode(data)
        && let Ok(b) = r.encode()
    {
        assert_eq!(CollectionState::decode(&b).ok(), Some(r), "state round trip");
    }
    if let Ok(p) = SketchParams::minhash(8, 32, 1) {
        let _ = crate::db::config::decode_settings(1, p, data);
    }
    if let Ok(d) = IndexDef::decode(1, data) {
        assert!(d.validate().is_ok(), "index definition decoded unvalidated");
        if let Ok(b) = d.encode(1) {
            assert_eq!(IndexDef::decode(1, &b).ok(), Some(d), "index definition round trip");
        }
    }
}

/// Index definitions of every kind this build writes or reads: LSH (variant 4), SimHash
/// tables as runs (variant 5) and as one set (variant 0, earlier builds).
fn sample_index_defs() -> Vec<Vec<u8>> {
    use crate::index::{IndexRequest, IndexSpec, SimhashRun, spec_for};
    let mut out = vec![];
    for (i, p) in sample_params().into_iter().enumerate() {
        let request = if p.kind() == crate::sketch::params::SketchKind::SimHash {
            IndexRequest::Simhash { radius: 1 + i as u32 % 3 }
        } else {
            IndexRequest::Lsh {
                threshold: 0.5 + 0.1 * (i % 4) as f64,
                bands: None,
                rows: None,
                purpose: crate::index::BandingPurpose::default(),
            }
        };
        let Ok(mut spec) = spec_for(request, &p, 1000 * i as u64) else { continue };
        let mut entries = 0;
        if let IndexSpec::Simhash { design, bucket_bits, .. } = spec {
            let one = vec![SimhashRun { id: 0, first_row: 0, rows: 40 }];
            let set = IndexSpec::Simhash { design: design.clone(), bucket_bits, next_run: 1, runs: one };
            let def = IndexDef { spec: set, entries: 40, sum_sq: 0 };
            out.extend(def.encode_before_simhash_runs(1).ok().flatten());
            let runs = vec![SimhashRun { id: 0, first_row: 0, rows: 40 }, SimhashRun { id: 6, first_row: 90, rows: 7 }];
            spec = IndexSpec::Simhash { design, bucket_bits, next_run: 7, runs };
            entries = 47;
        }
        out.extend(IndexDef { spec, entries, sum_sq: 0 }.encode(1).ok());
    }
    out
}

fn check_estimate(e: &crate::sketch::estimate::Estimate, what: &str) {
    assert!(e.value.is_finite() && e.lower.is_finite() && e.upper.is_finite(), "{what}: non-finite {e:?}");
    assert!(e.lower <= e.value + 1e-9 && e.value <= e.upper + 1e-9, "{what}: interval out of order {e:?}");
}

fn fuzz_params(e: &mut ByteEntropy<'_>) -> Option<SketchParams> {
    let size = 1 + e.below(300) as u32;
    let bits = [1u8, 2, 4, 8, 16, 32, 64, 128, 3][e.below(9) as usize];
    let seed = e.below(4);
    match e.below(4) {
        0 => SketchParams::minhash(size, bits, seed),
        1 => SketchParams::bbit(size, bits, seed),
        2 => SketchParams::oph(size, bits, seed),
        _ => SketchParams::simhash(bits, seed),
    }
    .ok()
}

/// `sketch_ops`: sketches of fuzzer-chosen parameters and sets; estimates are finite and
/// ordered; sketches rebuilt from raw parts are accepted or refused, never wrong; every
/// sketch stores in a page and decodes back equal.
pub fn fuzz_sketch_ops(data: &[u8]) {
    let mut e = ByteEntropy::new(data);
    let Some(params) = fuzz_params(&mut e) else { return };
    let Ok(sketcher) = Sketcher::new(params) else { panic!("valid params refused by Sketcher") };
    let set = |e: &mut ByteEntropy<'_>| {
        let n = e.below(64) as usize;
        TokenSet::from_unsorted((0..n).map(|_| e.below(96)).collect())
    };
    let (a, b) = (set(&mut e), set(&mut e));
    let (Ok(sa), Ok(sb)) = (sketcher.sketch(&a), sketcher.sketch(&b)) else {
        assert!(a.is_empty() || b.is_empty(), "a non-empty set failed to sketch");
        return;
    };
    let level = [0.5, 0.9, 0.95, 0.99][e.below(4) as usize];
    if let Ok(est) = sa.similarity(&sb, level) {
        check_estimate(&est, "similarity");
    }
    if let Ok(est) = sa.hamming(&sb, level) {
        check_estimate(&est, "hamming");
    }
    assert!(sa.similarity(&sa, level).is_ok_and(|s| s.value >= 1.0 - 1e-9), "a sketch is not similar to itself");
    // Raw parts: accepted or refused, never a panic.
    let raw: Vec<u64> = (0..params.slots()).map(|_| e.next_u64()).collect();
    let card = e.next_u64();
    let _ = MinHash::from_parts(params, raw.clone(), card);
    let _ = BBitMinHash::from_parts(params, raw.clone(), card);
    let bins: Vec<u32> = raw.iter().map(|&v| v as u32).collect();
    let _ = OphSketch::from_parts(params, bins, raw.iter().take(params.slots().div_ceil(64)).copied().collect(), card);
    let _ = SimHash::from_parts(params, u128::from(card) << 64 | u128::from(e.next_u64()));
    // Store and decode.
    let layout = crate::codec::layout::ColumnLayout::for_params(&params);
    let spec = crate::codec::page::PageSpec { collection_id: 1, layout, capacity: 4 };
    let mut page = PageBuilder::new(spec, 10);
    for (k, s) in [(&b"a"[..], &sa), (&b"bb"[..], &sb)] {
        if let Err(err) = push_sketch(&mut page, k, s) {
            panic!("push_sketch failed: {err}");
        }
    }
    let bytes = page.finish();
    let view = match PageView::parse_expected(&bytes, &spec, 10) {
        Ok(v) => v,
        Err(err) => panic!("a built page does not parse: {err}"),
    };
    for (i, s) in [&sa, &sb].into_iter().enumerate() {
        match decode_row(&view, i, &params) {
            Ok(d) => assert!(&d == s, "row {i} decodes to another sketch"),
            Err(err) => panic!("row {i} does not decode: {err}"),
        }
    }
}

/// `db_ops`: a workload chosen by the fuzzer, a power loss at a chosen sync or write, a
/// chosen crash image; the reopened database must hold an allowed state (see
/// [`super::crash`]).
pub fn fuzz_db_ops(data: &[u8]) {
    let mut e = ByteEntropy::new(data);
    let steps = 1 + e.below(24) as usize;
    let durability = if e.below(4) == 0 { Durability::Eventual } else { Durability::Immediate };
    let point =
        if e.below(2) == 0 { CrashPoint::AtSync(1 + e.below(64)) } else { CrashPoint::AtWrite(1 + e.below(512)) };
    let image_seed = e.next_u64();
    let w = super::model::Workload::generate(&mut e, steps);
    if let Err(err) = crash_once(&CrashOnce { workload: &w, point, image_seed, durability }) {
        panic!("db_ops: {err}");
    }
}

/// Seed inputs for a fuzz target (`page_decode`, `meta_decode`, `sketch_ops`, `db_ops`):
/// valid pages of every kind, every metadata record, and seeded random bytes.
pub fn seed_inputs(target: &str) -> Vec<Vec<u8>> {
    let mut rng = super::rng::SplitMix::new(0x5EED);
    let random = |rng: &mut super::rng::SplitMix, n: usize, len: usize| -> Vec<Vec<u8>> {
        (0..n).map(|i| (0..(len * (i + 1)) / n + 1).map(|_| rng.next_u64() as u8).collect()).collect()
    };
    match target {
        "page_decode" => {
            let mut out = vec![];
            for (n, p) in sample_params().into_iter().enumerate() {
                let layout = crate::codec::layout::ColumnLayout::for_params(&p);
                let spec = crate::codec::page::PageSpec { collection_id: 1 + n as u32, layout, capacity: 8 };
                let Ok(sketcher) = Sketcher::new(p) else { continue };
                let mut page = PageBuilder::new(spec, 100 * n as u64);
                for r in 0..1 + n % 4 {
                    let t = TokenSet::from_unsorted((0..10 + r as u64).map(|x| x * 31 + r as u64).collect());
                    if let Ok(s) = sketcher.sketch(&t) {
                        let _ = push_sketch(&mut page, format!("key-{r}").as_bytes(), &s);
                    }
                }
                if n % 3 == 0 {
                    let _ = page.set_deleted(0);
                }
                out.push(page.finish());
            }
            out
        }
        "meta_decode" => {
            let mut out = vec![];
            let f = FormatRecord {
                format_version: crate::codec::FORMAT_VERSION,
                engine_file_format: 3,
                created_by: "sketchdb seed".into(),
            };
            out.extend(f.encode().ok());
            out.extend(CatalogRecord { next_collection_id: 7 }.encode().ok());
            out.extend(CollectionState { next_row: 12, live: 9, deleted: 3 }.encode().ok());
            for (i, p) in sample_params().into_iter().enumerate() {
                let config = crate::db::config::CollectionConfig::new(p);
                let settings = crate::db::config::encode_settings(&config).unwrap_or_default();
                let def = CollectionDef { id: i as u32 + 1, name: format!("c{i}"), params: p, capacity: 64, settings };
                out.extend(def.encode().ok());
            }
            out.extend(sample_index_defs());
            out
        }
        "sketch_ops" => random(&mut rng, 16, 256),
        "db_ops" => random(&mut rng, 16, 600),
        _ => vec![],
    }
}
