"""The Spark pipeline against `sketchdb dedup` (the CLI) and against an independent
reference (band equality on the signatures, then the estimator), its determinism across
runs and partitionings, the bucket cap, and the import of its signatures."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import sketchdb  # noqa: E402
from conftest import REPO  # noqa: E402
from sketchdb.spark import DedupOptions, SketchSpec, dedup, import_signatures, local_session  # noqa: E402

GEN = REPO.parent / "shared" / "bench" / "gen_workloads.py"
THRESHOLD = 0.8


@pytest.fixture(scope="module")
def spark():
    return local_session()


def read_table(path):
    return pq.read_table(str(path)).to_pylist()


def clusters_of(out):
    """Components of size >= 2 as a set of frozensets, from clusters/."""
    groups = {}
    for r in read_table(pathlib.Path(out) / "clusters"):
        groups.setdefault(r["cluster"], set()).add(r["id"])
    return {frozenset(g) for g in groups.values() if len(g) > 1}


def pairs_of(out):
    return {(r["a"], r["b"]): r["estimate"] for r in read_table(pathlib.Path(out) / "pairs")}


def cli_clusters(cli, tmp, ids, texts, threshold=THRESHOLD):
    """`sketchdb dedup` of the same documents: a collection with the LSH index for the
    threshold, the LSH self-join plan (the candidates a banding gives, each verified)."""
    src = tmp / "cli-in.jsonl"
    with open(src, "w") as f:
        for i, t in zip(ids, texts):
            f.write(json.dumps({"key": i, "text": t}) + "\n")
    db = tmp / "cli.sketchdb"
    cli("--db", db, "create", "docs", "--kind", "minhash", "--k", "128", "--lsh", threshold)
    cli("--db", db, "ingest", "docs", src)
    r = cli("--db", db, "--json", "dedup", "docs", "--threshold", threshold, "--plan", "lsh-probe")
    clusters = {frozenset(c["keys"]) for c in map(json.loads, r.stdout.splitlines())}
    summary = json.loads(r.stderr.strip().splitlines()[-1])
    return clusters, summary


def reference_pairs(ids, texts, spec):
    """Pairs sharing every value of some band, verified by the estimator: computed here from
    the sketches' hash values, without the pipeline's kernels."""
    sk = sketchdb.MinHash.bulk(texts, **spec.sketch_kwargs())
    b, r = spec.bands, spec.rows
    cands = set()
    for band in range(b):
        buckets = {}
        for i, s in enumerate(sk):
            buckets.setdefault(tuple(s.hashvalues[band * r : (band + 1) * r]), []).append(i)
        for members in buckets.values():
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    cands.add((members[x], members[y]))
    out = {}
    for x, y in cands:
        e = sk[x].similarity(sk[y])
        if e >= spec.threshold:
            a, c = sorted((ids[x], ids[y]))
            out[(a, c)] = e
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The bundled sample as Parquet (id = file name, the CLI's key for a folder)."""
    files = sorted((REPO / "samples" / "docs").iterdir())
    ids = [p.name for p in files]
    texts = [p.read_text() for p in files]
    path = tmp_path_factory.mktemp("sample") / "sample.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts}), path)
    return path, ids, texts


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """A generated documents workload of 3,000 documents (../shared/bench)."""
    if not GEN.exists():
        pytest.skip(f"{GEN} not found (the shared benchmark generator sits beside the repository)")
    out = tmp_path_factory.mktemp("docs")
    subprocess.run(
        [sys.executable, str(GEN), "docs", "--n", "3000", "--seed", "3", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    path = out / "docs-3k.parquet"
    rows = pq.read_table(path, columns=["id", "text"]).to_pylist()
    good = [r for r in rows if r["text"] and any(c.isalnum() for c in r["text"])]
    return path, [r["id"] for r in good], [r["text"] for r in good], len(rows) - len(good)


def test_sample_equals_cli(spark, sample, cli, tmp_path):
    path, ids, texts = sample
    s = dedup(spark, str(path), str(tmp_path / "out"), SketchSpec(threshold=THRESHOLD))
    want, cli_summary = cli_clusters(cli, tmp_path, ids, texts)
    got = clusters_of(tmp_path / "out")
    assert got == want and want
    assert s["verified_pairs"] == cli_summary["pairs"]
    assert set(pairs_of(tmp_path / "out")) == set(reference_pairs(ids, texts, SketchSpec(threshold=THRESHOLD).with_banding()))


def test_docs_equal_cli_and_stable(spark, docs, cli, tmp_path):
    path, ids, texts, bad = docs
    spec = SketchSpec(threshold=THRESHOLD)
    runs = {}
    for name, parts in (("p4", 4), ("p4-again", 4), ("p1", 1)):
        s = dedup(spark, str(path), str(tmp_path / name), spec, DedupOptions(partitions=parts))
        runs[name] = (clusters_of(tmp_path / name), pairs_of(tmp_path / name), s)
    got, pairs, s = runs["p4"]
    # Identical across two runs and across 1 vs 4 partitions (pairs with their estimates).
    assert runs["p4-again"][:2] == (got, pairs)
    assert runs["p1"][:2] == (got, pairs)
    # The same clusters and number of verified pairs as `sketchdb dedup`.
    want, cli_summary = cli_clusters(cli, tmp_path, ids, texts)
    assert got == want and len(want) > 50
    assert s["verified_pairs"] == cli_summary["pairs"] == len(pairs)
    # The same pairs and estimates as the independent reference.
    ref = reference_pairs(ids, texts, spec.with_banding())
    assert pairs == ref
    # Bad rows (empty or punctuation-only text) are rejected and reported, not dropped silently.
    assert sum(s["rejected"].values()) == bad == s["rejected"].get("no tokens")
    assert s["documents"] == len(ids)
    # Outputs agree with each other: kept + removed = sketched documents, kept/ has every input column.
    kept = pq.read_table(str(tmp_path / "p4" / "kept"))
    assert kept.num_rows == s["kept"] == len(ids) - s["removed"]
    assert set(pq.read_schema(str(path)).names) <= set(kept.schema.names)
    removed = {r["id"] for r in read_table(tmp_path / "p4" / "removed")}
    assert removed == {i for g in got for i in g} - {min(g) for g in got}


def test_bucket_above_cap_is_reported(spark, tmp_path):
    base = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat all day long"
    ids = [f"c{i:03d}" for i in range(40)] + [f"u{i:03d}" for i in range(20)]
    texts = [base] * 40 + [f"unrelated words number {i} " + " ".join(f"w{i}x{j}" for j in range(12)) for i in range(20)]
    path = tmp_path / "cap.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts}), path)
    spec = SketchSpec(threshold=THRESHOLD)
    star = dedup(spark, str(path), str(tmp_path / "star"), spec, DedupOptions(bucket_cap=10, oversize="star"))
    over = star["oversized_buckets"]
    b = spec.with_banding().bands
    # Every band of the 40 copies is one bucket of 40 > cap: reported, then linked as a star.
    assert over["count"] == b and over["largest"] == 40 and over["handled"] == "star"
    assert {r["n"] for r in read_table(tmp_path / "star" / "oversized_buckets")} == {40}
    assert clusters_of(tmp_path / "star") == {frozenset(ids[:40])}
    assert star["candidate_pairs"] == 39
    drop = dedup(spark, str(path), str(tmp_path / "drop"), spec, DedupOptions(bucket_cap=10, oversize="drop"))
    assert drop["oversized_buckets"]["count"] == b and drop["candidate_pairs"] == 0
    assert clusters_of(tmp_path / "drop") == set()
    full = dedup(spark, str(path), str(tmp_path / "full"), spec, DedupOptions(bucket_cap=100))
    assert full["oversized_buckets"]["count"] == 0 and full["candidate_pairs"] == 40 * 39 // 2


def test_imported_signatures_answer_like_a_direct_collection(spark, sample, tmp_path):
    path, ids, texts = sample
    run = tmp_path / "run"
    dedup(spark, str(path), str(run), SketchSpec(threshold=0.5))
    db = tmp_path / "served.sketchdb"
    assert import_signatures(str(run), db, "imported") == len(ids)
    spec = SketchSpec(threshold=0.5).with_banding()
    with sketchdb.open(db) as d:
        direct = d.create_collection("direct", **spec.collection_kwargs())
        direct.insert_many(ids, texts)
        imported = d["imported"]
        assert imported.stats()["index"] == direct.stats()["index"]
        for t in texts + ["a lighthouse keeper on a rocky coast watches ships at night"]:
            for q in (dict(threshold=0.5), dict(threshold=0.2)):
                a = [(h.key, h.estimate, h.lower, h.upper) for h in imported.query(text=t, **q)]
                b = [(h.key, h.estimate, h.lower, h.upper) for h in direct.query(text=t, **q)]
                assert a == b
        for i in ids:
            assert imported[i] == direct[i]
