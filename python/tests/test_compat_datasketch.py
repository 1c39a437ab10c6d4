"""sketchdb.compat.datasketch against the real datasketch package: the same banding, the
same candidate rule (every key sharing a band), persistence, and a script that runs with
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
    sets = _sets(2000)
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
    assert a.count() == 8.0 and len(a) == 64 and a.hashvalues.dtype == np.uint64
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
    print(k, sorted(lsh.query(ms[k])), round(ms[k].jaccard(ms["a"]), 1))
"""


def test_same_script_either_import(tmp_path):
    script = tmp_path / "port.py"
    script.write_text(SCRIPT)
    outs = [
        subprocess.run([sys.executable, str(script), lib], capture_output=True, text=True, check=True).stdout
        for lib in ("datasketch", "sketchdb")
    ]
    assert outs[0] == outs[1]
    assert "a ['a', 'b'] 1.0" in outs[0]
