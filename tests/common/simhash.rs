//! SimHash helpers: fingerprints with planted distances, brute-force answers and the check
//! that the persisted tables equal them.

use super::Rng;
use sketchdb::{Collection, Database, SimHash, Sketch, SketchParams, admin, testing};

pub fn params(f: u8) -> SketchParams {
    SketchParams::simhash(f, 7).expect("params")
}

pub fn sk(f: u8, v: u128) -> Sketch {
    Sketch::SimHash(SimHash::from_parts(params(f), v).expect("fp"))
}

pub fn mask(f: u8) -> u128 {
    if f == 128 { u128::MAX } else { u128::from(u64::MAX) }
}

/// Flips exactly `d` distinct bits of `v` among the low `f`.
pub fn flip(rng: &mut Rng, v: u128, d: u32, f: u8) -> u128 {
    let mut out = v;
    let mut flipped = 0;
    while flipped < d {
        let b = rng.range(0, u64::from(f) - 1) as u32;
        if (out ^ v) >> b & 1 == 0 {
            out ^= 1u128 << b;
            flipped += 1;
        }
    }
    out
}

/// Stored (row, fingerprint) pairs, from a scan.
pub fn stored(c: &Collection) -> Vec<(u64, u128)> {
    c.scan()
        .expect("scan")
        .map(|r| {
            let r = r.expect("record");
            match r.sketch {
                Sketch::SimHash(s) => (r.row_id, s.value()),
                _ => panic!("kind"),
            }
        })
        .collect()
}

pub fn brute(rows: &[(u64, u128)], q: u128, radius: u32) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> =
        rows.iter().map(|&(r, x)| (r, (x ^ q).count_ones())).filter(|&(_, d)| d <= radius).collect();
    v.sort_unstable_by_key(|&(r, d)| (d, r));
    v
}

pub fn brute_pairs(rows: &[(u64, u128)], radius: u32) -> Vec<(u64, u64, u32)> {
    let mut v = vec![];
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            let d = (rows[i].1 ^ rows[j].1).count_ones();
            if d <= radius {
                let (a, b) = (rows[i].0.min(rows[j].0), rows[i].0.max(rows[j].0));
                v.push((a, b, d));
            }
        }
    }
    v.sort_unstable_by_key(|&(a, b, d)| (d, a, b));
    v
}

pub fn check(c: &Collection, db: &Database, queries: &[u128], k: u32, stage: &str) {
    let rows = stored(c);
    for &q in queries {
        for radius in [k, k.saturating_sub(1), 0] {
            let got = testing::simhash_within(c, db, q, radius).expect("probe");
            assert_eq!(got, brute(&rows, q, radius), "{stage}: query {q:#x} radius {radius}");
        }
    }
    let batch = testing::simhash_within_batch(c, db, queries, k).expect("batch");
    for (q, got) in queries.iter().zip(batch) {
        assert_eq!(got, brute(&rows, *q, k), "{stage}: batch");
    }
    assert_eq!(testing::simhash_pairs(c, db, k).expect("pairs"), brute_pairs(&rows, k), "{stage}: pairs");
    let report = admin::verify(db).expect("verify");
    assert!(report.is_ok(), "{stage}: {:?}", report.problems);
}
