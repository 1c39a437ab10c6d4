//! The `db_open` fuzz target's logic: a real database file, mutated as the input says, is
//! opened read-only and read-write through the public API, and its statistics, `verify` and
//! queries run. Every outcome must be a value or a typed error with a message: nothing may
//! panic out of the library (the fuzzer reports it), hang (its timeout) or grow without bound
//! (its memory limit).
//!
//! The input is a list of 6-byte edits applied to the base file ([`base_image`]): an
//! operation byte, a little-endian `u32` position (taken modulo the file's length) and a value
//! byte. Operation `o % 4`: 0 sets the byte, 1 flips bit `value % 8`, 2 zeroes `value + 1`
//! bytes, 3 truncates the file there. A short tail is ignored, so the empty input opens the
//! file as written.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::db::config::{CollectionConfig, IndexConfig};
use crate::db::database::Database;
use crate::error::{Error, Result};
use crate::planner::query::Query;
use crate::sketch::params::SketchParams;
use crate::sketch::tokens::TokenSet;

/// The bytes of a small database written by this build: a MinHash collection with an LSH
/// index, a SimHash collection with permuted tables, and a b-bit one with deletions.
pub fn base_image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| build_image().unwrap_or_else(|e| panic!("db_open: cannot build the base file: {e}")))
}

fn tokens(i: u64) -> TokenSet {
    TokenSet::from_unsorted((0..12 + i % 7).map(|t| t * 7919 + i * 104_729 % 1_000_003).collect())
}

fn build_image() -> Result<Vec<u8>> {
    let path = scratch_path();
    let _ = std::fs::remove_file(&path);
    {
        let db = Database::create(&path)?;
        let lsh = IndexConfig::Lsh { threshold: 0.5, bands: None, rows: None };
        let kinds = [
            ("m", SketchParams::minhash(32, 32, 1)?, lsh),
            ("s", SketchParams::simhash(64, 1)?, IndexConfig::SimhashTables { radius: 3 }),
            ("b", SketchParams::bbit(64, 4, 1)?, IndexConfig::None),
        ];
        for (name, params, index) in kinds {
            let mut config = CollectionConfig::new(params);
            config.index = index;
            let c = db.create_collection(name, config)?;
            for i in 0..40 {
                c.insert_tokens(format!("{name}{i}"), &tokens(i))?;
            }
            if name == "b" {
                for i in (0..40).step_by(5) {
                    c.delete(format!("{name}{i}"))?;
                }
            }
        }
    }
    let bytes =
        std::fs::read(&path).map_err(|source| crate::StorageError::Io { op: "read", path: path.clone(), source })?;
    let _ = std::fs::remove_file(&path);
    Ok(bytes)
}

/// A file name of this process's own, new on every call.
fn scratch_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("sketchdb-db-open-{}-{n}.sketchdb", std::process::id()))
}

/// The base file with the input's edits applied.
pub fn mutate(base: &[u8], data: &[u8]) -> Vec<u8> {
    let mut img = base.to_vec();
    for edit in data.chunks_exact(6) {
        if img.is_empty() {
            break;
        }
        let pos = u32::from_le_bytes([edit[1], edit[2], edit[3], edit[4]]) as usize % img.len();
        let value = edit[5];
        match edit[0] % 4 {
            0 => img[pos] = value,
            1 => img[pos] ^= 1 << (value % 8),
            2 => {
                let end = (pos + usize::from(value) + 1).min(img.len());
                img[pos..end].fill(0);
            }
            _ => img.truncate(pos),
        }
    }
    img
}

/// Asserts that an error says something (a typed error always does).
fn said(e: &Error) {
    assert!(!e.to_string().trim().is_empty(), "an error without a message: {e:?}");
}

/// Runs everything a reader runs; errors are fine, panics are not.
fn exercise(db: &Database) {
    if let Err(e) = crate::admin::stats(db) {
        said(&e);
    }
    match crate::admin::verify(db) {
        Ok(report) => {
            for p in &report.problems {
                assert!(!p.to_string().trim().is_empty(), "a problem without a message");
            }
        }
        Err(e) => said(&e),
    }
    let collections = match db.collections() {
        Ok(c) => c,
        Err(e) => return said(&e),
    };
    for c in collections {
        let run = || -> Result<()> {
            let n = c.len()?;
            let probe = c.sketcher().sketch(&tokens(3))?;
            let hits = c.query(&Query::top_k(probe.clone(), 3))?.hits;
            assert!(hits.len() as u64 <= n.max(3), "more hits than records");
            c.query(&Query::threshold(probe, 0.5))?;
            for r in c.scan()?.take(64) {
                r?;
            }
            Ok(())
        };
        if let Err(e) = run() {
            said(&e);
        }
    }
}

fn open_and_read(path: &Path) {
    match Database::open_read_only(path) {
        Ok(db) => exercise(&db),
        Err(e) => said(&e),
    }
    match Database::builder().busy_timeout(std::time::Duration::ZERO).open(path) {
        Ok(db) => exercise(&db),
        Err(e) => said(&e),
    }
}

/// `db_open`: the base file with `data`'s edits, written to a scratch file, opened and read.
pub fn fuzz_db_open(data: &[u8]) {
    let img = mutate(base_image(), data);
    let path = scratch_path();
    if std::fs::write(&path, &img).is_err() {
        return;
    }
    open_and_read(&path);
    let _ = std::fs::remove_file(&path);
}

/// Seed inputs for `db_open`: no edit, edits in the header, in the middle and at the end,
/// truncations at a few places.
pub fn db_open_seeds() -> Vec<Vec<u8>> {
    let len = base_image().len() as u32;
    let edit = |op: u8, pos: u32, value: u8| {
        let mut e = vec![op];
        e.extend(pos.to_le_bytes());
        e.push(value);
        e
    };
    let mut out = vec![vec![]];
    for (i, pos) in [0, 9, 64, 300, 4096, 4100, len / 3, len / 2, len - 4096, len - 1].into_iter().enumerate() {
        out.push(edit(1, pos, i as u8));
        out.push(edit(2, pos, 63));
    }
    for pos in [len / 2, len - 1, 4096, 100] {
        out.push(edit(3, pos, 0));
    }
    out.push([edit(0, 4096 + 17, 0xff), edit(1, 8192 + 5, 3), edit(2, len / 4, 255)].concat());
    out
}
