"""`insert_many(hashvalues=)` reads a 2-D NumPy array in place: the same records as the same
rows given one by one, for every dtype and memory layout, and a bad width rejects each row."""

import numpy as np
import pytest

import sketchdb


@pytest.fixture
def values():
    rng = np.random.default_rng(3)
    return rng.integers(0, 2**32, size=(40, 128), dtype=np.uint64)


def stored(db, name, keys):
    c = db[name]
    return np.stack([c.get(k).hashvalues for k in keys])


def test_two_d_arrays_equal_row_lists(tmp_path, values):
    keys = [f"k{i}" for i in range(len(values))]
    forms = {
        "rows": [row.copy() for row in values],
        "u64": values,
        "u32": values.astype(np.uint32),
        "fortran": np.asfortranarray(values),
    }
    # A column-sliced view (every other column of a wider array) is not contiguous.
    wide = np.empty((len(values), 256), dtype=np.uint64)
    wide[:, ::2] = values
    forms["strided"] = wide[:, ::2]
    with sketchdb.open(tmp_path / "h.sketchdb") as db:
        for name, hv in forms.items():
            c = db.create_collection(name, recipe="datasketch-affine32", lsh=0.5)
            r = c.insert_many(keys, hashvalues=hv)
            assert r.written == len(keys) and not r.rejects, name
            assert np.array_equal(stored(db, name, keys), values), name
            hits = c.query(key="k5", threshold=0.9)
            assert [h.key for h in hits][:1] == ["k5"]


def test_bad_width_rejects_each_row(tmp_path, values):
    with sketchdb.open(tmp_path / "h.sketchdb") as db:
        c = db.create_collection("c", recipe="datasketch-affine32")
        r = c.insert_many(["a", "b"], hashvalues=values[:2, :64])
        assert r.written == 0 and [x.index for x in r.rejects] == [0, 1]
        assert "64 values" in str(r.rejects[0].error)
        with pytest.raises(ValueError, match="record 0"):
            c.insert_many(["a", "b"], hashvalues=values[:2, :64], strict=True)
        assert len(c) == 0
        with pytest.raises(ValueError, match="2 keys but 3 records"):
            c.insert_many(["a", "b"], hashvalues=values[:3])
