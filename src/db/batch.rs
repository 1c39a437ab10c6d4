//! Batches: many writes to one collection committed in one transaction, all or nothing.

use crate::sketch::sketcher::Sketch;
use crate::sketch::tokens::TokenSet;
use crate::storage::rules::WriteOp;

/// One write: its kind, where its key ends in the batch's key bytes, and its sketch (none
/// for a delete).
#[derive(Clone, Debug)]
enum BatchOp {
    Insert(usize, Sketch, Option<u128>),
    Upsert(usize, Sketch, Option<u128>),
    Delete(usize),
}

/// Writes to apply together with [`crate::Collection::apply`]: either every one of them
/// commits or, if any fails (a duplicate key, a bad key, an incompatible sketch), none does.
///
/// Writes apply in the order they were added; an insert after a delete of the same key in
/// one batch succeeds.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Every write's key, one after another (one allocation for the batch, not one per key).
    keys: Vec<u8>,
    ops: Vec<BatchOp>,
    /// Exact shingle sets given with inserts and upsert: (op index, where the set ends in
    /// `hashes`), in op order.
    sets: Vec<(usize, usize)>,
    hashes: Vec<u64>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for `n` writes.
    pub fn with_capacity(n: usize) -> Self {
        Batch { keys: Vec::with_capacity(n * 16), ops: Vec::with_capacity(n), ..Batch::default() }
    }

    /// Adds an insert (the key must be absent when it applies).
    pub fn insert(&mut self, key: impl AsRef<[u8]>, sketch: Sketch) -> &mut Self {
        let end = self.push_key(key.as_ref());
        self.ops.push(BatchOp::Insert(end, sketch, None));
        self
    }

    /// Adds an insert that also stores `content_hash`, a hash of the source content the
    /// sketch was made from ([`crate::Snapshot::stored_hash`] reads it back), so that a later
    /// read of the source can tell a changed record from an unchanged one.
    pub fn insert_with_hash(&mut self, key: impl AsRef<[u8]>, sketch: Sketch, content_hash: u128) -> &mut Self {
        let end = self.push_key(key.as_ref());
        self.ops.push(BatchOp::Insert(end, sketch, Some(content_hash)));
        self
    }

    /// Adds an upsert that also stores `content_hash` (see [`Batch::insert_with_hash`]).
    pub fn upsert_with_hash(&mut self, key: impl AsRef<[u8]>, sketch: Sketch, content_hash: u128) -> &mut Self {
        let end = self.push_key(key.as_ref());
        self.ops.push(BatchOp::Upsert(end, sketch, Some(content_hash)));
        self
    }

    /// Adds an upsert.
    pub fn upsert(&mut self, key: impl AsRef<[u8]>, sketch: Sketch) -> &mut Self {
        let end = self.push_key(key.as_ref());
        self.ops.push(BatchOp::Upsert(end, sketch, None));
        self
    }

    /// Adds an insert with the record's exact shingle set, for a collection that keeps them
    /// ([`crate::CollectionConfig::exact_shingles`]; others ignore the set). `sketch` must be
    /// the sketch of `shingles`.
    pub fn insert_with_shingles(&mut self, key: impl AsRef<[u8]>, sketch: Sketch, shingles: &TokenSet) -> &mut Self {
        self.insert(key, sketch);
        self.push_set(shingles)
    }

    /// Adds an upsert with the record's exact shingle set (see [`Batch::insert_with_shingles`]).
    pub fn upsert_with_shingles(&mut self, key: impl AsRef<[u8]>, sketch: Sketch, shingles: &TokenSet) -> &mut Self {
        self.upsert(key, sketch);
        self.push_set(shingles)
    }

    /// Adds an insert with both the content hash ([`Batch::insert_with_hash`]) and the exact
    /// shingle set ([`Batch::insert_with_shingles`]).
    pub fn insert_with_hash_and_shingles(
        &mut self,
        key: impl AsRef<[u8]>,
        sketch: Sketch,
        content_hash: u128,
        shingles: &TokenSet,
    ) -> &mut Self {
        self.insert_with_hash(key, sketch, content_hash);
        self.push_set(shingles)
    }

    /// Adds an upsert with both the content hash and the exact shingle set.
    pub fn upsert_with_hash_and_shingles(
        &mut self,
        key: impl AsRef<[u8]>,
        sketch: Sketch,
        content_hash: u128,
        shingles: &TokenSet,
    ) -> &mut Self {
        self.upsert_with_hash(key, sketch, content_hash);
        self.push_set(shingles)
    }

    fn push_set(&mut self, shingles: &TokenSet) -> &mut Self {
        self.hashes.extend_from_slice(shingles.as_slice());
        self.sets.push((self.ops.len() - 1, self.hashes.len()));
        self
    }

    /// Each op's shingle set, if it was given one.
    pub(crate) fn shingles(&self) -> Vec<Option<&[u64]>> {
        let mut out = vec![None; self.ops.len()];
        let mut start = 0;
        for &(op, end) in &self.sets {
            out[op] = Some(&self.hashes[start..end]);
            start = end;
        }
        out
    }

    /// Adds a delete (of a key that may be absent).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        let end = self.push_key(key.as_ref());
        self.ops.push(BatchOp::Delete(end));
        self
    }

    /// Writes in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Removes every write, keeping the allocation.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.ops.clear();
        self.sets.clear();
        self.hashes.clear();
    }

    /// Appends a key's bytes; returns where they end.
    fn push_key(&mut self, key: &[u8]) -> usize {
        self.keys.extend_from_slice(key);
        self.keys.len()
    }

    pub(crate) fn ops(&self) -> impl Iterator<Item = WriteOp<'_>> {
        let mut start = 0;
        self.ops.iter().map(move |op| {
            let end = match op {
                BatchOp::Insert(end, ..) | BatchOp::Upsert(end, ..) | BatchOp::Delete(end) => *end,
            };
            let key = &self.keys[start..end];
            start = end;
            match op {
                BatchOp::Insert(_, s, h) => WriteOp::Insert(key, s, *h),
                BatchOp::Upsert(_, s, h) => WriteOp::Upsert(key, s, *h),
                BatchOp::Delete(_) => WriteOp::Delete(key),
            }
        })
    }
}
