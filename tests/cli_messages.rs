//! Error texts the adversarial run found wrong: each cause said once, a truncated file called
//! truncated, a negative cardinality in an import named as such.
#![cfg(feature = "cli")]

mod common;

use std::process::Output;

use common::cli::{ok, run};

/// One error line, with its exit code.
fn error_line(out: &Output) -> (Option<i32>, String) {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("sketchdb: error")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    (out.status.code(), lines[0].to_string())
}

#[test]
fn an_os_error_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--db", "no/such/dir/x.db", "create", "c"]);
    let (code, line) = error_line(&out);
    assert_eq!(code, Some(1), "{line}");
    assert_eq!(line.matches("No such file or directory").count(), 1, "{line}");
    assert!(line.contains("no/such/dir/x.db"), "{line}");
}

#[test]
fn a_truncated_database_is_called_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("docs.jsonl"), "{\"key\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog\"}\n")
        .unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "docs.jsonl"]);
    let bytes = std::fs::read(d.join("x.db")).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 1, 4096 + 100] {
        std::fs::write(d.join("t.db"), &bytes[..cut]).unwrap();
        for args in [&["--db", "t.db", "stats"][..], &["--db", "t.db", "create", "e"]] {
            let (code, line) = error_line(&run(d, args));
            assert_eq!(code, Some(1), "{line}");
            assert!(line.contains("t.db") && line.contains("truncated"), "cut at {cut}: {line}");
            assert!(!line.contains("not a sketchdb database"), "{line}");
        }
    }
    // A file that is not a database at all is still called that.
    std::fs::write(d.join("n.db"), b"hello, not a database").unwrap();
    let (_, line) = error_line(&run(d, &["--db", "n.db", "stats"]));
    assert!(line.contains("not a sketchdb database"), "{line}");
}

#[test]
fn an_import_with_a_negative_cardinality_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("docs.jsonl"), "{\"key\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog\"}\n")
        .unwrap();
    ok(d, &["--db", "x.db", "ingest", "c", "docs.jsonl"]);
    ok(d, &["--db", "x.db", "export", "c", "--out", "c.export"]);
    let text = std::fs::read_to_string(d.join("c.export")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let last = lines.len() - 1;
    let mut v: serde_json::Value = serde_json::from_str(&lines[last]).unwrap();
    v["cardinality"] = serde_json::json!(-5);
    lines[last] = v.to_string();
    std::fs::write(d.join("neg.export"), lines.join("\n") + "\n").unwrap();
    let (code, line) = error_line(&run(d, &["--db", "y.db", "import", "neg.export"]));
    assert_eq!(code, Some(2), "{line}");
    assert!(line.contains("`cardinality` is -5") && !line.contains("missing"), "{line}");
}
