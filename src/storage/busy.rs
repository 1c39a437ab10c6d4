//! A database held by another handle: waiting for it (the busy timeout), and naming what
//! holds it where the operating system can tell.
//!
//! An open that the file's locks refuse is retried, with a growing pause (1 ms doubling to
//! 50 ms), until the busy timeout has passed; then it fails with [`StorageError::Locked`],
//! naming the file, how long it waited, and, on Linux, the process holding it (found through
//! `/proc/<pid>/fdinfo`, which lists the byte-range locks each open file description holds,
//! and `/proc/<pid>/cmdline`). Finding the holder is best effort: it runs only after the wait,
//! and any part of `/proc` that cannot be read is skipped.

use std::path::Path;
use std::time::{Duration, Instant};

use super::error::StorageError;

/// How long an open waits for a file held by another handle before it fails, by default.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const FIRST_PAUSE: Duration = Duration::from_millis(1);
const LONGEST_PAUSE: Duration = Duration::from_millis(50);

/// Runs `open` until it succeeds, fails with something other than [`StorageError::Locked`],
/// or `timeout` has passed since the first try; the final `Locked` carries the time waited and
/// the holder.
pub(crate) fn retry_while_locked<T>(
    path: &Path,
    timeout: Duration,
    mut open: impl FnMut() -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    let start = Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        match open() {
            Err(StorageError::Locked { .. }) => {
                let waited = start.elapsed();
                if waited >= timeout {
                    return Err(StorageError::Locked { path: path.to_path_buf(), waited, holder: holder(path) });
                }
                std::thread::sleep(pause.min(timeout - waited));
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
            other => return other,
        }
    }
}

/// The process that holds `path` for writing, as `process <pid> (<command line>)`; `None`
/// where it cannot be known (not Linux, `/proc` unreadable, or a handle in this process).
pub(crate) fn holder(path: &Path) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        linux::holder(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    /// The longest command line shown, in characters.
    const MAX_COMMAND: usize = 160;

    pub(super) fn holder(path: &Path) -> Option<String> {
        let target = fs::metadata(path).ok()?;
        let me = std::process::id();
        let mut readers = None;
        for entry in fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            if pid == me {
                continue;
            }
            match locks_on(pid, target.dev(), target.ino()) {
                Some(true) => return Some(describe(pid)),
                Some(false) => readers = readers.or(Some(pid)),
                None => {}
            }
        }
        readers.map(describe)
    }

    /// Whether process `pid` has the file (`dev`, `ino`) open with a write lock on it
    /// (`Some(true)`), open without one (`Some(false)`), or not open at all (`None`).
    fn locks_on(pid: u32, dev: u64, ino: u64) -> Option<bool> {
        let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
        let mut open = false;
        for fd in fds.flatten() {
            // `metadata` follows the fd's link to the file it has open.
            let Ok(m) = fs::metadata(fd.path()) else { continue };
            if m.dev() != dev || m.ino() != ino {
                continue;
            }
            open = true;
            let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy()))
                .unwrap_or_default();
            if info.lines().any(|l| l.starts_with("lock:") && l.contains(" WRITE ")) {
                return Some(true);
            }
        }
        open.then_some(false)
    }

    fn describe(pid: u32) -> String {
        let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let words: Vec<String> =
            raw.split(|b| *b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        let mut command = words.join(" ");
        if command.chars().count() > MAX_COMMAND {
            command = command.chars().take(MAX_COMMAND).collect::<String>() + "...";
        }
        if command.is_empty() { format!("process {pid}") } else { format!("process {pid} ({command})") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_until_the_open_succeeds() {
        let path = Path::new("x.db");
        let mut tries = 0;
        let got = retry_while_locked(path, Duration::from_secs(10), || {
            tries += 1;
            if tries < 4 {
                Err(StorageError::Locked { path: path.into(), waited: Duration::ZERO, holder: None })
            } else {
                Ok(tries)
            }
        });
        assert_eq!(got.unwrap(), 4);
    }

    #[test]
    fn gives_up_after_the_timeout_and_says_how_long_it_waited() {
        let path = Path::new("x.db");
        let mut tries = 0;
        let timeout = Duration::from_millis(30);
        let got: Result<(), _> = retry_while_locked(path, timeout, || {
            tries += 1;
            Err(StorageError::Locked { path: path.into(), waited: Duration::ZERO, holder: None })
        });
        match got {
            Err(StorageError::Locked { waited, .. }) => assert!(waited >= timeout, "{waited:?}"),
            other => panic!("{other:?}"),
        }
        assert!(tries > 1);
    }

    #[test]
    fn zero_timeout_tries_once_and_other_errors_pass_at_once() {
        let path = Path::new("x.db");
        let mut tries = 0;
        let _ = retry_while_locked::<()>(path, Duration::ZERO, || {
            tries += 1;
            Err(StorageError::Locked { path: path.into(), waited: Duration::ZERO, holder: None })
        });
        assert_eq!(tries, 1);
        let mut tries = 0;
        let got = retry_while_locked::<()>(path, Duration::from_secs(10), || {
            tries += 1;
            Err(StorageError::ReadOnly { op: "x" })
        });
        assert!(matches!(got, Err(StorageError::ReadOnly { .. })));
        assert_eq!(tries, 1);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_nobody_holds_has_no_holder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("free");
        std::fs::write(&p, b"x").unwrap();
        assert_eq!(holder(&p), None);
    }
}
