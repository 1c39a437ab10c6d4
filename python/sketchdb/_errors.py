"""The exceptions sketchdb raises. Messages are the Rust library's, unchanged."""


class Error(Exception):
    """Any error from sketchdb's database or sketches."""


class CorruptError(Error):
    """The file (or a record or index in it) is damaged or not a sketchdb database."""


class IncompatibleError(Error):
    """Sketches (or a sketch and a collection) have different parameters, or the file has a
    format version this build does not read."""


class BusyError(Error):
    """The operation needs the database to itself (or the file is open elsewhere)."""


class ReadOnlyError(Error):
    """A write through a database opened with ``read_only=True``."""


class NotFoundError(Error, KeyError):
    """A missing key or collection. Also a ``KeyError``, so ``db[name]`` and ``coll[key]``
    behave as mappings do."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message as is
        return str(self.args[0]) if self.args else ""
