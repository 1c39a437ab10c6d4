"""A local SparkSession set up for the pipeline (tests, examples, a laptop run)."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def local_session(
    master: str = "local[2]",
    shuffle_partitions: int = 4,
    ui: bool = False,
    driver_memory: str = "2g",
) -> SparkSession:
    """A SparkSession on this machine whose Python workers run this interpreter
    (``PYSPARK_PYTHON``), with few shuffle partitions and Arrow batches of 4,096 rows. A
    session that exists already is returned as it is, with ``shuffle_partitions`` set."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("sketchdb.spark")
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "4096")
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark.sparkContext.setLogLevel("ERROR")
    return spark
