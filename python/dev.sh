#!/usr/bin/env bash
# Builds the Python package into .venv at the repository root and runs its tests.
#   python/dev.sh            set up (if needed), build (release), test
#   python/dev.sh --no-test  set up and build only
# Needs python3 (>= 3.9) with venv, and cargo. The tests run the `sketchdb` CLI binary,
# built here too.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
venv="$repo/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r python/requirements-test.txt
# maturin builds into the workspace target directory (CARGO_TARGET_DIR when set).
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --release -m python/Cargo.toml
cargo build --release --bin sketchdb
if [ "${1:-}" = "--no-test" ]; then
  exit 0
fi
# pytest exits 5 when it collects no tests: that is a failure here too. Spark's Python
# workers (python/tests/test_spark*.py) run the venv's interpreter.
PYSPARK_PYTHON="$venv/bin/python" "$venv/bin/python" -m pytest -q python/tests
