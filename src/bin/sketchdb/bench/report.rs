//! The shared result-line schema of `sketchdb bench` (../shared/bench): one JSON line per
//! measurement with the run, the machine and a timestamp, and the statistics the lines report.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The machine block of a result line.
fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()))
        .unwrap_or(-1.0);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    json!({"cpu": cpu, "cores": cores, "loadavg1": load})
}

/// RFC 3339 UTC timestamp from the system clock (civil-from-days, Howard Hinnant's algorithm).
fn timestamp() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}+00:00", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Prints one result line.
pub fn emit(
    run_id: &str,
    workload: &str,
    dataset: &str,
    config: Value,
    metrics: Value,
    notes: &str,
) -> Result<(), crate::error::CliError> {
    let line = json!({
        "ts": timestamp(),
        "run_id": run_id,
        "system": "sketchdb",
        "version": env!("CARGO_PKG_VERSION"),
        "workload": workload,
        "dataset": dataset,
        "config": config,
        "metrics": metrics,
        "machine": machine(),
        "notes": notes,
    });
    crate::output::outln!("{line}")
}

/// A run id unique enough to group the lines of one invocation.
pub fn run_id() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}-{:x}", nanos, std::process::id())
}

/// `sets-100k.jsonl` -> `sets-100k`.
pub fn dataset_name(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "unknown".into())
}

pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Recall or precision: `hits / of`, micro-averaged; 1 when there is nothing to find (or
/// nothing was returned), so an empty truth scores the same in every workload.
pub fn ratio(hits: usize, of: usize) -> f64 {
    if of == 0 { 1.0 } else { hits as f64 / of as f64 }
}
