//! Read-only opens: they never change the file (bytes and mtime), refuse every write with
//! `StorageError::ReadOnly`, share the file with a writer, and a second writer waits for the
//! busy timeout, then is `Locked`.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use sketchdb::{Batch, CollectionConfig, Database, Error, Query, SketchParams, StorageError, TokenSet};

fn tokens(i: u64) -> TokenSet {
    TokenSet::from_unsorted((0..20).map(|t| t * 7919 + i * 104_729).collect())
}

/// A database with collection `docs` holding keys `k0..k{n}`.
fn build(path: &Path, n: u64) {
    let db = Database::create(path).unwrap();
    let c = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap())).unwrap();
    for i in 0..n {
        c.insert_tokens(format!("k{i}"), &tokens(i)).unwrap();
    }
}

fn fingerprint(path: &Path) -> (Vec<u8>, SystemTime) {
    (std::fs::read(path).unwrap(), std::fs::metadata(path).unwrap().modified().unwrap())
}

fn read_everything(db: &Database) {
    assert!(db.is_read_only());
    let c = db.collection("docs").unwrap();
    assert_eq!(c.len().unwrap(), 50);
    assert!(c.get("k7").unwrap().is_some());
    assert_eq!(c.scan().unwrap().count(), 50);
    let probe = c.sketcher().sketch(&tokens(3)).unwrap();
    let hits = c.query(&Query::top_k(probe, 3)).unwrap().hits;
    assert_eq!(hits.first().map(|h| h.key.as_slice()), Some(&b"k3"[..]));
    sketchdb::admin::stats(db).unwrap();
    let report = sketchdb::admin::verify(db).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert!(!report.engine_integrity_checked);
    db.flush().unwrap();
}

#[test]
fn reads_leave_the_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    build(&path, 50);
    let before = fingerprint(&path);
    std::thread::sleep(std::time::Duration::from_millis(20));
    {
        let db = Database::open_read_only(&path).unwrap();
        read_everything(&db);
        // Two read-only handles share the file.
        let other = Database::open_read_only(&path).unwrap();
        assert_eq!(other.collection("docs").unwrap().len().unwrap(), 50);
    }
    assert!(fingerprint(&path) == before, "a read-only open changed the file");
}

#[test]
fn reads_work_on_a_read_only_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    build(&path, 50);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = fingerprint(&path);
    {
        let db = Database::open_read_only(&path).unwrap();
        read_everything(&db);
    }
    // As root the mode does not stop writes: the byte comparison is what proves none happened.
    assert!(fingerprint(&path) == before, "a read-only open changed a 0444 file");
}

#[test]
fn writes_through_a_read_only_handle_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    build(&path, 50);
    let before = fingerprint(&path);
    {
        let db = Database::open_read_only(&path).unwrap();
        let c = db.collection("docs").unwrap();
        let read_only = |r: Result<(), Error>, what: &str| match r {
            Err(Error::Storage(StorageError::ReadOnly { op })) => {
                let msg = StorageError::ReadOnly { op }.to_string();
                assert!(msg.contains("read-only"), "{what}: {msg}");
            }
            other => panic!("{what}: expected ReadOnly, got {other:?}"),
        };
        read_only(c.insert_tokens("new", &tokens(99)).map(drop), "insert");
        read_only(c.upsert("k1", &c.sketcher().sketch(&tokens(98)).unwrap()).map(drop), "upsert");
        read_only(c.delete("k2").map(drop), "delete");
        let mut batch = Batch::new();
        batch.insert("b", c.sketcher().sketch(&tokens(97)).unwrap());
        read_only(c.apply(&batch).map(drop), "batch");
        let config = CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap());
        read_only(db.create_collection("other", config).map(drop), "create collection");
        read_only(db.drop_collection("docs"), "drop collection");
        read_only(db.compact().map(drop), "compact");
        assert_eq!(c.len().unwrap(), 50);
    }
    assert!(fingerprint(&path) == before, "a refused write changed the file");
}

#[test]
fn a_reader_shares_the_file_with_a_writer_and_sees_commits_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    build(&path, 50);
    let writer = Database::open(&path).unwrap();
    let reader = Database::open_read_only(&path).unwrap();
    assert_eq!(reader.collection("docs").unwrap().len().unwrap(), 50);
    // A second writer is refused with the typed error naming the file.
    let no_wait = || Database::builder().busy_timeout(Duration::ZERO);
    match no_wait().open(&path) {
        Err(Error::Storage(e @ StorageError::Locked { .. })) => {
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    // Closing a reader does not release the writer's locks.
    drop(Database::open_read_only(&path).unwrap());
    assert!(matches!(no_wait().open(&path), Err(Error::Storage(StorageError::Locked { .. }))));
    writer.collection("docs").unwrap().insert_tokens("late", &tokens(1000)).unwrap();
    // The storage engine's single-writer mode lets an open reader see later commits: its
    // next read transaction starts from the newest commit.
    assert_eq!(reader.collection("docs").unwrap().len().unwrap(), 51);
    let reopened = Database::open_read_only(&path).unwrap();
    assert_eq!(reopened.collection("docs").unwrap().len().unwrap(), 51);
    assert!(reopened.collection("docs").unwrap().get("late").unwrap().is_some());
    drop((reader, reopened, writer));
}

#[test]
fn open_or_create_creates_then_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    let db = Database::open_or_create(&path).unwrap();
    db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(64, 32, 1).unwrap())).unwrap();
    drop(db);
    let db = Database::open_or_create(&path).unwrap();
    assert_eq!(db.collections().unwrap().len(), 1);
}

#[test]
fn read_only_open_of_a_missing_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.sketchdb");
    assert!(matches!(Database::open_read_only(&path), Err(Error::Storage(StorageError::Io { .. }))));
    assert!(!path.exists());
}

#[test]
fn a_second_writer_waits_for_the_busy_timeout_then_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    build(&path, 5);
    let writer = Database::open(&path).unwrap();
    let timeout = Duration::from_millis(300);
    let t = Instant::now();
    match Database::builder().busy_timeout(timeout).open(&path) {
        Err(Error::Storage(e @ StorageError::Locked { .. })) => {
            let StorageError::Locked { waited, .. } = &e else { unreachable!() };
            // It waited the whole timeout before giving up, and says so.
            assert!(*waited >= timeout && t.elapsed() >= timeout, "{waited:?}");
            let text = e.to_string();
            assert!(
                text.contains(&path.display().to_string()) && text.contains("gave up after waiting 0.3 s"),
                "{text}"
            );
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(writer);
}

#[test]
fn a_second_writer_opens_once_the_first_lets_go_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sketchdb");
    build(&path, 5);
    let writer = Database::open(&path).unwrap();
    let released = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        writer.collection("docs").unwrap().insert_tokens("last", &tokens(99)).unwrap();
        drop(writer);
    });
    let second = Database::builder().busy_timeout(Duration::from_secs(60)).open(&path).unwrap();
    released.join().unwrap();
    // It opened after the first writer's last commit.
    assert!(second.collection("docs").unwrap().get("last").unwrap().is_some());
    second.collection("docs").unwrap().insert_tokens("next", &tokens(100)).unwrap();
}
