"""The pipeline's result as a sketchdb file, and new batches checked against one.

* :func:`import_signatures`: the ``signatures/`` Parquet of a run (and its ``spec.json``)
  loaded into a collection with the same sketches and LSH banding, all records in one
  durable ``insert_many`` (one commit, the index built with it), so the deduplicated corpus
  answers queries for new documents;
* :func:`dedup_against`: a new batch sketched on Spark and queried, on the executors, against
  an existing sketchdb file opened read-only there (shipped with ``SparkContext.addFile``,
  so executors on other machines get their own copy).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from typing import Iterator, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sketchdb

from . import _stages
from ._errors import SparkDedupError
from ._kernels import Kernels, SketchSpec
from ._read import check_unique_ids, read_documents


def load_spec(run: str) -> SketchSpec:
    """The sketch spec a run wrote beside its outputs (``spec.json``)."""
    path = os.path.join(run, "spec.json")
    if not os.path.exists(path):
        raise SparkDedupError(f"{run}: no spec.json (not the output folder of sketchdb.spark dedup)")
    with open(path) as f:
        return SketchSpec.from_json(f.read())


def import_signatures(
    run: str,
    db_path: Union[str, os.PathLike],
    collection: str,
    *,
    only_kept: bool = False,
) -> int:
    """Loads the signatures of the run folder ``run`` into a new collection ``collection`` of
    the sketchdb file ``db_path`` (created when missing), with the run's sketch parameters
    and banding; ``only_kept`` loads only the documents that were kept. Returns the number
    of records inserted. Raises ``SparkDedupError`` if the collection exists."""
    spec = load_spec(run)
    table = pq.read_table(os.path.join(run, "signatures"), columns=["id", "signature"])
    if only_kept:
        removed = pq.read_table(os.path.join(run, "removed"), columns=["id"]).column("id").to_pylist()
        gone = set(removed)
        mask = pa.array([i not in gone for i in table.column("id").to_pylist()])
        table = table.filter(mask)
    keys = [str(i) for i in table.column("id").to_pylist()]
    with sketchdb.open(db_path) as db:
        if collection in db:
            raise SparkDedupError(f"{db_path}: collection {collection!r} exists; choose another name")
        coll = db.create_collection(collection, **spec.collection_kwargs())
        sigs = table.column("signature").cast(pa.binary(Kernels(spec).width))
        return coll.insert_many(keys, signatures=sigs, strict=True).written


def dedup_against(
    spark: SparkSession,
    inputs: Union[str, Sequence[str]],
    db_path: str,
    collection: str,
    output: str,
    *,
    threshold: Optional[float] = None,
    text_column: str = "text",
    id_column: Optional[str] = "id",
    derive_id: Optional[str] = None,
) -> dict:
    """Queries every document of ``inputs`` against the collection ``collection`` of the
    sketchdb file ``db_path`` on the executors (read-only) and writes ``output/matches``
    (``id, match, estimate, lower, upper``: every stored record with estimate >= threshold)
    and ``output/new`` (the ids with no match). Returns counts."""
    if not os.path.exists(db_path):
        raise SparkDedupError(f"{db_path}: no such sketchdb file")
    with sketchdb.open(db_path, read_only=True) as db:
        if collection not in db:
            raise SparkDedupError(f"{db_path}: no collection {collection!r} (it has: {', '.join(db.collections())})")
        kw = db[collection].spec()
    spec = SketchSpec(**kw, threshold=threshold if threshold is not None else 0.8).with_banding()
    docs, _ = read_documents(spark, inputs, text_column=text_column, id_column=id_column, derive_id=derive_id)
    where = inputs if isinstance(inputs, str) else ", ".join(inputs)
    check_unique_ids(docs.where(F.col("__id").isNotNull()).select("__id"), where)
    # Shipped under a name of its own: a Spark session refuses a second file of a name it
    # already holds from another path (two runs against `old.sketchdb` files of different
    # folders). Executors fetch it while the job runs, so the hard link (or copy) lives until
    # the end.
    stage = tempfile.mkdtemp(prefix="sketchdb-serve-")
    try:
        return _match(spark, docs, spec, db_path, stage, collection, output)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _match(spark, docs, spec: SketchSpec, db_path: str, stage: str, collection: str, output: str) -> dict:
    """:func:`dedup_against` once the batch is read: ships ``db_path`` through ``stage``,
    sketches, matches, writes and counts."""
    name = f"{uuid.uuid4().hex}-{os.path.basename(db_path)}"
    try:
        os.link(db_path, os.path.join(stage, name))
    except OSError:  # another file system, or no hard links there
        shutil.copyfile(db_path, os.path.join(stage, name))
    spark.sparkContext.addFile(os.path.join(stage, name))
    sketched = _stages.sketch(docs.where(F.col("__id").isNotNull() & F.col("__text").isNotNull()), spec).where(
        F.col("signature").isNotNull()
    )
    spec_json, thr = spec.to_json(), spec.threshold
    schema = T.StructType(
        [
            T.StructField("id", sketched.schema["id"].dataType),
            T.StructField("match", T.StringType()),
            T.StructField("estimate", T.DoubleType()),
            T.StructField("lower", T.DoubleType()),
            T.StructField("upper", T.DoubleType()),
        ]
    )

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import SparkFiles

        k = Kernels(SketchSpec.from_json(spec_json))
        with sketchdb.open(SparkFiles.get(name), read_only=True) as db:
            coll = db[collection]
            for batch in batches:
                cols: dict[str, list] = {f: [] for f in ("id", "match", "estimate", "lower", "upper")}
                ids = batch.column("id").to_pylist()
                for i, s in zip(ids, batch.column("signature").to_pylist()):
                    for h in coll.query(sketch=k.frozen(s), threshold=thr):
                        key = h.key.decode() if isinstance(h.key, bytes) else h.key
                        for f, v in zip(cols, (i, key, h.estimate, h.lower, h.upper)):
                            cols[f].append(v)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(cols["id"], batch.column("id").type)]
                    + [pa.array(cols[f]) for f in ("match",)]
                    + [pa.array(cols[f], pa.float64()) for f in ("estimate", "lower", "upper")],
                    names=list(cols),
                )

    matches = sketched.select("id", "signature").mapInArrow(run, schema)
    matches.write.mode("overwrite").parquet(os.path.join(output, "matches"))
    matches = spark.read.parquet(os.path.join(output, "matches"))
    new = sketched.select("id").join(matches.select("id").distinct(), "id", "left_anti")
    new.write.mode("overwrite").parquet(os.path.join(output, "new"))
    out = {
        "documents": spark.read.parquet(os.path.join(output, "new")).count() + matches.select("id").distinct().count(),
        "matched": matches.select("id").distinct().count(),
        "matches": matches.count(),
    }
    out["new"] = out["documents"] - out["matched"]
    with open(os.path.join(output, "summary.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    return out

