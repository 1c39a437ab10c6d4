//! Storage-level verification: every page's crc and header, every row's decoding, the
//! key <-> row id maps against the tombstones, the collection counters, and redb's own
//! integrity check. Each problem names its collection, page and row.

use std::fmt;

use redb::ReadableTable;

use super::catalog::CollectionInfo;
use super::error::{StorageError, contain, contain_any};
use super::reader::open;
use super::store::Store;
use super::tables::{COLLECTION_NAMES, KEYS, PAGES, ROW_DEAD_NAME, ROW_DEAD64_NAME};
use crate::codec::record::decode_row;

/// One problem found by `verify`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The collection's name, if the problem belongs to one.
    pub collection: Option<String>,
    /// The page (its first row id, the page's key), if the problem is in a page.
    pub page: Option<u64>,
    /// The row id, if the problem is about one row.
    pub row: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.collection {
            Some(c) => write!(f, "collection `{c}`")?,
            None => write!(f, "database")?,
        }
        if let Some(p) = self.page {
            write!(f, ", page {p}")?;
        }
        if let Some(r) = self.row {
            write!(f, ", row {r}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// What `verify` checked and found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Every problem found; empty when the database is sound.
    pub problems: Vec<Problem>,
    /// Collections checked.
    pub collections: u64,
    /// Pages checked.
    pub pages: u64,
    /// Rows (live and deleted) checked.
    pub rows: u64,
    /// Whether redb's integrity check passed without needing a repair (`false` when it did
    /// not run).
    pub engine_integrity_ok: bool,
    /// Whether redb's integrity check ran: it does not on a read-only handle, because it
    /// repairs and commits.
    pub engine_integrity_checked: bool,
}

impl VerifyReport {
    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

struct Ctx<'a> {
    report: &'a mut VerifyReport,
    name: String,
}

impl Ctx<'_> {
    fn problem(&mut self, page: Option<u64>, row: Option<u64>, detail: impl ToString) {
        self.report.problems.push(Problem {
            collection: Some(self.name.clone()),
            page,
            row,
            detail: detail.to_string(),
        });
    }
}

impl Store {
    /// Runs every check. Errors only when the checks cannot run (I/O, or
    /// [`StorageError::Busy`] for redb's check while transactions are alive); damage is
    /// reported as problems.
    pub(crate) fn verify(&self) -> Result<VerifyReport, StorageError> {
        contain("verify", || {
            let mut report = VerifyReport::default();
            match self.collections() {
                Ok(collections) => {
                    report.collections = collections.len() as u64;
                    for info in &collections {
                        let mut ctx = Ctx { report: &mut report, name: info.def.name.clone() };
                        if let Err(e) = contain("verify collection", || self.verify_collection(info, &mut ctx)) {
                            if !e.is_corruption() && !matches!(e, StorageError::UnknownCollection { .. }) {
                                return Err(e);
                            }
                            ctx.problem(None, None, e);
                        }
                    }
                    match contain("verify names", || self.verify_names(&collections, &mut report)) {
                        Ok(()) => {}
                        Err(e) if e.is_corruption() => report.problems.push(Problem {
                            collection: None,
                            page: None,
                            row: None,
                            detail: e.to_string(),
                        }),
                        Err(e) => return Err(e),
                    }
                }
                Err(e) if e.is_corruption() => {
                    report.problems.push(Problem { collection: None, page: None, row: None, detail: e.to_string() })
                }
                Err(e) => return Err(e),
            }
            // redb's check repairs and commits, so a read-only handle skips it: the checks
            // above still read every entry of every sketchdb table.
            if self.is_read_only() {
                return Ok(report);
            }
            report.engine_integrity_checked = true;
            let mut db = self.exclusive("verify")?;
            match contain_any("integrity check", || db.check_integrity()) {
                Err(e) => {
                    report.problems.push(Problem { collection: None, page: None, row: None, detail: e.to_string() })
                }
                Ok(r) => match r {
                    Ok(true) => report.engine_integrity_ok = true,
                    Ok(false) => report.problems.push(Problem {
                        collection: None,
                        page: None,
                        row: None,
                        detail: "redb's integrity check found damage and repaired the file".into(),
                    }),
                    Err(redb::DatabaseError::TransactionInProgress) => return Err(StorageError::Busy { op: "verify" }),
                    Err(e) => report.problems.push(Problem {
                        collection: None,
                        page: None,
                        row: None,
                        detail: format!("redb's integrity check failed: {e}"),
                    }),
                },
            }
            Ok(report)
        })
    }

    fn verify_collection(&self, info: &CollectionInfo, ctx: &mut Ctx<'_>) -> Result<(), StorageError> {
        let snap = self.snapshot()?;
        let state = snap.state(info)?;
        let mut live_rows = 0u64;
        let mut damaged = 0u64;
        // Live rows and their stored cardinalities, for the shingle table's check.
        let mut cards: Vec<(u64, Option<u64>)> = Vec::new();
        let (mut deleted, mut prev_end) = (0u64, 0u64);
        let id = info.def.id;
        // One snapshot for state, pages and keys: a commit in between cannot fake a problem.
        // A database with no records yet has no pages or keys tables.
        let pages = open(snap.txn(), PAGES)?;
        let keys = open(snap.txn(), KEYS)?;
        let dead = snap.dead_tables()?;
        let mut page_starts = std::collections::BTreeSet::new();
        // The row ranges of the pages that parse, in row order.
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let page_range = match &pages {
            Some(p) => Some(p.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan pages"))?),
            None => None,
        };
        for entry in page_range.into_iter().flatten() {
            let (k, v) = entry.map_err(StorageError::backend("scan pages"))?;
            let page = k.value().1;
            ctx.report.pages += 1;
            page_starts.insert(page);
            let view = match crate::codec::page::PageView::parse_expected(v.value(), &info.spec, page) {
                Ok(view) => view,
                Err(e) => {
                    ctx.problem(Some(page), None, format!("page fails its checks: {e}"));
                    damaged += 1;
                    continue;
                }
            };
            ranges.push((view.first_row(), view.end_row()));
            // The page's removed rows in the side tables, checked against the page; a bad
            // entry is reported and the page's own tombstones are used.
            let words = match dead.page_words(id, page, view.row_count(), |e| super::rules::corrupt_page(info, page)(e))
            {
                Ok(w) => w,
                Err(e) => {
                    let tables = format!("{ROW_DEAD64_NAME} / {ROW_DEAD_NAME}");
                    ctx.problem(Some(page), None, format!("removed-rows entry ({tables}) fails its checks: {e}"));
                    None
                }
            };
            let words = match words {
                Some(w) => match crate::codec::page::check_dead_words(&view, &w) {
                    Ok(()) => Some(w),
                    Err(e) => {
                        let tables = format!("{ROW_DEAD64_NAME} / {ROW_DEAD_NAME}");
                        ctx.problem(Some(page), None, format!("removed rows of this page ({tables}): {e}"));
                        None
                    }
                },
                None => None,
            };
            let view = match &words {
                Some(w) => view.with_dead(w),
                None => view,
            };
            if view.first_row() < prev_end {
                ctx.problem(Some(page), Some(view.first_row()), "page overlaps the previous page's rows");
            }
            if view.end_row() > state.next_row {
                ctx.problem(
                    Some(page),
                    Some(view.end_row() - 1),
                    format!("row at or past next_row {}", state.next_row),
                );
            }
            prev_end = view.end_row();
            for i in 0..view.row_count() {
                let row = view.first_row() + i as u64;
                ctx.report.rows += 1;
                if view.is_deleted(i) {
                    deleted += 1;
                    continue;
                }
                live_rows += 1;
                if info.shingles {
                    cards.push((row, view.cardinality(i)));
                }
                if let Err(e) = decode_row(&view, i, &info.def.params) {
                    ctx.problem(Some(page), Some(row), format!("row does not decode: {e}"));
                }
                let mapped = match &keys {
                    Some(keys) => keys.get((id, view.key(i))).map_err(StorageError::backend("read key"))?,
                    None => None,
                };
                match mapped {
                    Some(g) if g.value() == row => {}
                    Some(g) => ctx.problem(Some(page), Some(row), format!("its key maps to row {} instead", g.value())),
                    None => ctx.problem(Some(page), Some(row), "its key is missing from sketchdb.keys"),
                }
            }
        }
        // Every listed removed row lies in a stored page (pages that do not parse are
        // reported above and leave their rows unknown).
        if let Some(t) = dead.chunks.as_ref().filter(|_| damaged == 0) {
            for entry in t.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan removed rows"))? {
                let (k, v) = entry.map_err(StorageError::backend("scan removed rows"))?;
                let (chunk, word) = (k.value().1, v.value());
                if word == 0 {
                    ctx.problem(None, Some(chunk << 6), format!("{ROW_DEAD64_NAME}: chunk {chunk} lists no row"));
                }
                let mut bits = word;
                while bits != 0 {
                    let row = (chunk << 6) + u64::from(bits.trailing_zeros());
                    bits &= bits - 1;
                    let at = ranges.partition_point(|r| r.0 <= row);
                    if at.checked_sub(1).is_none_or(|i| row >= ranges[i].1) {
                        ctx.problem(
                            None,
                            Some(row),
                            format!("{ROW_DEAD64_NAME} lists row {row}, which no stored page holds"),
                        );
                    }
                }
            }
        }
        // Every version-2 entry belongs to a stored page.
        if let Some(t) = &dead.legacy {
            for entry in t.range((id, 0u64)..=(id, u64::MAX)).map_err(StorageError::backend("scan removed rows"))? {
                let (k, _) = entry.map_err(StorageError::backend("scan removed rows"))?;
                let page = k.value().1;
                if !page_starts.contains(&page) {
                    ctx.problem(
                        Some(page),
                        None,
                        format!("{ROW_DEAD_NAME} has an entry for page {page}, which is not stored"),
                    );
                }
            }
        }
        if damaged > 0 {
            // The counts below would only restate the damaged pages.
            return Ok(());
        }
        // Every live row's key maps back to it; equal counts make the maps a bijection.
        let empty: &[u8] = &[];
        let mut key_entries = 0u64;
        let key_range = match &keys {
            Some(k) => {
                Some(k.range((id, empty)..(id.saturating_add(1), empty)).map_err(StorageError::backend("scan keys"))?)
            }
            None => None,
        };
        for entry in key_range.into_iter().flatten() {
            entry.map_err(StorageError::backend("scan keys"))?;
            key_entries += 1;
        }
        if key_entries != live_rows {
            ctx.problem(None, None, format!("sketchdb.keys has {key_entries} keys for {live_rows} live rows"));
        }
        if state.live != live_rows {
            ctx.problem(None, None, format!("state says {} live rows, pages hold {live_rows}", state.live));
        }
        if state.deleted != deleted {
            ctx.problem(None, None, format!("state says {} deleted rows, pages hold {deleted}", state.deleted));
        }
        if info.shingles {
            verify_shingles(&snap, &cards, ctx, info)?;
        }
        Ok(())
    }

    fn verify_names(&self, collections: &[CollectionInfo], report: &mut VerifyReport) -> Result<(), StorageError> {
        let db = self.begin_read()?;
        let names = match db.open_table(COLLECTION_NAMES) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(StorageError::backend("open table")(e)),
        };
        let count = names.iter().map_err(StorageError::backend("scan names"))?.count();
        for info in collections {
            let got = names.get(info.def.name.as_str()).map_err(StorageError::backend("read name"))?.map(|g| g.value());
            if got != Some(info.def.id) {
                report.problems.push(Problem {
                    collection: Some(info.def.name.clone()),
                    page: None,
                    row: None,
                    detail: format!("sketchdb.collection_names maps the name to {got:?}, not id {}", info.def.id),
                });
            }
        }
        if count != collections.len() {
            report.problems.push(Problem {
                collection: None,
                page: None,
                row: None,
                detail: format!("{count} collection names for {} collections", collections.len()),
            });
        }
        Ok(())
    }
}

/// A collection that keeps shingles has exactly one decodable set per live row (`cards`,
/// ascending), and a set's size equals the cardinality its signature stores.
fn verify_shingles(
    snap: &super::reader::ReadSnapshot,
    cards: &[(u64, Option<u64>)],
    ctx: &mut Ctx<'_>,
    info: &CollectionInfo,
) -> Result<(), StorageError> {
    let mut next = 0usize;
    snap.for_each_shingle_entry(info, |row, bytes| {
        while next < cards.len() && cards[next].0 < row {
            ctx.problem(None, Some(cards[next].0), "live row has no entry in sketchdb.shingles");
            next += 1;
        }
        if next == cards.len() || cards[next].0 != row {
            ctx.problem(None, Some(row), "sketchdb.shingles has an entry for a row that is not live");
            return Ok(());
        }
        match crate::codec::shingles::decode_shingles(bytes) {
            Err(e) => ctx.problem(None, Some(row), format!("shingle set does not decode: {e}")),
            Ok(set) => {
                if let Some(card) = cards[next].1.filter(|&c| c != set.len() as u64) {
                    ctx.problem(
                        None,
                        Some(row),
                        format!("shingle set has {} hashes, the signature says {card}", set.len()),
                    );
                }
            }
        }
        next += 1;
        Ok(())
    })?;
    for &(row, _) in &cards[next..] {
        ctx.problem(None, Some(row), "live row has no entry in sketchdb.shingles");
    }
    Ok(())
}
