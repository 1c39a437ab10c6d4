"""Input handling of the Spark pipeline: bad input is reported by a SparkDedupError naming
what and where (not only a Java stack trace), bad rows are skipped and listed, ids can be
derived deterministically, JSON lines (plain and gzip) read like Parquet."""

import gzip
import json
import subprocess
import sys

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from conftest import make_corpus  # noqa: E402
from sketchdb.spark import DedupOptions, SketchSpec, SparkDedupError, dedup, local_session  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    return local_session()


def parquet(path, **cols):
    pq.write_table(pa.table(cols), path)
    return str(path)


def test_missing_columns_named(spark, tmp_path):
    p = parquet(tmp_path / "x.parquet", id=["a", "b"], body=["x y", "y z"])
    with pytest.raises(SparkDedupError, match=r"no text column 'text' \(its columns: body, id;"):
        dedup(spark, p, str(tmp_path / "o1"))
    with pytest.raises(SparkDedupError, match=r"no id column 'key'"):
        dedup(spark, p, str(tmp_path / "o2"), options=DedupOptions(text_column="body", id_column="key"))
    with pytest.raises(SparkDedupError, match=r"no such file"):
        dedup(spark, str(tmp_path / "nothing.parquet"), str(tmp_path / "o3"))


def test_duplicate_ids_named(spark, tmp_path):
    p = parquet(tmp_path / "d.parquet", id=["a", "b", "a", "c", "c", "c"], text=["one two three"] * 6)
    with pytest.raises(SparkDedupError, match=r"2 document ids occur more than once, for example 'a' \(2 rows\), 'c' \(3 rows\)"):
        dedup(spark, p, str(tmp_path / "o"))


def test_bad_rows_skipped_and_listed(spark, tmp_path):
    texts = make_corpus(40, seed=3)
    ids = [f"k{i:02d}" for i in range(40)]
    texts[5], texts[9], texts[11] = None, "", "... !!! ---"
    ids[20] = None
    p = parquet(tmp_path / "b.parquet", id=ids, text=texts)
    s = dedup(spark, p, str(tmp_path / "o"), SketchSpec(threshold=0.5))
    assert s["rejected"] == {"null text": 1, "no tokens": 2, "null id": 1}
    rej = {(r["id"], r["reason"]) for r in pq.read_table(str(tmp_path / "o" / "rejected")).to_pylist()}
    assert rej == {("k05", "null text"), ("k09", "no tokens"), ("k11", "no tokens"), (None, "null id")}
    assert s["documents"] == 36
    sig_ids = set(pq.read_table(str(tmp_path / "o" / "signatures")).column("id").to_pylist())
    assert sig_ids == set(ids) - {"k05", "k09", "k11", None}
    with pytest.raises(SparkDedupError, match=r"4 rows cannot be sketched \(.*'k05': null text"):
        dedup(spark, p, str(tmp_path / "o2"), options=DedupOptions(on_bad="fail"))


def test_jsonl_gz_equals_parquet_and_malformed_lines_reported(spark, tmp_path):
    texts = make_corpus(60, seed=4, near=0.6)
    ids = [f"j{i:02d}" for i in range(60)]
    lines = [json.dumps({"id": i, "text": t, "extra": {"n": n}}) for n, (i, t) in enumerate(zip(ids, texts))]
    lines.insert(17, '{"id": "broken", "text": "cut in ha')
    gz = tmp_path / "in.jsonl.gz"
    with gzip.open(gz, "wt") as f:
        f.write("\n".join(lines) + "\n")
    pq_path = parquet(tmp_path / "in.parquet", id=ids, text=texts)
    spec = SketchSpec(threshold=0.5)
    a = dedup(spark, str(gz), str(tmp_path / "a"), spec)
    b = dedup(spark, pq_path, str(tmp_path / "b"), spec)
    assert a["rejected"] == {"malformed JSON line": 1}
    assert a["verified_pairs"] == b["verified_pairs"] > 0
    rows = lambda d: sorted(map(tuple, (r.values() for r in pq.read_table(str(tmp_path / d / "clusters")).to_pylist())))
    assert rows("a") == rows("b")
    kept = pq.read_table(str(tmp_path / "a" / "kept"))
    assert "extra" in kept.schema.names and kept.num_rows == a["kept"]


def test_nested_text_and_dictionary_ids_read_like_flat_columns(spark, tmp_path):
    # A struct's field (``meta.body``) as the text and a dictionary-encoded (categorical) id
    # column give the same clusters as plain top-level columns.
    texts = make_corpus(50, seed=6, near=0.6)
    ids = [f"n{i:02d}" for i in range(50)]
    flat = parquet(tmp_path / "flat.parquet", id=ids, text=texts)
    meta = pa.array([{"body": t, "lang": "en"} for t in texts])
    nested = parquet(tmp_path / "nested.parquet", id=pa.array(ids).dictionary_encode(), meta=meta)
    spec = SketchSpec(threshold=0.5)
    a = dedup(spark, flat, str(tmp_path / "a"), spec)
    b = dedup(spark, nested, str(tmp_path / "b"), spec, DedupOptions(text_column="meta.body"))
    assert a["verified_pairs"] == b["verified_pairs"] > 0
    rows = lambda d: sorted(map(tuple, (r.values() for r in pq.read_table(str(tmp_path / d / "clusters")).to_pylist())))
    assert rows("a") == rows("b")
    with pytest.raises(SparkDedupError, match=r"no text column 'meta.nothing'"):
        dedup(spark, nested, str(tmp_path / "c"), spec, DedupOptions(text_column="meta.nothing"))
    with pytest.raises(SparkDedupError, match=r"column 'meta' is struct<.*>, not a string"):
        dedup(spark, nested, str(tmp_path / "d"), spec, DedupOptions(text_column="meta"))
    # A top-level name with a dot is that column (found before any struct path), in the text
    # and in content-derived ids.
    dotted = parquet(tmp_path / "dotted.parquet", **{"body.text": texts, "src.name": ["x"] * 50})
    c = dedup(spark, dotted, str(tmp_path / "e"), spec, DedupOptions(text_column="body.text", id_column=None, derive_id="content"))
    # Rows equal in every column share a content id and collapse into one.
    assert c["documents"] == len(set(texts)) and c["identical_rows"] == 50 - len(set(texts))
    assert c["verified_pairs"] > 0


def test_derived_ids_are_deterministic(spark, tmp_path):
    texts = make_corpus(30, seed=5, near=0.6)
    p = parquet(tmp_path / "n.parquet", text=texts, lang=["en"] * 30)
    spec = SketchSpec(threshold=0.5)
    runs = []
    for name, parts in (("r1", 1), ("r2", 3)):
        dedup(spark, p, str(tmp_path / name), spec, DedupOptions(id_column=None, derive_id="file-row", partitions=parts))
        runs.append(sorted(map(tuple, (r.values() for r in pq.read_table(str(tmp_path / name / "clusters")).to_pylist()))))
    assert runs[0] == runs[1]
    assert {r[0] for r in runs[0]} == {f"n.parquet:{i}" for i in range(30)}
    # Content ids: rows identical in every column collapse into one (counted).
    rows = texts + texts[:4]
    p2 = parquet(tmp_path / "c.parquet", text=rows, lang=["en"] * 34)
    s = dedup(spark, p2, str(tmp_path / "c"), spec, DedupOptions(id_column=None, derive_id="content"))
    assert s["identical_rows"] == len(rows) - len(set(rows)) >= 4 and s["documents"] == len(set(rows))
    kept = pq.read_table(str(tmp_path / "c" / "kept"))
    assert "sketchdb_id" in kept.schema.names


def test_cli_entry_reports_bad_input_in_one_line(tmp_path):
    p = parquet(tmp_path / "x.parquet", id=["a"], body=["x y"])
    r = subprocess.run(
        [sys.executable, "-m", "sketchdb.spark", "dedup", p, str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("sketchdb.spark: input") and "no text column 'text'" in last


def test_cli_family_reaches_the_signatures(tmp_path):
    # `--family` of the CLI entry: the run's signatures are those of that family (equal to the
    # Arrow kernel's with it, not to the default family's), and spec.json records it.
    texts = make_corpus(40, seed=3)
    ids = [f"d{i}" for i in range(len(texts))]
    p = parquet(tmp_path / "f.parquet", id=ids, text=texts)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sketchdb.spark", "dedup", p, str(out), "--threshold", "0.7"]
    r = subprocess.run(cmd + ["--family", "mix-multiply-shift"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "spec.json").read_text())["family"] == "mix-multiply-shift"
    got = {row["id"]: row["signature"] for row in pq.read_table(str(out / "signatures")).to_pylist()}
    import sketchdb.arrow as sa

    want = sa.sketch(pa.array(texts), family="mix-multiply-shift").to_pylist()
    default = sa.sketch(pa.array(texts)).to_pylist()
    assert got == dict(zip(ids, want))
    assert want != default
    r = subprocess.run(cmd + ["--family", "no-such-family", "--overwrite"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("sketchdb.spark: sketch settings: ") and "no-such-family" in last, last

