"""sketchdb's own hash families from Python. The 32-bit lane family (``mix-multiply-shift-32``)
is the default of MinHash with 32-bit values and of b-bit MinHash; the 64-bit one
(``mix-multiply-shift``, the default before it) stays reachable by name. Sketches, pickles,
collections, ``Collection.spec()`` with the Arrow kernels, and the CLI keep whichever family
a sketch or collection was made with."""

import pickle

import pyarrow as pa
import pytest

import sketchdb
import sketchdb.arrow as sa
from conftest import make_corpus, read_export

LANES32 = "mix-multiply-shift-32"
MIX64 = "mix-multiply-shift"


def test_each_kind_has_its_default_family():
    assert sketchdb.MinHash().family == LANES32
    assert sketchdb.MinHash(bits=64).family == MIX64
    assert sketchdb.BBitMinHash().family == LANES32
    assert sketchdb.OPH().family == MIX64
    assert sketchdb.SimHash().family == MIX64
    assert sketchdb.MinHash(family=MIX64).family == MIX64
    assert sketchdb.BBitMinHash(b=1, family=MIX64).family == MIX64


def test_the_families_differ_and_do_not_compare():
    words = [f"w{i}" for i in range(300)]
    a = sketchdb.MinHash(num_perm=64)
    b = sketchdb.MinHash(num_perm=64, family=MIX64)
    a.update_batch(words)
    b.update_batch(words)
    assert a.to_bytes() != b.to_bytes()
    with pytest.raises(sketchdb.IncompatibleError, match="family"):
        a.jaccard(b)
    # Within a family the estimate is exact for equal sets.
    c = sketchdb.MinHash(num_perm=64)
    c.update_batch(reversed(words))
    assert a.jaccard(c) == 1.0


@pytest.mark.parametrize("family", [LANES32, MIX64])
@pytest.mark.parametrize("cls", [sketchdb.MinHash, sketchdb.BBitMinHash])
def test_pickle_and_bytes_keep_the_family(cls, family):
    m = cls(num_perm=32, family=family)
    m.update_batch(["a", "b", "c", "d"])
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.family == family
    again = cls.from_bytes(m.to_bytes(), num_perm=32, family=family)
    assert again.hashvalues.tolist() == m.hashvalues.tolist()


def test_collections_record_their_family_and_spec_reproduces_it(tmp_path, cli):
    texts = make_corpus(60, seed=3)
    keys = [f"d{i}" for i in range(len(texts))]
    path = tmp_path / "f.sketchdb"
    made = {"old": dict(family=MIX64), "new": {}, "bbit-old": dict(kind="bbit", family=MIX64)}
    with sketchdb.open(path) as db:
        for name, kw in made.items():
            c = db.create_collection(name, k=64, lsh=0.5, **kw)
            c.insert_many(keys, texts, strict=True)
    with sketchdb.open(path) as db:
        assert db["old"].stats()["family"] == MIX64
        assert db["new"].stats()["family"] == LANES32
        assert db["bbit-old"].stats()["family"] == MIX64
        for name in made:
            c = db[name]
            spec = c.spec()
            assert spec["family"] == c.stats()["family"]
            stored = [c.get(k).to_bytes() for k in keys]
            assert sa.sketch(pa.array(texts), **spec).to_pylist() == stored, name
            # The index files each record under the keys the kernels compute for its banding.
            sigs = sa.sketch(pa.array(texts[:5]), **spec)
            lsh = c.stats()["index"]
            params = {k: v for k, v in spec.items() if k in ("kind", "k", "bits", "seed", "family")}
            batch = sa.band_keys(sigs, bands=lsh["bands"], rows=lsh["rows"], **params)
            got = batch.column("key").to_pylist()
            want = [key for i in range(5) for key in c.band_keys(key=keys[i])]
            assert got == want, name
        # A near-duplicate found through either family's index.
        for name in made:
            hits = db[name].query(key=keys[1], threshold=0.5)
            assert keys[1] in [h.key for h in hits]
    # The CLI reads both and exports the family in the header.
    header, _ = read_export(cli("--db", path, "export", "old").stdout)
    assert header["params"]["family"] == "MixMultiplyShift"
    header, _ = read_export(cli("--db", path, "export", "new").stdout)
    assert header["params"]["family"] == "MixMultiplyShift32"


def test_bad_family_arguments_raise_value_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown hash family"):
        sketchdb.MinHash(family="nope")
    with pytest.raises(ValueError, match="32-bit"):
        sketchdb.MinHash(bits=64, family=LANES32)
    with pytest.raises(ValueError, match="family"):
        sketchdb.MinHash(family="datasketch-legacy")
    with sketchdb.open(tmp_path / "b.sketchdb") as db:
        with pytest.raises(ValueError, match="32-bit"):
            db.create_collection("o", kind="oph", family=LANES32)
        assert "o" not in db
    with pytest.raises(ValueError, match="unknown hash family"):
        sa.sketch(pa.array(["a b c d e f"]), family="nope")


def test_charikar_simhash_pickles_and_its_spec_reproduces_it(tmp_path):
    texts = make_corpus(20, seed=5)
    keys = [f"d{i}" for i in range(len(texts))]
    with sketchdb.open(tmp_path / "c.sketchdb") as db:
        c = db.create_collection("fp", kind="simhash", family="charikar")
        c.insert_many(keys, texts, strict=True)
        spec = c.spec()
        assert spec["family"] == "charikar" and c.stats()["family"] == "charikar"
        stored = [c.get(k) for k in keys]
        assert sa.sketch(pa.array(texts), **spec).to_pylist() == [s.to_bytes() for s in stored]
        # A stored Charikar fingerprint survives pickling with its family (it has no seed).
        for s in stored:
            back = pickle.loads(pickle.dumps(s))
            assert back == s and back.family == "charikar" and back.to_bytes() == s.to_bytes()
        # Another family of SimHash gives other fingerprints of the same texts.
        mixed = sa.sketch(pa.array(texts), **{**spec, "family": MIX64}).to_pylist()
        assert mixed != [s.to_bytes() for s in stored]


def test_simhash_takes_the_charikar_family_by_name():
    assert sketchdb.SimHash(family="charikar").family == "charikar"
    assert sketchdb.SimHash(family="charikar").seed == 0
    assert sketchdb.SimHash().family == MIX64
    with pytest.raises(ValueError, match="charikar"):
        sketchdb.SimHash(bits=128, family="charikar")
