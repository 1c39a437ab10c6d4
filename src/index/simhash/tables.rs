//! Persisted SimHash permuted tables: one packed value ([`super::format`]) per (run, table,
//! bucket) in `sketchdb.simhash_buckets`. Writing runs is [`super::write`]'s; [`BucketWriter`]
//! rewrites one run's touched buckets, or appends a new run's buckets through a cursor.

use crate::index::error::IndexError;

use super::adds::TableAdds;
use super::format::{BucketView, Geometry, encode_bucket, encoded_len, split_field};
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::BytesRead;
use crate::storage::index_tables::{Appender, BytesTable};

/// The bucket width for a design chosen at `n_rows`: about 128 rows per bucket, at least
/// [`crate::index::defs::MIN_BUCKET_BITS`] and at most [`crate::index::defs::MAX_BUCKET_BITS`].
pub(crate) fn bucket_bits_for(n_rows: u64) -> u32 {
    let per = (n_rows / 128).max(1);
    let bits = 64 - (per - 1).leading_zeros().min(63);
    bits.clamp(crate::index::defs::MIN_BUCKET_BITS, crate::index::defs::MAX_BUCKET_BITS)
}

/// `(collection id, table field, bucket)`: the field is [`super::runs::table_field`].
pub(crate) use crate::storage::index_tables::BucketKey;
pub(crate) type BucketTable<'t> = BytesTable<'t, BucketKey>;

/// Where rewritten buckets go.
pub(crate) enum Out<'c, 't> {
    /// The table: each touched bucket is read, merged and written back.
    Table(&'c mut BucketTable<'t>),
    /// A cursor at the collection's (empty) key range: buckets are only appended.
    Append(Box<Appender<'c, BucketKey>>),
}

impl Out<'_, '_> {
    /// Finishes the appends (a cursor's inserts are buffered until then).
    pub(crate) fn close(self) -> Result<(), IndexError> {
        match self {
            Out::Table(_) => Ok(()),
            Out::Append(cursor) => Ok(cursor.close("append simhash buckets")?),
        }
    }
}

/// Rewrites the touched buckets of one table at a time; its vectors are reused across
/// buckets and tables.
pub(crate) struct BucketWriter<'a> {
    info: &'a CollectionInfo,
    /// An encoded bucket, for the appending cursor.
    encoded: Vec<u8>,
    entries: Vec<(u128, u64)>,
    fresh: Vec<(u128, u64)>,
    gone: Vec<u64>,
}

impl<'a> BucketWriter<'a> {
    pub(crate) fn new(info: &'a CollectionInfo) -> Self {
        BucketWriter { info, encoded: Vec::new(), entries: Vec::new(), fresh: Vec::new(), gone: Vec::new() }
    }

    /// Merges one table's sorted additions and its removals (`(bucket, row)`, sorted) into
    /// its stored buckets of key field `t` ([`super::runs::table_field`]: one run's
    /// table), in bucket order.
    pub(crate) fn table(
        &mut self,
        out: &mut Out<'_, '_>,
        t: u32,
        g: Geometry,
        adds: &TableAdds,
        removes: &[(u32, u64)],
    ) -> Result<(), IndexError> {
        let (info, id) = (self.info, self.info.def.id);
        let (mut cursor, mut j) = (adds.cursor(), 0);
        loop {
            let next_add = cursor.peek(g);
            let bucket = match (next_add, removes.get(j)) {
                (Some(a), Some(r)) => a.min(r.0),
                (Some(a), None) => a,
                (None, Some(r)) => r.0,
                (None, None) => return Ok(()),
            };
            let (entries, fresh, gone) = (&mut self.entries, &mut self.fresh, &mut self.gone);
            fresh.clear();
            if next_add == Some(bucket) {
                cursor.take_into(g, bucket, fresh);
            }
            gone.clear();
            while let Some(&(_, r)) = removes.get(j).filter(|x| x.0 == bucket) {
                gone.push(r);
                j += 1;
            }
            entries.clear();
            if let Out::Table(table) = out
                && let Some(v) = table.get((id, t, bucket), "read simhash bucket")?
            {
                let view = BucketView::parse(v.value(), g).map_err(|d| bucket_err(info, t, bucket, d))?;
                view.entries_into(g, bucket, entries);
            }
            if !gone.is_empty() {
                let before = entries.len() + fresh.len();
                entries.retain(|e| gone.binary_search(&e.1).is_err());
                fresh.retain(|e| gone.binary_search(&e.1).is_err());
                let removed = before - entries.len() - fresh.len();
                if removed != gone.len() {
                    let detail = format!("{} rows to remove, {removed} found in the bucket", gone.len());
                    return Err(bucket_err(info, t, bucket, detail));
                }
            }
            // Stored and added entries are two sorted runs: the stable sort merges them in
            // linear time. With nothing stored, the added entries are written as they are.
            let merged: &[(u128, u64)] = if entries.is_empty() {
                fresh
            } else {
                entries.extend_from_slice(fresh);
                entries.sort();
                entries
            };
            match out {
                Out::Table(table) if merged.is_empty() => {
                    table.remove((id, t, bucket), "remove simhash bucket")?;
                }
                Out::Table(table) => {
                    table.insert_with((id, t, bucket), encoded_len(merged, g), "write simhash bucket", |out| {
                        encode_bucket(merged, g, out)
                    })?;
                }
                Out::Append(_) if merged.is_empty() => {}
                Out::Append(cursor) => {
                    self.encoded.resize(encoded_len(merged, g), 0);
                    encode_bucket(merged, g, &mut self.encoded);
                    if !cursor.append((id, t, bucket), &self.encoded[..], "append simhash bucket")? {
                        return Err(bucket_err(info, t, bucket, "a new bucket is already stored"));
                    }
                }
            }
        }
    }
}

/// An inconsistency in the bucket of key field `field` (run and table) and `bucket`.
pub(crate) fn bucket_err(info: &CollectionInfo, field: u32, bucket: u32, detail: impl std::fmt::Display) -> IndexError {
    let (run, table) = split_field(field);
    IndexError::Corrupt {
        collection: info.def.name.clone(),
        row: None,
        detail: format!("index table sketchdb.simhash_buckets, run {run}, table {table}, bucket {bucket:#x}: {detail}"),
    }
}
