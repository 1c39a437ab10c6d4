//! Batched queries: many probes answered over one read snapshot, in parallel on rayon.
//!
//! A batch reads the collection state, the index definition, its probe cache and the cost
//! model once, then runs every probe against that one commit on the calling rayon pool. A
//! probe that fails (a sketch of other parameters, an unknown key, a bad question) fails
//! alone, as a [`ProbeError`] at its position; the batch's own `Err` is for the snapshot.

use rayon::prelude::*;

use super::collection::Collection;
use super::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::planner::cost::CostModel;
use crate::planner::error::QueryError;
use crate::planner::exact;
use crate::planner::query::{Query, QueryKind, QueryOptions};
use crate::planner::run::{self, Prepared, QueryResult};
use crate::sketch::sketcher::Sketch;
use crate::sketch::tokens::TokenSet;
use crate::storage::catalog::CollectionInfo;
use crate::storage::reader::ReadSnapshot;

/// The probe of one query in a batch ([`Collection::query_probes`]). Each is answered as its
/// single-probe call answers it: [`Probe::Sketch`] as [`Collection::query`],
/// [`Probe::Key`] as [`Collection::query_key`], [`Probe::Text`] as
/// [`Collection::query_text`] and [`Probe::Tokens`] as [`Collection::query_tokens`] (so
/// keys, texts and tokens are re-ranked by exact Jaccard on a collection that keeps exact
/// shingles, and a bare sketch is scored by estimate).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Probe {
    /// A sketch of the collection's parameters.
    Sketch(Sketch),
    /// The stored record of a key.
    Key(Vec<u8>),
    /// Text, tokenized and sketched as the collection's records are.
    Text(String),
    /// A token multiset (hashed tokens, repeats allowed).
    Tokens(Vec<u64>),
}

/// One probe of a batch that failed: its position in the batch and why. The other probes'
/// answers are unaffected.
#[derive(Debug)]
#[non_exhaustive]
pub struct ProbeError {
    /// The probe's index in the batch (0-based).
    pub position: usize,
    /// What failed.
    pub error: Error,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "probe {}: {}", self.position, self.error)
    }
}

impl std::error::Error for ProbeError {
    /// The cause of [`ProbeError::error`] (its message is already part of this one's).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// The answers of a batch, one per probe in the batch's order.
pub type BatchAnswers = Vec<std::result::Result<QueryResult, ProbeError>>;

/// What every probe of a batch shares: the snapshot, the collection and what the planner
/// read from the snapshot once.
struct Shared<'a> {
    snap: &'a ReadSnapshot,
    info: &'a CollectionInfo,
    costs: CostModel,
    prep: std::sync::Arc<Prepared>,
}

impl Collection {
    /// Runs every query of `queries` over one read snapshot taken now, in parallel on the
    /// current rayon pool (to bound the threads, call it inside
    /// [`rayon::ThreadPool::install`]). Every answer comes from the same commit, whatever
    /// writers commit meanwhile, and equals what [`Collection::query`] returns for that query
    /// at that commit. Answers come back in the order of `queries`; a query that fails is a
    /// [`ProbeError`] at its position. The outer error is for the snapshot (the file, a
    /// dropped collection), when no query can run.
    ///
    /// ```
    /// use sketchdb::{CollectionConfig, Database, Query, QueryKind, QueryOptions, SketchParams};
    ///
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Database::create(dir.path().join("m.sketchdb"))?;
    /// let docs = db.create_collection("docs", CollectionConfig::new(SketchParams::minhash(64, 32, 1)?))?;
    /// docs.insert_text("a", "to be or not to be that is the question")?;
    /// let probe = docs.sketcher().sketch_text(&docs.config().tokenizer, "to be or not to be")?;
    /// let queries: Vec<Query> = [0.2, 0.99]
    ///     .iter()
    ///     .map(|&t| Query { sketch: probe.clone(), kind: QueryKind::Threshold(t), options: QueryOptions::default() })
    ///     .collect();
    /// let answers = docs.query_many(&queries)?;
    /// assert_eq!(answers[0].as_ref().unwrap().hits.len(), 1);
    /// assert!(answers[1].as_ref().unwrap().hits.is_empty());
    /// # Ok::<(), sketchdb::Error>(())
    /// ```
    pub fn query_many(&self, queries: &[Query]) -> Result<BatchAnswers> {
        self.query_many_in(&self.snapshot()?, queries)
    }

    /// [`Collection::query_many`] over `snapshot`, a snapshot of this collection taken
    /// earlier (several batches can then read one commit). A snapshot of another collection
    /// or database is [`QueryError::ForeignSnapshot`].
    pub fn query_many_in(&self, snapshot: &Snapshot, queries: &[Query]) -> Result<BatchAnswers> {
        let shared = self.shared(snapshot)?;
        Ok(par_answers(queries, |q| run::run_prepared(shared.snap, shared.info, q, &shared.costs, &shared.prep)))
    }

    /// Asks the question `kind` of every probe of `probes` over one read snapshot taken now,
    /// in parallel on the current rayon pool, as [`Collection::query_many`] does (one commit,
    /// answers in order, a failed probe a [`ProbeError`] at its position). Texts and tokens
    /// are sketched on the pool too. See [`Probe`] for how each is answered.
    pub fn query_probes(&self, probes: &[Probe], kind: QueryKind, options: QueryOptions) -> Result<BatchAnswers> {
        self.query_probes_in(&self.snapshot()?, probes, kind, options)
    }

    /// [`Collection::query_probes`] over `snapshot`, a snapshot of this collection taken
    /// earlier.
    pub fn query_probes_in(
        &self,
        snapshot: &Snapshot,
        probes: &[Probe],
        kind: QueryKind,
        options: QueryOptions,
    ) -> Result<BatchAnswers> {
        let shared = self.shared(snapshot)?;
        Ok(par_answers(probes, |p| self.answer(&shared, p, kind, options)))
    }

    /// What a batch over `snapshot` shares, read once.
    fn shared<'a>(&'a self, snapshot: &'a Snapshot) -> Result<Shared<'a>> {
        let (snap, info) = snapshot.parts();
        if snap.store_id() != self.store_id() || info.def.id != self.info().def.id {
            return Err(QueryError::ForeignSnapshot {
                collection: self.name().to_string(),
                snapshot: info.def.name.clone(),
            }
            .into());
        }
        Ok(Shared { snap, info, costs: self.costs(), prep: run::prepare(snap, info)? })
    }

    /// One probe's answer, as its single-probe call gives it.
    fn answer(
        &self,
        s: &Shared<'_>,
        probe: &Probe,
        kind: QueryKind,
        options: QueryOptions,
    ) -> std::result::Result<QueryResult, Error> {
        let scored = |tokens: Vec<u64>| -> std::result::Result<QueryResult, Error> {
            let sketch = self.sketcher().sketch_multiset(&tokens)?;
            let set = TokenSet::from_unsorted(tokens);
            let query = Query { sketch, kind, options };
            Ok(exact::run_scored(s.snap, s.info, &query, Some(set.as_slice()), &s.costs, &s.prep)?)
        };
        match probe {
            Probe::Sketch(sketch) => {
                let query = Query { sketch: sketch.clone(), kind, options };
                Ok(run::run_prepared(s.snap, s.info, &query, &s.costs, &s.prep)?)
            }
            Probe::Key(key) => Ok(exact::run_key(s.snap, s.info, key, kind, options, &s.costs, &s.prep)?),
            Probe::Text(text) => scored(self.config().tokenizer.tokens(text)),
            Probe::Tokens(tokens) => scored(tokens.clone()),
        }
    }
}

/// `f` of every item on the current rayon pool, in order, each failure tagged with its
/// position.
fn par_answers<T: Sync, E: Into<Error>>(
    items: &[T],
    f: impl Fn(&T) -> std::result::Result<QueryResult, E> + Sync,
) -> BatchAnswers {
    items
        .par_iter()
        .enumerate()
        .map(|(position, item)| f(item).map_err(|e| ProbeError { position, error: e.into() }))
        .collect()
}
