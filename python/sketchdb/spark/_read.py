"""Reading the corpus with Spark: Parquet or JSONL (plain or gzip), a stable id per document,
and the checks that turn bad input into a :class:`SparkDedupError` naming what and where."""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ._errors import SparkDedupError

# Ways to derive an id when the input has none.
DERIVE_IDS = ("content", "file-row")

_PARQUET = (".parquet", ".pq")
_JSONL = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")


def detect_format(paths: Sequence[str]) -> str:
    """``parquet`` or ``json`` from the paths' names (a folder: from the files in it)."""
    names: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            names += [f for f in sorted(os.listdir(p)) if not f.startswith((".", "_"))]
        else:
            names.append(p)
    kinds = {("parquet" if n.endswith(_PARQUET) else "json" if n.endswith(_JSONL) else None) for n in names}
    if None in kinds or len(kinds) != 1:
        raise SparkDedupError(
            f"cannot tell the input format of {list(paths)}: name Parquet files .parquet and JSON lines "
            ".jsonl/.jsonl.gz (one format per run), or pass input_format"
        )
    return kinds.pop()


def _col(name: str):
    """The top-level column ``name``, quoted, so dots and backticks in it are part of the name."""
    return F.col("`" + name.replace("`", "``") + "`")


def resolve_column(schema: T.StructType, name: str):
    """The column ``name`` names in ``schema`` and its type, or ``None``: a top-level column of
    that exact name first (names with dots included), else a dotted path through struct
    fields (``meta.body``), as the CLI's ``--text-field`` reads Parquet."""
    top = {f.name: f for f in schema.fields}
    if name in top:
        return _col(name), top[name].dataType
    first, *rest = name.split(".")
    if first not in top or not rest:
        return None
    col, ty = _col(first), top[first].dataType
    for seg in rest:
        sub = {f.name: f for f in ty.fields} if isinstance(ty, T.StructType) else {}
        if seg not in sub:
            return None
        col, ty = col.getField(seg), sub[seg].dataType
    return col, ty


def read_documents(
    spark: SparkSession,
    paths: Union[str, Sequence[str]],
    *,
    text_column: str = "text",
    id_column: Optional[str] = "id",
    derive_id: Optional[str] = None,
    input_format: Optional[str] = None,
) -> tuple[DataFrame, dict]:
    """The documents as a DataFrame with every input column plus ``__id`` (the document id,
    string or integer) and ``__text`` (the text, string).

    The id is ``id_column`` when given; otherwise it is derived (``derive_id``):
    ``content`` = SHA-256 hex of the row's every column as JSON (rows identical in every
    column get one id and are collapsed into one, counted in the returned info as
    ``identical_rows``), or ``file-row`` = ``file name:row`` (Parquet only: Spark's row index
    within its file, which does not depend on partitioning). Never
    ``monotonically_increasing_id``, which changes with the partitioning.
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    for p in paths:
        if not os.path.exists(p) and "://" not in p:
            raise SparkDedupError(f"input {p}: no such file or folder")
    fmt = input_format or detect_format(paths)
    if fmt == "parquet":
        df = spark.read.parquet(*paths)
    elif fmt == "json":
        df = spark.read.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "__corrupt").json(paths)
    else:
        raise SparkDedupError(f"input format {fmt!r}: use parquet or json")
    info: dict = {"format": fmt, "identical_rows": 0}
    fields = {f.name: f for f in df.schema.fields}
    text = resolve_column(df.schema, text_column)
    if text is None:
        raise SparkDedupError(
            f"input {', '.join(paths)} has no text column {text_column!r} (its columns: {', '.join(sorted(fields))}; "
            "a struct's field as struct.field); pass --text-column"
        )
    if not isinstance(text[1], T.StringType):
        raise SparkDedupError(
            f"input {', '.join(paths)}: column {text_column!r} is {text[1].simpleString()}, not a string"
        )
    if "__corrupt" in fields:
        info["corrupt_lines"] = "__corrupt"
    if id_column:
        ident = resolve_column(df.schema, id_column)
        if ident is None:
            raise SparkDedupError(
                f"input {', '.join(paths)} has no id column {id_column!r} (its columns: {', '.join(sorted(fields))}); "
                f"pass --id-column, or --derive-id {'|'.join(DERIVE_IDS)}"
            )
        idt = ident[1]
        if not isinstance(idt, (T.StringType, T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
            raise SparkDedupError(
                f"input {', '.join(paths)}: id column {id_column!r} is {idt.simpleString()}; ids must be strings or integers"
            )
        df = df.withColumn("__id", ident[0])
    elif derive_id == "content":
        cols = [c for c in df.columns if c != "__corrupt"]
        df = df.withColumn("__id", F.sha2(F.to_json(F.struct(*[_col(c) for c in cols])), 256))
        before = df.count()
        df = df.dropDuplicates(["__id"])
        info["identical_rows"] = before - df.count()
    elif derive_id == "file-row":
        if fmt != "parquet":
            raise SparkDedupError("--derive-id file-row needs Parquet input (row indexes within a file); use content")
        df = df.withColumn(
            "__id", F.concat_ws(":", F.col("_metadata.file_name"), F.col("_metadata.row_index").cast("string"))
        )
    else:
        raise SparkDedupError(f"no id column and no way to derive one: pass --id-column or --derive-id {'|'.join(DERIVE_IDS)}")
    return df.withColumn("__text", text[0]), info


def check_unique_ids(docs: DataFrame, where: str, limit: int = 5) -> None:
    """Raises :class:`SparkDedupError` naming up to ``limit`` repeated ids and their count."""
    dup = docs.where(F.col("__id").isNotNull()).groupBy("__id").count().where(F.col("count") > 1)
    examples = dup.orderBy("__id").limit(limit).collect()
    if examples:
        total = dup.count()
        shown = ", ".join(f"{r['__id']!r} ({r['count']} rows)" for r in examples)
        raise SparkDedupError(
            f"input {where}: {total} document ids occur more than once, for example {shown}; ids must be unique "
            "(fix the input, choose another --id-column, or use --derive-id)"
        )
