//! `recipes`: the named text recipes a collection can be created with (`create --recipe`),
//! each with its steps, the signature a compatibility preset fixes, and what it reproduces.

use serde_json::{Map, Value, json};
use sketchdb::Recipe;
use sketchdb::recipes::Compatibility;

use crate::error::CliError;
use crate::output::{outln, table};

fn compatibility_text(c: Compatibility) -> String {
    match c {
        Compatibility::Native => "sketchdb's own".to_string(),
        Compatibility::Exact { reference } => format!("exact: {reference}"),
        Compatibility::Approximate { reference } => format!("approximate: {reference}"),
        other => format!("{other:?}"),
    }
}

/// Prints every preset (or the one named) with its steps: a table, or one JSON object per
/// preset with `--json`.
pub fn recipes(name: Option<&str>, json_out: bool) -> Result<(), CliError> {
    let recipes = match name {
        Some(n) => vec![Recipe::preset(n)?],
        None => Recipe::presets(),
    };
    let default = Recipe::presets()[0];
    if json_out {
        for r in recipes {
            let steps: Map<String, Value> = r.steps().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            outln!(
                "{}",
                json!({"recipe": r.name(), "default": r == default, "family": r.family().name(),
                       "compatibility": compatibility_text(r.compatibility()), "steps": steps})
            )?;
        }
        return Ok(());
    }
    let mut rows = Vec::new();
    for r in recipes {
        let title = if r == default { format!("{} (default)", r.name()) } else { r.name().to_string() };
        rows.push(vec![title, "reproduces".to_string(), compatibility_text(r.compatibility())]);
        for (step, rule) in r.steps() {
            rows.push(vec![String::new(), step.to_string(), rule]);
        }
    }
    outln!("{}", table(&["recipe", "step", "rule"], rows))
}
