//! Calibration: measures the planner's cost constants on this machine by running the real
//! access paths over small synthetic collections in memory, then stores them in the
//! database (`meta` table, `"planner.costs"`), where every later query's planner reads them.

use std::time::Instant;

use super::batch::Batch;
use super::config::CollectionConfig;
use super::database::Database;
use crate::codec::meta::PlannerCostsRecord;
use crate::error::Result;
use crate::planner::cost::CostModel;
use crate::planner::plan::PlanKind;
use crate::planner::query::{Query, QueryKind, QueryOptions};
use crate::sketch::hash::fmix64;
use crate::sketch::params::SketchParams;
use crate::sketch::simhash::SimHash;
use crate::sketch::sketcher::Sketch;
use crate::sketch::tokens::TokenSet;
use crate::storage::backend::MemoryBackend;

fn tokens(i: u64, n: u64) -> TokenSet {
    TokenSet::from_unsorted((0..n).map(|j| fmix64(i.wrapping_mul(1_000_003) ^ j)).collect())
}

/// Times `f` (best of three runs), in nanoseconds.
fn best_ns(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_nanos() as f64);
    }
    Ok(best.max(1.0))
}

fn forced(kind: PlanKind) -> QueryOptions {
    QueryOptions { force: Some(kind), exact: true, ..QueryOptions::default() }
}

impl From<&PlannerCostsRecord> for CostModel {
    fn from(r: &PlannerCostsRecord) -> Self {
        CostModel {
            decode_per_slot: r.decode_per_slot,
            bin_compare: r.bin_compare,
            fingerprint_compare: r.fingerprint_compare,
            lookup: r.lookup,
            verify_per_slot: r.verify_per_slot,
            calibrated: true,
        }
    }
}

/// Measures the cost constants (about a second) without touching any stored data.
pub(crate) fn measure() -> Result<CostModel> {
    let scratch = Database::builder().create_on(MemoryBackend::default())?;
    let rows = 20_000u64;

    // OPH bin scan: every bin of every row (threshold 0 disables early termination).
    let oph = scratch.create_collection("oph", CollectionConfig::new(SketchParams::oph(128, 8, 1)?))?;
    let mut batch = Batch::with_capacity(rows as usize);
    for i in 0..rows {
        batch.insert(i.to_le_bytes(), oph.sketcher().sketch(&tokens(i, 100))?);
    }
    oph.apply(&batch)?;
    let q = oph.sketcher().sketch(&tokens(7, 100))?;
    let scan = Query { sketch: q, kind: QueryKind::Threshold(0.0), options: forced(PlanKind::OphBinScan) };
    let bin_compare = best_ns(|| oph.query(&scan).map(|_| ()))? / (rows as f64 * 128.0);

    // Full scan: decode and estimate every row.
    let mh = scratch.create_collection("mh", CollectionConfig::new(SketchParams::minhash(128, 32, 1)?))?;
    let small = rows / 4;
    let mut batch = Batch::with_capacity(small as usize);
    for i in 0..small {
        batch.insert(i.to_le_bytes(), mh.sketcher().sketch(&tokens(i, 100))?);
    }
    mh.apply(&batch)?;
    let q = mh.sketcher().sketch(&tokens(7, 100))?;
    let full = Query { sketch: q.clone(), kind: QueryKind::Threshold(0.5), options: forced(PlanKind::FullScan) };
    let decode_per_slot = best_ns(|| mh.query(&full).map(|_| ()))? / (small as f64 * 128.0);

    // Random row lookups with verification: the cost of checking one candidate.
    let snap = mh.snapshot()?;
    let probes: Vec<u64> = (0..2_000u64).map(|i| fmix64(i) % small).collect();
    let lookup = best_ns(|| {
        for &r in &probes {
            std::hint::black_box(snap.get_row(r)?);
        }
        Ok(())
    })? / probes.len() as f64;
    let verify = best_ns(|| {
        for &r in &probes {
            if let Some(rec) = snap.get_row(r)? {
                std::hint::black_box(q.similarity(&rec.sketch, 0.95)?);
            }
        }
        Ok(())
    })? / probes.len() as f64;

    // Fingerprint scan.
    let params = SketchParams::simhash(64, 1)?;
    let sh = scratch.create_collection("sh", CollectionConfig::new(params))?;
    let mut batch = Batch::with_capacity(rows as usize);
    for i in 0..rows {
        batch.insert(i.to_le_bytes(), Sketch::SimHash(SimHash::from_parts(params, u128::from(fmix64(i)))?));
    }
    sh.apply(&batch)?;
    let q = Sketch::SimHash(SimHash::from_parts(params, 12345)?);
    let ham = Query { sketch: q, kind: QueryKind::Hamming(3), options: forced(PlanKind::FullScan) };
    let fingerprint_compare = best_ns(|| sh.query(&ham).map(|_| ()))? / rows as f64;

    Ok(CostModel {
        decode_per_slot,
        bin_compare,
        fingerprint_compare,
        lookup,
        verify_per_slot: verify / 128.0,
        calibrated: true,
    })
}

impl Database {
    /// Measures the planner's cost constants on this machine and stores them in the
    /// database; queries plan with them from then on. Returns the measured model.
    pub fn calibrate(&self) -> Result<CostModel> {
        let m = measure()?;
        self.store().set_planner_costs(&PlannerCostsRecord {
            decode_per_slot: m.decode_per_slot,
            bin_compare: m.bin_compare,
            fingerprint_compare: m.fingerprint_compare,
            lookup: m.lookup,
            verify_per_slot: m.verify_per_slot,
            measured_by: format!("sketchdb {}", env!("CARGO_PKG_VERSION")),
        })?;
        Ok(m)
    }

    /// The cost model queries plan with: the stored calibration, or the defaults.
    pub fn cost_model(&self) -> Result<CostModel> {
        Ok(self.store().planner_costs()?.as_ref().map(CostModel::from).unwrap_or_default())
    }
}
