//! Warm reads beside other writers: handles that share the file with other writers
//! (multi-writer mode) keep no snapshot, so each query sees the others' commits; a sole
//! writer (single-writer, exclusive or eventual) keeps one.

use super::database::Database;
use crate::db::config::{CollectionConfig, IndexConfig};
use crate::planner::query::Query;
use crate::sketch::params::SketchParams;
use crate::storage::store::{Durability, Sharing};

fn keys(c: &super::collection::Collection, q: &Query) -> Vec<Vec<u8>> {
    c.query(q).expect("query").hits.into_iter().map(|h| h.key).collect()
}

#[test]
fn a_multi_writer_handle_sees_another_writers_commit_at_its_next_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.sketchdb");
    let builder = Database::builder().sharing(Sharing::MultiWriter);
    let a = builder.create(&path).expect("create");
    let config =
        CollectionConfig::new(SketchParams::minhash(64, 32, 1).expect("params")).with_index(IndexConfig::lsh(0.8));
    let ca = a.create_collection("c", config).expect("collection");
    ca.insert_text("x", "one two three four five six seven eight nine ten").expect("insert");
    let b = builder.open(&path).expect("second writer");
    let cb = b.collection("c").expect("collection");
    assert!(!a.store.sole_writer && !b.store.sole_writer);
    let q = Query::threshold(ca.sketch_of("x").expect("sketch"), 0.9);
    for _ in 0..3 {
        assert_eq!(keys(&ca, &q), vec![b"x".to_vec()]);
    }
    cb.insert("y", &q.sketch).expect("insert by the other writer");
    assert_eq!(keys(&ca, &q), vec![b"x".to_vec(), b"y".to_vec()], "the other writer's insert is seen");
    cb.delete("x").expect("delete by the other writer");
    assert_eq!(keys(&ca, &q), vec![b"y".to_vec()], "the other writer's delete is seen");
    ca.upsert("y", &cb.sketcher().sketch_text(&cb.config().tokenizer, "unrelated words only").expect("sketch"))
        .expect("upsert");
    assert!(keys(&cb, &q).is_empty(), "and the other way round");
}

#[test]
fn only_sole_writers_keep_a_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        (Sharing::SingleWriter, Durability::Immediate, true),
        (Sharing::Exclusive, Durability::Immediate, true),
        (Sharing::MultiWriter, Durability::Immediate, false),
        // Eventual writers exclude other processes whatever the sharing.
        (Sharing::MultiWriter, Durability::Eventual, true),
    ];
    for (i, (sharing, durability, sole)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("{i}.sketchdb"));
        let db = Database::builder().sharing(sharing).durability(durability).create(&path).expect("create");
        assert_eq!(db.store.sole_writer, sole, "{sharing:?} {durability:?}");
        let kept = |db: &Database| {
            let (s, t) = (db.store.current_snapshot().expect("s"), db.store.current_snapshot().expect("t"));
            std::sync::Arc::ptr_eq(&s, &t)
        };
        assert_eq!(kept(&db), sole, "{sharing:?} {durability:?}");
        drop(db);
        let reader = Database::open_read_only(&path).expect("read-only");
        assert!(!reader.store.sole_writer && !kept(&reader));
    }
}
