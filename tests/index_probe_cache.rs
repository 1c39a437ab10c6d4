//! Index probes keep the values they read in a cache keyed by (database handle, collection,
//! index definition bytes, and for SimHash tables the collection's next row and live count).
//! These tests pin what makes that sound: a probe never sees values of another database with
//! byte-identical definitions, of a later commit (a held snapshot keeps its own answers), or
//! of an earlier one (after inserts, deletes, upserts that leave the definition unchanged and
//! compaction, the answers follow the index).

use sketchdb::{
    Batch, CollectionConfig, Database, IndexConfig, SimHash, Sketch, SketchParams, Sketcher, TokenSet, testing,
};

const INDEX: IndexConfig = IndexConfig::Lsh { threshold: 0.5, bands: Some(4), rows: Some(4) };

fn sketch(sk: &Sketcher, base: u64) -> Sketch {
    sk.sketch(&TokenSet::from_unsorted((base..base + 40).collect())).expect("sketch")
}

/// Two files, each with collection id 1 and 50 distinct signatures written in one batch:
/// their index definitions are byte-identical (same scheme, one run of rows 0..50, every
/// bucket of size 1), their buckets are not.
#[test]
fn identical_definitions_in_two_databases_do_not_share_chunks() {
    let params = SketchParams::minhash(16, 64, 1).expect("p");
    let sk = Sketcher::new(params).expect("sk");
    let dir = tempfile::tempdir().expect("dir");
    let open = |name: &str, base: u64| {
        let db = Database::create(dir.path().join(name)).expect("create");
        let c = db.create_collection("s", CollectionConfig::new(params).with_index(INDEX)).expect("collection");
        let mut b = Batch::new();
        for i in 0..50u64 {
            b.insert(format!("k{i}"), sketch(&sk, base + 1000 * i));
        }
        c.apply(&b).expect("insert");
        (db, c)
    };
    let (db1, c1) = open("one", 0);
    let (db2, c2) = open("two", 10_000_000);
    assert_eq!(testing::lsh_stats(&c1, &db1).expect("s"), testing::lsh_stats(&c2, &db2).expect("s"));
    let probe = sketch(&sk, 3000);
    assert_eq!(testing::lsh_candidates(&c1, &db1, &probe, 4).expect("c"), vec![3]);
    assert_eq!(testing::lsh_candidates(&c2, &db2, &probe, 4).expect("c"), Vec::<u64>::new());
    assert_eq!(testing::lsh_candidates(&c1, &db1, &probe, 4).expect("c"), vec![3]);
}

#[test]
fn snapshots_and_later_commits_each_see_their_own_buckets() {
    let params = SketchParams::minhash(16, 64, 2).expect("p");
    let sk = Sketcher::new(params).expect("sk");
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let c = db.create_collection("s", CollectionConfig::new(params).with_index(INDEX)).expect("collection");
    let probe = sketch(&sk, 7);
    let mut b = Batch::new();
    for i in 0..20u64 {
        b.insert(format!("k{i}"), sketch(&sk, 100_000 * (i + 1)));
    }
    c.apply(&b).expect("insert");
    let before = testing::hold_snapshot(&db).expect("snapshot");
    assert!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c").is_empty());
    // A matching row arrives: the latest commit finds it, the held snapshot does not.
    c.insert("match", &probe).expect("insert");
    assert_eq!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c"), vec![20]);
    assert!(testing::lsh_candidates_in(&before, &c, &probe, 4).expect("c").is_empty());
    let with_match = testing::hold_snapshot(&db).expect("snapshot");
    // It goes again: the latest commit no longer finds it, the second snapshot still does.
    c.delete("match").expect("delete");
    assert!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c").is_empty());
    assert_eq!(testing::lsh_candidates_in(&with_match, &c, &probe, 4).expect("c"), vec![20]);
    assert!(testing::lsh_candidates_in(&before, &c, &probe, 4).expect("c").is_empty());
    // Upserted back under a new row, then compacted (rows move, runs merge): still found,
    // under the row id it has now.
    c.upsert("match", &probe).expect("upsert");
    assert_eq!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c"), vec![21]);
    c.delete("k3").expect("delete");
    drop((before, with_match)); // file compaction waits for no reader
    let s = db.compact().expect("compact");
    assert!(s.rows_moved > 0);
    let row = c.get("match").expect("get").expect("present").row_id;
    assert_eq!(testing::lsh_candidates(&c, &db, &probe, 4).expect("c"), vec![row]);
    let (runs, _) = testing::lsh_group_chunks(&c, &db).expect("chunks").expect("lsh");
    assert_eq!(runs.len(), 1, "compaction merges the runs: {runs:?}");
}

/// An upsert moves a key to a new row and keeps the SimHash definition's bytes (the live row
/// count is unchanged); probes must still see the move, and a snapshot from before must not.
#[test]
fn simhash_probes_follow_upserts_that_keep_the_definition() {
    let params = SketchParams::simhash(64, 3).expect("p");
    let fp = |v: u64| Sketch::SimHash(SimHash::from_parts(params, u128::from(v)).expect("fp"));
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::create(dir.path().join("db")).expect("create");
    let config = CollectionConfig::new(params).with_index(IndexConfig::SimhashTables { radius: 3 });
    let c = db.create_collection("f", config).expect("collection");
    let mut b = Batch::new();
    for i in 0..200u64 {
        b.insert(format!("k{i}"), fp(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }
    c.apply(&b).expect("insert");
    let target = 0x0123_4567_89ab_cdefu64;
    assert!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe").is_empty());
    let before = testing::hold_snapshot(&db).expect("snapshot");
    c.upsert("k7", &fp(target ^ 0b101)).expect("upsert");
    assert_eq!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe"), vec![(200, 2)]);
    assert!(testing::simhash_within_in(&before, &c, u128::from(target), 3).expect("probe").is_empty());
    // Once more: the key moves again, the definition still unchanged.
    c.upsert("k7", &fp(target)).expect("upsert");
    assert_eq!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe"), vec![(201, 0)]);
    c.delete("k7").expect("delete");
    assert!(testing::simhash_within(&c, &db, u128::from(target), 3).expect("probe").is_empty());
}
