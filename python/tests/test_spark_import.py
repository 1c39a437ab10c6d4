"""`sketchdb import` (the CLI) of the Spark pipeline's signature Parquet: the configuration
travels in the files' footer, and the collection the CLI builds equals the one Python's
`import_signatures` builds (same parameters, recipe, banding, records and answers)."""

import json

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import sketchdb  # noqa: E402
from conftest import REPO  # noqa: E402
from sketchdb.spark import SketchSpec, dedup, import_signatures, local_session  # noqa: E402

PROBE = "a lighthouse keeper on a rocky coast watches ships at night"


@pytest.fixture(scope="module")
def spark():
    return local_session()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The bundled sample as Parquet (id = file name)."""
    files = sorted((REPO / "samples" / "docs").iterdir())
    ids = [p.name for p in files]
    texts = [p.read_text() for p in files]
    path = tmp_path_factory.mktemp("sample") / "sample.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts}), path)
    return path, ids, texts


def footer_spec(run):
    """The `sketchdb.signatures` metadata Spark kept in the first part file's footer."""
    part = sorted((run / "signatures").glob("part-*.parquet"))[0]
    row = json.loads(pq.read_metadata(part).metadata[b"org.apache.spark.sql.parquet.row.metadata"])
    field = next(f for f in row["fields"] if f["name"] == "signature")
    return json.loads(field["metadata"]["sketchdb.signatures"])


def answers(coll, texts):
    out = []
    for t in texts + [PROBE]:
        for q in (dict(threshold=0.5), dict(threshold=0.2), dict(threshold=0.5, plan="lsh-probe")):
            out.append(sorted((h.key, h.estimate, h.lower, h.upper) for h in coll.query(text=t, **q)))
        out.append([(h.key, h.estimate) for h in coll.top_k(text=t, k=3)])
    return out


@pytest.mark.parametrize(
    "spec",
    [
        SketchSpec(threshold=0.5),
        SketchSpec(kind="oph", k=256, threshold=0.7, recipe="words-5"),
        SketchSpec(kind="bbit", k=256, bits=8, seed=5, threshold=0.6, ngram=4, token_seed=3),
        SketchSpec(threshold=0.5, recipe="text-dedup", k=64),
    ],
    ids=["minhash", "oph-words5", "bbit-ngrams", "text-dedup"],
)
def test_cli_import_equals_python_import(spark, sample, cli, tmp_path, spec):
    path, ids, texts = sample
    run = tmp_path / "run"
    dedup(spark, str(path), str(run), spec)
    meta = footer_spec(run)
    assert meta["version"] == 1 and meta["recipe"] == spec.recipe and meta["kind"] == spec.kind
    full = spec.with_banding()
    assert (meta["bands"], meta["rows"], meta["threshold"]) == (full.bands, full.rows, spec.threshold)

    py_db, cli_db = tmp_path / "py.sketchdb", tmp_path / "cli.sketchdb"
    assert import_signatures(str(run), py_db, "docs") == len(ids)
    r = cli("--db", cli_db, "--json", "import", run, "--into", "docs")
    summary = json.loads(r.stderr.strip().splitlines()[-1])
    assert summary["inserted"] == len(ids) and summary["configuration"] == "metadata"

    with sketchdb.open(py_db, read_only=True) as p, sketchdb.open(cli_db, read_only=True) as c:
        a, b = p["docs"], c["docs"]
        sa, sb = a.stats(), b.stats()
        for f in ("kind", "size", "bits", "seed", "live", "record_width"):
            assert sa[f] == sb[f], f
        assert sa["index"]["type"] == sb["index"]["type"] == "lsh"
        assert (sa["index"]["bands"], sa["index"]["rows"]) == (sb["index"]["bands"], sb["index"]["rows"])
        assert a.spec() == b.spec()
        for i in ids:
            assert a[i] == b[i]
        assert answers(a, texts) == answers(b, texts)
        assert any(len(x) > 1 for x in answers(b, texts))

    # The same run again adds nothing; --upsert replaces every record by itself.
    again = json.loads(cli("--db", cli_db, "--json", "import", run, "--into", "docs").stderr.strip().splitlines()[-1])
    assert again["inserted"] == 0 and again["skipped"] == len(ids)
    up = cli("--db", cli_db, "--json", "import", run / "signatures", "--into", "docs", "--upsert")
    assert json.loads(up.stderr.strip().splitlines()[-1])["replaced"] == len(ids)


def test_flags_that_contradict_the_footer_are_refused(spark, sample, cli, tmp_path):
    path, _, _ = sample
    run = tmp_path / "run"
    dedup(spark, str(path), str(run), SketchSpec(threshold=0.5))
    db = tmp_path / "x.sketchdb"
    r = cli("--db", db, "import", run, "--into", "docs", "--k", "64", check=False)
    assert r.returncode == 2 and "--k" in r.stderr and "k = 128" in r.stderr
    r = cli("--db", db, "import", run, "--into", "docs", "--recipe", "words-5", check=False)
    assert r.returncode == 2 and "recipe" in r.stderr
    assert not db.exists() or "docs" not in sketchdb.open(db, read_only=True).collections()
