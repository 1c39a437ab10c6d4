//! [`IndexDef`]: a collection's persisted index definition (table `sketchdb.index_defs`,
//! envelope record kind 5): the spec (SimHash table design or LSH band-key scheme) and the
//! counters writes keep current in the same transaction.

use std::sync::Arc;

use parking_lot::Mutex;
use redb::{ReadTransaction, ReadableTable, WriteTransaction};
use serde::{Deserialize, Serialize};

use super::error::IndexError;
use super::keys::band::BandKeyScheme;
use super::keys::simhash_design::SimhashTableDesign;
use crate::codec::envelope::{self, RecordKind};
use crate::codec::error::CodecError;
use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::open;
use crate::storage::tables::{INDEX_DEFS, INDEX_DEFS_NAME};

/// Which index, with everything that determines its keys. Persisted through
/// [`IndexSpecWire`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "IndexSpecWire", into = "IndexSpecWire")]
pub(crate) enum IndexSpec {
    /// SimHash permuted tables; `bucket_bits` is the bucket width B (each table's bucket is
    /// the top `min(B, p_t)` bits of its permuted key).
    Simhash { design: SimhashTableDesign, bucket_bits: u32 },
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

impl From<IndexSpecWire> for IndexSpec {
    fn from(w: IndexSpecWire) -> IndexSpec {
        let lsh = |LshWire { scheme, threshold, next_run, runs }: LshWire<LshRun>, reverse_map| IndexSpec::Lsh {
            scheme,
            threshold,
            next_run,
            runs,
            reverse_map,
        };
        match w {
            IndexSpecWire::Simhash { design, bucket_bits } => IndexSpec::Simhash { design, bucket_bits },
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
            IndexSpec::Simhash { design, bucket_bits } => IndexSpecWire::Simhash { design, bucket_bits },
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

/// A collection's index definition and counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexDef {
    /// The spec.
    pub spec: IndexSpec,
    /// SimHash: rows indexed (each in every table). LSH: sum of bucket sizes (rows * bands).
    pub entries: u64,
    /// LSH: sum over buckets of size^2 (0 for SimHash).
    pub sum_sq: u128,
}

/// The widest bucket a SimHash table uses.
pub(crate) const MAX_BUCKET_BITS: u32 = 24;
/// The narrowest bucket width chosen (so collections created empty get a useful width).
pub(crate) const MIN_BUCKET_BITS: u32 = 16;

impl IndexDef {
    /// Checks a decoded definition.
    pub(crate) fn validate(&self) -> Result<(), IndexError> {
        match &self.spec {
            IndexSpec::Simhash { design, bucket_bits } => {
                design.validate()?;
                if *bucket_bits == 0 || *bucket_bits > MAX_BUCKET_BITS {
                    return Err(IndexError::inconsistent("simhash index", format!("bucket_bits {bucket_bits}")));
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

    pub(crate) fn decode(id: u32, bytes: &[u8]) -> Result<IndexDef, StorageError> {
        let def: IndexDef = envelope::decode(RecordKind::IndexDef, bytes).map_err(|e| Self::corrupt(id, e))?;
        def.validate()
            .map_err(|e| Self::corrupt(id, CodecError::Payload { what: "index definition", detail: e.to_string() }))?;
        Ok(def)
    }

    /// The definition of `info`'s index inside a write transaction (`None`: no index).
    pub(crate) fn load_in(txn: &WriteTransaction, info: &CollectionInfo) -> Result<Option<IndexDef>, StorageError> {
        let t = txn.open_table(INDEX_DEFS).map_err(StorageError::backend("open table"))?;
        let v = t.get(info.def.id).map_err(StorageError::backend("read index definition"))?;
        v.map(|v| IndexDef::decode(info.def.id, v.value())).transpose()
    }

    /// Writes the definition inside a write transaction.
    pub(crate) fn store_in(&self, txn: &WriteTransaction, info: &CollectionInfo) -> Result<(), StorageError> {
        let bytes = self.encode(info.def.id)?;
        txn.open_table(INDEX_DEFS)
            .map_err(StorageError::backend("open table"))?
            .insert(info.def.id, bytes.as_slice())
            .map_err(StorageError::backend("write index definition"))?;
        Ok(())
    }

    /// The definition as of a read transaction. Decoded definitions are cached by their
    /// bytes, so a probe pays one small read and a comparison, not a decode and validation.
    pub(crate) fn load(txn: &ReadTransaction, info: &CollectionInfo) -> Result<Option<Arc<IndexDef>>, StorageError> {
        let Some(t) = open(txn, INDEX_DEFS)? else { return Ok(None) };
        let Some(v) = t.get(info.def.id).map_err(StorageError::backend("read index definition"))? else {
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

/// Wraps an index-layer error as a storage error of `info`.
pub(crate) fn index_err(info: &CollectionInfo) -> impl FnOnce(IndexError) -> StorageError + '_ {
    move |e| StorageError::Index { collection: info.def.name.clone(), source: Box::new(e) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::keys::band::RowWidth;
    use crate::index::lsh_params::LshParams;

    fn lsh(reverse_map: bool, dead: u64) -> IndexDef {
        let scheme = BandKeyScheme::new(7, LshParams { bands: 39, rows: 13 }, RowWidth::U8);
        let run = LshRun { id: 4, group_bits: 3, first_row: 0, end_row: 10, entries: 390, sum_sq: 400, dead };
        IndexDef {
            spec: IndexSpec::Lsh { scheme, threshold: 0.8, next_run: 5, runs: vec![run], reverse_map },
            entries: 390,
            sum_sq: 400,
        }
    }

    /// The LSH wire variants round-trip to the same runs, told apart by the variant index:
    /// 4 without a reverse map (what this build writes, removed-row counts included), 2 with
    /// one (earlier builds).
    #[test]
    fn lsh_wire_variants_round_trip_and_keep_their_indexes() {
        for (reverse_map, dead, variant) in [(false, 0, 4u8), (false, 3, 4), (true, 0, 2)] {
            let def = lsh(reverse_map, dead);
            assert_eq!(IndexDef::decode(1, &def.encode(1).expect("encode")).expect("decode"), def);
            let spec = postcard::to_allocvec(&def.spec).expect("postcard");
            assert_eq!(spec[0], variant, "reverse map {reverse_map}");
        }
    }

    /// Variant 3, as the builds before removed-row counts wrote it, reads as runs with no
    /// removed rows; a run counting more removed rows than it holds is refused.
    #[test]
    fn variant_3_reads_with_no_removed_rows_and_counts_are_checked() {
        let want = lsh(false, 0);
        let IndexSpec::Lsh { scheme, threshold, next_run, runs, .. } = want.spec.clone() else { unreachable!() };
        let runs = runs
            .into_iter()
            .map(|r| LshRunV3 {
                id: r.id,
                group_bits: r.group_bits,
                first_row: r.first_row,
                end_row: r.end_row,
                entries: r.entries,
                sum_sq: r.sum_sq,
            })
            .collect();
        #[derive(Serialize)]
        struct Def3 {
            spec: IndexSpecWire,
            entries: u64,
            sum_sq: u128,
        }
        let spec = IndexSpecWire::LshEager(LshWire { scheme, threshold, next_run, runs });
        assert_eq!(postcard::to_allocvec(&spec).expect("postcard")[0], 3);
        let bytes = envelope::encode(RecordKind::IndexDef, &Def3 { spec, entries: 390, sum_sq: 400 }).expect("encode");
        assert_eq!(IndexDef::decode(1, &bytes).expect("decode"), want);
        // 390 entries at 39 bands hold 10 rows.
        assert!(IndexDef::decode(1, &lsh(false, 10).encode(1).unwrap()).is_ok());
        match IndexDef::decode(2, &lsh(false, 11).encode(2).unwrap()) {
            Err(StorageError::CorruptMeta { table, key, .. }) => {
                assert_eq!((table, key.as_str()), (INDEX_DEFS_NAME, "2"))
            }
            other => panic!("{other:?}"),
        }
    }

    /// A variant this build does not know (as a later build might append) is refused as
    /// corrupt metadata of `sketchdb.index_defs`, never read as another.
    #[test]
    fn an_unknown_spec_variant_is_refused() {
        #[derive(Serialize)]
        enum Later {
            _A,
            _B,
            _C,
            _D,
            _E,
            F(u32),
        }
        #[derive(Serialize)]
        struct LaterDef {
            spec: Later,
            entries: u64,
            sum_sq: u128,
        }
        let bytes = envelope::encode(RecordKind::IndexDef, &LaterDef { spec: Later::F(1), entries: 0, sum_sq: 0 })
            .expect("encode");
        match IndexDef::decode(3, &bytes) {
            Err(StorageError::CorruptMeta { table, key, .. }) => {
                assert_eq!((table, key.as_str()), (INDEX_DEFS_NAME, "3"))
            }
            other => panic!("{other:?}"),
        }
    }
}
