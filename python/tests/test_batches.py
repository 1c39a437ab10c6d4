"""Batch calls: insert_many from lists, generators, NumPy and pyarrow; its rejects rule (skip and
report by default, all or nothing with strict=True); query_many / top_k_many equal to the
per-query calls."""

import numpy as np
import pyarrow as pa
import pytest

import sketchdb


def _stored(c, keys):
    return {k: c.get(k) for k in keys}


def test_insert_many_inputs_agree(tmp_path, corpus):
    texts = corpus[:120]
    keys = [f"k{i}" for i in range(len(texts))]
    token_lists = [t.split() for t in texts]
    with sketchdb.open(tmp_path / "i.sketchdb") as db:
        ref = db.create_collection("ref")
        assert ref.insert_many(keys, texts).written == len(texts)
        want = _stored(ref, keys)
        variants = {
            "generator": lambda c: c.insert_many((k for k in keys), (t for t in texts)),
            "numpy_str": lambda c: c.insert_many(np.array(keys), np.array(texts)),
            "numpy_obj": lambda c: c.insert_many(np.array(keys, dtype=object), np.array(texts, dtype=object)),
            "pyarrow": lambda c: c.insert_many(pa.array(keys), pa.array(texts)),
            "chunked": lambda c: c.insert_many(
                pa.chunked_array([keys[:50], keys[50:]]), pa.chunked_array([texts[:50], texts[50:]])
            ),
            "large": lambda c: c.insert_many(pa.array(keys, pa.large_string()), pa.array(texts, pa.large_string())),
        }
        for name, insert in variants.items():
            c = db.create_collection(name)
            r = insert(c)
            assert r.written == len(texts) and r.rejects == [] and int(r) == len(texts), name
            assert _stored(c, keys) == want, name
        # Token lists: Python lists, NumPy hash arrays and pyarrow list arrays agree.
        hashed = [np.array([sketchdb.token_hash(w) for w in ws], dtype=np.uint64) for ws in token_lists]
        t1, t2, t3 = (db.create_collection(n) for n in ("tok_list", "tok_numpy", "tok_arrow"))
        t1.insert_many(keys, tokens=token_lists)
        t2.insert_many(keys, tokens=hashed)
        t3.insert_many(keys, tokens=pa.array(token_lists))
        assert _stored(t1, keys) == _stored(t2, keys) == _stored(t3, keys)


def test_insert_many_skips_and_reports_bad_records(tmp_path):
    texts = ["one two three four", "five six seven eight", "!!!", "nine ten eleven twelve", None, "x y z w"]
    keys = ["a", "b", "c", "", "e", "a"]
    with sketchdb.open(tmp_path / "r.sketchdb") as db:
        c = db.create_collection("c")
        c.insert_many(["stored"], ["already here in the file"])
        r = c.insert_many(keys, texts)
        # Bad: record 2 (no words), 3 (empty key), 4 (None text), 5 (repeats record 0's key).
        assert [x.index for x in r.rejects] == [2, 3, 4, 5]
        assert r.written == 2
        assert isinstance(r.rejects[0].error, ValueError) and "empty set" in str(r.rejects[0].error)
        assert r.rejects[0].key == "c"
        assert isinstance(r.rejects[1].error, ValueError) and "empty key" in str(r.rejects[1].error)
        assert isinstance(r.rejects[2].error, TypeError)
        assert "duplicate key" in str(r.rejects[3].error)
        assert sorted(k for k in ["a", "b", "c", "e", "stored"] if k in c) == ["a", "b", "stored"]
        # A key already stored is a reject too; the rest of the batch is written.
        r = c.insert_many(["n1", "stored", "n2"], ["new text one here", "dup", "new text two here"])
        assert r.written == 2 and [(x.index, x.key) for x in r.rejects] == [(1, "stored")]
        assert isinstance(r.rejects[0].error, sketchdb.Error)
        assert "n1" in c and "n2" in c and len(c) == 5
        # strict: the first bad record raises with its position; nothing of the call is written.
        with pytest.raises(ValueError, match=r"record 1: empty key"):
            c.insert_many(["s1", "", "s2"], ["aa bb cc", "dd ee ff", "gg hh ii"], strict=True)
        with pytest.raises(ValueError, match=r"record 2: cannot sketch an empty set"):
            c.insert_many(["s1", "s2", "s3"], ["aa bb cc", "dd ee ff", "!!!"], strict=True)
        with pytest.raises(sketchdb.Error, match="duplicate key"):
            c.insert_many(["s1", "stored"], ["aa bb cc", "dd ee ff"], strict=True)
        assert len(c) == 5 and "s1" not in c


def test_insert_many_sketches_and_signatures(tmp_path, corpus):
    with sketchdb.open(tmp_path / "s.sketchdb") as db:
        c = db.create_collection("c", k=64)
        c.insert_many(["a", "b"], corpus[:2])
        other = db.create_collection("o", k=32)
        r = other.insert_many(["x", "y"], sketches=[c.get("a"), sketchdb.MinHash(num_perm=32)])
        # A sketch of other parameters is refused (IncompatibleError); the empty one cannot be sketched.
        assert r.written == 0
        assert isinstance(r.rejects[0].error, sketchdb.IncompatibleError)
        sig = c.get("b").to_bytes()
        assert c.insert_many(["b2"], signatures=[sig]).written == 1
        assert c.get("b2") == c.get("b")
        r = c.insert_many(["b3"], signatures=[sig[:-1]])
        assert r.written == 0 and "length" in str(r.rejects[0].error)


def test_query_many_equals_single_queries(tmp_path, corpus):
    with sketchdb.open(tmp_path / "q.sketchdb") as db:
        c = db.create_collection("c", lsh=0.5)
        keys = [f"d{i}" for i in range(len(corpus))]
        c.insert_many(keys, corpus)

        def flat(hits):
            return [(h.key, h.estimate, h.lower, h.upper) for h in hits]

        probes = corpus[::9]
        many = c.query_many(probes, threshold=0.5)
        assert [flat(h) for h in many] == [flat(c.query(text=t, threshold=0.5)) for t in probes]
        assert [flat(h) for h in c.query_many(pa.array(probes), threshold=0.5)] == [flat(h) for h in many]
        by_key = c.top_k_many(keys=keys[::7], k=5)
        assert [flat(h) for h in by_key] == [flat(c.top_k(key=k, k=5)) for k in keys[::7]]
        toks = [t.split() for t in probes]
        assert [flat(h) for h in c.query_many(tokens=toks)] == [flat(c.query(tokens=t)) for t in toks]
        with pytest.raises(sketchdb.NotFoundError, match="probe 1"):
            c.query_many(keys=["d0", "missing"])
        with pytest.raises(ValueError, match="exactly one"):
            c.query_many(probes, keys=keys)


def test_query_many_on_two_threads_equals_single_queries(tmp_path, corpus):
    # One read snapshot per call, the probes on a pool of `threads` threads: every answer
    # equals the per-probe call's, for texts, tokens, keys and sketches, threshold and top-k.
    with sketchdb.open(tmp_path / "t.sketchdb") as db:
        c = db.create_collection("c", lsh=0.5)
        keys = [f"d{i}" for i in range(len(corpus))]
        c.insert_many(keys, corpus)

        def flat(hits):
            return [(h.key, h.row_id, h.estimate, h.lower, h.upper) for h in hits]

        texts = corpus[::3]
        sketches = [c.get(k) for k in keys[::5]]
        for threads in (1, 2):
            got = c.query_many(texts, threshold=0.5, threads=threads)
            assert [flat(h) for h in got] == [flat(c.query(text=t, threshold=0.5)) for t in texts]
            got = c.top_k_many(keys=keys[::4], k=3, threads=threads)
            assert [flat(h) for h in got] == [flat(c.top_k(key=k, k=3)) for k in keys[::4]]
            got = c.query_many(sketches=sketches, threshold=0.6, threads=threads)
            assert [flat(h) for h in got] == [flat(c.query(sketch=s, threshold=0.6)) for s in sketches]
        assert any(len(h) > 1 for h in c.query_many(texts, threshold=0.5, threads=2))
        with pytest.raises(ValueError, match="threads"):
            c.query_many(texts, threads=0)
        with pytest.raises(sketchdb.NotFoundError, match="probe 2"):
            c.top_k_many(keys=["d0", "d1", "missing", "d3"], threads=2)


@pytest.mark.parametrize("exact", [False, True])
def test_insert_many_modes_store_each_records_own_sketch(tmp_path, corpus, exact):
    """Every mode of insert_many (strict, upsert with rejects, an insert that meets stored keys
    and writes the rest again) stores for each key exactly what a single insert of its text
    stores, and on a collection with exact shingles answers exactly as well."""
    texts = corpus[:60]
    keys = [f"k{i}" for i in range(len(texts))]
    with sketchdb.open(tmp_path / "m.sketchdb") as db:
        ref = db.create_collection("ref", exact_shingles=exact)
        for k, t in zip(keys, texts):
            ref.insert(k, text=t)
        strict = db.create_collection("strict", exact_shingles=exact)
        assert strict.insert_many(keys, texts, strict=True).written == len(keys)
        up = db.create_collection("up", exact_shingles=exact)
        up.insert_many(keys[:20], ["placeholder words here now"] * 20)
        bad = list(texts)
        bad[30] = "!!!"
        r = up.insert_many(keys, bad, upsert=True)
        assert r.written == len(keys) - 1 and [x.index for x in r.rejects] == [30]
        up.insert_many([keys[30]], [texts[30]], upsert=True, strict=True)
        again = db.create_collection("again", exact_shingles=exact)
        again.insert_many(keys[::3], texts[::3])
        r = again.insert_many(keys, texts)
        assert r.written == len(keys) - len(keys[::3])
        assert sorted(x.index for x in r.rejects) == list(range(0, len(keys), 3))
        for c in (strict, up, again):
            assert len(c) == len(keys)
            for k in keys:
                assert c.get(k) == ref.get(k), (c.name, k)
            for k in keys[::7]:
                got = [(h.key, h.estimate, h.exact) for h in c.query(key=k, threshold=0.3)]
                assert got == [(h.key, h.estimate, h.exact) for h in ref.query(key=k, threshold=0.3)]
