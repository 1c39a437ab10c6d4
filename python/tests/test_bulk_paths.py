"""The bulk sketching paths (Arrow kernels, ``bulk`` from lists, tuples, NumPy arrays) agree
with one another and with one-by-one ``update_batch`` for every kind, whatever the order and
repeats of the tokens; bad tokens still raise typed errors; the bench's Rust-side query loop
answers what ``query(key=)`` answers."""

import os
import random

import numpy as np
import pyarrow as pa
import pytest

import sketchdb
import sketchdb.arrow as sa
from sketchdb import _sketchdb

KINDS = [
    ("minhash", dict(k=64), lambda: sketchdb.MinHash(num_perm=64)),
    ("bbit", dict(k=64, bits=4), lambda: sketchdb.BBitMinHash(num_perm=64, b=4)),
    ("oph", dict(k=64, bits=16), lambda: sketchdb.OPH(bins=64, bits=16)),
    ("simhash", dict(k=64), lambda: sketchdb.SimHash(bits=64)),
]


def _rows(seed=7, n=60):
    """Hashed token rows: sorted and distinct, shuffled, with repeats, tiny and long."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        size = [1, 2, 5, 40, 300, 1000][i % 6]
        toks = list(dict.fromkeys(rng.getrandbits(64) for _ in range(size)))
        if i % 3 == 0:
            toks.sort()
        elif i % 3 == 1:
            toks = toks + toks[: size // 2]
            rng.shuffle(toks)
        rows.append(toks)
    return rows


@pytest.mark.parametrize("kind,args,make", KINDS, ids=[k[0] for k in KINDS])
def test_bulk_forms_equal_one_by_one(kind, args, make):
    rows = _rows()
    want = []
    for r in rows:
        m = make()
        m.update_batch(r)
        want.append(m.to_bytes())
    arrow = sa.sketch_tokens(pa.array(rows, type=pa.list_(pa.uint64())), kind=kind, **args).to_pylist()
    assert arrow == want
    cls = type(make())
    kw = {"minhash": dict(num_perm=64), "bbit": dict(num_perm=64, b=4), "oph": dict(bins=64, bits=16), "simhash": dict(bits=64)}[kind]
    for form in (rows, [tuple(r) for r in rows], [np.asarray(r, dtype=np.uint64) for r in rows], (iter(r) for r in rows)):
        got = [s.to_bytes() for s in cls.bulk(form, **kw)]
        assert got == want


@pytest.mark.parametrize("kind,args,make", KINDS[:3], ids=[k[0] for k in KINDS[:3]])
def test_order_and_repeats_do_not_change_a_set_sketch(kind, args, make):
    rng = random.Random(11)
    base = sorted({rng.getrandbits(64) for _ in range(500)})
    shuffled = base[:]
    rng.shuffle(shuffled)
    variants = [base, base[::-1], shuffled, shuffled + base[:100]]
    sigs = sa.sketch_tokens(pa.array(variants, type=pa.list_(pa.uint64())), kind=kind, **args).to_pylist()
    assert len(set(sigs)) == 1


def test_pre_split_words_equal_text_sketches():
    docs = ["the quick brown fox jumps over the lazy dog", "a b c d e f g", "Ünïcode words, here and there"]
    words = [sketchdb.tokenize(d, shingle=1) for d in docs]
    by_text = sa.sketch(pa.array(docs), k=64, shingle=1).to_pylist()
    by_hashes = sa.sketch_tokens(pa.array(words, type=pa.list_(pa.uint64())), k=64).to_pylist()
    assert by_text == by_hashes
    split = [d.split() for d in docs]
    by_words = sa.sketch_tokens(pa.array(split, type=pa.list_(pa.string())), k=64).to_pylist()
    objs = sketchdb.MinHash.bulk(split, num_perm=64)
    assert by_words == [o.to_bytes() for o in objs]


def test_bad_tokens_in_bulk_raise_typed_errors():
    with pytest.raises(ValueError, match="u64"):
        sketchdb.MinHash.bulk([[1, 2], [3, -1]])
    with pytest.raises(ValueError, match="u64"):
        sketchdb.MinHash.bulk([(1, 2**64)])
    with pytest.raises(TypeError, match="token"):
        sketchdb.MinHash.bulk([[1, 2.5]])
    with pytest.raises(TypeError, match="token"):
        sketchdb.MinHash.bulk([[None]])
    with pytest.raises(ValueError, match="item 1"):
        sketchdb.MinHash.bulk([[1], []])
    with pytest.raises(ValueError, match="row 1"):
        sa.sketch_tokens(pa.array([[1], []], type=pa.list_(pa.uint64())), k=64)


def test_rust_query_loop_answers_what_python_queries_answer(tmp_path):
    rows = _rows(seed=3, n=120)
    keys = [f"k{i}" for i in range(len(rows))]
    with sketchdb.open(os.fspath(tmp_path / "q.sketchdb")) as db:
        c = db.create_collection("c", k=64, lsh=0.5)
        c.insert_many(keys, tokens=pa.array(rows, type=pa.list_(pa.uint64())))
        c.insert_many(["dup"], tokens=[rows[4][: len(rows[4]) * 9 // 10]])
        probe = keys[::3] + ["dup"]
        secs, hits = _sketchdb._time_query_keys(c, probe, 0.5)
        assert secs >= 0
        assert hits == sum(len(c.query(key=k, threshold=0.5)) for k in probe)
        assert hits > len(probe)  # every key finds itself, and k4 / dup find each other
        with pytest.raises(sketchdb.NotFoundError):
            _sketchdb._time_query_keys(c, ["no such key"], 0.5)
        with pytest.raises(TypeError):
            _sketchdb._time_query_keys(c, [1], 0.5)
