"""sketchdb.compat.datasketch against the real datasketch package: identical hashvalues for
the same tokens and seed (both schemes), the same banding, identical candidate sets from
MinHashLSH.query on 3,000 sets, persistence, and a script whose output is the same with
either import."""

import random
import subprocess
import sys

import numpy as np
import pytest

import sketchdb
from sketchdb.compat import datasketch as compat

datasketch = pytest.importorskip("datasketch")


def _sets(n, seed=5):
    rng = random.Random(seed)
    base = [[f"w{rng.randrange(3000)}" for _ in range(rng.randint(20, 60))] for _ in range(n // 2)]
    out = [list(s) for s in base]
    for s in base:  # near copies: a few tokens changed
        t = list(s)
        for _ in range(rng.randint(1, 6)):
            t[rng.randrange(len(t))] = f"w{rng.randrange(3000)}"
        out.append(t)
    return out


@pytest.mark.parametrize("threshold,num_perm,weights", [(0.5, 128, (0.5, 0.5)), (0.8, 64, (0.3, 0.7)), (0.9, 128, (0.5, 0.5))])
def test_banding_equals_datasketch(threshold, num_perm, weights):
    ds = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
    ours = compat.MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
    assert (ours.b, ours.r) == (ds.b, ds.r)
    idx = ours._coll.stats()["index"]
    assert (idx["bands"], idx["rows"]) == (ds.b, ds.r)
    ours.close()


def test_query_returns_exactly_the_keys_sharing_a_band():
    sets = [[t.encode() for t in s] for s in _sets(2000)]
    lsh = compat.MinHashLSH(threshold=0.7, num_perm=128)
    mins = compat.MinHash.bulk(sets, num_perm=128)
    with lsh.insertion_session() as s:
        for i, m in enumerate(mins):
            s.insert(f"s{i}", m)
    b, r = lsh.b, lsh.r
    sig = np.stack([m.hashvalues for m in mins])
    bands = [{} for _ in range(b)]
    for i in range(len(mins)):
        for j in range(b):
            bands[j].setdefault(sig[i, j * r:(j + 1) * r].tobytes(), set()).add(f"s{i}")
    for q in range(0, len(mins), 37):
        want = set().union(*(bands[j].get(sig[q, j * r:(j + 1) * r].tobytes(), set()) for j in range(b)))
        assert set(lsh.query(mins[q])) == want, q
    assert "s0" in lsh and "nope" not in lsh
    lsh.remove("s0")
    assert "s0" not in lsh
    with pytest.raises(ValueError):
        lsh.remove("s0")
    lsh.close()


@pytest.mark.parametrize("scheme", [None, "legacy"])
@pytest.mark.parametrize("seed,num_perm", [(1, 128), (7, 64)])
def test_hashvalues_equal_datasketch(scheme, seed, num_perm):
    kw = {} if scheme is None else {"scheme": scheme}
    for i, toks in enumerate(_sets(200)):
        toks = [t.encode() for t in toks]
        d = datasketch.MinHash(num_perm=num_perm, seed=seed, **kw)
        d.update_batch(toks)
        m = compat.MinHash(num_perm=num_perm, seed=seed, **kw)
        if i % 2:
            m.update_batch(toks)
        else:
            for t in toks:
                m.update(t)
        assert np.array_equal(m.hashvalues, d.hashvalues), i
        assert m.jaccard(m) == 1.0
    bulk = compat.MinHash.bulk([[t.encode() for t in s] for s in _sets(20)], num_perm=num_perm, seed=seed, **kw)
    ref = datasketch.MinHash.bulk([[t.encode() for t in s] for s in _sets(20)], num_perm=num_perm, seed=seed, **kw)
    assert all(np.array_equal(a.hashvalues, b.hashvalues) for a, b in zip(bulk, ref))


def test_candidates_equal_datasketch_minhashlsh():
    sets = [[t.encode() for t in s] for s in _sets(3000)]
    ds_mins = datasketch.MinHash.bulk(sets, num_perm=128)
    our_mins = compat.MinHash.bulk(sets, num_perm=128)
    for threshold in (0.5, 0.8):
        ds = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
        ours = compat.MinHashLSH(threshold=threshold, num_perm=128)
        with ds.insertion_session() as a, ours.insertion_session() as b:
            for i in range(len(sets)):
                a.insert(f"s{i}", ds_mins[i])
                b.insert(f"s{i}", our_mins[i])
        for q in range(0, len(sets), 7):
            assert sorted(ours.query(our_mins[q])) == sorted(ds.query(ds_mins[q])), (threshold, q)
        ours.close()


def test_minhash_api_and_persistence(tmp_path):
    a, b = compat.MinHash(num_perm=64), compat.MinHash(num_perm=64)
    for w in "the quick brown fox jumps over the lazy dog".split():
        a.update(w.encode())
    b.update_batch([w.encode() for w in "the quick brown fox jumped over a lazy dog".split()])
    d1, d2 = datasketch.MinHash(num_perm=64), datasketch.MinHash(num_perm=64)
    for w in "the quick brown fox jumps over the lazy dog".split():
        d1.update(w.encode())
    d2.update_batch([w.encode() for w in "the quick brown fox jumped over a lazy dog".split()])
    true = len(set("the quick brown fox jumps over the lazy dog".split()) & set("the quick brown fox jumped over a lazy dog".split())) / len(
        set("the quick brown fox jumps over the lazy dog".split()) | set("the quick brown fox jumped over a lazy dog".split()))
    assert abs(a.jaccard(b) - true) < 0.25 and abs(d1.jaccard(d2) - true) < 0.25
    assert a.count() == 8.0 and len(a) == 64 and a.hashvalues.dtype == d1.hashvalues.dtype
    lean = compat.LeanMinHash(a)
    assert lean.jaccard(b) == a.jaccard(b)
    with pytest.raises(TypeError):
        lean.update(b"x")
    again = compat.MinHash(hashvalues=a.hashvalues)
    assert again.jaccard(b) == a.jaccard(b)
    path = tmp_path / "lsh.sketchdb"
    cfg = {"type": "sketchdb", "path": str(path)}
    lsh = compat.MinHashLSH(threshold=0.5, num_perm=64, storage_config=cfg)
    lsh.insert("a", a)
    lsh.insert(("tuple", 1), b)
    with pytest.raises(ValueError, match="already exists"):
        lsh.insert("a", a)
    lsh.close()
    reopened = compat.MinHashLSH(threshold=0.5, num_perm=64, storage_config=cfg)
    assert "a" in reopened and ("tuple", 1) in reopened
    assert set(reopened.query(b)) >= {("tuple", 1)}
    reopened.close()
    with sketchdb.open(path, read_only=True) as db:
        assert len(db["minhash_lsh"]) == 2


SCRIPT = """
import sys
if sys.argv[1] == "datasketch":
    from datasketch import MinHash, MinHashLSH
else:
    from sketchdb.compat.datasketch import MinHash, MinHashLSH
docs = {"a": "the cat sat on the mat with a hat", "b": "the cat sat on the mat with a hat",
        "c": "completely unrelated words about databases and rust code"}
lsh = MinHashLSH(threshold=0.8, num_perm=128)
ms = {}
for k, t in docs.items():
    m = MinHash(num_perm=128)
    for w in t.split():
        m.update(w.encode("utf8"))
    ms[k] = m
    lsh.insert(k, m)
print(lsh.b, lsh.r)
for k in docs:
    print(k, sorted(lsh.query(ms[k])), ms[k].jaccard(ms["a"]), list(ms[k].hashvalues[:4]))
"""


def test_same_script_either_import(tmp_path):
    script = tmp_path / "port.py"
    script.write_text(SCRIPT)
    outs = [
        subprocess.run([sys.executable, str(script), lib], capture_output=True, text=True, check=True).stdout
        for lib in ("datasketch", "sketchdb")
    ]
    assert outs[0] == outs[1]
    assert "a ['a', 'b'] 1.0" in outs[0] and "c ['c']" in outs[0]


def test_recipe_collections_and_hashvalue_import(tmp_path):
    """A collection of the datasketch family stores datasketch's signatures for the same words;
    datasketch hashvalues import into it as they are and answer the same queries."""
    texts = [" ".join(s) for s in _sets(60)]
    ds = [datasketch.MinHash(num_perm=128) for _ in texts]
    for m, t in zip(ds, texts):
        m.update_batch([w.encode() for w in t.split()])
    with sketchdb.open(tmp_path / "r.sketchdb") as db:
        c = db.create_collection("c", recipe="datasketch-affine32", lsh=0.5)
        assert c.spec()["recipe"] == "datasketch-affine32"
        c.insert_many([f"t{i}" for i in range(len(texts))], texts, strict=True)
        for i in range(0, len(texts), 9):
            assert np.array_equal(c.get(f"t{i}").hashvalues, ds[i].hashvalues)
        imported = db.create_collection("h", recipe="datasketch-affine32", lsh=0.5)
        r = imported.insert_many([f"t{i}" for i in range(len(texts))], hashvalues=np.stack([m.hashvalues for m in ds]))
        assert r.written == len(texts) and not r.rejects
        for i in range(0, len(texts), 9):
            assert np.array_equal(imported.get(f"t{i}").hashvalues, ds[i].hashvalues)
            got = [(h.key, h.estimate) for h in imported.query(key=f"t{i}", threshold=0.5)]
            assert got == [(h.key, h.estimate) for h in c.query(key=f"t{i}", threshold=0.5)]
        # The Arrow kernel with the recipe gives the stored bytes.
        import pyarrow as pa

        import sketchdb.arrow as sa

        sigs = sa.sketch(pa.array(texts), **c.spec())
        assert sigs[3].as_py() == c.get("t3").to_bytes()
        # Values of sketchdb's own family are not datasketch's: a native collection refuses nothing
        # by type but they would not match; a wrong width is a reject.
        bad = imported.insert_many(["w"], hashvalues=[np.zeros(64, dtype=np.uint32)])
        assert bad.written == 0 and "64 values" in str(bad.rejects[0].error)
