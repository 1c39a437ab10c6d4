"""Type stubs of the compiled module ``sketchdb._sketchdb``."""

import os
from collections.abc import Iterable, Iterator
from typing import Any, Literal, Optional, TypeVar, Union

import numpy as np
import numpy.typing as npt

Token = Union[str, bytes, int]
Key = Union[str, bytes]
_S = TypeVar("_S", bound="_Sketch")

DEFAULT_SEED: int
MAX_KEY_LEN: int
__version__: str

def token_hash(token: Token, seed: int = 0) -> int: ...
def tokenize(text: str, *, shingle: Optional[int] = None, ngram: Optional[int] = None, token_seed: int = 0) -> list[int]: ...
def sketch_many(
    items: Union[Iterable[Union[str, Iterable[Token], npt.NDArray[Any]]], npt.NDArray[Any]],
    *,
    offsets: Optional[Union[npt.NDArray[Any], Iterable[int]]] = None,
    kind: str = "minhash",
    k: int = 128,
    bits: Optional[int] = None,
    seed: int = ...,
    shingle: Optional[int] = None,
    ngram: Optional[int] = None,
    token_seed: int = 0,
    recipe: Optional[str] = None,
    family: Optional[str] = None,
) -> npt.NDArray[np.uint8]:
    """Signatures of many items as one ``uint8`` matrix ``(n, W)``, ``W = arrow.signature_width(...)``.

    ``items``: texts (``str``, cut by ``shingle``/``ngram``) and token lists (``int`` u64
    hashes, ``str``/``bytes`` tokens hashed with ``token_seed``, 1-D NumPy arrays), in a list,
    tuple or any iterable; or a 2-D NumPy ``uint64``/``int64`` array (one row per item); or a
    1-D one with ``offsets`` (``n + 1`` row boundaries, from 0 to ``len(items)``). Row ``i``
    equals ``to_bytes()`` of the sketch of item ``i`` and what ``arrow.sketch``/``sketch_tokens``
    and a collection with the same parameters store. Lists are read on the calling thread
    while the rows read before them are sketched on all cores with the GIL released.
    A bad item raises ``TypeError``/``ValueError`` naming the item (and token) index.
    """
    ...
def open(
    path: Union[str, os.PathLike[str]],
    create: Optional[bool] = None,
    *,
    read_only: bool = False,
    busy_timeout: float = 5.0,
    page_cache_bytes: Optional[int] = None,
    probe_cache_bytes: Optional[int] = None,
) -> Database:
    """Opens (or creates) the database at ``path``.

    ``page_cache_bytes`` sizes the storage engine's page cache (default 1 GiB) and
    ``probe_cache_bytes`` the probe cache's budget (index values and candidates' records kept
    for repeated queries; default 1 GiB, 0 keeps nothing). Both bound memory only: answers
    never depend on them. ``Database.stats()["caches"]`` reports each with its held bytes.
    """
    ...

class Estimate:
    value: float
    lower: float
    upper: float
    level: float
    samples: float
    def __float__(self) -> float: ...
    def __contains__(self, x: float) -> bool: ...

class _Sketch:
    """Methods every sketch class has (not a runtime class)."""

    hashvalues: npt.NDArray[Any]
    is_open: bool
    cardinality: Optional[int]
    kind: str
    seed: int
    family: str
    bits: int
    size: int
    def update(self, token: Token) -> None: ...
    def update_batch(self, tokens: Iterable[Token]) -> None: ...
    def update_text(self, text: str) -> None: ...
    def similarity(self: _S, other: _S) -> float: ...
    def estimate(self: _S, other: _S, level: float = 0.95) -> Estimate: ...
    def digest(self) -> npt.NDArray[Any]: ...
    def copy(self: _S) -> _S: ...
    def merge(self: _S, other: _S) -> None: ...
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def to_bytes(self) -> bytes: ...
    @classmethod
    def from_bytes(cls: type[_S], data: bytes, **kwargs: Any) -> _S: ...
    @classmethod
    def bulk(cls: type[_S], items: Iterable[Union[str, Iterable[Token]]], **kwargs: Any) -> list[_S]: ...

class MinHash(_Sketch):
    hashvalues: npt.NDArray[np.uint64]
    def __init__(
        self,
        num_perm: int = 128,
        seed: int = ...,
        bits: Optional[int] = None,
        *,
        shingle: Optional[int] = None,
        ngram: Optional[int] = None,
        token_seed: int = 0,
        recipe: Optional[str] = None,
        family: Optional[str] = None,
    ) -> None: ...
    def jaccard(self, other: MinHash) -> float: ...

class BBitMinHash(_Sketch):
    hashvalues: npt.NDArray[np.uint32]
    def __init__(
        self,
        num_perm: int = 128,
        b: int = 8,
        seed: int = ...,
        *,
        shingle: Optional[int] = None,
        ngram: Optional[int] = None,
        token_seed: int = 0,
        recipe: Optional[str] = None,
        family: Optional[str] = None,
    ) -> None: ...
    def jaccard(self, other: BBitMinHash) -> float: ...

class OPH(_Sketch):
    hashvalues: npt.NDArray[np.uint32]
    def __init__(
        self,
        bins: int = 128,
        bits: int = 8,
        seed: int = ...,
        *,
        shingle: Optional[int] = None,
        ngram: Optional[int] = None,
        token_seed: int = 0,
        recipe: Optional[str] = None,
    ) -> None: ...
    def jaccard(self, other: OPH) -> float: ...

class SimHash(_Sketch):
    hashvalues: npt.NDArray[np.uint64]
    value: int
    def __init__(
        self,
        bits: int = 64,
        seed: int = ...,
        *,
        shingle: Optional[int] = None,
        ngram: Optional[int] = None,
        token_seed: int = 0,
        recipe: Optional[str] = None,
        family: Optional[str] = None,
    ) -> None: ...
    def cosine(self, other: SimHash) -> float: ...
    def hamming(self, other: SimHash) -> int: ...

AnySketch = Union[MinHash, BBitMinHash, OPH, SimHash]

class Hit:
    key: Key
    row_id: int
    estimate: float
    lower: float
    upper: float
    level: float
    distance: Optional[int]
    exact: Optional[float]

class Cluster:
    keys: list[Key]
    rows: list[int]
    # clustering="representative": the member every other member is a verified pair with.
    representative: Optional[Key]
    def __len__(self) -> int: ...

class DedupResult:
    clusters: list[Cluster]
    clustering: Literal["components", "representative"]
    pairs: int
    candidates: int
    plan: Optional[str]
    reason: str
    stages: dict[str, float]
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Cluster]: ...

class Reject:
    index: int
    key: Optional[Key]
    error: BaseException

class InsertReport:
    written: int
    rejects: list[Reject]
    def __int__(self) -> int: ...

class Collection:
    name: str
    kind: str
    def insert(
        self, key: Key, *, text: Optional[str] = None, tokens: Optional[Iterable[Token]] = None, sketch: Optional[AnySketch] = None
    ) -> int: ...
    def upsert(
        self, key: Key, *, text: Optional[str] = None, tokens: Optional[Iterable[Token]] = None, sketch: Optional[AnySketch] = None
    ) -> int: ...
    def insert_many(
        self,
        keys: Any,
        texts: Any = None,
        *,
        tokens: Any = None,
        sketches: Optional[Iterable[AnySketch]] = None,
        signatures: Any = None,
        hashvalues: Any = None,
        upsert: bool = False,
        strict: bool = False,
    ) -> InsertReport: ...
    def query_many(
        self,
        texts: Any = None,
        *,
        tokens: Any = None,
        keys: Any = None,
        sketches: Optional[Iterable[AnySketch]] = None,
        signatures: Any = None,
        threshold: Optional[float] = None,
        level: float = 0.95,
        exact: bool = False,
        threads: Optional[int] = None,
    ) -> list[list[Hit]]: ...
    def top_k_many(
        self,
        texts: Any = None,
        *,
        tokens: Any = None,
        keys: Any = None,
        sketches: Optional[Iterable[AnySketch]] = None,
        signatures: Any = None,
        k: int = 10,
        level: float = 0.95,
        exact: bool = False,
        threads: Optional[int] = None,
    ) -> list[list[Hit]]: ...
    def spec(self) -> dict[str, Any]: ...
    def band_keys(
        self, *, text: Optional[str] = None, tokens: Optional[Iterable[Token]] = None, key: Optional[Key] = None, sketch: Optional[AnySketch] = None
    ) -> Optional[list[int]]: ...
    def delete(self, key: Key) -> bool: ...
    def get(self, key: Key) -> Optional[AnySketch]: ...
    def __getitem__(self, key: Key) -> AnySketch: ...
    def __contains__(self, key: Key) -> bool: ...
    def __len__(self) -> int: ...
    def query(
        self,
        *,
        text: Optional[str] = None,
        tokens: Optional[Iterable[Token]] = None,
        key: Optional[Key] = None,
        sketch: Optional[AnySketch] = None,
        threshold: Optional[float] = None,
        level: float = 0.95,
        exact: bool = False,
        plan: Optional[str] = None,
    ) -> list[Hit]: ...
    def top_k(
        self,
        *,
        text: Optional[str] = None,
        tokens: Optional[Iterable[Token]] = None,
        key: Optional[Key] = None,
        sketch: Optional[AnySketch] = None,
        k: int = 10,
        level: float = 0.95,
        exact: bool = False,
    ) -> list[Hit]: ...
    def hamming(
        self,
        *,
        text: Optional[str] = None,
        tokens: Optional[Iterable[Token]] = None,
        key: Optional[Key] = None,
        sketch: Optional[AnySketch] = None,
        radius: int = 3,
    ) -> list[Hit]: ...
    def explain(
        self,
        *,
        text: Optional[str] = None,
        tokens: Optional[Iterable[Token]] = None,
        key: Optional[Key] = None,
        sketch: Optional[AnySketch] = None,
        threshold: Optional[float] = None,
        k: Optional[int] = None,
        radius: Optional[int] = None,
        analyze: bool = False,
    ) -> str: ...
    def estimate(self, a: Key, b: Key, level: float = 0.95) -> Estimate: ...
    def dedup(
        self,
        threshold: Optional[float] = None,
        *,
        radius: Optional[int] = None,
        level: float = 0.95,
        exact: bool = False,
        threads: Optional[int] = None,
        clustering: Literal["components", "representative"] = "components",
    ) -> DedupResult: ...
    def stats(self) -> dict[str, Any]: ...
    def verify(self) -> dict[str, Any]: ...
    def compact(self) -> dict[str, int]: ...

class Database:
    path: os.PathLike[str]
    closed: bool
    def create_collection(
        self,
        name: str,
        kind: str = "minhash",
        k: int = 128,
        bits: Optional[int] = None,
        seed: int = ...,
        *,
        lsh: Optional[float] = None,
        bands: Optional[int] = None,
        rows: Optional[int] = None,
        simhash_radius: Optional[int] = None,
        shingle: Optional[int] = None,
        ngram: Optional[int] = None,
        token_seed: int = 0,
        recipe: Optional[str] = None,
        exact_shingles: Optional[bool] = None,
        exact: Optional[bool] = None,
        family: Optional[str] = None,
    ) -> Collection: ...
    def collection(self, name: str) -> Collection: ...
    def __getitem__(self, name: str) -> Collection: ...
    def __contains__(self, name: str) -> bool: ...
    def collections(self) -> list[str]: ...
    def drop_collection(self, name: str) -> None: ...
    def compact(self) -> dict[str, int]: ...
    def verify(self) -> dict[str, Any]: ...
    def stats(self) -> dict[str, Any]:
        """``path``, ``file_bytes``, ``collections`` (each ``Collection.stats()``) and ``caches``."""
        ...
    def cache_stats(self) -> dict[str, Any]:
        """Each cache's budget and held bytes now: ``page_cache_budget``, ``page_cache_held``,
        ``probe_cache_budget``, ``probe_cache_held``, ``snapshot_kept``, ``snapshot_memo_entries``
        (the numbers of the CLI's ``stats`` and the Rust ``Database::cache_stats``)."""
        ...
    def set_probe_cache_budget(self, bytes: int) -> None:
        """Sets the probe cache budget (0 keeps nothing; below what is held, all is let go)."""
        ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Database: ...
    def __exit__(self, *args: object) -> bool: ...

class _ArrowArray:
    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]: ...
    def __len__(self) -> int: ...

def signature_width(kind: str, k: int, bits: Optional[int], seed: int, recipe: Optional[str] = None, family: Optional[str] = None) -> int: ...
def arrow_sketch(chunks: list[Any], kind: str, k: int, bits: Optional[int], seed: int, shingle: Optional[int], ngram: Optional[int], token_seed: int, on_error: str, recipe: Optional[str] = None, family: Optional[str] = None) -> _ArrowArray: ...
def arrow_sketch_tokens(chunks: list[Any], kind: str, k: int, bits: Optional[int], seed: int, token_seed: int, on_error: str, recipe: Optional[str] = None, family: Optional[str] = None) -> _ArrowArray: ...
def arrow_band_keys(chunks: list[Any], kind: str, k: int, bits: Optional[int], seed: int, threshold: Optional[float], bands: Optional[int], rows: Optional[int], signed: bool, recipe: Optional[str] = None, key_bits: int = 32, family: Optional[str] = None) -> _ArrowArray: ...
def arrow_estimate(a: list[Any], b: list[Any], kind: str, k: int, bits: Optional[int], seed: int, level: float, recipe: Optional[str] = None, family: Optional[str] = None) -> _ArrowArray: ...
def _time_query_keys(collection: Collection, keys: list[Key], threshold: float, level: float = 0.95) -> tuple[float, int]: ...
