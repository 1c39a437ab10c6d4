"""A datasketch drop-in: ``MinHash``, ``LeanMinHash`` and ``MinHashLSH`` over sketchdb.

Port a datasketch program by changing its import::

    from sketchdb.compat.datasketch import MinHash, MinHashLSH

``MinHashLSH`` keeps its index in a sketchdb collection. By default that is a temporary
file (gone when the object is); with ``storage_config={"type": "sketchdb", "path": PATH}``
it is the database at PATH (collection ``storage_config.get("name", "minhash_lsh")``),
which survives restarts and serves reader processes (``sketchdb.open(PATH,
read_only=True)``). ``query`` returns datasketch's answer, the unverified LSH candidates:
every stored key sharing at least one band with the query (the same bands and rows as
datasketch's, from ``threshold``/``weights`` or ``params``).

Hash family: tokens are hashed with datasketch's ``sha1_hash32`` and permuted by the
datasketch-compatible families of the ``datasketch-affine32`` recipe (datasketch 2.0's
default ``scheme="affine32"``) or, for ``scheme="legacy"``, the ``datasketch`` recipe; so
``hashvalues`` are datasketch's bit for bit for the same tokens, ``num_perm`` and ``seed``,
and ``MinHashLSH.query`` returns the same candidates. ``MinHash(hashfunc=f)`` takes any Python
callable returning an int (below 2**32 for ``affine32``, below 2**64 for ``legacy``, as
datasketch requires); it is called once per token from Python, so it is much slower than
the default, whose SHA-1 runs in bulk.

Not offered (each raises ``NotImplementedError`` naming the alternative):
``scheme="affine64"``, ``permutations=``, ``hashobj=``, ``MinHashLSHForest`` (use a
collection's ``top_k``), ``MinHashLSHEnsemble`` (containment search; no sketchdb
equivalent), ``WeightedMinHash``/``WeightedMinHashGenerator`` (for a weighted similarity use
``sketchdb.SimHash``: cosine over a token multiset) and ``bBitMinHash`` (use a collection
with ``kind="bbit"``). ``MinHashLSH``'s ``hashfunc`` (datasketch's band-key hash) and
``prepickle`` are accepted and have no effect: sketchdb hashes bands itself and stores
keys as described below.

Keys are ``str`` or ``bytes`` as stored; any other hashable key is stored pickled and
returned unpickled.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import struct
import tempfile
from collections.abc import Hashable, Iterable
from typing import Any, Optional

import numpy as np

import sketchdb

__all__ = [
    "LeanMinHash",
    "MinHash",
    "MinHashLSH",
    "MinHashLSHEnsemble",
    "MinHashLSHForest",
    "WeightedMinHash",
    "WeightedMinHashGenerator",
    "bBitMinHash",
]

#: datasketch's default MinHash seed.
DEFAULT_SEED = 1
_PICKLED = b"\x00sketchdb-pickle\x00"


_RECIPES = {None: "datasketch-affine32", "affine32": "datasketch-affine32", "legacy": "datasketch"}


def sha1_hash32(data: bytes) -> int:
    """datasketch's default token hash: the first 4 bytes of SHA-1, little-endian."""
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


def _recipe(scheme: Optional[str]) -> str:
    if scheme == "affine64":
        raise NotImplementedError(
            "scheme='affine64' is not offered by sketchdb.compat.datasketch: use 'affine32' (the default) or "
            "'legacy', or a native sketchdb.MinHash (64-bit values)"
        )
    if scheme not in _RECIPES:
        raise ValueError(f"unknown scheme {scheme!r}: expected 'affine32' (the default) or 'legacy'")
    return _RECIPES[scheme]


_HV_LIMIT = {"affine32": 1 << 32, "legacy": 1 << 64}


class MinHash:
    """datasketch's ``MinHash``: ``update``, ``update_batch``, ``jaccard``, ``count``,
    ``merge``, ``digest``, ``hashvalues``, ``copy``, ``bulk``, ``==``, pickling."""

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = DEFAULT_SEED,
        hashfunc: Any = None,
        hashobj: Any = None,
        hashvalues: Any = None,
        permutations: Any = None,
        scheme: Optional[str] = None,
    ) -> None:
        if hashobj is not None:
            raise NotImplementedError("hashobj= (deprecated in datasketch) is not offered: give hashfunc= instead")
        if permutations is not None:
            raise NotImplementedError(
                "permutations= is not offered: the permutations are datasketch's, drawn from seed= (give the seed)"
            )
        if hashfunc is not None and not callable(hashfunc):
            raise TypeError(f"hashfunc must be callable, not {type(hashfunc).__name__}")
        if hashvalues is not None:
            num_perm = len(hashvalues)
        self.seed = seed
        self.num_perm = num_perm
        self.scheme = scheme or "affine32"
        #: The token hash; None is datasketch's default, ``sha1_hash32``, computed in bulk.
        self.hashfunc = None if hashfunc is sha1_hash32 else hashfunc
        self._kw = dict(num_perm=num_perm, seed=seed, recipe=_recipe(scheme))
        self._m = sketchdb.MinHash(**self._kw)
        if hashvalues is not None:
            # Imported values keep no tokens and no cardinality (stored as 0).
            values = np.asarray(hashvalues, dtype=np.uint64)
            data = values.astype("<u4").tobytes() + (0).to_bytes(8, "little")
            self._m = sketchdb.MinHash.from_bytes(data, **self._kw)

    def _hv(self, b: Any) -> int:
        """One token's hash: ``hashfunc(b)``, checked against the scheme's width."""
        if self.hashfunc is None:
            return sha1_hash32(b)
        hv = self.hashfunc(b)
        try:
            hv = int(hv)
        except (TypeError, ValueError) as err:
            raise TypeError(f"hashfunc returned {type(hv).__name__}, not an int") from err
        if not 0 <= hv < _HV_LIMIT[self.scheme]:
            raise ValueError(
                f"hashfunc returned {hv}, out of range for scheme {self.scheme!r} "
                f"(0 <= value < 2**{_HV_LIMIT[self.scheme].bit_length() - 1})"
            )
        return hv

    def update(self, b: Any) -> None:
        """Adds one token (``bytes`` hashed with ``sha1_hash32``, or whatever ``hashfunc``
        takes)."""
        self._m.update(self._hv(b))

    def update_batch(self, b: Iterable[Any]) -> None:
        """Adds every token of ``b``."""
        self._m.update_batch(np.fromiter((self._hv(x) for x in b), dtype=np.uint64))

    def jaccard(self, other: "MinHash") -> float:
        """The estimated Jaccard similarity."""
        return self._m.jaccard(other._m)

    def count(self) -> float:
        """The number of distinct tokens (exact here; datasketch estimates it)."""
        c = self._m.cardinality
        return float(c if c is not None else 0)

    def merge(self, other: "MinHash") -> None:
        """Adds ``other``'s tokens (the union)."""
        self._m.merge(other._m)

    def digest(self) -> np.ndarray:
        """The hash values (a copy)."""
        return self.hashvalues.copy()

    @property
    def hashvalues(self) -> np.ndarray:
        """The signature's values, in datasketch's dtype (``uint32`` for affine32, ``uint64``
        for legacy)."""
        return self._m.hashvalues.astype(np.uint32 if self.scheme == "affine32" else np.uint64)

    def is_empty(self) -> bool:
        """Whether no token was added."""
        try:
            return not self._m.cardinality
        except ValueError:  # an open sketch of no tokens has no signature yet
            return True

    def copy(self) -> "MinHash":
        """An independent copy."""
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__)
        c._m = self._m.copy()
        return c

    def __len__(self) -> int:
        return self.num_perm

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MinHash) and self._m == other._m

    @classmethod
    def bulk(cls, b: Iterable[Iterable[Any]], **kwargs: Any) -> list["MinHash"]:
        """One sketch per token list, on all cores."""
        template = cls(**kwargs)
        hashed = [np.fromiter((template._hv(t) for t in x), dtype=np.uint64) for x in b]
        out = []
        for m in sketchdb.MinHash.bulk(hashed, **template._kw):
            h = template.copy()
            h._m = m
            out.append(h)
        return out


class LeanMinHash(MinHash):
    """A frozen ``MinHash``: keeps the signature, not the tokens (no ``update``)."""

    def __init__(self, minhash: Optional[MinHash] = None, seed: Optional[int] = None, hashvalues: Any = None) -> None:
        if minhash is not None:
            self.__dict__.update(minhash.__dict__)
            self._m = sketchdb.MinHash.from_bytes(minhash._m.to_bytes(), **minhash._kw)
        else:
            MinHash.__init__(self, seed=DEFAULT_SEED if seed is None else seed, hashvalues=hashvalues)

    def update(self, b: Any) -> None:
        raise TypeError("a LeanMinHash cannot be updated")


def _integrate(f, a: float, b: float) -> float:
    try:
        from scipy.integrate import quad
    except ImportError:  # pragma: no cover - scipy comes with datasketch users
        n = 2000
        h = (b - a) / n
        return h / 3 * (f(a) + f(b) + sum((4 if i % 2 else 2) * f(a + i * h) for i in range(1, n)))
    return quad(f, a, b)[0]


def optimal_param(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    """datasketch's banding choice: the (bands, rows) minimising the weighted false positive
    and false negative areas."""
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = _integrate(lambda s: 1 - (1 - s ** float(r)) ** float(b), 0.0, threshold)
            fn = _integrate(lambda s: 1 - (1 - (1 - s ** float(r)) ** float(b)), threshold, 1.0)
            err = fp * fp_weight + fn * fn_weight
            if err < best:
                best, opt = err, (b, r)
    return opt


def _enc(key: Hashable) -> Any:
    if isinstance(key, (str, bytes)):
        return key
    return _PICKLED + pickle.dumps(key)


def _dec(key: Any) -> Hashable:
    if isinstance(key, bytes) and key.startswith(_PICKLED):
        return pickle.loads(key[len(_PICKLED):])
    return key


class MinHashLSH:
    """datasketch's ``MinHashLSH`` over a (persistent) sketchdb collection."""

    def __init__(
        self,
        threshold: float = 0.9,
        num_perm: int = 128,
        weights: tuple[float, float] = (0.5, 0.5),
        params: Optional[tuple[int, int]] = None,
        storage_config: Optional[dict] = None,
        prepickle: Optional[bool] = None,
        hashfunc: Any = None,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights) or sum(weights) != 1.0:
            raise ValueError("Weights must be in [0.0, 1.0] and sum to 1.0")
        self.threshold, self.h = threshold, num_perm
        if params is not None:
            self.b, self.r = params
            if self.b * self.r > num_perm:
                raise ValueError(f"The product of b and r in params is {self.b * self.r} > num_perm {num_perm}")
        else:
            self.b, self.r = optimal_param(threshold, num_perm, weights[0], weights[1])
        self._tmp = None
        config = storage_config or {"type": "dict"}
        if config.get("type") == "sketchdb":
            path = config["path"]
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="sketchdb-lsh-")
            path = os.path.join(self._tmp.name, "lsh.sketchdb")
        name = config.get("name", "minhash_lsh")
        self._db = sketchdb.open(path)
        if name in self._db.collections():
            self._coll = self._db[name]
            bands = self._coll.stats()["index"]
            if (bands or {}).get("bands") != self.b or bands.get("rows") != self.r or self._coll.stats()["size"] != num_perm:
                raise ValueError(f"{path}: collection {name!r} has another banding or num_perm")
        else:
            lsh = min(max(threshold, 0.01), 0.99)
            # MinHashLSH takes no seed or scheme: datasketch's defaults (seed 1, affine32).
            self._coll = self._db.create_collection(
                name, k=num_perm, recipe=_recipe(None), lsh=lsh, bands=self.b, rows=self.r
            )

    def _sketch(self, minhash: MinHash):
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        return minhash._m

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        """Stores ``minhash`` under ``key`` (a ``ValueError`` if the key exists)."""
        k = _enc(key)
        if check_duplication and k in self._coll:
            raise ValueError("The given key already exists")
        self._coll.upsert(k, sketch=self._sketch(minhash))

    def insertion_session(self, buffer_size: int = 50000) -> "_InsertionSession":
        """A context manager that buffers inserts and writes them in batches."""
        return _InsertionSession(self, buffer_size)

    def query(self, minhash: MinHash) -> list[Hashable]:
        """The keys sharing at least one band with ``minhash`` (unverified candidates)."""
        hits = self._coll.query(sketch=self._sketch(minhash), threshold=5e-324, plan="lsh-probe")
        return [_dec(h.key) for h in hits]

    def remove(self, key: Hashable) -> None:
        """Removes ``key`` (a ``ValueError`` if it is absent)."""
        if not self._coll.delete(_enc(key)):
            raise ValueError("The given key does not exist")

    def __contains__(self, key: Hashable) -> bool:
        return _enc(key) in self._coll

    def is_empty(self) -> bool:
        """Whether nothing is stored."""
        return len(self._coll) == 0

    def close(self) -> None:
        """Closes the database (and removes a temporary one)."""
        self._db.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class _InsertionSession:
    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        self.lsh, self.buffer_size = lsh, buffer_size
        self.keys: list = []
        self.sketches: list = []

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        if check_duplication and key in self.lsh:
            raise ValueError("The given key already exists")
        self.keys.append(_enc(key))
        self.sketches.append(self.lsh._sketch(minhash))
        if len(self.keys) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        if self.keys:
            self.lsh._coll.insert_many(self.keys, sketches=self.sketches, upsert=True, strict=True)
            self.keys, self.sketches = [], []

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> "_InsertionSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _not_offered(name: str, alternative: str):
    """A datasketch class the shim does not offer: constructing it raises
    ``NotImplementedError`` naming ``alternative``."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"datasketch's {name} is not offered by sketchdb.compat.datasketch: {alternative}")

    return type(name, (), {"__init__": __init__, "__doc__": f"Not offered: {alternative}"})


MinHashLSHForest = _not_offered(
    "MinHashLSHForest",
    "for top-k search use a sketchdb collection's top_k(sketch=m, k=...) (create it with lsh= for an index)",
)
MinHashLSHEnsemble = _not_offered(
    "MinHashLSHEnsemble",
    "sketchdb has no containment search; keep datasketch for it, or ask a Jaccard threshold query",
)
WeightedMinHashGenerator = _not_offered(
    "WeightedMinHashGenerator",
    "for weighted similarity use sketchdb.SimHash (cosine over a token multiset: a token repeated n times weighs n)",
)
WeightedMinHash = _not_offered(
    "WeightedMinHash",
    "for weighted similarity use sketchdb.SimHash (cosine over a token multiset: a token repeated n times weighs n)",
)
bBitMinHash = _not_offered(
    "bBitMinHash",
    "use sketchdb.BBitMinHash, or a collection created with kind='bbit'",
)
