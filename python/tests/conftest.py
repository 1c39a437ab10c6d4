"""Shared fixtures: the `sketchdb` CLI binary and a small corpus."""

import json
import os
import pathlib
import random
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega red green blue cyan magenta yellow black white"
).split()


def _cli_path():
    if os.environ.get("SKETCHDB_BIN"):
        return pathlib.Path(os.environ["SKETCHDB_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("release", "debug"):
        p = target / profile / "sketchdb"
        if p.exists():
            return p
    return None


@pytest.fixture(scope="session")
def cli():
    """Runs the `sketchdb` binary (built by .ci/test or python/dev.sh) and returns stdout."""
    path = _cli_path()
    if path is None:
        pytest.fail("no sketchdb binary: build it with `cargo build --release --bin sketchdb` (or set SKETCHDB_BIN)")

    def run(*args, check=True):
        r = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"sketchdb {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
        return r

    return run


def make_corpus(n, seed=7, near=0.5):
    """n short texts; about `near` of them are small edits of an earlier one."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        if texts and rng.random() < near:
            words = rng.choice(texts).split()
            j = rng.randrange(len(words))
            words[j] = rng.choice(WORDS)
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))))
    return texts


@pytest.fixture
def corpus():
    return make_corpus(200)


def write_jsonl(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def read_export(text):
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return lines[0], {r["key"]: r for r in lines[1:]}
