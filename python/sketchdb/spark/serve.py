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
    table = pq.read_table(os.path.join(run, "signatures"), columns=["id", "signature", "cardinality"])
    if only_kept:
        removed = pq.read_table(os.path.join(run, "removed"), columns=["id"]).column("id").to_pylist()
        gone = set(removed)
        mask = pa.array([i not in gone for i in table.column("id").to_pylist()])
        table = table.filter(mask)
    k = Kernels(spec)
    keys = [str(i) for i in table.column("id").to_pylist()]
    sketches = (
        k.frozen(s, c) for s, c in zip(table.column("signature").to_pylist(), table.column("cardinality").to_pylist())
    )
    with sketchdb.open(db_path) as db:
        if collection in db:
            raise SparkDedupError(f"{db_path}: collection {collection!r} exists; choose another name")
        coll = db.create_collection(collection, **spec.collection_kwargs())
        return coll.insert_many(keys, sketches=sketches)


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
        st = db[collection].stats()
    spec = SketchSpec(
        kind=st["kind"], k=int(st["size"]), bits=int(st["bits"]), seed=int(st["seed"]),
        threshold=threshold if threshold is not None else 0.8,
    )
    tok = _tokenizer_of(db_path, collection)
    spec = SketchSpec(**{**spec.__dict__, **tok}).with_banding()
    docs, _ = read_documents(spark, inputs, text_column=text_column, id_column=id_column, derive_id=derive_id)
    where = inputs if isinstance(inputs, str) else ", ".join(inputs)
    check_unique_ids(docs.where(F.col("__id").isNotNull()).select("__id"), where)
    sc = spark.sparkContext
    sc.addFile(os.path.abspath(db_path))
    name = os.path.basename(db_path)
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
                for i, s, c in zip(ids, batch.column("signature").to_pylist(), batch.column("cardinality").to_pylist()):
                    for h in coll.query(sketch=k.frozen(s, c), threshold=thr):
                        key = h.key.decode() if isinstance(h.key, bytes) else h.key
                        for f, v in zip(cols, (i, key, h.estimate, h.lower, h.upper)):
                            cols[f].append(v)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(cols["id"], batch.column("id").type)]
                    + [pa.array(cols[f]) for f in ("match",)]
                    + [pa.array(cols[f], pa.float64()) for f in ("estimate", "lower", "upper")],
                    names=list(cols),
                )

    matches = sketched.select("id", "signature", "cardinality").mapInArrow(run, schema)
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


def _tokenizer_of(db_path: str, collection: str) -> dict:
    """The tokenizer settings of a collection, as SketchSpec fields (read from a stored sketch)."""
    with sketchdb.open(db_path, read_only=True) as db:
        coll = db[collection]
        if len(coll) == 0:
            return {}
        # A stored sketch's pickle state names its tokenizer: (kind, width, seed).
        for hit in coll.top_k(text="x", k=1, exact=True):
            state = coll[hit.key].__reduce__()[1][0]
            tk, tw, ts = state[6]
            out: dict = {"token_seed": int(ts)}
            if tk == "shingles":
                out["shingle"] = int(tw)
            elif tk == "ngrams":
                out["ngram"] = int(tw)
            return out
    return {}
