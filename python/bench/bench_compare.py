"""sketchdb against datasketch and rensa, side by side in one run on the same data.

    python python/bench/bench_compare.py [--data /work/data] [--sets N] [--docs N]

Workloads (from ../shared/bench/gen_workloads.py): ``sets-100k.jsonl`` (pre-hashed u64
token sets) and ``docs-20k.parquet`` (texts; those of at least 5 words). Measures, 128 permutations everywhere:

1. bulk sketching, tokens/s and documents/s: sketchdb's Arrow kernels (OPH and MinHash) and
   ``bulk`` constructors, from prepared arrays and from Python lists; rensa's bulk paths
   (``RMinHash.digest_matrix_from_flat_token_hashes`` and its ``_rho`` form for hashes,
   ``digest_matrix_from_token_sets`` for words split in Python); datasketch's ``MinHash.bulk``;
2. LSH ingest, records/s: ``insert_many`` into a durable LSH collection (t = 0.8) against
   datasketch ``MinHashLSH.insert`` (in memory) of already built MinHashes (``bench_insert.py``
   compares them at the same N, in more input forms);
3. per-query binding overhead: ``Collection.query(key=)`` from Python against the same
   ``Collection::query_key`` calls looped inside Rust (``sketchdb._sketchdb._time_query_keys``,
   a snapshot per query either way), one thread.

``bench_bulk.py`` beside it measures bulk sketching in every input shape (``sketch_many`` from
Python lists, NumPy and Arrow) against rensa's bulk paths at one and two threads, with
medians over rounds and the estimators' accuracy.

Prints one line per figure: rates from wall-clock time, best of ``--repeat``, and the
process CPU seconds of that run (all threads; on a machine shared with other work the CPU
time is the steadier figure), then the insert ratios against datasketch.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import sketchdb
import sketchdb.arrow as sa

K = 128


CPU = {}


def best(f, repeat):
    """The best wall time of ``repeat`` runs (its CPU seconds go to ``CPU[f]``) and f's result."""
    runs = []
    out = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = f()
        runs.append((time.perf_counter() - t, time.process_time() - c))
    wall, cpu = min(runs)
    CPU["last"] = cpu
    return wall, out


def load_sets(path, n):
    sets = []
    with open(path) as f:
        for line in f:
            sets.append(json.loads(line)["tokens"])
            if len(sets) >= n:
                break
    return sets


def load_docs(path, n):
    import pyarrow.parquet as pq

    texts = pq.read_table(path, columns=["text"]).column("text").to_pylist()
    return [t for t in texts if t and len(t.split()) >= 5][:n]


RATES = {}


def report(what, seconds, items, tokens=None):
    line = f"{what:66s} {items / seconds:12,.0f} /s"
    if tokens is not None:
        line += f"  {tokens / seconds:14,.0f} tokens/s"
    line += f"  (cpu {CPU.get('last', 0.0):.2f} s for {seconds:.2f} s wall)"
    RATES[what] = items / seconds
    print(line, flush=True)


def bench_sketch(sets, docs, repeat):
    import datasketch
    import rensa

    ntok = sum(len(s) for s in sets)
    # Hashed token sets. rensa 0.5's R-MinHash is a bucket sketch (each token hashed once,
    # "Fast Similarity Sketching"): the like-for-like sketchdb kind is OPH; sketchdb's MinHash
    # hashes every token k times (k permutations). rensa's rho path sketches a budget of a
    # set's tokens (64 of a set of 96 to 4k tokens by default), not all of them.
    arr = pa.array(sets, type=pa.list_(pa.uint64()))
    t, _ = best(lambda: sa.sketch_tokens(arr, kind="oph", k=K), repeat)
    report("sets  sketchdb arrow.sketch_tokens OPH (list<uint64>)", t, len(sets), ntok)
    t, _ = best(lambda: sa.sketch_tokens(arr, k=K), repeat)
    report("sets  sketchdb arrow.sketch_tokens MinHash (list<uint64>)", t, len(sets), ntok)
    t, _ = best(lambda: sa.sketch_tokens(pa.array(sets, type=pa.list_(pa.uint64())), kind="oph", k=K), repeat)
    report("sets  sketchdb OPH incl. list[list[int]] -> pyarrow", t, len(sets), ntok)
    t, _ = best(lambda: sketchdb.OPH.bulk(sets, bins=K), repeat)
    report("sets  sketchdb OPH.bulk (list[list[int]], objects)", t, len(sets), ntok)
    np_sets = [np.asarray(s, dtype=np.uint64) for s in sets]
    t, _ = best(lambda: sketchdb.MinHash.bulk(np_sets, num_perm=K), repeat)
    report("sets  sketchdb MinHash.bulk (NumPy u64 arrays, objects)", t, len(sets), ntok)
    flat = np.concatenate(np_sets)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.uint64)
    t, _ = best(lambda: rensa.RMinHash.digest_matrix_from_flat_token_hashes(flat, offsets, K, 42), repeat)
    report("sets  rensa digest_matrix_from_flat_token_hashes (NumPy)", t, len(sets), ntok)
    if hasattr(rensa.RMinHash, "digest_matrix_from_flat_token_hashes_rho"):
        t, _ = best(lambda: rensa.RMinHash.digest_matrix_from_flat_token_hashes_rho(flat, offsets, K, 42), repeat)
        report("sets  rensa digest_matrix_from_flat_token_hashes_rho (NumPy)", t, len(sets), ntok)

    t, _ = best(lambda: rensa.RMinHash.digest_matrix_from_token_hash_sets(sets, K, 42), repeat)
    report("sets  rensa digest_matrix_from_token_hash_sets (list[list[int]])", t, len(sets), ntok)
    few = sets[: max(1, len(sets) // 20)]
    few_bytes = [[str(x).encode() for x in s] for s in few]
    t, _ = best(lambda: datasketch.MinHash.bulk(few_bytes, num_perm=K), 1)
    report(f"sets  datasketch MinHash.bulk ({len(few)} sets, bytes tokens)", t, len(few), sum(len(s) for s in few))

    # Documents. Words split in Python are the like-for-like input of rensa's token sets.
    words = [d.split() for d in docs]
    nwords = sum(len(w) for w in words)
    texts = pa.array(docs)
    t, _ = best(lambda: sa.sketch(texts, k=K, shingle=1, on_error="null"), repeat)
    report("docs  sketchdb arrow.sketch (text, 1-word shingles, split in Rust)", t, len(docs), nwords)
    t, _ = best(lambda: sa.sketch(texts, k=K, on_error="null"), repeat)
    report("docs  sketchdb arrow.sketch (text, 5-word shingles, split in Rust)", t, len(docs), nwords)
    t, _ = best(lambda: sa.sketch(texts, kind="oph", k=K, shingle=1, on_error="null"), repeat)
    report("docs  sketchdb arrow.sketch OPH (text, 1-word shingles)", t, len(docs), nwords)
    wl = pa.array(words, type=pa.list_(pa.string()))
    t, _ = best(lambda: sa.sketch_tokens(wl, k=K), repeat)
    report("docs  sketchdb arrow.sketch_tokens MinHash (list<string> words)", t, len(docs), nwords)
    t, _ = best(lambda: sa.sketch_tokens(wl, kind="oph", k=K), repeat)
    report("docs  sketchdb arrow.sketch_tokens OPH (list<string> words)", t, len(docs), nwords)
    t, _ = best(lambda: sa.sketch_tokens(pa.array(words, type=pa.list_(pa.string())), kind="oph", k=K), repeat)
    report("docs  sketchdb OPH incl. list[list[str]] -> pyarrow", t, len(docs), nwords)
    t, _ = best(lambda: sa.sketch_tokens(pa.array([d.split() for d in docs], type=pa.list_(pa.string())), kind="oph", k=K), repeat)
    report("docs  sketchdb OPH incl. Python split and -> pyarrow", t, len(docs), nwords)
    t, _ = best(lambda: sketchdb.MinHash.bulk(words, num_perm=K), repeat)
    report("docs  sketchdb MinHash.bulk (list[list[str]] words, objects)", t, len(docs), nwords)
    t, _ = best(lambda: rensa.RMinHash.digest_matrix_from_token_sets(words, K, 42), repeat)
    report("docs  rensa digest_matrix_from_token_sets (words split in Python)", t, len(docs), nwords)
    t, _ = best(lambda: rensa.RMinHash.digest_matrix_from_token_sets([d.split() for d in docs], K, 42), repeat)
    report("docs  rensa incl. Python split", t, len(docs), nwords)
    fewd = [[w.encode() for w in ws] for ws in words[: max(1, len(words) // 20)]]
    t, _ = best(lambda: datasketch.MinHash.bulk(fewd, num_perm=K), 1)
    report(f"docs  datasketch MinHash.bulk ({len(fewd)} docs, words)", t, len(fewd), sum(len(w) for w in fewd))


def bench_insert(sets, repeat):
    import datasketch

    keys = [f"s{i}" for i in range(len(sets))]
    arr = pa.array(sets, type=pa.list_(pa.uint64()))

    def ours():
        with tempfile.TemporaryDirectory() as d, sketchdb.open(os.path.join(d, "b.sketchdb")) as db:
            c = db.create_collection("c", k=K, lsh=0.8)
            r = c.insert_many(pa.array(keys), tokens=arr)
            assert r.written == len(keys)

    t, _ = best(ours, repeat)
    report("insert sketchdb insert_many tokens -> durable LSH t=0.8", t, len(sets))
    sigs = sa.sketch_tokens(arr, k=K)

    def ours_sigs():
        with tempfile.TemporaryDirectory() as d, sketchdb.open(os.path.join(d, "b.sketchdb")) as db:
            c = db.create_collection("c", k=K, lsh=0.8)
            c.insert_many(pa.array(keys), signatures=sigs, strict=True)

    t, _ = best(ours_sigs, repeat)
    report("insert sketchdb insert_many signatures -> durable LSH t=0.8", t, len(sets))
    objs = sketchdb.MinHash.bulk([np.asarray(x, dtype=np.uint64) for x in sets], num_perm=K)

    def ours_objs():
        with tempfile.TemporaryDirectory() as d, sketchdb.open(os.path.join(d, "b.sketchdb")) as db:
            c = db.create_collection("c", k=K, lsh=0.8)
            c.insert_many(keys, sketches=objs, strict=True)

    t, _ = best(ours_objs, repeat)
    report("insert sketchdb insert_many sketches (MinHash objects) -> durable LSH", t, len(sets))
    n = max(1, len(sets) // 5)
    ms = datasketch.MinHash.bulk([[str(x).encode() for x in s] for s in sets[:n]], num_perm=K)

    def theirs():
        lsh = datasketch.MinHashLSH(threshold=0.8, num_perm=K)
        for i, m in enumerate(ms):
            lsh.insert(keys[i], m)

    t, _ = best(theirs, 1)
    name = f"insert datasketch MinHashLSH.insert ({n}, MinHashes prebuilt)"
    report(name, t, n)
    for what, rate in list(RATES.items()):
        if what.startswith("insert sketchdb"):
            print(f"ratio  {what[len('insert sketchdb '):]:58s} {rate / RATES[name]:6.1f}x datasketch's insert", flush=True)


OVERHEAD = r"""
import json, os, sys, tempfile, time
import pyarrow as pa, sketchdb
from sketchdb import _sketchdb
sets = []
with open(sys.argv[1]) as f:
    for line in f:
        sets.append(json.loads(line)["tokens"])
        if len(sets) >= 20000:
            break
keys = [f"s{i}" for i in range(len(sets))]
with tempfile.TemporaryDirectory() as d, sketchdb.open(os.path.join(d, "q.sketchdb")) as db:
    coll = db.create_collection("c", k=128, lsh=0.8)
    coll.insert_many(keys, tokens=pa.array(sets, type=pa.list_(pa.uint64())))
    probe = keys[::10]
    chunks = [probe[i:i + 100] for i in range(0, len(probe), 100)]

    def ask(coll, ch):
        # In a function, as an application's loop is (local names, no dict per iteration).
        for k in ch:
            coll.query(key=k, threshold=0.8)

    # Interleaved 100-query chunks; wall and this thread's CPU time (the Rust loop runs on
    # this thread with the GIL released), per query.
    wall = {"py": [], "rs": []}
    cpu = {"py": [], "rs": []}
    for _ in range(int(sys.argv[2])):
        for ch in chunks:
            t, c = time.perf_counter(), time.thread_time()
            ask(coll, ch)
            wall["py"].append((time.perf_counter() - t) / len(ch)); cpu["py"].append((time.thread_time() - c) / len(ch))
            t, c = time.perf_counter(), time.thread_time()
            secs, hits = _sketchdb._time_query_keys(coll, ch, 0.8)
            wall["rs"].append(secs / len(ch)); cpu["rs"].append((time.thread_time() - c) / len(ch))
    t = time.perf_counter()
    coll.query_many(keys=probe, threshold=0.8)
    many = (time.perf_counter() - t) / len(probe)
    hits = sum(len(h) for h in coll.query_many(keys=probe, threshold=0.8)) / len(probe)
    med = lambda v: sorted(v)[len(v) // 2]
    print(" ".join(f"{x * 1e6:.3f}" for x in (min(wall["py"]), min(wall["rs"]), med(wall["py"]), med(wall["rs"]),
                                              med(cpu["py"]), med(cpu["rs"]), many)), f"{hits:.2f}")
"""


def bench_overhead(sets_path, repeat):
    """Python ``query(key=)`` against the same ``Collection::query_key`` calls looped inside
    Rust (one snapshot per query either way), interleaved rounds, best and median."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    rounds = str(max(3, 2 * repeat))
    out = subprocess.run([sys.executable, "-c", OVERHEAD, sets_path, rounds], env=env, capture_output=True, text=True, check=True)
    py, rs, pym, rsm, pyc, rsc, many, hits = map(float, out.stdout.split())
    print(f"query  Python query(key=) {py:.2f} us; the same query_key loop in Rust {rs:.2f} us;"
          f" binding overhead {py - rs:.2f} us per query (best 100-query chunk of {rounds} interleaved rounds;"
          f" median chunks {pym:.2f} - {rsm:.2f} = {pym - rsm:.2f} us wall, {pyc:.2f} - {rsc:.2f} = {pyc - rsc:.2f} us"
          f" thread CPU; {hits:.2f} hits per query)", flush=True)
    print(f"query  for scale: query_many(keys=) over one shared snapshot {many:.2f} us per query", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/data")
    ap.add_argument("--sets", type=int, default=20000)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    sets = load_sets(os.path.join(a.data, "sets-100k.jsonl"), a.sets)
    docs = load_docs(os.path.join(a.data, "docs-20k.parquet"), a.docs)
    print(f"sketchdb {sketchdb.__version__}, {len(sets)} sets, {len(docs)} docs, k={K}, cores={os.cpu_count()}")
    bench_sketch(sets, docs, a.repeat)
    bench_insert(sets, a.repeat)
    bench_overhead(os.path.join(a.data, "sets-100k.jsonl"), a.repeat)


if __name__ == "__main__":
    main()
