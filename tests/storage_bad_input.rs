//! Empty key, over-long key, wrong signature width or kind, unknown collection, bad names:
//! typed errors, and nothing written.

use sketchdb::{CollectionConfig, Database, Error, MAX_KEY_LEN, SketchError, SketchParams, StorageError, TokenSet};

#[test]
fn bad_input_gives_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db")).unwrap();
    let params = SketchParams::minhash(128, 32, 1).unwrap();
    let c = db.create_collection("docs", CollectionConfig::new(params)).unwrap();
    let tokens = TokenSet::from_unsorted(vec![1, 2, 3]);
    let good = c.sketcher().sketch(&tokens).unwrap();

    assert!(matches!(c.insert("", &good), Err(Error::Storage(StorageError::EmptyKey { .. }))));
    assert!(matches!(c.get(""), Err(Error::Storage(StorageError::EmptyKey { .. }))));
    assert!(matches!(c.delete(b""), Err(Error::Storage(StorageError::EmptyKey { .. }))));
    let long = vec![b'x'; MAX_KEY_LEN + 1];
    match c.insert(&long, &good) {
        Err(Error::Storage(StorageError::KeyTooLong { collection, len, max })) => {
            assert_eq!((collection.as_str(), len, max), ("docs", MAX_KEY_LEN + 1, MAX_KEY_LEN));
        }
        other => panic!("{other:?}"),
    }
    // The longest key is fine, and binary keys are fine.
    c.insert(vec![b'y'; MAX_KEY_LEN], &good).unwrap();
    c.insert([0u8, 255, 7], &good).unwrap();

    // Wrong width (k = 64 vs 128), wrong bits, wrong kind, wrong seed: Incompatible naming
    // the field.
    let cases = [
        (SketchParams::minhash(64, 32, 1).unwrap(), "k"),
        (SketchParams::minhash(128, 64, 1).unwrap(), "bits"),
        (SketchParams::oph(128, 32, 1).unwrap(), "kind"),
        (SketchParams::minhash(128, 32, 2).unwrap(), "seed"),
    ];
    for (p, field) in cases {
        let s = sketchdb::Sketcher::new(p).unwrap().sketch(&tokens).unwrap();
        match c.insert("w", &s) {
            Err(Error::Storage(StorageError::Incompatible {
                collection,
                source: SketchError::Incompatible { field: f, .. },
            })) => {
                assert_eq!((collection.as_str(), f), ("docs", field));
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(c.get("w").unwrap().is_none());
    assert_eq!(c.len().unwrap(), 2);

    assert!(
        matches!(db.collection("nope"), Err(Error::Storage(StorageError::UnknownCollection { name })) if name == "nope")
    );
    assert!(matches!(db.drop_collection("nope"), Err(Error::Storage(StorageError::UnknownCollection { .. }))));
    assert!(matches!(
        db.create_collection("", CollectionConfig::new(params)),
        Err(Error::Storage(StorageError::InvalidCollectionName { .. }))
    ));
    assert!(matches!(
        db.create_collection(&"n".repeat(256), CollectionConfig::new(params)),
        Err(Error::Storage(StorageError::InvalidCollectionName { .. }))
    ));
    // A handle to a dropped collection fails typed, even after a new one takes its name.
    db.drop_collection("docs").unwrap();
    db.create_collection("docs", CollectionConfig::new(params)).unwrap();
    assert!(matches!(c.insert("z", &good), Err(Error::Storage(StorageError::UnknownCollection { .. }))));
    assert!(matches!(c.get([0u8, 255, 7]), Err(Error::Storage(StorageError::UnknownCollection { .. }))));

    // Opening what is not a sketchdb file, or nothing at all.
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![0x5a; 10_000]).unwrap();
    let e = Database::open(&junk);
    eprintln!("{e:?}");
    assert!(matches!(e, Err(Error::Storage(StorageError::NotSketchdb { .. }))));
    assert!(matches!(Database::open(dir.path().join("absent")), Err(Error::Storage(StorageError::Io { .. }))));
}
