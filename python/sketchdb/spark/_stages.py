"""The pipeline's Spark stages between the reader and the outputs: sketch, band, verify.
Each stage's per-partition work is a kernel call (see ``_kernels``) inside ``mapInArrow``."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ._kernels import Kernels, SketchSpec

# How buckets above the cap are handled: linked as a star (each member to the smallest id,
# n - 1 candidates instead of n (n - 1) / 2), or dropped (no candidates from them). Both
# are reported (count, largest size, and the buckets themselves in `oversized_buckets/`).
OVERSIZE = ("star", "drop")
# Which candidates a bucket within the cap gives: every pair (the pairs a sketchdb LSH
# self-join verifies) or the star (BigCode's text-dedup; fewer pairs, components may split).
EDGES = ("all", "star")


def sketch(docs: DataFrame, spec: SketchSpec) -> DataFrame:
    """(id, signature, cardinality) for each row of ``docs`` (columns ``__id``, ``__text``);
    signature and cardinality are null where the text is null or has no tokens."""
    spec_json = spec.to_json()
    id_type = docs.schema["__id"].dataType
    schema = T.StructType(
        [
            T.StructField("id", id_type),
            T.StructField("signature", T.BinaryType()),
            T.StructField("cardinality", T.LongType()),
        ]
    )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        k = Kernels(SketchSpec.from_json(spec_json))
        for batch in batches:
            out = k.sketch(batch.column("__text"))
            yield pa.RecordBatch.from_arrays(
                [batch.column("__id"), out.column(0), out.column(1).cast(pa.int64())],
                names=["id", "signature", "cardinality"],
            )

    return docs.select("__id", "__text").mapInArrow(run, schema)


def band_rows(signatures: DataFrame, spec: SketchSpec) -> DataFrame:
    """(id, band, key) for every band of every signature."""
    spec_json = spec.to_json()
    schema = T.StructType(
        [
            T.StructField("id", signatures.schema["id"].dataType),
            T.StructField("band", T.IntegerType()),
            T.StructField("key", T.LongType()),
        ]
    )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        k = Kernels(SketchSpec.from_json(spec_json))
        for batch in batches:
            keys = k.band_keys(batch.column("signature"))
            ids = batch.column("id").take(keys.column("row"))
            yield pa.RecordBatch.from_arrays([ids, keys.column("band"), keys.column("key")], names=["id", "band", "key"])

    return signatures.select("id", "signature").mapInArrow(run, schema)


def buckets(bands: DataFrame) -> DataFrame:
    """(band, key, n, ids) for every bucket of two or more documents, ids ascending."""
    return (
        bands.groupBy("band", "key")
        .agg(F.count("*").alias("n"), F.array_sort(F.collect_list("id")).alias("ids"))
        .where(F.col("n") > 1)
    )


def candidates(bk: DataFrame, cap: int, oversize: str, edges: str) -> DataFrame:
    """Candidate pairs (a, b), a < b, each once, from the buckets ``bk``."""
    if oversize not in OVERSIZE:
        raise ValueError(f"oversize must be one of {OVERSIZE}, not {oversize!r}")
    if edges not in EDGES:
        raise ValueError(f"edges must be one of {EDGES}, not {edges!r}")
    star = F.explode(
        F.expr("transform(slice(ids, 2, n - 1), y -> named_struct('a', ids[0], 'b', y))")
    ).alias("p")
    every = F.explode(
        F.expr(
            "flatten(transform(sequence(0, n - 2), i -> "
            "transform(slice(ids, i + 2, n - i - 1), y -> named_struct('a', ids[i], 'b', y))))"
        )
    ).alias("p")
    within = bk.where(F.col("n") <= cap).select(every if edges == "all" else star)
    parts = [within]
    if oversize == "star":
        parts.append(bk.where(F.col("n") > cap).select(star))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out.select("p.a", "p.b").distinct()


def verify(cands: DataFrame, signatures: DataFrame, spec: SketchSpec) -> DataFrame:
    """(a, b, estimate, lower, upper) of each candidate pair whose estimate reaches the
    threshold (the test ``sketchdb dedup`` applies to a candidate: the point estimate)."""
    spec_json = spec.to_json()
    sa = signatures.select(F.col("id").alias("a"), F.col("signature").alias("sa"), F.col("cardinality").alias("ca"))
    sb = signatures.select(F.col("id").alias("b"), F.col("signature").alias("sb"), F.col("cardinality").alias("cb"))
    joined = cands.join(sa, "a").join(sb, "b").select("a", "b", "sa", "sb", "ca", "cb")
    id_type = signatures.schema["id"].dataType
    schema = T.StructType(
        [T.StructField("a", id_type), T.StructField("b", id_type)]
        + [T.StructField(c, T.DoubleType()) for c in ("estimate", "lower", "upper")]
    )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        k = Kernels(SketchSpec.from_json(spec_json))
        for batch in batches:
            e = k.estimate(batch.column("sa"), batch.column("sb"), batch.column("ca"), batch.column("cb"))
            yield pa.RecordBatch.from_arrays(
                [batch.column("a"), batch.column("b"), e.column(0), e.column(1), e.column(2)],
                names=["a", "b", "estimate", "lower", "upper"],
            )

    return joined.mapInArrow(run, schema).where(F.col("estimate") >= F.lit(spec.threshold))
