//! [`IndexDef`]: a collection's persisted index definition (table `sketchdb.index_defs`,
//! envelope record kind 5): the spec (SimHash table design or LSH band-key scheme) and the
//! counters writes keep current in the same transaction.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::error::{IndexError, index_err};
use super::lsh::BandKeyScheme;
use super::simhash::SimhashTableDesign;
use crate::codec::envelope::{self, RecordKind};
use crate::codec::error::CodecError;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::BytesRead;
use crate::storage::index_tables::IndexTxn;
use crate::storage::reader::ReadSnapshot;
use crate::storage::tables::INDEX_DEFS_NAME;

/// Which index, with everything that determines its keys. Persisted through
/// [`IndexSpecWire`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "IndexSpecWire")]
pub(crate) enum IndexSpec {
    /// SimHash permuted tables; `bucket_bits` is the bucket width B (each table's bucket is
    /// the top `min(B, p_t)` bits of its permuted key). Stored as `runs` (ascending, disjoint
    /// row ranges), each a full set of tables over its rows; `next_run` numbers the next.
    Simhash { design: SimhashTableDesign, bucket_bits: u32, next_run: u32, runs: Vec<SimhashRun> },
    /// The single-run LSH layout of earlier builds (table `sketchdb.lsh_buckets`). Still
    /// decoded so it can be named, refused and rebuilt; never written.
    LshGroups { scheme: BandKeyScheme, threshold: f64, group_bits: u32 },
    /// LSH banding buckets for `threshold`, stored as `runs` (table `sketchdb.lsh_runs`).
    /// A row's band keys come from its stored signature. A removed row's entries stay in its
    /// run until a merge rewrites the run, listed meanwhile in `sketchdb.lsh_dead` (each run
    /// counts its own). `reverse_map`: the file also holds every live row's band keys in
    /// `sketchdb.lsh_rows`, as builds before wire variant 3 wrote them; the next write to the
    /// index removes them (and clears the flag).
    Lsh { scheme: BandKeyScheme, threshold: f64, next_run: u32, runs: Vec<LshRun>, reverse_map: bool },
}

/// [`IndexSpec`] as stored (postcard: the variant index, then the fields). Variants may only
/// be appended; a build that predates one refuses it as an unknown variant.
#[derive(Clone, Serialize, Deserialize)]
enum IndexSpecWire {
    /// SimHash tables as one set (builds before variant 5): read as one run, number 0,
    /// holding every indexed row.
    Simhash {
        design: SimhashTableDesign,
        bucket_bits: u32,
    },
    LshGroups {
        scheme: BandKeyScheme,
        threshold: f64,
        group_bits: u32,
    },
    /// Runs with the reverse map in `sketchdb.lsh_rows` (builds before variant 3).
    LshReverseMap(LshWire<LshRunV3>),
    /// Runs alone, a removed row's entries taken out at once (builds before variant 4).
    LshEager(LshWire<LshRunV3>),
    /// Runs with their removed-row counts; removed rows listed in `sketchdb.lsh_dead`.
    Lsh(LshWire<LshRun>),
    /// SimHash tables stored as runs.
    SimhashRuns {
        design: SimhashTableDesign,
        bucket_bits: u32,
        next_run: u32,
        runs: Vec<SimhashRun>,
    },
}

/// The fields the LSH run variants store, in order (a newtype variant of this struct is
/// encoded exactly as a struct variant of these fields).
#[derive(Clone, Serialize, Deserialize)]
struct LshWire<R> {
    scheme: BandKeyScheme,
    threshold: f64,
    next_run: u32,
    runs: Vec<R>,
}

/// A run as wire variants 2 and 3 store it: [`LshRun`] without `dead` (those builds took a
/// removed row's entries out at once).
#[derive(Clone, Serialize, Deserialize)]
struct LshRunV3 {
    id: u32,
    group_bits: u32,
    first_row: u64,
    end_row: u64,
    entries: u64,
    sum_sq: u128,
}

impl From<LshRunV3> for LshRun {
    fn from(r: LshRunV3) -> LshRun {
        let LshRunV3 { id, group_bits, first_row, end_row, entries, sum_sq } = r;
        LshRun { id, group_bits, first_row, end_row, entries, sum_sq, dead: 0 }
    }
}

impl LshWire<LshRunV3> {
    fn current(self) -> LshWire<LshRun> {
        let LshWire { scheme, threshold, next_run, runs } = self;
        LshWire { scheme, threshold, next_run, runs: runs.into_iter().map(LshRun::from).collect() }
    }
}

impl IndexSpec {
    /// The spec a stored variant stands for; `entries` is the stored definition's counter
    /// (the rows of the single run a variant 0 SimHash index is read as).
    fn from_wire(w: IndexSpecWire, entries: u64) -> IndexSpec {
        let lsh = |LshWire { scheme, threshold, next_run, runs }: LshWire<LshRun>, reverse_map| IndexSpec::Lsh {
            scheme,
            threshold,
            next_run,
            runs,
            reverse_map,
        };
        match w {
            IndexSpecWire::Simhash { design, bucket_bits } => {
                let runs =
                    if entries == 0 { Vec::new() } else { vec![SimhashRun { id: 0, first_row: 0, rows: entries }] };
                IndexSpec::Simhash { design, bucket_bits, next_run: 1, runs }
            }
            IndexSpecWire::SimhashRuns { design, bucket_bits, next_run, runs } => {
                IndexSpec::Simhash { design, bucket_bits, next_run, runs }
            }
            IndexSpecWire::LshGroups { scheme, threshold, group_bits } => {
                IndexSpec::LshGroups { scheme, threshold, group_bits }
            }
            IndexSpecWire::LshReverseMap(w) => lsh(w.current(), true),
            IndexSpecWire::LshEager(w) => lsh(w.current(), false),
            IndexSpecWire::Lsh(w) => lsh(w, false),
        }
    }
}

impl From<IndexSpec> for IndexSpecWire {
    fn from(s: IndexSpec) -> IndexSpecWire {
        match s {
            IndexSpec::Simhash { design, bucket_bits, next_run, runs } => {
                IndexSpecWire::SimhashRuns { design, bucket_bits, next_run, runs }
            }
            IndexSpec::LshGroups { scheme, threshold, group_bits } => {
                IndexSpecWire::LshGroups { scheme, threshold, group_bits }
            }
            // An index with a reverse map was never written by this build, so none of its
            // runs has removed rows yet (it is read as variant 2 and stored as variant 4 by
            // the same write).
            IndexSpec::Lsh { scheme, threshold, next_run, runs, reverse_map: true } => {
                let runs = runs
                    .into_iter()
                    .map(|LshRun { id, group_bits, first_row, end_row, entries, sum_sq, dead: _ }| LshRunV3 {
                        id,
                        group_bits,
                        first_row,
                        end_row,
                        entries,
                        sum_sq,
                    })
                    .collect();
                IndexSpecWire::LshReverseMap(LshWire { scheme, threshold, next_run, runs })
            }
            IndexSpec::Lsh { scheme, threshold, next_run, runs, reverse_map: false } => {
                IndexSpecWire::Lsh(LshWire { scheme, threshold, next_run, runs })
            }
        }
    }
}

/// One run of an LSH index: the entries of every live row with `first_row <= row < end_row`,
/// and of the `dead` removed rows of that range listed in `sketchdb.lsh_dead`, sorted per
/// band and packed in `2^group_bits` groups. Runs are listed in row order and their row
/// ranges do not overlap, so a removed row belongs to exactly one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LshRun {
    /// Run number in `sketchdb.lsh_runs` keys (below the index's `next_run`, never reused).
    pub id: u32,
    /// The run's group width P (0..=24).
    pub group_bits: u32,
    /// The run's row range, `[first_row, end_row)`.
    pub first_row: u64,
    pub end_row: u64,
    /// Sum over the run's buckets of s (rows times bands).
    pub entries: u64,
    /// Sum over the run's buckets of s^2.
    pub sum_sq: u128,
    /// Removed rows whose entries the run still holds (each listed in `sketchdb.lsh_dead`);
    /// a merge that rewrites the run drops them.
    pub dead: u64,
}

impl LshRun {
    /// Rows whose entries the run holds (live and removed), under `bands` bands.
    pub(crate) fn rows_held(&self, bands: u32) -> u64 {
        self.entries / u64::from(bands.max(1))
    }
}

/// The index in `runs` (ascending, disjoint row ranges) of the run whose row range holds
/// `row`, if any.
pub(crate) fn run_holding(runs: &[LshRun], row: u64) -> Option<usize> {
    let i = runs.partition_point(|r| r.end_row <= row);
    runs.get(i).is_some_and(|r| r.first_row <= row).then_some(i)
}

/// One run of SimHash tables: every table's entries of the live rows from `first_row` up to
/// the next run's first row (the last run's range is open). Keys in
/// `sketchdb.simhash_buckets` carry the run number above the table number
/// ([`super::simhash::table_field`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SimhashRun {
    /// Run number (below the index's `next_run` and below 2^24).
    pub id: u32,
    /// The run's first row id.
    pub first_row: u64,
    /// Live rows the run holds (each once in every table), at least 1.
    pub rows: u64,
}

/// The index in `runs` (ascending `first_row`) of the run whose row range holds `row`.
pub(crate) fn simhash_run_holding(runs: &[SimhashRun], row: u64) -> Option<usize> {
    runs.partition_point(|r| r.first_row <= row).checked_sub(1)
}

/// A collection's index definition and counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "IndexDefWire")]
pub(crate) struct IndexDef {
    /// The spec.
    pub spec: IndexSpec,
    /// SimHash: rows indexed (each in every table). LSH: sum of bucket sizes (rows * bands).
    pub entries: u64,
    /// LSH: sum over buckets of size^2 (0 for SimHash).
    pub sum_sq: u128,
}

/// [`IndexDef`] as stored: the same fields, the spec as its wire variant.
#[derive(Deserialize)]
struct IndexDefWire {
    spec: IndexSpecWire,
    entries: u64,
    sum_sq: u128,
}

impl From<IndexDefWire> for IndexDef {
    fn from(w: IndexDefWire) -> IndexDef {
        IndexDef { spec: IndexSpec::from_wire(w.spec, w.entries), entries: w.entries, sum_sq: w.sum_sq }
    }
}

/// The widest bucket a SimHash table uses.
pub(crate) const MAX_BUCKET_BITS: u32 = 24;
/// The narrowest bucket width chosen (so collections created empty get a useful width).
pub(crate) const MIN_BUCKET_BITS: u32 = 16;

impl IndexDef {
    /// Checks a decoded definition.
    pub(crate) fn validate(&self) -> Result<(), IndexError> {
        match &self.spec {
            IndexSpec::Simhash { design, bucket_bits, next_run, runs } => {
                design.validate()?;
                if *bucket_bits == 0 || *bucket_bits > MAX_BUCKET_BITS {
                    return Err(IndexError::inconsistent("simhash index", format!("bucket_bits {bucket_bits}")));
                }
                let bad = |detail: String| Err(IndexError::inconsistent("simhash index", detail));
                if *next_run > super::simhash::RUN_IDS {
                    return bad(format!("next run {next_run}"));
                }
                for (i, r) in runs.iter().enumerate() {
                    if r.id >= *next_run || r.rows == 0 || runs[..i].iter().any(|o| o.id == r.id) {
                        return bad(format!("run {r:?} (next run {next_run})"));
                    }
                    if i > 0 && r.first_row <= runs[i - 1].first_row {
                        return bad(format!("run {} rows overlap the run before", r.id));
                    }
                }
                if runs.iter().fold(0u64, |n, r| n.saturating_add(r.rows)) != self.entries {
                    return bad("row counter differs from the sum over runs".into());
                }
            }
            IndexSpec::LshGroups { scheme, .. } => scheme.validate()?,
            IndexSpec::Lsh { scheme, threshold, next_run, runs, .. } => {
                scheme.validate()?;
                if !(*threshold > 0.0 && *threshold < 1.0) {
                    return Err(IndexError::inconsistent("lsh index", format!("threshold {threshold}")));
                }
                let mut end = 0u64;
                for r in runs {
                    if r.id >= *next_run || r.group_bits > super::lsh::MAX_GROUP_BITS {
                        return Err(IndexError::inconsistent("lsh index", format!("run {r:?} (next run {next_run})")));
                    }
                    if r.dead > r.rows_held(scheme.params.bands) {
                        return Err(IndexError::inconsistent(
                            "lsh index",
                            format!("run {} counts more removed rows than it holds", r.id),
                        ));
                    }
                    if r.first_row < end || r.end_row <= r.first_row {
                        return Err(IndexError::inconsistent(
                            "lsh index",
                            format!("run {} rows overlap or are empty", r.id),
                        ));
                    }
                    end = r.end_row;
                }
                let (entries, sum_sq) = runs
                    .iter()
                    .fold((0u64, 0u128), |(e, q), r| (e.saturating_add(r.entries), q.saturating_add(r.sum_sq)));
                if entries != self.entries || sum_sq != self.sum_sq {
                    return Err(IndexError::inconsistent("lsh index", "counters differ from the sums over runs"));
                }
            }
        }
        Ok(())
    }

    fn corrupt(id: u32, source: CodecError) -> StorageError {
        StorageError::CorruptMeta { table: INDEX_DEFS_NAME, key: id.to_string(), source: Box::new(source) }
    }

    pub(crate) fn encode(&self, id: u32) -> Result<Vec<u8>, StorageError> {
        envelope::encode(RecordKind::IndexDef, self).map_err(|e| Self::corrupt(id, e))
    }

    /// The definition as builds before SimHash runs stored it (wire variant 0), for tests of
    /// reading such files: `None` unless it is SimHash tables held in run 0 alone (the only
    /// layout those builds wrote).
    pub(crate) fn encode_before_simhash_runs(&self, id: u32) -> Result<Option<Vec<u8>>, StorageError> {
        let IndexSpec::Simhash { design, bucket_bits, runs, .. } = &self.spec else { return Ok(None) };
        if runs.iter().any(|r| r.id != 0) {
            return Ok(None);
        }
        let spec = IndexSpecWire::Simhash { design: design.clone(), bucket_bits: *bucket_bits };
        #[derive(Serialize)]
        struct Def0 {
            spec: IndexSpecWire,
            entries: u64,
            sum_sq: u128,
        }
        let def = Def0 { spec, entries: self.entries, sum_sq: self.sum_sq };
        envelope::encode(RecordKind::IndexDef, &def).map(Some).map_err(|e| Self::corrupt(id, e))
    }

    pub(crate) fn decode(id: u32, bytes: &[u8]) -> Result<IndexDef, StorageError> {
        let def: IndexDef = envelope::decode(RecordKind::IndexDef, bytes).map_err(|e| Self::corrupt(id, e))?;
        def.validate()
            .map_err(|e| Self::corrupt(id, CodecError::Payload { what: "index definition", detail: e.to_string() }))?;
        Ok(def)
    }

    /// The definition of `info`'s index inside a write transaction (`None`: no index).
    pub(crate) fn load_in(txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<Option<IndexDef>, IndexError> {
        let t = txn.index_defs()?;
        let v = t.get(info.def.id, "read index definition")?;
        Ok(v.map(|v| IndexDef::decode(info.def.id, v.value())).transpose()?)
    }

    /// Writes the definition inside a write transaction.
    pub(crate) fn store_in(&self, txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<(), IndexError> {
        let bytes = self.encode(info.def.id)?;
        txn.index_defs()?.insert(info.def.id, &bytes, "write index definition")?;
        Ok(())
    }

    /// The definition as of a read transaction. Decoded definitions are cached by their
    /// bytes, so a probe pays one small read and a comparison, not a decode and validation.
    pub(crate) fn load(snap: &ReadSnapshot, info: &CollectionInfo) -> Result<Option<Arc<IndexDef>>, IndexError> {
        let Some(t) = snap.index_defs()? else { return Ok(None) };
        let Some(v) = t.get(info.def.id, "read index definition")? else {
            return Ok(None);
        };
        let bytes = v.value();
        let mut cache = DEF_CACHE.lock();
        if let Some((_, def)) = cache.iter().find(|(b, _)| b.as_slice() == bytes) {
            return Ok(Some(def.clone()));
        }
        let def = Arc::new(IndexDef::decode(info.def.id, bytes)?);
        if cache.len() >= DEF_CACHE_LEN {
            cache.remove(0);
        }
        cache.push((bytes.to_vec(), def.clone()));
        Ok(Some(def))
    }
}

const DEF_CACHE_LEN: usize = 16;
/// Recently decoded definitions, keyed by their exact stored bytes (envelope with crc), so
/// a cached entry can never stand for other bytes.
static DEF_CACHE: Mutex<Vec<(Vec<u8>, Arc<IndexDef>)>> = Mutex::new(Vec::new());

/// The error for an LSH index in the single-run layout of earlier builds, which this build
/// reads no further: rebuilding the index (`Collection::rebuild_index`) rewrites it as runs.
pub(crate) fn legacy_lsh(info: &CollectionInfo) -> IndexError {
    index_err(info)(IndexError::inconsistent(
        "lsh index",
        "stored in the single-run layout of an earlier build (sketchdb.lsh_buckets); rebuild the index \
         (Collection::rebuild_index) to use or change it",
    ))
}

#[cfg(test)]
#[path = "defs_tests.rs"]
mod tests;
