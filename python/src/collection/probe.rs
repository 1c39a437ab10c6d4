//! What a collection call is about before it is sketched: a query's probe or a record's
//! content, the keyword arguments that name it, and the three things done with one (sketch it,
//! stage it as a record, ask a question with it).
//!
//! On a collection that keeps exact shingles (`exact_shingles=True`), a record written from
//! text or tokens is staged with its distinct token set, and a question asked from text,
//! tokens or a stored key is re-ranked by exact Jaccard (`Hit.exact`); a bare sketch can be
//! neither written there nor scored exactly.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sketchdb::{
    Batch, Collection, Explain, Query, QueryKind, QueryOptions, QueryResult, Sketch, StorageError, TokenSet,
};

use crate::convert;
use crate::sketches;

/// A query's probe or a record's content, before it is sketched.
pub(crate) enum Probe {
    Text(String),
    Tokens(Vec<u64>),
    Key(convert::KeyBuf),
    Sketch(Sketch),
}

/// A record ready for a batch: its sketch and, on a collection that keeps exact shingles,
/// its distinct token set.
pub(crate) struct Staged {
    sketch: Sketch,
    set: Option<TokenSet>,
}

impl Staged {
    /// The record's sketch.
    pub(crate) fn sketch(&self) -> &Sketch {
        &self.sketch
    }

    /// The record of `tokens` (hashed, repeats allowed), as [`Probe::stage`] stages
    /// `Probe::Tokens`: its sketch, and its distinct set where `coll` keeps shingles.
    pub(crate) fn of_tokens(coll: &Collection, tokens: &[u64]) -> sketchdb::Result<Staged> {
        let sketch = coll.sketcher().sketch_multiset(tokens)?;
        let set = coll.config().exact_shingles.then(|| TokenSet::from_unsorted(tokens.to_vec()));
        Ok(Staged { sketch, set })
    }

    /// [`Staged::of_tokens`] of tokens the caller owns (the set, when kept, takes them).
    pub(crate) fn of_owned_tokens(coll: &Collection, tokens: Vec<u64>) -> sketchdb::Result<Staged> {
        let sketch = coll.sketcher().sketch_multiset(&tokens)?;
        Ok(Staged { sketch, set: coll.config().exact_shingles.then(|| TokenSet::from_unsorted(tokens)) })
    }

    /// Adds the record to `batch` as an insert (or an upsert) of `key`.
    pub(crate) fn add_to(self, batch: &mut Batch, key: &[u8], upsert: bool) {
        let Staged { sketch, set } = self;
        match (set, upsert) {
            (Some(set), false) => batch.insert_with_shingles(key, sketch, &set),
            (Some(set), true) => batch.upsert_with_shingles(key, sketch, &set),
            (None, false) => batch.insert(key, sketch),
            (None, true) => batch.upsert(key, sketch),
        };
    }
}

impl Probe {
    /// The library's probe: answered by [`Collection::query_probes`] as [`Probe::run`]
    /// answers this one.
    pub(crate) fn into_core(self) -> sketchdb::Probe {
        match self {
            Probe::Text(t) => sketchdb::Probe::Text(t),
            Probe::Tokens(t) => sketchdb::Probe::Tokens(t),
            Probe::Key(k) => sketchdb::Probe::Key(k.into_vec()),
            Probe::Sketch(s) => sketchdb::Probe::Sketch(s),
        }
    }

    /// The probe's sketch under `coll`'s parameters and tokenizer.
    pub(crate) fn sketch(self, coll: &Collection) -> sketchdb::Result<Sketch> {
        match self {
            Probe::Text(t) => Ok(coll.sketcher().sketch_text(&coll.config().tokenizer, &t)?),
            Probe::Tokens(t) => Ok(coll.sketcher().sketch_multiset(&t)?),
            Probe::Key(k) => coll.sketch_of(k.as_ref()),
            Probe::Sketch(s) => Ok(s),
        }
    }

    /// The content as a record of `coll` stored under `key`: text and tokens bring their
    /// set where the collection keeps shingles; a bare sketch there is refused
    /// (`StorageError::ShinglesRequired`), before any batch is written.
    pub(crate) fn stage(self, coll: &Collection, key: &[u8]) -> sketchdb::Result<Staged> {
        let keeps = coll.config().exact_shingles;
        let tokens = match self {
            Probe::Text(t) => coll.config().tokenizer.tokens(&t),
            Probe::Tokens(t) => t,
            other => {
                if keeps {
                    return Err(StorageError::ShinglesRequired {
                        collection: coll.name().to_string(),
                        key: format!("{:?}", String::from_utf8_lossy(key)),
                    }
                    .into());
                }
                return Ok(Staged { sketch: other.sketch(coll)?, set: None });
            }
        };
        Staged::of_owned_tokens(coll, tokens)
    }

    /// Runs the question `kind` with this probe. Text, tokens and stored keys are scored
    /// exactly on a collection that keeps shingles; a sketch is always estimated.
    pub(crate) fn run(
        self,
        coll: &Collection,
        kind: QueryKind,
        options: QueryOptions,
    ) -> sketchdb::Result<QueryResult> {
        let exact = coll.config().exact_shingles;
        match self {
            Probe::Key(k) => coll.query_key(k, kind, options),
            Probe::Text(t) if exact => coll.query_text(&t, kind, options),
            Probe::Tokens(t) if exact => coll.query_tokens(&t, kind, options),
            other => coll.query(&Query { sketch: other.sketch(coll)?, kind, options }),
        }
    }

    /// EXPLAIN of [`Probe::run`], whose `scores:` line says how that run scores.
    pub(crate) fn explain(
        self,
        coll: &Collection,
        kind: QueryKind,
        options: QueryOptions,
        analyze: bool,
    ) -> sketchdb::Result<Explain> {
        match self {
            Probe::Key(k) => coll.explain_key(k, kind, options, analyze),
            Probe::Text(t) => coll.explain_tokens(&coll.config().tokenizer.tokens(&t), kind, options, analyze),
            Probe::Tokens(t) => coll.explain_tokens(&t, kind, options, analyze),
            Probe::Sketch(sketch) => coll.explain(&Query { sketch, kind, options }, analyze),
        }
    }
}

/// The probe keyword arguments of the single-probe methods (`text=`, `tokens=`, `key=`,
/// `sketch=`), exactly one of which is given.
pub(crate) struct ProbeArgs<'a, 'py> {
    pub(crate) text: Option<String>,
    pub(crate) tokens: Option<&'a Bound<'py, PyAny>>,
    pub(crate) key: Option<&'a Bound<'py, PyAny>>,
    pub(crate) sketch: Option<&'a Bound<'py, PyAny>>,
}

impl ProbeArgs<'_, '_> {
    /// The probe of exactly one of text, tokens, key, sketch.
    pub(crate) fn probe(self, coll: &Collection) -> PyResult<Probe> {
        let seed = coll.config().tokenizer.seed();
        Ok(match (self.text, self.tokens, self.key, self.sketch) {
            (Some(t), None, None, None) => Probe::Text(t),
            (None, Some(t), None, None) => Probe::Tokens(convert::tokens(t, seed)?),
            (None, None, Some(k), None) => Probe::Key(convert::key_buf(k)?),
            (None, None, None, Some(s)) => Probe::Sketch(sketches::extract(s)?),
            _ => return Err(PyValueError::new_err("give exactly one of text=, tokens=, key=, sketch=")),
        })
    }

    /// A record's content: exactly one of text, tokens, sketch (`key` is the record's own).
    pub(crate) fn content(self, coll: &Collection) -> PyResult<Probe> {
        match self.key {
            None if self.text.is_some() || self.tokens.is_some() || self.sketch.is_some() => self.probe(coll),
            _ => Err(PyValueError::new_err("give exactly one of text=, tokens=, sketch=")),
        }
    }
}
