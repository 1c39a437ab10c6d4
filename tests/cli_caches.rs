//! `sketchdb stats` reports the caches as the library's `Database::cache_stats` does: the
//! budgets given with `--page-cache` / `--probe-cache` (or `SKETCHDB_PAGE_CACHE` /
//! `SKETCHDB_PROBE_CACHE`), and in the interactive shell the probe cache's bytes after
//! queries, equal to what a library handle holds after the same queries.
#![cfg(feature = "cli")]

mod common;

use std::path::Path;
use std::process::Command;

use common::cli::{lines, ok, piped, run};
use serde_json::{Value, json};
use sketchdb::plan::PlanKind;
use sketchdb::{Batch, CollectionConfig, Database, IndexConfig, QueryKind, QueryOptions, SketchParams, admin};

/// `x.db` with collection `c` of 500 records `k0`.. in families of near-duplicates.
fn setup(d: &Path) {
    let db = Database::create(d.join("x.db")).unwrap();
    let config = CollectionConfig::new(SketchParams::minhash(64, 32, 7).unwrap()).with_index(IndexConfig::Lsh {
        threshold: 0.5,
        bands: None,
        rows: None,
    });
    let c = db.create_collection("c", config).unwrap();
    let mut batch = Batch::new();
    for i in 0..500u64 {
        let text: Vec<String> = (0..40u64).map(|w| format!("w{}", (i / 3) * 7 + w * (1 + (w + i) % 3 / 2))).collect();
        batch.insert(format!("k{i}"), c.sketcher().sketch_text(&c.config().tokenizer, &text.join(" ")).unwrap());
    }
    c.apply(&batch).unwrap();
}

/// The `caches` object of `stats --json` (on every collection's line, the same).
fn caches(out: &[u8]) -> Value {
    let all = lines(out);
    assert!(all.iter().all(|l| l["caches"] == all[0]["caches"]), "{all:?}");
    all[0]["caches"].clone()
}

#[test]
fn stats_report_the_budgets_given_by_flag_or_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let got =
        caches(&ok(d, &["--db", "x.db", "--page-cache", "2M", "--probe-cache", "3MiB", "--json", "stats"]).stdout);
    assert_eq!(got["page_cache_budget"], json!(2 << 20));
    assert_eq!(got["probe_cache_budget"], json!(3 << 20));
    assert_eq!((&got["probe_cache_held"], &got["snapshot_kept"]), (&json!(0), &json!(false)), "{got}");
    // A library handle opened the same way and asked the same reports the same numbers.
    let db =
        Database::builder().cache_size(2 << 20).probe_cache_budget(3 << 20).open_read_only(d.join("x.db")).unwrap();
    let want = admin::stats(&db).unwrap().caches;
    assert_eq!(got["page_cache_held"], json!(want.page_cache_held));
    drop(db);

    let env = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(d)
        .env("SKETCHDB_PAGE_CACHE", "1048576")
        .env("SKETCHDB_PROBE_CACHE", "0")
        .args(["--db", "x.db", "--json", "stats"])
        .output()
        .unwrap();
    assert!(env.status.success());
    let got = caches(&env.stdout);
    assert_eq!((&got["page_cache_budget"], &got["probe_cache_budget"]), (&json!(1 << 20), &json!(0)));
    // Defaults: the CLI's 64 MiB page cache and the library's probe budget.
    let got = caches(&ok(d, &["--db", "x.db", "--json", "stats"]).stdout);
    assert_eq!(got["page_cache_budget"], json!(64 << 20));
    assert_eq!(got["probe_cache_budget"], json!(Database::DEFAULT_PROBE_CACHE_BUDGET));
    let text = String::from_utf8(ok(d, &["--db", "x.db", "--probe-cache", "1G", "stats"]).stdout).unwrap();
    assert!(text.contains("\nprobe cache: 0 B of 1.0 GiB\n"), "{text}");

    for bad in ["12Q", "-1", "2T", ""] {
        let out = run(d, &["--db", "x.db", &format!("--probe-cache={bad}"), "stats"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--probe-cache"), "{bad}");
    }
}

#[test]
fn the_shell_reports_what_its_queries_keep_as_the_library_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let keys = ["k0", "k7", "k42", "k300"];
    let mut script: String =
        keys.iter().map(|k| format!("query c {k} --threshold 0.5 --plan lsh-probe --json\n")).collect();
    script.push_str("stats --json\n");
    let out = piped(d, &["x.db", "--probe-cache", "8M"], &script);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The query lines, then `stats`' one line (one collection).
    let got = lines(&out.stdout).last().expect("stats")["caches"].clone();

    // The shell reads through a read-only handle until a command writes.
    let db = Database::builder().probe_cache_budget(8 << 20).open_read_only(d.join("x.db")).unwrap();
    let c = db.collection("c").unwrap();
    let options = QueryOptions { force: Some(PlanKind::LshProbe), ..QueryOptions::default() };
    for k in keys {
        c.query_key(k, QueryKind::Threshold(0.5), options).unwrap();
    }
    let want = db.cache_stats();
    assert!(want.probe_cache_held > 0);
    assert_eq!(got["probe_cache_held"], json!(want.probe_cache_held), "{got}");
    assert_eq!(got["probe_cache_budget"], json!(8 << 20));
}
