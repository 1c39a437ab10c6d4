//! Sync: each stored record keeps its source content's hash, so re-ingesting a changed
//! source updates the changed records, skips the unchanged ones (same row ids), adds the new
//! ones and, with `--sync`, deletes the keys gone from it. `dedup DIR` names its collection
//! after the folder's canonical path, so two folders with the same name never merge.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use common::cli::ok;

fn summary(out: &Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    serde_json::from_str(err.lines().find(|l| l.contains("\"command\"")).unwrap()).unwrap()
}

fn rows(dir: &Path, db: &str, collection: &str) -> BTreeMap<String, u64> {
    let db = sketchdb::Database::open_read_only(dir.join(db)).unwrap();
    db.collection(collection)
        .unwrap()
        .scan()
        .unwrap()
        .map(|r| r.unwrap())
        .map(|r| (r.key_str().unwrap().to_string(), r.row_id))
        .collect()
}

const TEXTS: [(&str, &str); 5] = [
    ("a.txt", "the lighthouse keeper climbed the stairs every night at dusk"),
    ("b.txt", "a recipe for sourdough bread needs flour water salt and patience"),
    ("c.txt", "the chess opening known as the sicilian defence is sharp"),
    ("d.txt", "comets are icy bodies that release gas near the sun"),
    ("e.txt", "the orchestra tuned to the oboe before the symphony began"),
];

#[test]
fn edit_one_delete_one_add_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = d.join("docs");
    std::fs::create_dir(&f).unwrap();
    for (name, text) in TEXTS {
        std::fs::write(f.join(name), text).unwrap();
    }
    let first = summary(&ok(d, &["--db", "x.db", "ingest", "c", "docs", "--json"]));
    assert_eq!((first["added"].as_u64(), first["unchanged"].as_u64()), (Some(5), Some(0)));
    let before = rows(d, "x.db", "c");

    // Unchanged source: nothing written.
    let again = summary(&ok(d, &["--db", "x.db", "ingest", "c", "docs", "--sync", "--json"]));
    assert_eq!(
        [&again["added"], &again["updated"], &again["unchanged"], &again["deleted"]].map(|v| v.as_u64().unwrap()),
        [0, 0, 5, 0]
    );
    assert_eq!(rows(d, "x.db", "c"), before);

    let new_b = "a recipe for rye bread needs a starter rye flour caraway and time";
    std::fs::write(f.join("b.txt"), new_b).unwrap();
    std::fs::remove_file(f.join("c.txt")).unwrap();
    std::fs::write(f.join("f.txt"), "glaciers carve valleys over thousands of years").unwrap();
    // Without --sync the vanished key stays.
    let out = ok(d, &["--db", "y.db", "ingest", "c", "docs", "--json"]);
    assert_eq!(summary(&out)["added"], 5);
    let s = summary(&ok(d, &["--db", "x.db", "ingest", "c", "docs", "--sync", "--json"]));
    assert_eq!(
        [&s["added"], &s["updated"], &s["unchanged"], &s["deleted"], &s["rejected"]].map(|v| v.as_u64().unwrap()),
        [1, 1, 3, 1, 0]
    );
    let after = rows(d, "x.db", "c");
    for key in ["a.txt", "d.txt", "e.txt"] {
        assert_eq!(after[key], before[key], "{key} keeps its row id");
    }
    assert!(after["b.txt"] > before["b.txt"], "the edited record has a new row");
    assert!(!after.contains_key("c.txt"));
    assert!(after.contains_key("f.txt"));
    // A query sees the new text.
    let out = ok(d, &["--db", "x.db", "query", "c", "--text", new_b, "--threshold", "0.95", "--json"]);
    let hits = String::from_utf8(out.stdout).unwrap();
    assert!(hits.contains("\"b.txt\""), "{hits}");
    let out = ok(d, &["--db", "x.db", "query", "c", "--text", TEXTS[1].1, "--threshold", "0.95", "--json"]);
    assert!(!String::from_utf8(out.stdout).unwrap().contains("\"b.txt\""));
}

#[test]
fn sync_deletes_nothing_when_records_were_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("v1.jsonl"),
        "{\"id\":\"a\",\"text\":\"one two three\"}\n{\"id\":\"b\",\"text\":\"four five\"}\n",
    )
    .unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "v1.jsonl"]);
    std::fs::write(d.join("v2.jsonl"), "{\"id\":\"a\",\"text\":\"one two three\"}\n{\"id\":\"b\",\"text\":\n").unwrap();
    let out = ok(d, &["--db", "x.db", "ingest", "c", "v2.jsonl", "--sync"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sync deleted nothing"));
    assert_eq!(rows(d, "x.db", "c").len(), 2);
}

#[test]
fn dedup_names_each_folder_by_its_canonical_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for parent in ["one", "two"] {
        let f = d.join(parent).join("docs");
        std::fs::create_dir_all(&f).unwrap();
        std::fs::write(f.join(format!("{parent}.txt")), TEXTS[0].1).unwrap();
        std::fs::write(f.join("copy.txt"), TEXTS[0].1).unwrap();
    }
    let out = ok(d, &["--db", "x.db", "dedup", "one/docs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let canonical = d.join("one/docs").canonicalize().unwrap();
    assert!(err.contains(&format!("collection `{}` in x.db", canonical.display())), "{err}");
    ok(d, &["--db", "x.db", "dedup", "two/docs"]);
    let list = String::from_utf8(ok(d, &["--db", "x.db", "list", "--json"]).stdout).unwrap();
    let names: Vec<String> =
        list.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["name"].as_str().unwrap().to_string()).collect();
    let two = d.join("two/docs").canonicalize().unwrap();
    assert_eq!(names, [canonical.display().to_string(), two.display().to_string()]);
    // A file removed from the folder leaves the collection on the next dedup.
    std::fs::remove_file(d.join("one/docs/copy.txt")).unwrap();
    let out = ok(d, &["--db", "x.db", "dedup", "one/docs", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"deleted\":1"), "{err}");
}
