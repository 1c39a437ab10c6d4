"""``dedup``: the whole Spark pipeline, from the input files to the outputs in one folder.

Outputs under ``output`` (all Parquet folders unless named otherwise):

* ``signatures/``: ``(id, signature)``, one row per sketched document (the bytes a collection
  stores, as ``sketchdb.arrow.sketch`` makes them); with
  ``spec.json`` beside it, what :func:`sketchdb.spark.import_signatures` loads;
* ``pairs/``: the verified pairs ``(a, b, estimate, lower, upper)``, ``a < b``;
* ``clusters/``: ``(id, cluster)`` for every sketched document, ``cluster`` the smallest id of
  its component (a document without near-duplicates is its own cluster);
* ``removed/``: ``(id, cluster)`` of the documents that are not their cluster's smallest id;
* ``kept/``: the kept documents with every input column (rejected rows are not in it);
* ``rejected/``: ``(id, reason)`` of rows that could not be sketched (null id or text, no
  tokens, a malformed JSON line);
* ``oversized_buckets/``: ``(band, key, n, ids)`` of the buckets above the cap, whatever was
  done with them;
* ``summary.json``: counts, rounds, seconds and shuffle bytes per stage.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from typing import Optional, Sequence, Union

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import _stages
from ._errors import SparkDedupError
from ._kernels import SIGNATURE_METADATA_KEY, SketchSpec
from ._metrics import StageClock
from ._read import check_unique_ids, read_documents
from .components import connected_components

# The reasons a row is rejected (the `reason` column of `rejected/`).
REASONS = ("malformed JSON line", "null id", "null text", "no tokens")


@dataclasses.dataclass(frozen=True)
class DedupOptions:
    """Settings of :func:`dedup` besides the sketch spec."""

    text_column: str = "text"
    id_column: Optional[str] = "id"
    derive_id: Optional[str] = None
    input_format: Optional[str] = None
    # Buckets larger than this are handled by `oversize` (see `_stages.OVERSIZE`).
    bucket_cap: int = 1000
    oversize: str = "star"
    edges: str = "all"
    # Rows that cannot be sketched: "skip" (reported in rejected/ and the summary) or "fail".
    on_bad: str = "skip"
    # Input partitions (the sketch stage's parallelism) and shuffle partitions; None: Spark's.
    partitions: Optional[int] = None
    write_kept: bool = True


def dedup(
    spark: SparkSession,
    inputs: Union[str, Sequence[str]],
    output: str,
    spec: SketchSpec = SketchSpec(),
    options: DedupOptions = DedupOptions(),
    overwrite: bool = False,
) -> dict:
    """Deduplicates ``inputs`` into ``output`` (see the module docs); returns the summary."""
    if options.on_bad not in ("skip", "fail"):
        raise SparkDedupError(f"on_bad must be skip or fail, not {options.on_bad!r}")
    if options.bucket_cap < 2:
        raise SparkDedupError(f"bucket_cap must be at least 2, not {options.bucket_cap}")
    if not 0.0 < spec.threshold <= 1.0:
        raise SparkDedupError(f"threshold must be in (0, 1], not {spec.threshold}")
    if os.path.exists(output):
        if not overwrite:
            raise SparkDedupError(f"output {output} exists; remove it or pass overwrite")
        shutil.rmtree(output)
    spec = spec.with_banding()
    clock = StageClock(spark)
    start = time.perf_counter()
    sc = spark.sparkContext
    work = os.path.join(output, "_work")
    sc.setCheckpointDir(os.path.join(work, "checkpoints"))
    if options.partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(options.partitions))
    where = inputs if isinstance(inputs, str) else ", ".join(inputs)
    summary: dict = {"input": where, "spec": dataclasses.asdict(spec), "options": dataclasses.asdict(options)}

    with clock.stage("read+sketch"):
        docs, info = read_documents(
            spark,
            inputs,
            text_column=options.text_column,
            id_column=options.id_column,
            derive_id=options.derive_id,
            input_format=options.input_format,
        )
        reason = F.when(F.col("__id").isNull(), F.lit("null id")).when(F.col("__text").isNull(), F.lit("null text"))
        if "corrupt_lines" in info:
            reason = F.when(F.col("__corrupt").isNotNull(), F.lit("malformed JSON line")).otherwise(reason)
        docs = docs.withColumn("__reason", reason)
        # Only the id and the text travel to the sketch kernel (and through the repartition).
        readable = docs.where(F.col("__reason").isNull()).select("__id", "__text")
        if options.partitions:
            readable = readable.repartition(options.partitions)
        sketched = _stages.sketch(readable, spec).persist(StorageLevel.MEMORY_AND_DISK)
        check_unique_ids(docs.where(F.col("__id").isNotNull()).select("__id"), where)
        rejected = docs.where(F.col("__reason").isNotNull()).select(F.col("__id").alias("id"), F.col("__reason").alias("reason"))
        rejected = rejected.unionByName(
            sketched.where(F.col("signature").isNull()).select("id", F.lit("no tokens").alias("reason"))
        )
        rejected.write.parquet(os.path.join(output, "rejected"))
        rejected = spark.read.parquet(os.path.join(output, "rejected"))
        by_reason = {r["reason"]: r["count"] for r in rejected.groupBy("reason").count().collect()}
        if by_reason and options.on_bad == "fail":
            examples = ", ".join(f"{r['id']!r}: {r['reason']}" for r in rejected.orderBy("id").limit(5).collect())
            raise SparkDedupError(f"input {where}: {sum(by_reason.values())} rows cannot be sketched ({examples})")
        # The configuration travels in the footer of every part file (Spark writes a
        # column's metadata into its schema there), so `sketchdb import` needs nothing else.
        meta = {SIGNATURE_METADATA_KEY: spec.signature_metadata()}
        good = sketched.where(F.col("signature").isNotNull()).select(
            "id", F.col("signature").alias("signature", metadata=meta)
        )
        good.write.parquet(os.path.join(output, "signatures"))
        sketched.unpersist()
        with open(os.path.join(output, "spec.json"), "w") as f:
            f.write(spec.to_json())
    signatures = spark.read.parquet(os.path.join(output, "signatures"))
    summary["documents"] = signatures.count()
    summary["rejected"] = by_reason
    summary["identical_rows"] = info["identical_rows"]

    with clock.stage("band"):
        bk = _stages.buckets(_stages.band_rows(signatures, spec)).persist(StorageLevel.MEMORY_AND_DISK)
        big = bk.where(F.col("n") > options.bucket_cap)
        big.write.parquet(os.path.join(output, "oversized_buckets"))
        oversized = spark.read.parquet(os.path.join(output, "oversized_buckets"))
        stats = oversized.agg(F.count("*").alias("c"), F.max("n").alias("m"), F.sum("n").alias("s")).collect()[0]
        summary["buckets"] = bk.count()
        summary["oversized_buckets"] = {
            "count": stats["c"],
            "largest": stats["m"],
            "members": stats["s"] or 0,
            "cap": options.bucket_cap,
            "handled": options.oversize,
        }
        cands = _stages.candidates(bk, options.bucket_cap, options.oversize, options.edges)
        cands.write.parquet(os.path.join(work, "candidates"))
        bk.unpersist()
    cands = spark.read.parquet(os.path.join(work, "candidates"))
    summary["candidate_pairs"] = cands.count()

    with clock.stage("verify"):
        _stages.verify(cands, signatures, spec).write.parquet(os.path.join(output, "pairs"))
    pairs = spark.read.parquet(os.path.join(output, "pairs"))
    summary["verified_pairs"] = pairs.count()

    with clock.stage("components"):
        cc = connected_components(pairs, "a", "b")
        assignment = cc.assignment
        assignment.write.parquet(os.path.join(work, "assignment"))
    assignment = spark.read.parquet(os.path.join(work, "assignment"))
    summary["rounds"] = cc.rounds

    with clock.stage("write"):
        clusters = signatures.select("id").join(assignment, "id", "left").select(
            "id", F.coalesce(F.col("cluster"), F.col("id")).alias("cluster")
        )
        clusters.write.parquet(os.path.join(output, "clusters"))
        removed = assignment.where(F.col("id") != F.col("cluster"))
        removed.write.parquet(os.path.join(output, "removed"))
        removed = spark.read.parquet(os.path.join(output, "removed"))
        if options.write_kept:
            drop = [c for c in ("__text", "__corrupt", "__reason") if c in docs.columns]
            kept = (
                docs.where(F.col("__reason").isNull())
                .join(removed.select(F.col("id").alias("__id")), "__id", "left_anti")
                .join(rejected.where(F.col("id").isNotNull()).select(F.col("id").alias("__id")), "__id", "left_anti")
                .drop(*drop)
            )
            if options.id_column:
                kept = kept.drop("__id")
            else:
                kept = kept.withColumnRenamed("__id", "sketchdb_id")
            kept.write.parquet(os.path.join(output, "kept"))
        summary["removed"] = removed.count()
        summary["clusters"] = assignment.select("cluster").distinct().count()
        summary["kept"] = summary["documents"] - summary["removed"]
    shutil.rmtree(work, ignore_errors=True)
    summary["seconds"] = {name: round(clock.seconds[name], 3) for name in clock.order}
    summary["seconds"]["total"] = round(time.perf_counter() - start, 3)
    summary["documents_per_second"] = round(summary["documents"] / max(summary["seconds"]["total"], 1e-9), 1)
    summary["shuffle"] = clock.shuffle_bytes()
    summary["partitions"] = options.partitions
    with open(os.path.join(output, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    return summary

