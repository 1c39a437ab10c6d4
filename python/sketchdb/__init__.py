"""sketchdb: an embedded, persistent database of similarity sketches with error bars.

Sketches (``MinHash``, ``BBitMinHash``, ``OPH``, ``SimHash``) hash tokens exactly as the Rust
library and the ``sketchdb`` command line do: a ``str`` or ``bytes`` token is hashed with
xxh3-64 and the token seed (0 by default), an ``int`` is taken as an already hashed u64, and
text is cut into word shingles (5 words by default) or character n-grams.

>>> import sketchdb
>>> a = sketchdb.MinHash(); a.update_text("the quick brown fox jumps over the lazy dog")
>>> b = sketchdb.MinHash(); b.update_text("the quick brown fox jumped over the lazy dog")
>>> 0.0 <= a.jaccard(b) <= 1.0
True

A database file holds named collections::

    with sketchdb.open("docs.sketchdb") as db:
        docs = db.create_collection("docs", kind="minhash", lsh=0.8)
        docs.insert_many(["a", "b"], ["some text here", "some other text here"])
        hits = docs.query(text="some text here", threshold=0.5)
"""

from . import arrow
from ._errors import BusyError, CorruptError, Error, IncompatibleError, NotFoundError, ReadOnlyError
from ._sketchdb import (
    DEFAULT_SEED,
    MAX_KEY_LEN,
    OPH,
    BBitMinHash,
    Cluster,
    Collection,
    Database,
    DedupResult,
    Estimate,
    Hit,
    InsertReport,
    MinHash,
    Reject,
    SimHash,
    __version__,
    open,
    sketch_many,
    token_hash,
    tokenize,
)

__all__ = [
    "DEFAULT_SEED",
    "MAX_KEY_LEN",
    "OPH",
    "BBitMinHash",
    "BusyError",
    "Cluster",
    "Collection",
    "CorruptError",
    "Database",
    "DedupResult",
    "Error",
    "Estimate",
    "Hit",
    "IncompatibleError",
    "InsertReport",
    "MinHash",
    "NotFoundError",
    "ReadOnlyError",
    "Reject",
    "SimHash",
    "__version__",
    "arrow",
    "open",
    "sketch_many",
    "token_hash",
    "tokenize",
]
