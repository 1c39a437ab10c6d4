"""Arrow kernels: sketch, band and compare whole Arrow arrays on all cores, GIL released.

These are the per-partition kernels a distributed engine (Spark ``mapInArrow``, Ray Data,
Dask, DuckDB UDFs) calls. Each is a pure function of its input rows and its keyword
parameters, so every partition, engine and machine computes the same bytes, and they are
the bytes the database stores and the Rust API computes:

* :func:`sketch` / :func:`sketch_tokens` return ``fixed_size_binary(W)`` signatures, where
  ``W = signature_width(...)`` is the collection's record width. A signature is the
  record's cells in column order, little-endian: the sketch values at their stored width
  (MinHash 4 or 8 bytes, b-bit MinHash packed u64 words, OPH bins at ``bits/8`` bytes,
  SimHash 1 or 2 u64 words), then OPH's empty-bin bitmap words, then the cardinality (u64,
  set sketches only). ``Collection.insert_many(keys, signatures=...)`` stores them as they
  are.
* :func:`band_keys` returns the LSH band keys an index with the same banding files each
  signature under: two rows share a ``(band, key)`` exactly when the index would make them
  candidates of each other.
* :func:`estimate` returns the estimated similarity of row pairs with its confidence
  interval, as ``Collection.estimate`` computes it.

Inputs are anything that speaks the Arrow PyCapsule protocol (``pyarrow.Array``,
``pyarrow.ChunkedArray``, a table column, polars or arro3 arrays); nothing is copied on the
way in. Outputs are ``pyarrow`` objects (pyarrow must be installed to receive them).

Parameters shared by every kernel (the collection's configuration; ``Collection.spec()``
returns them for an existing collection, so ``sketch(texts, **coll.spec())`` matches it):

* ``kind``: ``"minhash"`` (default), ``"bbit"``, ``"oph"`` or ``"simhash"``;
* ``k``: permutations or bins (default 128; ignored for SimHash);
* ``bits``: bits per value (default per kind: 32, 8, 8, 64);
* ``seed``: the hash family's seed (default ``sketchdb.DEFAULT_SEED``);
* ``recipe``: a recipe preset's name (``sketchdb recipes`` lists them): its tokenizer, and
  for a compatibility preset (``"datasketch"``, ``"text-dedup"``, ...) its hash family, so
  the signatures equal that library's (MinHash, 32-bit values);
* ``family``: sketchdb's own hash family by name, for a collection made with another than
  its kind's default: ``"mix-multiply-shift-32"`` (the default of MinHash with 32-bit values
  and b-bit MinHash), ``"mix-multiply-shift"`` (the default of the others, and the family of
  MinHash and b-bit collections created before the 32-bit lane family existed), ``"charikar"``
  (textbook 64-bit SimHash). ``Collection.spec()`` includes it.

Text is cut by ``shingle`` words (default 5) or ``ngram`` characters, hashing each shingle
with ``token_seed`` (default 0), as collections do.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _sketchdb
from ._sketchdb import DEFAULT_SEED

__all__ = ["band_keys", "estimate", "signature_width", "sketch", "sketch_tokens"]


def _pyarrow():
    try:
        import pyarrow
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("sketchdb.arrow returns pyarrow arrays: install pyarrow") from e
    return pyarrow


def _chunks(obj: Any, what: str) -> list:
    """The chunks of an Arrow array-like, in order (one chunk for a plain array)."""
    if hasattr(obj, "__arrow_c_array__"):
        return [obj]
    if hasattr(obj, "chunks"):
        return list(obj.chunks)
    if hasattr(obj, "__arrow_c_stream__"):
        return list(_pyarrow().chunked_array(obj).chunks)
    raise TypeError(
        f"{what}: expected an Arrow array (pyarrow.Array or ChunkedArray, or any object with "
        f"__arrow_c_array__ / __arrow_c_stream__), not {type(obj).__name__}"
    )


def signature_width(
    kind: str = "minhash",
    k: int = 128,
    bits: Optional[int] = None,
    seed: int = DEFAULT_SEED,
    recipe: Optional[str] = None,
    family: Optional[str] = None,
) -> int:
    """The bytes of one signature with these parameters (``W`` of ``fixed_size_binary(W)``)."""
    return _sketchdb.signature_width(kind, k, bits, seed, recipe, family)


def sketch(
    texts: Any,
    *,
    kind: str = "minhash",
    k: int = 128,
    bits: Optional[int] = None,
    seed: int = DEFAULT_SEED,
    shingle: Optional[int] = None,
    ngram: Optional[int] = None,
    token_seed: int = 0,
    on_error: str = "raise",
    recipe: Optional[str] = None,
    family: Optional[str] = None,
):
    """Signatures of texts: a ``pyarrow.FixedSizeBinaryArray``, one row per input row.

    ``texts`` is a string array (``utf8``, ``large_utf8`` or ``utf8_view``; plain or chunked).
    A null text gives a null signature. A text that cannot be sketched (no shingle in it)
    raises ``ValueError`` naming its row, or with ``on_error="null"`` gives a null.
    The signatures are byte-identical to those a collection with the same parameters and
    tokenizer stores for the same texts.
    """
    out = _sketchdb.arrow_sketch(
        _chunks(texts, "texts"), kind, k, bits, seed, shingle, ngram, token_seed, on_error, recipe, family
    )
    return _pyarrow().array(out)


def sketch_tokens(
    tokens: Any,
    *,
    kind: str = "minhash",
    k: int = 128,
    bits: Optional[int] = None,
    seed: int = DEFAULT_SEED,
    token_seed: int = 0,
    on_error: str = "raise",
    recipe: Optional[str] = None,
    family: Optional[str] = None,
):
    """Signatures of token lists: a ``pyarrow.FixedSizeBinaryArray``, one row per list.

    ``tokens`` is a ``list``/``large_list`` array of ``uint64`` hashes (``int64`` is read as
    the same 64 bits), or of ``utf8``/``binary`` tokens, which are hashed with xxh3-64 and
    ``token_seed`` exactly as ``MinHash.update`` hashes them. Repeated tokens count once for
    the set kinds. Null rows give nulls; a null token or an empty list raises (or, with
    ``on_error="null"``, gives a null).
    """
    out = _sketchdb.arrow_sketch_tokens(
        _chunks(tokens, "tokens"), kind, k, bits, seed, token_seed, on_error, recipe, family
    )
    return _pyarrow().array(out)


def band_keys(
    signatures: Any,
    *,
    threshold: Optional[float] = None,
    bands: Optional[int] = None,
    rows: Optional[int] = None,
    kind: str = "minhash",
    k: int = 128,
    bits: Optional[int] = None,
    seed: int = DEFAULT_SEED,
    signed: bool = False,
    recipe: Optional[str] = None,
    key_bits: int = 32,
    family: Optional[str] = None,
):
    """LSH band keys of signatures: a ``pyarrow.RecordBatch`` ``(row int32, band int32, key)``.

    One row per (input row, band), input rows in order and each row's bands in band order;
    ``row`` counts from 0 over all chunks; null signatures have no rows. The banding is the
    one an LSH index gets: give ``threshold`` (the index's recall-first banding for it, as
    ``create_collection(..., lsh=threshold)`` chooses) and optionally ``bands`` or ``rows``,
    or give both ``bands`` and ``rows``. ``key`` is ``uint64`` (only its top 32 bits are
    significant; the low bits are zero), or with ``signed=True`` the same 64 bits as
    ``int64`` for engines without unsigned types (Spark). The keys equal those the index
    of a collection with the same parameters and banding stores (``Collection.band_keys``).
    With ``key_bits=64`` every bit is significant (band hash version 1: XXH3-64 of the band
    index and its values), for engines that group by the keys themselves (``sketchdb.spark``):
    two different bands then share a key with probability 2^-64 instead of 2^-32; these keys
    are not the index's. SimHash signatures have no bands (``ValueError``).
    """
    out = _sketchdb.arrow_band_keys(
        _chunks(signatures, "signatures"), kind, k, bits, seed, threshold, bands, rows, signed, recipe, key_bits, family
    )
    return _pyarrow().record_batch(out)


def estimate(
    a: Any,
    b: Any,
    *,
    kind: str = "minhash",
    k: int = 128,
    bits: Optional[int] = None,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    recipe: Optional[str] = None,
    family: Optional[str] = None,
):
    """Estimated similarity of row pairs ``(a[i], b[i])``: a ``pyarrow.RecordBatch``
    ``(estimate, lower, upper)`` of float64.

    ``a`` and ``b`` are signature arrays of equal length (as :func:`sketch` returns). The
    estimate is Jaccard for the set kinds and cosine for SimHash, with its two-sided
    interval at ``level``, equal to ``Collection.estimate`` of the stored records. A row
    where either signature is null is null.
    """
    out = _sketchdb.arrow_estimate(_chunks(a, "a"), _chunks(b, "b"), kind, k, bits, seed, level, recipe, family)
    return _pyarrow().record_batch(out)
