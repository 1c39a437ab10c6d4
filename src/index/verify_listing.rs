//! Verification of an LSH index's removed-row listing (`sketchdb.lsh_dead`) against its
//! runs and the pages ([`super::verify`] checks the entries themselves).

use super::meta::{LshRun, run_holding};
use super::verify::Out;
use crate::sketch::sketch::Sketch;
use crate::storage::tables::LSH_DEAD_NAME;

/// The rows `sketchdb.lsh_dead` lists for a collection (ascending) and the records of those
/// its pages hold (ascending).
pub(super) struct Removed<'a> {
    pub listed: &'a [u64],
    pub held: &'a [(u64, Sketch)],
}

/// Checks the removed-row listing against the runs: every listed row's page holds its
/// (removed) record, it lies in a run, and each run's `dead` count equals its listed rows.
pub(super) fn check_listing(runs: &[LshRun], removed: &Removed<'_>, out: &mut Out<'_>) {
    let mut held = removed.held.iter().map(|(row, _)| *row).peekable();
    let mut counts = vec![0u64; runs.len()];
    for &row in removed.listed {
        while held.next_if(|&h| h < row).is_some() {}
        if held.next_if_eq(&row).is_none() {
            out.problem(Some(row), format!("{LSH_DEAD_NAME}: lists row {row}, which no page holds as removed"));
        }
        match run_holding(runs, row) {
            Some(i) => counts[i] += 1,
            None => out.problem(Some(row), format!("{LSH_DEAD_NAME}: lists row {row}, which lies in no LSH run")),
        }
    }
    for (run, n) in runs.iter().zip(counts) {
        if run.dead != n {
            out.problem(
                None,
                format!(
                    "lsh run {}: definition counts {} removed rows; {LSH_DEAD_NAME} lists {n} in its rows",
                    run.id, run.dead
                ),
            );
        }
    }
}
