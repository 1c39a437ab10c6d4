"""The error the Spark pipeline raises for bad input or settings."""

from __future__ import annotations


class SparkDedupError(ValueError):
    """Bad input or settings of the Spark pipeline: the message names what and where (the
    input path, the column, example ids), so no Java stack trace has to be read."""
