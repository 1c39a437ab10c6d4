"""Measures the Spark pipeline beside single-machine `sketchdb dedup` on the same documents.

    python examples/python/spark_bench.py DOCS.parquet WORKDIR --partitions 1,2,4,8 [--cli target/release/sketchdb]

For each partition count it runs `sketchdb.spark.dedup` (local[2] unless SPARK_MASTER says
otherwise, Spark UI on for the shuffle bytes) and prints one JSON line: documents/s, seconds
and shuffle bytes per stage, pairs, clusters. With --cli it also times `sketchdb` on the same
documents: `create --lsh T`, `ingest` of a {key, text} JSONL written from the Parquet (not
timed), and `dedup --plan lsh-probe`, and checks that the clusters are the same.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import pyarrow.parquet as pq

from sketchdb.spark import DedupOptions, SketchSpec, dedup, local_session


def clusters(folder):
    groups = {}
    for r in pq.read_table(os.path.join(folder, "clusters")).to_pylist():
        groups.setdefault(r["cluster"], set()).add(r["id"])
    return {frozenset(g) for g in groups.values() if len(g) > 1}


def run_cli(cli, docs, work, threshold):
    src = os.path.join(work, "cli-in.jsonl")
    t = pq.read_table(docs, columns=["id", "text"]).to_pylist()
    with open(src, "w") as f:
        for r in t:
            if r["text"] and any(c.isalnum() for c in r["text"]):
                f.write(json.dumps({"key": r["id"], "text": r["text"]}) + "\n")
    db = os.path.join(work, "cli.sketchdb")
    if os.path.exists(db):
        os.remove(db)
    sh = lambda *a: subprocess.run([cli, "--db", db, *map(str, a)], check=True, capture_output=True, text=True)
    sh("create", "docs", "--kind", "minhash", "--k", "128", "--lsh", threshold)
    t0 = time.perf_counter()
    sh("ingest", "docs", src)
    t1 = time.perf_counter()
    r = sh("--json", "dedup", "docs", "--threshold", threshold, "--plan", "lsh-probe")
    t2 = time.perf_counter()
    got = {frozenset(c["keys"]) for c in map(json.loads, r.stdout.splitlines())}
    return {"ingest_s": round(t1 - t0, 2), "dedup_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
            "documents_per_s": round(len(t) / (t2 - t0), 1)}, got


def main():
    p = argparse.ArgumentParser()
    p.add_argument("docs")
    p.add_argument("work")
    # 0: no repartition (the input splits are the sketch stage's partitions).
    p.add_argument("--partitions", default="4")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--cli")
    p.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"))
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    spark = local_session(a.master, ui=True, driver_memory="4g")
    # A warm-up run on the first 2,000 rows (JVM JIT, Python workers), not reported.
    warm = os.path.join(a.work, "warm.parquet")
    pq.write_table(pq.ParquetFile(a.docs).read_row_group(0).slice(0, 2000), warm)
    dedup(spark, warm, os.path.join(a.work, "warm"), SketchSpec(threshold=a.threshold), overwrite=True)
    seen = None
    for parts in map(int, a.partitions.split(",")):
        out = os.path.join(a.work, f"p{parts}")
        s = dedup(spark, a.docs, out, SketchSpec(threshold=a.threshold), DedupOptions(partitions=parts or None), overwrite=True)
        c = clusters(out)
        same = seen is None or c == seen
        seen = c if seen is None else seen
        print(json.dumps({"run": "spark", "partitions": parts, "documents": s["documents"],
                          "documents_per_s": s["documents_per_second"], "seconds": s["seconds"],
                          "shuffle": s["shuffle"], "candidate_pairs": s["candidate_pairs"],
                          "verified_pairs": s["verified_pairs"], "clusters": s["clusters"], "removed": s["removed"],
                          "rounds": s["rounds"], "same_clusters_as_first": same}), flush=True)
    if a.cli:
        timing, got = run_cli(a.cli, a.docs, a.work, a.threshold)
        print(json.dumps({"run": "sketchdb-cli", **timing, "same_clusters_as_spark": got == seen}), flush=True)
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
