"""sketchdb.arrow kernels: signatures byte-identical to the stored ones, band keys equal to the
index's, estimates equal to the collection's, nulls and bad input handled."""

import numpy as np
import pyarrow as pa
import pytest

import sketchdb
import sketchdb.arrow as sa

KINDS = [
    dict(kind="minhash", k=64),
    dict(kind="minhash", k=32, bits=64),
    dict(kind="bbit", k=128, bits=4),
    dict(kind="oph", k=128, bits=16),
    dict(kind="simhash", bits=128),
]


def _stored_bytes(coll, key):
    return coll.get(key).to_bytes()


@pytest.mark.parametrize("params", KINDS, ids=lambda p: f"{p['kind']}{p.get('bits', '')}")
def test_sketch_equals_what_insert_many_stores(tmp_path, corpus, params):
    texts = corpus[:200]
    arr = pa.chunked_array([pa.array(texts[:70]), pa.array(texts[70:])])
    sigs = sa.sketch(arr, **params)
    for other in (pa.array(texts, pa.large_string()), pa.array(texts, pa.string_view())):
        assert sa.sketch(other, **params).equals(sigs)
    assert isinstance(sigs, pa.FixedSizeBinaryArray)
    assert sigs.type.byte_width == sa.signature_width(**params)
    assert len(sigs) == len(texts)
    with sketchdb.open(tmp_path / "a.sketchdb") as db:
        c = db.create_collection("c", **params)
        assert c.stats()["record_width"] == sigs.type.byte_width
        keys = [f"d{i}" for i in range(len(texts))]
        assert c.insert_many(keys, texts).written == len(texts)
        for i in range(0, len(texts), 7):
            assert sigs[i].as_py() == _stored_bytes(c, keys[i]), i
        # The same signatures imported as they are give the same stored records.
        c2 = db.create_collection("c2", **params)
        assert c2.insert_many(pa.array(keys), signatures=sigs).written == len(texts)
        for i in range(0, len(texts), 11):
            assert c2.get(keys[i]) == c.get(keys[i])
        # spec() reproduces the collection.
        again = sa.sketch(pa.array(texts), **{k: v for k, v in c.spec().items()})
        assert again.equals(sigs.cast(again.type)) or again.to_pylist() == sigs.to_pylist()


def test_sketch_tokens_equals_sketch_objects(corpus):
    lists = [t.split() for t in corpus[:100]]
    sigs = sa.sketch_tokens(pa.array(lists), k=64)
    hashed = [[sketchdb.token_hash(w) for w in ws] for ws in lists]
    sigs_u64 = sa.sketch_tokens(pa.array(hashed, type=pa.list_(pa.uint64())), k=64)
    sigs_i64 = sa.sketch_tokens(
        pa.array([[int(np.uint64(h).astype(np.int64)) for h in hs] for hs in hashed], type=pa.list_(pa.int64())),
        k=64,
    )
    assert sigs.to_pylist() == sigs_u64.to_pylist() == sigs_i64.to_pylist()
    for i in range(0, 100, 9):
        m = sketchdb.MinHash(num_perm=64)
        m.update_batch(lists[i])
        assert m.to_bytes() == sigs[i].as_py()


def test_band_keys_equal_the_index(tmp_path, corpus):
    texts = corpus[:150]
    with sketchdb.open(tmp_path / "b.sketchdb") as db:
        for params, lsh in [(dict(kind="minhash", k=128), 0.8), (dict(kind="bbit", k=128, bits=8), 0.5)]:
            c = db.create_collection(f"c{params['kind']}", **params, lsh=lsh)
            keys = [f"d{i}" for i in range(len(texts))]
            c.insert_many(keys, texts)
            sigs = sa.sketch(pa.array(texts), **params)
            batch = sa.band_keys(sigs, threshold=lsh, **params)
            assert batch.schema.names == ["row", "band", "key"]
            assert batch.schema.field("row").type == pa.int32() and batch.schema.field("key").type == pa.uint64()
            index = c.stats()["index"]
            assert len(batch) == len(texts) * index["bands"]
            rows = batch.column("row").to_numpy()
            bands = batch.column("band").to_numpy()
            got = batch.column("key").to_numpy()
            for i in range(0, len(texts), 13):
                want = c.band_keys(key=keys[i])
                mine = got[rows == i]
                assert list(bands[rows == i]) == list(range(index["bands"]))
                assert [int(x) for x in mine] == want
            # Explicit banding equal to the index's gives the same keys; signed is the same bits.
            explicit = sa.band_keys(sigs, bands=index["bands"], rows=index["rows"], **params, signed=True)
            assert explicit.column("key").to_numpy().view(np.uint64).tolist() == got.tolist()


def test_estimate_equals_collection(tmp_path, corpus):
    texts = corpus[:60]
    other = corpus[1:61]
    a = sa.sketch(pa.array(texts), kind="oph", k=128, bits=8)
    b = sa.sketch(pa.array(other), kind="oph", k=128, bits=8)
    est = sa.estimate(a, b, kind="oph", k=128, bits=8, level=0.9)
    assert est.schema.names == ["estimate", "lower", "upper"]
    with sketchdb.open(tmp_path / "e.sketchdb") as db:
        c = db.create_collection("c", kind="oph", k=128, bits=8)
        c.insert_many([f"a{i}" for i in range(60)], texts)
        c.insert_many([f"b{i}" for i in range(60)], other)
        for i in range(0, 60, 5):
            e = c.estimate(f"a{i}", f"b{i}", level=0.9)
            assert est.column("estimate")[i].as_py() == e.value
            assert est.column("lower")[i].as_py() == e.lower
            assert est.column("upper")[i].as_py() == e.upper


def test_nulls_and_bad_rows():
    arr = pa.array(["one two three four five six", None, "!!!", "seven eight nine ten eleven"])
    with pytest.raises(ValueError, match="row 2"):
        sa.sketch(arr)
    sigs = sa.sketch(arr, on_error="null")
    assert [s is None for s in sigs.to_pylist()] == [False, True, True, False]
    keys = sa.band_keys(sigs, threshold=0.8)
    assert set(keys.column("row").to_pylist()) == {0, 3}
    est = sa.estimate(sigs, sigs)
    assert est.column("estimate").to_pylist()[0] == 1.0 and est.column("estimate").to_pylist()[1] is None
    with pytest.raises(TypeError, match="string array"):
        sa.sketch(pa.array([1, 2, 3]))
    with pytest.raises(TypeError, match="Arrow array"):
        sa.sketch(["a list"])
    with pytest.raises(ValueError, match="fixed_size_binary"):
        sa.band_keys(sigs, threshold=0.8, k=64)
    with pytest.raises(ValueError, match="threshold"):
        sa.band_keys(sigs)
    with pytest.raises(ValueError):
        sa.band_keys(sa.sketch(pa.array(["a b c d e f"]), kind="simhash"), kind="simhash", threshold=0.8)
    with pytest.raises(ValueError, match="unknown sketch kind"):
        sa.sketch(arr, kind="nope")
    with pytest.raises(ValueError, match="on_error"):
        sa.sketch(arr, on_error="skip")
    with pytest.raises(ValueError, match="null token"):
        sa.sketch_tokens(pa.array([["a", None]]))
    # Corrupt signature bytes are an error naming the row, not a wrong answer.
    w = sa.signature_width(kind="oph", k=64, bits=8)
    bad = pa.array([b"\x07" * w], type=pa.binary(w))
    with pytest.raises(ValueError, match="row 0"):
        sa.estimate(bad, bad, kind="oph", k=64, bits=8)


def test_dictionary_encoded_arrays_read_as_their_values(tmp_path, corpus):
    # pandas categoricals and dictionary-encoded Parquet columns arrive as DictionaryArrays,
    # with repeated values and nulls; they read exactly as the plain arrays they encode.
    texts = corpus[:60] + corpus[:20] + [None]
    keys = [f"d{i}" for i in range(len(texts))]
    plain, encoded = pa.array(texts), pa.array(texts).dictionary_encode()
    assert pa.types.is_dictionary(encoded.type)
    want = sa.sketch(plain, on_error="null")
    assert sa.sketch(encoded, on_error="null").equals(want)
    chunked = pa.chunked_array([encoded.slice(0, 30), encoded.slice(30)])
    assert sa.sketch(chunked, on_error="null").equals(want)
    with sketchdb.open(tmp_path / "d.sketchdb") as db:
        a, b = db.create_collection("a"), db.create_collection("b")
        ra = a.insert_many(pa.array(keys), plain)
        rb = b.insert_many(pa.array(keys).dictionary_encode(), chunked)
        assert ra.written == rb.written == len(texts) - 1
        assert [(r.index, r.key) for r in ra.rejects] == [(r.index, r.key) for r in rb.rejects] == [(80, "d80")]
        assert [b.get(k) for k in keys[:-1]] == [a.get(k) for k in keys[:-1]]
