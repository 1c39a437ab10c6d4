//! `bounds`: what a configuration promises before any data is stored — LSH candidate
//! probability, false-positive and false-negative areas for (bands, rows, threshold), and the
//! estimator's expected interval for k slots of b bits (in the manner of Mash's `bounds`).

use clap::Args;
use serde_json::json;
use sketchdb::recipes::{DEFAULT_SLOTS, INDEX_LSH_WEIGHTS, check_level};
use sketchdb::{
    SketchParams,
    estimate::{DEFAULT_LEVEL, clopper_pearson},
    lsh::{
        CollisionModel, LshParams, LshWeights, candidate_probability_with, false_negative_area, false_positive_area,
        optimal_lsh_params,
    },
    recipes::DEFAULT_SEED,
};

use crate::error::CliError;
use crate::output::{outln, table};

/// The weights `bounds` and `create --lsh` choose a banding with, as text.
pub const INDEX_WEIGHTS_TEXT: &str = "false positives 0.1, false negatives 0.9";

/// `w` as text, like [`INDEX_WEIGHTS_TEXT`].
pub fn weights_text(w: LshWeights) -> String {
    format!("false positives {}, false negatives {}", w.false_positive, w.false_negative)
}

/// `w` as the `weights` field of `--json` output.
pub fn weights_json(w: LshWeights) -> serde_json::Value {
    json!({"false_positive": w.false_positive, "false_negative": w.false_negative})
}

#[derive(Args, Debug, Clone)]
pub struct BoundsArgs {
    /// Slots per signature (permutations or bins).
    #[arg(long, default_value_t = DEFAULT_SLOTS)]
    pub k: u32,
    /// Bits kept per value (32 or 64: exact minima; fewer: b-bit correction applies).
    #[arg(long, default_value_t = 32)]
    pub bits: u8,
    /// The similarity threshold of LSH queries.
    #[arg(long, default_value_t = 0.8)]
    pub threshold: f64,
    /// LSH bands (default: optimal for k and the threshold).
    #[arg(long, requires = "rows")]
    pub bands: Option<u32>,
    /// LSH rows per band.
    #[arg(long, requires = "bands")]
    pub rows: Option<u32>,
    /// Confidence level of the intervals.
    #[arg(long, default_value_t = DEFAULT_LEVEL)]
    pub level: f64,
}

pub fn bounds(args: &BoundsArgs, json_out: bool) -> Result<(), CliError> {
    check_level(args.level)?;
    // The library's slot rule (1..=MAX_SLOTS), before any search over bandings.
    SketchParams::minhash(args.k, 32, DEFAULT_SEED)?;
    if args.bits == 0 || args.bits > 64 {
        return Err(CliError::Usage(format!("--bits {} is not in 1..=64", args.bits)));
    }
    let model = if args.bits >= 32 { CollisionModel::Exact } else { CollisionModel::Bits(args.bits) };
    let (params, chosen) = match (args.bands, args.rows) {
        (Some(b), Some(r)) => {
            if u64::from(b) * u64::from(r) > u64::from(args.k) || b == 0 || r == 0 {
                return Err(CliError::Usage(format!(
                    "bands x rows = {b} x {r} must be at least 1 and at most k = {}",
                    args.k
                )));
            }
            (LshParams { bands: b, rows: r }, false)
        }
        _ => (optimal_lsh_params(args.k, args.threshold, INDEX_LSH_WEIGHTS, model)?.params, true),
    };
    let weights = if chosen { format!(" (weights {INDEX_WEIGHTS_TEXT})") } else { String::new() };
    let fp = false_positive_area(args.threshold, params, model)?;
    let fneg = false_negative_area(args.threshold, params, model)?;
    let mut grid: Vec<f64> = (1..=10).map(|i| f64::from(i) / 10.0).collect();
    grid.push(args.threshold);
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    // Expected interval of the estimate at similarity j: the Clopper-Pearson interval of the
    // expected number of matching slots (the model's slot agreement), mapped back through the
    // b-bit correction, c being the agreement of unrelated sets (0 with 32 bits or more).
    let c = model.row_match(0.0);
    let k = f64::from(args.k);
    let interval = |j: f64| {
        let p = model.row_match(j);
        let (lo, hi) = clopper_pearson(p * k, k, args.level);
        let fix = |x: f64| ((x - c) / (1.0 - c)).clamp(0.0, 1.0);
        (fix(lo), fix(hi))
    };
    if json_out {
        for s in &grid {
            let (lo, hi) = interval(*s);
            let mut v = json!({"similarity": s, "candidate_probability": candidate_probability_with(*s, params, model),
                       "interval_lower": lo, "interval_upper": hi, "lower": lo, "upper": hi, "level": args.level,
                       "bands": params.bands, "rows": params.rows,
                       "k": args.k, "bits": args.bits, "threshold": args.threshold,
                       "false_positive_area": fp, "false_negative_area": fneg});
            if let (true, Some(o)) = (chosen, v.as_object_mut()) {
                o.insert("weights".into(), weights_json(INDEX_LSH_WEIGHTS));
            }
            outln!("{v}")?;
        }
        return Ok(());
    }
    outln!(
        "LSH {} bands x {} rows{}{weights} for threshold {} (k = {}, {} bits): false-positive area {:.5}, false-negative area {:.5}",
        params.bands,
        params.rows,
        if chosen { " (optimal)" } else { "" },
        args.threshold,
        args.k,
        args.bits,
        fp,
        fneg
    )?;
    let rows = grid
        .iter()
        .map(|&s| {
            let (lo, hi) = interval(s);
            vec![
                format!("{s:.2}"),
                format!("{:.4}", candidate_probability_with(s, params, model)),
                format!("[{lo:.3}, {hi:.3}]"),
                format!("{:.3}", (hi - lo) / 2.0),
            ]
        })
        .collect();
    let level = format!("{:.0}% interval of the estimate", args.level * 100.0);
    outln!("{}", table(&["similarity", "P(candidate)", &level, "half-width"], rows))
}
