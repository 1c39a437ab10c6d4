//! LSH banding buckets: the tables, reading and writing the bands of one run, and the
//! values of the reverse map earlier builds kept.
//!
//! * `sketchdb.lsh_runs`, key `(collection id, band, run, group, chunk)`: an index is a list of
//!   runs ([`crate::index::defs::LshRun`]); each run holds the entries of a row range, with its own
//!   group width `P = group_bits`: the group is the top `P` bits of the band key. A group's
//!   entries, (band key, row id) pairs sorted ascending, are split evenly over chunks `0..c`
//!   (no gaps; `c = ceil(entries / GROUP_CHUNK_ENTRIES)`). A chunk value (all integers
//!   little-endian; `storage-format.md`, "Index tables") has one of the two layouts of
//!   [`super::format`].
//!
//! * `sketchdb.lsh_rows`, key `(collection id, row id)`: the row's band keys in band order,
//!   each as its top K bits in K / 8 bytes LE (`bands * K / 8` bytes). Builds before index
//!   wire variant 3 kept it for every live row; this build reads it only to verify such a
//!   file, and the next write to the index removes it. A row's band keys are a function of
//!   its stored signature under the recorded scheme.
//!
//! * `sketchdb.lsh_dead`, key `(collection id, row id)`: removed rows whose entries a run
//!   still holds ([`super::dead`]); a removal is recorded there and in its run's count,
//!   and the entries go when a merge rewrites the run.
//!
//! A write transaction's changes are [`super::delta`]; how runs are written and merged is
//! [`super::write`] and [`super::merge`].

pub(crate) use super::format::{CHUNK_HEADER_LEN, ChunkView, GROUP_CHUNK_ENTRIES, Groups, run_group_bits};
use super::format::{append_chunk, group_chunks};
use crate::index::error::IndexError;
use crate::storage::catalog::CollectionInfo;
use crate::storage::index_tables::{BytesRead, BytesTable};
/// An inconsistency of a band's run as a whole (group 0).
pub(crate) fn lsh_rows_err(info: &CollectionInfo, band: u32, run: u32, detail: &str) -> IndexError {
    lsh_err(info, At { band, run, group: 0 }, detail)
}

pub(crate) fn lsh_err(info: &CollectionInfo, at: At, detail: impl std::fmt::Display) -> IndexError {
    IndexError::Corrupt {
        collection: info.def.name.clone(),
        row: None,
        detail: format!(
            "index table sketchdb.lsh_runs, band {}, run {}, group {:#x}: {detail}",
            at.band, at.run, at.group
        ),
    }
}

/// Where a group lives: band, run, group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At {
    pub band: u32,
    pub run: u32,
    pub group: u64,
}

/// sum(s) and sum(s^2) over the runs of equal keys of sorted entries.
pub(crate) fn bucket_sums(entries: &[(u64, u64)]) -> (u64, u128) {
    bucket_sums_by(entries, |e| e.0)
}

/// [`bucket_sums`] over entries whose band key is `key(e)`.
pub(crate) fn bucket_sums_by<T>(entries: &[T], key: impl Fn(&T) -> u64) -> (u64, u128) {
    let (mut sum, mut sum_sq) = (0u64, 0u128);
    let mut i = 0;
    while i < entries.len() {
        let mut j = i + 1;
        while j < entries.len() && key(&entries[j]) == key(&entries[i]) {
            j += 1;
        }
        let s = (j - i) as u64;
        sum += s;
        sum_sq += u128::from(s) * u128::from(s);
        i = j;
    }
    (sum, sum_sq)
}

/// Key of `sketchdb.lsh_runs`: (collection id, band, run, group, chunk).
pub(crate) use crate::storage::index_tables::RunKey;
pub(crate) type BucketTable<'t> = BytesTable<'t, RunKey>;

/// (sum(s), sum(s^2)) over a group's buckets.
pub(crate) type Sums = (u64, u128);

/// Calls `f(group, value)` for every chunk value of one band of one run, in key order,
/// checking each group's chunks run `0..n` without gaps; returns the chunks read.
fn for_each_chunk(
    table: &impl BytesRead<RunKey>,
    info: &CollectionInfo,
    g: Groups,
    band: u32,
    run: u32,
    mut f: impl FnMut(u64, &[u8]) -> Result<(), IndexError>,
) -> Result<u64, IndexError> {
    let id = info.def.id;
    let range = table.range((id, band, run, 0u64, 0u32)..=(id, band, run, u64::MAX, u32::MAX), "read lsh run")?;
    let (mut current, mut next, mut n) = (None, 0u32, 0u64);
    for e in range {
        let (k, v) = e?;
        let (_, _, _, group, chunk) = k;
        let at = At { band, run, group };
        if current != Some(group) {
            current = Some(group);
            next = 0;
        }
        if !g.holds(group) {
            return Err(lsh_err(info, at, format!("no such group under the run's {} group bits", g.bits)));
        }
        if chunk != next {
            return Err(lsh_err(info, at, format!("chunk {chunk} where chunk {next} was expected")));
        }
        f(group, v.value())?;
        next += 1;
        n += 1;
    }
    Ok(n)
}

/// Appends the entries of one chunk value of `group` to `out`.
fn decode_chunk(
    info: &CollectionInfo,
    g: Groups,
    at: At,
    bytes: &[u8],
    out: &mut Vec<(u64, u64)>,
) -> Result<(), IndexError> {
    let view = ChunkView::parse(bytes, g).map_err(|d| lsh_err(info, at, d))?;
    view.decode_into(g, at.group, out);
    Ok(())
}

/// Reads every entry of one band of one run (all its groups, in key order) into `out`,
/// checking each group's chunks run `0..n` without gaps; returns the chunks read.
pub(crate) fn read_run_band(
    table: &impl BytesRead<RunKey>,
    info: &CollectionInfo,
    g: Groups,
    band: u32,
    run: u32,
    out: &mut Vec<(u64, u64)>,
) -> Result<u64, IndexError> {
    for_each_chunk(table, info, g, band, run, |group, bytes| decode_chunk(info, g, At { band, run, group }, bytes, out))
}

/// One band of one run as stored (its chunk values' groups and bytes, in key order, the
/// chunk sequence checked), to be decoded off the thread that reads the table.
pub(crate) struct RawBand {
    g: Groups,
    band: u32,
    run: u32,
    chunks: Vec<(u64, std::ops::Range<usize>)>,
    bytes: Vec<u8>,
}

impl RawBand {
    /// Reads one band of one run (as [`read_run_band`], without decoding).
    pub(crate) fn read(
        table: &impl BytesRead<RunKey>,
        info: &CollectionInfo,
        g: Groups,
        band: u32,
        run: u32,
    ) -> Result<RawBand, IndexError> {
        let mut raw = RawBand { g, band, run, chunks: Vec::new(), bytes: Vec::new() };
        for_each_chunk(table, info, g, band, run, |group, bytes| {
            let at = raw.bytes.len();
            raw.bytes.extend_from_slice(bytes);
            raw.chunks.push((group, at..raw.bytes.len()));
            Ok(())
        })?;
        Ok(raw)
    }

    /// The band as [`Self::read`] would have read it after `encoded` was inserted.
    #[cfg(test)]
    pub(crate) fn from_encoded(g: Groups, band: u32, run: u32, encoded: &EncodedBand) -> RawBand {
        RawBand::from_unwritten(g, band, run, encoded.clone())
    }

    /// The band as [`Self::read`] would read it had `encoded` been inserted, without
    /// inserting it (a new run that a merge in the same transaction takes at once).
    pub(crate) fn from_unwritten(g: Groups, band: u32, run: u32, encoded: EncodedBand) -> RawBand {
        let chunks = encoded.chunks.into_iter().map(|(group, _, range)| (group, range)).collect();
        RawBand { g, band, run, chunks, bytes: encoded.bytes }
    }

    /// The bytes of its chunk values together.
    pub(crate) fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    /// The chunks held.
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Appends the entries of chunk `i < chunk_count()` as words `key | (row - base)` (32-bit
    /// keys; see [`ChunkView::decode_words_into`]); a row outside `base..base + 2^32` is an
    /// error.
    pub(crate) fn decode_chunk_words_into(
        &self,
        info: &CollectionInfo,
        i: usize,
        base: u64,
        out: &mut Vec<u64>,
    ) -> Result<(), IndexError> {
        let (group, range) = &self.chunks[i];
        let at = At { band: self.band, run: self.run, group: *group };
        let view = ChunkView::parse(&self.bytes[range.clone()], self.g).map_err(|d| lsh_err(info, at, d))?;
        if view.decode_words_into(self.g, *group, base, out) {
            Ok(())
        } else {
            Err(lsh_err(info, at, format!("a row id lies outside the 2^32 rows from {base} being merged")))
        }
    }

    /// Appends the entries of chunk `i < chunk_count()` (as [`read_run_band`] would have) to
    /// `out`.
    pub(crate) fn decode_chunk_into(
        &self,
        info: &CollectionInfo,
        i: usize,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<(), IndexError> {
        let (group, range) = &self.chunks[i];
        decode_chunk(
            info,
            self.g,
            At { band: self.band, run: self.run, group: *group },
            &self.bytes[range.clone()],
            out,
        )
    }
}

/// One band of a run, encoded: every chunk's (group, chunk number, byte range) in key order,
/// and the bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EncodedBand {
    chunks: Vec<(u64, u32, std::ops::Range<usize>)>,
    bytes: Vec<u8>,
}

/// Encodes one band of a run: `entries` (sorted, strictly ascending) split into the run's
/// groups and each group evenly over chunks. Pure, so bands encode in parallel.
pub(crate) fn encode_run_band(g: Groups, entries: &[(u64, u64)]) -> EncodedBand {
    // Room for every chunk (about one a group) with row ids of up to 4 bytes: the buffer of a
    // band of a million entries is not regrown and copied a dozen times.
    let chunks = (1usize << g.bits) + entries.len() / GROUP_CHUNK_ENTRIES + 1;
    let mut out =
        EncodedBand::with_capacity(entries.len() * (g.suffix_bytes + 4) + chunks * CHUNK_HEADER_LEN + 8, chunks);
    let mut i = 0;
    while i < entries.len() {
        let group = g.group(entries[i].0);
        let end = i + entries[i..].partition_point(|e| g.group(e.0) == group);
        out.push_group(g, group, &entries[i..end]);
        i = end;
    }
    out
}

impl EncodedBand {
    /// An empty encoding with room for `bytes` bytes of `chunks` chunks.
    pub(crate) fn with_capacity(bytes: usize, chunks: usize) -> EncodedBand {
        EncodedBand { chunks: Vec::with_capacity(chunks), bytes: Vec::with_capacity(bytes) }
    }

    /// Appends one group's chunks: `entries` (sorted, non-empty, all of `group`, which must
    /// come after every group pushed before) split evenly over the fewest chunks.
    pub(crate) fn push_group(&mut self, g: Groups, group: u64, entries: &[(u64, u64)]) {
        for (no, c) in group_chunks(entries).enumerate() {
            let at = self.bytes.len();
            append_chunk(g, c, &mut self.bytes);
            self.chunks.push((group, no as u32, at..self.bytes.len()));
        }
    }
}

/// Inserts an encoded band of run `run`, whose values must not exist yet: they are appended
/// in key order through one cursor (an insert each descended the tree), and a value already
/// stored under one of the keys is an error.
pub(crate) fn insert_run_band(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    band: u32,
    run: u32,
    encoded: &EncodedBand,
) -> Result<(), IndexError> {
    let id = info.def.id;
    let mut cursor = table.appender((id, band, run, 0u64, 0u32), "position lsh run cursor")?;
    for (group, no, range) in &encoded.chunks {
        if !cursor.append((id, band, run, *group, *no), &encoded.bytes[range.clone()], "write lsh run")? {
            return Err(lsh_err(info, At { band, run, group: *group }, "a new run's chunk is already stored"));
        }
    }
    cursor.close("write lsh run")?;
    Ok(())
}

/// Removes every value of one band of a run.
pub(crate) fn drop_run_band(table: &mut BucketTable<'_>, id: u32, band: u32, run: u32) -> Result<(), IndexError> {
    Ok(table.remove_range((id, band, run, 0u64, 0u32)..=(id, band, run, u64::MAX, u32::MAX), "drop lsh run")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_count_runs_of_equal_keys() {
        assert_eq!(bucket_sums(&[(1, 1), (1, 2), (1, 3), (2, 4), (5, 5), (5, 6)]), (6, 9 + 1 + 4));
        assert_eq!(bucket_sums(&[]), (0, 0));
    }
}
