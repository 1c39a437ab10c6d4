//! The chunk value of an LSH run's group: its layouts, the parsed view the probes, merges and
//! verification read through ([`ChunkView`]), and the encoder ([`encode_chunk`]). All
//! integers little-endian (`storage-format.md`, "LSH runs, groups and reverse map"); K: the
//! significant bits of the scheme's band keys (64 or 32), P: the run's group bits.
//!
//! ```text
//! offset  width   layout 1 (split)                 layout 2 (packed)
//!      0      1   1                                2
//!      1      1   s = ceil((K - P) / 8)            s = ceil((K - P + d) / 8)
//!      2      1   w: row-id bytes, 1..=8           d: row-offset bits, K - P + d <= 64
//!      3      1   0                                0
//!      4      4   n: entries, 1..=1024             n
//!      8          n suffixes of s bytes,           base: the smallest row id (8 bytes),
//!                 then n row ids of w bytes        then n words `suffix << d | (row - base)`
//!                                                  of s bytes
//! ```
//!
//! Entries ascend strictly by (suffix, row) in both. Writers choose layout 2 unless its words
//! would exceed 64 bits or layout 1 is shorter; readers take either.

/// The most entries in one chunk value (at most 8 + 1024 * 16 bytes).
pub(crate) const GROUP_CHUNK_ENTRIES: usize = 1024;
/// Bytes of the longest chunk value header (for sizing buffers).
pub(crate) const CHUNK_HEADER_LEN: usize = HEADER_V2;
/// Layout 1 (byte 0): suffixes, then row ids, each array at its own width.
const LAYOUT_SPLIT: u8 = 1;
/// Layout 2 (byte 0): one word per entry, the suffix above the row's offset from a base.
const LAYOUT_PACKED: u8 = 2;
/// Header bytes of layout 1.
const HEADER_V1: usize = 8;
/// Header bytes of layout 2 (layout 1's and the base row).
const HEADER_V2: usize = 16;
/// The widest group prefix.
pub(crate) const MAX_GROUP_BITS: u32 = 24;
/// The low half of an entry word (see [`ChunkView::decode_words_into`]): the row offset.
pub(crate) const WORD_ROWS: u64 = 0xffff_ffff;

/// The entry word of band key `key` (32 significant bits) and row offset `offset <
/// 2^32`: the key over the offset, so words order as (key, row).
#[inline]
pub(crate) fn word(key: u64, offset: u64) -> u64 {
    key & !WORD_ROWS | offset
}

/// The (band key, row) entry of a word whose row offsets count from `base`.
#[inline]
pub(crate) fn word_entry(word: u64, base: u64) -> (u64, u64) {
    (word & !WORD_ROWS, base + (word & WORD_ROWS))
}

/// The group prefix width of a run holding `per_band` entries in each band: about 128
/// entries per group (one group below 256 entries), at most [`MAX_GROUP_BITS`].
pub(crate) fn run_group_bits(per_band: u64) -> u32 {
    let per = (per_band / 128).max(1);
    let bits = 64 - (per - 1).leading_zeros().min(63);
    if per == 1 { 0 } else { bits.min(MAX_GROUP_BITS) }
}

/// The group geometry of a prefix width P over band keys of K significant (top) bits (the
/// scheme's [`super::band::BandKeyScheme::key_bits`]; the bits below are zero): the
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
    /// K.
    pub(crate) fn key_bits(&self) -> u32 {
        self.key_bits
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

/// A parsed chunk value of either layout. Entry `i`'s stored *word* is `s` bytes LE at
/// `i * s`: layout 1 keeps the suffix there and the row id in a second array; layout 2 keeps
/// `suffix << d | (row - base)` there, so a probe finds a hit's row in the line of its suffix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkView<'a> {
    n: usize,
    /// Bytes per word.
    s: usize,
    /// Layout 1: row-id bytes per entry; layout 2: 0 (the row offset is in the word).
    w: usize,
    /// Layout 2: row-offset bits below each word's suffix; 0 in layout 1.
    d: u32,
    /// Layout 2: `2^d - 1`.
    row_mask: u64,
    /// Layout 2: the smallest row id of the chunk (no `base + row_mask` overflows).
    base: u64,
    /// The words (then layout 1's row ids): reads of a word may look past its end (one
    /// 8-byte load and a mask), so only the value's last bytes need the byte-wise path.
    body: &'a [u8],
}

/// The LE value of up to 8 bytes, byte by byte (no call for a copy of a few bytes).
#[inline]
pub(crate) fn le(bytes: &[u8]) -> u64 {
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

/// `2^bits - 1` for `bits <= 64`.
#[inline]
fn low_mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

impl<'a> ChunkView<'a> {
    /// Checks the header and length against the geometry (suffixes must fit K - P bits; a
    /// layout-2 base plus any offset must be a row id).
    pub(crate) fn parse(bytes: &'a [u8], g: Groups) -> Result<ChunkView<'a>, String> {
        let (view, len) = ChunkView::parse_prefix(bytes, g)?;
        if len != bytes.len() {
            return Err(format!("{} entries need {len} bytes; the chunk value has {}", view.n, bytes.len()));
        }
        Ok(view)
    }

    /// [`Self::parse`] of the chunk at the start of `bytes`, chunks laid end to end (its
    /// length follows from its header), and that length.
    pub(crate) fn parse_prefix(bytes: &'a [u8], g: Groups) -> Result<(ChunkView<'a>, usize), String> {
        if bytes.len() < HEADER_V1 {
            return Err(format!("chunk value of {} bytes is shorter than its header", bytes.len()));
        }
        if bytes[3] != 0 {
            return Err(format!("chunk layout {}: reserved byte {} is not 0", bytes[0], bytes[3]));
        }
        let n = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        if n == 0 || n > GROUP_CHUNK_ENTRIES {
            return Err(format!("{n} entries in a chunk (1..={GROUP_CHUNK_ENTRIES})"));
        }
        let (s, x) = (usize::from(bytes[1]), bytes[2]);
        match bytes[0] {
            LAYOUT_SPLIT => {
                let w = usize::from(x);
                if s != g.suffix_bytes || !(1..=8).contains(&w) {
                    return Err(format!("suffix bytes {s} (expected {}), row bytes {w} (1..=8)", g.suffix_bytes));
                }
                let len = HEADER_V1 + n * (s + w);
                if bytes.len() < len {
                    return Err(format!("{n} entries need {len} bytes; the chunk value has {}", bytes.len()));
                }
                Ok((ChunkView { n, s, w, d: 0, row_mask: 0, base: 0, body: &bytes[HEADER_V1..len] }, len))
            }
            LAYOUT_PACKED => {
                let d = u32::from(x);
                let bits = g.suffix_bits() + d;
                if bits > 64 || s != bits.div_ceil(8) as usize {
                    return Err(format!(
                        "word bytes {s} for {} suffix bits and {d} row-offset bits (expected {}, at most 64 bits)",
                        g.suffix_bits(),
                        bits.div_ceil(8)
                    ));
                }
                let len = HEADER_V2 + n * s;
                if bytes.len() < len {
                    return Err(format!("{n} entries need {len} bytes; the chunk value has {}", bytes.len()));
                }
                let base = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
                let row_mask = low_mask(d);
                if base.checked_add(row_mask).is_none() {
                    return Err(format!("base row {base} plus {d}-bit offsets overflows a row id"));
                }
                Ok((ChunkView { n, s, w: 0, d, row_mask, base, body: &bytes[HEADER_V2..len] }, len))
            }
            other => Err(format!("unknown chunk layout {other} (this build reads 1 and 2)")),
        }
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Asks for the cache line of entry `i`'s suffix ahead of the search.
    #[inline]
    pub(crate) fn prefetch_suffix(&self, i: usize) {
        crate::simd::prefetch(self.body, i * self.s);
    }

    /// The stored word of entry `i < n`.
    #[inline]
    fn word_at(&self, i: usize) -> u64 {
        le_at(self.body, i * self.s, self.s)
    }

    /// The suffix of entry `i < n`.
    #[inline]
    fn suffix_at(&self, i: usize) -> u64 {
        self.word_at(i) >> self.d
    }

    #[inline]
    fn row_at(&self, i: usize) -> u64 {
        if self.w == 0 {
            self.base + (self.word_at(i) & self.row_mask)
        } else {
            le_at(self.body, self.n * self.s + i * self.w, self.w)
        }
    }

    /// Appends every entry as (band key, row id).
    pub(crate) fn decode_into(&self, g: Groups, group: u64, out: &mut Vec<(u64, u64)>) {
        self.decode_with(g, group, out, |key, row| (key, row));
    }

    /// Appends entries `range` (`range.end <= n`) as (band key, row id).
    pub(crate) fn decode_range_into(
        &self,
        g: Groups,
        group: u64,
        range: std::ops::Range<usize>,
        out: &mut Vec<(u64, u64)>,
    ) {
        if self.w == 0 {
            // Layout 2: the words of the range are a chunk of their own under the same base.
            let body = &self.body[range.start * self.s..range.end * self.s];
            ChunkView { n: range.len(), body, ..*self }.decode_into(g, group, out);
        } else {
            out.extend(range.map(|i| (g.key(group, self.suffix_at(i)), self.row_at(i))));
        }
    }

    /// Appends every entry as one word, its band key (32 significant bits, the low 32 clear)
    /// over its row's offset `row - base`. False when a row lies outside `base..base + 2^32`
    /// (the words appended are then meaningless).
    #[inline]
    pub(crate) fn decode_words_into(&self, g: Groups, group: u64, base: u64, out: &mut Vec<u64>) -> bool {
        let mut outside = false;
        self.decode_with(g, group, out, |key, row| {
            let offset = row.wrapping_sub(base);
            outside |= offset > WORD_ROWS;
            word(key, offset)
        });
        !outside
    }

    /// Appends `entry(band key, row id)` of every entry. The common widths take a path with
    /// the widths as constants (a fixed-size load per field): layout 1's 3-byte suffixes at
    /// 32-bit keys with rows below 2^24 or 2^32, layout 2's 39- or 40-bit words of 32-bit keys
    /// in groups of about 128 entries.
    #[inline]
    fn decode_with<T>(&self, g: Groups, group: u64, out: &mut Vec<T>, mut entry: impl FnMut(u64, u64) -> T) {
        out.reserve(self.n);
        match (self.w, self.s) {
            (0, 4) => self.decode_packed::<4, T>(g, group, out, entry),
            (0, 5) => self.decode_packed::<5, T>(g, group, out, entry),
            (0, 6) => self.decode_packed::<6, T>(g, group, out, entry),
            (3, 3) => self.decode_split::<3, 3, T>(g, group, out, entry),
            (4, 3) => self.decode_split::<3, 4, T>(g, group, out, entry),
            (3, 2) => self.decode_split::<2, 3, T>(g, group, out, entry),
            (4, 2) => self.decode_split::<2, 4, T>(g, group, out, entry),
            (3, 4) => self.decode_split::<4, 3, T>(g, group, out, entry),
            (4, 4) => self.decode_split::<4, 4, T>(g, group, out, entry),
            _ => out.extend((0..self.n).map(|i| entry(g.key(group, self.suffix_at(i)), self.row_at(i)))),
        }
    }

    /// [`Self::decode_with`] for layout 1 with `s == S` and `w == W`.
    fn decode_split<const S: usize, const W: usize, T>(
        &self,
        g: Groups,
        group: u64,
        out: &mut Vec<T>,
        mut entry: impl FnMut(u64, u64) -> T,
    ) {
        let (suffixes, rows) = self.body.split_at(self.n * S);
        let base = g.key(group, 0);
        out.extend(
            suffixes
                .chunks_exact(S)
                .zip(rows.chunks_exact(W))
                .map(|(s, r)| entry(base | g.key(0, le_n::<S>(s)), le_n::<W>(r))),
        );
    }

    /// [`Self::decode_with`] for layout 2 with `s == S`.
    fn decode_packed<const S: usize, T>(
        &self,
        g: Groups,
        group: u64,
        out: &mut Vec<T>,
        mut entry: impl FnMut(u64, u64) -> T,
    ) {
        let key_base = g.key(group, 0);
        let (d, mask, base) = (self.d, self.row_mask, self.base);
        out.extend(self.body.chunks_exact(S).map(|bytes| {
            let packed = le_n::<S>(bytes);
            entry(key_base | g.key(0, packed >> d), base + (packed & mask))
        }));
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

/// A group's sorted entries split evenly over the fewest chunks of at most
/// [`GROUP_CHUNK_ENTRIES`] (none for no entries).
pub(crate) fn group_chunks<T>(entries: &[T]) -> std::slice::Chunks<'_, T> {
    let chunks = entries.len().div_ceil(GROUP_CHUNK_ENTRIES).max(1);
    entries.chunks(entries.len().div_ceil(chunks).max(1))
}

/// Encodes one chunk of sorted entries (at most [`GROUP_CHUNK_ENTRIES`], at least one) in
/// place of `out`'s contents.
#[cfg(test)]
pub(crate) fn encode_chunk(g: Groups, entries: &[(u64, u64)], out: &mut Vec<u8>) {
    out.clear();
    append_chunk(g, entries, out);
}

/// Appends the encoding of one chunk to `out`: layout 2 unless its words would exceed 64
/// bits or layout 1 is shorter (a chunk of a few entries over a wide row range).
pub(crate) fn append_chunk(g: Groups, entries: &[(u64, u64)], out: &mut Vec<u8>) {
    let (min_row, max_row) = entries.iter().fold((u64::MAX, 0), |(lo, hi), e| (lo.min(e.1), hi.max(e.1)));
    let d = 64 - (max_row - min_row.min(max_row)).leading_zeros();
    let bits = g.suffix_bits() + d;
    let packed_len = HEADER_V2 + entries.len() * bits.div_ceil(8) as usize;
    if bits <= 64 && packed_len <= HEADER_V1 + entries.len() * (g.suffix_bytes + row_bytes(max_row)) {
        append_packed(g, entries, min_row, d, out);
    } else {
        append_split(g, entries, out);
    }
}

/// The fewest bytes (at least 1) holding `row`.
fn row_bytes(row: u64) -> usize {
    (8 - (row.leading_zeros() / 8) as usize).max(1)
}

/// Appends a layout-2 chunk of `entries`, whose rows lie in `base..base + 2^d` (and K - P + d
/// <= 64). Each word is stored as a whole 8-byte LE word and the next one overwrites its
/// surplus bytes (a fixed-size store per entry); the 8 bytes of slack past the end are cut off.
fn append_packed(g: Groups, entries: &[(u64, u64)], base: u64, d: u32, out: &mut Vec<u8>) {
    let e = (g.suffix_bits() + d).div_ceil(8) as usize;
    let start = out.len();
    let end = start + HEADER_V2 + entries.len() * e;
    out.resize(end + 8, 0);
    out[start..start + 4].copy_from_slice(&[LAYOUT_PACKED, e as u8, d as u8, 0]);
    out[start + 4..start + 8].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    out[start + 8..start + 16].copy_from_slice(&base.to_le_bytes());
    let mut at = start + HEADER_V2;
    // d < 64 (a suffix has at least 8 bits), and the suffix fits above it.
    for &(key, row) in entries {
        let word = g.suffix(key) << d | (row - base);
        out[at..at + 8].copy_from_slice(&word.to_le_bytes());
        at += e;
    }
    out.truncate(end);
}

/// Appends a layout-1 chunk of `entries`, stored as [`append_packed`] stores its words.
pub(crate) fn append_split(g: Groups, entries: &[(u64, u64)], out: &mut Vec<u8>) {
    let w = row_bytes(entries.iter().map(|e| e.1).max().unwrap_or(0));
    let s = g.suffix_bytes;
    let start = out.len();
    let end = start + HEADER_V1 + entries.len() * (s + w);
    out.resize(end + 8, 0);
    out[start..start + 4].copy_from_slice(&[LAYOUT_SPLIT, s as u8, w as u8, 0]);
    out[start + 4..start + 8].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    let mut at = start + HEADER_V1;
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

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
