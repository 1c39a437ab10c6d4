//! Parquet through arrow: typed rows, rows of an input file copied with every column (and
//! optionally the added dedup columns), and one column's values read back for `--keep FIELD`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;

use super::sink::{Added, AddedNames, BATCH_ROWS, Cell, ColType, Column, FieldValue, RowSink, Target};
use crate::error::CliError;

fn perr(path: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::Io(format!("{}: {e}", path.display()))
}

fn writer(target: &Target, schema: SchemaRef) -> Result<ArrowWriter<File>, CliError> {
    let file = File::create(&target.path).map_err(|e| CliError::io(&target.path, e))?;
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_max_row_group_row_count(Some(64 * BATCH_ROWS))
        .build();
    ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| perr(&target.path, e))
}

fn data_type(ty: ColType) -> DataType {
    match ty {
        ColType::Bool => DataType::Boolean,
        ColType::UInt => DataType::UInt64,
        ColType::Float => DataType::Float64,
        ColType::Str => DataType::Utf8,
    }
}

/// The builder of one typed column.
enum Builder {
    Bool(BooleanBuilder),
    UInt(UInt64Builder),
    Float(Float64Builder),
    Str(StringBuilder),
}

impl Builder {
    fn new(ty: ColType) -> Builder {
        match ty {
            ColType::Bool => Builder::Bool(BooleanBuilder::new()),
            ColType::UInt => Builder::UInt(UInt64Builder::new()),
            ColType::Float => Builder::Float(Float64Builder::new()),
            ColType::Str => Builder::Str(StringBuilder::new()),
        }
    }

    /// Appends `cell`; a cell of another type than the column's is a null.
    fn push(&mut self, cell: Cell) {
        match (self, cell) {
            (Builder::Bool(b), Cell::Bool(v)) => b.append_value(v),
            (Builder::UInt(b), Cell::UInt(v)) => b.append_value(v),
            (Builder::Float(b), Cell::Float(v)) => b.append_value(v),
            (Builder::Str(b), Cell::Str(v)) => b.append_value(v),
            (Builder::Bool(b), _) => b.append_null(),
            (Builder::UInt(b), _) => b.append_null(),
            (Builder::Float(b), _) => b.append_null(),
            (Builder::Str(b), _) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::UInt(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
        }
    }
}

/// Typed rows as Parquet, a record batch every [`BATCH_ROWS`] rows.
pub struct ParquetRows {
    w: ArrowWriter<File>,
    path: PathBuf,
    schema: SchemaRef,
    builders: Vec<Builder>,
    pending: usize,
}

impl ParquetRows {
    pub fn create(target: &Target, columns: Vec<Column>) -> Result<ParquetRows, CliError> {
        let schema: SchemaRef = Arc::new(Schema::new(
            columns.iter().map(|c| Field::new(&c.name, data_type(c.ty), true)).collect::<Vec<_>>(),
        ));
        let builders = columns.iter().map(|c| Builder::new(c.ty)).collect();
        Ok(ParquetRows {
            w: writer(target, Arc::clone(&schema))?,
            path: target.path.clone(),
            schema,
            builders,
            pending: 0,
        })
    }

    fn flush(&mut self) -> Result<(), CliError> {
        if self.pending == 0 {
            return Ok(());
        }
        let arrays = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), arrays).map_err(|e| perr(&self.path, e))?;
        self.pending = 0;
        self.w.write(&batch).map_err(|e| perr(&self.path, e))
    }
}

impl RowSink for ParquetRows {
    fn row(&mut self, cells: Vec<Cell>) -> Result<(), CliError> {
        for (b, c) in self.builders.iter_mut().zip(cells) {
            b.push(c);
        }
        self.pending += 1;
        if self.pending >= BATCH_ROWS { self.flush() } else { Ok(()) }
    }

    fn finish(mut self: Box<Self>) -> Result<(), CliError> {
        self.flush()?;
        let path = self.path.clone();
        self.w.close().map(|_| ()).map_err(|e| perr(&path, e))
    }
}

fn open_batches(input: &Path) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, CliError> {
    let file = File::open(input).map_err(|e| CliError::io(input, e))?;
    ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(BATCH_ROWS).build())
        .map_err(|e| perr(input, e))
}

/// The added columns' arrays for `rows`.
fn added_arrays(rows: &[&Added]) -> Vec<ArrayRef> {
    let mut cluster = UInt64Builder::new();
    let mut keeper = StringBuilder::new();
    let mut kept = BooleanBuilder::new();
    let mut status = StringBuilder::new();
    for a in rows {
        cluster.append_option(a.cluster);
        keeper.append_value(&a.keeper);
        kept.append_value(a.kept());
        status.append_value(a.status.name());
    }
    vec![Arc::new(cluster.finish()), Arc::new(keeper.finish()), Arc::new(kept.finish()), Arc::new(status.finish())]
}

/// Copies the rows of the Parquet file `input` to `target` with every column unchanged: row
/// `i` is written when `rows[i]` is `Some` (rows past the end of `rows` are not), followed by
/// the added columns when `names` is given. Returns the rows written.
pub fn copy_rows(
    input: &Path,
    target: &Target,
    rows: &[Option<Added>],
    names: Option<&AddedNames>,
) -> Result<u64, CliError> {
    let reader = open_batches(input)?;
    let in_schema = reader.schema();
    let mut fields: Vec<Field> = in_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    if let Some(n) = names {
        for name in n.all() {
            if in_schema.field_with_name(name).is_ok() {
                return Err(CliError::Usage(format!(
                    "--cluster-column: {} already has a column `{name}`; choose another name",
                    input.display()
                )));
            }
        }
        fields.push(Field::new(&n.cluster, DataType::UInt64, true));
        fields.push(Field::new(&n.keeper, DataType::Utf8, false));
        fields.push(Field::new(&n.kept, DataType::Boolean, false));
        fields.push(Field::new(&n.status, DataType::Utf8, false));
    }
    let out_schema: SchemaRef = Arc::new(Schema::new_with_metadata(fields, in_schema.metadata().clone()));
    let mut w = writer(target, Arc::clone(&out_schema))?;
    let (mut first, mut written) = (0usize, 0u64);
    for batch in reader {
        let batch = batch.map_err(|e| perr(input, e))?;
        let n = batch.num_rows();
        // Consecutive rows to write become one slice of the batch.
        let mut i = 0;
        while i < n {
            let wanted = |j: usize| rows.get(first + j).is_some_and(Option::is_some);
            if !wanted(i) {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && wanted(i) {
                i += 1;
            }
            let slice = batch.slice(start, i - start);
            let mut columns: Vec<ArrayRef> = slice.columns().to_vec();
            if names.is_some() {
                let added: Vec<&Added> = rows[first + start..first + i].iter().flatten().collect();
                columns.extend(added_arrays(&added));
            }
            let out = RecordBatch::try_new(Arc::clone(&out_schema), columns).map_err(|e| perr(input, e))?;
            w.write(&out).map_err(|e| perr(&target.path, e))?;
            written += (i - start) as u64;
        }
        first += n;
    }
    w.close().map_err(|e| perr(&target.path, e))?;
    Ok(written)
}

/// The values of the top-level column `name` of the Parquet file `input`, by row: numbers
/// and text; nulls are [`FieldValue::Missing`].
pub fn column_values(input: &Path, name: &str) -> Result<Vec<FieldValue>, CliError> {
    let file = File::open(input).map_err(|e| CliError::io(input, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| perr(input, e))?;
    let Ok(index) = builder.schema().index_of(name) else {
        let names: Vec<&str> = builder.schema().fields().iter().map(|f| f.name().as_str()).collect();
        return Err(CliError::Usage(format!(
            "--keep {name}: {} has no column `{name}` (columns: {})",
            input.display(),
            names.join(", ")
        )));
    };
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), [index]);
    let reader = builder.with_projection(mask).with_batch_size(BATCH_ROWS).build().map_err(|e| perr(input, e))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| perr(input, e))?;
        values_of(batch.column(0), &mut out).map_err(|ty| {
            CliError::Usage(format!(
                "--keep {name}: column `{name}` of {} has type {ty}, expected a number or text",
                input.display()
            ))
        })?;
    }
    Ok(out)
}

macro_rules! numbers {
    ($a:expr, $out:expr, $t:ty) => {{
        let p = $a.as_primitive::<$t>();
        $out.extend(
            (0..p.len()).map(|i| if p.is_null(i) { FieldValue::Missing } else { FieldValue::Num(p.value(i) as f64) }),
        );
    }};
}

fn values_of(a: &ArrayRef, out: &mut Vec<FieldValue>) -> Result<(), DataType> {
    let text = |v: Option<&str>| v.map_or(FieldValue::Missing, |s| FieldValue::Text(s.to_string()));
    match a.data_type() {
        DataType::Int8 => numbers!(a, out, Int8Type),
        DataType::Int16 => numbers!(a, out, Int16Type),
        DataType::Int32 => numbers!(a, out, Int32Type),
        DataType::Int64 => numbers!(a, out, Int64Type),
        DataType::UInt8 => numbers!(a, out, UInt8Type),
        DataType::UInt16 => numbers!(a, out, UInt16Type),
        DataType::UInt32 => numbers!(a, out, UInt32Type),
        DataType::UInt64 => numbers!(a, out, UInt64Type),
        DataType::Float32 => numbers!(a, out, Float32Type),
        DataType::Float64 => numbers!(a, out, Float64Type),
        DataType::Utf8 => out.extend(a.as_string::<i32>().iter().map(text)),
        DataType::LargeUtf8 => out.extend(a.as_string::<i64>().iter().map(text)),
        DataType::Utf8View => out.extend(a.as_string_view().iter().map(text)),
        other => return Err(other.clone()),
    }
    Ok(())
}
