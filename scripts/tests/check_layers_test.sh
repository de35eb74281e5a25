#!/usr/bin/env bash
# check-layers.sh on fake trees: a clean one passes, an impls source that
# includes the oracle (a layer it must not see) fails and is named.
set -euo pipefail
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mk() { mkdir -p "$(dirname "$tmp/$1")"; printf '%s\n' "$2" > "$tmp/$1"; }
mk core/include/softcheck/format.hpp '#pragma once'
mk oracle/include/softcheck/oracle.hpp '#include "softcheck/format.hpp"'
mk impls/src/kernel.cpp '#include "softcheck/format.hpp"'
mk impls/tests/kernel_test.cpp '#include "softcheck/oracle.hpp"'
mk impls/tools/sweep.cpp '#include "softcheck/oracle.hpp"'
bash "$check" "$tmp" > "$tmp/out" 2>&1 || { cat "$tmp/out"; echo "FAIL: clean tree rejected"; exit 1; }
grep -q '4 library files\|3 library files' "$tmp/out" || { cat "$tmp/out"; echo "FAIL: count"; exit 1; }
mk impls/src/bad.cpp '  #  include <softcheck/oracle.hpp>'
if bash "$check" "$tmp" > "$tmp/out" 2>&1; then cat "$tmp/out"; echo "FAIL: upward include accepted"; exit 1; fi
grep -q 'impls/src/bad.cpp (impls) includes softcheck/oracle.hpp from oracle' "$tmp/out" ||
  { cat "$tmp/out"; echo "FAIL: not named"; exit 1; }
rm "$tmp/impls/src/bad.cpp"
mk core/src/up.cpp '#include "softcheck/oracle.hpp"'
if bash "$check" "$tmp" > "$tmp/out" 2>&1; then echo "FAIL: core including oracle accepted"; exit 1; fi
echo "check_layers_test: ok"
