//! Reader processes beside a writer process (`examples/crash_child.rs` in both roles).
//!
//! * A writer commits batches while 4 reader processes, each holding one read-only handle,
//!   check snapshots, query, take statistics and verify in a loop: every reader succeeds,
//!   sees whole batches only, in a count that never goes down, and ends on the final count;
//!   one-shot `sketchdb stats` / `verify` processes run beside the writer too.
//! * The writer is killed with SIGKILL at a random moment while 4 readers run: no
//!   acknowledged batch is lost, the readers keep answering (never a wrong answer, never an
//!   error), a new writer opens the file, and the readers then follow its commits; the file
//!   verifies. A few kills here; `kill_9_beside_readers_many` runs 100 (`SKETCHDB_KILLS`),
//!   ignored by default: `cargo test --test multi_process_readers -- --ignored --nocapture`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sketchdb::testing::crash::kill9::{BATCH, COLLECTION};
use sketchdb::{Database, Error, StorageError};

use common::child::child_binary;

/// A child process whose stdout lines arrive on a channel.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(args: &[&std::ffi::OsStr]) -> Proc {
        let mut child =
            Command::new(child_binary()).args(args).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    fn writer(path: &Path, max: Option<u64>) -> Proc {
        let max = max.map(|m| m.to_string()).unwrap_or_else(|| u64::MAX.to_string());
        Proc::spawn(&[path.as_os_str(), max.as_ref()])
    }

    fn reader(path: &Path) -> Proc {
        Proc::spawn(&["read".as_ref(), path.as_os_str()])
    }

    /// The next line, waiting up to a minute.
    fn next(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(60)).expect("child went quiet")
    }
}

fn stop_file(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".stop");
    PathBuf::from(s)
}

/// Waits for a reader told to stop and checks what it saw: whole batches, never fewer than
/// before, no error, and a last round at `final_batches`. Returns its number of rounds.
fn finish_reader(r: Proc, final_batches: u64) -> u64 {
    let Proc { mut child, lines } = r;
    let status = child.wait().unwrap();
    let lines: Vec<String> = lines.iter().collect();
    assert!(status.success(), "reader failed ({status}): {:?}", lines.last());
    let mut seen = 0;
    for l in &lines {
        if let Some(n) = l.strip_prefix("SEEN ") {
            let n: u64 = n.parse().unwrap();
            assert!(n >= seen, "a reader saw {n} batches after {seen}");
            seen = n;
        } else {
            assert!(l.starts_with("DONE "), "reader: {l}");
        }
    }
    assert_eq!(seen, final_batches, "the reader's last round missed the last commits");
    let done: Vec<u64> = lines.last().unwrap()["DONE ".len()..].split(' ').map(|x| x.parse().unwrap()).collect();
    assert_eq!(done[1], 0, "reader errors");
    done[0]
}

/// The batches a new writer finds. After a writer was killed (`killed`), a read-only open
/// (library and CLI) is first refused with the typed "needs recovery" error naming the file:
/// recovery writes, so only a writer runs it.
fn batches_on_disk(path: &Path, killed: bool) -> u64 {
    if killed {
        needs_recovery(path);
    }
    let db = Database::open(path).unwrap();
    let report = sketchdb::admin::verify(&db).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let len = db.collection(COLLECTION).unwrap().len().unwrap();
    assert_eq!(len % BATCH, 0);
    len / BATCH
}

/// A read-only open of a file whose writer was killed: refused with the typed error (library)
/// and exit 1, kind `needs_recovery`, naming the file and the command that recovers it (CLI);
/// that command recovers it.
fn needs_recovery(path: &Path) {
    match Database::open_read_only(path) {
        Err(Error::Storage(StorageError::NeedsRecovery { path: p, .. })) => assert_eq!(p, path),
        other => panic!("read-only open of a file left by a killed writer: {:?}", other.map(|_| ())),
    }
    #[cfg(feature = "cli")]
    {
        let mut stats = Command::new(env!("CARGO_BIN_EXE_sketchdb"));
        let out = stats.arg("--db").arg(path).args(["--json", "stats"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("\"kind\":\"needs_recovery\"") && err.contains("not closed cleanly"), "{err}");
        assert!(err.contains(&path.display().to_string()) && err.contains("verify --engine"), "{err}");
        // The command the message names recovers the file; read-only opens work again.
        let mut verify = Command::new(env!("CARGO_BIN_EXE_sketchdb"));
        let out = verify.arg("--db").arg(path).args(["verify", "--engine"]).output().unwrap();
        assert!(out.status.success(), "verify --engine: {}", String::from_utf8_lossy(&out.stderr));
        Database::open_read_only(path).unwrap();
    }
}

#[test]
fn four_readers_follow_a_writer_and_never_see_a_partial_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sketchdb");
    let total = 60;
    let writer = Proc::writer(&path, Some(total));
    assert_eq!(writer.next(), "READY 0");
    let readers: Vec<Proc> = (0..4).map(|_| Proc::reader(&path)).collect();
    // One-shot CLI readers beside the writer, too.
    #[cfg(feature = "cli")]
    for args in [&["stats"][..], &["verify"], &["--json", "list"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_sketchdb")).arg("--db").arg(&path).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let Proc { mut child, lines } = writer;
    assert!(child.wait().unwrap().success());
    assert_eq!(lines.iter().filter(|l| l.starts_with("ACK ")).count() as u64, total);
    std::fs::write(stop_file(&path), b"").unwrap();
    let rounds: Vec<u64> = readers.into_iter().map(|r| finish_reader(r, total)).collect();
    assert!(rounds.iter().all(|&r| r >= 1), "{rounds:?}");
    assert_eq!(batches_on_disk(&path, false), total);
}

/// One kill: a writer runs beside 4 readers and is SIGKILLed after `delay`; a new writer
/// opens, proves no acknowledged batch is lost and commits 2 more; the readers, still on their
/// first handle, end on the new count. Returns (acknowledged, batches at reopen).
fn kill_once(path: &Path, delay: Duration, max_acked: &mut Option<u64>) -> (u64, u64) {
    let _ = std::fs::remove_file(stop_file(path));
    let writer = Proc::writer(path, None);
    let ready = writer.next();
    assert!(ready.starts_with("READY "), "{ready}");
    let readers: Vec<Proc> = (0..4).map(|_| Proc::reader(path)).collect();
    std::thread::sleep(delay);
    let Proc { mut child, lines } = writer;
    child.kill().unwrap(); // SIGKILL on Unix
    assert!(!child.wait().unwrap().success());
    let mut acked = 0;
    for l in lines.iter() {
        if let Some(b) = l.strip_prefix("ACK ") {
            let b: u64 = b.parse().unwrap();
            *max_acked = Some(max_acked.map_or(b, |m| m.max(b)));
            acked += 1;
        }
    }
    // A new writer opens while the readers keep their handles.
    let next = Proc::writer(path, None);
    let ready = next.next();
    let n: u64 = ready.strip_prefix("READY ").unwrap_or_else(|| panic!("{ready}")).parse().unwrap();
    if let Some(a) = *max_acked {
        assert!(n > a, "acknowledged batch {a} lost: only {n} batches");
        assert!(n <= a + 2, "{n} batches after ACK {a}: more than the one in flight");
    }
    let Proc { child: mut next_child, lines: next_lines } = next;
    let mut last = n;
    for _ in 0..2 {
        let l = next_lines.recv_timeout(Duration::from_secs(60)).unwrap();
        last = l.strip_prefix("ACK ").unwrap_or_else(|| panic!("{l}")).parse::<u64>().unwrap() + 1;
    }
    *max_acked = Some(last - 1);
    next_child.kill().unwrap();
    next_child.wait().unwrap();
    // Every ACK the writer printed before the kill counts as acknowledged, also those still
    // in the pipe.
    while let Ok(l) = next_lines.recv_timeout(Duration::from_secs(1)) {
        if let Some(a) = l.strip_prefix("ACK ") {
            last = last.max(a.parse::<u64>().unwrap() + 1);
        }
    }
    // The second kill may have landed after one more commit.
    let on_disk = batches_on_disk(path, true);
    assert!(on_disk == last || on_disk == last + 1, "{on_disk} batches, {last} acknowledged");
    *max_acked = Some(on_disk - 1);
    std::fs::write(stop_file(path), b"").unwrap();
    for r in readers {
        finish_reader(r, on_disk);
    }
    (acked, n)
}

fn kill_runs(kills: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.sketchdb");
    // The file exists before the first kill, so readers can open it.
    let first = Proc::writer(&path, Some(1));
    let Proc { mut child, .. } = first;
    assert!(child.wait().unwrap().success());
    let mut max_acked = Some(0);
    let mut rng = 0x9e37_79b9_u64;
    let (mut acked_total, mut reopened) = (0, 0);
    for k in 0..kills {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_millis(20 + rng % 300);
        let (acked, n) = kill_once(&path, delay, &mut max_acked);
        acked_total += acked;
        reopened = n;
        if k % 20 == 0 {
            eprintln!("kill {k}: {acked} batches acknowledged in {delay:?}; new writer found {n}");
        }
    }
    eprintln!(
        "kill -9 beside 4 readers: {kills} kills, {acked_total} batches acknowledged by killed writers, \
         0 lost, last reopen found {reopened} batches; readers: 0 errors, 0 wrong answers"
    );
}

#[test]
fn kill_9_beside_readers() {
    kill_runs(3);
}

#[test]
#[ignore = "slow: 100 kills of real processes with fsyncs; run with --ignored"]
fn kill_9_beside_readers_many() {
    kill_runs(std::env::var("SKETCHDB_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(100));
}
