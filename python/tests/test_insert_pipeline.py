"""insert_many from texts and tokens= over many chunks (the call reads, sketches and writes
its records chunk by chunk, 4,096 records or 256k tokens a chunk): every input shape stores
what single inserts and sketch_many give; bad records in any chunk are skipped and reported
(or, under strict=True, the first raises and nothing is written); bad arguments raise
TypeError/ValueError naming the record."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import sketchdb

N = 9000  # three chunks by rows, and more than one by tokens


@pytest.fixture(scope="module")
def sets():
    rng = np.random.default_rng(7)
    return [rng.integers(0, 2**64, size=int(n), dtype=np.uint64).tolist() for n in rng.integers(1, 120, size=N)]


def _sigs(c, keys):
    return [c.get(k).to_bytes() for k in keys]


def test_every_token_shape_stores_sketch_many_and_single_inserts(tmp_path, sets):
    keys = [f"k{i}" for i in range(N)]
    want = [bytes(r) for r in sketchdb.sketch_many(sets, k=64)]
    shapes = {
        "lists": lambda: sets,
        "tuples": lambda: tuple(tuple(s) for s in sets),
        "generator": lambda: (s for s in sets),
        "numpy rows": lambda: [np.asarray(s, dtype=np.uint64) for s in sets],
        "int64 rows": lambda: [np.asarray(s, dtype=np.uint64).view(np.int64) for s in sets],
        "arrow": lambda: pa.array(sets, type=pa.list_(pa.uint64())),
        "arrow chunked": lambda: pa.chunked_array(
            [pa.array(sets[:5000], type=pa.list_(pa.uint64())), pa.array(sets[5000:], type=pa.list_(pa.uint64()))]
        ),
    }
    with sketchdb.open(tmp_path / "t.sketchdb") as db:
        ref = db.create_collection("ref", k=64, lsh=0.8)
        for i in range(0, N, 97):
            ref.insert(keys[i], tokens=sets[i])
        for name, make in shapes.items():
            c = db.create_collection(name.replace(" ", "_"), k=64, lsh=0.8)
            r = c.insert_many(keys, tokens=make())
            assert r.written == N and r.rejects == [], name
            assert _sigs(c, keys) == want, name
            assert all(c.get(keys[i]) == ref.get(keys[i]) for i in range(0, N, 97)), name
            # The index holds every record: each finds itself.
            for i in range(0, N, 1000):
                assert keys[i] in [h.key for h in c.query(key=keys[i], threshold=0.9)], name


def test_texts_in_chunks_match_arrow_single_inserts_and_exact_sets(tmp_path):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(400)]
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(6, 60, size=N)]
    keys = [f"d{i}" for i in range(N)]
    with sketchdb.open(tmp_path / "x.sketchdb") as db:
        a = db.create_collection("a", kind="oph", k=128)
        b = db.create_collection("b", kind="oph", k=128)
        e = db.create_collection("e", kind="oph", k=128, exact_shingles=True)
        ref = db.create_collection("ref", kind="oph", k=128, exact_shingles=True)
        assert a.insert_many(keys, texts).written == N
        assert b.insert_many(pa.array(keys), pa.array(texts)).written == N
        assert e.insert_many(keys, texts, strict=True).written == N
        for i in range(0, N, 211):
            ref.insert(keys[i], text=texts[i])
        assert _sigs(a, keys) == _sigs(b, keys) == _sigs(e, keys)
        assert _sigs(a, keys) == [bytes(r) for r in sketchdb.sketch_many(texts, kind="oph", k=128)]
        for i in range(0, N, 211):
            assert e.get(keys[i]) == ref.get(keys[i])
            got = [(h.key, h.exact) for h in e.query(key=keys[i], threshold=0.5) if h.key in ref]
            assert got == [(h.key, h.exact) for h in ref.query(key=keys[i], threshold=0.5)]


def _bad_batch(sets):
    """The sets with bad records at the chunks' edges and beyond; the expected rejects."""
    records = list(sets)
    keys = [f"k{i}" for i in range(N)]
    records[4095] = [1, 2, -1]  # not a u64
    records[4096] = [1.5]  # not a token
    records[5000] = []  # nothing to sketch
    records[6001] = None  # not iterable
    records[6002] = "a b c"  # a str, not a token list
    keys[7000] = ""  # empty key
    keys[8000] = keys[10]  # repeats record 10's key
    keys[8500] = "stored"  # stored before the call
    want = {
        4095: (ValueError, "token 2"),
        4096: (TypeError, "token 0"),
        5000: (ValueError, "empty set"),
        6001: (TypeError, ""),
        6002: (TypeError, "not a single str"),
        7000: (ValueError, "empty key"),
        8000: (ValueError, "record 10 has the same key"),
        8500: (sketchdb.Error, "already stored"),
    }
    return keys, records, want


@pytest.mark.parametrize("shape", ["lists", "arrow"])
def test_bad_records_in_later_chunks_are_skipped_and_reported(tmp_path, sets, shape):
    keys, records, want = _bad_batch(sets)
    if shape == "arrow":
        # Arrow has no bad token types: nulls instead (a null token and a null list).
        records[4096], records[6001], records[6002] = [1, None], None, [7, 8]
        records[4095] = [1, 2, 3]
        want = {**want, 4096: (ValueError, "null token"), 6001: (ValueError, "null token list")}
        del want[4095], want[6002]
        records = pa.array(records, type=pa.list_(pa.uint64()))
    with sketchdb.open(tmp_path / "b.sketchdb") as db:
        c = db.create_collection("c", k=64, lsh=0.8)
        c.insert_many(["stored"], tokens=[[5, 6, 7]])
        before = c.get("stored")
        r = c.insert_many(keys, tokens=records)
        assert [x.index for x in r.rejects] == sorted(want)
        for x in r.rejects:
            cls, text = want[x.index]
            assert isinstance(x.error, cls) and text in str(x.error), (x.index, x.error)
            # An unusable key is reported as None, any other as given.
            assert x.key == (None if x.index == 7000 else keys[x.index])
        assert r.written == N - len(want) and len(c) == N - len(want) + 1
        assert c.get("stored") == before
        good = [i for i in range(N) if i not in want]
        sketched = sketchdb.sketch_many([sets[i] for i in good[::50]], k=64)
        assert _sigs(c, [keys[i] for i in good[::50]]) == [bytes(s) for s in sketched]


def _check_slow_sketching(path):
    """MinHash 1024 sketches far slower than Python int lists are read: the sketching thread
    falls behind and the reader sketches (shares of) chunks too. Every record still gets its
    own sketch, in order, and the rejects of any chunk their own index."""
    rng = np.random.default_rng(11)
    n = 24000  # 6 chunks of 4,096 records (about 20 tokens each)
    sets = [rng.integers(0, 2**64, size=int(m), dtype=np.uint64).tolist() for m in rng.integers(1, 40, size=n)]
    keys = [f"k{i}" for i in range(n)]
    bad = {i: [] for i in range(1500, n, 2500)}  # empty: the sketch's reject
    bad.update({i: [1, -1] for i in range(2600, n, 3100)})  # negative token: the reader's reject
    records = [bad.get(i, s) for i, s in enumerate(sets)]
    with sketchdb.open(path) as db:
        c = db.create_collection("c", k=1024)
        r = c.insert_many(keys, tokens=records)
        assert [x.index for x in r.rejects] == sorted(bad)
        for x in r.rejects:
            assert ("empty set" if bad[x.index] == [] else "token 1") in str(x.error), (x.index, x.error)
        good = [i for i in range(n) if i not in bad]
        assert r.written == len(good)
        want = sketchdb.sketch_many([sets[i] for i in good], k=1024)
        assert _sigs(c, [keys[i] for i in good]) == [bytes(s) for s in want]


def test_slow_sketching_many_chunks_keep_their_order_and_rejects(tmp_path):
    _check_slow_sketching(tmp_path / "o.sketchdb")


def test_slow_sketching_beside_three_workers_the_reader_sketches_shares_of_chunks(tmp_path):
    """With four threads the reader sketches a third of a chunk at a time (one of three pool
    workers' share): the same records, order and rejects (run in a child interpreter, whose
    rayon pool is sized by RAYON_NUM_THREADS)."""
    here = pathlib.Path(__file__).resolve().parent
    code = (
        f"import sys; sys.path.insert(0, {str(here)!r}); import test_insert_pipeline as t; "
        "t._check_slow_sketching(sys.argv[1])"
    )
    env = {**os.environ, "RAYON_NUM_THREADS": "4"}
    args = [sys.executable, "-c", code, str(tmp_path / "o.sketchdb")]
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_strict_raises_the_first_bad_record_of_a_later_chunk_and_writes_nothing(tmp_path, sets):
    keys, records, _ = _bad_batch(sets)
    with sketchdb.open(tmp_path / "s.sketchdb") as db:
        c = db.create_collection("c", k=64, lsh=0.8)
        c.insert_many(["stored"], tokens=[[5, 6, 7]])
        with pytest.raises(ValueError, match=r"^record 4095: token 2: "):
            c.insert_many(keys, tokens=records, strict=True)
        ok = list(sets)
        ok[6500] = []
        with pytest.raises(ValueError, match=r"^record 6500: .*empty set"):
            c.insert_many(keys[:7000], tokens=ok[:7000], strict=True)
        with pytest.raises(sketchdb.Error, match="duplicate key"):
            c.insert_many(keys[:6000] + ["stored"], tokens=sets[:6001], strict=True)
        assert len(c) == 1 and keys[0] not in c
        # upsert writes over the stored key, and strict upsert of good records writes them all.
        r = c.insert_many(keys[:6000] + ["stored"], tokens=sets[:6001], upsert=True, strict=True)
        assert r.written == 6001 and len(c) == 6001
        assert c.get("stored").to_bytes() == bytes(sketchdb.sketch_many([sets[6000]], k=64)[0])


def test_bad_arguments_raise_naming_the_record(tmp_path):
    with sketchdb.open(tmp_path / "a.sketchdb") as db:
        c = db.create_collection("c")
        with pytest.raises(TypeError, match="texts must be an iterable"):
            c.insert_many(["a"], "one two three")
        with pytest.raises(TypeError, match="tokens must be an iterable"):
            c.insert_many(["a"], tokens=b"\x01\x02")
        with pytest.raises(ValueError, match="2 keys but 3 records"):
            c.insert_many(["a", "b"], ["x y", "y z", "z w"])
        with pytest.raises(TypeError, match=r"^record 1: a text is str, not int"):
            c.insert_many(["a", "b"], ["one two", 5], strict=True)
        with pytest.raises(TypeError, match=r"^record 2: token 1: a token is str, bytes or int"):
            c.insert_many(["a", "b", "c"], tokens=[[1], [2], [3, 4.5]], strict=True)
        with pytest.raises(TypeError, match=r"^record 0: a key is str or bytes, not int"):
            c.insert_many([7], ["one two"], strict=True)
        with pytest.raises(TypeError, match="texts must be a string array"):
            c.insert_many(pa.array(["a"]), pa.array([1]))
        assert len(c) == 0

        def failing():
            yield "one two three"
            raise RuntimeError("the source failed")

        with pytest.raises(RuntimeError, match="the source failed"):
            c.insert_many(["a", "b"], failing())
        assert len(c) == 0


@pytest.mark.parametrize("shape", ["tokens", "signatures generator", "sketches"])
def test_keys_another_thread_stores_meanwhile_are_rejects_and_nothing_is_lost(tmp_path, sets, shape):
    """Another writer stores some of the call's keys while it runs: whichever commit comes
    first keeps a key (the call's keys it finds stored are its rejects; it looks them up
    before writing and, if the other commit lands after that, runs again from its input, a
    generator's items included), no key is stored twice and no record of the call is lost."""
    import threading

    keys = [f"k{i}" for i in range(N)]
    theirs = keys[::450]
    their_sig = bytes(sketchdb.sketch_many([[9, 10, 11]], k=64)[0])
    sigs = sketchdb.sketch_many(sets, k=64)
    ours = {k: bytes(s) for k, s in zip(keys, sigs)}
    records = {
        "tokens": lambda: dict(tokens=sets),
        "signatures generator": lambda: dict(signatures=(bytes(s) for s in sigs)),
        "sketches": lambda: dict(sketches=sketchdb.MinHash.bulk(sets, num_perm=64)),
    }[shape]
    for attempt in range(3):
        with sketchdb.open(tmp_path / f"r{attempt}.sketchdb") as db:
            c = db.create_collection("c", k=64, lsh=0.8)
            c.insert("seed", tokens=[1, 2, 3])  # not empty: the call looks its keys up
            outcome = {}

            def other():
                outcome["r"] = c.insert_many(theirs, tokens=[[9, 10, 11]] * len(theirs))

            t = threading.Thread(target=other)
            t.start()
            r = c.insert_many(keys, **records())
            t.join()
            rejected = {x.key for x in r.rejects}
            assert all(isinstance(x.error, sketchdb.Error) and "already stored" in str(x.error) for x in r.rejects)
            their_rejects = {x.key for x in outcome["r"].rejects}
            # Each of their keys was written by exactly one of the two calls.
            assert set(theirs) == rejected | their_rejects and not (rejected & their_rejects)
            assert r.written == N - len(rejected) and len(c) == N + 1
            for k in keys:
                assert c.get(k).to_bytes() == (their_sig if k in rejected else ours[k]), k
