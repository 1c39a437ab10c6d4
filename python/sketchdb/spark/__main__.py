"""``python -m sketchdb.spark``: the Spark pipeline from the shell.

    python -m sketchdb.spark dedup INPUT... OUTPUT [--text-column text] [--id-column id]
        [--threshold 0.8] [--k 128] [--partitions N] [--bucket-cap 1000] [--oversize star|drop]
    python -m sketchdb.spark import RUN DB --collection NAME [--only-kept]
    python -m sketchdb.spark against INPUT... --db DB --collection NAME OUTPUT [--threshold T]

Exit status: 0 success, 2 bad input or arguments (one line on stderr naming what and where),
1 any other failure. ``SPARK_MASTER`` picks the master (default ``local[*]``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ._errors import SparkDedupError


def _session(partitions):
    from .session import local_session

    return local_session(
        master=os.environ.get("SPARK_MASTER", "local[*]"),
        shuffle_partitions=partitions or 8,
        ui=True,
        driver_memory=os.environ.get("SPARK_DRIVER_MEMORY", "4g"),
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sketchdb.spark", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dedup", help="deduplicate Parquet or JSONL(.gz) files into an output folder")
    d.add_argument("paths", nargs="+", help="input files or folders, then the output folder")
    d.add_argument("--text-column", default="text")
    d.add_argument("--id-column", default="id")
    d.add_argument("--derive-id", choices=["content", "file-row"], help="derive ids instead of --id-column")
    d.add_argument("--format", choices=["parquet", "json"], dest="input_format")
    d.add_argument("--threshold", type=float, default=0.8)
    d.add_argument("--kind", default="minhash")
    d.add_argument("--k", type=int, default=128)
    d.add_argument("--bits", type=int)
    d.add_argument("--seed", type=lambda s: int(s, 0))
    d.add_argument(
        "--family",
        help="the hash family of minhash and bbit signatures (as `sketchdb create --family`; default: the kind's own)",
    )
    d.add_argument("--shingle", type=int)
    d.add_argument("--ngram", type=int)
    d.add_argument("--recipe")
    d.add_argument("--bands", type=int, default=0)
    d.add_argument("--rows", type=int, default=0)
    d.add_argument("--level", type=float, default=0.95)
    d.add_argument("--partitions", type=int)
    d.add_argument("--bucket-cap", type=int, default=1000)
    d.add_argument("--oversize", choices=["star", "drop"], default="star")
    d.add_argument("--edges", choices=["all", "star"], default="all")
    d.add_argument("--on-bad", choices=["skip", "fail"], default="skip")
    d.add_argument("--no-kept", action="store_true", help="do not write kept/")
    d.add_argument("--overwrite", action="store_true")
    i = sub.add_parser("import", help="load a run's signatures into a sketchdb collection")
    i.add_argument("run")
    i.add_argument("db")
    i.add_argument("--collection", required=True)
    i.add_argument("--only-kept", action="store_true")
    a = sub.add_parser("against", help="match a new batch against an existing sketchdb collection")
    a.add_argument("paths", nargs="+", help="input files or folders, then the output folder")
    a.add_argument("--db", required=True)
    a.add_argument("--collection", required=True)
    a.add_argument("--threshold", type=float)
    a.add_argument("--text-column", default="text")
    a.add_argument("--id-column", default="id")
    a.add_argument("--derive-id", choices=["content", "file-row"])
    args = p.parse_args(argv)
    try:
        return _run(args)
    except SparkDedupError as e:
        print(f"sketchdb.spark: {e}", file=sys.stderr)
        return 2


def _run(args) -> int:
    from . import DedupOptions, SketchSpec, dedup, dedup_against, import_signatures

    if args.cmd == "import":
        n = import_signatures(args.run, args.db, args.collection, only_kept=args.only_kept)
        print(json.dumps({"collection": args.collection, "inserted": n, "db": args.db}))
        return 0
    if len(args.paths) < 2:
        raise SparkDedupError("give at least one input and the output folder")
    *inputs, output = args.paths
    id_column = None if args.derive_id else args.id_column
    if args.cmd == "against":
        spark = _session(None)
        out = dedup_against(
            spark, inputs, args.db, args.collection, output, threshold=args.threshold,
            text_column=args.text_column, id_column=id_column, derive_id=args.derive_id,
        )
        print(json.dumps(out, sort_keys=True))
        return 0
    import sketchdb

    spec = SketchSpec(
        kind=args.kind, k=args.k, bits=args.bits, seed=args.seed if args.seed is not None else sketchdb.DEFAULT_SEED,
        shingle=args.shingle, ngram=args.ngram, recipe=args.recipe, family=args.family, threshold=args.threshold,
        bands=args.bands, rows=args.rows, level=args.level,
    )
    # Bad sketch settings (a kind, family or recipe sketchdb does not know, an impossible
    # banding) are told in one line before Spark starts.
    try:
        spec = spec.with_banding()
    except ValueError as e:
        raise SparkDedupError(f"sketch settings: {e}") from None
    options = DedupOptions(
        text_column=args.text_column, id_column=id_column, derive_id=args.derive_id,
        input_format=args.input_format, bucket_cap=args.bucket_cap, oversize=args.oversize, edges=args.edges,
        on_bad=args.on_bad, partitions=args.partitions, write_kept=not args.no_kept,
    )
    spark = _session(args.partitions)
    summary = dedup(spark, inputs, output, spec, options, overwrite=args.overwrite)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
