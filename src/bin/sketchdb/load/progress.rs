//! Progress of a load on stderr, in human units: documents and documents per second, bytes
//! and bytes per second, percentage and ETA from the inputs' sizes (the compressed position
//! for compressed input, so the percentage is of the file on disk). Drawn only when stderr
//! is a terminal.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{HumanCount, ProgressBar, ProgressStyle};

/// Redraws at most this often.
const TICK: Duration = Duration::from_millis(100);

pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    last: Instant,
    /// Bytes of the inputs already finished.
    done_bytes: u64,
}

/// The bytes of every input: file sizes, the regular files under a folder (hidden entries
/// and symbolic links skipped, as the reader does); `None` when one is standard input.
pub fn total_bytes(inputs: &[PathBuf]) -> Option<u64> {
    let mut total = 0u64;
    for input in inputs {
        if input == Path::new("-") {
            return None;
        }
        total += size(input);
    }
    Some(total)
}

fn size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    let meta = if meta.file_type().is_symlink() { std::fs::metadata(path).ok() } else { Some(meta) };
    match meta {
        Some(m) if m.is_dir() => {
            let mut total = 0;
            let mut stack = vec![path.to_path_buf()];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                for entry in entries.flatten() {
                    if entry.file_name().as_encoded_bytes().starts_with(b".") {
                        continue;
                    }
                    match entry.file_type() {
                        Ok(t) if t.is_dir() => stack.push(entry.path()),
                        Ok(t) if t.is_file() => total += entry.metadata().map_or(0, |m| m.len()),
                        _ => {}
                    }
                }
            }
            total
        }
        Some(m) => m.len(),
        None => 0,
    }
}

impl Progress {
    /// A bar over `total` input bytes (a spinner when unknown).
    pub fn new(total: Option<u64>) -> Self {
        let (bar, template) = match total {
            Some(t) => (
                ProgressBar::new(t),
                "{spinner} [{bar:25}] {percent:>3}% {msg}, {bytes}/{total_bytes} ({bytes_per_sec}), ETA {eta}",
            ),
            None => (ProgressBar::no_length(), "{spinner} {msg}, {bytes} ({bytes_per_sec})"),
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        let now = Instant::now();
        Progress { bar, start: now, last: now, done_bytes: 0 }
    }

    /// `docs` records read so far, `bytes` of the current input consumed.
    pub fn update(&mut self, docs: u64, bytes: u64) {
        let now = Instant::now();
        if now.duration_since(self.last) < TICK {
            return;
        }
        self.last = now;
        let secs = now.duration_since(self.start).as_secs_f64().max(1e-9);
        self.bar.set_message(format!("{} docs ({} docs/s)", HumanCount(docs), HumanCount((docs as f64 / secs) as u64)));
        self.bar.set_position(self.done_bytes + bytes);
    }

    /// The current input is finished after `bytes`.
    pub fn input_done(&mut self, bytes: u64) {
        self.done_bytes += bytes;
        self.bar.set_position(self.done_bytes);
    }

    /// Input bytes consumed in all.
    pub fn bytes(&self) -> u64 {
        self.done_bytes
    }

    /// Removes the bar (the summary line follows).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
