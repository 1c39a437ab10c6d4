//! The interactive shell, driven through a pipe: the same commands as the command line, dot
//! commands, errors that name the line and do not stop the shell, and a failing exit code.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

fn shell(dir: &std::path::Path, script: &str) -> (bool, String, String) {
    let out = common::cli::piped(dir, &["shell.db"], script);
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn piped_commands_run_in_one_session() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("in.jsonl"),
        "{\"key\":\"x\",\"tokens\":[1,2,3,4,5,6,7,8]}\n{\"key\":\"y\",\"tokens\":[1,2,3,4,5,6,7,9]}\n",
    )
    .unwrap();
    let script = "# a comment\ncreate sets --kind minhash --k 64\ningest sets in.jsonl\nquery sets x --threshold 0.5 --json\n.help\nestimate sets x y\n.quit\nlist\n";
    let (ok, out, err) = shell(dir.path(), script);
    assert!(ok, "{err}");
    let hits: Vec<serde_json::Value> =
        out.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(hits.iter().map(|h| h["key"].as_str().unwrap()).collect::<Vec<_>>(), ["x", "y"]);
    assert!(out.contains(".quit"), "help lists the dot commands");
    assert!(out.contains("jaccard(x, y)"));
    assert!(!out.contains("collection   sketch"), ".quit stops before `list`");
}

#[test]
fn errors_name_the_line_and_the_shell_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = "query nowhere k\nfrobnicate\ncreate c\n\"unbalanced\nlist --json\n";
    let (ok, out, err) = shell(dir.path(), script);
    assert!(!ok, "a failed line makes the exit status non-zero");
    assert!(err.contains("line 1: unknown collection `nowhere`"), "{err}");
    assert!(err.contains("line 2: unrecognized subcommand 'frobnicate'"), "{err}");
    assert!(err.contains("line 4: unbalanced quotes"), "{err}");
    assert!(out.contains("\"name\":\"c\""), "later lines still ran: {out}");
}

/// Inside the shell standard input carries the commands: a command naming `-` as its input is
/// refused on its line, and the lines after it still run as commands (none is swallowed as
/// records).
#[test]
fn standard_input_is_the_shells_own() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        "create c",
        "dedup -",
        "ingest fresh -",
        r#"{"id": "a", "text": "one two three"}"#,
        "delete c --keys-from -",
        "query c --queries -",
        "list --json",
    ];
    let (ok, out, err) = shell(dir.path(), &(lines.join("\n") + "\n"));
    assert!(!ok, "{err}");
    for line in [2, 3, 5, 6] {
        assert!(err.contains(&format!("line {line}: ")), "line {line}: {err}");
    }
    assert_eq!(err.matches("carries the shell's own commands").count(), 4, "{err}");
    assert!(err.contains("line 4: "), "the record line is read as a command: {err}");
    let listed: serde_json::Value =
        serde_json::from_str(out.lines().find(|l| l.contains("\"name\"")).unwrap()).unwrap();
    assert_eq!((listed["name"].as_str(), listed["records"].as_u64()), (Some("c"), Some(0)), "nothing ingested: {out}");
    assert!(!out.contains("\"name\":\"fresh\""), "a refused ingest creates no collection: {out}");
}

/// `shell.db` with collections `alpha` and `beta`, written by the library.
fn two_collections(dir: &std::path::Path) {
    let db = sketchdb::Database::create(dir.join("shell.db")).unwrap();
    let params = sketchdb::SketchParams::minhash(64, 32, 1).unwrap();
    for name in ["alpha", "beta"] {
        let c = db.create_collection(name, sketchdb::CollectionConfig::new(params)).unwrap();
        c.insert_text("k", "one two three four five six seven").unwrap();
    }
}

fn fingerprint(path: &std::path::Path) -> (Vec<u8>, std::time::SystemTime) {
    (std::fs::read(path).unwrap(), std::fs::metadata(path).unwrap().modified().unwrap())
}

#[test]
fn the_shell_is_read_only_until_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    two_collections(dir.path());
    let path = dir.path().join("shell.db");
    let before = fingerprint(&path);
    let (ok, out, err) = shell(dir.path(), "list --json\nstats\nquery alpha k\n.complete query al\nverify\n");
    assert!(ok, "{err}");
    assert_eq!(out.lines().filter(|l| *l == "alpha").count(), 1, "{out}");
    assert!(fingerprint(&path) == before, "a shell that only read changed the file");
    // The first write reopens it read-write, and later reads see the write.
    let (ok, out, err) = shell(dir.path(), "list --json\ndrop beta\nlist --json\n.complete query \n");
    assert!(ok, "{err}");
    assert_eq!(out.matches("\"name\":\"beta\"").count(), 1, "listed before the drop only: {out}");
    assert!(out.lines().any(|l| l == "alpha") && !out.lines().any(|l| l == "beta"), "{out}");
}

#[test]
fn the_shell_opens_beside_a_writer_process_and_completes_collection_names() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    two_collections(dir.path());
    // Another process holds the file for writing for the whole test.
    let mut writer = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(dir.path())
        .args(["shell.db", "--write"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut writer_in = writer.stdin.take().unwrap();
    writeln!(writer_in, "list --json").unwrap();
    let mut writer_out = BufReader::new(writer.stdout.take().unwrap());
    let mut line = String::new();
    writer_out.read_line(&mut line).unwrap();
    assert!(line.contains("alpha"), "{line}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(dir.path())
        .args(["shell.db", "--busy-timeout", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let script = ".complete query al\n.complete li\ndrop beta\n.complete estimate \nquery beta k --json\n";
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(&lines[..4], ["alpha", "list", "alpha", "beta"], "{stdout}\n{stderr}");
    // The write is refused as busy, and the shell goes on reading.
    assert!(stderr.contains("line 3") && stderr.contains("is locked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stdout.contains("\"key\":\"k\""), "{stdout}");
    drop(writer_in);
    assert!(writer.wait().unwrap().success());
}
