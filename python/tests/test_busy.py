"""`sketchdb.open(..., busy_timeout=)`: a second writer beside a writer in another process
fails at once with 0, waits out a short timeout, and succeeds once the holder closes."""

import subprocess
import sys
import threading
import time

import pytest

import sketchdb

# Holds the database open for writing until a line arrives on stdin, then closes it and says so.
HOLDER = """
import sys, sketchdb
db = sketchdb.open(sys.argv[1])
db["c"].insert("held", text="written by the holder before it releases the file")
print("held", flush=True)
sys.stdin.readline()
db.close()
print("released", flush=True)
sys.stdin.readline()
"""


class Holder:
    def __init__(self, path):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout.readline().strip() == "held"

    def release(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def end(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture
def db_path(tmp_path):
    path = tmp_path / "busy.sketchdb"
    with sketchdb.open(path) as db:
        db.create_collection("c")
    return path


def test_zero_fails_at_once_naming_file_and_holder(db_path):
    h = Holder(db_path)
    try:
        start = time.monotonic()
        with pytest.raises(sketchdb.BusyError) as e:
            sketchdb.open(db_path, busy_timeout=0)
        elapsed = time.monotonic() - start
        msg = str(e.value)
        assert str(db_path) in msg and "locked" in msg
        if sys.platform.startswith("linux"):
            assert f"process {h.proc.pid}" in msg
        # 0 is no wait: far below the 5 s default and the 1 s wait measured below.
        assert elapsed < 1.0, elapsed
        assert h.proc.poll() is None  # the holder still holds the file
    finally:
        h.end()


def test_short_timeout_waits_then_fails(db_path):
    h = Holder(db_path)
    try:
        start = time.monotonic()
        with pytest.raises(sketchdb.BusyError, match=r"waited|locked"):
            sketchdb.open(db_path, busy_timeout=1.0)
        assert time.monotonic() - start >= 1.0
    finally:
        h.end()


def test_longer_timeout_succeeds_after_the_holder_closes(db_path):
    h = Holder(db_path)
    said = []
    try:
        # The holder releases only after this thread's open has started waiting.
        releaser = threading.Timer(0.5, lambda: said.append(h.release()))
        releaser.start()
        with sketchdb.open(db_path, busy_timeout=60) as db:
            releaser.join()
            assert said == ["released"]
            c = db["c"]
            assert "held" in c  # the holder's commit is there
            c.insert("second", text="written by the second writer once the file was free")
            assert len(c) == 2
    finally:
        h.end()
    with sketchdb.open(db_path, read_only=True) as ro:
        assert sorted(k for k in ("held", "second") if k in ro["c"]) == ["held", "second"]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_timeout_is_a_value_error(db_path, bad):
    with pytest.raises(ValueError, match="busy_timeout"):
        sketchdb.open(db_path, busy_timeout=bad)


def test_read_only_beside_a_writer_needs_no_wait(db_path):
    h = Holder(db_path)
    try:
        with sketchdb.open(db_path, read_only=True, busy_timeout=0) as ro:
            assert "held" in ro["c"]
    finally:
        h.end()
