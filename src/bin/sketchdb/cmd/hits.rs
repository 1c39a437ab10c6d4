//! How query answers are printed: a hit as a JSON object, an answer as a table (or JSON lines).

use serde_json::{Value, json};
use sketchdb::{Hit, QueryResult};

use crate::error::CliError;
use crate::output::{outln, table};

pub(super) fn hit_json(label: &str, h: &Hit, plan: &str, measure: &str) -> Value {
    let key = h
        .key_str()
        .map_or_else(|| json!({"hex": h.key.iter().map(|b| format!("{b:02x}")).collect::<String>()}), |k| json!(k));
    let mut v = json!({"query": label, "key": key, "measure": measure, "estimate": h.estimate.value,
                       "lower": h.estimate.lower, "upper": h.estimate.upper, "level": h.estimate.level,
                       "row_id": h.row_id, "plan": plan});
    if let Some(o) = v.as_object_mut() {
        if let Some(d) = h.distance {
            o.insert("distance".into(), json!(d));
        }
        if let Some(j) = h.exact {
            o.insert("exact_jaccard".into(), json!(j));
        }
        if measure == "cosine" {
            o.insert("cosine".into(), json!(h.estimate.value));
        }
    }
    v
}

pub(super) fn print_result(label: &str, r: &QueryResult, measure: &str, json_out: bool) -> Result<(), CliError> {
    let plan = r.plan.to_string();
    if json_out {
        for h in &r.hits {
            outln!("{}", hit_json(label, h, &plan, measure))?;
        }
        return Ok(());
    }
    let hamming = measure == "hamming_distance";
    let with_distance = !hamming && r.hits.iter().any(|h| h.distance.is_some());
    let rows = r
        .hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut row = vec![
                (i + 1).to_string(),
                h.key_str().map_or_else(|| format!("{:?}", h.key), str::to_string),
                if hamming { format!("{}", h.estimate.value) } else { format!("{:.4}", h.estimate.value) },
            ];
            if !hamming {
                row.push(format!("[{:.4}, {:.4}]", h.estimate.lower, h.estimate.upper));
            }
            if with_distance {
                row.push(h.distance.map_or_else(String::new, |d| d.to_string()));
            }
            row
        })
        .collect();
    let mut header = vec!["#", "key", if hamming { "distance" } else { measure }];
    if !hamming {
        header.push("interval");
    }
    if with_distance {
        header.push("distance");
    }
    outln!("{}", table(&header, rows))?;
    outln!("{} results for {label} via {} in {:.3} ms", r.hits.len(), plan, r.analyze.elapsed.as_secs_f64() * 1e3)
}
