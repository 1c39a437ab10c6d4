//! A dedup's load stage: every live record of a collection at one snapshot, read into columns
//! (row ids, keys in one buffer, sketches). The pages are split into runs of row ids
//! ([`ReadSnapshot::page_runs`]) that the caller's rayon pool reads, checks and decodes at
//! once, each run by one worker; the runs are joined in row order, so what is loaded does not
//! depend on the number of threads.

use rayon::prelude::*;

use std::borrow::Cow;

use crate::codec::error::CodecError;
use crate::sketch::error::SketchError;
use crate::sketch::oph::OphSketch;
use crate::sketch::oph_column::OphColumn;
use crate::sketch::params::SketchParams;
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::error::StorageError;
use crate::storage::reader::{ReadSnapshot, decode_many, decode_many_into};

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
#[derive(Debug)]
pub(crate) struct Loaded {
    /// Row ids, ascending.
    pub rows: Vec<u64>,
    /// The sketches, in the same order.
    pub sketches: Sketches,
    key_bytes: Vec<u8>,
    key_ends: Vec<usize>,
}

/// The loaded sketches: OPH ones in columns (a quarter of their decoded size for 8-bit bins,
/// and no allocation per record), the other kinds as decoded.
#[derive(Debug)]
pub(crate) enum Sketches {
    /// Sketches of any kind, one per record.
    Each(Vec<Sketch>),
    /// OPH sketches of the collection's parameters.
    Oph(OphParts),
}

/// OPH sketches in the columns the load's workers filled, one after another, read as one
/// column (no copy into a single column: at 1M sketches of 512 bins that copy is half a
/// gigabyte on one thread).
///
/// Invariant: `parts` is never empty and every part has the same parameters; `starts[p]` is
/// the number of sketches held before part `p`.
#[derive(Debug)]
pub(crate) struct OphParts {
    parts: Vec<OphColumn>,
    starts: Vec<usize>,
}

impl OphParts {
    fn new(column: OphColumn) -> OphParts {
        OphParts { parts: vec![column], starts: vec![0] }
    }

    /// Sketches held.
    pub(crate) fn len(&self) -> usize {
        self.starts.last().zip(self.parts.last()).map_or(0, |(s, p)| s + p.len())
    }

    /// The parameters of every sketch held.
    pub(crate) fn params(&self) -> &SketchParams {
        self.parts[0].params()
    }

    /// The last part, where sketches are pushed.
    fn last_mut(&mut self) -> &mut OphColumn {
        let last = self.parts.len() - 1;
        &mut self.parts[last]
    }

    /// Appends the sketches of `other`, after those held (an empty part is dropped).
    fn append(&mut self, other: OphParts) -> Result<(), SketchError> {
        for part in other.parts.into_iter().filter(|p| p.len() > 0) {
            self.params().check_compatible(part.params())?;
            let start = self.len();
            if self.parts.len() == 1 && self.parts[0].len() == 0 {
                self.parts[0] = part;
            } else {
                self.parts.push(part);
                self.starts.push(start);
            }
        }
        Ok(())
    }

    /// The part holding sketch `i` and its position there (past the end: the last part and a
    /// position past its end, which the part refuses).
    fn locate(&self, i: usize) -> (&OphColumn, usize) {
        let p = self.starts.partition_point(|&s| s <= i).saturating_sub(1);
        (&self.parts[p], i - self.starts[p])
    }

    /// `OphColumn::similarity_value` of sketches `i` and `j`, across parts.
    pub(crate) fn similarity_value(&self, i: usize, j: usize) -> Result<f64, SketchError> {
        let ((a, x), (b, y)) = (self.locate(i), self.locate(j));
        a.similarity_value_with(x, b, y)
    }

    /// `OphColumn::densify_into` of sketch `i`.
    pub(crate) fn densify_into(&self, i: usize, out: &mut Vec<u32>) -> Result<(), SketchError> {
        let (part, at) = self.locate(i);
        part.densify_into(at, out)
    }

    /// Sketch `i`.
    fn sketch(&self, i: usize) -> Result<OphSketch, SketchError> {
        let (part, at) = self.locate(i);
        part.sketch(at)
    }
}

impl Sketches {
    /// An empty holder for sketches of `params`.
    fn for_params(params: &SketchParams) -> Sketches {
        match OphColumn::new(*params) {
            Ok(column) => Sketches::Oph(OphParts::new(column)),
            Err(_) => Sketches::Each(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Sketches::Each(v) => v.len(),
            Sketches::Oph(c) => c.len(),
        }
    }

    fn push(&mut self, sketch: Sketch) -> Result<(), SketchError> {
        match (self, sketch) {
            (Sketches::Oph(c), Sketch::Oph(s)) => c.last_mut().push(&s),
            (Sketches::Oph(c), other) => Err(SketchError::incompatible("kind", c.params().kind(), other.kind())),
            (Sketches::Each(v), s) => {
                v.push(s);
                Ok(())
            }
        }
    }

    fn append(&mut self, other: Sketches) -> Result<(), SketchError> {
        match (self, other) {
            (Sketches::Oph(a), Sketches::Oph(b)) => a.append(b),
            (Sketches::Each(a), Sketches::Each(b)) => {
                a.extend(b);
                Ok(())
            }
            // Every part holds sketches of the collection's parameters: not reached.
            _ => Err(SketchError::malformed("loaded", "parts holding sketches of different kinds")),
        }
    }

    /// The sketch of record `i`.
    pub(crate) fn get(&self, i: usize) -> Result<Cow<'_, Sketch>, SketchError> {
        match self {
            Sketches::Each(v) => v
                .get(i)
                .map(Cow::Borrowed)
                .ok_or_else(|| SketchError::invalid("loaded record", i, "a record below the number loaded")),
            Sketches::Oph(c) => Ok(Cow::Owned(Sketch::Oph(c.sketch(i)?))),
        }
    }

    /// `Sketch::similarity_value` of records `i` and `j`, bit for bit.
    pub(crate) fn similarity_value(&self, i: usize, j: usize) -> Result<f64, SketchError> {
        match self {
            Sketches::Each(v) => v[i].similarity_value(&v[j]),
            Sketches::Oph(c) => c.similarity_value(i, j),
        }
    }
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

    /// No records, to hold sketches of `params`.
    fn new(params: &SketchParams) -> Loaded {
        Loaded { rows: vec![], sketches: Sketches::for_params(params), key_bytes: vec![], key_ends: vec![] }
    }

    fn push(&mut self, row: u64, key: &[u8], sketch: Sketch) -> Result<(), SketchError> {
        self.sketches.push(sketch)?;
        self.push_key(row, key);
        Ok(())
    }

    /// The row id and key of the record whose sketch was just appended to `sketches`.
    fn push_key(&mut self, row: u64, key: &[u8]) {
        self.rows.push(row);
        self.key_bytes.extend_from_slice(key);
        self.key_ends.push(self.key_bytes.len());
    }

    /// The same records with their sketches held one per record (the path of kinds without
    /// columns), for comparing the two.
    #[cfg(test)]
    pub(crate) fn into_each(self) -> Result<Loaded, SketchError> {
        let sketches = (0..self.len()).map(|i| self.sketches.get(i).map(Cow::into_owned)).collect::<Result<_, _>>()?;
        Ok(Loaded { sketches: Sketches::Each(sketches), ..self })
    }

    /// `parts` (each in row order, each part's rows after the previous part's) as one.
    fn concat(params: &SketchParams, parts: Vec<Loaded>) -> Result<Loaded, SketchError> {
        let n = parts.iter().map(Loaded::len).sum();
        let bytes = parts.iter().map(|p| p.key_bytes.len()).sum();
        let mut all = Loaded::new(params);
        all.rows.reserve(n);
        all.key_bytes.reserve(bytes);
        all.key_ends.reserve(n);
        for p in parts {
            let base = all.key_bytes.len();
            all.rows.extend(p.rows);
            all.sketches.append(p.sketches)?;
            all.key_bytes.extend(p.key_bytes);
            all.key_ends.extend(p.key_ends.into_iter().map(|e| base + e));
        }
        debug_assert_eq!(all.sketches.len(), all.rows.len());
        Ok(all)
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
            let mut part = Loaded::new(&info.def.params);
            let (mut live, mut scratch) = (Vec::new(), Vec::new());
            snap.for_each_page_in(info, run, |first, view| {
                live.clear();
                live.extend((0..view.row_count()).filter(|&i| !view.is_deleted(i)));
                for chunk in live.chunks(DECODE_CHUNK) {
                    // OPH rows go straight into the column; other kinds are decoded one
                    // sketch per row.
                    if let Sketches::Oph(column) = &mut part.sketches {
                        decode_many_into(info, view, first, chunk, column.last_mut(), &mut scratch)?;
                        for &i in chunk {
                            part.push_key(view.first_row() + i as u64, view.key(i));
                        }
                        continue;
                    }
                    let sketches = decode_many(info, view, first, chunk)?;
                    for (&i, sketch) in chunk.iter().zip(sketches) {
                        let row = view.first_row() + i as u64;
                        part.push(row, view.key(i), sketch).map_err(|source| StorageError::CorruptRow {
                            collection: info.def.name.clone(),
                            page: first,
                            row,
                            source: Box::new(CodecError::Sketch { what: "loaded row", source }),
                        })?;
                    }
                }
                Ok(true)
            })?;
            Ok(part)
        })
        .collect();
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    Loaded::concat(&info.def.params, parts).map_err(|e| StorageError::Inconsistent {
        collection: info.def.name.clone(),
        row: None,
        detail: e.to_string(),
    })
}
