//! `export` / `import` of collections made with a recipe: the header carries the recipe and
//! the hash family, so `import` into a new file recreates the same collection. For every
//! preset (sketchdb's own, the native word recipes and every compatibility preset), for
//! sketchdb's two own hash families and for the textbook Charikar SimHash: the same configuration, identical signatures (the second
//! export is byte for byte the first) and identical answers to queries.

#[path = "common/cli.rs"]
#[allow(dead_code)]
mod cli;

use std::path::Path;

use cli::{ok, run};
use sketchdb::{Collection, Database, QueryKind, QueryOptions, Recipe};

const DOCS: &[&str] = &[
    "The quick brown fox jumps over the lazy dog near the river bank today",
    "The quick brown fox jumped over the lazy dog near the river bank today",
    "A quick brown fox jumps over a lazy dog near the river bank at noon",
    "Lighthouse keepers watch the ships pass the rocky coast every night in winter",
    "Lighthouse keepers watched ships pass the rocky coast every night in winter",
    "Sourdough bread needs flour water salt and a lively starter kept warm overnight",
    "Sourdough bread needs flour, water, salt and a lively starter kept warm overnight!",
    "Comets leave long tails of dust and gas when they pass close to the sun",
    "Café crème, naïve façade: ÉTÉ à Zürich — 東京 と 大阪 🙂 mixed text\r\nwith CRLF",
    "Chess openings such as the Sicilian defence reward careful study of pawn structure",
];

fn write_docs(dir: &Path) {
    let lines: Vec<String> = DOCS
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": format!("d{i}"), "text": t}).to_string())
        .collect();
    std::fs::write(dir.join("docs.jsonl"), lines.join("\n") + "\n").unwrap();
}

type Answer = Vec<(Vec<u8>, u64, u64, u64)>;

fn answers(c: &Collection, kind: QueryKind) -> Vec<Answer> {
    DOCS.iter()
        .map(|t| {
            let r = c.query_text(t, kind, QueryOptions::default()).unwrap();
            r.hits
                .into_iter()
                .map(|h| (h.key, h.estimate.value.to_bits(), h.estimate.lower.to_bits(), h.estimate.upper.to_bits()))
                .collect()
        })
        .collect()
}

/// Creates `c` in a.sketchdb with `create_args`, ingests the documents, exports, imports into
/// b.sketchdb, exports again; checks configuration, bytes and answers.
fn round_trip(create_args: &[&str], queries: &[QueryKind], recipe: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_docs(d);
    let mut create = vec!["--db", "a.sketchdb", "create", "c"];
    create.extend_from_slice(create_args);
    ok(d, &create);
    ok(d, &["--db", "a.sketchdb", "ingest", "c", "docs.jsonl"]);
    ok(d, &["--db", "a.sketchdb", "export", "c", "--out", "c.export"]);
    let header: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(d.join("c.export")).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["recipe"], recipe, "{header}");
    ok(d, &["--db", "b.sketchdb", "import", "c.export"]);
    ok(d, &["--db", "b.sketchdb", "export", "c", "--out", "again.export"]);
    let first = std::fs::read(d.join("c.export")).unwrap();
    assert_eq!(first, std::fs::read(d.join("again.export")).unwrap(), "{create_args:?}");
    assert_eq!(first.iter().filter(|&&b| b == b'\n').count(), DOCS.len() + 1);

    let a = Database::open(d.join("a.sketchdb")).unwrap().collection("c").unwrap();
    let b = Database::open(d.join("b.sketchdb")).unwrap().collection("c").unwrap();
    assert_eq!(a.config(), b.config());
    assert_eq!(b.config().recipe().name(), recipe);
    let sigs = |c: &Collection| {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> =
            c.scan().unwrap().map(|r| r.unwrap()).map(|r| (r.key, sketchdb::signature::encode(&r.sketch))).collect();
        v.sort();
        v
    };
    assert_eq!(sigs(&a), sigs(&b));
    assert_eq!(sigs(&a).len(), DOCS.len());
    for q in queries {
        let (x, y) = (answers(&a, *q), answers(&b, *q));
        assert_eq!(x, y, "{create_args:?} {q:?}");
        assert!(x.iter().any(|h| h.len() > 1), "{create_args:?} {q:?}: the near-duplicates are found");
    }
}

#[test]
fn every_preset_recipe_round_trips() {
    let presets = Recipe::presets();
    assert!(presets.len() >= 10);
    for r in presets {
        let name = r.name();
        let q = [QueryKind::Threshold(0.3), QueryKind::TopK(3)];
        round_trip(&["--recipe", name, "--lsh", "0.5"], &q, name);
        if !r.family().is_compat() {
            // Native recipes work with every set sketch.
            round_trip(&["--recipe", name, "--kind", "oph", "--k", "256"], &q, name);
            round_trip(&["--recipe", name, "--kind", "bbit", "--k", "256", "--bits", "4", "--lsh", "0.5"], &q, name);
        }
    }
}

#[test]
fn charikar_simhash_round_trips() {
    let q = [QueryKind::Hamming(20), QueryKind::TopK(3)];
    round_trip(&["--kind", "simhash", "--family", "charikar", "--simhash-tables", "3"], &q, "sketchdb");
    round_trip(&["--kind", "simhash", "--family", "charikar", "--recipe", "words-5"], &q, "words-5");
}

/// sketchdb's two own families: the 32-bit lane family (the default of MinHash with 32-bit
/// values and b-bit) and the 64-bit one by name; each collection keeps its family through
/// export and import.
#[test]
fn both_own_families_round_trip_and_are_recorded() {
    use sketchdb::HashFamily;
    let q = [QueryKind::Threshold(0.3), QueryKind::TopK(3)];
    let cases: [(&[&str], HashFamily); 5] = [
        (&["--lsh", "0.5"], HashFamily::MixMultiplyShift32),
        (&["--family", "mix-multiply-shift", "--lsh", "0.5"], HashFamily::MixMultiplyShift),
        (&["--kind", "bbit", "--k", "256", "--bits", "4", "--lsh", "0.5"], HashFamily::MixMultiplyShift32),
        (&["--kind", "bbit", "--family", "mix-multiply-shift", "--lsh", "0.5"], HashFamily::MixMultiplyShift),
        (&["--bits", "64", "--lsh", "0.5"], HashFamily::MixMultiplyShift),
    ];
    for (args, family) in cases {
        round_trip(args, &q, "sketchdb");
        let dir = tempfile::tempdir().unwrap();
        let mut create = vec!["--db", "f.sketchdb", "create", "c"];
        create.extend_from_slice(args);
        ok(dir.path(), &create);
        let c = Database::open(dir.path().join("f.sketchdb")).unwrap().collection("c").unwrap();
        assert_eq!(c.params().family(), family, "{args:?}");
    }
    // The 32-bit lane family takes MinHash with 32-bit values and b-bit only.
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--bits", "64"][..], &["--kind", "oph"], &["--kind", "simhash"]] {
        let mut create = vec!["--db", "f.sketchdb", "create", "c", "--family", "mix-multiply-shift-32"];
        create.extend_from_slice(args);
        let out = run(dir.path(), &create);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--family mix-multiply-shift-32") && err.contains("32-bit"), "{err}");
    }
}

#[test]
fn a_header_whose_recipe_contradicts_its_tokenizer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_docs(d);
    ok(d, &["--db", "a.sketchdb", "create", "c", "--recipe", "text-dedup"]);
    ok(d, &["--db", "a.sketchdb", "ingest", "c", "docs.jsonl"]);
    ok(d, &["--db", "a.sketchdb", "export", "c", "--out", "c.export"]);
    let text = std::fs::read_to_string(d.join("c.export")).unwrap();
    for (from, to, words) in [
        ("\"recipe\":\"text-dedup\"", "\"recipe\":\"words-5\"", &["recipe", "text-dedup"][..]),
        ("\"Recipe\":\"text-dedup\"", "\"Recipe\":\"no-such\"", &["tokenizer", "no-such"][..]),
        ("\"family\":\"TextDedup\"", "\"family\":\"Charikar\"", &["family"][..]),
    ] {
        assert!(text.contains(from), "{from} in {}", text.lines().next().unwrap());
        std::fs::write(d.join("bad.export"), text.replacen(from, to, 1)).unwrap();
        let out = run(d, &["--db", "b.sketchdb", "import", "bad.export"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("bad.export:1"), "{err}");
        for w in words {
            assert!(err.contains(w), "`{w}` in {err}");
        }
    }
    assert!(
        !d.join("b.sketchdb").exists()
            || Database::open(d.join("b.sketchdb")).unwrap().collections().unwrap().is_empty()
    );
}

#[test]
fn importing_into_a_collection_with_another_recipe_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_docs(d);
    ok(d, &["--db", "a.sketchdb", "create", "c", "--recipe", "words-5"]);
    ok(d, &["--db", "a.sketchdb", "ingest", "c", "docs.jsonl"]);
    ok(d, &["--db", "a.sketchdb", "export", "c", "--out", "c.export"]);
    // Same sketch parameters, the original tokenizer: the records would not match its queries.
    ok(d, &["--db", "b.sketchdb", "create", "c"]);
    let out = run(d, &["--db", "b.sketchdb", "import", "c.export"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("recipe `sketchdb`") && err.contains("`words-5`"), "{err}");
    assert!(Database::open(d.join("b.sketchdb")).unwrap().collection("c").unwrap().is_empty().unwrap());
}
