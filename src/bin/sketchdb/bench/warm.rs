//! The `warm` workload: single queries over an existing database (one `bench lsh --dir` or
//! `bench hamming-query --dir` left behind), one thread, after the database is opened: the
//! first query after the open (cold), then every query `passes` times (the first pass warms,
//! the others are timed), with each timed query split by its own EXPLAIN ANALYZE time into
//! execution and the rest (snapshot, statistics, plan, result).

use std::path::Path;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;
use sketchdb::{Collection, Database, Query, QueryKind, QueryOptions, SimHash, Sketch, TokenSet};

use super::report::{dataset_name, emit, percentile};
use crate::error::CliError;
use crate::input::read_u64_file;

#[derive(Deserialize)]
struct TokensRecord {
    tokens: Vec<u64>,
}

/// What a workload asks: a threshold of a set-sketch collection, or a Hamming radius.
pub struct WarmArgs<'a> {
    pub db: &'a Path,
    pub collection: &'a str,
    pub queries: &'a Path,
    pub threshold: f64,
    pub radius: u32,
    pub passes: usize,
}

/// The queries: token sets (`.jsonl` with a `tokens` array per line) or u64 fingerprints.
enum Probes {
    Tokens(Vec<Vec<u64>>),
    Fingerprints(Vec<u64>),
}

fn load_probes(path: &Path) -> Result<Probes, CliError> {
    if path.extension().is_some_and(|e| e == "jsonl") {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::io(path, e))?;
        let sets = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str::<TokensRecord>(l)
                    .map(|r| r.tokens)
                    .map_err(|e| CliError::Input(format!("{}:{}: {e}", path.display(), i + 1)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Probes::Tokens(sets))
    } else {
        Ok(Probes::Fingerprints(read_u64_file(path)?))
    }
}

/// This thread's page faults (minor, major) from Linux's `/proc/thread-self/stat`: what a
/// cold query's wall time holds beside its own work; zeros where `/proc` does not say.
#[derive(Clone, Copy, Default)]
struct Faults {
    minor: u64,
    major: u64,
}

impl Faults {
    fn now() -> Faults {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
        // The fields after the command name (which may hold spaces): state is the first,
        // minflt the 8th, majflt the 10th.
        let fields: Vec<u64> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        Faults { minor: fields.get(7).copied().unwrap_or(0), major: fields.get(9).copied().unwrap_or(0) }
    }

    /// The faults between `self` and `later`, as JSON fields with `prefix`.
    fn since(self, later: Faults, prefix: &str, out: &mut serde_json::Map<String, serde_json::Value>) {
        out.insert(format!("{prefix}_minor_faults"), json!(later.minor.saturating_sub(self.minor)));
        out.insert(format!("{prefix}_major_faults"), json!(later.major.saturating_sub(self.major)));
    }
}

/// Medians and 99th percentiles of one timed series, in microseconds.
struct Series {
    total: Vec<f64>,
    execute: Vec<f64>,
    rest: Vec<f64>,
    candidates: u64,
    hits: u64,
}

impl Series {
    fn new() -> Self {
        Series { total: Vec::new(), execute: Vec::new(), rest: Vec::new(), candidates: 0, hits: 0 }
    }

    fn json(mut self) -> serde_json::Value {
        let n = self.total.len().max(1) as f64;
        json!({"queries": self.total.len(), "p50_us": percentile(&mut self.total, 0.5) * 1e6,
               "p99_us": percentile(&mut self.total, 0.99) * 1e6,
               "execute_p50_us": percentile(&mut self.execute, 0.5) * 1e6,
               "txn_stats_plan_p50_us": percentile(&mut self.rest, 0.5) * 1e6,
               "candidates_per_query": self.candidates as f64 / n, "hits_per_query": self.hits as f64 / n})
    }
}

/// Runs `one` over every probe `passes` times, timing every pass after the first.
fn timed<P>(
    probes: &[P],
    passes: usize,
    mut one: impl FnMut(&P) -> Result<(f64, sketchdb::QueryResult), CliError>,
) -> Result<Series, CliError> {
    let mut s = Series::new();
    for pass in 0..passes.max(2) {
        for p in probes {
            let (all, r) = one(p)?;
            if pass > 0 {
                let e = r.analyze.elapsed.as_secs_f64();
                s.total.push(all);
                s.execute.push(e);
                s.rest.push((all - e).max(0.0));
                s.candidates += r.analyze.candidates;
                s.hits += r.hits.len() as u64;
            }
        }
    }
    Ok(s)
}

/// A query's answer and its wall time.
fn ask(coll: &Collection, query: &Query) -> Result<(f64, sketchdb::QueryResult), CliError> {
    let start = Instant::now();
    let r = coll.query(query)?;
    Ok((start.elapsed().as_secs_f64(), r))
}

pub fn warm(a: &WarmArgs<'_>, run: &str) -> Result<(), CliError> {
    let probes = load_probes(a.queries)?;
    let mut cold = serde_json::Map::new();
    let (before, start) = (Faults::now(), Instant::now());
    let db = Database::open(a.db)?;
    let opened = start.elapsed().as_secs_f64();
    let coll = db.collection(a.collection)?;
    let open_s = start.elapsed().as_secs_f64();
    before.since(Faults::now(), "open", &mut cold);
    cold.insert("open_file_s".into(), json!(opened));
    cold.insert("open_collection_s".into(), json!(open_s - opened));
    let params = *coll.params();
    let sketches: Vec<Sketch> = match &probes {
        Probes::Tokens(sets) => sets
            .iter()
            .map(|t| coll.sketcher().sketch(&TokenSet::from_unsorted(t.clone())))
            .collect::<Result<_, _>>()?,
        Probes::Fingerprints(fps) => fps
            .iter()
            .map(|&f| SimHash::from_parts(params, u128::from(f)).map(Sketch::SimHash))
            .collect::<Result<_, _>>()?,
    };
    let Some(first) = sketches.first() else {
        return Err(CliError::Input(format!("{}: no queries", a.queries.display())));
    };
    let kind = match probes {
        Probes::Tokens(_) => QueryKind::Threshold(a.threshold),
        Probes::Fingerprints(_) => QueryKind::Hamming(a.radius),
    };
    let query = |sketch: &Sketch| Query { sketch: sketch.clone(), kind, options: QueryOptions::default() };
    let (before, start) = (Faults::now(), Instant::now());
    let r = coll.query(&query(first))?;
    let first_query_s = start.elapsed().as_secs_f64();
    before.since(Faults::now(), "first_query", &mut cold);
    let execute = r.analyze.elapsed.as_secs_f64();
    cold.insert("first_query_execute_s".into(), json!(execute));
    cold.insert("first_query_rest_s".into(), json!((first_query_s - execute).max(0.0)));
    cold.insert("open_s".into(), json!(open_s));
    cold.insert("first_query_s".into(), json!(first_query_s));
    cold.insert("probe_cache_bytes".into(), json!(db.probe_cache_held()));
    let plan = coll.plan(&query(first))?.plan;
    let config = json!({"collection": a.collection, "kind": format!("{kind:?}"), "params": format!("{params:?}"),
                        "passes": a.passes, "db": a.db.display().to_string()});
    let dataset = dataset_name(a.queries);
    emit(
        run,
        "warm-open",
        &dataset,
        config.clone(),
        serde_json::Value::Object(cold),
        "open, then the first query (cold): wall times and page faults; execute is the query's own EXPLAIN ANALYZE time, the rest its snapshot, statistics and plan",
    )?;
    let stored = timed(&sketches, a.passes, |s| ask(&coll, &query(s)))?;
    emit(
        run,
        "warm-query",
        &dataset,
        config.clone(),
        stored.json(),
        &format!("planner chose {plan}; from the query's signature; passes after the first timed"),
    )?;
    // Stored keys spread over the collection in row order, as many as there are queries.
    let step = (coll.len()? / sketches.len() as u64).max(1) as usize;
    let keys: Vec<Vec<u8>> =
        coll.scan()?.step_by(step).take(sketches.len()).map(|r| r.map(|rec| rec.key)).collect::<Result<_, _>>()?;
    let by_key = timed(&keys, a.passes, |key| {
        let start = Instant::now();
        let r = coll.query_key(key, kind, QueryOptions::default())?;
        Ok((start.elapsed().as_secs_f64(), r))
    })?;
    emit(
        run,
        "warm-query-key",
        &dataset,
        config.clone(),
        by_key.json(),
        &format!("planner chose {plan}; by stored key (record lookup, probe, verify), keys spread over the collection"),
    )?;
    if let Probes::Tokens(sets) = &probes {
        let from_tokens = timed(sets, a.passes, |t| {
            let start = Instant::now();
            let sketch = coll.sketcher().sketch(&TokenSet::from_unsorted(t.clone()))?;
            let r = coll.query(&Query { sketch, kind, options: QueryOptions::default() })?;
            Ok((start.elapsed().as_secs_f64(), r))
        })?;
        emit(
            run,
            "warm-query-e2e",
            &dataset,
            config,
            from_tokens.json(),
            &format!("planner chose {plan}; from tokens (sketch, probe, verify); the rest includes sketching"),
        )?;
    }
    emit(
        run,
        "warm-memory",
        &dataset,
        json!({"db": a.db.display().to_string()}),
        json!({"probe_cache_bytes": db.probe_cache_held(), "probe_cache_budget": db.probe_cache_budget(),
               "anon_huge_page_bytes": anon_huge_page_bytes()}),
        "the probe cache after the passes; anon_huge_page_bytes: the process's anonymous memory backed by transparent huge pages (Linux)",
    )?;
    Ok(())
}

/// The bytes of this process's anonymous memory backed by transparent huge pages
/// (`AnonHugePages` of Linux's `/proc/self/smaps_rollup`): whether the probe cache's slabs
/// got the huge pages they advise; `None` elsewhere.
fn anon_huge_page_bytes() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
