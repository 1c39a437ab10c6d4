//! The interactive shell, driven through a pipe: the same commands as the command line, dot
//! commands, errors that name the line and do not stop the shell, and a failing exit code.

use std::io::Write;
use std::process::{Command, Stdio};

fn shell(dir: &std::path::Path, script: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sketchdb"))
        .current_dir(dir)
        .arg("shell.db")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
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
