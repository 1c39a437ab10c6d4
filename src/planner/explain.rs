//! EXPLAIN and EXPLAIN ANALYZE: the chosen plan, why, every alternative with its estimated
//! cost, and (ANALYZE) what execution actually did.

use std::fmt;

use super::cost::Choice;
use super::exec::Analyze;
use crate::index::IndexBanding;

/// The output of EXPLAIN (and, with `analyze`, EXPLAIN ANALYZE).
#[derive(Clone, Debug, PartialEq)]
pub struct Explain {
    /// The planner's choice and the alternatives it weighed.
    pub choice: Choice,
    /// What running the plan did, for EXPLAIN ANALYZE.
    pub analyze: Option<Analyze>,
    /// Whether results are estimated from sketches or re-ranked by exact Jaccard.
    pub scoring: Scoring,
    /// The LSH banding the plan uses (an index probe or an in-memory banding) and the rule
    /// that chose it; `None` for plans that band nothing.
    pub banding: Option<IndexBanding>,
}

fn cost_text(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} us", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

impl fmt::Display for Explain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plan: {}", self.choice.plan)?;
        writeln!(f, "why:  {}", self.choice.reason)?;
        match self.scoring {
            Scoring::Exact => {
                writeln!(f, "scores: exact (candidates re-ranked by exact Jaccard over stored shingles)")?
            }
            _ => writeln!(f, "scores: estimated (from the sketches)")?,
        }
        if let Some(b) = &self.banding {
            writeln!(f, "banding: {b}")?;
        }
        writeln!(f, "alternatives:")?;
        for a in &self.choice.alternatives {
            let mark = if a.plan == self.choice.plan { "*" } else { " " };
            let cost = a.cost_ns.map_or_else(|| "not eligible".to_string(), |c| format!("est. {}", cost_text(c)));
            writeln!(f, " {mark} {:<17} {:<18} {}", a.plan.access.label(), cost, a.note)?;
        }
        if let Some(a) = &self.analyze {
            writeln!(
                f,
                "analyze: {} results in {}; {} rows touched, {} candidates verified, {} bins compared, {} rows pruned early",
                a.results,
                cost_text(a.elapsed.as_nanos() as f64),
                a.rows_touched,
                a.candidates,
                a.bins_compared,
                a.pruned
            )?;
        }
        Ok(())
    }
}

/// How a result's score was obtained, as EXPLAIN shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scoring {
    /// Estimated from the sketches (with an interval).
    Estimated,
    /// Candidates from the sketches, scored and kept by exact Jaccard over the stored
    /// shingle sets.
    Exact,
}

impl Scoring {
    /// `estimated` or `exact`.
    pub fn name(self) -> &'static str {
        match self {
            Scoring::Estimated => "estimated",
            Scoring::Exact => "exact",
        }
    }

    /// The scoring of `kind` questions on the collection `info`.
    pub(crate) fn of(info: &crate::storage::catalog::CollectionInfo, kind: super::query::QueryKind) -> Scoring {
        if info.shingles && !matches!(kind, super::query::QueryKind::Hamming(_)) {
            Scoring::Exact
        } else {
            Scoring::Estimated
        }
    }
}

impl std::fmt::Display for Scoring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
