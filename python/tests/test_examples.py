"""The runnable examples run: examples/python/dedup_parquet.py removes exactly the copies."""

import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import REPO, WORDS


def test_dedup_parquet_example(tmp_path):
    rng = random.Random(3)
    originals = [" ".join(rng.choice(WORDS) for _ in range(30)) for _ in range(40)]
    rows, expect_kept = [], []
    for i, t in enumerate(originals):
        rows.append((f"{i:03d}", t))
        expect_kept.append(f"{i:03d}")
    # Exact copies under later ids, and one text without words (kept as it is).
    for j, i in enumerate(range(0, 40, 4)):
        rows.append((f"{100 + j:03d}", originals[i]))
    rows.append(("200", "!!!"))
    expect_kept.append("200")
    rng.shuffle(rows)
    src = tmp_path / "in.parquet"
    out = tmp_path / "out.parquet"
    pq.write_table(pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows], "n": list(range(len(rows)))}), src)
    r = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "dedup_parquet.py"), str(src), str(out), "--id-column", "id"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    kept = pq.read_table(out)
    assert sorted(kept.column("id").to_pylist()) == sorted(expect_kept)
    assert kept.column_names == ["id", "text", "n"]
    assert "51 rows, 10 clusters, 10 removed, 41 kept" in r.stdout
    bad = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "dedup_parquet.py"), str(src), str(out), "--text-column", "body"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "no column 'body'" in bad.stderr
