"""Sketch objects: parameters, estimates, pickling, bulk, and equality with the CLI."""

import pickle
import random

import numpy as np
import pytest

import sketchdb
from conftest import read_export, write_jsonl

KINDS = [
    ("minhash", lambda **kw: sketchdb.MinHash(num_perm=64, **kw), ["--k", 64]),
    ("bbit", lambda **kw: sketchdb.BBitMinHash(num_perm=64, b=4, **kw), ["--k", 64, "--bits", 4]),
    ("oph", lambda **kw: sketchdb.OPH(bins=64, bits=16, **kw), ["--k", 64, "--bits", 16]),
    ("simhash", lambda **kw: sketchdb.SimHash(bits=64, **kw), ["--bits", 64]),
]


def test_token_hash_forms_agree():
    assert sketchdb.token_hash("abc") == sketchdb.token_hash(b"abc")
    assert sketchdb.token_hash(42) == 42
    assert sketchdb.token_hash("abc", seed=1) != sketchdb.token_hash("abc")
    # Text tokens are the hashes of their shingles.
    assert sketchdb.tokenize("One, two!", shingle=1) == [sketchdb.token_hash("one"), sketchdb.token_hash("two")]


def test_update_forms_agree():
    a, b, c = sketchdb.MinHash(), sketchdb.MinHash(), sketchdb.MinHash()
    for t in ["x", "y", "z"]:
        a.update(t)
    b.update_batch([b"x", "y", sketchdb.token_hash("z")])
    c.update_batch(["z", "y", "x", "x"])  # order and repeats do not matter for sets
    assert a == b == c
    assert a.cardinality == 3
    d = sketchdb.MinHash(shingle=1)
    d.update_batch(sketchdb.tokenize("x y z", shingle=1))
    e = sketchdb.MinHash(shingle=1)
    e.update_text("X, y; z")
    assert d == e
    # The tokenizer is part of a sketch's identity: the same tokens under another recipe differ.
    f = sketchdb.MinHash(shingle=2)
    f.update_batch(sketchdb.tokenize("x y z", shingle=1))
    assert f != d


def test_estimates_follow_set_overlap():
    rng = random.Random(3)
    universe = [f"t{i}" for i in range(2000)]
    for kind, make, _ in KINDS[:3]:
        a, b = make(), make()
        base = rng.sample(universe, 400)
        a.update_batch(base)
        other = base[:300] + rng.sample(universe, 100)
        b.update_batch(other)
        true_j = len(set(base) & set(other)) / len(set(base) | set(other))
        e = a.estimate(b)
        assert 0 <= e.lower <= e.value <= e.upper <= 1
        assert e.lower - 0.05 <= true_j <= e.upper + 0.05, (kind, true_j, e)
        assert e.level == 0.95
        assert float(e) == pytest.approx(a.similarity(b))
        assert a.jaccard(b) == pytest.approx(e.value)
    s1, s2 = sketchdb.SimHash(), sketchdb.SimHash()
    s1.update_text("the quick brown fox jumps over the lazy dog")
    s2.update_text("the quick brown fox jumps over the lazy dog")
    assert s1.hamming(s2) == 0 and s1.cosine(s2) == pytest.approx(1.0)


def test_identical_sets_estimate_one_and_disjoint_zero():
    a, b, c = sketchdb.MinHash(), sketchdb.MinHash(), sketchdb.MinHash()
    a.update_batch(range(1000))
    b.update_batch(range(1000))
    c.update_batch(range(10**6, 10**6 + 1000))
    assert a.jaccard(b) == 1.0
    assert a.jaccard(c) == 0.0


def test_hashvalues_numpy_copy_merge():
    a = sketchdb.MinHash(num_perm=32)
    a.update_batch(["a", "b"])
    hv = a.hashvalues
    assert isinstance(hv, np.ndarray) and hv.dtype == np.uint64 and hv.shape == (32,)
    assert np.array_equal(hv, a.digest())
    assert len(a) == 32
    b = a.copy()
    assert b == a
    b.update("c")
    assert b != a and a.cardinality == 2  # copies are independent
    c = sketchdb.MinHash(num_perm=32)
    c.update("c")
    a.merge(c)
    assert a == b
    # Merging never raises a value: the minimum per slot.
    assert np.array_equal(a.hashvalues, np.minimum(hv, c.hashvalues))
    assert sketchdb.BBitMinHash(num_perm=32, b=8).kind == "bbit"


@pytest.mark.parametrize("kind,make,_", KINDS)
def test_pickle_round_trip_open_and_frozen(kind, make, _):
    a = make()
    a.update_text("the quick brown fox jumps over the lazy dog again and again")
    b = pickle.loads(pickle.dumps(a))
    assert b == a and b.is_open and type(b) is type(a)
    b.update("more")  # an unpickled open sketch keeps its tokens
    (frozen,) = type(a).bulk(["the quick brown fox jumps over the lazy dog again and again"], **_kw(a))
    assert frozen == a and not frozen.is_open
    f2 = pickle.loads(pickle.dumps(frozen))
    assert f2 == a and not f2.is_open
    with pytest.raises(ValueError):
        f2.update("x")


def _kw(s):
    if s.kind == "minhash":
        return dict(num_perm=s.size, bits=s.bits, seed=s.seed)
    if s.kind == "bbit":
        return dict(num_perm=s.size, b=s.bits, seed=s.seed)
    if s.kind == "oph":
        return dict(bins=s.size, bits=s.bits, seed=s.seed)
    return dict(bits=s.bits, seed=s.seed)


def test_bulk_equals_one_by_one(corpus):
    sk = sketchdb.MinHash.bulk(corpus, num_perm=64)
    tok = sketchdb.MinHash.bulk([t.split() for t in corpus], num_perm=64)
    for text, s, t in zip(corpus, sk, tok):
        one = sketchdb.MinHash(num_perm=64)
        one.update_text(text)
        assert s == one
        two = sketchdb.MinHash(num_perm=64)
        two.update_batch(text.split())
        assert t == two
    with pytest.raises(ValueError, match="item 1"):
        sketchdb.MinHash.bulk(["some words", "!!!"])


@pytest.mark.parametrize("kind,make,cli_args", KINDS)
def test_signatures_equal_the_cli(tmp_path, cli, corpus, kind, make, cli_args):
    """The CLI ingests text and u64 tokens; Python sketches the same; export must agree."""
    records = [{"key": f"t{i}", "text": t} for i, t in enumerate(corpus[:50])]
    token_lists = [[sketchdb.token_hash(w) for w in t.split()] for t in corpus[50:100]]
    records += [{"key": f"k{i}", "tokens": toks} for i, toks in enumerate(token_lists)]
    src = tmp_path / "in.jsonl"
    write_jsonl(src, records)
    db = tmp_path / "cli.sketchdb"
    cli("--db", db, "create", "c", "--kind", kind, *cli_args)
    cli("--db", db, "ingest", "c", src)
    header, exported = read_export(cli("--db", db, "export", "c").stdout)
    assert header["params"]["seed"] == sketchdb.DEFAULT_SEED
    python = {}
    for r in records:
        s = make()
        if "text" in r:
            s.update_text(r["text"])
        else:
            s.update_batch(r["tokens"])
        python[r["key"]] = s
    for key, s in python.items():
        e = exported[key]
        if kind == "minhash":
            assert s.hashvalues.tolist() == e["values"]
        elif kind == "oph":
            assert s.hashvalues.tolist() == e["bins"]
        elif kind == "simhash":
            assert s.value == int(e["simhash"], 16)
        if kind != "simhash":
            assert s.cardinality == e["cardinality"]
    # And the stored sketches, read back from Python, equal Python's (all kinds, b-bit too).
    with sketchdb.open(db, create=False) as pdb:
        coll = pdb["c"]
        for key, s in python.items():
            assert coll[key] == s


def test_bad_arguments_raise_typed_errors():
    with pytest.raises(ValueError, match="invalid sketch parameter"):
        sketchdb.MinHash(num_perm=0)
    with pytest.raises(ValueError):
        sketchdb.MinHash(bits=7)
    with pytest.raises(ValueError):
        sketchdb.MinHash(shingle=0)
    with pytest.raises(OverflowError):
        sketchdb.MinHash(num_perm=-1)
    m = sketchdb.MinHash()
    with pytest.raises(TypeError):
        m.update(1.5)
    with pytest.raises(TypeError):
        m.update_batch("not a list")
    with pytest.raises(ValueError, match="u64"):
        m.update(-1)
    with pytest.raises(ValueError, match="empty set"):
        m.hashvalues
    a, b = sketchdb.MinHash(num_perm=64), sketchdb.MinHash(num_perm=128)
    a.update("x")
    b.update("x")
    with pytest.raises(sketchdb.IncompatibleError, match="incompatible sketches"):
        a.jaccard(b)
    with pytest.raises(TypeError):
        a.jaccard(sketchdb.OPH())
