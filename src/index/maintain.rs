//! Index maintenance: [`IndexMaintainer`] (the storage layer's [`IndexHook`] for every
//! collection: it reads the collection's index definition inside the write transaction, so
//! a handle never maintains a stale design), index creation and rebuilds.

use super::banding::{BandingPurpose, IndexBanding, recognise, rule_optimum};
use super::defs::{IndexDef, IndexSpec, legacy_lsh};
use super::error::IndexError;
use super::error::index_err;
use super::lsh::LshDelta;
use super::lsh::{BandKeyScheme, RowWidth};
use super::lsh::{CollisionModel, LshParams};
use super::simhash::SimhashDelta;
use super::simhash::SimhashTableDesign;
use super::simhash::bucket_bits_for;
use crate::index::error::inconsistent;
use crate::sketch::params::{SketchKind, SketchParams};
use crate::sketch::sketcher::Sketch;
use crate::storage::catalog::CollectionInfo;
use crate::storage::catalog::rewrite_settings;
use crate::storage::error::contain;
use crate::storage::hook::{IndexHook, PrepareJob, Prepared};
use crate::storage::index_tables::IndexTxn;
use crate::storage::scan_in::{for_each_live_fingerprint_in, for_each_live_in};
use crate::storage::store::Store;
use crate::storage::writer::index_state;

/// The seed of every LSH band-key scheme this build creates (recorded in the scheme).
pub(crate) const LSH_SEED: u64 = 0x736b_6574_6368_6462;

/// What index to build, as the db layer's `IndexConfig` asks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum IndexRequest {
    /// SimHash permuted tables of radius k.
    Simhash { radius: u32 },
    /// LSH bands for a threshold, the banding given or else chosen by `purpose`'s rule.
    Lsh { threshold: f64, bands: Option<u32>, rows: Option<u32>, purpose: BandingPurpose },
}

/// The spec for a request on a collection of `params` holding about `n_rows` rows.
pub(crate) fn spec_for(request: IndexRequest, params: &SketchParams, n_rows: u64) -> Result<IndexSpec, IndexError> {
    match request {
        IndexRequest::Simhash { radius } => {
            if params.kind() != SketchKind::SimHash {
                return Err(IndexError::invalid("index", "SimHash tables", "a SimHash collection"));
            }
            let design = SimhashTableDesign::design(n_rows, radius, u32::from(params.bits()))?;
            Ok(IndexSpec::Simhash { design, bucket_bits: bucket_bits_for(n_rows), next_run: 0, runs: Vec::new() })
        }
        IndexRequest::Lsh { threshold, bands, rows, purpose } => {
            let banding = Banding { bands, rows, purpose };
            let scheme = lsh_scheme_for(params.kind(), params.bits(), params.slots(), threshold, banding)?;
            Ok(IndexSpec::Lsh { scheme, threshold, next_run: 0, runs: Vec::new(), reverse_map: false })
        }
    }
}

/// The band-key row width and the row collision model of a set sketch kind (`NotBanded` for
/// SimHash).
pub(crate) fn banding_model(kind: SketchKind, bits: u8) -> Result<(RowWidth, CollisionModel), IndexError> {
    Ok(match kind {
        SketchKind::SimHash => return Err(IndexError::NotBanded { kind: SketchKind::SimHash }),
        SketchKind::MinHash if bits == 64 => (RowWidth::U64, CollisionModel::Exact),
        SketchKind::MinHash => (RowWidth::U32, CollisionModel::Exact),
        SketchKind::BBitMinHash => (RowWidth::for_bits(bits), CollisionModel::Bits(bits)),
        SketchKind::Oph if bits < 32 => (RowWidth::U32, CollisionModel::Bits(bits)),
        _ => (RowWidth::U32, CollisionModel::Exact),
    })
}

/// How an LSH banding is asked for: bands and rows as given, the purpose's rule choosing
/// when neither is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Banding {
    /// Bands b, if given.
    pub bands: Option<u32>,
    /// Rows per band r, if given.
    pub rows: Option<u32>,
    /// The rule when neither is given.
    pub purpose: BandingPurpose,
}

impl Banding {
    /// The banding `purpose`'s rule chooses.
    pub(crate) fn rule(purpose: BandingPurpose) -> Banding {
        Banding { bands: None, rows: None, purpose }
    }

    /// Exactly `params`.
    pub(crate) fn given(params: LshParams) -> Banding {
        Banding { bands: Some(params.bands), rows: Some(params.rows), purpose: BandingPurpose::default() }
    }
}

/// The band-key scheme an LSH index for `threshold` gets on a collection of this kind: the
/// given banding, or the optimum of the purpose's weights (`BandingPurpose::weights`) when
/// neither bands nor rows are given. The in-memory banding of a dedup without an index uses
/// the same scheme for the collection's purpose, so both find the same candidate pairs.
pub(crate) fn lsh_scheme_for(
    kind: SketchKind,
    bits: u8,
    slots: usize,
    threshold: f64,
    banding: Banding,
) -> Result<BandKeyScheme, IndexError> {
    let Banding { bands, rows, purpose } = banding;
    let (width, model) = banding_model(kind, bits)?;
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(IndexError::invalid("threshold", threshold, "a similarity strictly between 0 and 1"));
    }
    let slots = u32::try_from(slots).unwrap_or(u32::MAX);
    let lsh = match (bands, rows) {
        (Some(b), Some(r)) => LshParams { bands: b, rows: r },
        (Some(b), None) => LshParams { bands: b, rows: slots / b.max(1) },
        (None, Some(r)) => LshParams { bands: slots / r.max(1), rows: r },
        (None, None) => rule_optimum(slots, threshold, purpose, model)?,
    };
    if lsh.bands == 0 || lsh.rows == 0 || u64::from(lsh.bands) * u64::from(lsh.rows) > u64::from(slots) {
        return Err(IndexError::invalid(
            "bands/rows",
            format!("{}x{}", lsh.bands, lsh.rows),
            "b >= 1, r >= 1 and b * r <= the signature's slots",
        ));
    }
    Ok(BandKeyScheme::new(LSH_SEED, lsh, width))
}

/// The band-key scheme a new LSH index gets on sketches with `params` for `threshold` (the
/// given banding, else the default purpose's optimum): what `create_collection` with
/// `IndexConfig::Lsh` records on a collection without exact shingles, so keys computed with
/// it are the keys the index files. [`index_band_scheme_for`] takes the purpose.
pub fn index_band_scheme(
    params: &SketchParams,
    threshold: f64,
    bands: Option<u32>,
    rows: Option<u32>,
) -> Result<BandKeyScheme, IndexError> {
    index_band_scheme_for(params, threshold, bands, rows, BandingPurpose::Estimated)
}

/// [`index_band_scheme`] for a collection of `purpose`
/// (`BandingPurpose::for_collection(exact_shingles)`).
pub fn index_band_scheme_for(
    params: &SketchParams,
    threshold: f64,
    bands: Option<u32>,
    rows: Option<u32>,
    purpose: BandingPurpose,
) -> Result<BandKeyScheme, IndexError> {
    lsh_scheme_for(params.kind(), params.bits(), params.slots(), threshold, Banding { bands, rows, purpose })
}

/// The banding of an LSH index over sketches with `params`, as recorded (`params`, tuned for
/// `threshold`), with the rule that gives it on a collection of purpose `own` (`None`:
/// given, or chosen by no rule of this build).
pub(crate) fn recorded_banding(
    sketch: &SketchParams,
    threshold: f64,
    params: LshParams,
    own: BandingPurpose,
) -> IndexBanding {
    let purpose = banding_model(sketch.kind(), sketch.bits()).ok().and_then(|(_, model)| {
        let slots = u32::try_from(sketch.slots()).unwrap_or(u32::MAX);
        recognise(slots, threshold, params, model, own)
    });
    IndexBanding { params, threshold, purpose }
}

enum Active {
    None,
    Simhash(SimhashDelta),
    Lsh(LshDelta),
}

/// The index hook of one write transaction.
pub(crate) struct IndexMaintainer {
    def: Option<IndexDef>,
    active: Active,
}

impl IndexMaintainer {
    pub(crate) fn new() -> IndexMaintainer {
        IndexMaintainer { def: None, active: Active::None }
    }

    /// Adds every live row of the collection (a rebuild): `rows` of them, as its state
    /// counts. SimHash tables take the fingerprints straight from the pages.
    fn add_live(&mut self, txn: &IndexTxn<'_>, info: &CollectionInfo, rows: u64) -> Result<(), IndexError> {
        match &mut self.active {
            Active::Simhash(d) => {
                d.reserve(usize::try_from(rows).unwrap_or(0));
                Ok(for_each_live_fingerprint_in(txn, info, |row, fp| d.add(row, fp))?)
            }
            _ => for_each_live_in(txn, info, |row, sketch| self.added(row, sketch)),
        }
    }
}

fn fingerprint_of(sketch: &Sketch) -> u128 {
    match sketch {
        Sketch::SimHash(s) => s.value(),
        _ => 0,
    }
}

impl IndexHook for IndexMaintainer {
    type Error = IndexError;

    fn begin(&mut self, txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<(), IndexError> {
        self.def = IndexDef::load_in(txn, info)?;
        self.active = match self.def.as_ref().map(|d| &d.spec) {
            None => Active::None,
            Some(IndexSpec::Simhash { design, bucket_bits, .. }) => {
                Active::Simhash(SimhashDelta::new(design.clone(), *bucket_bits))
            }
            Some(IndexSpec::Lsh { scheme, .. }) => Active::Lsh(LshDelta::new(*scheme)),
            Some(IndexSpec::LshGroups { .. }) => return Err(legacy_lsh(info)),
        };
        Ok(())
    }

    fn added(&mut self, row: u64, sketch: &Sketch) -> Result<(), IndexError> {
        match &mut self.active {
            Active::None => Ok(()),
            Active::Simhash(d) => {
                d.add(row, fingerprint_of(sketch));
                Ok(())
            }
            Active::Lsh(d) => {
                d.add(row, sketch);
                Ok(())
            }
        }
    }

    fn prepare<'a>(&mut self, sketches: &'a [&'a Sketch], first_row: u64) -> Option<PrepareJob<'a>> {
        match &mut self.active {
            Active::Lsh(d) => d.prepare(sketches, first_row),
            _ => None,
        }
    }

    fn prepared(&mut self, result: Prepared, info: &CollectionInfo) -> Result<(), IndexError> {
        match &mut self.active {
            Active::Lsh(d) => d.prepared(result, info),
            _ => Err(inconsistent(info, 0, "an index without a prepare job was handed its result")),
        }
    }

    fn wants_removed_sketch(&self) -> bool {
        // SimHash tables find a row's entries by its fingerprint; an LSH index lists the
        // removed row (`sketchdb.lsh_dead`) and needs no sketch.
        matches!(self.active, Active::Simhash(_))
    }

    fn removed(&mut self, row: u64, sketch: Option<&Sketch>) -> Result<(), IndexError> {
        match &mut self.active {
            Active::None => {}
            Active::Simhash(d) => match sketch {
                Some(s) => d.remove(row, fingerprint_of(s)),
                None => {
                    return Err(IndexError::inconsistent(
                        "SimHash tables",
                        format!("row {row} removed without its fingerprint"),
                    ));
                }
            },
            Active::Lsh(d) => d.remove(row),
        }
        Ok(())
    }

    fn finish(&mut self, txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<(), IndexError> {
        let Some(def) = self.def.as_mut() else { return Ok(()) };
        match &mut self.active {
            Active::None => return Ok(()),
            Active::Simhash(d) => d.flush(txn, info, def)?,
            Active::Lsh(d) => d.flush(txn, info, def)?,
        }
        def.store_in(txn, info)
    }

    fn optimize(&mut self, txn: &IndexTxn<'_>, info: &CollectionInfo) -> Result<bool, IndexError> {
        let Some(def) = self.def.as_mut() else { return Ok(false) };
        let merged = match def.spec {
            IndexSpec::Simhash { .. } => super::simhash::merge_all(txn, info, def)?,
            _ => super::lsh::merge_all(txn, info, def)?,
        };
        if !merged {
            return Ok(false);
        }
        def.store_in(txn, info)?;
        Ok(true)
    }
}

/// Writes a new, empty index for `request` inside the creating transaction.
pub(crate) fn create_index_in(
    txn: &IndexTxn<'_>,
    info: &CollectionInfo,
    request: IndexRequest,
) -> Result<(), IndexError> {
    let spec = spec_for(request, &info.def.params, 0).map_err(index_err(info))?;
    IndexDef { spec, entries: 0, sum_sq: 0 }.store_in(txn, info)
}

/// Drops the collection's index and builds `request`'s (chosen for the live row count) from
/// every live row, in one write transaction; also stores the db layer's new `settings`.
pub(crate) fn rebuild(
    store: &Store,
    info: &CollectionInfo,
    request: Option<IndexRequest>,
    settings: Vec<u8>,
) -> Result<CollectionInfo, IndexError> {
    contain("rebuild index", || rebuild_unguarded(store, info, request, settings))
}

/// Bytes an index of `spec` over `live` rows takes, estimated from above: an LSH entry (band
/// key and row id, packed by group) takes at most 12 bytes per row and band, a SimHash
/// entry at most 16 per row and table.
fn new_index_bytes(spec: &IndexSpec, live: u64) -> u64 {
    match spec {
        IndexSpec::Lsh { scheme, .. } => live.saturating_mul(u64::from(scheme.params.bands)).saturating_mul(12),
        IndexSpec::Simhash { design, .. } => live.saturating_mul(design.tables().len() as u64).saturating_mul(16),
        IndexSpec::LshGroups { .. } => 0,
    }
}

fn rebuild_unguarded(
    store: &Store,
    info: &CollectionInfo,
    request: Option<IndexRequest>,
    settings: Vec<u8>,
) -> Result<CollectionInfo, IndexError> {
    if let Some(request) = request {
        // The old index's pages are freed only at the commit: the new one needs its own
        // space. Checked before the write transaction begins.
        let live = store.snapshot()?.state(info)?.live;
        let spec = spec_for(request, &info.def.params, live).map_err(index_err(info))?;
        store.ensure_space("reindex", new_index_bytes(&spec, live))?;
    }
    store.write_index(|txn| {
        let state = index_state(txn, info)?;
        txn.drop_index_entries(info.def.id)?;
        let new_info = rewrite_settings(txn, info, settings)?;
        if let Some(request) = request {
            let spec = spec_for(request, &info.def.params, state.live).map_err(index_err(info))?;
            IndexDef { spec, entries: 0, sum_sq: 0 }.store_in(txn, info)?;
            let mut hook = IndexMaintainer::new();
            hook.begin(txn, info)?;
            hook.add_live(txn, info, state.live)?;
            hook.finish(txn, info)?;
        }
        Ok(new_info)
    })
}
