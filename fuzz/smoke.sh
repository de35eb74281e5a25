#!/usr/bin/env bash
# CI fuzz smoke (docs/fuzzing.md). Builds the fuzzers with clang-14
# (-fsanitize=fuzzer,address,undefined; fuzz/build.sh), runs every target for
# FUZZ_SECONDS (default 60) at the same time, from the committed corpus (new
# inputs go to a scratch corpus, the committed one is never touched), then
# the planted regression (fuzz/planted.sh).
# A crash fails the smoke. It is minimised and saved under fuzz/artifacts/<target>/
# with its report and its `softcheck repro` line (<crash>.txt, <crash>.repro).
# Budget: about 5 minutes on 2 cores, build included. In .ci/run the build
# is a no-op: ctest's fuzz.clusterfuzzlite_build built the same tree
# (build-fuzz-clang/tree) with the same flags (fuzz/defaults.sh) just before.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source fuzz/options.sh

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
export CC=${CC:-clang-14} CXX=${CXX:-clang++-14}
export OUT=${OUT:-$root/build-fuzz-clang/out}
# While fuzzing, no allocation stack traces (malloc_context_size=0): kernels
# that allocate per call run about twice as fast. Crashes replay with them.
fuzz_asan=${FUZZ_ASAN_OPTIONS:-malloc_context_size=0:detect_leaks=1}
replay_asan=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
artifacts=$root/fuzz/artifacts
scratch=$root/build-fuzz-clang/smoke
targets=(fuzz_nan_inf fuzz_differential fuzz_inputs)

command -v "$CXX" >/dev/null || { echo "fuzz/smoke.sh: $CXX not found (scripts/bootstrap.sh installs clang-14)" >&2; exit 2; }

start=$(date +%s)
bash fuzz/build.sh
echo "fuzz/smoke.sh: build took $(( $(date +%s) - start )) s"

# run_target TARGET: FUZZ_SECONDS of libFuzzer; the log in $scratch/TARGET.log.
run_target() {
  local t=$1 opts
  mapfile -t opts < <(libfuzzer_options "$OUT" "$t")  # what OSS-Fuzz runs it with
  rm -rf "${scratch:?}/$t"
  mkdir -p "$scratch/$t/corpus" "$artifacts/$t"
  # CPU seconds too: libFuzzer's exec/s is per wall second, and here the
  # targets share the cores; runs per CPU second is the one-core rate.
  local TIMEFORMAT='%U %S'
  { time ASAN_OPTIONS=$fuzz_asan "$OUT/$t" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      "${opts[@]}" -artifact_prefix="$artifacts/$t/" -print_final_stats=1 \
      "$scratch/$t/corpus" "fuzz/corpus/$t" >"$scratch/$t.log" 2>&1; } 2>"$scratch/$t.cpu"
}

# save_crash TARGET: minimise the newest artifact and store its report and repro line.
save_crash() {
  local t=$1 crash min
  crash=$(ls -t "$artifacts/$t"/{crash,leak,timeout,oom,slow-unit}-* 2>/dev/null | head -1 || true)
  if [[ -z $crash ]]; then
    echo "fuzz/smoke.sh: $t failed without an artifact; log:" >&2
    tail -50 "$scratch/$t.log" >&2
    return
  fi
  min="$artifacts/$t/minimized-$(basename "$crash")"
  ASAN_OPTIONS=$fuzz_asan "$OUT/$t" -minimize_crash=1 -max_total_time=30 -runs=100000 -exact_artifact_path="$min" "$crash" \
    >"$scratch/$t.minimize.log" 2>&1 || true
  [[ -s $min ]] || min=$crash
  ASAN_OPTIONS=$replay_asan "$OUT/$t" -runs=1 "$min" >"$min.txt" 2>&1 || true
  grep -o 'softcheck repro .*' "$min.txt" | head -1 >"$min.repro" || true
  echo "fuzz/smoke.sh: CRASH in $t: $min" >&2
  grep -E '==softcheck-fuzz==|plugin:|property:|failure:|output:|row( [0-9]+)? \(n=|target:|upstream g:|repro:|ERROR: |SUMMARY' "$min.txt" | head -20 >&2 || true
}

mkdir -p "$scratch"
declare -A pid
for t in "${targets[@]}"; do
  run_target "$t" &
  pid[$t]=$!
done
failed=()
for t in "${targets[@]}"; do
  if ! wait "${pid[$t]}"; then
    failed+=("$t")
    save_crash "$t"
  fi
done

for t in "${targets[@]}"; do
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$t.log" | awk '{print $2}' || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$scratch/$t.log" | awk '{print $2}' || true)
  cov=$(grep -o 'cov: [0-9]*' "$scratch/$t.log" | tail -1 | awk '{print $2}' || true)
  cpu=$(awk '{printf "%.1f", $1 + $2}' "$scratch/$t.cpu" 2>/dev/null || true)
  per_cpu=$(awk -v r="${runs:-0}" -v c="${cpu:-0}" 'BEGIN {if (c > 0) printf "%.0f", r / c; else print "?"}')
  echo "fuzz/smoke.sh: $t: ${runs:-?} runs in ${cpu:-?} CPU-s = ${per_cpu} exec per CPU-second;" \
    "${rate:-?} exec/s wall (${#targets[@]} fuzzers sharing the cores); coverage ${cov:-?} edges"
done

ASAN_OPTIONS=$fuzz_asan bash fuzz/planted.sh || failed+=(planted)

echo "fuzz/smoke.sh: total $(( $(date +%s) - start )) s"
if ((${#failed[@]})); then
  echo "fuzz/smoke.sh: FAILED: ${failed[*]} (artifacts under fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz/smoke.sh: no crash"
