//! Batches: many writes to one collection committed in one transaction, all or nothing.

use crate::sketch::sketch::Sketch;
use crate::storage::writer::WriteOp;

#[derive(Clone, Debug)]
enum BatchOp {
    Insert(Vec<u8>, Sketch),
    Upsert(Vec<u8>, Sketch),
    Delete(Vec<u8>),
}

/// Writes to apply together with [`crate::Collection::apply`]: either every one of them
/// commits or, if any fails (a duplicate key, a bad key, an incompatible sketch), none does.
///
/// Writes apply in the order they were added; an insert after a delete of the same key in
/// one batch succeeds.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    ops: Vec<BatchOp>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for `n` writes.
    pub fn with_capacity(n: usize) -> Self {
        Batch { ops: Vec::with_capacity(n) }
    }

    /// Adds an insert (the key must be absent when it applies).
    pub fn insert(&mut self, key: impl AsRef<[u8]>, sketch: Sketch) -> &mut Self {
        self.ops.push(BatchOp::Insert(key.as_ref().to_vec(), sketch));
        self
    }

    /// Adds an upsert.
    pub fn upsert(&mut self, key: impl AsRef<[u8]>, sketch: Sketch) -> &mut Self {
        self.ops.push(BatchOp::Upsert(key.as_ref().to_vec(), sketch));
        self
    }

    /// Adds a delete (of a key that may be absent).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.ops.push(BatchOp::Delete(key.as_ref().to_vec()));
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
        self.ops.clear();
    }

    pub(crate) fn ops(&self) -> impl Iterator<Item = WriteOp<'_>> {
        self.ops.iter().map(|op| match op {
            BatchOp::Insert(k, s) => WriteOp::Insert(k, s),
            BatchOp::Upsert(k, s) => WriteOp::Upsert(k, s),
            BatchOp::Delete(k) => WriteOp::Delete(k),
        })
    }
}
