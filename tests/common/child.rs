//! The crash-test child process (`examples/crash_child`), shared by the kill -9 and
//! multi-process tests.

use std::path::PathBuf;
use std::process::Command;

/// The `crash_child` example beside the running test binary, built first when missing:
/// `target/<profile>/deps/<test>-<hash>` -> `target/<profile>/examples/crash_child`.
pub fn child_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let bin = dir.join("examples").join("crash_child");
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--example", "crash_child"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    assert!(bin.exists(), "{} missing: run `cargo build --example crash_child`", bin.display());
    bin
}

/// What one killed child did.
pub struct Killed {
    /// The batch numbers it acknowledged (`ACK <n>` lines), in order.
    pub acked: Vec<u64>,
    /// Its standard error, when it exited on its own instead of being killed.
    pub exited_on_its_own: Option<String>,
}

/// Runs the crash child with `args`, sends it SIGKILL after `delay`, and reads every line it
/// wrote before dying.
pub fn run_and_kill(args: &[&std::ffi::OsStr], delay: std::time::Duration) -> Killed {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child =
        Command::new(child_binary()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<_>>());
    std::thread::sleep(delay);
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    let lines = reader.join().unwrap();
    let acked = lines.iter().filter_map(|l| l.strip_prefix("ACK ")).map(|b| b.parse().unwrap()).collect();
    let exited_on_its_own = status
        .success()
        .then(|| child.stderr.take().map(std::io::read_to_string).and_then(Result::ok).unwrap_or_default());
    Killed { acked, exited_on_its_own }
}

/// A xorshift64 generator for kill delays (fixed seeds keep runs comparable).
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
