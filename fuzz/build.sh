#!/usr/bin/env bash
# Builds the fuzz targets the OSS-Fuzz / ClusterFuzzLite way (docs/fuzzing.md):
# the compiler and flags come from $CC $CXX $CFLAGS $CXXFLAGS, the engine from
# $LIB_FUZZING_ENGINE, and everything a runner needs lands in $OUT:
#   $OUT/fuzz_<name>                     the fuzzers
#   $OUT/fuzz_<name>.dict                their dictionary (fuzz/dict/)
#   $OUT/fuzz_<name>.options             libFuzzer options (dict, max_len, schedule);
#                                        smoke.sh, planted.sh and speed.sh run with them too
#   $OUT/fuzz_<name>_seed_corpus.zip     the committed corpus (when zip or python3 exist)
#   $OUT/lib/                            shared libraries the fuzzers need beyond libc/libstdc++
#                                        (found through the fuzzers' RPATH $ORIGIN/lib)
# Every library of the project (oracle, kernels, properties, CLI) is compiled
# by $CXX with $CXXFLAGS in a separate CMake tree, $WORK/tree ($WORK defaults
# to build-fuzz-clang/), so coverage and sanitizers reach the kernels and the
# oracle. Unset variables default to a local libFuzzer build with clang-14,
# ASan and UBSan (fuzz/defaults.sh):
#   fuzz/build.sh                                   # local
#   CC=clang CXX=clang++ CXXFLAGS=... LIB_FUZZING_ENGINE=... OUT=... fuzz/build.sh
set -euo pipefail
# pwd -P: the CMake tree remembers its source directory by path and refuses
# another spelling of it, and ClusterFuzzLite's $SRC/softcheck may be a
# symlink (fuzz/tests/clusterfuzzlite_build.sh makes one): the real path keeps
# one tree for every way in (see also the `cd "$src"` below).
here=$(cd "$(dirname "$0")" && pwd -P)
src=$(dirname "$here")
# shellcheck source=fuzz/defaults.sh
source "$here/defaults.sh"

: "${CC:=$fuzz_default_CC}"
: "${CXX:=$fuzz_default_CXX}"
: "${CFLAGS:=$fuzz_default_CFLAGS}"
: "${CXXFLAGS:=$fuzz_default_CXXFLAGS}"
: "${LIB_FUZZING_ENGINE:=$fuzz_default_LIB_FUZZING_ENGINE}"
: "${OUT:=$src/build-fuzz-clang/out}"
# The local default of $WORK puts the tree where it always was
# (build-fuzz-clang/tree); the ClusterFuzzLite test sets WORK to the same
# directory, so it and fuzz/smoke.sh share the tree.
: "${WORK:=$src/build-fuzz-clang}"
build=${SOFTCHECK_FUZZ_BUILD_DIR:-$WORK/tree}
jobs=${SOFTCHECK_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
targets=(fuzz_nan_inf fuzz_differential fuzz_inputs)
# Appended to the flags above (user-set or default), as OSS-Fuzz projects may:
# no coverage feedback from third-party header code and libstdc++'s
# containers (fuzz/sancov-ignorelist.txt says what and why; ASan and UBSan
# still check that code). SOFTCHECK_FUZZ_SANCOV_IGNORELIST= (empty) turns it
# off; another path uses that list instead. Added only where $CXX accepts it.
ignorelist=${SOFTCHECK_FUZZ_SANCOV_IGNORELIST-$here/sancov-ignorelist.txt}

command -v "$CXX" >/dev/null || { echo "fuzz/build.sh: compiler '$CXX' not found (scripts/bootstrap.sh installs clang-14)" >&2; exit 2; }
mkdir -p "$OUT/lib" "$(dirname "$build")"
# Absolute paths, then the real source directory as the working directory:
# CMake rewrites the physical working directory to $PWD's spelling in every
# path it stores, so a caller in a symlinked $SRC/softcheck would give the
# tree another source path (and CMake would refuse it the next time).
OUT=$(cd "$OUT" && pwd -P)
build=$(cd "$(dirname "$build")" && pwd -P)/$(basename "$build")
[[ -z $ignorelist || $ignorelist == /* ]] || ignorelist=$PWD/$ignorelist
cd "$src"
# One build of a tree at a time: the ClusterFuzzLite test and the smoke share
# it, and two concurrent `cmake --build` runs in one tree corrupt it.
if command -v flock >/dev/null; then
  exec 9>"$build.lock"
  flock -n 9 || { echo "fuzz/build.sh: waiting for another build of $build" >&2; flock 9; }
fi

if [[ -n $ignorelist ]]; then
  if echo 'int main() { return 0; }' | "$CXX" -x c++ -fsanitize=fuzzer-no-link \
       -fsanitize-coverage-ignorelist="$ignorelist" -c -o /dev/null - 2>/dev/null; then
    CFLAGS+=" -fsanitize-coverage-ignorelist=$ignorelist"
    CXXFLAGS+=" -fsanitize-coverage-ignorelist=$ignorelist"
  else
    echo "fuzz/build.sh: $CXX does not take -fsanitize-coverage-ignorelist; building without $ignorelist" >&2
  fi
fi

# No OpenMP: the fuzzers call each kernel on one thread anyway, and clang's
# runtime (libomp-14-dev) is not among bootstrap's packages.
# '$ORIGIN/lib' stays literal: the loader expands it to the fuzzer's directory.
# shellcheck disable=SC2016
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DCMAKE_C_FLAGS_RELEASE="" -DCMAKE_CXX_FLAGS_RELEASE="-DNDEBUG" \
  -DCMAKE_BUILD_RPATH='$ORIGIN/lib' \
  -DSOFTCHECK_ENABLE_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON \
  -DSOFTCHECK_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; exit 1; }
# The compiler reads the ignore list but CMake does not track it: rebuild
# everything when its contents change.
if [[ -n $ignorelist && $CXXFLAGS == *-fsanitize-coverage-ignorelist=* ]]; then
  sum=$(cksum <"$ignorelist")
  if [[ $sum != "$(cat "$build/sancov-ignorelist.cksum" 2>/dev/null)" ]]; then
    cmake --build "$build" --target clean
    echo "$sum" >"$build/sancov-ignorelist.cksum"
  fi
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

# Shared libraries outside the base system (MPFR, GMP, fmt, ...), for runners
# that lack them (OSS-Fuzz's base-runner image).
copy_libs() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    [[ $(dirname "$(readlink -f "$lib")") == "$(readlink -f "$OUT/lib")" ]] && continue  # copied already
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
      *) cp -L "$lib" "$OUT/lib/" ;;
    esac
  done
}

zip_corpus() {  # zip_corpus TARGET: $OUT/TARGET_seed_corpus.zip from fuzz/corpus/TARGET
  local dir="$here/corpus/$1" zipfile="$OUT/$1_seed_corpus.zip"
  rm -f "$zipfile"
  if command -v zip >/dev/null; then
    (cd "$dir" && zip -q -j "$zipfile" ./*)
  elif command -v python3 >/dev/null; then
    python3 -c 'import sys, zipfile, pathlib
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for p in sorted(pathlib.Path(sys.argv[2]).iterdir()): z.write(p, p.name)' "$zipfile" "$dir"
  else
    echo "fuzz/build.sh: neither zip nor python3: no $1_seed_corpus.zip" >&2
  fi
}

for t in "${targets[@]}"; do
  cp "$build/fuzz/$t" "$OUT/$t"
  copy_libs "$OUT/$t"
  # libFuzzer's entropic schedule scans its list of rare features for every
  # feature an input hits; that list only shrinks once one of them has been
  # hit 255 times, so early on it holds every feature (perf: 13 % of
  # fuzz_nan_inf, 35 % of fuzz_inputs with its ~17,000 CLI and JSON features).
  # The numeric targets reach the same cov and ft after 40,000 runs without it
  # (docs/fuzzing.md, "Speed"), so they turn it off; fuzz_inputs keeps it
  # (without it: about 0.5 % fewer edges after the same runs) and prunes the
  # list from 64 hits on: about 1.3x the runs per CPU second, coverage within
  # the spread of repetitions (measured, with its caveat, in docs/fuzzing.md).
  # Since the sancov ignore list (change 7) fuzz_inputs has ~5,000 features,
  # the bookkeeping is ~4 % of it, and -entropic=0 gained nothing measurable
  # while finding fewer features: the threshold stays.
  case $t in
    fuzz_inputs) dict=inputs.dict schedule='entropic_feature_frequency_threshold = 64' ;;
    *) dict=floats.dict schedule='entropic = 0' ;;
  esac
  cp "$here/dict/$dict" "$OUT/$t.dict"
  printf '[libfuzzer]\ndict = %s.dict\nmax_len = 4096\n%s\n' "$t" "$schedule" >"$OUT/$t.options"
  zip_corpus "$t"
done
echo "fuzz/build.sh: ${targets[*]} in $OUT"
