"""sketchdb.compat.datasketch beyond the defaults: a custom `hashfunc` gives datasketch's
hashvalues bit for bit (both schemes); what the shim does not offer raises
NotImplementedError naming the alternative."""

import hashlib
import random

import numpy as np
import pytest

from sketchdb.compat import datasketch as compat

datasketch = pytest.importorskip("datasketch")


def md5_32(b):
    return int.from_bytes(hashlib.md5(b).digest()[:4], "little")


def md5_64(b):
    return int.from_bytes(hashlib.md5(b).digest()[:8], "little")


def str_hash32(s):
    """A hashfunc over str tokens (datasketch passes tokens through unchanged)."""
    return md5_32(s.encode("utf-8"))


@pytest.mark.parametrize(
    "scheme,func,tokens",
    [
        (None, md5_32, "bytes"),
        ("affine32", str_hash32, "str"),
        ("legacy", md5_64, "bytes"),
        ("legacy", md5_32, "bytes"),
    ],
)
@pytest.mark.parametrize("seed", [1, 7])
def test_hashfunc_gives_datasketch_hashvalues(scheme, func, tokens, seed):
    rng = random.Random(seed)
    for n in (1, 5, 300):
        words = [f"w{rng.randrange(10**6)}" for _ in range(n)]
        toks = [w.encode() for w in words] if tokens == "bytes" else words
        kw = dict(num_perm=64, seed=seed, hashfunc=func)
        if scheme:
            kw["scheme"] = scheme
        ds, ours, batch = datasketch.MinHash(**kw), compat.MinHash(**kw), compat.MinHash(**kw)
        for t in toks:
            ds.update(t)
            ours.update(t)
        batch.update_batch(toks)
        assert np.array_equal(ours.hashvalues, ds.hashvalues)
        assert np.array_equal(batch.hashvalues, ds.hashvalues)
        assert ours.hashvalues.dtype == ds.hashvalues.dtype
        [bulk] = compat.MinHash.bulk([toks], **kw)
        assert np.array_equal(bulk.hashvalues, ds.hashvalues)
        assert np.array_equal(ours.copy().hashvalues, ds.hashvalues)


def test_hashfunc_sketches_go_through_the_lsh():
    kw = dict(num_perm=128, hashfunc=md5_32)
    rng = random.Random(3)
    sets = [[f"t{rng.randrange(400)}".encode() for _ in range(40)] for _ in range(200)]
    ds_lsh, our_lsh = datasketch.MinHashLSH(threshold=0.5, num_perm=128), compat.MinHashLSH(threshold=0.5, num_perm=128)
    ds_m, our_m = [], []
    for i, s in enumerate(sets):
        a, b = datasketch.MinHash(**kw), compat.MinHash(**kw)
        a.update_batch(s)
        b.update_batch(s)
        ds_lsh.insert(i, a)
        our_lsh.insert(i, b)
        ds_m.append(a)
        our_m.append(b)
    for q in range(0, 200, 13):
        assert sorted(our_lsh.query(our_m[q])) == sorted(ds_lsh.query(ds_m[q]))
    our_lsh.close()


def test_hashfunc_bad_values_are_errors():
    m = compat.MinHash(hashfunc=lambda b: 1 << 32)
    with pytest.raises(ValueError, match="out of range for scheme 'affine32'"):
        m.update(b"x")
    with pytest.raises(ValueError, match="out of range"):
        compat.MinHash(hashfunc=lambda b: -1, scheme="legacy").update(b"x")
    with pytest.raises(TypeError, match="not an int"):
        compat.MinHash(hashfunc=lambda b: "nope").update(b"x")
    with pytest.raises(TypeError, match="callable"):
        compat.MinHash(hashfunc=5)
    # The sketch is unchanged by a refused token.
    assert m.is_empty()


@pytest.mark.parametrize(
    "make,alternative",
    [
        (lambda: compat.MinHashLSHForest(num_perm=128), "top_k"),
        (lambda: compat.MinHashLSHEnsemble(threshold=0.8, num_perm=128), "containment"),
        (lambda: compat.WeightedMinHashGenerator(100), "SimHash"),
        (lambda: compat.WeightedMinHash(1, np.zeros((4, 2))), "SimHash"),
        (lambda: compat.bBitMinHash(compat.MinHash()), "BBitMinHash"),
        (lambda: compat.MinHash(scheme="affine64"), "affine32"),
        (lambda: compat.MinHash(permutations=(np.ones(4), np.ones(4))), "seed"),
        (lambda: compat.MinHash(hashobj=object), "hashfunc"),
    ],
)
def test_what_is_not_offered_says_so(make, alternative):
    with pytest.raises(NotImplementedError, match=alternative):
        make()


def test_unknown_scheme_is_a_value_error():
    with pytest.raises(ValueError, match="unknown scheme"):
        compat.MinHash(scheme="nope")
