//! The word form of merged LSH groups: built from chunk values, searched like them.

use super::*;
use crate::index::lsh::format::{append_chunk, group_chunks};

/// A group's sorted entries: `n` keys drawn from `distinct` suffixes (so buckets repeat),
/// rows spread from `base`.
fn entries(g: Groups, group: u64, n: u64, distinct: u64, base: u64) -> Vec<(u64, u64)> {
    let mut e: Vec<(u64, u64)> = (0..n)
        .map(|i| {
            let s = (i % distinct).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - g.suffix_bits());
            (g.key(group, s), base + i.wrapping_mul(7919) % (n * 3))
        })
        .collect();
    e.sort_unstable();
    e.dedup();
    e
}

fn chunks_of(g: Groups, e: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in group_chunks(e) {
        append_chunk(g, c, &mut out);
    }
    out
}

/// Every suffix of the group (present or not) from every starting guess gives the rows the
/// entries hold under it, in the same order as the chunk search gives them.
#[test]
fn word_rows_equal_the_entries_from_every_guess() {
    for (bits, n, distinct, base) in [(0, 5, 5, 0), (7, 300, 40, 1 << 20), (13, 2500, 2500, 3), (24, 1, 1, 9)] {
        let g = Groups::new(32, bits);
        let group = 0x15 & ((1u64 << bits) - 1);
        let e = entries(g, group, n, distinct, base);
        let words = words_of(&chunks_of(g, &e), g, base).expect("words");
        assert_eq!(words.len(), 8 * e.len());
        let view = WordView::new(&words).expect("view");
        let mut suffixes: Vec<u32> = e.iter().map(|x| g.suffix(x.0) as u32).collect();
        // Absent suffixes: around each present one and at both ends of the range.
        let absent: Vec<u32> = suffixes.iter().flat_map(|&s| [s.wrapping_sub(1), s.wrapping_add(1)]).collect();
        suffixes.extend(absent);
        suffixes.extend([0, g.suffix_mask() as u32]);
        for &s in &suffixes {
            let want: Vec<u64> = e.iter().filter(|x| g.suffix(x.0) == u64::from(s)).map(|x| x.1).collect();
            for guess in [0, view.guess(g, s), e.len() / 2, e.len() - 1, e.len() + 5] {
                let mut got = Vec::new();
                view.rows_of(s, guess, base, &mut got);
                assert_eq!(got, want, "P = {bits}, suffix {s:#x}, guess {guess}");
            }
        }
    }
}

/// The form follows the suffix width and the runs' row span; a row outside the span, or a
/// value of the wrong length, is refused.
#[test]
fn word_form_only_where_it_holds_every_entry() {
    let run = |first_row, end_row| LshRun { id: 0, group_bits: 4, first_row, end_row, entries: 1, sum_sq: 1, dead: 0 };
    let g32 = Groups::new(32, 4);
    assert_eq!(Held::of(g32, &[run(10, 20), run(5, 9)]), Held::Words { base: 5 });
    assert_eq!(Held::of(g32, &[run(7, 7 + (1 << 32))]), Held::Words { base: 7 });
    assert_eq!(Held::of(g32, &[run(7, 8 + (1 << 32))]), Held::Chunks);
    assert_eq!(Held::of(Groups::new(64, 24), &[run(0, 1)]), Held::Chunks, "40-bit suffixes");
    assert_eq!(Held::of(Groups::new(64, 32), &[run(0, 1)]), Held::Words { base: 0 });

    let e = entries(g32, 3, 50, 50, 100);
    let chunks = chunks_of(g32, &e);
    assert!(words_of(&chunks, g32, 101).expect_err("row below base").contains("outside"));
    assert!(words_of(&chunks, g32, 100).is_ok());
    let far = [(g32.key(3, 1), 100), (g32.key(3, 2), 100 + (1 << 32))];
    assert!(words_of(&chunks_of(g32, &far), g32, 100).expect_err("row past 2^32").contains("outside"));
    assert!(words_of(&chunks[..chunks.len() - 1], g32, 100).is_err(), "a cut chunk");
    for len in [0, 4, 12, 15] {
        assert!(WordView::new(&vec![0u8; len]).is_none(), "{len} bytes");
    }
}
