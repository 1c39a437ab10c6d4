"""Near-duplicate detection at Spark scale with sketchdb's kernels, and its result as a
sketchdb file for serving.

The pipeline (:func:`dedup`) reads Parquet or JSON lines, sketches each partition with the
Arrow kernel inside ``mapInArrow``, groups documents by (band, band key) with a cap on bucket
sizes, verifies every candidate pair with sketchdb's estimator (keeping those at or above
the threshold, with their confidence intervals), finds connected components with
large-star / small-star in DataFrame operations, and writes the clusters, the kept documents,
the removed ids, the signatures and a summary. Its clusters are those of ``sketchdb dedup``
on the same documents and parameters.

>>> from pyspark.sql import SparkSession                      # doctest: +SKIP
>>> from sketchdb.spark import dedup, SketchSpec, DedupOptions  # doctest: +SKIP
>>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
>>> summary = dedup(spark, "docs.parquet", "out/", SketchSpec(threshold=0.8))  # doctest: +SKIP

From the shell: ``python -m sketchdb.spark dedup INPUT OUTPUT --threshold 0.8``.
Needs ``pyspark`` (and Java 17), which the ``sketchdb`` package itself does not require.
"""

from ._errors import SparkDedupError
from ._kernels import Kernels, SketchSpec, default_banding
from ._read import read_documents
from .components import ComponentsResult, connected_components
from .pipeline import DedupOptions, dedup
from .serve import dedup_against, import_signatures, load_spec
from .session import local_session

__all__ = [
    "ComponentsResult",
    "DedupOptions",
    "Kernels",
    "SketchSpec",
    "SparkDedupError",
    "connected_components",
    "dedup",
    "dedup_against",
    "default_banding",
    "import_signatures",
    "load_spec",
    "local_session",
    "read_documents",
]
