"""Wall time and shuffle bytes per pipeline stage.

Each stage runs under its own Spark job group; shuffle bytes are read from the Spark UI's
REST API (``/api/v1``) when the UI is on, and are ``None`` otherwise."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
from typing import Iterator, Optional

from pyspark.sql import SparkSession


class StageClock:
    """Times named stages and, at the end, collects their shuffle bytes."""

    def __init__(self, spark: SparkSession, prefix: str = "sketchdb"):
        self.spark = spark
        self.prefix = f"{prefix}-{int(time.time() * 1000)}"
        self.seconds: dict[str, float] = {}
        self.order: list[str] = []

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        sc = self.spark.sparkContext
        sc.setJobGroup(f"{self.prefix}:{name}", f"sketchdb.spark {name}")
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            if name not in self.order:
                self.order.append(name)
            sc.setLocalProperty("spark.jobGroup.id", None)

    def shuffle_bytes(self) -> Optional[dict[str, dict[str, int]]]:
        """Per stage: shuffle bytes written and read, input and output bytes (None without the UI)."""
        sc = self.spark.sparkContext
        url = sc.uiWebUrl
        if not url:
            return None
        base = f"{url}/api/v1/applications/{sc.applicationId}"
        try:
            # The UI's listener is asynchronous: wait until every job of ours has ended.
            for _ in range(50):
                jobs = _get(f"{base}/jobs")
                mine = [j for j in jobs if str(j.get("jobGroup", "")).startswith(self.prefix)]
                if all(j.get("status") != "RUNNING" for j in mine):
                    break
                time.sleep(0.1)
            stages = {(s["stageId"], s["attemptId"]): s for s in _get(f"{base}/stages")}
        except OSError:
            return None
        out: dict[str, dict[str, int]] = {}
        for j in mine:
            name = str(j["jobGroup"]).split(":", 1)[1]
            acc = out.setdefault(
                name, {"shuffle_write_bytes": 0, "shuffle_read_bytes": 0, "input_bytes": 0, "output_bytes": 0}
            )
            for sid in j.get("stageIds", []):
                for (stage_id, _), s in stages.items():
                    if stage_id == sid and s.get("status") == "COMPLETE":
                        acc["shuffle_write_bytes"] += int(s.get("shuffleWriteBytes", 0))
                        acc["shuffle_read_bytes"] += int(s.get("shuffleReadBytes", 0))
                        acc["input_bytes"] += int(s.get("inputBytes", 0))
                        acc["output_bytes"] += int(s.get("outputBytes", 0))
        return out


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())
