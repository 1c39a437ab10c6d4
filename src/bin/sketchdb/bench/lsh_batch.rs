//! The `lsh-query-batch` workload of `sketchdb bench lsh`: the stored-signature threshold
//! queries asked one by one (each its own read snapshot, `Collection::query`, spread over the
//! pool's threads) and as batches (`Collection::query_many`: one snapshot per batch), on
//! rayon pools of 1, 2, 4, ... threads and of all the machine's cores, and batched with the
//! probes ordered by their first band key (`qps_batched_band_sorted`: whether locality in the
//! band tables pays for computing and sorting the keys). All three must give the same result
//! sets; the recall and precision against the truth of one by one and batched are printed
//! side by side.

use std::collections::HashSet;
use std::time::Instant;

use rayon::prelude::*;
use serde_json::{Value, json};
use sketchdb::{Collection, Query, QueryKind, QueryOptions, QueryResult, Sketch};

use super::report::{emit, ratio};
use crate::error::CliError;

/// How many times the query set is asked in one timed pass (1,000 queries take a few
/// milliseconds: too short to time alone).
const PASSES: usize = 20;

/// The thread counts measured: powers of two up to the machine's cores, and all of them.
fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts: Vec<usize> = (0..).map(|p| 1usize << p).take_while(|&t| t < cores).collect();
    counts.push(cores.max(1));
    counts
}

/// What the benchmark's caller knows of the collection and its queries.
pub struct BatchBench<'a> {
    pub coll: &'a Collection,
    /// The queries' stored signatures, in the queries file's order.
    pub stored: &'a [Sketch],
    /// Each query's true neighbours at the threshold.
    pub truth: Vec<HashSet<String>>,
    pub t: f64,
    pub options: QueryOptions,
}

/// Recall and precision of result sets against the truth.
fn scores(got: &[Vec<String>], truth: &[HashSet<String>]) -> (f64, f64) {
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    for (g, want) in got.iter().zip(truth) {
        let g: HashSet<&String> = g.iter().collect();
        let hit = g.iter().filter(|k| want.contains(k.as_str())).count();
        tp += hit;
        fp += g.len() - hit;
        fneg += want.len() - hit;
    }
    (ratio(tp, tp + fneg), ratio(tp, tp + fp))
}

fn keys(r: QueryResult) -> Vec<String> {
    r.hits.into_iter().map(|h| String::from_utf8_lossy(&h.key).into_owned()).collect()
}

/// Queries per second of `ask` (every query, [`PASSES`] times, after one warm-up pass) and
/// the result sets of its last pass.
fn timed(n: usize, ask: impl Fn() -> Result<Vec<Vec<String>>, CliError>) -> Result<(f64, Vec<Vec<String>>), CliError> {
    let mut got = ask()?;
    let start = Instant::now();
    for _ in 0..PASSES {
        got = ask()?;
    }
    Ok(((n * PASSES) as f64 / start.elapsed().as_secs_f64().max(1e-12), got))
}

impl BatchBench<'_> {
    /// `query_many` of `queries` ordered by their first LSH band key (the keys computed and
    /// sorted inside the timing), answers in the queries' order.
    fn sorted_batch(&self, queries: &[Query]) -> Result<Vec<Vec<String>>, CliError> {
        let Some(scheme) = self.coll.lsh_scheme()? else { return Err(CliError::Runtime("no LSH index".into())) };
        let mut order: Vec<(u64, usize)> = queries
            .iter()
            .enumerate()
            .map(|(i, q)| Ok((scheme.sketch_keys(&q.sketch)?.first().copied().unwrap_or(0), i)))
            .collect::<Result<_, sketchdb::IndexError>>()
            .map_err(sketchdb::Error::from)?;
        order.sort_unstable();
        let sorted: Vec<Query> = order.iter().map(|&(_, i)| queries[i].clone()).collect();
        let mut out = vec![Vec::new(); queries.len()];
        for ((_, i), r) in order.iter().zip(self.coll.query_many(&sorted)?) {
            out[*i] = keys(r.map_err(|e| CliError::Runtime(e.to_string()))?);
        }
        Ok(out)
    }

    /// One `lsh-query-batch` line per thread count.
    pub fn run(&self, run: &str, dataset: &str, config: &Value, notes: &str) -> Result<(), CliError> {
        let queries: Vec<Query> = self
            .stored
            .iter()
            .map(|s| Query { sketch: s.clone(), kind: QueryKind::Threshold(self.t), options: self.options })
            .collect();
        let n = queries.len();
        for threads in thread_counts() {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| CliError::Runtime(format!("cannot start {threads} threads: {e}")))?;
            let (single_qps, single) = pool.install(|| {
                timed(n, || {
                    queries.par_iter().map(|q| Ok(keys(self.coll.query(q)?))).collect::<Result<Vec<_>, CliError>>()
                })
            })?;
            let (batch_qps, batched) = pool.install(|| {
                timed(n, || {
                    let answers = self.coll.query_many(&queries)?;
                    answers
                        .into_iter()
                        .map(|r| r.map(keys).map_err(|e| CliError::Runtime(e.to_string())))
                        .collect::<Result<Vec<_>, CliError>>()
                })
            })?;
            // The same batch with its probes in the order of their first band key (answers
            // put back in the queries' order): does locality in the band tables help?
            let (sorted_qps, sorted) = pool.install(|| timed(n, || self.sorted_batch(&queries)))?;
            if sorted != batched {
                return Err(CliError::Runtime("lsh-query-batch: the band-key-sorted batch answered otherwise".into()));
            }
            if single != batched {
                let at = single.iter().zip(&batched).position(|(a, b)| a != b).unwrap_or(0);
                return Err(CliError::Runtime(format!(
                    "lsh-query-batch: query {at} answered {:?} one by one but {:?} in a batch",
                    single[at], batched[at]
                )));
            }
            let (recall, precision) = scores(&single, &self.truth);
            let (batch_recall, batch_precision) = scores(&batched, &self.truth);
            let mut config = config.clone();
            config["threads"] = json!(threads);
            config["queries_per_pass"] = json!(n);
            config["passes"] = json!(PASSES);
            emit(
                run,
                "lsh-query-batch",
                dataset,
                config,
                json!({"qps_single_probe": single_qps, "qps_batched": batch_qps, "speedup": batch_qps / single_qps,
                       "qps_batched_band_sorted": sorted_qps,
                       "recall_single_probe": recall, "precision_single_probe": precision,
                       "recall_batched": batch_recall, "precision_batched": batch_precision,
                       "equal_result_sets": true}),
                &format!(
                    "{notes}; stored signatures; one by one = Collection::query per probe (a read snapshot each), \
                     batched = Collection::query_many (one snapshot), both on a pool of {threads} thread(s)"
                ),
            )?;
        }
        Ok(())
    }
}
