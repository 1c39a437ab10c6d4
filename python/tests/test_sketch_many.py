"""``sketchdb.sketch_many`` (one NumPy matrix of signatures) and the classes' ``bulk`` read
every input shape into the same signatures as one-by-one ``update_batch`` and the Arrow
kernels, whatever the order of the items, and name the item (and token) of bad input."""

import random

import numpy as np
import pyarrow as pa
import pytest

import sketchdb
import sketchdb.arrow as sa

KINDS = [
    ("minhash", dict(k=64), lambda: sketchdb.MinHash(num_perm=64)),
    ("bbit", dict(k=64, bits=4), lambda: sketchdb.BBitMinHash(num_perm=64, b=4)),
    ("oph", dict(k=64, bits=16), lambda: sketchdb.OPH(bins=64, bits=16)),
    ("simhash", dict(k=64), lambda: sketchdb.SimHash(bits=64)),
]
IDS = [k[0] for k in KINDS]


def _int_rows(n=300, seed=5):
    """u64 token rows: sorted, shuffled with repeats, 0 and 2**64 - 1, sizes 1 to 900."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        toks = [rng.getrandbits(64) for _ in range(rng.choice([1, 3, 40, 240, 900]))]
        if i % 4 == 0:
            toks.sort()
        elif i % 4 == 1:
            toks += toks[: len(toks) // 2]
            rng.shuffle(toks)
        elif i % 4 == 2:
            toks += [0, 2**64 - 1]
        rows.append(toks)
    return rows


def _word_rows(n=300, seed=6):
    """str token rows: ASCII and non-ASCII words, repeats, an empty token, a NUL inside."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)] + ["Ünïcode", "日本語", "emoji🙂", "", "a\0b", "a", "b"]
    return [[rng.choice(vocab) for _ in range(rng.choice([1, 2, 30, 400]))] for _ in range(n)]


def _one_by_one(make, rows):
    out = []
    for r in rows:
        m = make()
        m.update_batch(r)
        out.append(m.to_bytes())
    return out


def _rows_of(matrix):
    assert matrix.dtype == np.uint8 and matrix.ndim == 2
    return [bytes(r) for r in matrix]


@pytest.mark.parametrize("kind,args,make", KINDS, ids=IDS)
def test_int_rows_in_every_shape_equal_one_by_one(kind, args, make):
    rows = _int_rows()
    want = _one_by_one(make, rows)
    assert sa.sketch_tokens(pa.array(rows, type=pa.list_(pa.uint64())), kind=kind, **args).to_pylist() == want
    flat = np.array([t for r in rows for t in r], dtype=np.uint64)
    for offsets in (np.cumsum([0] + [len(r) for r in rows]), np.cumsum([0] + [len(r) for r in rows]).astype(np.uint64),
                    [0] + list(np.cumsum([len(r) for r in rows]))):
        assert _rows_of(sketchdb.sketch_many(flat, offsets=offsets, kind=kind, **args)) == want
    assert _rows_of(sketchdb.sketch_many(flat.view(np.int64), offsets=offsets, kind=kind, **args)) == want
    forms = {
        "lists": rows,
        "tuples": tuple(tuple(r) for r in rows),
        "generator": (r for r in rows),
        "numpy u64 rows": [np.asarray(r, dtype=np.uint64) for r in rows],
        "numpy i64 rows": [np.asarray(r, dtype=np.uint64).view(np.int64) for r in rows],
        "numpy scalars": [[np.uint64(t) for t in r[:50]] + r[50:] for r in rows],
    }
    for name, form in forms.items():
        assert _rows_of(sketchdb.sketch_many(form, kind=kind, **args)) == want, name
    cls = type(make())
    kw = {"minhash": dict(num_perm=64), "bbit": dict(num_perm=64, b=4), "oph": dict(bins=64, bits=16), "simhash": dict(bits=64)}[kind]
    assert [s.to_bytes() for s in cls.bulk(rows, **kw)] == want


@pytest.mark.parametrize("kind,args,make", KINDS, ids=IDS)
def test_2d_numpy_rows_equal_one_by_one(kind, args, make):
    rng = np.random.default_rng(3)
    m = rng.integers(0, 2**64 - 1, size=(500, 64), dtype=np.uint64, endpoint=True)
    want = _one_by_one(make, [list(map(int, r)) for r in m])
    assert _rows_of(sketchdb.sketch_many(m, kind=kind, **args)) == want
    assert _rows_of(sketchdb.sketch_many(m.view(np.int64), kind=kind, **args)) == want
    assert _rows_of(sketchdb.sketch_many(np.asfortranarray(m), kind=kind, **args)) == want
    # A strided view (each row reversed: the same set and multiset).
    assert _rows_of(sketchdb.sketch_many(m[:, ::-1], kind=kind, **args)) == want


@pytest.mark.parametrize("kind,args,make", KINDS, ids=IDS)
def test_word_rows_equal_one_by_one_and_arrow(kind, args, make):
    rows = _word_rows()
    want = _one_by_one(make, rows)
    assert sa.sketch_tokens(pa.array(rows, type=pa.list_(pa.string())), kind=kind, **args).to_pylist() == want
    assert _rows_of(sketchdb.sketch_many(rows, kind=kind, **args)) == want
    assert _rows_of(sketchdb.sketch_many([tuple(r) for r in rows], kind=kind, **args)) == want
    as_bytes = [[w.encode() for w in r] for r in rows]
    assert _rows_of(sketchdb.sketch_many(as_bytes, kind=kind, **args)) == want
    # Tokens of mixed types in one list: str, bytes and the int a str hashes to.
    mixed = [[w if i % 3 == 0 else w.encode() if i % 3 == 1 else sketchdb.token_hash(w) for i, w in enumerate(r)] for r in rows]
    assert _rows_of(sketchdb.sketch_many(mixed, kind=kind, **args)) == want


def test_texts_equal_update_text_and_arrow():
    texts = ["the quick brown fox jumps over the lazy dog", "Ünïcode words, here and there and everywhere", "a b c d e f g"] * 40
    for kw in (dict(shingle=1), dict(shingle=3), dict(ngram=4)):
        want = sa.sketch(pa.array(texts), k=64, **kw).to_pylist()
        assert _rows_of(sketchdb.sketch_many(texts, k=64, **kw)) == want
        one = []
        for t in texts:
            m = sketchdb.MinHash(num_perm=64, **kw)
            m.update_text(t)
            one.append(m.to_bytes())
        assert one == want
    # Texts and token lists in one call.
    both = sketchdb.sketch_many([texts[0], sketchdb.tokenize(texts[0], shingle=1)], k=64, shingle=1)
    assert bytes(both[0]) == bytes(both[1])


def test_recipe_and_seeds_reach_every_path():
    rows = _word_rows(40)
    want = _one_by_one(lambda: sketchdb.MinHash(recipe="datasketch", num_perm=64), rows)
    assert _rows_of(sketchdb.sketch_many(rows, k=64, recipe="datasketch")) == want
    want = _one_by_one(lambda: sketchdb.OPH(bins=32, seed=9, token_seed=4), rows)
    assert _rows_of(sketchdb.sketch_many(rows, kind="oph", k=32, seed=9, token_seed=4)) == want


def test_empty_input_and_many_chunks():
    assert sketchdb.sketch_many([], k=64).shape == (0, sketchdb.arrow.signature_width(k=64))
    rows = [[i, i + 1, i + 2] for i in range(20000)]  # several chunks of 4096 rows
    want = sa.sketch_tokens(pa.array(rows, type=pa.list_(pa.uint64())), kind="oph", k=64).to_pylist()
    assert _rows_of(sketchdb.sketch_many(rows, kind="oph", k=64)) == want


@pytest.mark.parametrize(
    "items,exc,match",
    [
        ([[1, 2], [3, -1]], ValueError, r"item 1: token 1: .*u64"),
        ([[1], (1, 2**64)], ValueError, r"item 1: token 1: .*u64"),
        ([[1, 2.5]], TypeError, r"item 0: token 1: .*token"),
        ([[1, None, 3]], TypeError, r"item 0: token 1: .*NoneType"),
        ([["a", None]], TypeError, r"item 0: token 1: .*NoneType"),
        ([["a", 2.5, "b"]], TypeError, r"item 0: token 1"),
        ([["a"], ["b", "\ud800"]], ValueError, r"item 1: token 1"),
        ([[1], 5], TypeError, r"item 1: .*not iterable"),
        ([[1], None], TypeError, r"item 1"),
        ([[1], b"abc"], TypeError, r"item 1: .*bytes"),
        ([[1], []], ValueError, r"item 1: .*empty"),
        ([[1]] * 5000 + [[2, -3]], ValueError, r"item 5000: token 1"),
        ([[1]] * 5000 + [[]], ValueError, r"item 5000: .*empty"),
        (5, TypeError, r"not iterable"),
        ("text", TypeError, r"not one str"),
        (pa.array([[1]], type=pa.list_(pa.uint64())), TypeError, r"sketchdb.arrow.sketch_tokens"),
    ],
)
def test_bad_input_raises_naming_the_item(items, exc, match):
    with pytest.raises(exc, match=match):
        sketchdb.sketch_many(items, k=64)
    if not isinstance(items, (int, str, pa.Array)):
        with pytest.raises(exc, match=match):
            sketchdb.MinHash.bulk(items, num_perm=64)


def test_bad_offsets_raise():
    flat = np.arange(10, dtype=np.uint64)
    for offsets, match in [
        ([1, 10], "start at 0"),
        ([0, 5, 3, 10], r"offsets\[2\] < offsets\[1\]"),
        ([0, 5, 9], "number of tokens"),
        (np.array([0, -1, 10]), r"offsets\[1\] is negative"),
        ("0,10", "offsets must be"),
    ]:
        with pytest.raises((ValueError, TypeError), match=match):
            sketchdb.sketch_many(flat, offsets=offsets, k=64)
    with pytest.raises(TypeError, match="1-D NumPy"):
        sketchdb.sketch_many([[1, 2]], offsets=[0, 2], k=64)
    with pytest.raises(ValueError, match="item 1: .*empty"):
        sketchdb.sketch_many(flat, offsets=[0, 5, 5, 10], k=64)


def test_a_list_that_changes_size_is_read_safely():
    """A token's ``__index__`` that empties its own list: the read stops with an error (or
    reads what is there), the interpreter does not crash."""
    row = list(range(1, 100))

    class Shrinker:
        def __index__(self):
            del row[10:]
            return 7

    row[5] = Shrinker()
    try:
        sketchdb.sketch_many([row], k=64)
    except (IndexError, ValueError, TypeError):
        pass


def test_numpy_shapes_that_are_not_rows_raise():
    with pytest.raises(TypeError, match="offsets="):
        sketchdb.sketch_many(np.arange(5, dtype=np.uint64), k=64)
    with pytest.raises(TypeError, match="2-D"):
        sketchdb.sketch_many(np.zeros((2, 2, 2), dtype=np.uint64), k=64)
    with pytest.raises(TypeError, match="1-D"):
        sketchdb.sketch_many(np.zeros((2, 2), dtype=np.uint64), offsets=[0, 2, 4], k=64)


def test_insert_many_stores_a_signature_matrix_as_its_tokens(tmp_path):
    rows = _int_rows(200)
    keys = [f"k{i}" for i in range(len(rows))]
    with sketchdb.open(str(tmp_path / "m.sketchdb")) as db:
        by_tokens = db.create_collection("t", kind="oph", k=64, bits=16, lsh=0.6)
        by_tokens.insert_many(keys, tokens=rows, strict=True)
        by_matrix = db.create_collection("m", kind="oph", k=64, bits=16, lsh=0.6)
        matrix = sketchdb.sketch_many(rows, **by_matrix.spec())
        assert by_matrix.insert_many(keys, signatures=matrix, strict=True).written == len(rows)
        for k in keys[::17]:
            assert by_matrix.get(k).to_bytes() == by_tokens.get(k).to_bytes()
            got = [(h.key, h.estimate) for h in by_matrix.query(key=k, threshold=0.6)]
            assert got == [(h.key, h.estimate) for h in by_tokens.query(key=k, threshold=0.6)]
        with pytest.raises(ValueError, match="152|bytes"):
            by_matrix.insert_many(["x"], signatures=np.zeros((1, 3), dtype=np.uint8))


def test_bulk_leaves_the_garbage_collector_as_it_found_it():
    import gc

    rows = _int_rows(50)
    want = _one_by_one(lambda: sketchdb.OPH(bins=64, bits=16), rows)
    assert gc.isenabled()
    assert [s.to_bytes() for s in sketchdb.OPH.bulk(rows, bins=64, bits=16)] == want
    assert gc.isenabled()
    gc.disable()
    try:
        sketchdb.OPH.bulk(rows, bins=64, bits=16)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ValueError, match="item 1"):
        sketchdb.OPH.bulk([[1], []], bins=64)
    assert gc.isenabled()
