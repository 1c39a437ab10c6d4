"""The caches a database keeps, from Python: the budgets given to `sketchdb.open`, the bytes
held as queries, commits and a lower budget change them, a zero budget keeping nothing with
equal answers, and the same numbers as the CLI's `stats` (one-shot and in the shell)."""

import json
import subprocess

import pytest

import sketchdb
from conftest import _cli_path, make_corpus

KEYS = ["d0", "d7", "d42", "d300"]


def _build(path, n=600):
    corpus = make_corpus(n, seed=11)
    with sketchdb.open(path) as db:
        docs = db.create_collection("docs", kind="minhash", k=64, lsh=0.5)
        docs.insert_many([f"d{i}" for i in range(n)], corpus)
    return corpus


def _answers(docs, keys):
    return [[(h.key, h.estimate) for h in docs.query(key=k, threshold=0.5, plan="lsh-probe")] for k in keys]


def test_budgets_given_at_open_are_reported_and_respected(tmp_path):
    path = tmp_path / "c.sketchdb"
    _build(path)
    keys = [f"d{i}" for i in range(0, 600, 3)]
    with sketchdb.open(path) as db:
        want = _answers(db["docs"], keys)
        full = db.cache_stats()["probe_cache_held"]
        assert full > 0
        assert db.cache_stats()["probe_cache_budget"] == 1 << 30
    for budget in (full // 3, 0):
        with sketchdb.open(path, page_cache_bytes=1 << 20, probe_cache_bytes=budget) as db:
            caches = db.cache_stats()
            assert (caches["page_cache_budget"], caches["probe_cache_budget"]) == (1 << 20, budget)
            for _ in range(2):
                assert _answers(db["docs"], keys) == want
                caches = db.cache_stats()
                assert caches["probe_cache_held"] <= budget
                assert 0 < caches["page_cache_held"] <= 1 << 20
            if budget == 0:
                assert caches["probe_cache_held"] == 0


def test_held_bytes_follow_queries_commits_and_the_budget(tmp_path):
    path = tmp_path / "c.sketchdb"
    corpus = _build(path)
    with sketchdb.open(path) as db:
        docs = db["docs"]
        held = lambda: db.cache_stats()["probe_cache_held"]  # noqa: E731
        assert held() == 0
        _answers(docs, KEYS[:1])
        one = held()
        assert one > 0
        _answers(docs, [f"d{i}" for i in range(0, 600, 5)])
        many = held()
        assert many > one
        stats = db.stats()
        assert stats["caches"]["probe_cache_held"] == many
        assert [c["name"] for c in stats["collections"]] == ["docs"]
        assert stats["collections"][0]["live"] == len(corpus) == len(docs)
        assert stats["caches"]["snapshot_kept"] and stats["caches"]["snapshot_memo_entries"] >= 1
        # A commit that changes the index: the next query's cache replaces the old one.
        docs.insert("new", text="a record that changes the index")
        assert not db.cache_stats()["snapshot_kept"]
        _answers(docs, KEYS[:1])
        assert held() == one
        db.set_probe_cache_budget(one // 2)
        assert held() == 0 and db.cache_stats()["probe_cache_budget"] == one // 2
        _answers(docs, KEYS)
        assert 0 < held() <= one // 2


def test_python_and_the_cli_report_the_same_numbers(tmp_path, cli):
    path = tmp_path / "c.sketchdb"
    _build(path)
    out = cli("--db", path, "--page-cache", "2M", "--probe-cache", "3M", "--json", "stats").stdout
    lines = [json.loads(line) for line in out.splitlines()]
    shown = lines[0]["caches"]
    with sketchdb.open(path, read_only=True, page_cache_bytes=2 << 20, probe_cache_bytes=3 << 20) as db:
        mine = db.stats()
        assert mine["file_bytes"] == lines[0]["file_bytes"]
        assert mine["caches"] == shown
        assert mine["collections"][0]["live"] == lines[0]["live"]

    # The shell's queries keep what the same queries keep from Python.
    script = "".join(f"query docs {k} --threshold 0.5 --plan lsh-probe\n" for k in KEYS) + "stats --json\n"
    r = subprocess.run(
        [str(_cli_path()), str(path), "--probe-cache", "8M"], input=script, capture_output=True, text=True, check=True
    )
    shell = json.loads(r.stdout.strip().splitlines()[-1])["caches"]
    with sketchdb.open(path, read_only=True, probe_cache_bytes=8 << 20) as db:
        _answers(db["docs"], KEYS)
        assert db.cache_stats()["probe_cache_held"] == shell["probe_cache_held"] > 0


def test_bad_budgets_raise_typed_errors(tmp_path):
    path = tmp_path / "c.sketchdb"
    _build(path, n=10)
    with pytest.raises((TypeError, OverflowError)):
        sketchdb.open(path, probe_cache_bytes=-1)
    with pytest.raises(TypeError):
        sketchdb.open(path, page_cache_bytes="64M")
    with sketchdb.open(path) as db:
        with pytest.raises((TypeError, OverflowError)):
            db.set_probe_cache_budget(-5)
    db.close()
    with pytest.raises(sketchdb.Error):
        db.cache_stats()
