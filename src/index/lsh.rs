//! LSH banding buckets: the packed chunk layout of a run's groups, and reading and rewriting
//! the groups of one run.
//!
//! * `sketchdb.lsh_runs`, key `(collection id, band, run, group, chunk)`: an index is a list of
//!   runs ([`super::meta::LshRun`]); each run holds the entries of a row range, with its own
//!   group width `P = group_bits`: the group is the top `P` bits of the band key. A group's
//!   entries, (band key, row id) pairs sorted ascending, are split evenly over chunks `0..c`
//!   (no gaps; `c = ceil(entries / GROUP_CHUNK_ENTRIES)`). A chunk value (all integers
//!   little-endian; `storage-format.md`, "Index tables"):
//!
//! ```text
//! offset  width      field
//!      0      1      layout      1
//!      1      1      s           key-suffix bytes per entry: ceil((K - P) / 8)
//!      2      1      w           row-id bytes per entry, 1..=8 (the fewest holding the largest)
//!      3      1      reserved    0
//!      4      4      n           entries, 1..=GROUP_CHUNK_ENTRIES
//!      8    n*s      suffixes    the K - P key bits below the group, s bytes LE
//!  8+n*s    n*w      rows        each row id, w bytes LE
//! ```
//!
//!   (K: the significant bits of the scheme's band keys, 64 or 32; see [`Groups`].)
//!
//! * `sketchdb.lsh_rows`, key `(collection id, row id)`: the row's band keys in band order,
//!   each as its top K bits in K / 8 bytes LE (`bands * K / 8` bytes): deletes find the
//!   groups without the row's sketch.
//!
//! A write transaction's changes are [`super::lsh_delta`]; how runs are written and merged is
//! [`super::lsh_write`] and [`super::lsh_merge`].

use std::ops::Bound;

use redb::{CursorError, ReadableTable, Table};

use crate::storage::StorageError;
use crate::storage::catalog::CollectionInfo;

/// The most entries in one chunk value (at most 8 + 1024 * 16 bytes).
pub(crate) const GROUP_CHUNK_ENTRIES: usize = 1024;
/// Bytes of the chunk value header.
pub(crate) const CHUNK_HEADER_LEN: usize = 8;
/// The chunk value layout version (byte 0).
pub(crate) const CHUNK_LAYOUT: u8 = 1;
/// The widest group prefix.
pub(crate) const MAX_GROUP_BITS: u32 = 24;

/// The group prefix width of a run holding `per_band` entries in each band: about 128
/// entries per group (one group below 256 entries), at most [`MAX_GROUP_BITS`].
pub(crate) fn run_group_bits(per_band: u64) -> u32 {
    let per = (per_band / 128).max(1);
    let bits = 64 - (per - 1).leading_zeros().min(63);
    if per == 1 { 0 } else { bits.min(MAX_GROUP_BITS) }
}

/// The group geometry of a prefix width P over band keys of K significant (top) bits (the
/// scheme's [`super::keys::band::BandKeyScheme::key_bits`]; the bits below are zero): the
/// group is the top P bits, the stored suffix the next K - P. Runs hold `P <= MAX_GROUP_BITS
/// < K` (checked when a definition is decoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Groups {
    /// P.
    pub bits: u32,
    /// K.
    key_bits: u32,
    /// Key-suffix bytes s = ceil((K - P) / 8).
    pub suffix_bytes: usize,
}

impl Groups {
    pub(crate) fn new(key_bits: u32, bits: u32) -> Groups {
        debug_assert!(bits < key_bits && key_bits <= 64, "P = {bits}, K = {key_bits}");
        Groups { bits, key_bits, suffix_bytes: (key_bits - bits).div_ceil(8) as usize }
    }
    /// Whether `group` is a group of this width (below `2^P`).
    pub(crate) fn holds(&self, group: u64) -> bool {
        self.bits >= 64 || group >> self.bits == 0
    }
    /// The group of a band key.
    #[inline]
    pub(crate) fn group(&self, key: u64) -> u64 {
        if self.bits == 0 { 0 } else { key >> (64 - self.bits) }
    }
    /// K - P, the bits of a stored suffix.
    #[inline]
    pub(crate) fn suffix_bits(&self) -> u32 {
        self.key_bits - self.bits
    }
    /// The stored suffixes: values below `2^(K - P)`.
    #[inline]
    pub(crate) fn suffix_mask(&self) -> u64 {
        if self.suffix_bits() >= 64 { u64::MAX } else { (1u64 << self.suffix_bits()) - 1 }
    }
    /// The stored suffix of a band key: its K - P bits below the group.
    #[inline]
    pub(crate) fn suffix(&self, key: u64) -> u64 {
        (key >> (64 - self.key_bits)) & self.suffix_mask()
    }
    /// The band key of a group and stored suffix.
    #[inline]
    pub(crate) fn key(&self, group: u64, suffix: u64) -> u64 {
        let low = suffix << (64 - self.key_bits);
        if self.bits == 0 { low } else { (group << (64 - self.bits)) | low }
    }
}

/// A parsed chunk value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkView<'a> {
    n: usize,
    s: usize,
    w: usize,
    /// Suffixes then row ids: reads of a suffix may look past its end into the row ids (one
    /// 8-byte load and a mask), so only the last row ids need the byte-wise path.
    body: &'a [u8],
}

/// The LE value of up to 8 bytes, byte by byte (no call for a copy of a few bytes).
#[inline]
fn le(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b))
}

/// The LE value of the first `N <= 8` bytes of `bytes` (at least `N` long): a fixed-size copy
/// the compiler turns into one or two loads.
#[inline(always)]
fn le_n<const N: usize>(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf[..N].copy_from_slice(&bytes[..N]);
    u64::from_le_bytes(buf)
}

/// The `width`-byte LE value at `at` in `bytes` (`width <= 8`, `at + width <= bytes.len()`):
/// one unaligned 8-byte load and a mask when 8 bytes are available, else a byte copy.
#[inline]
fn le_at(bytes: &[u8], at: usize, width: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(eight) => {
            let v = u64::from_le_bytes(eight.try_into().unwrap_or([0; 8]));
            if width >= 8 { v } else { v & ((1u64 << (8 * width)) - 1) }
        }
        None => le(&bytes[at..at + width]),
    }
}

impl<'a> ChunkView<'a> {
    /// Checks the header and length against the geometry (suffixes must fit K - P bits).
    pub(crate) fn parse(bytes: &'a [u8], g: Groups) -> Result<ChunkView<'a>, String> {
        if bytes.len() < CHUNK_HEADER_LEN {
            return Err(format!("chunk value of {} bytes is shorter than its header", bytes.len()));
        }
        if bytes[0] != CHUNK_LAYOUT || bytes[3] != 0 {
            return Err(format!("unknown chunk layout {} / reserved {}", bytes[0], bytes[3]));
        }
        let (s, w) = (usize::from(bytes[1]), usize::from(bytes[2]));
        if s != g.suffix_bytes || !(1..=8).contains(&w) {
            return Err(format!("suffix bytes {s} (expected {}), row bytes {w} (1..=8)", g.suffix_bytes));
        }
        let n = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        if n == 0 || n > GROUP_CHUNK_ENTRIES || bytes.len() != CHUNK_HEADER_LEN + n * (s + w) {
            return Err(format!("{n} entries do not fill a chunk value of {} bytes", bytes.len()));
        }
        Ok(ChunkView { n, s, w, body: &bytes[CHUNK_HEADER_LEN..] })
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Asks for the cache line of entry `i`'s suffix ahead of the search.
    #[inline]
    pub(crate) fn prefetch_suffix(&self, i: usize) {
        super::prefetch::prefetch(self.body, i * self.s);
    }

    /// The suffix of entry `i < n`.
    #[inline]
    fn suffix_at(&self, i: usize) -> u64 {
        le_at(self.body, i * self.s, self.s)
    }

    #[inline]
    fn row_at(&self, i: usize) -> u64 {
        le_at(self.body, self.n * self.s + i * self.w, self.w)
    }

    /// Appends every entry as (band key, row id).
    pub(crate) fn decode_into(&self, g: Groups, group: u64, out: &mut Vec<(u64, u64)>) {
        // The common widths (3-byte suffixes at 32-bit keys, rows below 2^24 or 2^32) with
        // the widths as constants: a fixed-size load per field.
        match (self.s, self.w) {
            (3, 3) => self.decode_fixed::<3, 3>(g, group, out),
            (3, 4) => self.decode_fixed::<3, 4>(g, group, out),
            (2, 3) => self.decode_fixed::<2, 3>(g, group, out),
            (2, 4) => self.decode_fixed::<2, 4>(g, group, out),
            (4, 3) => self.decode_fixed::<4, 3>(g, group, out),
            (4, 4) => self.decode_fixed::<4, 4>(g, group, out),
            _ => {
                out.reserve(self.n);
                out.extend((0..self.n).map(|i| (g.key(group, self.suffix_at(i)), self.row_at(i))));
            }
        }
    }

    /// [`Self::decode_into`] for `s == S` and `w == W`.
    fn decode_fixed<const S: usize, const W: usize>(&self, g: Groups, group: u64, out: &mut Vec<(u64, u64)>) {
        let (suffixes, rows) = self.body.split_at(self.n * S);
        let base = g.key(group, 0);
        out.reserve(self.n);
        out.extend(
            suffixes
                .chunks_exact(S)
                .zip(rows.chunks_exact(W))
                .map(|(s, r)| (base | g.key(0, le_n::<S>(s)), le_n::<W>(r))),
        );
    }

    /// Whether every suffix fits K - P bits.
    pub(crate) fn suffixes_fit(&self, g: Groups) -> bool {
        (0..self.n).all(|i| self.suffix_at(i) & !g.suffix_mask() == 0)
    }

    /// Where `suffix` would sit if the chunk's suffixes were spread evenly over the whole
    /// suffix range of its group, as hashed band keys are: `suffix * n / 2^(K - P)`, below
    /// `n`. Computed from the header alone, so the probe can load that entry before it needs
    /// it; any position is a correct start for [`Self::lower_bound_from`].
    #[inline]
    pub(crate) fn guess(&self, g: Groups, suffix: u64) -> usize {
        let pos = (u128::from(suffix) * self.n as u128) >> g.suffix_bits();
        (pos as usize).min(self.n - 1)
    }

    /// The first entry whose suffix is `>= suffix` (`n` if none), searched from position
    /// `guess < n`: gallop away from the guess to a bracket, then bisect it. With a good
    /// guess the search reads one or two cache lines of a chunk of up to 16 KiB, where plain
    /// bisection touches about ten.
    pub(crate) fn lower_bound_from(&self, suffix: u64, guess: usize) -> usize {
        let n = self.n;
        let guess = guess.min(n - 1);
        // Invariant: suffix_at(i) < suffix for i < lo, and hi == n or suffix_at(hi) >= suffix.
        let (mut lo, mut hi);
        if self.suffix_at(guess) < suffix {
            (lo, hi) = (guess + 1, n);
            let mut step = 1;
            while guess + step < n {
                let probe = guess + step;
                if self.suffix_at(probe) >= suffix {
                    hi = probe;
                    break;
                }
                lo = probe + 1;
                step *= 2;
            }
        } else {
            (lo, hi) = (0, guess);
            let mut step = 1;
            while step <= guess {
                let probe = guess - step;
                if self.suffix_at(probe) < suffix {
                    lo = probe + 1;
                    break;
                }
                hi = probe;
                step *= 2;
            }
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.suffix_at(mid) < suffix { lo = mid + 1 } else { hi = mid }
        }
        lo
    }

    /// Appends the row ids of the entries whose suffix is `suffix` (the chunk's entries are
    /// sorted), searching from `guess`. True when the matches may go on in the group's next
    /// chunk: the search reached the chunk's end.
    pub(crate) fn rows_of(&self, suffix: u64, guess: usize, out: &mut Vec<u64>) -> bool {
        let mut i = self.lower_bound_from(suffix, guess);
        while i < self.n && self.suffix_at(i) == suffix {
            out.push(self.row_at(i));
            i += 1;
        }
        i == self.n
    }
}

/// Encodes one chunk of sorted entries (at most [`GROUP_CHUNK_ENTRIES`], at least one) in
/// place of `out`'s contents.
pub(crate) fn encode_chunk(g: Groups, entries: &[(u64, u64)], out: &mut Vec<u8>) {
    out.clear();
    append_chunk(g, entries, out);
}

/// Appends the encoding of one chunk to `out`. Each field is stored as a whole 8-byte LE
/// word and the next one overwrites its surplus bytes (a fixed-size store per entry, no
/// copy of a variable length); the 8 bytes of slack past the end are cut off.
fn append_chunk(g: Groups, entries: &[(u64, u64)], out: &mut Vec<u8>) {
    let max_row = entries.iter().map(|e| e.1).max().unwrap_or(0);
    let w = (8 - (max_row.leading_zeros() / 8) as usize).max(1);
    let s = g.suffix_bytes;
    let start = out.len();
    let end = start + CHUNK_HEADER_LEN + entries.len() * (s + w);
    out.resize(end + 8, 0);
    out[start..start + 4].copy_from_slice(&[CHUNK_LAYOUT, s as u8, w as u8, 0]);
    out[start + 4..start + 8].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    let mut at = start + CHUNK_HEADER_LEN;
    for &(key, _) in entries {
        out[at..at + 8].copy_from_slice(&g.suffix(key).to_le_bytes());
        at += s;
    }
    for &(_, row) in entries {
        out[at..at + 8].copy_from_slice(&row.to_le_bytes());
        at += w;
    }
    out.truncate(end);
}

/// The band keys of a `sketchdb.lsh_rows` value: exactly `bands` keys of `key_bits` (64 or
/// 32) significant bits, each its top bits in `key_bits / 8` bytes LE, or what is wrong
/// with it.
pub(crate) fn band_keys_of(bytes: &[u8], bands: usize, key_bits: u32) -> Result<Vec<u64>, String> {
    let width = key_bits as usize / 8;
    if width == 0 || bytes.len() != width * bands {
        return Err(format!(
            "sketchdb.lsh_rows holds {} bytes, not the {bands} band keys of {key_bits} bits of the banding",
            bytes.len()
        ));
    }
    Ok(bytes.chunks_exact(width).map(|b| le(b) << (64 - key_bits)).collect())
}

/// Appends the `sketchdb.lsh_rows` encoding of band keys of `key_bits` significant bits
/// (the inverse of [`band_keys_of`]).
pub(crate) fn push_band_keys(keys: &[u64], key_bits: u32, out: &mut Vec<u8>) {
    let width = key_bits as usize / 8;
    for &k in keys {
        out.extend_from_slice(&(k >> (64 - key_bits)).to_le_bytes()[..width]);
    }
}

pub(crate) fn lsh_err(info: &CollectionInfo, at: At, detail: impl std::fmt::Display) -> StorageError {
    StorageError::Inconsistent {
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
    let (mut sum, mut sum_sq) = (0u64, 0u128);
    let mut i = 0;
    while i < entries.len() {
        let mut j = i + 1;
        while j < entries.len() && entries[j].0 == entries[i].0 {
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
pub(crate) type RunKey = (u32, u32, u32, u64, u32);
pub(crate) type BucketTable<'t> = Table<'t, RunKey, &'static [u8]>;

/// (sum(s), sum(s^2)) over a group's buckets.
pub(crate) type Sums = (u64, u128);

/// Buffers reused across groups.
#[derive(Default)]
pub(crate) struct GroupScratch {
    old: Vec<(u64, u64)>,
    new: Vec<(u64, u64)>,
    bytes: Vec<u8>,
}

/// Calls `f(group, value)` for every chunk value of one band of one run, in key order,
/// checking each group's chunks run `0..n` without gaps; returns the chunks read.
fn for_each_chunk(
    table: &impl ReadableTable<RunKey, &'static [u8]>,
    info: &CollectionInfo,
    g: Groups,
    band: u32,
    run: u32,
    mut f: impl FnMut(u64, &[u8]) -> Result<(), StorageError>,
) -> Result<u64, StorageError> {
    let id = info.def.id;
    let range = table
        .range((id, band, run, 0u64, 0u32)..=(id, band, run, u64::MAX, u32::MAX))
        .map_err(StorageError::backend("read lsh run"))?;
    let (mut current, mut next, mut n) = (None, 0u32, 0u64);
    for e in range {
        let (k, v) = e.map_err(StorageError::backend("read lsh run"))?;
        let (_, _, _, group, chunk) = k.value();
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
) -> Result<(), StorageError> {
    let view = ChunkView::parse(bytes, g).map_err(|d| lsh_err(info, at, d))?;
    view.decode_into(g, at.group, out);
    Ok(())
}

/// Reads every entry of one band of one run (all its groups, in key order) into `out`,
/// checking each group's chunks run `0..n` without gaps; returns the chunks read.
pub(crate) fn read_run_band(
    table: &impl ReadableTable<RunKey, &'static [u8]>,
    info: &CollectionInfo,
    g: Groups,
    band: u32,
    run: u32,
    out: &mut Vec<(u64, u64)>,
) -> Result<u64, StorageError> {
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
        table: &impl ReadableTable<RunKey, &'static [u8]>,
        info: &CollectionInfo,
        g: Groups,
        band: u32,
        run: u32,
    ) -> Result<RawBand, StorageError> {
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

    /// Appends the entries of chunk `i < chunk_count()` (as [`read_run_band`] would have) to
    /// `out`.
    pub(crate) fn decode_chunk_into(
        &self,
        info: &CollectionInfo,
        i: usize,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<(), StorageError> {
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
        let per = entries.len().div_ceil(entries.len().div_ceil(GROUP_CHUNK_ENTRIES)).max(1);
        for (no, c) in entries.chunks(per).enumerate() {
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
) -> Result<(), StorageError> {
    let id = info.def.id;
    let mut cursor = table
        .lower_bound_mut(Bound::Included((id, band, run, 0u64, 0u32)))
        .map_err(StorageError::backend("position lsh run cursor"))?;
    for (group, no, range) in &encoded.chunks {
        cursor.insert_before((id, band, run, *group, *no), &encoded.bytes[range.clone()]).map_err(|e| match e {
            CursorError::UnorderedKey => {
                lsh_err(info, At { band, run, group: *group }, "a new run's chunk is already stored")
            }
            e => StorageError::backend("write lsh run")(e),
        })?;
    }
    cursor.close().map_err(StorageError::backend("write lsh run"))
}

/// Removes every value of one band of a run.
pub(crate) fn drop_run_band(table: &mut BucketTable<'_>, id: u32, band: u32, run: u32) -> Result<(), StorageError> {
    table
        .retain_in((id, band, run, 0u64, 0u32)..=(id, band, run, u64::MAX, u32::MAX), |_, _| false)
        .map_err(StorageError::backend("drop lsh run"))
}

/// Reads every entry of a group (all chunks, in order) into `out`; returns the chunk count.
/// Chunk numbers must run `0..n` without gaps.
fn read_group(
    table: &impl ReadableTable<RunKey, &'static [u8]>,
    info: &CollectionInfo,
    g: Groups,
    at: At,
    out: &mut Vec<(u64, u64)>,
) -> Result<u32, StorageError> {
    let (id, At { band, run, group }) = (info.def.id, at);
    let range = table
        .range((id, band, run, group, 0u32)..=(id, band, run, group, u32::MAX))
        .map_err(StorageError::backend("read lsh group"))?;
    let mut n = 0u32;
    for e in range {
        let (k, v) = e.map_err(StorageError::backend("read lsh group"))?;
        let chunk = k.value().4;
        if chunk != n {
            return Err(lsh_err(info, at, format!("chunk {chunk} where chunk {n} was expected")));
        }
        let view = ChunkView::parse(v.value(), g).map_err(|d| lsh_err(info, at, d))?;
        view.decode_into(g, group, out);
        n += 1;
    }
    Ok(n)
}

/// Applies sorted `removes` to one group of a run and rewrites it; returns its
/// (sum(s), sum(s^2)) over band keys before and after.
pub(crate) fn remove_from_group(
    table: &mut BucketTable<'_>,
    info: &CollectionInfo,
    g: Groups,
    at: At,
    removes: &[(u64, u64)],
    scratch: &mut GroupScratch,
) -> Result<(Sums, Sums), StorageError> {
    let (id, At { band, run, group }) = (info.def.id, at);
    let GroupScratch { old, new, bytes } = scratch;
    old.clear();
    new.clear();
    let old_chunks = read_group(table, info, g, at, old)?;
    let before = bucket_sums(old);
    // Merge: old minus removes (both sorted).
    new.reserve(old.len());
    let (mut r, mut removed) = (0usize, 0usize);
    for &e in old.iter() {
        while r < removes.len() && removes[r] < e {
            r += 1;
        }
        if r < removes.len() && removes[r] == e {
            removed += 1;
            r += 1;
            continue;
        }
        new.push(e);
    }
    if removed != removes.len() {
        return Err(lsh_err(info, at, format!("{} entries to remove, {removed} found", removes.len())));
    }
    let after = bucket_sums(new);
    let n_chunks = new.len().div_ceil(GROUP_CHUNK_ENTRIES);
    if n_chunks > 0 {
        let per = new.len().div_ceil(n_chunks);
        for (no, c) in new.chunks(per).enumerate() {
            encode_chunk(g, c, bytes);
            table
                .insert((id, band, run, group, no as u32), bytes.as_slice())
                .map_err(StorageError::backend("write lsh group"))?;
        }
    }
    if old_chunks as usize > n_chunks {
        table
            .retain_in((id, band, run, group, n_chunks as u32)..=(id, band, run, group, u32::MAX), |_, _| false)
            .map_err(StorageError::backend("rewrite lsh group"))?;
    }
    Ok((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_round_trip_and_lookup() {
        // Every suffix width at both key widths, and row ids of 2, 3, 4 and 6 bytes (the
        // decoder has fixed-width paths for some pairs).
        let cases = [64, 32].into_iter().flat_map(|k| [0, 1, 10, 17, 24].map(|p| (k, p)));
        for ((key_bits, bits), (row_base, w)) in
            cases.flat_map(|c| [(0, 2), (1 << 16, 3), (1 << 24, 4), (1 << 40, 6)].map(|r| (c, r)))
        {
            let g = Groups::new(key_bits, bits);
            assert_eq!(g.suffix_bytes, (key_bits - bits).div_ceil(8) as usize);
            let group = 0x2a_u64 & ((1 << bits) - 1);
            let mut entries: Vec<(u64, u64)> = (0..300u64)
                .map(|i| (g.key(group, (i / 3).wrapping_mul(0x9e37_79b9) & g.suffix_mask()), row_base + i))
                .collect();
            entries.sort_unstable();
            let mut bytes = Vec::new();
            encode_chunk(g, &entries, &mut bytes);
            assert_eq!(bytes.len(), CHUNK_HEADER_LEN + 300 * (g.suffix_bytes + w));
            let view = ChunkView::parse(&bytes, g).expect("parse");
            assert!(view.suffixes_fit(g));
            let mut back = Vec::new();
            view.decode_into(g, group, &mut back);
            assert_eq!(back, entries);
            for &(k, _) in &entries {
                let mut rows = Vec::new();
                view.rows_of(g.suffix(k), view.guess(g, g.suffix(k)), &mut rows);
                let want: Vec<u64> = entries.iter().filter(|e| e.0 == k).map(|e| e.1).collect();
                assert_eq!(rows, want);
                assert_eq!(g.group(k), group);
                // Keys of K significant bits: the bits below are zero and survive the trip.
                assert_eq!(k & ((1u128 << (64 - key_bits)) - 1) as u64, 0);
                assert_eq!(g.key(g.group(k), g.suffix(k)), k);
            }
        }
    }

    #[test]
    fn reverse_entries_round_trip_at_each_key_width() {
        let keys = [0u64, 0xffff_ffff_0000_0000, 0x1234_5678_0000_0000, 0x8000_0000_0000_0000];
        for key_bits in [64, 32] {
            let mut bytes = Vec::new();
            push_band_keys(&keys, key_bits, &mut bytes);
            assert_eq!(bytes.len(), keys.len() * key_bits as usize / 8);
            assert_eq!(band_keys_of(&bytes, keys.len(), key_bits).expect("decode"), keys);
            let err = band_keys_of(&bytes[1..], keys.len(), key_bits).unwrap_err();
            assert!(err.contains("sketchdb.lsh_rows holds"), "{err}");
        }
        let full = [0x0123_4567_89ab_cdefu64];
        let mut bytes = Vec::new();
        push_band_keys(&full, 64, &mut bytes);
        assert_eq!(bytes, 0x0123_4567_89ab_cdefu64.to_le_bytes());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// The galloping search finds the first suffix >= the probe on any sorted chunk from
        /// any start: skewed or clustered suffixes, runs of duplicates, probes absent, below
        /// the first and above the last, good and bad guesses.
        #[test]
        fn lower_bound_equals_partition_point(
            raw in proptest::collection::vec((0u64..64, 1usize..4), 1..300),
            spread in 0u32..54,
            probes in proptest::collection::vec(0u64..70, 1..20),
            guesses in proptest::collection::vec(0usize..2000, 1..8),
        ) {
            let g = Groups::new(64, 10);
            let mut suffixes: Vec<u64> = raw
                .iter()
                .flat_map(|&(v, dup)| std::iter::repeat_n((v * v) << spread & g.suffix_mask(), dup))
                .collect();
            suffixes.sort_unstable();
            suffixes.truncate(GROUP_CHUNK_ENTRIES);
            let entries: Vec<(u64, u64)> = suffixes.iter().enumerate().map(|(i, &x)| (g.key(3, x), i as u64)).collect();
            let mut bytes = Vec::new();
            encode_chunk(g, &entries, &mut bytes);
            let view = ChunkView::parse(&bytes, g).unwrap();
            for p in probes {
                let probe = (p * p) << spread & g.suffix_mask();
                for q in [probe, probe.saturating_sub(1), probe + 1] {
                    let want = suffixes.partition_point(|&x| x < q);
                    for &guess in guesses.iter().chain([view.guess(g, q)].iter()) {
                        proptest::prop_assert_eq!(view.lower_bound_from(q, guess), want, "probe {} from {}", q, guess);
                    }
                }
            }
        }
    }

    #[test]
    fn run_group_bits_grow_with_entries() {
        assert_eq!(run_group_bits(0), 0);
        assert_eq!(run_group_bits(255), 0);
        assert_eq!(run_group_bits(256), 1);
        assert_eq!(run_group_bits(128 * 1024), 10);
        assert_eq!(run_group_bits(128 * 1024 + 128), 11);
        assert_eq!(run_group_bits(u64::MAX), MAX_GROUP_BITS);
    }

    #[test]
    fn sums_count_runs_of_equal_keys() {
        assert_eq!(bucket_sums(&[(1, 1), (1, 2), (1, 3), (2, 4), (5, 5), (5, 6)]), (6, 9 + 1 + 4));
        assert_eq!(bucket_sums(&[]), (0, 0));
    }
}
