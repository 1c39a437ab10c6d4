//! LSH buckets are packed in groups (top `group_bits` bits of the band key): a group over
//! [`GROUP_CHUNK_ENTRIES`] entries is split over consecutive chunks of bounded size, shrinks
//! back when rows go, and candidates stay exact throughout.

use std::collections::BTreeMap;

use sketchdb::{Batch, CollectionConfig, Database, IndexConfig, SketchParams, Sketcher, TokenSet, admin, testing};

const GROUP_CHUNK_ENTRIES: usize = 1024;

type Chunks = Vec<(u32, u64, u32, usize)>;

/// (band, group) -> chunk sizes, checking chunk numbers run 0.. and sizes are bounded.
fn groups(chunks: &Chunks) -> BTreeMap<(u32, u64), Vec<usize>> {
    let mut out: BTreeMap<(u32, u64), Vec<usize>> = BTreeMap::new();
    for &(band, group, chunk, n) in chunks {
        let sizes = out.entry((band, group)).or_default();
        assert_eq!(chunk as usize, sizes.len(), "band {band} group {group:#x}: chunk numbers have a gap");
        assert!((1..=GROUP_CHUNK_ENTRIES).contains(&n), "band {band} group {group:#x} chunk {chunk}: {n} entries");
        sizes.push(n);
    }
    out
}

#[test]
fn hot_groups_split_into_bounded_chunks_and_shrink_back() {
    let params = SketchParams::minhash(16, 64, 7).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(index)).expect("collection");
    let sk = Sketcher::new(params).expect("sk");
    let hot = sk.sketch(&TokenSet::from_unsorted((0..40).collect())).expect("sketch");
    // 2600 identical signatures (one hot bucket per band) plus 300 distinct ones.
    let mut batch = Batch::new();
    for i in 0..2600 {
        batch.insert(format!("h{i}"), hot.clone());
    }
    for i in 0..300u64 {
        let s = sk.sketch(&TokenSet::from_unsorted((1000 * i + 100..1000 * i + 140).collect())).expect("sketch");
        batch.insert(format!("d{i}"), s);
    }
    c.apply(&batch).expect("insert");
    let (bits, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(bits, 10, "an index created empty gets 1024 groups per band");
    let g = groups(&chunks);
    for band in 0..4 {
        let biggest =
            g.iter().filter(|(k, _)| k.0 == band).map(|(_, v)| v.clone()).max_by_key(|v| v.iter().sum::<usize>());
        let biggest = biggest.expect("band has groups");
        assert_eq!(biggest.len(), 3, "band {band}: {biggest:?}");
        let total: usize = biggest.iter().sum();
        assert!(total >= 2600);
        // Spread evenly, not 1024 + 1024 + rest.
        assert!(biggest.iter().all(|&n| n > GROUP_CHUNK_ENTRIES / 2), "{biggest:?}");
    }
    let total: usize = g.values().flatten().sum();
    assert_eq!(total, 2900 * 4);
    assert_eq!(testing::lsh_candidates(&c, &db, &hot, 4).expect("c").len(), 2600);
    assert!(admin::verify(&db).expect("verify").is_ok());

    // Remove most hot rows: the hot groups shrink to one chunk, the others' chunks go.
    let mut batch = Batch::new();
    for i in 100..2600 {
        batch.delete(format!("h{i}"));
    }
    c.apply(&batch).expect("delete");
    let (_, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    let g = groups(&chunks);
    assert!(g.values().all(|v| v.len() == 1), "every group fits one chunk again");
    assert_eq!(g.values().flatten().sum::<usize>(), 400 * 4);
    assert_eq!(testing::lsh_candidates(&c, &db, &hot, 4).expect("c").len(), 100);
    let (_, mean) = testing::lsh_stats(&c, &db).expect("stats").expect("lsh");
    assert!(mean > 20.0, "sum(s^2)/sum(s) counts exact band keys, not groups: {mean}");
    assert!(admin::verify(&db).expect("verify").is_ok());

    // Everything goes: no group is left.
    let mut batch = Batch::new();
    for i in 0..100 {
        batch.delete(format!("h{i}"));
    }
    for i in 0..300 {
        batch.delete(format!("d{i}"));
    }
    c.apply(&batch).expect("delete all");
    let (_, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert!(chunks.is_empty());
    assert_eq!(testing::lsh_stats(&c, &db).expect("stats").expect("lsh").1, 0.0);
    assert!(admin::verify(&db).expect("verify").is_ok());
}

#[test]
fn rebuild_chooses_group_bits_for_the_row_count() {
    let params = SketchParams::minhash(8, 64, 9).expect("p");
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let index = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(2) };
    let mut c = db.create_collection("s", CollectionConfig::new(params).with_index(index)).expect("collection");
    let sk = Sketcher::new(params).expect("sk");
    let mut batch = Batch::new();
    for i in 0..140_000u64 {
        let s = sk.sketch(&TokenSet::from_unsorted(vec![i, i + 1_000_000])).expect("sketch");
        batch.insert(format!("{i}"), s);
    }
    c.apply(&batch).expect("insert");
    c.rebuild_index(index).expect("rebuild");
    let (bits, chunks) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(bits, 11, "140k rows / 128 per group -> 2^11 groups");
    groups(&chunks);
    assert!(admin::verify(&db).expect("verify").is_ok());
}
