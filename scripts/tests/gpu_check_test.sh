#!/usr/bin/env bash
# scripts/gpu-check.sh on a machine without a GPU, with the binaries of this
# build as a prebuilt bundle (GPU_CHECK_PREBUILT): every step runs, the host
# twins' tests and the oracle runs of the twins pass, and the script fails
# (exit 1) on exactly what needs a device: the CUDA kernels unavailable, the
# twin comparison and the benchmark. This keeps the script, which can run
# only where a GPU is lent, from rotting between such runs.
#   gpu_check_test.sh SCRIPT BUILD_DIR
set -uo pipefail
script=$1 build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bundle/bin" "$tmp/bundle/lib"
for t in softcheck softcheck_cuda_bench cuda_twin_compare tiled_online_tests attention_twin_tests; do
  path=$(find "$build" -type f -name "$t" -perm -u+x -not -path '*/CMakeFiles/*' | head -1)
  [[ -n $path ]] || { echo "gpu_check_test: $t is not built in $build"; exit 1; }
  ln -s "$path" "$tmp/bundle/bin/$t"
done
GPU_CHECK_PREBUILT=$tmp/bundle OUT_DIR=$tmp/out JOBS=2 bash "$script" >"$tmp/log" 2>&1
rc=$?
fail() { tail -60 "$tmp/log"; echo "FAIL: $*"; exit 1; }
[[ $rc -eq 1 ]] || fail "exit $rc, expected 1 (the device steps fail without a GPU)"
failed=$(sed -n '/^FAILED steps:/,$p' "$tmp/log" | tail -n +2 | sed 's/^ *//')
expected=$'CUDA kernels unavailable on this machine (see list above)\nCUDA vs host twin (exit 3)\nbenchmark (exit 3)'
[[ $failed == "$expected" ]] || fail "failed steps were:"$'\n'"$failed"$'\n'"expected:"$'\n'"$expected"
for t in tiled attention; do
  grep -q '\[  PASSED  \]' "$tmp/out/twin_tests_$t.log" || fail "the $t host-twin tests did not pass"
done
grep -q '^  tiled_online_t1024_tree_f32 *softmax *held' "$tmp/log" || fail "no verdict for the tiled twin in the summary"
grep -q '^  attention_flash_twin_f32 *attention:O *held' "$tmp/log" || fail "no verdict for the attention twin in the summary"
grep -q 'unavailable: no CUDA device' "$tmp/out/run.log" || fail "the run does not say why the CUDA kernels were skipped"
echo "gpu_check_test: ok (the device steps fail as they must without a GPU; the rest passed)"
