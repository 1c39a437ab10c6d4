"""Instructions the binding adds to one ``Collection.query(key=)``, counted by callgrind.

    python python/bench/callgrind_query.py [--data /work/data] [--queries 4000]

Builds a database of 20,000 sets of ``sets-100k.jsonl`` (MinHash 128, LSH t = 0.8) in a
temporary folder, then runs this script under ``valgrind --tool=callgrind`` twice with the
same set-up and warm-up: once asking ``--queries`` queries by stored key from Python
(``coll.query(key=k, threshold=0.8)`` in a ``for`` loop inside a function), once running the same
``Collection::query_key`` calls in a loop inside Rust
(``sketchdb._sketchdb._time_query_keys``). The difference of the two totals over the number
of queries is what the binding (argument parsing, key conversion, the GIL, the hits, the
interpreter's loop) adds per query; a third run with the set-up only gives the query's own
count. Deterministic: one rayon thread, a fixed hash seed. ``--keep DIR`` keeps the
callgrind files (``callgrind_annotate DIR/callgrind.py``) for a per-function breakdown.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, sketchdb
from sketchdb import _sketchdb
path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


def ask(coll, keys):
    # In a function, as an application's loop is: local names, no dict per iteration.
    for k in keys:
        coll.query(key=k, threshold=0.8)


keys = [f"s{i}" for i in range(0, 20000, 5)]
with sketchdb.open(path) as db:
    coll = db["c"]
    probe = (keys * (n // len(keys) + 1))[:n]
    # Warm-up: the same queries both ways, so both runs start with the same caches.
    ask(coll, keys[:500])
    _sketchdb._time_query_keys(coll, keys[:500], 0.8)
    if mode == "py":
        ask(coll, probe)
    elif mode == "rs":
        _sketchdb._time_query_keys(coll, probe, 0.8)
"""


def build(data, path):
    import pyarrow as pa

    import sketchdb

    sets = []
    with open(os.path.join(data, "sets-100k.jsonl")) as f:
        for line in f:
            sets.append(json.loads(line)["tokens"])
            if len(sets) >= 20000:
                break
    keys = [f"s{i}" for i in range(len(sets))]
    with sketchdb.open(path) as db:
        c = db.create_collection("c", k=128, lsh=0.8)
        c.insert_many(keys, tokens=pa.array(sets, type=pa.list_(pa.uint64())))


def count(path, mode, n, out):
    env = dict(os.environ, RAYON_NUM_THREADS="1", PYTHONHASHSEED="0")
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", CHILD, path, mode, str(n)],
        env=env,
        check=True,
        capture_output=True,
    )
    with open(out) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/data")
    ap.add_argument("--queries", type=int, default=4000)
    ap.add_argument("--keep", help="a folder to keep the callgrind files in")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "q.sketchdb")
        build(a.data, path)
        outdir = a.keep or d
        py = count(path, "py", a.queries, os.path.join(outdir, "callgrind.py"))
        rs = count(path, "rs", a.queries, os.path.join(outdir, "callgrind.rs"))
        base = count(path, "none", a.queries, os.path.join(outdir, "callgrind.none"))
    n = a.queries
    print(f"python loop {py:,} instructions, Rust loop {rs:,}, set-up only {base:,}")
    print(f"per query: Rust {(rs - base) / n:,.0f}, Python {(py - base) / n:,.0f}, binding adds {(py - rs) / n:,.0f}")


if __name__ == "__main__":
    main()
