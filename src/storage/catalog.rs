//! Collections: create, look up, list and drop.
//!
//! A collection is a definition (immutable: name, sketch parameters, page capacity, the db
//! layer's settings), a state record (next row id, live and deleted counts) and its rows in
//! the `keys`, `rows` and `pages` tables, all keyed by its u32 id. Ids are never reused, so
//! a handle to a dropped collection can never reach a newer one of the same name.

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, WriteTransaction};

use super::MAX_COLLECTION_NAME_LEN;
use super::error::{StorageError, contain};
use super::index_tables::IndexTxn;
use super::store::Store;
use super::tables::{
    CATALOG_KEY, COLLECTION_NAMES, COLLECTION_STATE, COLLECTION_STATE_NAME, COLLECTIONS, COLLECTIONS_NAME, KEYS, META,
    META_NAME, PAGES, SHINGLES, SHINGLES_LAYOUT, SHINGLES_MARKER_ROW, SHINGLES_NAME,
};
use crate::codec::layout::ColumnLayout;
use crate::codec::meta::{CatalogRecord, CollectionDef, CollectionState};
use crate::codec::page::{PageSpec, page_len};
use crate::sketch::params::SketchParams;

/// A collection's definition with its page spec, as the storage layer uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CollectionInfo {
    /// The persisted definition.
    pub def: CollectionDef,
    /// The page spec derived from it.
    pub spec: PageSpec,
    /// Whether the collection keeps each record's exact shingle set (`storage::shingles`).
    pub shingles: bool,
}

impl CollectionInfo {
    pub(crate) fn from_def(def: CollectionDef) -> CollectionInfo {
        let spec =
            PageSpec { collection_id: def.id, layout: ColumnLayout::for_params(&def.params), capacity: def.capacity };
        CollectionInfo { def, spec, shingles: false }
    }
    /// The collection's name.
    pub(crate) fn name(&self) -> &str {
        &self.def.name
    }
}

/// The target size of a full page value: a power of two, so that redb's buddy allocator
/// (which allocates a large value's leaf as a power-of-two run of 4 KiB pages) wastes little.
pub(crate) const PAGE_TARGET_BYTES: usize = 64 * 1024;
/// Bytes left for redb's leaf header and the entry's key and offsets.
pub(crate) const LEAF_OVERHEAD: usize = 64;

/// Rows per page for records of `record_width` bytes: the most rows whose page value (with
/// one-byte keys) plus redb's leaf overhead fits in [`PAGE_TARGET_BYTES`]. Writers also stop
/// a page early when its keys would push it past the target (see [`page_fits`]).
pub(crate) fn choose_capacity(record_width: usize) -> u32 {
    let mut rows = (PAGE_TARGET_BYTES / record_width.max(1)).max(1);
    while rows > 1 && page_len(rows, record_width, rows) + LEAF_OVERHEAD > PAGE_TARGET_BYTES {
        rows -= 1;
    }
    u32::try_from(rows).unwrap_or(u32::MAX)
}

/// Whether a page of `len` bytes stays within [`PAGE_TARGET_BYTES`] with redb's overhead.
pub(crate) fn page_fits(len: usize) -> bool {
    len + LEAF_OVERHEAD <= PAGE_TARGET_BYTES
}

fn validate_name(name: &str) -> Result<(), StorageError> {
    let bad = |reason| Err(StorageError::InvalidCollectionName { name: name.to_string(), reason });
    if name.is_empty() {
        return bad("a collection name is 1 to 255 bytes of UTF-8");
    }
    if name.len() > MAX_COLLECTION_NAME_LEN {
        return bad("longer than 255 bytes");
    }
    Ok(())
}

/// Decodes a collection definition value.
pub(crate) fn decode_def(id: u32, bytes: &[u8]) -> Result<CollectionInfo, StorageError> {
    let def = CollectionDef::decode(bytes).map_err(|source| StorageError::CorruptMeta {
        table: COLLECTIONS_NAME,
        key: id.to_string(),
        source: Box::new(source),
    })?;
    if def.id != id {
        return Err(StorageError::CorruptMeta {
            table: COLLECTIONS_NAME,
            key: id.to_string(),
            source: Box::new(crate::codec::error::CodecError::field("collection definition", "id", def.id, id)),
        });
    }
    Ok(CollectionInfo::from_def(def))
}

/// Reads a collection's state from an open `collection_state` table; a missing state means
/// the collection was dropped.
pub(crate) fn read_state(
    table: &impl ReadableTable<u32, &'static [u8]>,
    info: &CollectionInfo,
) -> Result<CollectionState, StorageError> {
    let id = info.def.id;
    let Some(v) = table.get(id).map_err(StorageError::backend("read collection state"))? else {
        return Err(StorageError::UnknownCollection { name: info.def.name.clone() });
    };
    CollectionState::decode(v.value()).map_err(|source| StorageError::CorruptMeta {
        table: COLLECTION_STATE_NAME,
        key: id.to_string(),
        source: Box::new(source),
    })
}

impl Store {
    /// Creates a collection; fails if the name is taken.
    /// `init` runs inside the creating transaction (the index layer writes the index
    /// definition there, so a collection never exists without its index).
    pub(crate) fn create_collection<E: From<StorageError>>(
        &self,
        name: &str,
        params: SketchParams,
        settings: Vec<u8>,
        shingles: bool,
        init: &mut dyn FnMut(&IndexTxn<'_>, &CollectionInfo) -> Result<(), E>,
    ) -> Result<CollectionInfo, E> {
        contain("create collection", || self.create_collection_unguarded(name, params, settings, shingles, init))
    }

    /// The body of [`Self::create_collection`], run inside [`contain`] (redb panics become errors).
    fn create_collection_unguarded<E: From<StorageError>>(
        &self,
        name: &str,
        params: SketchParams,
        settings: Vec<u8>,
        shingles: bool,
        init: &mut dyn FnMut(&IndexTxn<'_>, &CollectionInfo) -> Result<(), E>,
    ) -> Result<CollectionInfo, E> {
        validate_name(name)?;
        params.validate().map_err(|source| StorageError::Incompatible { collection: name.to_string(), source })?;
        let txn = self.begin_write("create collection")?;
        let info = {
            let mut names = txn.open_table(COLLECTION_NAMES).map_err(StorageError::backend("open table"))?;
            if names.get(name).map_err(StorageError::backend("read collection name"))?.is_some() {
                return Err(StorageError::CollectionExists { name: name.to_string() }.into());
            }
            let mut meta = txn.open_table(META).map_err(StorageError::backend("open table"))?;
            let meta_err = |source| StorageError::CorruptMeta {
                table: META_NAME,
                key: CATALOG_KEY.into(),
                source: Box::new(source),
            };
            let mut catalog = match meta.get(CATALOG_KEY).map_err(StorageError::backend("read catalog"))? {
                Some(v) => CatalogRecord::decode(v.value()).map_err(meta_err)?,
                None => CatalogRecord { next_collection_id: 1 },
            };
            let id = catalog.next_collection_id;
            catalog.next_collection_id = id.checked_add(1).ok_or_else(|| StorageError::InvalidCollectionName {
                name: name.to_string(),
                reason: "collection ids are exhausted",
            })?;
            let layout = ColumnLayout::for_params(&params);
            let def = CollectionDef {
                id,
                name: name.to_string(),
                params,
                capacity: choose_capacity(layout.record_width()),
                settings,
            };
            let def_err = |source| StorageError::CorruptMeta {
                table: COLLECTIONS_NAME,
                key: id.to_string(),
                source: Box::new(source),
            };
            let def_bytes = def.encode().map_err(def_err)?;
            let state_bytes = CollectionState::default().encode().map_err(def_err)?;
            let cat_bytes = catalog.encode().map_err(meta_err)?;
            let w = StorageError::backend("write collection");
            meta.insert(CATALOG_KEY, cat_bytes.as_slice()).map_err(w)?;
            names.insert(name, id).map_err(StorageError::backend("write collection"))?;
            txn.open_table(COLLECTIONS)
                .map_err(StorageError::backend("open table"))?
                .insert(id, def_bytes.as_slice())
                .map_err(StorageError::backend("write collection"))?;
            txn.open_table(COLLECTION_STATE)
                .map_err(StorageError::backend("open table"))?
                .insert(id, state_bytes.as_slice())
                .map_err(StorageError::backend("write collection"))?;
            if shingles {
                mark_shingles(&txn, id)?;
            }
            CollectionInfo { shingles, ..CollectionInfo::from_def(def) }
        };
        init(&IndexTxn(&txn), &info)?;
        txn.commit().map_err(StorageError::backend("commit"))?;
        Ok(info)
    }

    /// Looks a collection up by name.
    pub(crate) fn collection(&self, name: &str) -> Result<CollectionInfo, StorageError> {
        contain("open collection", || self.collection_unguarded(name))
    }

    /// The body of [`Self::collection`], run inside [`contain`] (redb panics become errors).
    fn collection_unguarded(&self, name: &str) -> Result<CollectionInfo, StorageError> {
        let txn = self.begin_read()?;
        let unknown = || StorageError::UnknownCollection { name: name.to_string() };
        let names = match txn.open_table(COLLECTION_NAMES) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Err(unknown()),
            Err(e) => return Err(StorageError::backend("open table")(e)),
        };
        let id = names.get(name).map_err(StorageError::backend("read collection name"))?.ok_or_else(unknown)?.value();
        let defs = txn.open_table(COLLECTIONS).map_err(StorageError::backend("open table"))?;
        let v = defs.get(id).map_err(StorageError::backend("read collection"))?.ok_or_else(unknown)?;
        let info = decode_def(id, v.value())?;
        Ok(CollectionInfo { shingles: keeps_shingles(&txn, id, name)?, ..info })
    }

    /// Every collection, ordered by name.
    pub(crate) fn collections(&self) -> Result<Vec<CollectionInfo>, StorageError> {
        contain("list collections", || self.collections_unguarded())
    }

    /// The body of [`Self::collections`], run inside [`contain`] (redb panics become errors).
    fn collections_unguarded(&self) -> Result<Vec<CollectionInfo>, StorageError> {
        let txn = self.begin_read()?;
        let defs = match txn.open_table(COLLECTIONS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(vec![]),
            Err(e) => return Err(StorageError::backend("open table")(e)),
        };
        let mut out = Vec::with_capacity(defs.len().map_err(StorageError::backend("count collections"))? as usize);
        for entry in defs.iter().map_err(StorageError::backend("list collections"))? {
            let (k, v) = entry.map_err(StorageError::backend("list collections"))?;
            let info = decode_def(k.value(), v.value())?;
            let shingles = keeps_shingles(&txn, info.def.id, &info.def.name)?;
            out.push(CollectionInfo { shingles, ..info });
        }
        out.sort_by(|a, b| a.def.name.cmp(&b.def.name));
        Ok(out)
    }

    /// Drops a collection and every record of it, in one transaction.
    pub(crate) fn drop_collection(&self, name: &str) -> Result<(), StorageError> {
        contain("drop collection", || self.drop_collection_unguarded(name))
    }

    /// The body of [`Self::drop_collection`], run inside [`contain`] (redb panics become errors).
    fn drop_collection_unguarded(&self, name: &str) -> Result<(), StorageError> {
        let txn = self.begin_write("drop collection")?;
        {
            let mut names = txn.open_table(COLLECTION_NAMES).map_err(StorageError::backend("open table"))?;
            let Some(id) = names.remove(name).map_err(StorageError::backend("drop collection"))?.map(|g| g.value())
            else {
                return Err(StorageError::UnknownCollection { name: name.to_string() });
            };
            let rm = StorageError::backend("drop collection");
            txn.open_table(COLLECTIONS).map_err(StorageError::backend("open table"))?.remove(id).map_err(rm)?;
            txn.open_table(COLLECTION_STATE)
                .map_err(StorageError::backend("open table"))?
                .remove(id)
                .map_err(StorageError::backend("drop collection"))?;
            let empty: &[u8] = &[];
            let mut keys = txn.open_table(KEYS).map_err(StorageError::backend("open table"))?;
            keys.retain_in((id, empty)..(id.saturating_add(1), empty), |_, _| false)
                .map_err(StorageError::backend("drop collection"))?;
            let mut pages = txn.open_table(PAGES).map_err(StorageError::backend("open table"))?;
            pages
                .retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false)
                .map_err(StorageError::backend("drop collection"))?;
            IndexTxn(&txn).drop_index_entries(id)?;
            drop_shingles(&txn, id)?;
            super::content_hash::drop_collection(&txn, id)?;
            super::dead::drop_collection(&txn, id)?;
        }
        txn.commit().map_err(StorageError::backend("commit"))
    }
}

/// Rewrites a collection's definition with new db-layer settings (same id, name, params
/// and capacity), inside `txn`; returns the new info.
pub(crate) fn rewrite_settings(
    txn: &IndexTxn<'_>,
    info: &CollectionInfo,
    settings: Vec<u8>,
) -> Result<CollectionInfo, StorageError> {
    let def = CollectionDef { settings, ..info.def.clone() };
    let bytes = def.encode().map_err(|source| StorageError::CorruptMeta {
        table: COLLECTIONS_NAME,
        key: def.id.to_string(),
        source: Box::new(source),
    })?;
    txn.0
        .open_table(COLLECTIONS)
        .map_err(StorageError::backend("open table"))?
        .insert(def.id, bytes.as_slice())
        .map_err(StorageError::backend("write collection"))?;
    Ok(CollectionInfo { shingles: info.shingles, ..CollectionInfo::from_def(def) })
}

/// Whether collection `id` keeps shingles (its marker is present), read in `txn`. A marker
/// of another version is refused: this build cannot read that collection's shingle sets.
fn keeps_shingles(txn: &ReadTransaction, id: u32, name: &str) -> Result<bool, StorageError> {
    let table = match txn.open_table(SHINGLES) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(false),
        Err(e) => return Err(StorageError::backend("open table")(e)),
    };
    let Some(v) = table.get((id, SHINGLES_MARKER_ROW)).map_err(StorageError::backend("read shingle marker"))? else {
        return Ok(false);
    };
    match v.value() {
        [SHINGLES_LAYOUT] => Ok(true),
        other => Err(StorageError::Inconsistent {
            collection: name.to_string(),
            row: None,
            detail: format!("{SHINGLES_NAME}: marker {other:02x?}, this build reads version {SHINGLES_LAYOUT}"),
        }),
    }
}

/// Writes collection `id`'s marker (at creation, in the creating transaction).
fn mark_shingles(txn: &WriteTransaction, id: u32) -> Result<(), StorageError> {
    let mut table = txn.open_table(SHINGLES).map_err(StorageError::backend("open table"))?;
    table
        .insert((id, SHINGLES_MARKER_ROW), [SHINGLES_LAYOUT].as_slice())
        .map_err(StorageError::backend("write shingles"))?;
    Ok(())
}

/// Removes every entry of collection `id`, marker included (drop); a file without the table
/// is left without it.
fn drop_shingles(txn: &WriteTransaction, id: u32) -> Result<(), StorageError> {
    let exists = txn
        .list_tables()
        .map_err(StorageError::backend("list tables"))?
        .any(|t| redb::TableHandle::name(&t) == SHINGLES_NAME);
    if !exists {
        return Ok(());
    }
    let mut table = txn.open_table(SHINGLES).map_err(StorageError::backend("open table"))?;
    table
        .retain_in((id, 0)..=(id, SHINGLES_MARKER_ROW), |_, _| false)
        .map_err(StorageError::backend("drop shingles"))?;
    Ok(())
}
