//! A database held by a writer process: a second writer process waits `--busy-timeout`
//! seconds (`SKETCHDB_BUSY_TIMEOUT`), then exits 3 with one line naming the file, the wait and
//! the process holding it; with a timeout long enough it succeeds once the first lets go.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sketchdb");

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN).current_dir(dir).args(args).output().unwrap()
}

/// `x.db` with a collection `c` (keys a, b).
fn setup(d: &Path) {
    std::fs::write(
        d.join("docs.jsonl"),
        "{\"key\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog\"}\n\
         {\"key\":\"b\",\"text\":\"the quick brown fox jumps over the lazy cat\"}\n",
    )
    .unwrap();
    let out = run(d, &["--db", "x.db", "ingest", "c", "docs.jsonl"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A shell process holding `x.db` open for writing until its stdin closes.
struct Writer {
    child: Child,
    stdin: Option<ChildStdin>,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Writer {
    fn start(d: &Path) -> Writer {
        let mut child = Command::new(BIN)
            .current_dir(d)
            .args(["x.db", "--write"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "list --json").unwrap();
        stdin.flush().unwrap();
        // The listing has come back: the shell has the file open for writing.
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        assert!(line.contains("\"name\":\"c\""), "{line}");
        Writer { child, stdin: Some(stdin), _stdout: stdout }
    }

    /// Closes the shell's input and waits for it to exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn a_second_writer_waits_the_busy_timeout_then_exits_3_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let writer = Writer::start(d);
    let t = Instant::now();
    let out = run(d, &["--busy-timeout", "0.5", "--db", "x.db", "create", "d"]);
    let waited = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(waited >= Duration::from_millis(500), "gave up after {waited:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("database x.db is locked") && err.contains("gave up after waiting 0.5 s"), "{err}");
    #[cfg(target_os = "linux")]
    assert!(err.contains(&format!("process {} (", writer.child.id())) && err.contains("--write"), "{err}");
    // The environment variable does the same; 0 gives up at once.
    let out = Command::new(BIN)
        .current_dir(d)
        .env("SKETCHDB_BUSY_TIMEOUT", "0")
        .args(["--db", "x.db", "--json", "drop", "c"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "busy");
    // Readers are not writers: they run beside it.
    assert!(run(d, &["--busy-timeout", "0", "--db", "x.db", "stats"]).status.success());
    writer.finish();
    assert_eq!(run(d, &["--db", "x.db", "list"]).status.code(), Some(0));
}

#[test]
fn a_second_writer_with_a_long_timeout_succeeds_after_the_first_exits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let writer = Writer::start(d);
    let mut second = Command::new(BIN)
        .current_dir(d)
        .args(["--busy-timeout", "120", "--db", "x.db", "create", "d"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert!(second.try_wait().unwrap().is_none(), "the second writer did not wait");
    writer.finish();
    let out = second.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list = run(d, &["--db", "x.db", "--json", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("\"name\":\"d\""));
}

#[test]
fn a_bad_busy_timeout_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["-1", "soon", "NaN", "inf"] {
        let out = run(dir.path(), &[&format!("--busy-timeout={bad}"), "--db", "x.db", "list"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--busy-timeout"), "{bad}");
    }
}
