"""Collections that keep exact shingle sets (`exact_shingles=True`, the CLI's
`create --exact-shingles`): hits carry `exact`, equal to a brute-force Jaccard of the shingle
sets computed here with the `words-5` recipe's steps; EXPLAIN says the scores are exact; a
CLI-made exact collection gives Python the same exact values."""

import json
import random
import string
import unicodedata

import pytest

import sketchdb
from conftest import WORDS, write_jsonl


def words5(text):
    """The `words-5` recipe (docs/recipes.md): NFC, lower case, white-space split, ASCII
    punctuation stripped from word ends (empty words dropped), word 5-grams joined by one
    space (a shorter text: one shingle of all its words), each hashed with xxh3-64 seed 0."""
    words = [w.strip(string.punctuation) for w in unicodedata.normalize("NFC", text).lower().split()]
    words = [w for w in words if w]
    if not words:
        return set()
    grams = [" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))]
    return {sketchdb.token_hash(g, 0) for g in grams}


def jaccard(a, b):
    return len(a & b) / len(a | b)


def corpus(n=80, seed=11):
    """Texts with punctuation and case the recipe removes; about half are edits of earlier ones."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        if texts and rng.random() < 0.5:
            words = rng.choice(texts).split()
            for _ in range(rng.randint(1, 4)):
                words[rng.randrange(len(words))] = rng.choice(WORDS)
            texts.append(" ".join(words))
        else:
            words = [rng.choice(WORDS) for _ in range(rng.randint(12, 30))]
            words = [w.upper() if rng.random() < 0.1 else w + rng.choice(["", "", ",", "."]) for w in words]
            texts.append(" ".join(words))
    return {f"d{i}": t for i, t in enumerate(texts)}


@pytest.fixture
def docs():
    return corpus()


@pytest.mark.parametrize("kind,lsh", [("oph", None), ("minhash", 0.5), ("bbit", None)])
def test_exact_equals_brute_force(tmp_path, docs, kind, lsh):
    sets = {k: words5(t) for k, t in docs.items()}
    keys = list(docs)
    with sketchdb.open(tmp_path / "x.sketchdb") as db:
        c = db.create_collection("c", kind=kind, k=256, recipe="words-5", lsh=lsh, exact_shingles=True)
        # Records written every way that carries a set: a batch, one by one, as tokens.
        assert c.insert_many(keys[:60], [docs[k] for k in keys[:60]]).written == 60
        for k in keys[60:70]:
            c.insert(k, text=docs[k])
        for k in keys[70:]:
            grams = [g for g in _grams(docs[k])]
            c.insert(k, tokens=grams)
        checked = 0
        for q in keys[:25]:
            want = {k: jaccard(sets[q], s) for k, s in sets.items()}
            for probe in ({"key": q}, {"text": docs[q]}, {"tokens": _grams(docs[q])}):
                hits = c.query(**probe, threshold=0.4)
                got = {h.key: h.exact for h in hits}
                for k, x in got.items():
                    assert x == want[k], (q, k, x, want[k])
                    checked += 1
                # Precision 1 and, on these texts, every true pair found.
                assert set(got) == {k for k, j in want.items() if j >= 0.4}, (q, probe.keys())
                exacts = [h.exact for h in hits]
                assert exacts == sorted(exacts, reverse=True)
            top = c.top_k(key=q, k=5)
            assert [h.exact for h in top] == sorted(want.values(), reverse=True)[:5]
        assert checked > 100
        # A bare sketch probe has no set: estimated only.
        assert all(h.exact is None for h in c.query(sketch=c.get(keys[0]), threshold=0.4))
        # Batched questions score exactly too, equal to the single ones.
        many = c.query_many([docs[q] for q in keys[:10]], threshold=0.4)
        assert [[(h.key, h.exact) for h in hs] for hs in many] == [
            [(h.key, h.exact) for h in c.query(text=docs[q], threshold=0.4)] for q in keys[:10]
        ]
        assert db.verify()["ok"]


def _grams(text):
    """The recipe's shingles as strings (tokens= hashes each with the token seed, 0)."""
    words = [w.strip(string.punctuation) for w in unicodedata.normalize("NFC", text).lower().split()]
    words = [w for w in words if w]
    return [" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))]


def test_stats_name_the_rule_of_the_lsh_banding(tmp_path):
    with sketchdb.open(tmp_path / "x.sketchdb") as db:
        exact = db.create_collection("e", kind="minhash", k=128, lsh=0.8, exact_shingles=True)
        plain = db.create_collection("p", kind="minhash", k=128, lsh=0.8)
        assert exact.stats()["index"]["banding"] == "recall (exact)"
        assert plain.stats()["index"]["banding"] == "default"
        # Tuned for candidate recall: more bands of fewer rows than the default at the same t.
        assert exact.stats()["index"]["bands"] > plain.stats()["index"]["bands"]


def test_upsert_replaces_the_set(tmp_path):
    with sketchdb.open(tmp_path / "u.sketchdb") as db:
        c = db.create_collection("c", kind="oph", k=128, recipe="words-5", exact=True)
        a = "one two three four five six seven eight nine ten"
        c.insert("a", text=a)
        c.insert("b", text="one two three four five six seven eight nine eleven")
        assert [(h.key, h.exact) for h in c.query(key="a", threshold=0.5)] == [("a", 1.0), ("b", 5 / 7)]
        c.upsert("b", text=a + " twelve")
        assert dict((h.key, h.exact) for h in c.query(key="a", threshold=0.5)) == {"a": 1.0, "b": 6 / 7}


def test_explain_says_how_scores_are_made(tmp_path):
    with sketchdb.open(tmp_path / "e.sketchdb") as db:
        c = db.create_collection("c", kind="minhash", k=128, exact_shingles=True)
        plain = db.create_collection("p", kind="minhash", k=128)
        text = "the quick brown fox jumps over the lazy dog again and again"
        c.insert("a", text=text)
        plain.insert("a", text=text)
        for probe in ({"key": "a"}, {"text": text}, {"tokens": ["x", "y"]}):
            assert "scores: exact" in c.explain(**probe, threshold=0.5)
            assert "scores: exact" in c.explain(**probe, k=3, analyze=True)
            assert "scores: estimated" in plain.explain(**probe, threshold=0.5)
        assert "scores: estimated" in c.explain(sketch=c.get("a"), threshold=0.5)


def test_bare_sketches_are_refused_and_nothing_else_is_lost(tmp_path):
    with sketchdb.open(tmp_path / "r.sketchdb") as db:
        c = db.create_collection("c", kind="oph", k=128, exact_shingles=True)
        s = sketchdb.OPH(bins=128)
        s.update_text("a sketch without its shingle set cannot be scored exactly")
        with pytest.raises(ValueError, match="keeps exact shingles"):
            c.insert("s", sketch=s)
        report = c.insert_many(["t1", "s", "t2"], sketches=[s, s, s])
        assert report.written == 0 and [r.index for r in report.rejects] == [0, 1, 2]
        report = c.insert_many(["t1", "t2"], ["first text of words here", "second text of words here"])
        assert report.written == 2 and len(c) == 2
        with pytest.raises(ValueError, match="record 0: .*keeps exact shingles"):
            c.insert_many(["t3", "s"], sketches=[s, s], strict=True)
        assert len(c) == 2


def test_bad_exact_arguments(tmp_path):
    with sketchdb.open(tmp_path / "b.sketchdb") as db:
        with pytest.raises(ValueError, match="alias"):
            db.create_collection("c", exact_shingles=True, exact=False)
        with pytest.raises(ValueError, match="SimHash"):
            db.create_collection("s", kind="simhash", exact_shingles=True)
        assert db.collections() == []
        c = db.create_collection("c", exact_shingles=True, exact=True)
        c.insert("a", text="some words to keep as a set")
        assert c.query(key="a")[0].exact == 1.0


def test_cli_made_exact_collection_reads_the_same_from_python(tmp_path, cli, docs):
    path = tmp_path / "cli.sketchdb"
    src = tmp_path / "docs.jsonl"
    write_jsonl(src, [{"id": k, "text": t} for k, t in docs.items()])
    cli("--db", path, "create", "c", "--kind", "bbit", "--k", "256", "--bits", "8", "--recipe", "words-5", "--exact-shingles")
    cli("--db", path, "ingest", "c", src)
    sets = {k: words5(t) for k, t in docs.items()}
    keys = list(docs)[:15]
    cli_exact = {}
    for q in keys:
        out = cli("--db", path, "--json", "query", "c", q, "--threshold", "0.3").stdout
        cli_exact[q] = {h["key"]: h["exact_jaccard"] for h in map(json.loads, out.splitlines())}
    with sketchdb.open(path, read_only=True) as db:
        c = db["c"]
        for q in keys:
            got = {h.key: h.exact for h in c.query(key=q, threshold=0.3)}
            assert got.keys() == cli_exact[q].keys()
            for k, x in got.items():
                assert x == pytest.approx(cli_exact[q][k], abs=1e-12)
                assert x == jaccard(sets[q], sets[k])
        assert "scores: exact" in c.explain(key=keys[0], threshold=0.3)
