"""The engine boundary: Arrow arrays in, Arrow arrays out, no Spark in sight.

Three kernels, each a pure function of its inputs and a :class:`SketchSpec`:

* ``sketch(texts) -> RecordBatch(signature: binary, cardinality: uint64)``: one row per text;
  a null text, or one with no tokens, gives null in both columns (the caller reports it);
* ``band_keys(signatures) -> RecordBatch(row: int32, band: int32, key: int64)``: ``bands``
  rows per signature (the key's 64 bits as a signed integer, since Spark has no u64);
* ``estimate(a, b, card_a, card_b) -> RecordBatch(estimate, lower, upper: float64)``: the
  estimator of ``sketchdb`` on two signatures, pairwise.

Spark calls them inside ``mapInArrow``; a Ray Data adapter would call the same three inside
``map_batches(batch_format="pyarrow")``. The implementation here goes through the package's
``bulk`` constructors (all cores, GIL released) and its pickling state, so a signature is
exactly the stored one: the MinHash values as little-endian u64 words. Band keys are a
splitmix64 chain over each band's values: the same buckets as the index's XXH3 keys (two
signatures share a key exactly when the band's values are equal, up to 64-bit collisions,
which only add candidates that verification then drops).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

import numpy as np
import pyarrow as pa

import sketchdb

# Kinds and the constructor of their sketch class.
_CLASSES = {"minhash": "MinHash", "bbit": "BBitMinHash", "oph": "OPH"}


@dataclasses.dataclass(frozen=True)
class SketchSpec:
    """How documents are sketched and banded: exactly the settings a collection would use.

    ``bands`` x ``rows`` default to the banding a sketchdb LSH index gets for ``threshold``
    (see :func:`default_banding`).
    """

    kind: str = "minhash"
    k: int = 128
    bits: Optional[int] = None
    seed: int = sketchdb.DEFAULT_SEED
    shingle: Optional[int] = None
    ngram: Optional[int] = None
    token_seed: int = 0
    recipe: Optional[str] = None
    threshold: float = 0.8
    bands: int = 0
    rows: int = 0
    level: float = 0.95

    def with_banding(self) -> "SketchSpec":
        """This spec with ``bands`` and ``rows`` filled in from the threshold when unset."""
        if self.bands and self.rows:
            return self
        bands, rows = default_banding(self)
        return dataclasses.replace(self, bands=bands, rows=rows)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @staticmethod
    def from_json(s: str) -> "SketchSpec":
        return SketchSpec(**json.loads(s))

    def sketch_kwargs(self) -> dict:
        """Keyword arguments of the sketch class's constructor (and of ``bulk``)."""
        if self.kind not in _CLASSES:
            raise ValueError(f"sketch kind {self.kind!r} cannot be banded for dedup (use one of {sorted(_CLASSES)})")
        kw: dict = {"seed": self.seed, "token_seed": self.token_seed}
        if self.kind == "oph":
            kw["bins"] = self.k
        else:
            kw["num_perm"] = self.k
        if self.bits is not None:
            kw["b" if self.kind == "bbit" else "bits"] = self.bits
        if self.shingle is not None:
            kw["shingle"] = self.shingle
        if self.ngram is not None:
            kw["ngram"] = self.ngram
        return kw

    def collection_kwargs(self) -> dict:
        """Keyword arguments of ``Database.create_collection`` for the same sketches and banding."""
        kw = {
            "kind": self.kind,
            "k": self.k,
            "bits": self.bits,
            "seed": self.seed,
            "shingle": self.shingle,
            "ngram": self.ngram,
            "token_seed": self.token_seed,
        }
        if self.bands and self.rows:
            kw.update(bands=self.bands, rows=self.rows)
        else:
            kw["lsh"] = self.threshold
        return kw


def default_banding(spec: SketchSpec) -> tuple[int, int]:
    """The bands x rows a sketchdb LSH index gets for ``spec.threshold`` (asked of the
    library itself, through a collection in a throwaway file, so the two never disagree)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sketchdb-banding-") as d:
        with sketchdb.open(f"{d}/b.sketchdb") as db:
            kw = spec.collection_kwargs()
            kw.pop("bands", None), kw.pop("rows", None)
            kw["lsh"] = spec.threshold
            coll = db.create_collection("b", **kw)
            index = coll.stats().get("index") or {}
    if index.get("type") != "lsh":
        raise ValueError(f"sketchdb gives no LSH banding for {spec.kind} at threshold {spec.threshold}")
    return int(index["bands"]), int(index["rows"])


class Kernels:
    """The three kernels for one spec (built once per task, cheap)."""

    def __init__(self, spec: SketchSpec):
        if not (spec.bands and spec.rows):
            raise ValueError("Kernels needs a spec with its banding (SketchSpec.with_banding())")
        self.spec = spec
        self._cls = getattr(sketchdb, _CLASSES[spec.kind]) if spec.kind in _CLASSES else None
        if self._cls is None:
            raise ValueError(f"sketch kind {spec.kind!r} cannot be banded for dedup (use one of {sorted(_CLASSES)})")
        if spec.kind != "minhash":
            raise ValueError(f"kind {spec.kind!r}: the Spark pipeline sketches MinHash only in this build")
        if spec.recipe is not None:
            raise ValueError("recipes need the sketchdb.arrow kernels, which this build lacks")
        self._template = self._cls(**spec.sketch_kwargs()).__reduce__()[1][0]

    # ---- sketch ---------------------------------------------------------------------------
    def sketch(self, texts: pa.Array) -> pa.RecordBatch:
        texts = _as_string(texts)
        n = len(texts)
        values = texts.to_pylist()
        ok = [i for i, t in enumerate(values) if t is not None and any(c.isalnum() for c in t)]
        sigs: list = [None] * n
        cards: list = [None] * n
        if ok:
            sk = self._cls.bulk([values[i] for i in ok], **self.spec.sketch_kwargs())
            for i, s in zip(ok, sk):
                payload = s.__reduce__()[1][0][8]
                sigs[i] = bytes(payload[0])
                cards[i] = int(payload[2])
        return pa.RecordBatch.from_arrays(
            [pa.array(sigs, pa.binary()), pa.array(cards, pa.uint64())], names=["signature", "cardinality"]
        )

    # ---- band keys ------------------------------------------------------------------------
    def band_keys(self, signatures: pa.Array) -> pa.RecordBatch:
        b, r = self.spec.bands, self.spec.rows
        rows_idx, vals = self._values(signatures)
        if vals.shape[1] < b * r:
            raise ValueError(f"signatures hold {vals.shape[1]} values, banding {b}x{r} needs {b * r}")
        n = vals.shape[0]
        v = vals[:, : b * r].reshape(n, b, r)
        keys = np.empty((n, b), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for band in range(b):
                h = np.full(n, np.uint64(self.spec.seed ^ (band * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF)), np.uint64)
                for j in range(r):
                    h = _mix(h ^ v[:, band, j])
                keys[:, band] = h
        row = np.repeat(rows_idx.astype(np.int32), b)
        band = np.tile(np.arange(b, dtype=np.int32), n)
        return pa.RecordBatch.from_arrays(
            [pa.array(row), pa.array(band), pa.array(keys.reshape(-1).view(np.int64))], names=["row", "band", "key"]
        )

    def _values(self, signatures: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(row indexes of the non-null signatures, their values as a 2-D u64 array)."""
        signatures = signatures.cast(pa.binary()) if pa.types.is_fixed_size_binary(signatures.type) else signatures
        valid = np.flatnonzero(~np.asarray(signatures.is_null().to_numpy(zero_copy_only=False)))
        raw = [signatures[int(i)].as_py() for i in valid]
        width = self.spec.k
        if raw and any(len(x) != 8 * width for x in raw):
            raise ValueError(f"a signature is not {8 * width} bytes (k={width} u64 values)")
        buf = b"".join(raw)
        return valid, np.frombuffer(buf, dtype="<u8").reshape(len(raw), width) if raw else np.zeros((0, width), np.uint64)

    # ---- estimate -------------------------------------------------------------------------
    def estimate(self, a: pa.Array, b: pa.Array, card_a: pa.Array, card_b: pa.Array) -> pa.RecordBatch:
        est, lo, hi = [], [], []
        for sa, sb, ca, cb in zip(a.to_pylist(), b.to_pylist(), card_a.to_pylist(), card_b.to_pylist()):
            e = self._frozen(sa, ca).estimate(self._frozen(sb, cb), level=self.spec.level)
            est.append(e.value)
            lo.append(e.lower)
            hi.append(e.upper)
        return pa.RecordBatch.from_arrays(
            [pa.array(est, pa.float64()), pa.array(lo, pa.float64()), pa.array(hi, pa.float64())],
            names=["estimate", "lower", "upper"],
        )

    def frozen(self, signature: bytes, cardinality: int):
        """The sketch object of a signature (to insert into a collection or to query with)."""
        return self._frozen(signature, cardinality)

    def _frozen(self, signature: bytes, cardinality: int):
        t = self._template
        state = (t[0], t[1], t[2], t[3], t[4], t[5], t[6], None, (bytes(signature), b"", int(cardinality), 0))
        return self._cls._from_state(state)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer (wrapping u64 arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _as_string(texts: pa.Array) -> pa.Array:
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        return texts.cast(pa.string())
    if not pa.types.is_string(texts.type):
        raise TypeError(f"texts must be an Arrow string array, not {texts.type}")
    return texts
