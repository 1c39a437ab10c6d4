//! Parquet through the arrow reader: only the selected columns are decoded (a projection
//! mask over their leaves), in batches of [`ReadOptions::parquet_batch_rows`] rows, so memory
//! is bounded by one batch of those columns. Rows are numbered from 0 across the file.
//!
//! The parquet crate can panic on some malformed files; every call into it is made under
//! `catch_unwind` and a panic becomes a [`ReadError::Parquet`].

use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, downcast_dictionary_array};
use arrow_schema::{DataType, Schema};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::ChunkReader;

use super::check::{Checked, Parse};
use super::error::{ReadError, Reject, RejectReason};
use super::fields::parse_hex_fingerprint;
use super::options::{ReadOptions, Select};
use super::parquet_footer;
use super::record::{Content, Origin, Position, Raw, SourceRecord, Summary};
use super::source::{Item, RecordSource};

pub(crate) fn open_file(path: &Path, opts: &ReadOptions) -> Result<Box<dyn RecordSource>, ReadError> {
    let file = File::open(path).map_err(|source| ReadError::Open { path: path.into(), source })?;
    let len = file.metadata().map_err(|source| ReadError::Open { path: path.into(), source })?.len();
    build(path.into(), file, len, opts)
}

pub(crate) fn open_bytes(
    path: Arc<Path>,
    all: Vec<u8>,
    opts: &ReadOptions,
) -> Result<Box<dyn RecordSource>, ReadError> {
    let len = all.len() as u64;
    build(path, bytes::Bytes::from(all), len, opts)
}

/// Runs `f`, turning a panic inside the parquet crate into an error message.
fn guard<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        format!("the Parquet reader panicked: {}", msg.unwrap_or_default())
    })
}

/// Refuses a footer whose Thrift structure is malformed ([`parquet_footer`]) before the
/// parquet crate walks it; a file without a plain Parquet trailer is left to the crate.
fn check_footer<T: ChunkReader>(input: &T, len: u64) -> Result<(), String> {
    let Some(trailer_at) = len.checked_sub(8) else { return Ok(()) };
    let trailer = input.get_bytes(trailer_at, 8).map_err(|e| e.to_string())?;
    let Ok(trailer) = <[u8; 8]>::try_from(trailer.as_ref()) else { return Ok(()) };
    let Some((start, meta_len)) = parquet_footer::metadata_range(&trailer, len) else { return Ok(()) };
    let meta = input.get_bytes(start, meta_len).map_err(|e| e.to_string())?;
    parquet_footer::check_metadata(&meta)
}

/// A selected column: its path from the top-level field down through structs.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    path: Vec<String>,
}

/// The field at `dotted` (a top-level name spelled with dots is found first), and its type.
fn resolve(schema: &Schema, dotted: &str) -> Option<(Column, DataType)> {
    if let Ok(f) = schema.field_with_name(dotted) {
        return Some((Column { name: dotted.into(), path: vec![dotted.into()] }, f.data_type().clone()));
    }
    let path: Vec<String> = dotted.split('.').map(str::to_owned).collect();
    let (first, rest) = path.split_first()?;
    let mut ty = schema.field_with_name(first).ok()?.data_type().clone();
    for seg in rest {
        let DataType::Struct(children) = &ty else { return None };
        ty = children.find(seg)?.1.data_type().clone();
    }
    Some((Column { name: dotted.into(), path }, ty))
}

/// The type of a column's values: a dictionary-encoded column (pandas categoricals, Arrow
/// dictionary arrays written with their schema) reads as its values' type.
fn values_type(t: &DataType) -> &DataType {
    match t {
        DataType::Dictionary(_, v) => v,
        t => t,
    }
}

fn is_string(t: &DataType) -> bool {
    use DataType::*;
    matches!(values_type(t), Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView)
}

fn is_int(t: &DataType) -> bool {
    matches!(values_type(t), DataType::Int32 | DataType::Int64 | DataType::UInt32 | DataType::UInt64)
}

/// Whether a column of type `t` can hold content of kind `select`, and what it should be.
fn accepts(select: Select, t: &DataType) -> Result<(), &'static str> {
    let ok = match select {
        Select::Tokens => match t {
            DataType::List(f) | DataType::LargeList(f) => {
                matches!(f.data_type(), DataType::UInt64 | DataType::Int64) || is_string(f.data_type())
            }
            _ => false,
        },
        Select::Fingerprint => is_string(t) || is_int(t),
        _ => is_string(t),
    };
    if ok {
        Ok(())
    } else {
        Err(match select {
            Select::Tokens => "a list of u64, i64 or strings",
            Select::Fingerprint => "a string (hex) or an integer",
            _ => "a string or binary column",
        })
    }
}

fn build<T: ChunkReader + 'static>(
    path: Arc<Path>,
    input: T,
    len: u64,
    opts: &ReadOptions,
) -> Result<Box<dyn RecordSource>, ReadError> {
    let at_file = Origin::new(Arc::clone(&path), Position::File);
    let perr = |detail: String| ReadError::Parquet { at: at_file.clone(), detail };
    check_footer(&input, len).map_err(perr)?;
    let builder =
        guard(|| ParquetRecordBatchReaderBuilder::try_new(input)).map_err(perr)?.map_err(|e| perr(e.to_string()))?;
    // The parquet crate asserts (panics) on negative chunk offsets and sizes instead of
    // returning an error; a chunk must lie inside the file.
    for chunk in builder.metadata().row_groups().iter().flat_map(|rg| rg.columns()) {
        let start = chunk.dictionary_page_offset().unwrap_or_else(|| chunk.data_page_offset());
        let inside = u64::try_from(start)
            .ok()
            .zip(u64::try_from(chunk.compressed_size()).ok())
            .is_some_and(|(start, size)| start.checked_add(size).is_some_and(|end| end <= len));
        if !inside {
            return Err(perr(format!("column chunk `{}` lies outside the file", chunk.column_path())));
        }
    }
    let total_rows = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let schema = Arc::clone(builder.schema());
    let available = || schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ");
    let id =
        resolve(&schema, &opts.id_field).or_else(|| if opts.key_fallback() { resolve(&schema, "key") } else { None });
    if let Some((col, ty)) = &id
        && !(is_string(ty) || is_int(ty))
    {
        return Err(ReadError::ColumnType {
            path: path.to_path_buf(),
            column: col.name.clone(),
            found: ty.to_string(),
            expected: "a string or an integer",
        });
    }
    let wanted = [
        (Select::Text, &opts.text_field),
        (Select::Tokens, &opts.tokens_field),
        (Select::Fingerprint, &opts.fingerprint_field),
    ];
    let mut content = Vec::new();
    for (select, name) in wanted {
        if opts.select != Select::AnyOne && opts.select != select {
            continue;
        }
        let Some((col, ty)) = resolve(&schema, name) else { continue };
        accepts(select, &ty).map_err(|expected| ReadError::ColumnType {
            path: path.to_path_buf(),
            column: col.name.clone(),
            found: ty.to_string(),
            expected,
        })?;
        content.push((select, col));
    }
    if content.is_empty() {
        let name = wanted.iter().find(|(s, _)| *s == opts.select).map_or(&opts.text_field, |(_, n)| *n);
        return Err(ReadError::MissingColumn {
            path: path.to_path_buf(),
            column: name.clone(),
            available: available(),
        });
    }
    let selected: Vec<String> =
        content.iter().map(|(_, c)| c.path.join(".")).chain(id.iter().map(|(c, _)| c.path.join("."))).collect();
    let leaves: Vec<usize> = {
        let descr = builder.parquet_schema();
        (0..descr.num_columns())
            .filter(|&i| {
                let p = descr.column(i).path().string();
                selected.iter().any(|s| p == *s || p.starts_with(&format!("{s}.")))
            })
            .collect()
    };
    let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves);
    let batch_rows = opts.parquet_batch_rows.max(1);
    let reader = guard(move || builder.with_projection(mask).with_batch_size(batch_rows).build())
        .map_err(perr)?
        .map_err(|e| perr(e.to_string()))?;
    let bytes = Arc::new(AtomicU64::new(0));
    let rows = Rows {
        path,
        reader,
        batch: None,
        next: 0,
        row: 0,
        total_rows,
        len,
        bytes: Arc::clone(&bytes),
        id: id.map(|(c, _)| c),
        content,
        lossy: opts.lossy_utf8,
        keep_raw: opts.keep_raw,
    };
    Ok(Box::new(Checked::new(rows, opts, bytes)))
}

struct Rows {
    path: Arc<Path>,
    reader: ParquetRecordBatchReader,
    batch: Option<RecordBatch>,
    /// The next row of `batch`.
    next: usize,
    /// The next row of the file.
    row: u64,
    total_rows: u64,
    len: u64,
    bytes: Arc<AtomicU64>,
    id: Option<Column>,
    content: Vec<(Select, Column)>,
    lossy: bool,
    keep_raw: bool,
}

/// One value of a column.
enum Cell<'a> {
    Null,
    Str(&'a str),
    Bytes(&'a [u8]),
    Int(i128),
    List(ArrayRef),
}

/// The value at row `i` of `a`; a type the reader does not accept reads as `Null` (types were
/// checked at open).
fn cell(a: &dyn Array, i: usize) -> Cell<'_> {
    if a.is_null(i) {
        return Cell::Null;
    }
    if let DataType::Dictionary(..) = a.data_type() {
        // The value its key names (a key past the values, which the reader's checks should
        // exclude, reads as `Null` rather than panicking).
        return downcast_dictionary_array!(
            a => match a.key(i) {
                Some(key) if key < a.values().len() => cell(a.values().as_ref(), key),
                _ => Cell::Null,
            },
            _ => Cell::Null
        );
    }
    if let Some(s) = a.as_string_opt::<i32>() {
        Cell::Str(s.value(i))
    } else if let Some(s) = a.as_string_opt::<i64>() {
        Cell::Str(s.value(i))
    } else if let Some(s) = a.as_string_view_opt() {
        Cell::Str(s.value(i))
    } else if let Some(b) = a.as_binary_opt::<i32>() {
        Cell::Bytes(b.value(i))
    } else if let Some(b) = a.as_binary_opt::<i64>() {
        Cell::Bytes(b.value(i))
    } else if let Some(b) = a.as_binary_view_opt() {
        Cell::Bytes(b.value(i))
    } else if let Some(v) = a.as_primitive_opt::<Int64Type>() {
        Cell::Int(i128::from(v.value(i)))
    } else if let Some(v) = a.as_primitive_opt::<UInt64Type>() {
        Cell::Int(i128::from(v.value(i)))
    } else if let Some(v) = a.as_primitive_opt::<Int32Type>() {
        Cell::Int(i128::from(v.value(i)))
    } else if let Some(v) = a.as_primitive_opt::<UInt32Type>() {
        Cell::Int(i128::from(v.value(i)))
    } else if let Some(l) = a.as_list_opt::<i32>() {
        Cell::List(l.value(i))
    } else if let Some(l) = a.as_list_opt::<i64>() {
        Cell::List(l.value(i))
    } else {
        Cell::Null
    }
}

impl Rows {
    /// The array of `col` in `batch`, and its struct ancestors (a null ancestor nulls the row).
    fn arrays<'b>(batch: &'b RecordBatch, col: &Column) -> Vec<&'b dyn Array> {
        let mut out: Vec<&dyn Array> = Vec::new();
        let Some((first, rest)) = col.path.split_first() else { return out };
        let Some(mut cur) = batch.column_by_name(first).map(|a| a.as_ref()) else { return out };
        out.push(cur);
        for seg in rest {
            let Some(next) = cur.as_struct_opt().and_then(|s| s.column_by_name(seg)) else { return Vec::new() };
            cur = next.as_ref();
            out.push(cur);
        }
        out
    }

    fn value<'b>(batch: &'b RecordBatch, col: &Column, i: usize) -> Cell<'b> {
        let arrays = Self::arrays(batch, col);
        match arrays.split_last() {
            Some((leaf, parents)) if parents.iter().all(|p| !p.is_null(i)) => cell(*leaf, i),
            _ => Cell::Null,
        }
    }

    fn text(&self, field: &str, c: Cell<'_>) -> Result<String, RejectReason> {
        match c {
            Cell::Str(s) => Ok(s.to_owned()),
            Cell::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) => Ok(s.to_owned()),
                Err(_) if self.lossy => Ok(String::from_utf8_lossy(b).into_owned()),
                Err(e) => Err(RejectReason::InvalidUtf8 { offset: e.valid_up_to() }),
            },
            Cell::Null => Err(RejectReason::MissingField(field.to_owned())),
            Cell::Int(_) => Err(RejectReason::NotAString { field: field.to_owned(), found: "number" }),
            Cell::List(_) => Err(RejectReason::NotAString { field: field.to_owned(), found: "array" }),
        }
    }

    fn content(&self, select: Select, field: &str, c: Cell<'_>) -> Result<Content, RejectReason> {
        match (select, c) {
            (Select::Tokens, Cell::List(items)) => {
                let bad = || RejectReason::BadTokens(field.to_owned());
                if let Some(v) = items.as_primitive_opt::<UInt64Type>() {
                    (0..v.len())
                        .map(|i| if v.is_null(i) { Err(bad()) } else { Ok(v.value(i)) })
                        .collect::<Result<_, _>>()
                        .map(Content::Tokens)
                } else if let Some(v) = items.as_primitive_opt::<Int64Type>() {
                    (0..v.len())
                        .map(|i| if v.is_null(i) { Err(bad()) } else { u64::try_from(v.value(i)).map_err(|_| bad()) })
                        .collect::<Result<_, _>>()
                        .map(Content::Tokens)
                } else {
                    (0..items.len())
                        .map(|i| self.text(field, cell(items.as_ref(), i)).map_err(|_| bad()))
                        .collect::<Result<_, _>>()
                        .map(Content::Terms)
                }
            }
            (Select::Tokens, Cell::Null) | (Select::Fingerprint, Cell::Null) => {
                Err(RejectReason::MissingField(field.to_owned()))
            }
            (Select::Tokens, _) => Err(RejectReason::BadTokens(field.to_owned())),
            (Select::Fingerprint, Cell::Int(v)) => {
                u64::try_from(v).map(|v| Content::Fingerprint(u128::from(v))).map_err(|_| {
                    RejectReason::BadFingerprint { field: field.to_owned(), detail: format!("{v} is not a u64") }
                })
            }
            (Select::Fingerprint, c) => {
                let s = self.text(field, c)?;
                parse_hex_fingerprint(&s)
                    .map(Content::Fingerprint)
                    .map_err(|detail| RejectReason::BadFingerprint { field: field.to_owned(), detail })
            }
            (_, c) => self.text(field, c).map(Content::Text),
        }
    }

    fn parse(&self, batch: &RecordBatch, i: usize, origin: &Origin) -> Result<SourceRecord, RejectReason> {
        let id = match &self.id {
            Some(col) => match Self::value(batch, col, i) {
                Cell::Null => None,
                Cell::Int(v) => Some(v.to_string()),
                c => Some(self.text(&col.name, c)?),
            },
            None => None,
        };
        let present: Vec<&(Select, Column)> = if self.content.len() == 1 {
            self.content.iter().collect()
        } else {
            self.content.iter().filter(|(_, c)| !matches!(Self::value(batch, c, i), Cell::Null)).collect()
        };
        let (select, col) = match present.as_slice() {
            [one] => *one,
            [] => {
                return Err(RejectReason::MissingField(
                    self.content.first().map(|(_, c)| c.name.clone()).unwrap_or_default(),
                ));
            }
            _ => {
                let names: Vec<&str> = self.content.iter().map(|(_, c)| c.name.as_str()).collect();
                return Err(RejectReason::AmbiguousContent(names.join("`, `")));
            }
        };
        let content = self.content(*select, &col.name, Self::value(batch, col, i))?;
        let key = id.clone().unwrap_or_else(|| origin.to_string());
        let raw = if self.keep_raw { Raw::ParquetRow(self.row) } else { Raw::None };
        Ok(SourceRecord { origin: origin.clone(), id, key, content, raw })
    }
}

impl Parse for Rows {
    fn next_parsed(&mut self, _: &mut Summary) -> Option<Item> {
        loop {
            if let Some(batch) = self.batch.take()
                && self.next < batch.num_rows()
            {
                let origin = Origin::new(Arc::clone(&self.path), Position::Row(self.row));
                let parsed = self.parse(&batch, self.next, &origin);
                self.next += 1;
                self.row += 1;
                self.batch = Some(batch);
                if self.total_rows > 0 {
                    let done =
                        u128::from(self.row.min(self.total_rows)) * u128::from(self.len) / u128::from(self.total_rows);
                    self.bytes.store(u64::try_from(done).unwrap_or(self.len), Ordering::Relaxed);
                }
                return Some(Ok(parsed.map_err(|r| Reject::new(origin, r))));
            }
            let at = Origin::new(Arc::clone(&self.path), Position::Row(self.row));
            match guard(|| self.reader.next()) {
                Err(detail) => return Some(Err(ReadError::Parquet { at, detail })),
                Ok(None) => return None,
                Ok(Some(Err(e))) => return Some(Err(ReadError::Parquet { at, detail: e.to_string() })),
                Ok(Some(Ok(batch))) => {
                    self.batch = Some(batch);
                    self.next = 0;
                }
            }
        }
    }
}
