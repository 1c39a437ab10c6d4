"""The reverse direction: a new batch matched on Spark against an existing sketchdb file,
opened read-only on the executors, gives what the collection's own query gives."""

import pathlib

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import sketchdb  # noqa: E402
from conftest import make_corpus  # noqa: E402
from sketchdb.spark import SketchSpec, SparkDedupError, dedup_against, local_session  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    return local_session()


# The default family, and a collection made in the 64-bit family (as every MinHash collection
# was before the 32-bit lane family): the batch is sketched in the collection's own.
@pytest.mark.parametrize("family", [None, "mix-multiply-shift"])
def test_batch_against_existing_file(spark, tmp_path, family):
    corpus = make_corpus(300, seed=11, near=0.5)
    old, new = corpus[:200], corpus[200:]
    db = tmp_path / "old.sketchdb"
    spec = SketchSpec(threshold=0.7, family=family).with_banding()
    with sketchdb.open(db) as d:
        d.create_collection("old", **spec.collection_kwargs()).insert_many([f"o{i}" for i in range(200)], old)
    before = db.read_bytes()
    ids = [f"n{i}" for i in range(100)]
    batch = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ids, "text": new}), batch)
    s = dedup_against(spark, str(batch), str(db), "old", str(tmp_path / "out"), threshold=0.7)
    got = {}
    for r in pq.read_table(str(tmp_path / "out" / "matches")).to_pylist():
        got.setdefault(r["id"], set()).add((r["match"], r["estimate"], r["lower"], r["upper"]))
    want = {}
    with sketchdb.open(db, read_only=True) as d:
        coll = d["old"]
        assert coll.stats()["family"] == (family or "mix-multiply-shift-32")
        for i, t in zip(ids, new):
            hits = {(h.key, h.estimate, h.lower, h.upper) for h in coll.query(text=t, threshold=0.7)}
            if hits:
                want[i] = hits
    assert got == want and want
    assert s["matched"] == len(want) and s["new"] == 100 - len(want)
    new_ids = set(pq.read_table(str(tmp_path / "out" / "new")).column("id").to_pylist())
    assert new_ids == set(ids) - set(want)
    # Opened read-only everywhere: the file is unchanged.
    assert db.read_bytes() == before


def test_missing_collection_named(spark, tmp_path):
    db = tmp_path / "e.sketchdb"
    with sketchdb.open(db) as d:
        d.create_collection("x", lsh=0.8)
    batch = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": ["a"], "text": ["x y z"]}), batch)
    with pytest.raises(SparkDedupError, match=r"no collection 'y' \(it has: x\)"):
        dedup_against(spark, str(batch), str(db), "y", str(tmp_path / "o"))
