//! A folder of text files, one record per file keyed by its path relative to the folder
//! (`/`-separated), in sorted key order. Hidden entries are skipped, symbolic links are
//! followed only when asked (a directory reached twice is skipped, so loops end), binary
//! files are skipped and counted, unreadable ones rejected.

use std::collections::{HashSet, VecDeque};
use std::fs::{self, File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::check::{Checked, Parse};
use super::error::{ReadError, Reject, RejectReason};
use super::options::ReadOptions;
use super::record::{Content, Origin, Position, Raw, SkipReason, Skipped, SourceRecord, Summary};
use super::source::{Item, RecordSource};

/// How far into a file a NUL byte marks it binary.
const BINARY_SNIFF: usize = 8 << 10;

/// Identifies a directory across paths that reach it (`(device, inode)` on Unix).
#[cfg(unix)]
type DirId = (u64, u64);
#[cfg(not(unix))]
type DirId = PathBuf;

#[cfg(unix)]
fn dir_id(_: &Path, meta: &Metadata) -> Option<DirId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn dir_id(path: &Path, _: &Metadata) -> Option<DirId> {
    fs::canonicalize(path).ok()
}

pub(crate) fn open(root: &Path, opts: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    let open_err = |source| ReadError::Open { path: root.to_path_buf(), source };
    let meta = fs::metadata(root).map_err(open_err)?;
    fs::read_dir(root).map_err(open_err)?;
    let bytes = Arc::new(AtomicU64::new(0));
    let folder = Folder {
        root: root.to_path_buf(),
        root_id: dir_id(root, &meta),
        follow: opts.follow_symlinks,
        lossy: opts.lossy_utf8,
        keep_raw: opts.keep_raw,
        max: opts.max_record_bytes,
        walked: false,
        rejects: VecDeque::new(),
        files: VecDeque::new(),
        bytes: Arc::clone(&bytes),
    };
    Ok(Box::new(Checked::new(folder, opts, bytes)))
}

struct Folder {
    root: PathBuf,
    root_id: Option<DirId>,
    follow: bool,
    lossy: bool,
    keep_raw: bool,
    max: u64,
    walked: bool,
    rejects: VecDeque<Reject>,
    /// Files still to read, in key order.
    files: VecDeque<(String, PathBuf)>,
    bytes: Arc<AtomicU64>,
}

fn unreadable(path: &Path, e: &std::io::Error) -> Reject {
    Reject::new(Origin::new(path, Position::File), RejectReason::Unreadable(e.to_string()))
}

impl Folder {
    /// Lists every file to read; records skips in `summary` and unreadable entries as rejects.
    fn walk(&mut self, summary: &mut Summary) {
        let mut visited: HashSet<DirId> = self.root_id.iter().cloned().collect();
        let mut files = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) => {
                    self.rejects.push_back(unreadable(&dir, &e));
                    continue;
                }
            };
            let mut paths: Vec<PathBuf> = Vec::new();
            for entry in entries {
                match entry {
                    Ok(entry) => paths.push(entry.path()),
                    Err(e) => self.rejects.push_back(unreadable(&dir, &e)),
                }
            }
            paths.sort();
            let mut subdirs = Vec::new();
            for path in paths {
                let skip = |why| Skipped { path: path.clone(), why };
                if path.file_name().is_some_and(|n| n.as_encoded_bytes().starts_with(b".")) {
                    summary.skipped.push(skip(SkipReason::Hidden));
                    continue;
                }
                let meta = match fs::symlink_metadata(&path) {
                    Ok(m) if m.file_type().is_symlink() && !self.follow => {
                        summary.skipped.push(skip(SkipReason::Symlink));
                        continue;
                    }
                    Ok(m) if m.file_type().is_symlink() => match fs::metadata(&path) {
                        Ok(m) => m,
                        Err(_) => {
                            summary.skipped.push(skip(SkipReason::Special));
                            continue;
                        }
                    },
                    Ok(m) => m,
                    Err(e) => {
                        self.rejects.push_back(unreadable(&path, &e));
                        continue;
                    }
                };
                if meta.is_dir() {
                    match dir_id(&path, &meta) {
                        Some(id) if !visited.insert(id) => summary.skipped.push(skip(SkipReason::Loop)),
                        _ => subdirs.push(path),
                    }
                } else if meta.is_file() {
                    let key = path.strip_prefix(&self.root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                    files.push((key, path));
                } else {
                    summary.skipped.push(skip(SkipReason::Special));
                }
            }
            // Popped last-first, so the smallest name is entered first.
            stack.extend(subdirs.into_iter().rev());
        }
        files.sort();
        self.files = files.into();
    }

    /// The record of one file, `None` when it is skipped as binary.
    fn read(&self, key: String, path: PathBuf, summary: &mut Summary) -> Option<Result<SourceRecord, Reject>> {
        let origin = Origin::new(path.as_path(), Position::File);
        let reject = |reason| Some(Err(Reject::new(origin.clone(), reason)));
        let mut bytes = Vec::new();
        let read = File::open(&path).and_then(|f| f.take(self.max.saturating_add(1)).read_to_end(&mut bytes));
        if let Err(e) = read {
            return reject(RejectReason::Unreadable(e.to_string()));
        }
        self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() as u64 > self.max {
            return reject(RejectReason::TooLarge { max: self.max });
        }
        let mut binary = || {
            summary.skipped.push(Skipped { path: path.clone(), why: SkipReason::Binary });
            None
        };
        if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) {
            return binary();
        }
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) if self.lossy => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            Err(_) => return binary(),
        };
        let raw = if self.keep_raw { Raw::File(path.clone()) } else { Raw::None };
        Some(Ok(SourceRecord { origin, id: None, key, content: Content::Text(text), raw }))
    }
}

impl Parse for Folder {
    fn next_parsed(&mut self, summary: &mut Summary) -> Option<Item> {
        if !self.walked {
            self.walked = true;
            self.walk(summary);
        }
        if let Some(r) = self.rejects.pop_front() {
            return Some(Ok(Err(r)));
        }
        while let Some((key, path)) = self.files.pop_front() {
            if let Some(r) = self.read(key, path, summary) {
                return Some(Ok(r));
            }
        }
        None
    }
}
