#!/usr/bin/env bash
# `pip install` of the built package into a fresh venv that sees the system's
# site packages (NumPy), offline (--no-index --no-build-isolation), then the
# package imported from outside the build tree.
#   pip_install.sh PYTHON BUILD_PYTHON_DIR
set -euo pipefail
python=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/src"  # pip builds in place: keep build/python clean
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
"$python" -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --no-index --no-build-isolation --no-deps "$tmp/src"
cd "$tmp"
"$tmp/venv/bin/python" - <<'PY'
import numpy as np
import softcheck
assert softcheck.__file__.startswith(__import__("sys").prefix), softcheck.__file__
y = softcheck.oracle(np.array([0.0, np.log(2.0)], np.float32), dtype="f32")
assert y.dtype == np.float32 and list(y) == [np.float32(1 / 3), np.float32(2 / 3)], y
assert softcheck.check(np.array([0.0, 0.0]), np.array([0.5, 0.5])).held
print("pip_install: installed", softcheck.__version__, "at", softcheck.__file__)
PY
