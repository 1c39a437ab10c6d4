"""The database from Python: CLI interoperability, persistence, queries against brute
force, concurrency, insert_many's all-or-nothing rule, typed errors."""

import json
import subprocess
import sys
import threading

import pytest

import sketchdb
from conftest import make_corpus, write_jsonl


def test_python_writes_cli_reads(tmp_path, cli, corpus):
    path = tmp_path / "py.sketchdb"
    with sketchdb.open(path) as db:
        docs = db.create_collection("docs", kind="oph", k=128, bits=16, lsh=0.6)
        keys = [f"d{i}" for i in range(len(corpus))]
        assert docs.insert_many(keys, corpus).written == len(corpus)
        py_hits = {h.key: (h.estimate, h.lower, h.upper) for h in docs.query(key="d7", threshold=0.3)}
    stats = [json.loads(line) for line in cli("--db", path, "--json", "stats").stdout.splitlines()]
    mine = [s for s in stats if s.get("collection") == "docs"]
    assert mine and mine[0]["live"] == len(corpus)
    out = cli("--db", path, "--json", "query", "docs", "d7", "--threshold", "0.3").stdout
    cli_hits = {h["key"]: (h["estimate"], h["lower"], h["upper"]) for h in map(json.loads, out.splitlines())}
    assert cli_hits == py_hits
    cli("--db", path, "verify")


def test_cli_writes_python_reads(tmp_path, cli, corpus):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, [{"key": f"d{i}", "text": t} for i, t in enumerate(corpus)])
    path = tmp_path / "cli.sketchdb"
    cli("--db", path, "create", "docs", "--kind", "minhash", "--k", "64", "--lsh", "0.5")
    cli("--db", path, "ingest", "docs", src)
    out = cli("--db", path, "--json", "query", "docs", "--text", corpus[3], "--top-k", "5").stdout
    cli_hits = [(h["key"], h["estimate"]) for h in map(json.loads, out.splitlines())]
    with sketchdb.open(path, create=False) as db:
        assert db.collections() == ["docs"]
        docs = db["docs"]
        assert len(docs) == len(corpus) and "d3" in docs and "nope" not in docs
        assert docs.stats()["index"]["type"] == "lsh"
        assert [(h.key, h.estimate) for h in docs.top_k(text=corpus[3], k=5)] == cli_hits
        # Writing from Python into the CLI's collection, then the CLI sees it.
        docs.insert("new", text=corpus[3])
    out = cli("--db", path, "--json", "query", "docs", "new", "--threshold", "0.99").stdout
    assert "new" in [json.loads(line)["key"] for line in out.splitlines()]


def test_data_survives_a_new_interpreter(tmp_path, corpus):
    path = tmp_path / "p.sketchdb"
    with sketchdb.open(path) as db:
        c = db.create_collection("c", kind="simhash", bits=64, simhash_radius=3)
        c.insert_many([f"k{i}" for i in range(50)], corpus[:50])
        c.delete("k0")
        expected = [(h.key, h.distance) for h in c.hamming(key="k1", radius=8)]
    script = f"""
import json, sketchdb
with sketchdb.open({str(path)!r}, create=False) as db:
    c = db["c"]
    print(json.dumps([len(c), "k0" in c, [[h.key, h.distance] for h in c.hamming(key="k1", radius=8)]]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    n, has_k0, hits = json.loads(out)
    assert n == 49 and not has_k0
    assert [tuple(h) for h in hits] == expected


@pytest.mark.parametrize("kind,lsh", [("minhash", None), ("minhash", 0.5), ("oph", None), ("bbit", 0.5)])
def test_query_equals_brute_force(tmp_path, corpus, kind, lsh):
    with sketchdb.open(tmp_path / "b.sketchdb") as db:
        c = db.create_collection("c", kind=kind, k=128, lsh=lsh)
        keys = [f"d{i}" for i in range(len(corpus))]
        c.insert_many(keys, corpus)
        stored = {k: c.get(k) for k in keys}
        for q in keys[:20]:
            probe = stored[q]
            brute = {k: probe.estimate(s) for k, s in stored.items()}
            want = {k for k, e in brute.items() if e.value >= 0.5}
            hits = c.query(key=q, threshold=0.5, exact=True)
            assert {h.key for h in hits} == want
            for h in hits:
                e = brute[h.key]
                assert (h.estimate, h.lower, h.upper) == pytest.approx((e.value, e.lower, e.upper))
            # The approximate (LSH) plan finds a subset, scored identically.
            approx = {h.key: h.estimate for h in c.query(key=q, threshold=0.5)}
            assert set(approx) <= want
            assert all(approx[k] == pytest.approx(brute[k].value) for k in approx)
            top = c.top_k(sketch=probe, k=3, exact=True)
            best = sorted(brute.values(), key=lambda e: -e.value)[:3]
            assert [h.estimate for h in top] == pytest.approx([e.value for e in best])


def test_dedup_clusters_are_connected_components(tmp_path):
    texts = ["a b c d e f g h", "a b c d e f g x", "p q r s t u v w", "p q r s t u v w", "lonely words only here"]
    with sketchdb.open(tmp_path / "d.sketchdb") as db:
        c = db.create_collection("c", shingle=1)
        c.insert_many([f"k{i}" for i in range(5)], texts)
        result = c.dedup(threshold=0.6)
        clusters = sorted(sorted(cl.keys) for cl in result)
        assert clusters == [["k0", "k1"], ["k2", "k3"]]
        assert result.pairs == 2 and len(result) == 2
        assert set(result.stages) == {"load", "keys", "pairs", "cluster"}
        assert all(v >= 0.0 for v in result.stages.values())


def test_dedup_threads_give_the_same_clusters(tmp_path):
    corpus = make_corpus(400, seed=5)
    # Near-copies: every fourth text again with its last word changed.
    texts = corpus + [t.rsplit(" ", 1)[0] + " changed" for t in corpus[::4]]
    with sketchdb.open(tmp_path / "d.sketchdb") as db:
        c = db.create_collection("c")
        c.insert_many([f"k{i}" for i in range(len(texts))], texts)
        runs = [c.dedup(threshold=0.7, threads=n) for n in (None, 1, 3)]
        shapes = [[(cl.rows, cl.keys) for cl in r] for r in runs]
        assert len(shapes[0]) >= 50, len(shapes[0])
        assert shapes[1] == shapes[0] and shapes[2] == shapes[0]
        assert runs[1].pairs == runs[0].pairs == runs[2].pairs
        assert runs[0].candidates >= runs[0].pairs and runs[1].candidates == runs[0].candidates
        with pytest.raises(ValueError, match="threads"):
            c.dedup(threshold=0.7, threads=0)


@pytest.mark.parametrize("tables", [None, 3, 2])
def test_dedup_radius_pairs_equal_brute_force_over_the_stored_fingerprints(tmp_path, tables):
    # With tables covering the radius (3), tables too narrow (2: built in memory instead) and
    # none: the pairs within the radius, exactly.
    texts = make_corpus(300, seed=11, near=0.6)
    keys = [f"k{i}" for i in range(len(texts))]
    with sketchdb.open(tmp_path / "h.sketchdb") as db:
        c = db.create_collection("h", kind="simhash", bits=64, simhash_radius=tables)
        c.insert_many(keys, texts)
        fp = {k: c.get(k).value for k in keys}
        for radius in (0, 3, 6):
            want = {
                (a, b) for i, a in enumerate(keys) for b in keys[i + 1 :] if bin(fp[a] ^ fp[b]).count("1") <= radius
            }
            # Connected components of the brute-force pairs.
            parent = {k: k for k in keys}

            def find(k):
                while parent[k] != k:
                    k = parent[k]
                return k

            for a, b in sorted(want):
                parent[find(a)] = find(b)
            groups = {}
            for k in keys:
                groups.setdefault(find(k), []).append(k)
            clusters = sorted(sorted(g) for g in groups.values() if len(g) > 1)
            result = c.dedup(radius=radius)
            assert result.pairs == len(want), (tables, radius)
            assert sorted(sorted(cl.keys) for cl in result) == clusters, (tables, radius)
            if radius == 3:
                assert len(want) >= 10 and len(clusters) >= 8, (len(want), len(clusters))
        with pytest.raises(ValueError, match="not both"):
            c.dedup(threshold=0.9, radius=3)
        m = db.create_collection("m")
        m.insert_many(keys[:5], texts[:5])
        with pytest.raises(ValueError, match="(?i)hamming|radius|simhash"):
            m.dedup(radius=3)


def test_threads_query_while_one_inserts(tmp_path):
    corpus = make_corpus(600, seed=11)
    with sketchdb.open(tmp_path / "t.sketchdb") as db:
        c = db.create_collection("c", lsh=0.5)
        base = [f"b{i}" for i in range(300)]
        c.insert_many(base, corpus[:300])
        probes = corpus[:40]
        # The new records' keys are distinct from the base ones and their texts are drawn
        # from another part of the corpus; queries restricted to base keys are stable.
        serial = [[(h.key, h.estimate) for h in c.query(text=p, threshold=0.5) if h.key.startswith("b")] for p in probes]
        errors = []

        def writer():
            try:
                for i in range(300, 600, 20):
                    c.insert_many([f"n{j}" for j in range(i, i + 20)], corpus[i : i + 20])
            except Exception as e:  # surfaced below
                errors.append(e)

        results = [None] * 8

        def reader(t):
            try:
                got = []
                for _ in range(3):
                    got.append(
                        [[(h.key, h.estimate) for h in c.query(text=p, threshold=0.5) if h.key.startswith("b")] for p in probes]
                    )
                results[t] = got
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for got in results:
            for run in got:
                assert run == serial
        assert len(c) == 600


def test_insert_many_strict_is_all_or_nothing(tmp_path):
    with sketchdb.open(tmp_path / "m.sketchdb") as db:
        c = db.create_collection("c")
        c.insert_many(["a", "b"], ["one two three", "four five six"])
        # An empty key in the middle: rejected before anything is written, naming the record.
        with pytest.raises(ValueError, match=r"record 1: empty key"):
            c.insert_many(["x", "", "y"], ["seven eight", "nine ten", "eleven twelve"], strict=True)
        # A text without words: same.
        with pytest.raises(ValueError, match=r"record 2: cannot sketch an empty set"):
            c.insert_many(["x", "y", "z"], ["seven eight", "nine ten", "!!!"], strict=True)
        # A duplicate of a stored key: the commit fails as a whole.
        with pytest.raises(sketchdb.Error, match="duplicate key"):
            c.insert_many(["x", "a", "y"], ["seven eight", "nine ten", "eleven twelve"], strict=True)
        assert len(c) == 2 and "x" not in c and "y" not in c
        # Generators work; upsert replaces.
        assert c.insert_many((k for k in ["x", "a"]), iter(["seven eight", "thirteen"]), upsert=True).written == 2
        assert len(c) == 3
        assert c.insert_many(["t1"], tokens=[["u", "v", 5]]).written == 1
        assert c.insert_many(["s1"], sketches=[c.get("a")]).written == 1
        with pytest.raises(ValueError, match="2 keys but 1 records"):
            c.insert_many(["p", "q"], ["only one"])


def test_typed_errors(tmp_path):
    path = tmp_path / "e.sketchdb"
    with pytest.raises(sketchdb.Error):
        sketchdb.open(path, create=False)
    with sketchdb.open(path) as db:
        with pytest.raises(sketchdb.NotFoundError, match="unknown collection `nope`") as ei:
            db["nope"]
        assert isinstance(ei.value, KeyError)
        c = db.create_collection("c", k=64)
        s = db.create_collection("s", kind="simhash")
        with pytest.raises(sketchdb.Error, match="already exists"):
            db.create_collection("c")
        with pytest.raises(ValueError, match="unknown sketch kind"):
            db.create_collection("x", kind="nope")
        with pytest.raises(ValueError):
            db.create_collection("y", kind="simhash", lsh=0.5)
        with pytest.raises(ValueError):
            db.create_collection("z", lsh=1.5)
        c.insert("a", tokens=[1, 2, 3])
        with pytest.raises(sketchdb.NotFoundError, match="has no key"):
            c.query(key="missing")
        with pytest.raises(sketchdb.NotFoundError):
            c["missing"]
        assert c.get("missing") is None
        wrong = sketchdb.MinHash(num_perm=128)
        wrong.update("x")
        with pytest.raises(sketchdb.IncompatibleError):
            c.insert("b", sketch=wrong)
        with pytest.raises(ValueError, match="cannot run on a minhash"):
            c.hamming(key="a", radius=2)
        with pytest.raises(ValueError, match="exactly one"):
            c.query(text="x", key="a")
        with pytest.raises(ValueError, match="exactly one"):
            c.insert("k")
        with pytest.raises(TypeError):
            c.insert(5, text="x")
        with pytest.raises(ValueError, match="longer than"):
            c.insert_many(["k" * (sketchdb.MAX_KEY_LEN + 1)], ["text here"], strict=True)
        with pytest.raises(ValueError, match="invalid query parameter"):
            c.query(key="a", threshold=2.0)
        assert s.kind == "simhash"
        assert db.verify()["ok"]
    with pytest.raises(sketchdb.Error, match="closed"):
        len(c)
    # A second handle on an open file is refused as busy (at once: no wait).
    with sketchdb.open(path) as db:
        with pytest.raises(sketchdb.BusyError):
            sketchdb.open(path, busy_timeout=0)


def test_delete_upsert_compact(tmp_path):
    with sketchdb.open(tmp_path / "u.sketchdb") as db:
        c = db.create_collection("c")
        r0 = c.insert(b"\xff\x00", text="binary key text")
        assert [h.key for h in c.query(text="binary key text")] == [b"\xff\x00"]
        r1 = c.upsert(b"\xff\x00", text="other words now")
        assert r1 != r0 and len(c) == 1
        assert c.delete(b"\xff\x00") and not c.delete(b"\xff\x00")
        assert len(c) == 0
        summary = c.compact()
        assert summary["file_bytes_after"] > 0
        assert "plan:" in c.explain(text="some words", threshold=0.5)


def test_read_only_open_never_writes_and_follows_the_writer(tmp_path):
    path = tmp_path / "ro.sketchdb"
    with sketchdb.open(path) as db:
        db.create_collection("c").insert_many(["a", "b"], ["one two three four five six", "seven eight nine ten"])
    before = path.read_bytes(), path.stat().st_mtime_ns
    with sketchdb.open(path, read_only=True) as ro:
        c = ro["c"]
        assert len(c) == 2 and "a" in c
        assert [h.key for h in c.query(key="a", threshold=0.9)] == ["a"]
        with pytest.raises(sketchdb.ReadOnlyError, match="read-only"):
            c.insert("z", text="a write through a read-only handle")
        with pytest.raises(sketchdb.ReadOnlyError):
            ro.create_collection("d")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    with pytest.raises(ValueError):
        sketchdb.open(tmp_path / "new.sketchdb", create=True, read_only=True)
    with pytest.raises(sketchdb.Error):
        sketchdb.open(tmp_path / "missing.sketchdb", read_only=True)
    # A reader beside a writer in this process sees the writer's later commits.
    with sketchdb.open(path) as rw, sketchdb.open(path, read_only=True) as ro:
        rw["c"].insert("c", text="eleven twelve thirteen fourteen fifteen")
        assert len(ro["c"]) == 3 and "c" in ro["c"]


@pytest.mark.parametrize("clustering", ["components", "representative"])
def test_dedup_clustering_equals_the_cli_json(tmp_path, cli, clustering):
    # Near-copies that chain: a text, an edit of it, an edit of the edit, ... so components
    # join chains that star clusters split.
    corpus = make_corpus(600, seed=11, near=0.7)
    path = tmp_path / "d.sketchdb"
    with sketchdb.open(path) as db:
        c = db.create_collection("c", shingle=1, lsh=0.6)
        c.insert_many([f"k{i}" for i in range(len(corpus))], corpus)
    with sketchdb.open(path, read_only=True) as db:
        r = db["c"].dedup(threshold=0.6, clustering=clustering)
    proc = cli("--db", path, "--json", "dedup", "c", "--threshold", "0.6", "--clustering", clustering)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    summary = [json.loads(line) for line in proc.stderr.splitlines() if '"command"' in line][-1]
    assert r.clustering == summary["clustering"] == clustering
    assert (len(r), r.pairs, r.candidates, r.plan) == (
        summary["clusters"],
        summary["pairs"],
        summary["candidates"],
        summary["plan"],
    )
    assert len(r) >= 20, len(r)
    # Cluster by cluster (the same order: largest first, then by first row): keys, rows and
    # the representative the CLI prints.
    assert [(cl.keys, cl.rows, cl.representative) for cl in r] == [
        (x["keys"], x["rows"], x.get("representative")) for x in lines
    ]
    if clustering == "representative":
        # Every member is a verified pair with its cluster's representative.
        with sketchdb.open(path, read_only=True) as db:
            c = db["c"]
            for cl in r:
                assert cl.representative in cl.keys
                near = {h.key for h in c.query(key=cl.representative, threshold=0.6, exact=True)}
                assert set(cl.keys) - {cl.representative} <= near
    else:
        assert all(cl.representative is None for cl in r)


def test_dedup_representative_splits_chains_and_names_bad_clusterings(tmp_path):
    # k0-k1 and k1-k2 are verified pairs (Jaccard 8/12), k0-k2 is not (6/14): one component
    # either way, and as a star cluster k1 (two partners) is its representative.
    w = [f"w{i}" for i in range(14)]
    texts = [w[0:10], w[2:12], w[4:14], [f"v{i}" for i in range(10)]]
    with sketchdb.open(tmp_path / "r.sketchdb") as db:
        c = db.create_collection("c", k=512, shingle=1)
        c.insert_many([f"k{i}" for i in range(len(texts))], [" ".join(t) for t in texts])
        comp = c.dedup(threshold=0.55, exact=True)
        star = c.dedup(threshold=0.55, exact=True, clustering="representative")
        assert [(cl.keys, cl.representative) for cl in comp] == [(["k0", "k1", "k2"], None)]
        assert [(cl.keys, cl.representative) for cl in star] == [(["k0", "k1", "k2"], "k1")]
        assert comp.pairs == star.pairs == 2
        assert (comp.clustering, star.clustering) == ("components", "representative")
        with pytest.raises(ValueError, match="unknown clustering 'stars' \\(expected components or representative\\)"):
            c.dedup(threshold=0.55, clustering="stars")
