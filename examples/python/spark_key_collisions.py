"""Measures how often LSH band keys collide: pairs of documents that share a (band, key)
bucket without sharing that band's values, with the index's 32-bit keys and with the 64-bit
keys `sketchdb.spark` buckets on, beside the count expected from the key width; then projects
both to a larger corpus.

    python examples/python/spark_key_collisions.py DOCS.parquet|DOCS.jsonl[.gz] [--n 100000] [--project 1e9]

MinHash k = 128 at 32 bits and the index's banding at the threshold (14 x 9 at 0.8), so a
band's values are bytes [4 r i, 4 r (i + 1)) of the signature and band equality is checked on
the bytes themselves, independently of any key. Prints one JSON line.
"""

import argparse
import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sketchdb import arrow
from sketchdb.spark import SketchSpec


def pairs(groups_counts):
    c = groups_counts.astype(np.float64)
    return float((c * (c - 1) / 2).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("docs")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--project", type=float, default=1e9)
    a = ap.parse_args()
    if a.docs.endswith(".parquet"):
        table = pq.read_table(a.docs, columns=["text"])
    else:  # JSON lines, plain or gzip; lines that are not a JSON object with a text are skipped
        rows = []
        with (gzip.open if a.docs.endswith(".gz") else open)(a.docs, "rt", errors="replace") as f:
            for line in f:
                try:
                    t = json.loads(line).get("text")
                except (ValueError, AttributeError):
                    continue
                if isinstance(t, str):
                    rows.append(t)
                if len(rows) == a.n:
                    break
        table = pa.table({"text": rows})
    texts = table.column("text").slice(0, a.n).combine_chunks()
    spec = SketchSpec(threshold=a.threshold).with_banding()
    kw = spec.kernel_kwargs()
    sigs = arrow.sketch(texts, on_error="null", **kw)
    width = arrow.signature_width(**kw)
    sigs = sigs.filter(sigs.is_valid()).cast(pa.binary(width))
    n, b, r = len(sigs), spec.bands, spec.rows
    raw = np.frombuffer(sigs.buffers()[1], dtype=np.uint8)[: n * width]
    values = raw.reshape(n, -1)[:, : 4 * spec.k].view(np.uint32)
    out = {"documents": n, "bands": b, "rows": r}
    for bits in (32, 64):
        keys = arrow.band_keys(sigs, bands=b, rows=r, key_bits=bits, **kw).column("key").to_numpy().reshape(n, b)
        shared = same = 0.0
        for band in range(b):
            vals = np.ascontiguousarray(values[:, band * r : (band + 1) * r]).view(np.dtype((np.void, 4 * r))).ravel()
            _, vid = np.unique(vals, return_inverse=True)
            _, kcount = np.unique(keys[:, band], return_counts=True)
            _, bcount = np.unique(np.stack([keys[:, band], vid.astype(np.uint64)], axis=1), axis=0, return_counts=True)
            shared += pairs(kcount)
            same += pairs(bcount)
        out[f"key{bits}"] = {"candidate_pairs": shared, "band_equal_pairs": same, "spurious_pairs": shared - same}
    # Expected spurious pairs: pairs of documents whose band values differ, times 2^-bits.
    differ = 0.0
    for band in range(b):
        vals = np.ascontiguousarray(values[:, band * r : (band + 1) * r]).view(np.dtype((np.void, 4 * r))).ravel()
        _, c = np.unique(vals, return_counts=True)
        differ += n * (n - 1) / 2 - pairs(c)
    out["expected_spurious"] = {"key32": differ / 2**32, "key64": differ / 2**64}
    m = a.project
    # At m documents whose band values are almost all distinct: b * C(m, 2) / 2^bits pairs, and
    # each bucket holds about m / 2^bits documents of other band values.
    out["projected"] = {
        "documents": m,
        "spurious_pairs_key32": b * m * (m - 1) / 2 / 2**32,
        "spurious_pairs_key64": b * m * (m - 1) / 2 / 2**64,
        "spurious_members_per_bucket_key32": m / 2**32,
        "spurious_members_per_bucket_key64": m / 2**64,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
