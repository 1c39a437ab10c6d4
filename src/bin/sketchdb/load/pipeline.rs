//! The parallel step of a load: each chunk read (JSONL lines parsed here first) is hashed,
//! looked up in the collection, and the records to write (new or changed) are tokenized and
//! sketched on the load's pool, results in input order, so what is stored does not depend on
//! the thread count.

use rayon::prelude::*;
use sketchdb::io::{Content, Reject, SourceRecord};
use sketchdb::recipes::Content as Sketchable;
use sketchdb::{Collection, Sketch, Snapshot, TokenSet, Tokenizer};
use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

use super::reader::Items;
use super::rejects::RejectKind;
use crate::error::CliError;

/// One record after the parallel step: its content hash, the hash of its key (for the
/// duplicate check), what the collection stores under its key (row id and content hash), and
/// its sketch or why it cannot be sketched; no sketch for a record stored unchanged.
pub struct Worked {
    pub record: SourceRecord,
    pub hash: u128,
    pub key_hash: u128,
    pub stored: Option<Option<u128>>,
    pub sketch: Option<Result<Sketch, (RejectKind, String)>>,
    /// The record's token set, for a collection that keeps exact shingles (text and tokens).
    pub shingles: Option<TokenSet>,
}

impl Worked {
    /// Whether the collection holds this very content under the record's key.
    pub fn unchanged(&self) -> bool {
        matches!(self.stored, Some(Some(h)) if h == self.hash)
    }
}

/// The thread pool of a load: `threads`, or every core.
pub fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool, CliError> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        b = b.num_threads(n);
    }
    b.build().map_err(|e| CliError::Runtime(format!("cannot start the worker threads: {e}")))
}

/// The content hash of a record, what sync compares: xxh3-128 of the text's UTF-8 bytes as
/// read; of the tokens' little-endian bytes (seed 1); of each term's length (u64 LE) and
/// bytes (seed 2); of the fingerprint's 16 little-endian bytes (seed 3). The seeds keep
/// different kinds of content apart.
pub fn content_hash(content: &Content) -> u128 {
    match content {
        Content::Text(t) => xxh3_128(t.as_bytes()),
        Content::Tokens(t) => {
            let bytes: Vec<u8> = t.iter().flat_map(|v| v.to_le_bytes()).collect();
            xxh3_128_with_seed(&bytes, 1)
        }
        Content::Terms(terms) => {
            let mut bytes = Vec::new();
            for t in terms {
                bytes.extend_from_slice(&(t.len() as u64).to_le_bytes());
                bytes.extend_from_slice(t.as_bytes());
            }
            xxh3_128_with_seed(&bytes, 2)
        }
        Content::Fingerprint(v) => xxh3_128_with_seed(&v.to_le_bytes(), 3),
        _ => xxh3_128_with_seed(format!("{content:?}").as_bytes(), 4),
    }
}

/// The sketch of one record's content under `coll`. Terms are set elements, each hashed as
/// the collection's tokenizer hashes a shingle (xxh3-64 with its token seed).
fn sketch(coll: &Collection, content: &Content) -> Result<Sketch, (RejectKind, String)> {
    let seed = coll.config().tokenizer.seed();
    let result = match content {
        Content::Text(t) => Sketchable::Text(t).sketch(coll),
        Content::Tokens(t) => Sketchable::Tokens(t).sketch(coll),
        Content::Terms(terms) => {
            let tokens: Vec<u64> = terms.iter().map(|t| sketchdb::estimate::token_hash(t.as_bytes(), seed)).collect();
            Sketchable::Tokens(&tokens).sketch(coll)
        }
        Content::Fingerprint(v) => Sketchable::Fingerprint(*v).sketch(coll),
        other => return Err((RejectKind::Other, format!("unsupported content {other:?}"))),
    };
    result.map_err(|e| match e {
        sketchdb::SketchError::EmptySet => {
            (RejectKind::NoTokens, format!("no tokens under the collection's recipe {}", coll.config().recipe().name()))
        }
        e => (RejectKind::Sketch, e.to_string()),
    })
}

/// The sketch and token set of one record for a collection that keeps exact shingles: the
/// sketch is made from the very tokens stored, so the two agree. Fingerprints have no set.
fn sketch_with_set(coll: &Collection, content: &Content) -> (Result<Sketch, (RejectKind, String)>, Option<TokenSet>) {
    let seed = coll.config().tokenizer.seed();
    let tokens = match content {
        Content::Text(t) => coll.config().tokenizer.tokens(t),
        Content::Tokens(t) => t.clone(),
        Content::Terms(terms) => terms.iter().map(|t| sketchdb::estimate::token_hash(t.as_bytes(), seed)).collect(),
        _ => return (sketch(coll, content), None),
    };
    let sketch = coll.sketcher().sketch_multiset(&tokens).map_err(|e| (RejectKind::Sketch, e.to_string()));
    (sketch, Some(TokenSet::from_unsorted(tokens)))
}

/// One item of a chunk after the parallel step, in input order.
pub enum Step {
    /// A record read whole, worked on.
    Record(Worked),
    /// A text without a token under the collection's recipe (not worked on): a reject
    /// once the checks that depend on the records before it pass.
    Tokenless(SourceRecord),
    /// A record the reader rejected.
    Rejected(Reject),
}

/// Whether `rec`'s text has no token under `tokenizer`. A text with a letter or digit is
/// tokenized only when it is sketched.
fn tokenless(tokenizer: &Tokenizer, rec: &SourceRecord) -> bool {
    matches!(&rec.content, Content::Text(t) if !t.chars().any(char::is_alphanumeric) && tokenizer.tokens(t).is_empty())
}

/// The parallel step of a chunk, run on the caller's pool: JSONL lines parsed; every
/// record's content hash, key hash and stored state (read from `snap`), and the sketch of
/// each record that is to be written (not stored unchanged, unless `upsert`), in input order.
/// The serial checks that depend on the records before it (duplicate keys) are the caller's.
pub fn work(coll: &Collection, snap: &Snapshot, upsert: bool, items: Items) -> Result<Vec<Step>, CliError> {
    let tokenizer = coll.config().tokenizer;
    let one = |item: Result<SourceRecord, Reject>| -> Result<Step, CliError> {
        let record = match item {
            Ok(record) => record,
            Err(reject) => return Ok(Step::Rejected(reject)),
        };
        if tokenless(&tokenizer, &record) {
            return Ok(Step::Tokenless(record));
        }
        let hash = content_hash(&record.content);
        let key_hash = xxh3_128(record.key.as_bytes());
        let stored = snap.stored_hash(&record.key)?.map(|(_, h)| h);
        let mut w = Worked { record, hash, key_hash, stored, sketch: None, shingles: None };
        if upsert || !w.unchanged() {
            let (sketch, shingles) = if coll.config().exact_shingles {
                sketch_with_set(coll, &w.record.content)
            } else {
                (sketch(coll, &w.record.content), None)
            };
            (w.sketch, w.shingles) = (Some(sketch), shingles);
        }
        Ok(Step::Record(w))
    };
    match items {
        Items::Parsed(items) => items.into_par_iter().map(one).collect(),
        Items::Raw(lines, parser) => (0..lines.len()).into_par_iter().map(|i| one(parser.parse(&lines, i))).collect(),
    }
}
