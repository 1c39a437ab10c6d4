"""Bulk sketching from Python, sketchdb against rensa and datasketch, every input shape, one
and two threads, side by side in one run on the same data.

    python python/bench/bench_bulk.py [--data /work/data] [--sets N] [--docs N] [--rounds R]
                                      [--threads 1,2] [--accuracy PAIRS] [--filter TEXT] [--package DIR]

``--package DIR`` runs the cases against another build's ``sketchdb`` package folder (a copy
of ``python/sketchdb`` with its compiled module) for before/after figures; ``--filter TEXT``
keeps the cases whose call contains TEXT (``"bulk (objects)"``: the calls both builds have;
``A|B`` keeps those containing A or B).

Workloads (../shared/bench/gen_workloads.py): ``sets-100k.jsonl`` (pre-hashed u64 token sets)
and ``docs-20k.parquet`` (texts of at least 5 words, split on whitespace in Python for the
token-list inputs). 128 permutations or bins everywhere. For each thread count a fresh
interpreter runs every case ``--rounds`` times (``RAYON_NUM_THREADS`` limits both sketchdb's
and rensa's thread pool; rensa's list paths also run one extra thread of their own, which
sketches while the calling thread reads, as sketchdb's do). Prints one line per case: the
median rate over the rounds (sets or documents per second, and tokens per second) and the
median CPU seconds of a round (all threads).

What each library computes: sketchdb ``MinHash`` hashes every token k times (k-permutation
MinHash, 32-bit values); ``OPH`` and rensa's ``RMinHash`` hash each token once and bin it
(rensa 0.5: "Fast Similarity Sketching"-style buckets of 32-bit values, 512 bytes per row);
rensa's ``_rho`` paths read a budget of each set's tokens (a sample), not all of them.
``--accuracy`` measures what that costs: the RMSE of each estimator against the exact
Jaccard similarity of pairs built from the sets at similarities 0.3 to 0.95.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import numpy as np
from bench_compare import load_docs, load_sets  # the same loaders (this folder is on sys.path when run as a script)

K = 128


def cases(sets, docs):
    """(workload, input shape, library and call, items, tokens, function)."""
    import datasketch
    import pyarrow as pa
    import rensa

    import sketchdb
    import sketchdb.arrow as sa

    R = rensa.RMinHash
    ntok = sum(len(s) for s in sets)
    flat = np.fromiter((t for s in sets for t in s), dtype=np.uint64, count=ntok)
    offsets = np.zeros(len(sets) + 1, dtype=np.uint64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    arr = pa.array(sets, type=pa.list_(pa.uint64()))
    few = sets[: max(1, len(sets) // 50)]
    few_bytes = [[str(x).encode() for x in s] for s in few]
    n, fn = len(sets), len(few)
    yield from [
        ("sets", "list[list[int]]", "sketchdb sketch_many OPH", n, ntok, lambda: sketchdb.sketch_many(sets, kind="oph", k=K)),
        ("sets", "list[list[int]]", "sketchdb sketch_many b-bit (8)", n, ntok, lambda: sketchdb.sketch_many(sets, kind="bbit", k=K)),
        ("sets", "list[list[int]]", "sketchdb sketch_many MinHash", n, ntok, lambda: sketchdb.sketch_many(sets, k=K)),
        ("sets", "list[list[int]]", "sketchdb OPH.bulk (objects)", n, ntok, lambda: sketchdb.OPH.bulk(sets, bins=K)),
        ("sets", "list[list[int]]", "sketchdb MinHash.bulk (objects)", n, ntok, lambda: sketchdb.MinHash.bulk(sets, num_perm=K)),
        ("sets", "list[list[int]]", "rensa digest_matrix_from_token_hash_sets", n, ntok, lambda: R.digest_matrix_from_token_hash_sets(sets, K, 42)),
        ("sets", "list[list[int]]", "rensa ..._rho (sampled)", n, ntok, lambda: R.digest_matrix_from_token_hash_sets_rho(sets, K, 42)),
        ("sets", "list[list[int]]", f"datasketch MinHash.bulk ({fn} sets, bytes)", fn, sum(map(len, few)), lambda: datasketch.MinHash.bulk(few_bytes, num_perm=K)),
        ("sets", "NumPy flat+offsets", "sketchdb sketch_many OPH", n, ntok, lambda: sketchdb.sketch_many(flat, offsets=offsets, kind="oph", k=K)),
        ("sets", "NumPy flat+offsets", "sketchdb sketch_many MinHash", n, ntok, lambda: sketchdb.sketch_many(flat, offsets=offsets, k=K)),
        ("sets", "NumPy flat+offsets", "rensa digest_matrix_from_flat_token_hashes", n, ntok, lambda: R.digest_matrix_from_flat_token_hashes(flat, offsets, K, 42)),
        ("sets", "NumPy flat+offsets", "rensa ..._rho (sampled)", n, ntok, lambda: R.digest_matrix_from_flat_token_hashes_rho(flat, offsets, K, 42)),
        ("sets", "Arrow list<uint64>", "sketchdb arrow.sketch_tokens OPH", n, ntok, lambda: sa.sketch_tokens(arr, kind="oph", k=K)),
        ("sets", "Arrow list<uint64>", "sketchdb arrow.sketch_tokens MinHash", n, ntok, lambda: sa.sketch_tokens(arr, k=K)),
    ]
    words = [d.split() for d in docs]
    nw = sum(len(w) for w in words)
    wl = pa.array(words, type=pa.list_(pa.string()))
    texts = pa.array(docs)
    fewd = [[w.encode() for w in ws] for ws in words[: max(1, len(words) // 50)]]
    d, fd = len(docs), len(fewd)
    yield from [
        ("docs", "list[list[str]]", "sketchdb sketch_many OPH", d, nw, lambda: sketchdb.sketch_many(words, kind="oph", k=K)),
        ("docs", "list[list[str]]", "sketchdb sketch_many b-bit (8)", d, nw, lambda: sketchdb.sketch_many(words, kind="bbit", k=K)),
        ("docs", "list[list[str]]", "sketchdb sketch_many MinHash", d, nw, lambda: sketchdb.sketch_many(words, k=K)),
        ("docs", "list[list[str]]", "sketchdb OPH.bulk (objects)", d, nw, lambda: sketchdb.OPH.bulk(words, bins=K)),
        ("docs", "list[list[str]]", "sketchdb MinHash.bulk (objects)", d, nw, lambda: sketchdb.MinHash.bulk(words, num_perm=K)),
        ("docs", "list[list[str]]", "rensa digest_matrix_from_token_sets", d, nw, lambda: R.digest_matrix_from_token_sets(words, K, 42)),
        ("docs", "list[list[str]]", "rensa ..._rho (sampled)", d, nw, lambda: R.digest_matrix_from_token_sets_rho(words, K, 42)),
        ("docs", "list[list[str]]", f"datasketch MinHash.bulk ({fd} docs, bytes)", fd, sum(map(len, fewd)), lambda: datasketch.MinHash.bulk(fewd, num_perm=K)),
        ("docs", "Arrow list<string>", "sketchdb arrow.sketch_tokens OPH", d, nw, lambda: sa.sketch_tokens(wl, kind="oph", k=K)),
        ("docs", "Arrow list<string>", "sketchdb arrow.sketch_tokens MinHash", d, nw, lambda: sa.sketch_tokens(wl, k=K)),
        ("docs", "text (Arrow string)", "sketchdb arrow.sketch OPH, 1-word shingles", d, nw, lambda: sa.sketch(texts, kind="oph", k=K, shingle=1, on_error="null")),
        ("docs", "text (list[str])", "sketchdb sketch_many OPH incl. Python split", d, nw, lambda: sketchdb.sketch_many([t.split() for t in docs], kind="oph", k=K)),
        ("docs", "text (list[str])", "rensa token_sets incl. Python split", d, nw, lambda: R.digest_matrix_from_token_sets([t.split() for t in docs], K, 42)),
        ("docs", "text (list[str])", "rensa token_sets_rho incl. Python split", d, nw, lambda: R.digest_matrix_from_token_sets_rho([t.split() for t in docs], K, 42)),
    ]


def worker(a):
    sets = load_sets(os.path.join(a.data, "sets-100k.jsonl"), a.sets)
    docs = load_docs(os.path.join(a.data, "docs-20k.parquet"), a.docs)
    for workload, shape, what, items, tokens, f in cases(sets, docs):
        if a.filter and not any(f in what for f in a.filter.split("|")):
            continue
        walls, cpus = [], []
        for _ in range(a.rounds):
            t, c = time.perf_counter(), time.process_time()
            f()
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        print(json.dumps(dict(workload=workload, shape=shape, what=what, items=items, tokens=tokens, walls=walls, cpus=cpus)), flush=True)


def accuracy(sets, pairs, seed=1):
    """RMSE of each estimator against exact Jaccard, over `pairs` pairs made from the sets."""
    import pyarrow as pa
    import rensa

    import sketchdb
    import sketchdb.arrow as sa

    rng = random.Random(seed)
    big = [s for s in sets if len(s) >= 200]
    a_rows, b_rows, b_same_order, truth = [], [], [], []
    for i in range(pairs):
        base = list(set(rng.choice(big)))
        j = rng.choice([0.3, 0.5, 0.7, 0.8, 0.9, 0.95])
        # |A| = |B| = m, |A & B| = s: J = s / (2m - s), s = 2mJ / (1 + J).
        m = len(base)
        s = round(2 * m * j / (1 + j))
        fresh = [rng.getrandbits(64) for _ in range(2 * (m - s))]
        a = base[:s] + fresh[: m - s]
        b = base[:s] + fresh[m - s :]
        b_same_order.append(list(b))
        rng.shuffle(b)
        a_rows.append(a)
        b_rows.append(b)
        truth.append(len(set(a) & set(b)) / len(set(a) | set(b)))
    truth = np.array(truth)
    out = []

    def ours(kind, bits, label):
        sa_ = sketchdb.sketch_many(a_rows, kind=kind, k=K, bits=bits)
        sb_ = sketchdb.sketch_many(b_rows, kind=kind, k=K, bits=bits)
        w = sa_.shape[1]
        fa = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), len(a_rows), [None, pa.py_buffer(sa_)])
        fb = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), len(b_rows), [None, pa.py_buffer(sb_)])
        est = sa.estimate(fa, fb, kind=kind, k=K, bits=bits).column("estimate").to_numpy()
        out.append((label, w, float(np.sqrt(np.mean((est - truth) ** 2)))))

    ours("oph", 8, "sketchdb OPH 8-bit bins")
    ours("oph", 32, "sketchdb OPH 32-bit bins")
    ours("minhash", 32, "sketchdb MinHash 32-bit")
    for label, f in [
        ("rensa R-MinHash (full)", rensa.RMinHash.digest_matrix_from_token_hash_sets),
        ("rensa R-MinHash _rho (sampled)", rensa.RMinHash.digest_matrix_from_token_hash_sets_rho),
    ]:
        # The rho path samples tokens by position: B's shared tokens in A's order, and shuffled.
        for order, bs in (("B shuffled", b_rows), ("B in A's order", b_same_order)):
            ma = np.array(f(a_rows, K, 42).to_rows(), dtype=np.uint32)
            mb = np.array(f(bs, K, 42).to_rows(), dtype=np.uint32)
            est = (ma == mb).mean(axis=1)
            out.append((f"{label}, {order}", 4 * K, float(np.sqrt(np.mean((est - truth) ** 2)))))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/data")
    ap.add_argument("--sets", type=int, default=100000)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--accuracy", type=int, default=2000, help="pairs for the accuracy table (0: none)")
    ap.add_argument("--filter", default="", help="run only the cases whose call contains this text (or one of TEXT|TEXT...)")
    ap.add_argument("--package", default="", help="a folder holding another build's sketchdb package (before/after runs)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    import rensa

    import sketchdb

    print(f"{a.package or 'this build'}: sketchdb {sketchdb.__version__}, rensa {getattr(rensa, '__version__', '0.5.0')}, {a.sets} sets, {a.docs} docs,"
          f" k={K}, {a.rounds} rounds (medians), cores={os.cpu_count()}, load {os.getloadavg()[0]:.1f}", flush=True)
    results = {}
    threads = [int(t) for t in a.threads.split(",")]
    for t in threads:
        env = dict(os.environ, RAYON_NUM_THREADS=str(t))
        if a.package:
            env["PYTHONPATH"] = os.pathsep.join([a.package, env.get("PYTHONPATH", "")])
        cmd = [sys.executable, __file__, "--worker", "--data", a.data, "--sets", str(a.sets), "--docs", str(a.docs),
               "--rounds", str(a.rounds), "--filter", a.filter]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        for line in p.stdout.splitlines():
            r = json.loads(line)
            results.setdefault((r["workload"], r["shape"], r["what"]), {})[t] = r
    head = " | ".join(f"{t} thread{'s' if t > 1 else ''}: items/s, tokens/s, cpu s" for t in threads)
    print(f"| workload | input | library, call | {head} |")
    print("|---|---|---|" + "---|" * len(threads))
    for (workload, shape, what), by_t in results.items():
        cells = []
        for t in threads:
            r = by_t[t]
            wall = statistics.median(r["walls"])
            cells.append(f"{r['items'] / wall:,.0f} /s, {r['tokens'] / wall / 1e6:,.1f}M tok/s, cpu {statistics.median(r['cpus']):.2f}")
        print(f"| {workload} | {shape} | {what} | " + " | ".join(cells) + " |", flush=True)
    print(f"(load after: {os.getloadavg()[0]:.1f})")
    if a.accuracy:
        sets = load_sets(os.path.join(a.data, "sets-100k.jsonl"), min(a.sets, 20000))
        print(f"\nAccuracy: RMSE against exact Jaccard over {a.accuracy} pairs (J = 0.3 to 0.95, sets of 200+ tokens)")
        print("| sketch | bytes per row | RMSE |\n|---|---|---|")
        for label, w, rmse in accuracy(sets, a.accuracy):
            print(f"| {label} | {w} | {rmse:.4f} |")


if __name__ == "__main__":
    main()
