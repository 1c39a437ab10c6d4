"""The single-probe query methods (`query`, `top_k`, `hamming`) read their keywords from the
call's dict themselves: every call shape answers as before, and bad calls raise TypeError."""

import pytest

import sketchdb

from conftest import make_corpus


@pytest.fixture
def coll(tmp_path):
    texts = make_corpus(120)
    db = sketchdb.open(str(tmp_path / "q.sketchdb"))
    c = db.create_collection("docs", k=64, lsh=0.5)
    c.insert_many([f"d{i}" for i in range(len(texts))], texts)
    s = db.create_collection("fp", kind="simhash", k=64)
    s.insert_many([f"d{i}" for i in range(len(texts))], texts)
    yield c, s, texts
    db.close()


def fields(hits):
    return [(h.key, h.row_id, h.estimate, h.lower, h.upper, h.level, h.distance, h.exact) for h in hits]


def test_call_shapes_answer_alike(coll):
    c, _, texts = coll
    for i in range(0, 120, 7):
        key = f"d{i}"
        want = fields(c.query_many(keys=[key], threshold=0.3)[0])
        assert key in [h[0] for h in want]
        assert fields(c.query(key=key, threshold=0.3)) == want
        # Keywords in another order, None for the probes not given, a name built at run time
        # (not the interned string), bytes keys: the same answer.
        assert fields(c.query(threshold=0.3, text=None, key=key, sketch=None)) == want
        assert fields(c.query(**{"ke" + "y": key, "thres" + "hold": 0.3})) == want
        assert fields(c.query(key=key.encode(), threshold=0.3)) == want
        assert fields(c.query(key=key, threshold=0.3, level=0.95, exact=False, plan=None)) == want
        # The stored sketch as probe and the stored text give the same estimates.
        assert fields(c.query(sketch=c[key], threshold=0.3)) == want
        assert [h[0] for h in fields(c.query(text=texts[i], threshold=0.3))] == [h[0] for h in want]
        assert fields(c.top_k(key=key, k=3)) == fields(c.top_k_many(keys=[key], k=3)[0])
    assert fields(c.query(key="d3", threshold=None)) == fields(c.query(key="d3"))


def test_level_and_plan_reach_the_query(coll):
    c, _, _ = coll
    wide = c.query(key="d1", threshold=0.3, level=0.99)
    narrow = c.query(key="d1", threshold=0.3, level=0.5)
    assert wide[0].level == 0.99 and narrow[0].level == 0.5
    assert wide[0].upper - wide[0].lower >= narrow[0].upper - narrow[0].lower
    scan = c.query(key="d1", threshold=0.3, plan="full-scan")
    assert [h.key for h in scan] == [h.key for h in c.query(key="d1", threshold=0.3, plan="lsh-probe")]
    with pytest.raises(ValueError, match="unknown plan"):
        c.query(key="d1", plan="nope")


def test_hamming_radius(coll):
    _, s, _ = coll
    near = s.hamming(key="d5", radius=0)
    wide = s.hamming(key="d5", radius=20)
    assert near and all(h.distance == 0 for h in near)
    assert all(h.distance <= 20 for h in wide) and len(wide) >= len(near)
    assert fields(s.hamming(key="d5")) == fields(s.hamming(key="d5", radius=3))


def test_bad_calls_raise_type_errors(coll):
    c, s, _ = coll
    with pytest.raises(TypeError, match=r"query\(\) takes 0 positional arguments but 1 was given"):
        c.query("d1")
    with pytest.raises(TypeError, match=r"top_k\(\) takes 0 positional arguments but 2 were given"):
        c.top_k("d1", 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'keys'"):
        c.query(keys="d1")
    with pytest.raises(TypeError, match="unexpected keyword argument 'threshold'"):
        s.hamming(key="d1", threshold=0.5)
    with pytest.raises(TypeError, match="argument 'level'"):
        c.query(key="d1", level="high")
    with pytest.raises(TypeError, match="argument 'k'"):
        c.top_k(key="d1", k="3")
    with pytest.raises(TypeError, match="argument 'exact'"):
        c.query(key="d1", exact=1)
    with pytest.raises(TypeError, match="argument 'text'"):
        c.query(text=5)
    with pytest.raises(TypeError, match="a key is str or bytes"):
        c.query(key=5)
    with pytest.raises(ValueError, match="exactly one"):
        c.query()
    with pytest.raises(ValueError, match="exactly one"):
        c.query(key="d1", text="alpha beta")
    with pytest.raises(OverflowError):
        c.top_k(key="d1", k=-1)


def test_hit_attributes_and_repr(coll):
    c, _, _ = coll
    h = c.query(key="d2", threshold=0.3)[0]
    assert isinstance(h, sketchdb.Hit) and h.key == "d2" and isinstance(h.key, str)
    assert h.lower <= h.estimate <= h.upper and h.distance is None and h.exact is None
    assert repr(h).startswith("Hit(key='d2', estimate=1.000000")
    with pytest.raises(AttributeError):
        h.key = "other"
    # The signatures shown to users are the documented ones.
    assert sketchdb.Collection.query.__text_signature__ == (
        "($self, *, text=None, tokens=None, key=None, sketch=None, threshold=None, level=0.95, exact=False, plan=None)"
    )
