"""The engine boundary: Arrow arrays in, Arrow arrays out, no Spark in sight.

Three kernels, each a pure function of its inputs and a :class:`SketchSpec`, over the
package's own Arrow kernels (``sketchdb.arrow``: all cores, GIL released, output
byte-identical to what a collection stores and to what its LSH index files):

* ``sketch(texts) -> RecordBatch(signature: binary)``: one row per text; a null text, or one
  with no tokens, gives a null signature (the caller reports it);
* ``band_keys(signatures) -> RecordBatch(row: int32, band: int32, key: int64)``: ``bands``
  rows per non-null signature, full 64-bit band keys (``BUCKET_KEY_BITS``) as signed
  integers (Spark has no u64);
* ``estimate(a, b) -> RecordBatch(estimate, lower, upper: float64)``: sketchdb's estimator
  with its interval, pairwise.

Spark calls them inside ``mapInArrow``; a Ray Data adapter would call the same three inside
``map_batches(batch_format="pyarrow")``.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from typing import Optional

import pyarrow as pa

import sketchdb
from sketchdb import arrow

# Kinds and the constructor of their sketch class.
_CLASSES = {"minhash": "MinHash", "bbit": "BBitMinHash", "oph": "OPH"}

# The pipeline buckets on all 64 bits of each band's hash: with the index's 32-bit keys, two
# different bands collide with probability 2^-32, which at 10^9 documents is about 0.23
# spurious members per bucket and 1.6e9 spurious candidate pairs (docs/spark.md); with 64
# bits, about 0.4 pairs in all.
BUCKET_KEY_BITS = 64

# The key of the signature Parquet's configuration (see SketchSpec.signature_metadata).
SIGNATURE_METADATA_KEY = "sketchdb.signatures"
SIGNATURE_METADATA_VERSION = 1


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
    # sketchdb's own hash family by name (None: the kind's default); `Collection.spec()`
    # names it, so a spec read from a collection sketches in that collection's family.
    family: Optional[str] = None
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
        if self.recipe is not None:
            kw["recipe"] = self.recipe
        # Only MinHash and b-bit have a choice of family (OPH's is its only one).
        if self.family is not None and self.kind in ("minhash", "bbit"):
            kw["family"] = self.family
        return kw

    def kernel_kwargs(self) -> dict:
        """The parameters every ``sketchdb.arrow`` kernel takes."""
        return {
            "kind": self.kind,
            "k": self.k,
            "bits": self.bits,
            "seed": self.seed,
            "recipe": self.recipe,
            "family": self.family,
        }

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
            "recipe": self.recipe,
            "family": self.family,
        }
        kw["lsh"] = self.threshold
        if self.bands and self.rows:
            kw.update(bands=self.bands, rows=self.rows)
        return kw

    def signature_metadata(self) -> str:
        """The ``sketchdb.signatures`` metadata of signature Parquet made with this spec (the
        pipeline writes it as the ``signature`` column's field metadata, which Spark keeps in
        the Parquet footer): the collection's resolved configuration, as ``sketchdb import``
        reads it to recreate the collection."""
        spec = self.with_banding()
        with tempfile.TemporaryDirectory(prefix="sketchdb-spec-") as d:
            with sketchdb.open(f"{d}/s.sketchdb") as db:
                coll = db.create_collection("s", **spec.collection_kwargs())
                stats, resolved = coll.stats(), coll.spec()
        recipe = resolved.get("recipe")
        meta = {
            "version": SIGNATURE_METADATA_VERSION,
            "kind": stats["kind"],
            "k": stats["size"],
            "bits": stats["bits"],
            "seed": stats["seed"],
            "family": stats["family"],
            "recipe": recipe,
            "shingle": resolved.get("shingle"),
            "ngram": resolved.get("ngram"),
            "token_seed": resolved.get("token_seed", 0),
            "threshold": spec.threshold,
            "bands": spec.bands,
            "rows": spec.rows,
            "signature_width": Kernels(spec).width,
        }
        return json.dumps(meta, sort_keys=True)


def default_banding(spec: SketchSpec) -> tuple[int, int]:
    """The bands x rows a sketchdb LSH index gets for ``spec.threshold`` (asked of the
    library itself, through a collection in a throwaway file, so the two never disagree)."""
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
        if spec.kind not in _CLASSES:
            raise ValueError(f"sketch kind {spec.kind!r} cannot be banded for dedup (use one of {sorted(_CLASSES)})")
        self.spec = spec
        self._cls = getattr(sketchdb, _CLASSES[spec.kind])
        self._kw = spec.kernel_kwargs()

    def sketch(self, texts: pa.Array) -> pa.RecordBatch:
        s = self.spec
        sig = arrow.sketch(
            texts, shingle=s.shingle, ngram=s.ngram, token_seed=s.token_seed, on_error="null", **self._kw
        )
        return pa.RecordBatch.from_arrays([sig.cast(pa.binary())], names=["signature"])

    def band_keys(self, signatures: pa.Array) -> pa.RecordBatch:
        return arrow.band_keys(
            _fixed(signatures, self.width),
            bands=self.spec.bands,
            rows=self.spec.rows,
            signed=True,
            key_bits=BUCKET_KEY_BITS,
            **self._kw,
        )

    def estimate(self, a: pa.Array, b: pa.Array) -> pa.RecordBatch:
        return arrow.estimate(_fixed(a, self.width), _fixed(b, self.width), level=self.spec.level, **self._kw)

    @property
    def width(self) -> int:
        return arrow.signature_width(**self._kw)

    def frozen(self, signature: bytes):
        """The sketch object of a signature (to query a collection with)."""
        return self._cls.from_bytes(signature, **self.spec.sketch_kwargs())


def _fixed(a: pa.Array, width: int) -> pa.Array:
    """A binary array of signatures as ``fixed_size_binary(width)``."""
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return a if pa.types.is_fixed_size_binary(a.type) else a.cast(pa.binary(width))
