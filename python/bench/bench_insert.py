"""LSH ingest from Python, like with like: sketchdb's durable ``insert_many`` against
datasketch's in-memory ``MinHashLSH.insert``, the same N sets, MinHash 128, threshold 0.8.

    python python/bench/bench_insert.py [--data /work/data] [--sets 100000] [--rounds 3]
                                        [--only NAME] [--no-datasketch]

Input: the first N sets of ``sets-100k.jsonl`` (pre-hashed u64 tokens, 240 per set on
average). datasketch's MinHashes are built before timing (``hashvalues`` of the
datasketch-compatible ``datasketch-affine32`` family for each set's tokens taken as 32-bit
token hashes: what ``datasketch.MinHash(hashfunc=lambda t: t & 0xFFFFFFFF)`` gives), and
then inserted one by one with ``lsh.insert`` and inside ``lsh.insertion_session()``.

sketchdb inserts the same N keys into a new durable file (one ``insert_many`` call, one
commit, the file closed before the clock stops) from: token lists (``list[list[int]]``),
NumPy ``uint64`` arrays, a pyarrow ``list<uint64>`` column, signatures (the
``sketchdb.arrow.sketch_tokens`` column), ``MinHash`` objects, and datasketch's
``hashvalues`` (a 2-D NumPy array, into a ``datasketch-affine32`` collection: a datasketch
user's port). The sketching is part of the timed call where the input is tokens. Two more
variants write the token inputs into an OPH collection (128 bins, one hash per token).

The file goes to a temporary folder (``BENCH_DIR`` when set, e.g. ``/dev/shm`` to take the
disk's flushes out of the figure). Every variant runs ``--rounds`` times, interleaved; each line gives the best and the median
wall time, the process CPU seconds of the best round (all threads), and the rate. On a
machine shared with other work the medians and the CPU seconds are the steadier figures.
"""

import argparse
import gc
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import sketchdb
import sketchdb.arrow as sa
from bench_compare import load_sets  # the same loader (this folder is on sys.path when run as a script)

K = 128
T = 0.8


def sketchdb_variants(sets, keys):
    """Each variant's collection options and a function that prepares its input (untimed)
    and returns the timed ``insert_many`` call."""

    def arrow_tokens():
        arr = pa.array(sets, type=pa.list_(pa.uint64()))
        return arr

    def numpy_tokens():
        np_sets = [np.asarray(s, dtype=np.uint64) for s in sets]
        return lambda c: c.insert_many(keys, tokens=np_sets)

    def arrow():
        arr, pk = arrow_tokens(), pa.array(keys)
        return lambda c: c.insert_many(pk, tokens=arr)

    def signatures():
        sigs, pk = sa.sketch_tokens(arrow_tokens(), k=K), pa.array(keys)
        return lambda c: c.insert_many(pk, signatures=sigs)

    def objects():
        objs = sketchdb.MinHash.bulk([np.asarray(s, dtype=np.uint64) for s in sets], num_perm=K)
        return lambda c: c.insert_many(keys, sketches=objs)

    def hashvalues():
        hv = datasketch_values(sets)
        return lambda c: c.insert_many(keys, hashvalues=hv)

    return {
        "sketchdb insert_many tokens= list[list[int]]": (dict(), lambda: lambda c: c.insert_many(keys, tokens=sets)),
        "sketchdb insert_many tokens= list of NumPy u64": (dict(), numpy_tokens),
        "sketchdb insert_many tokens= pyarrow list<uint64>": (dict(), arrow),
        "sketchdb insert_many signatures= (arrow.sketch_tokens)": (dict(), signatures),
        "sketchdb insert_many sketches= MinHash objects": (dict(), objects),
        "sketchdb insert_many hashvalues= datasketch 2-D NumPy": (dict(recipe="datasketch-affine32"), hashvalues),
        # OPH (one hash per token, binned; the same accuracy as MinHash 128 in bench_bulk.py's
        # table) into the same LSH index: sketchdb's cheaper kind for the same question.
        "sketchdb insert_many tokens= list[list[int]], OPH 128": (dict(kind="oph"), lambda: lambda c: c.insert_many(keys, tokens=sets)),
        "sketchdb insert_many tokens= pyarrow list<uint64>, OPH 128": (dict(kind="oph"), arrow),
    }


def datasketch_values(sets):
    """Each set's datasketch ``hashvalues`` (affine32, seed 1) over its tokens as 32-bit hashes."""
    tok32 = [np.asarray(s, dtype=np.uint64) & np.uint64(0xFFFFFFFF) for s in sets]
    ms = sketchdb.MinHash.bulk(tok32, num_perm=K, recipe="datasketch-affine32")
    return np.stack([m.hashvalues for m in ms]).astype(np.uint64)


def run_sketchdb(make, insert, n):
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
        t, c = time.perf_counter(), time.process_time()
        with sketchdb.open(os.path.join(d, "b.sketchdb")) as db:
            coll = db.create_collection("c", k=K, lsh=T, **make)
            r = insert(coll)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    assert r.written == n and not r.rejects, r
    return wall, cpu


def datasketch_variants(sets, keys):
    import datasketch

    hv = datasketch_values(sets)
    ms = [datasketch.MinHash(num_perm=K, hashvalues=row, scheme="affine32") for row in hv.astype(np.uint32)]

    def plain():
        lsh = datasketch.MinHashLSH(threshold=T, num_perm=K)
        for k, m in zip(keys, ms):
            lsh.insert(k, m)
        return lsh

    def session():
        lsh = datasketch.MinHashLSH(threshold=T, num_perm=K)
        with lsh.insertion_session() as s:
            for k, m in zip(keys, ms):
                s.insert(k, m)
        return lsh

    return {
        "datasketch MinHashLSH.insert (prebuilt MinHashes)": plain,
        "datasketch insertion_session().insert (prebuilt)": session,
    }


def run_datasketch(f, n):
    t, c = time.perf_counter(), time.process_time()
    lsh = f()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    assert len(lsh.keys) == n
    del lsh
    gc.collect()
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/data")
    ap.add_argument("--sets", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="run only the variants whose name contains this")
    ap.add_argument("--no-datasketch", action="store_true")
    a = ap.parse_args()
    sets = load_sets(os.path.join(a.data, "sets-100k.jsonl"), a.sets)
    n = len(sets)
    keys = [f"s{i}" for i in range(n)]
    print(f"sketchdb {sketchdb.__version__}, {n} sets, MinHash {K}, LSH t={T}, cores={os.cpu_count()}", flush=True)
    runs = {}
    for name, (make, prepare) in sketchdb_variants(sets, keys).items():
        if a.only and a.only not in name:
            continue
        insert = prepare()
        runs[name] = lambda make=make, insert=insert: run_sketchdb(make, insert, n)
    if not a.no_datasketch:
        for name, f in datasketch_variants(sets, keys).items():
            runs[name] = lambda f=f: run_datasketch(f, n)
    times = {name: [] for name in runs}
    for _ in range(a.rounds):
        for name, f in runs.items():
            times[name].append(f())
    rate = {}
    for name, ts in times.items():
        best = min(ts)
        med = statistics.median(w for w, _ in ts)
        rate[name] = n / med
        print(
            f"{name:62s} best {best[0]:6.2f} s  median {med:6.2f} s  {n / best[0]:10,.0f} /s best"
            f"  {n / med:10,.0f} /s median  (cpu {best[1]:.2f} s)",
            flush=True,
        )
    ds = [v for k, v in rate.items() if k.startswith("datasketch")]
    if ds:
        for name, r in rate.items():
            if name.startswith("sketchdb"):
                ratios = ", ".join(f"{r / d:.1f}x" for d in ds)
                print(f"ratio  {name[len('sketchdb '):]:50s} {ratios} datasketch's (insert, session; medians)")


if __name__ == "__main__":
    main()
