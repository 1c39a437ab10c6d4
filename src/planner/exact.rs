//! Exact re-ranking for collections that keep shingle sets: candidates come from the chosen
//! plan asked a relaxed question, then each is scored by exact Jaccard over the stored sets.
//!
//! * Threshold t: the plan answers "estimate >= [`candidate_floor`]" (t less four standard
//!   deviations of the estimate at t), and a candidate is kept when its exact Jaccard is at
//!   least t. Recall is bounded by candidate generation only; precision is 1.
//! * Top-k: the plan answers top-(4k + 16) by estimate, re-ranked by exact Jaccard and cut to k.
//! * Hamming questions are not re-ranked (SimHash measures no set).

use crate::codec::shingles::exact_jaccard;
use crate::sketch::params::{SketchKind, SketchParams};
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::ReadSnapshot;

use super::cost::CostModel;
use super::error::QueryError;
use super::exec::Hit;
use super::explain::Explain;
pub use super::explain::Scoring;
use super::query::{Query, QueryKind};
use super::run::{Prepared, QueryResult, explain, run_prepared};

/// The least estimate a candidate of a threshold-`t` question needs, on a collection that
/// keeps shingles: `t - 4 sd`, where sd is the estimate's standard deviation at J = t
/// (`sqrt(t (1 - t) / slots)`, divided by `1 - 2^-bits` for b-bit and OPH values whose
/// collisions the estimator corrects), at least 0.
pub(crate) fn candidate_floor(t: f64, params: &SketchParams) -> f64 {
    let slots = params.slots().max(1) as f64;
    let mut sd = (t * (1.0 - t) / slots).sqrt();
    if matches!(params.kind(), SketchKind::BBitMinHash | SketchKind::Oph) && params.bits() < 32 {
        sd /= 1.0 - 0.5f64.powi(i32::from(params.bits()));
    }
    (t - 4.0 * sd).max(0.0)
}

/// The candidates the relaxed question for `kind` asks for.
fn relaxed(kind: QueryKind, params: &SketchParams) -> QueryKind {
    match kind {
        QueryKind::Threshold(t) => QueryKind::Threshold(candidate_floor(t, params)),
        QueryKind::TopK(k) => QueryKind::TopK(k.saturating_mul(4).saturating_add(16)),
        other => other,
    }
}

/// Runs `query` with exact re-ranking when the collection keeps shingles and `probe` (the
/// query's own shingle set) is known; otherwise as [`super::run::run`]. `prep` was read from
/// `snap`.
pub(crate) fn run_scored(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    probe: Option<&[u64]>,
    costs: &CostModel,
    prep: &Prepared,
) -> Result<QueryResult, QueryError> {
    let Some(probe) = probe.filter(|_| Scoring::of(info, query.kind) == Scoring::Exact) else {
        return run_prepared(snap, info, query, costs, prep);
    };
    super::exec::validate(query, info.def.params.kind())?;
    let wide = Query { kind: relaxed(query.kind, &info.def.params), ..query.clone() };
    let mut result = run_prepared(snap, info, &wide, costs, prep)?;
    for hit in &mut result.hits {
        hit.exact = Some(exact_jaccard(probe, &snap.shingles(info, hit.row_id)?));
    }
    let score = |h: &Hit| h.exact.unwrap_or(0.0);
    match query.kind {
        QueryKind::Threshold(t) => result.hits.retain(|h| score(h) >= t),
        QueryKind::TopK(_) | QueryKind::Hamming(_) => {}
    }
    result.hits.sort_by(|a, b| score(b).total_cmp(&score(a)).then(a.row_id.cmp(&b.row_id)));
    if let QueryKind::TopK(k) = query.kind {
        result.hits.truncate(k);
    }
    result.analyze.results = result.hits.len() as u64;
    Ok(result)
}

/// EXPLAIN of the question [`run_scored`] runs for `query`: on a collection that keeps
/// shingles (threshold and top-k), the relaxed candidate question, with `scores: exact`.
pub(crate) fn explain_scored(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    query: &Query,
    costs: &CostModel,
    analyze: bool,
) -> Result<Explain, QueryError> {
    let scoring = Scoring::of(info, query.kind);
    if scoring != Scoring::Exact {
        return explain(snap, info, query, costs, analyze, scoring);
    }
    super::exec::validate(query, info.def.params.kind())?;
    let wide = Query { kind: relaxed(query.kind, &info.def.params), ..query.clone() };
    explain(snap, info, &wide, costs, analyze, scoring)
}

/// [`run_scored`] for the stored record `key`: its sketch and, on a collection that keeps
/// shingles, its set.
pub(crate) fn run_key(
    snap: &ReadSnapshot,
    info: &CollectionInfo,
    key: &[u8],
    kind: QueryKind,
    options: super::query::QueryOptions,
    costs: &CostModel,
    prep: &Prepared,
) -> Result<QueryResult, QueryError> {
    let Some((row, sketch)) = prep.stored(snap, info, key)? else {
        return Err(QueryError::UnknownKey {
            collection: info.def.name.clone(),
            key: String::from_utf8_lossy(key).into_owned(),
        });
    };
    let probe = if Scoring::of(info, kind) == Scoring::Exact { Some(snap.shingles(info, row)?) } else { None };
    run_scored(snap, info, &Query { sketch, kind, options }, probe.as_deref(), costs, prep)
}
