"""The pipeline's band keys carry 64 significant bits: documents share a (band, key) bucket
exactly when they share that band's values, where the index's 32-bit keys also collide by
chance (2^-32 per pair of different bands)."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from sketchdb import arrow  # noqa: E402
from sketchdb.spark import Kernels, SketchSpec  # noqa: E402
from sketchdb.spark._kernels import BUCKET_KEY_BITS  # noqa: E402
from conftest import make_corpus  # noqa: E402


def band_values(sigs, spec, width):
    """Each document's band values as bytes (MinHash at 32 bits: 4 bytes per slot)."""
    raw = [bytes(s) for s in sigs.cast(pa.binary(width)).to_pylist()]
    r = spec.rows
    return [[s[4 * r * b : 4 * r * (b + 1)] for b in range(spec.bands)] for s in raw]


def test_pipeline_keys_are_64_bit_and_equal_band_equality():
    spec = SketchSpec(threshold=0.5).with_banding()
    k = Kernels(spec)
    texts = pa.array(make_corpus(3000, seed=5, near=0.6))
    sigs = k.sketch(texts).column(0)
    keys = k.band_keys(sigs)
    assert BUCKET_KEY_BITS == 64 and keys.schema.field("key").type == pa.int64()
    n, b = len(texts), spec.bands
    key = keys.column("key").to_numpy().view(np.uint64).reshape(n, b)
    # Every bit is used: the low 32 bits vary (the index's keys have them zero).
    assert len(set((key & np.uint64(0xFFFFFFFF)).ravel().tolist())) > n * b // 2
    index_keys = arrow.band_keys(sigs.cast(pa.binary(k.width)), bands=b, rows=spec.rows, **spec.kernel_kwargs())
    assert not (index_keys.column("key").to_numpy() & np.uint64(0xFFFFFFFF)).any()
    # Same key <=> same band values, band by band (near-duplicates make many equal bands).
    values = band_values(sigs, spec, k.width)
    shared = 0
    for band in range(b):
        by_key, by_value = {}, {}
        for i in range(n):
            by_key.setdefault(int(key[i, band]), set()).add(i)
            by_value.setdefault(values[i][band], set()).add(i)
        assert sorted(map(sorted, by_key.values())) == sorted(map(sorted, by_value.values()))
        shared += sum(len(g) > 1 for g in by_key.values())
    assert shared > 100


def test_key_bits_is_checked():
    spec = SketchSpec(threshold=0.5).with_banding()
    k = Kernels(spec)
    sigs = k.sketch(pa.array(["one two three four five six seven"])).column(0).cast(pa.binary(k.width))
    with pytest.raises(ValueError, match="key_bits must be 32"):
        arrow.band_keys(sigs, bands=spec.bands, rows=spec.rows, key_bits=48, **spec.kernel_kwargs())
