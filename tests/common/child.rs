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
