#!/usr/bin/env bash
# scripts/check-deps.sh on fake build trees: a file of a package outside the
# allowed closure fails and names the package, the same file passes with
# bootstrap's list, a file in no package fails unless it is in the build tree
# or the CUDA toolkit, depfiles and link lines are read, and a file read only
# through another package's OPTIONAL include does not fail.
#   check_deps_test.sh path/to/check-deps.sh
set -uo pipefail
check=${1:?usage: check_deps_test.sh path/to/check-deps.sh}
bootstrap=$(dirname "$check")/bootstrap.sh
command -v dpkg-query >/dev/null || { echo "SKIP: no dpkg-query (not Debian)"; exit 77; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run EXPECTED_STATUS args...: runs the check, keeps its output in $out.
run() {
  local want=$1; shift
  out=$("$check" "$@" 2>&1); local got=$?
  [[ $got == "$want" ]] || fail "check-deps $* exited $got, expected $want; output:"$'\n'"$out"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A header and the package config of libfmt-dev (the build needs it, so
# bootstrap installed it).
fmt_header=/usr/include/fmt/core.h
fmt_config=$(dpkg-query -L libfmt-dev 2>/dev/null | grep '/fmt-config\.cmake$' | head -1)
[[ -f $fmt_header && -n $fmt_config ]] || { echo "FAIL: libfmt-dev is not installed (scripts/bootstrap.sh)"; exit 1; }

mkdir -p "$tmp/build"
cat > "$tmp/build/CMakeCache.txt" <<CACHE
# A fake cache: what a find_path, a find_package and a missing find_library leave.
FMT_INCLUDE:PATH=$fmt_header
fmt_DIR:PATH=$(dirname "$fmt_config")
FMT_LIBRARY_DEBUG:FILEPATH=FMT_LIBRARY_DEBUG-NOTFOUND
CMAKE_INSTALL_PREFIX:PATH=/usr/local
CACHE
cache=(--cache "$tmp/build/CMakeCache.txt" --cache-only "$tmp/build")

# (1) a list whose closure lacks libfmt-dev: fails, names it and the hint.
run 1 "${cache[@]}" --packages "g++ cmake"
grep -q '^  libfmt-dev: e.g. ' <<<"$out" || fail "(1) libfmt-dev not named: $out"
grep -q 'installed by hand? add it to scripts/bootstrap.sh' <<<"$out" || fail "(1) no hint: $out"

# (2) bootstrap's own list (which has libfmt-dev): passes, one summary line.
run 0 "${cache[@]}"
[[ $(wc -l <<<"$out") == 1 && $out == *"files from "*" packages, all in bootstrap's closure"* ]] ||
  fail "(2) not the one-line summary: $out"

# (3) a file in no package, outside the source and build trees (/tmp is
# neither): fails and names it.
stray=$tmp/stray.h
echo '// in no package' > "$stray"
cp "$tmp/build/CMakeCache.txt" "$tmp/build/stray.txt"
echo "STRAY_INCLUDE:PATH=$stray" >> "$tmp/build/stray.txt"
run 1 --cache "$tmp/build/stray.txt" --cache-only "$tmp/build"
grep -q "in no Debian package: $stray, from CMakeCache.txt: STRAY_INCLUDE" <<<"$out" || fail "(3) $stray not named: $out"

# (4) ... but fine inside the build tree, and reported, not failed, in the CUDA
# toolkit of the cache's CMAKE_CUDA_COMPILER.
mkdir -p "$tmp/cuda/bin" "$tmp/cuda/include"
echo '#!/bin/sh' > "$tmp/cuda/bin/nvcc"
echo '// toolkit header' > "$tmp/cuda/include/cuda_runtime.h"
echo '// generated' > "$tmp/build/generated.h"
cp "$tmp/build/CMakeCache.txt" "$tmp/build/cuda.txt"
cat >> "$tmp/build/cuda.txt" <<CACHE
GENERATED_INCLUDE:PATH=$tmp/build/generated.h
CMAKE_CUDA_COMPILER:FILEPATH=$tmp/cuda/bin/nvcc
CUDAToolkit_INCLUDE_DIR:PATH=$tmp/cuda/include/cuda_runtime.h
CACHE
run 0 --cache "$tmp/build/cuda.txt" --cache-only "$tmp/build"
[[ $out == *"; 2 files optional, outside apt: CUDA toolkit ($tmp/cuda)"* ]] || fail "(4) CUDA not reported: $out"

# (5) without --cache-only: the compilers' depfiles and the link lines. A
# header in no package through a depfile, -lfmt through a link line.
mkdir -p "$tmp/build/CMakeFiles/t.dir"
printf 'CMakeFiles/t.dir/t.cpp.o: /work/t.cpp \\\n %s \\\n %s\n' "$stray" "$tmp/build/generated.h" \
  > "$tmp/build/CMakeFiles/t.dir/t.cpp.o.d"
echo "/usr/bin/c++ -O2 CMakeFiles/t.dir/t.cpp.o -o t -lfmt" > "$tmp/build/CMakeFiles/t.dir/link.txt"
echo "CMAKE_BUILD_TYPE:STRING=Release" > "$tmp/build/plain.txt"  # nothing of fmt in this cache
run 1 --cache "$tmp/build/plain.txt" "$tmp/build"
grep -q "in no Debian package: $stray, from CMakeFiles/t.dir/t.cpp.o.d" <<<"$out" || fail "(5) depfile not read: $out"
run 1 --cache "$tmp/build/plain.txt" --packages "g++ cmake" "$tmp/build"
grep -q "^  libfmt-dev: e.g. /.*/libfmt\.so, from CMakeFiles/t.dir/link.txt: -lfmt$" <<<"$out" ||
  fail "(5) -lfmt not resolved to libfmt-dev's libfmt.so: $out"

# (6) a file the configure read only through an OPTIONAL include of an allowed
# package's config file (Debian's GTestConfig.cmake includes libgmock-dev's
# GMockTargets.cmake OPTIONAL) is reported, not failed; a gmock header in a
# depfile is a real use and fails. Only where libgmock-dev is installed.
gtest_config=$(dpkg-query -L libgtest-dev 2>/dev/null | grep '/GTestConfig\.cmake$' | head -1)
gmock_targets=$(dpkg-query -L libgmock-dev 2>/dev/null | grep '/GMockTargets\.cmake$' | head -1)
if [[ -n $gtest_config && -n $gmock_targets && -f /usr/include/gmock/gmock.h ]]; then
  mkdir -p "$tmp/gm/CMakeFiles/g.dir"
  echo "CMAKE_BUILD_TYPE:STRING=Release" > "$tmp/gm/CMakeCache.txt"
  printf 'set(CMAKE_MAKEFILE_DEPENDS\n  "CMakeCache.txt"\n  "%s"\n  "%s"\n  )\n' "$gtest_config" "$gmock_targets" \
    > "$tmp/gm/CMakeFiles/Makefile.cmake"
  echo "CMakeFiles/g.dir/g.cpp.o: /work/g.cpp" > "$tmp/gm/CMakeFiles/g.dir/g.cpp.o.d"
  run 0 --packages "libgtest-dev" "$tmp/gm"
  [[ $out == *"files of libgmock-dev read but not needed (included OPTIONAL by GTestConfig.cmake)"* ]] ||
    fail "(6) the OPTIONAL include not reported: $out"
  echo "CMakeFiles/g.dir/g.cpp.o: /work/g.cpp /usr/include/gmock/gmock.h" > "$tmp/gm/CMakeFiles/g.dir/g.cpp.o.d"
  run 1 --packages "libgtest-dev" "$tmp/gm"
  grep -q '^  libgmock-dev: e.g. ' <<<"$out" || fail "(6) a used gmock header not failed: $out"
else
  echo "note: (6) skipped: libgmock-dev is not installed here"
fi

# (7) usage errors.
run 2 --bogus "$tmp/build"
run 2 --cache "$tmp/none/CMakeCache.txt" "$tmp/build"
run 2 --packages

# (8) bootstrap prints its list, one package a line, and installs nothing.
list=$(bash "$bootstrap" --print-packages) || fail "(8) bootstrap.sh --print-packages failed"
grep -qx libfmt-dev <<<"$list" && grep -qx ocl-icd-opencl-dev <<<"$list" || fail "(8) list lacks packages: $list"
grep -q '[[:space:]#]' <<<"$list" && fail "(8) not one bare name a line: $list"

((failures == 0)) && echo "check-deps: all cases passed"
exit $((failures > 0))
