//! Regression (found by the crash loop): `admin::verify` on a database whose collections have
//! never held a record failed with "Table 'sketchdb.pages' does not exist" instead of
//! reporting a sound database.

use sketchdb::{CollectionConfig, Database, SketchParams, TokenSet};

#[test]
fn verify_is_clean_before_the_first_record() {
    let db = sketchdb::testing::create_on(Database::builder(), sketchdb::testing::MemoryBackend::new()).unwrap();
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
    let c = db.create_collection("c", CollectionConfig::new(SketchParams::minhash(8, 32, 1).unwrap())).unwrap();
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.collections, 1);
    // Deleting an absent key writes the state but no pages: still clean.
    assert!(!c.delete("nothing").unwrap());
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
    c.insert_tokens("x", &TokenSet::from_unsorted(vec![1, 2])).unwrap();
    assert!(sketchdb::admin::verify(&db).unwrap().is_ok());
}
