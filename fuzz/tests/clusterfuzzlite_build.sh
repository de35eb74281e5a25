#!/usr/bin/env bash
# ClusterFuzzLite's build step, run here (ctest fuzz.clusterfuzzlite_build,
# docs/fuzzing.md): .clusterfuzzlite/build.sh, copied to $SRC/build.sh and run
# from $SRC/softcheck as OSS-Fuzz's `compile` runs it, with the OSS-Fuzz
# variables ($CC $CXX $CFLAGS $CXXFLAGS $LIB_FUZZING_ENGINE $SANITIZER $SRC
# $OUT $WORK) and a fresh temporary $OUT. Then what a runner needs: each
# fuzzer with its .options, .dict and _seed_corpus.zip in $OUT, its shared
# libraries found in $OUT/lib (none from the build machine beyond the C/C++
# runtime), and each fuzzer, run from $OUT with its .options for a few
# seconds on its unzipped seed corpus, exits 0 without a crash.
#   clusterfuzzlite_build.sh
# Exit 77 (ctest: skipped, never passed) when clang-14 cannot link a libFuzzer
# target. Environment: CFL_FUZZ_SECONDS (default 5) per fuzzer;
# SOFTCHECK_CFL_WORK, the $WORK to build in (default build-fuzz-clang/).
#
# One clang build for CI: the project takes about 260 s to compile with clang
# on 2 cores, and fuzz/smoke.sh (run by .ci/run after ctest) needs the same
# build. So $WORK is fuzz/build.sh's local default (build-fuzz-clang/, tree
# build-fuzz-clang/tree) and the compiler and flags are fuzz/build.sh's
# defaults (fuzz/defaults.sh: clang-14, ASan + UBSan + fuzzer-no-link),
# passed as the OSS-Fuzz variables: OSS-Fuzz's own address build differs
# only in leaving UBSan out, and its flags would make a second tree to
# compile. The smoke then finds the tree built and only copies the fuzzers.
# What this test shares with the smoke is the tree, never $OUT.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd -P)
# shellcheck source=fuzz/defaults.sh
source "$src/fuzz/defaults.sh"
# shellcheck source=fuzz/options.sh
source "$src/fuzz/options.sh"
seconds=${CFL_FUZZ_SECONDS:-5}
targets=()
for f in "$src"/fuzz/targets/*.cpp; do targets+=("$(basename "$f" .cpp)"); done

# 77 means skipped to ctest, and it is also libFuzzer's exit status for a
# crash: only skip() may exit with it; any other 77 is a failure.
skipping=false
tmp=$(mktemp -d)
trap 'rc=$?; rm -rf "$tmp"; if [[ $rc -eq 77 ]] && ! $skipping; then exit 1; fi' EXIT
skip() { echo "SKIPPED: $*"; skipping=true; exit 77; }
ulimit -c 0

# Skipped, and said so, where the fuzzers cannot be built at all.
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$tmp/probe.cpp"
command -v "$fuzz_default_CXX" >/dev/null ||
  skip "$fuzz_default_CXX not found (scripts/bootstrap.sh installs clang-14 libclang-rt-14-dev)"
"$fuzz_default_CXX" -fsanitize=fuzzer,address "$tmp/probe.cpp" -o "$tmp/probe" >"$tmp/probe.log" 2>&1 ||
  skip "$fuzz_default_CXX cannot link a libFuzzer target (install libclang-rt-14-dev): $(cat "$tmp/probe.log")"

pass=0 failures=0
ok() { pass=$((pass + 1)); }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# $SRC holds the sources as softcheck (a symlink to this checkout: build.sh
# resolves it, so the CMake tree is the smoke's) and the build script as
# build.sh, as the Dockerfile's COPY lines lay them out.
export SRC=$tmp/src OUT=$tmp/out WORK=${SOFTCHECK_CFL_WORK:-$src/build-fuzz-clang}
mkdir -p "$SRC" "$OUT" "$WORK"
ln -s "$src" "$SRC/softcheck"
cp "$src/.clusterfuzzlite/build.sh" "$SRC/build.sh"
arch=$(uname -m)
export CC=$fuzz_default_CC CXX=$fuzz_default_CXX CFLAGS=$fuzz_default_CFLAGS \
  CXXFLAGS=$fuzz_default_CXXFLAGS LIB_FUZZING_ENGINE=$fuzz_default_LIB_FUZZING_ENGINE \
  SANITIZER=address FUZZING_ENGINE=libfuzzer FUZZING_LANGUAGE=c++ ARCHITECTURE=$arch
unset SOFTCHECK_FUZZ_BUILD_DIR SOFTCHECK_FUZZ_SANCOV_IGNORELIST  # the defaults, as under ClusterFuzzLite

start=$(date +%s)
if (cd "$SRC/softcheck" && bash -eux "$SRC/build.sh") >"$tmp/build.log" 2>&1; then
  echo "build: $(( $(date +%s) - start )) s (tree $WORK/tree)"
  ok
else
  fail "build: .clusterfuzzlite/build.sh exited non-zero after $(( $(date +%s) - start )) s; the end of its log:"
  tail -60 "$tmp/build.log"
  echo "${pass} passed, ${failures} failed"
  exit 1
fi

# unpack ZIP DIR: python3 when unzip is missing (build.sh zips with either).
unpack() {
  if command -v unzip >/dev/null; then
    unzip -q -o "$1" -d "$2"
  else
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
  fi
}

# What a runner gets: $OUT alone. Per target, the files; the dictionary its
# .options names; the seed corpus holding the committed one; and every shared
# library ldd resolves outside the C/C++ runtime coming from $OUT/lib (a
# library resolved from the build machine's /usr/lib would be missing on the
# runner image).
runtime='^(linux-vdso|ld-linux|libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so'
for t in "${targets[@]}"; do
  missing=()
  for f in "$t" "$t.options" "$t.dict" "${t}_seed_corpus.zip"; do [[ -s $OUT/$f ]] || missing+=("$f"); done
  if ((${#missing[@]})); then fail "$t: not in \$OUT: ${missing[*]}"; continue; fi
  if [[ -x $OUT/$t ]]; then ok; else fail "$t: \$OUT/$t is not executable"; fi

  mapfile -t opts < <(libfuzzer_options "$OUT" "$t")
  dict=$(printf '%s\n' "${opts[@]}" | sed -n 's/^-dict=//p')
  if [[ -n $dict && -s $dict ]]; then ok; else fail "$t: $t.options names no dictionary in \$OUT (${dict:-none})"; fi

  mkdir -p "$tmp/seeds/$t"
  unpack "$OUT/${t}_seed_corpus.zip" "$tmp/seeds/$t"
  want=$(find "$src/fuzz/corpus/$t" -type f | wc -l) got=$(find "$tmp/seeds/$t" -type f | wc -l)
  if [[ $got -eq $want && $got -gt 0 ]]; then ok; else fail "$t: ${t}_seed_corpus.zip has $got files, fuzz/corpus/$t $want"; fi

  ldd "$OUT/$t" >"$tmp/$t.ldd" 2>&1 || true
  bad=$(awk -v out="$(readlink -f "$OUT/lib")" -v rt="$runtime" '
    /not found/ {print "  " $0; next}
    $2 == "=>" && $3 ~ /^\// && $1 !~ rt {
      real = ""; cmd = "readlink -f " $3; cmd | getline real; close(cmd)
      if (index(real, out "/") != 1) print "  " $1 " => " $3 " (not from $OUT/lib)"
    }' "$tmp/$t.ldd")
  if [[ -z $bad ]]; then ok; else fail "$t: shared libraries a runner would lack:"; echo "$bad"; fi
done

# Each fuzzer from $OUT for $seconds, all at once, as a runner would start
# it: its .options flags, new inputs to a scratch corpus, the seeds second.
# LD_LIBRARY_PATH unset: $OUT/lib must be found through the fuzzers' RPATH.
declare -A pid
for t in "${targets[@]}"; do
  [[ -x $OUT/$t && -d $tmp/seeds/$t ]] || continue
  mapfile -t opts < <(libfuzzer_options "$OUT" "$t")
  mkdir -p "$tmp/run/$t/new"
  (cd "$tmp/run/$t" && exec env -u LD_LIBRARY_PATH ASAN_OPTIONS=detect_leaks=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$OUT/$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 "${opts[@]}" \
     -artifact_prefix="$tmp/run/$t/" -print_final_stats=1 "$tmp/run/$t/new" "$tmp/seeds/$t") \
    >"$tmp/run/$t.log" 2>&1 &
  pid[$t]=$!
done
for t in "${!pid[@]}"; do
  rc=0; wait "${pid[$t]}" || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/run/$t.log")
  artifacts=$(find "$tmp/run/$t" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                -o -name 'oom-*' -o -name 'slow-unit-*' \) -printf '%f ')
  if [[ $rc -ne 0 || -n $artifacts ]]; then
    fail "$t: exit $rc from \$OUT/$t ${artifacts:+(artifacts: $artifacts)}; the end of its log:"
    tail -40 "$tmp/run/$t.log"
  elif [[ -z $runs || $runs -eq 0 ]]; then
    fail "$t: exited 0 without running an input; the end of its log:"
    tail -20 "$tmp/run/$t.log"
  else
    echo "$t: $runs runs in ${seconds} s, $(grep -o 'cov: [0-9]*' "$tmp/run/$t.log" | tail -1)"
    ok
  fi
done

echo "clusterfuzzlite_build: $pass passed, $failures failed"
[[ $failures -eq 0 ]]
