"""Deduplicate a corpus on Spark with sketchdb's kernels, then serve the result.

    python examples/python/spark_dedup.py [INPUT.parquet|INPUT.jsonl[.gz]] [WORKDIR]

Without arguments it writes a small corpus with planted near-duplicates and uses that. It runs
the pipeline (local[2]), prints the summary, loads the kept documents' signatures into a
sketchdb file, and asks that file whether a new document is a near-duplicate of anything
kept. Needs `pip install pyspark pyarrow` and Java 17.
"""

import json
import os
import random
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

import sketchdb
from sketchdb.spark import DedupOptions, SketchSpec, dedup, import_signatures, local_session


def planted_corpus(path, n=2000, seed=1):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    ids, texts = [], []
    for i in range(n):
        if texts and rng.random() < 0.2:
            words = rng.choice(texts).split()
            for _ in range(rng.randint(0, 3)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
        else:
            words = [rng.choice(vocab) for _ in range(rng.randint(60, 200))]
        ids.append(f"doc{i:05d}")
        texts.append(" ".join(words))
    pq.write_table(pa.table({"id": ids, "text": texts, "source": ["example"] * n}), path)
    return texts


def main():
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="sketchdb-spark-")
    if len(sys.argv) > 1:
        source, probe = sys.argv[1], None
    else:
        source = os.path.join(work, "corpus.parquet")
        probe = planted_corpus(source)[7]
    spark = local_session("local[2]")
    out = os.path.join(work, "dedup")
    summary = dedup(spark, source, out, SketchSpec(threshold=0.8), DedupOptions(partitions=4), overwrite=True)
    print(json.dumps({k: summary[k] for k in ("documents", "verified_pairs", "clusters", "removed", "rounds", "seconds")}, indent=1))
    db = os.path.join(work, "kept.sketchdb")
    if os.path.exists(db):
        os.remove(db)
    n = import_signatures(out, db, "kept", only_kept=True)
    print(f"{n} kept documents loaded into {db}")
    if probe is not None:
        with sketchdb.open(db, read_only=True) as d:
            for hit in d["kept"].query(text=probe + " one more sentence", threshold=0.8):
                print(f"near-duplicate of {hit.key}: J ~ {hit.estimate:.3f} [{hit.lower:.3f}, {hit.upper:.3f}]")
    spark.stop()


if __name__ == "__main__":
    main()
