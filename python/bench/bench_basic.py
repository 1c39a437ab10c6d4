"""Two throughput figures for the first landing of the Python package:

* ``MinHash.bulk`` of N small texts (documents per second), and
* ``Collection.insert_many`` of the same N texts into a durable, LSH-indexed MinHash
  collection (one call = one commit; documents per second).

Usage: python python/bench/bench_basic.py [N]   (default 100000)
The corpus is synthetic (8-20 words from a 2,000-word vocabulary, half near-duplicates).
Timings on a shared machine are noisy: run it a few times and take the best.
"""

import os
import random
import sys
import tempfile
import time

import sketchdb


def corpus(n, seed=1):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(2000)]
    texts = []
    for _ in range(n):
        if texts and rng.random() < 0.5:
            words = rng.choice(texts).split()
            words[rng.randrange(len(words))] = rng.choice(vocab)
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(8, 20))))
    return texts


def best_of(runs, f):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    texts = corpus(n)
    keys = [f"doc{i}" for i in range(n)]
    print(f"cores: {os.cpu_count()}, documents: {n}")
    t = best_of(3, lambda: sketchdb.MinHash.bulk(texts, num_perm=128))
    print(f"MinHash.bulk (128 perms):          {n / t:12,.0f} docs/s  ({t:.2f} s)")

    def insert():
        with tempfile.TemporaryDirectory() as d:
            with sketchdb.open(os.path.join(d, "bench.sketchdb")) as db:
                c = db.create_collection("docs", kind="minhash", k=128, lsh=0.8)
                c.insert_many(keys, texts)

    t = best_of(3, insert)
    print(f"insert_many (minhash 128, lsh 0.8): {n / t:12,.0f} docs/s  ({t:.2f} s, one durable commit)")


if __name__ == "__main__":
    main()
