"""Deduplicate a Parquet file's text column with sketchdb.

    python examples/python/dedup_parquet.py INPUT.parquet OUTPUT.parquet \
        [--text-column text] [--id-column id] [--threshold 0.8] [--db dedup.sketchdb]

Reads INPUT, sketches every text on all cores (``sketchdb.arrow.sketch``), loads the
signatures into an LSH-indexed collection in one commit, groups near-duplicates
(``Collection.dedup``) and writes OUTPUT with every row except the non-first members of
each cluster (the smallest id of a cluster is kept). Prints one summary line. Rows whose
text cannot be sketched (no words) are kept and counted.
"""

import argparse
import os
import sys
import tempfile

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import sketchdb
import sketchdb.arrow as sa


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--text-column", default="text")
    ap.add_argument("--id-column", default=None, help="stable ids (default: the row number)")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--db", default=None, help="keep the collection in this file (default: a temporary one)")
    args = ap.parse_args(argv)

    table = pq.read_table(args.input)
    if args.text_column not in table.column_names:
        sys.exit(f"error: {args.input} has no column {args.text_column!r} (columns: {', '.join(table.column_names)})")
    texts = table.column(args.text_column)
    if args.id_column:
        ids = pc.cast(table.column(args.id_column), pa.string())
    else:
        ids = pa.array([str(i) for i in range(table.num_rows)])

    params = dict(kind="minhash", k=128)
    sigs = sa.sketch(texts, **params, on_error="null")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or os.path.join(tmp, "dedup.sketchdb")
        with sketchdb.open(path) as db:
            coll = db.create_collection("dedup", **params, lsh=args.threshold)
            valid = pc.is_valid(sigs)
            report = coll.insert_many(ids.filter(valid), signatures=sigs.filter(valid), strict=True)
            result = coll.dedup(threshold=args.threshold)
    drop = set()
    for cluster in result.clusters:
        keys = sorted(cluster.keys, key=lambda k: (len(k), k))
        drop.update(keys[1:])
    keep = pc.invert(pc.is_in(ids, value_set=pa.array(sorted(drop), pa.string())))
    pq.write_table(table.filter(keep), args.output)
    unsketched = table.num_rows - report.written
    print(
        f"{table.num_rows} rows, {len(result.clusters)} clusters, {len(drop)} removed, "
        f"{table.num_rows - len(drop)} kept ({unsketched} without words kept as they are)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
