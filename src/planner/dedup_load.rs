//! A dedup's load stage: every live record of a collection at one snapshot, read into columns
//! (row ids, keys in one buffer, sketches). The pages are split into runs of row ids
//! ([`ReadSnapshot::page_runs`]) that the caller's rayon pool reads, checks and decodes at
//! once, each run by one worker; the runs are joined in row order, so what is loaded does not
//! depend on the number of threads.

use rayon::prelude::*;

use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::StorageError;
use crate::storage::reader::{ReadSnapshot, decode_many};

/// Rows of a page decoded together: 16 rows of 1-byte OPH bins are 16 consecutive bytes of
/// each column.
const DECODE_CHUNK: usize = 16;

/// Runs of pages per worker thread: enough that a run slower than the others (more live rows,
/// a busier core) leaves the others work to take.
const RUNS_PER_THREAD: u64 = 8;

/// The live records of a collection, in ascending row order.
///
/// Invariant: `rows`, `key_ends` and `sketches` have one entry per record; the key of record
/// `i` is `key_bytes[key_ends[i - 1]..key_ends[i]]` (from 0 for the first).
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Row ids, ascending.
    pub rows: Vec<u64>,
    /// The sketches, in the same order.
    pub sketches: Vec<Sketch>,
    key_bytes: Vec<u8>,
    key_ends: Vec<usize>,
}

impl Loaded {
    /// Records loaded.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The key of record `i`.
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.key_bytes[start..self.key_ends[i]]
    }

    /// The position of row id `row`, if it was loaded.
    pub(crate) fn index_of(&self, row: u64) -> Option<usize> {
        self.rows.binary_search(&row).ok()
    }

    fn push(&mut self, row: u64, key: &[u8], sketch: Sketch) {
        self.rows.push(row);
        self.key_bytes.extend_from_slice(key);
        self.key_ends.push(self.key_bytes.len());
        self.sketches.push(sketch);
    }

    /// `parts` (each in row order, each part's rows after the previous part's) as one.
    fn concat(parts: Vec<Loaded>) -> Loaded {
        let n = parts.iter().map(Loaded::len).sum();
        let bytes = parts.iter().map(|p| p.key_bytes.len()).sum();
        let mut all = Loaded {
            rows: Vec::with_capacity(n),
            sketches: Vec::with_capacity(n),
            key_bytes: Vec::with_capacity(bytes),
            key_ends: Vec::with_capacity(n),
        };
        for p in parts {
            let base = all.key_bytes.len();
            all.rows.extend(p.rows);
            all.sketches.extend(p.sketches);
            all.key_bytes.extend(p.key_bytes);
            all.key_ends.extend(p.key_ends.into_iter().map(|e| base + e));
        }
        all
    }
}

/// Every live record of the collection `info` at `snap`, in row order, read on the caller's
/// rayon pool. A damaged page is the error of the first damaged page in row order (every
/// run is read to its first error before the errors are looked at).
pub(crate) fn load(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Loaded, StorageError> {
    let threads = rayon::current_num_threads().max(1) as u64;
    let runs = snap.page_runs(info, threads * RUNS_PER_THREAD)?;
    let parts: Vec<Result<Loaded, StorageError>> = runs
        .into_par_iter()
        .map(|run| {
            let mut part = Loaded::default();
            let mut live = Vec::new();
            snap.for_each_page_in(info, run, |first, view| {
                live.clear();
                live.extend((0..view.row_count()).filter(|&i| !view.is_deleted(i)));
                for chunk in live.chunks(DECODE_CHUNK) {
                    let sketches = decode_many(info, view, first, chunk)?;
                    for (&i, sketch) in chunk.iter().zip(sketches) {
                        part.push(view.first_row() + i as u64, view.key(i), sketch);
                    }
                }
                Ok(true)
            })?;
            Ok(part)
        })
        .collect();
    Ok(Loaded::concat(parts.into_iter().collect::<Result<Vec<_>, _>>()?))
}
