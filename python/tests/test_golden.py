"""The golden fixture shared with the Rust test tests/api_signatures_golden.rs: Python's
sketches, Arrow kernels and collections give the Rust API's signature bytes, estimates and
band keys; and the CLI exports the same signatures."""

import json

import pyarrow as pa
import pytest

import sketchdb
import sketchdb.arrow as sa

from conftest import REPO, read_export

GOLDEN = json.loads((REPO / "tests" / "fixtures" / "golden_signatures.json").read_text())
TEXTS = GOLDEN["texts"]


def _params(case):
    return dict(kind=case["kind"], k=case["k"], bits=case["bits"], seed=case["seed"], family=case["family"])


def _class(case):
    return {"minhash": sketchdb.MinHash, "bbit": sketchdb.BBitMinHash, "oph": sketchdb.OPH, "simhash": sketchdb.SimHash}[
        case["kind"]
    ]


def _kw(case):
    """The sketch class's own parameter names for the case."""
    return {
        "minhash": dict(num_perm=case["k"], bits=case["bits"], family=case["family"]),
        "bbit": dict(num_perm=case["k"], b=case["bits"], family=case["family"]),
        "oph": dict(bins=case["k"], bits=case["bits"]),
        "simhash": dict(bits=case["bits"]),
    }[case["kind"]]


def _case_id(case):
    return f"{case['kind']}{case['bits']}-{case['family']}"


def _tok(case):
    return dict(shingle=case["shingle"], token_seed=case["token_seed"])


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=_case_id)
def test_kernels_and_sketch_objects_match_the_rust_api(case):
    sigs = sa.sketch(pa.array(TEXTS), **_params(case), **_tok(case))
    assert [s.hex() for s in sigs.to_pylist()] == case["signatures"]
    objs = []
    for text, want in zip(TEXTS, case["signatures"]):
        m = _class(case)(seed=case["seed"], **_kw(case), **_tok(case))
        m.update_text(text)
        assert m.to_bytes().hex() == want
        objs.append(m)
    n = len(TEXTS)
    a_idx = [i for i, j, *_ in case["estimates"]]
    b_idx = [j for i, j, *_ in case["estimates"]]
    est = sa.estimate(sigs.take(pa.array(a_idx)), sigs.take(pa.array(b_idx)), **_params(case), level=GOLDEN["level"])
    for row, (i, j, value, lower, upper) in enumerate(case["estimates"]):
        assert (est.column("estimate")[row].as_py(), est.column("lower")[row].as_py(), est.column("upper")[row].as_py()) == (
            value, lower, upper)
        e = objs[i].estimate(objs[j], level=GOLDEN["level"])
        assert (e.value, e.lower, e.upper) == (value, lower, upper)
    if case["band_keys"]:
        bk = case["band_keys"]
        batch = sa.band_keys(sigs, threshold=bk["threshold"], **_params(case))
        rows = batch.column("row").to_pylist()
        keys = batch.column("key").to_pylist()
        assert [[k for r, k in zip(rows, keys) if r == i] for i in range(n)] == bk["keys"]


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=_case_id)
def test_collection_and_cli_match_the_rust_api(tmp_path, cli, case):
    path = tmp_path / "g.sketchdb"
    with sketchdb.open(path) as db:
        lsh = case["band_keys"]["threshold"] if case["band_keys"] else None
        c = db.create_collection("g", **_params(case), **_tok(case), lsh=lsh)
        c.insert_many([f"t{i}" for i in range(len(TEXTS))], TEXTS, strict=True)
        for i, want in enumerate(case["signatures"]):
            assert c.get(f"t{i}").to_bytes().hex() == want
        for i, j, value, lower, upper in case["estimates"]:
            e = c.estimate(f"t{i}", f"t{j}", level=GOLDEN["level"])
            assert (e.value, e.lower, e.upper) == (value, lower, upper)
        if lsh is not None:
            for i in range(len(TEXTS)):
                assert c.band_keys(key=f"t{i}") == case["band_keys"]["keys"][i]
    # The CLI reads the file and exports the golden signatures (in its JSON form of them).
    _, exported = read_export(cli("--db", path, "export", "g").stdout)
    for i, want in enumerate(case["signatures"]):
        s = _class(case).from_bytes(bytes.fromhex(want), seed=case["seed"], **_kw(case), **_tok(case))
        e = exported[f"t{i}"]
        if case["kind"] == "minhash":
            assert e["values"] == s.hashvalues.tolist()
        elif case["kind"] == "oph":
            assert e["bins"] == s.hashvalues.tolist()
        elif case["kind"] == "simhash":
            assert int(e["simhash"], 16) == s.value
        if case["kind"] != "simhash":
            assert e["cardinality"] == s.cardinality


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=_case_id)
def test_sketch_many_matches_the_rust_api_in_every_input_shape(case):
    """``sketchdb.sketch_many`` from texts and from the texts' token hashes in every shape it
    reads gives the golden signature bytes."""
    import numpy as np

    want = case["signatures"]
    got = sketchdb.sketch_many(TEXTS, **_params(case), **_tok(case))
    assert got.dtype == np.uint8 and got.shape == (len(TEXTS), len(bytes.fromhex(want[0])))
    assert [bytes(r).hex() for r in got] == want
    hashes = [sketchdb.tokenize(t, shingle=case["shingle"], token_seed=case["token_seed"]) for t in TEXTS]
    flat = np.array([h for hs in hashes for h in hs], dtype=np.uint64)
    offsets = np.cumsum([0] + [len(hs) for hs in hashes])
    forms = {
        "lists": hashes,
        "tuples": tuple(tuple(h) for h in hashes),
        "generator": (h for h in hashes),
        "numpy rows": [np.asarray(h, dtype=np.uint64) for h in hashes],
        "flat+offsets": flat,
    }
    for name, form in forms.items():
        kw = dict(offsets=offsets) if name == "flat+offsets" else {}
        got = sketchdb.sketch_many(form, **kw, **_params(case))
        assert [bytes(r).hex() for r in got] == want, name
    objs = _class(case).bulk(hashes, seed=case["seed"], **_kw(case))
    assert [o.to_bytes().hex() for o in objs] == want


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=_case_id)
def test_insert_many_from_tokens_and_arrow_texts_stores_the_rust_api_signatures(tmp_path, case):
    """``insert_many`` from the texts' token hashes (Python lists, NumPy rows, an Arrow
    ``list<uint64>`` column) and from an Arrow text column stores the golden signature bytes."""
    import numpy as np

    want = case["signatures"]
    keys = [f"t{i}" for i in range(len(TEXTS))]
    hashes = [sketchdb.tokenize(t, shingle=case["shingle"], token_seed=case["token_seed"]) for t in TEXTS]
    forms = {
        "lists": dict(tokens=hashes),
        "numpy rows": dict(tokens=[np.asarray(h, dtype=np.uint64) for h in hashes]),
        "arrow tokens": dict(tokens=pa.array(hashes, type=pa.list_(pa.uint64()))),
        "arrow texts": dict(texts=pa.array(TEXTS)),
    }
    with sketchdb.open(tmp_path / "g.sketchdb") as db:
        for i, (name, kw) in enumerate(forms.items()):
            c = db.create_collection(f"g{i}", **_params(case), **_tok(case))
            assert c.insert_many(keys, strict=True, **kw).written == len(TEXTS)
            assert [c.get(k).to_bytes().hex() for k in keys] == want, name
