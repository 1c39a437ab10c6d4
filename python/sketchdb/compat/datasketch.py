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

Hash family: these sketches use the family named by ``recipe`` (default ``None``:
sketchdb's own family). Their ``hashvalues`` equal datasketch's only under a
datasketch-compatible recipe; without one, signatures differ from datasketch's bit for
bit but estimate the same Jaccard with the same accuracy, and candidate sets follow the
same banding.

Keys are ``str`` or ``bytes`` as stored; any other hashable key is stored pickled and
returned unpickled.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Hashable, Iterable
from typing import Any, Optional

import numpy as np

import sketchdb

__all__ = ["LeanMinHash", "MinHash", "MinHashLSH"]

#: datasketch's default MinHash seed.
DEFAULT_SEED = 1
_PICKLED = b"\x00sketchdb-pickle\x00"


def _sketch_seed(seed: int) -> int:
    """The sketchdb family seed standing for datasketch seed ``seed``."""
    return (sketchdb.DEFAULT_SEED ^ (seed * 0x9E3779B97F4A7C15)) & 0xFFFFFFFFFFFFFFFF


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
        if hashfunc is not None or hashobj is not None or permutations is not None:
            raise ValueError("sketchdb.compat.datasketch.MinHash hashes tokens itself: hashfunc, hashobj and "
                             "permutations are not supported")
        if hashvalues is not None:
            num_perm = len(hashvalues)
        self.seed = seed
        self.num_perm = num_perm
        self._m = sketchdb.MinHash(num_perm=num_perm, seed=_sketch_seed(seed))
        if hashvalues is not None:
            values = np.asarray(hashvalues, dtype=np.uint64)
            data = values.astype("<u4").tobytes() + (0).to_bytes(8, "little")
            self._m = sketchdb.MinHash.from_bytes(data, num_perm=num_perm, seed=_sketch_seed(seed))

    def update(self, b: Any) -> None:
        """Adds one token (``bytes``; ``str`` and ``int`` hashes work too)."""
        self._m.update(b)

    def update_batch(self, b: Iterable[Any]) -> None:
        """Adds every token of ``b``."""
        self._m.update_batch(list(b))

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
        return self._m.hashvalues.copy()

    @property
    def hashvalues(self) -> np.ndarray:
        """The signature's values as a ``uint64`` array."""
        return self._m.hashvalues

    def is_empty(self) -> bool:
        """Whether no token was added."""
        try:
            return not self._m.cardinality
        except ValueError:  # an open sketch of no tokens has no signature yet
            return True

    def copy(self) -> "MinHash":
        """An independent copy."""
        c = object.__new__(type(self))
        c.seed, c.num_perm, c._m = self.seed, self.num_perm, self._m.copy()
        return c

    def __len__(self) -> int:
        return self.num_perm

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MinHash) and self.seed == other.seed and self._m == other._m

    @classmethod
    def bulk(cls, b: Iterable[Iterable[Any]], **kwargs: Any) -> list["MinHash"]:
        """One sketch per token list, on all cores."""
        num_perm = kwargs.get("num_perm", 128)
        seed = kwargs.get("seed", DEFAULT_SEED)
        out = []
        for m in sketchdb.MinHash.bulk([list(x) for x in b], num_perm=num_perm, seed=_sketch_seed(seed)):
            h = object.__new__(LeanMinHash)
            h.seed, h.num_perm, h._m = seed, num_perm, m
            out.append(h)
        return out


class LeanMinHash(MinHash):
    """A frozen ``MinHash``: keeps the signature, not the tokens (no ``update``)."""

    def __init__(self, minhash: Optional[MinHash] = None, seed: Optional[int] = None, hashvalues: Any = None) -> None:
        if minhash is not None:
            self.seed, self.num_perm = minhash.seed, minhash.num_perm
            self._m = sketchdb.MinHash.from_bytes(minhash._m.to_bytes(), num_perm=minhash.num_perm,
                                                  seed=_sketch_seed(minhash.seed))
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
            # MinHashLSH takes no seed: its sketches are those of datasketch's default seed.
            self._coll = self._db.create_collection(
                name, k=num_perm, seed=_sketch_seed(DEFAULT_SEED), lsh=lsh, bands=self.b, rows=self.r
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
