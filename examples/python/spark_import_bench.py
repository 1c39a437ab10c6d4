"""Times loading a signature Parquet into a sketchdb file: `sketchdb import` (the CLI's bulk
load: records first, the LSH index built once at the end), the CLI importing into a
collection created beforehand (the index kept current batch by batch), and Python's
`sketchdb.spark.import_signatures` (one `insert_many`).

    python examples/python/spark_import_bench.py DOCS.jsonl[.gz]|DOCS.parquet WORKDIR --cli target/release/sketchdb [--n 100000]

The signatures are made here with the pipeline's kernels (no Spark run), in the layout
`sketchdb.spark dedup` leaves: WORKDIR/run/signatures/*.parquet with the `sketchdb.signatures`
metadata, and WORKDIR/run/spec.json. Prints one JSON line; all three collections are checked
to hold the same records.
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import time

import pyarrow as pa
import pyarrow.parquet as pq

import sketchdb
from sketchdb.spark import Kernels, SketchSpec, import_signatures


def read_texts(path, n):
    if path.endswith(".parquet"):
        t = pq.read_table(path, columns=["id", "text"]).slice(0, n)
        return [str(i) for i in t.column("id").to_pylist()], t.column("text").to_pylist()
    ids, texts = [], []
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and isinstance(r.get("text"), str) and r.get("id") is not None:
                ids.append(str(r["id"]))
                texts.append(r["text"])
                if len(ids) == n:
                    break
    return ids, texts


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("docs")
    ap.add_argument("work")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--threshold", type=float, default=0.8)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    run = os.path.join(a.work, "run")
    os.makedirs(os.path.join(run, "signatures"))
    ids, texts = read_texts(a.docs, a.n)
    spec = SketchSpec(threshold=a.threshold).with_banding()
    sigs = Kernels(spec).sketch(pa.array(texts)).column(0)
    keep = sigs.is_valid()
    table = pa.table({"id": pa.array(ids).filter(keep), "signature": sigs.filter(keep)})
    meta = {b"sketchdb.signatures": spec.signature_metadata().encode()}
    table = table.replace_schema_metadata(meta)
    pq.write_table(table, os.path.join(run, "signatures", "part-00000.parquet"))
    with open(os.path.join(run, "spec.json"), "w") as f:
        f.write(spec.to_json())
    n = table.num_rows
    out = {"documents": n, "signature_bytes": Kernels(spec).width, "bands": spec.bands, "rows": spec.rows}

    bulk = os.path.join(a.work, "bulk.sketchdb")
    out["cli_bulk_s"] = timed([a.cli, "--db", bulk, "import", run, "--into", "docs"])
    inc = os.path.join(a.work, "incremental.sketchdb")
    create = ["--kind", "minhash", "--k", str(spec.k), "--lsh", str(spec.threshold)]
    create += ["--bands", str(spec.bands), "--rows", str(spec.rows)]
    subprocess.run([a.cli, "--db", inc, "create", "docs", *create], check=True, capture_output=True)
    out["cli_into_existing_s"] = timed([a.cli, "--db", inc, "import", run, "--into", "docs"])
    py = os.path.join(a.work, "python.sketchdb")
    start = time.perf_counter()
    import_signatures(run, py, "docs")
    out["python_import_signatures_s"] = time.perf_counter() - start
    for k in ("cli_bulk_s", "cli_into_existing_s", "python_import_signatures_s"):
        out[k[: -len("_s")] + "_docs_per_s"] = round(n / out[k], 1)
        out[k] = round(out[k], 3)
    sample = ids[:: max(1, n // 200)]
    with sketchdb.open(bulk, read_only=True) as b, sketchdb.open(inc, read_only=True) as i:
        with sketchdb.open(py, read_only=True) as p:
            for key in sample:
                if key in b["docs"]:
                    assert b["docs"][key] == i["docs"][key] == p["docs"][key], key
            stats = [d["docs"].stats() for d in (b, i, p)]
    out["index"] = [s["index"] for s in stats]
    assert len({s["live"] for s in stats}) == 1
    print(json.dumps(out))


if __name__ == "__main__":
    main()
