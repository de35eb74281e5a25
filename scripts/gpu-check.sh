#!/usr/bin/env bash
# gpu-check: the CUDA kernels on a machine with a GPU (written for one H200),
# in one go and in under 5 minutes (docs/cuda.md, docs/attention.md): the
# tiled online softmax kernels and the attention kernel cuda_attention_flash_f32.
#   1. configure and build with CUDA (SASS for SOFTCHECK_CUDA_ARCHITECTURES, default 90, plus PTX);
#   2. the CPU tests of the host twins (tiled online softmax, attention; they
#      also check that the CUDA kernels are available here and that a run
#      including them holds);
#   3. `softcheck run` of the CUDA kernels and their host twins against the
#      oracle, the softmax families and the attention families (and `softcheck
#      check`, the property suite, when the CLI has it);
#   4. every CUDA kernel against its host twin: bit-exact where both use the
#      portable exp/log (exp2/log2 for attention), the measured difference for
#      the expf/__expf variants;
#   5. the benchmark: achieved GB/s against a device-to-device cudaMemcpy in the same run;
#   6. a summary. Exit status 0 only when every step passed.
#
# Environment: BUILD_DIR (default build-gpu), OUT_DIR (default $BUILD_DIR/gpu-check),
# SOFTCHECK_CUDA_ARCHITECTURES (default 90), JOBS (default nproc).
# GPU_CHECK_PREBUILT=DIR skips steps 1's configure and build and runs the
# binaries of DIR/bin with the libraries of DIR/lib (scripts/gpu-bundle.sh makes
# DIR on a machine with the project's packages): for a GPU machine whose image
# has CUDA but not MPFR, fmt, GoogleTest and the rest. Step 2 then runs the two
# host-twin test binaries whole (the same tests ctest's filter selects).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-gpu}
prebuilt=${GPU_CHECK_PREBUILT:-}
out=${OUT_DIR:-$build/gpu-check}
archs=${SOFTCHECK_CUDA_ARCHITECTURES:-90}
jobs=${JOBS:-$(nproc)}
started=$SECONDS
failures=()

cuda_kernels=(cuda_tiled_online_f32 cuda_tiled_online_seq_f32 cuda_tiled_online_f16
              cuda_split_online_f32 cuda_tiled_online_expf_f32 cuda_tiled_online_fastexp_f32)
twin_kernels=(tiled_online_t1024_tree_f32 tiled_online_t1024_seq_f32 tiled_online_t1024_tree_f16
              split_online_t1024_s8_f32)
# The attention kernel and its host twin (listed by `list --attention`, run on the attention families).
attention_kernels=(cuda_attention_flash_f32 attention_flash_twin_f32)

step() { printf '\n== %s  [%ds]\n' "$*" $((SECONDS - started)); }
fail() { echo "FAILED: $*"; failures+=("$*"); }

# Runs "$@" with a time limit, its output teed to $out/$name.log; returns its status.
logged() {
  local name=$1 limit=$2
  shift 2
  local rc=0
  timeout "$limit" "$@" 2>&1 | tee "$out/$name.log" || rc=${PIPESTATUS[0]}
  return "$rc"
}

mkdir -p "$out"

step "device"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv || true
else
  echo "nvidia-smi not found"
fi

if [[ -n $prebuilt ]]; then
  step "prebuilt binaries ($prebuilt)"
  [[ -d $prebuilt/bin && -d $prebuilt/lib ]] || { echo "$prebuilt has no bin/ and lib/ (scripts/gpu-bundle.sh)"; exit 2; }
  cat "$prebuilt/BUILD_INFO" 2>/dev/null || true
  tools=$prebuilt/bin
  export LD_LIBRARY_PATH="$(cd "$prebuilt/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  missing=$(ldd "$tools"/* | grep 'not found' || true)
  [[ -z $missing ]] || { echo "$missing"; echo "libraries missing for the prebuilt binaries"; exit 2; }
else
  step "configure ($build, CUDA architectures $archs)"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSOFTCHECK_ENABLE_CUDA=ON \
        -DSOFTCHECK_CUDA_ARCHITECTURES="$archs" >"$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; echo "configure failed"; exit 2; }
  grep 'softcheck: CUDA' "$out/configure.log"
  grep -q 'softcheck: CUDA: found' "$out/configure.log" ||
    { echo "nvcc not found or CUDA disabled: nothing to check on the GPU"; exit 2; }

  step "build"
  timeout 240 cmake --build "$build" -j "$jobs" --target softcheck softcheck_cuda_bench \
        cuda_twin_compare tiled_online_tests attention_twin_tests >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; echo "build failed"; exit 2; }
  tools=$build
fi
bin=$tools/softcheck

step "CUDA kernels as listed here"
"$bin" list --attention | grep -E '^cuda_' | tee "$out/list.log" || true
if ! grep -q '^cuda_attention_flash_f32' "$out/list.log" || ! grep -q '^cuda_tiled_online_f32' "$out/list.log" ||
   grep -q 'unavailable' "$out/list.log"; then
  fail "CUDA kernels unavailable on this machine (see list above)"
fi

step "CPU tests of the host twins (tiled online softmax, attention)"
if [[ -n $prebuilt ]]; then
  logged twin_tests_tiled 120 "$tools/tiled_online_tests" || fail "host twin CPU tests (tiled_online_tests)"
  logged twin_tests_attention 120 "$tools/attention_twin_tests" || fail "host twin CPU tests (attention_twin_tests)"
else
  logged ctest 120 ctest --test-dir "$build" \
    -R 'impls\.(PortableMath|PortableExp2|PortableLog2|OnlineState|MergeOrder|TiledOnline|Contracts|CudaKernels|AttentionTwin|CudaAttention)' \
    -j "$jobs" --output-on-failure || fail "host twin CPU tests"
fi

step "softcheck run: CUDA kernels and host twins against the oracle"
impl_args=()
for k in "${cuda_kernels[@]}" "${twin_kernels[@]}"; do impl_args+=(--impl "$k"); done
# --property-tests 0: `run` checks properties in forked workers, and a CUDA
# runtime the parent has initialised (cudaGetDeviceCount, at the registry's
# first use) cannot be used in a forked child; the properties are the
# `check` step's, in one process.
logged run 150 "$bin" run "${impl_args[@]}" --suite quick --property-tests 0 --jobs "$jobs" --out "$out/run" ||
  fail "softcheck run (exit $?; status 1 means a contract was violated)"

step "softcheck run: the CUDA attention kernel and its host twin against the oracle"
attention_impl_args=()
for k in "${attention_kernels[@]}"; do attention_impl_args+=(--impl "$k"); done
# Every attention family, both temperatures, keys up to 1024 around the
# 64-key tile boundaries (the MPFR oracle costs n x d exact products per row;
# longer rows are cuda_twin_compare's, bit for bit against the twin).
logged run_attention 120 "$bin" run "${attention_impl_args[@]}" --op attention --suite quick \
  --size 1 --size 17 --size 64 --size 65 --size 300 --size 1024 --property-tests 0 --jobs "$jobs" \
  --out "$out/run_attention" ||
  fail "softcheck run --op attention (exit $?; status 1 means a contract was violated)"

if "$bin" check --help >/dev/null 2>&1; then
  step "softcheck check: property suite of the CUDA kernels"
  check_args=()
  for k in "${cuda_kernels[@]}" "${attention_kernels[@]}"; do check_args+=(--impl "$k"); done
  # --jobs 1: in this process (more jobs fork workers, which cannot use the
  # CUDA runtime the parent initialised).
  logged check 120 "$bin" check "${check_args[@]}" --jobs 1 || fail "softcheck check"
else
  step "softcheck check: not in this CLI (skipped)"
fi

step "CUDA kernels against their host twins (softmax: both ops; attention: O and lse)"
logged compare 120 "$tools/cuda_twin_compare" --seed 1 || fail "CUDA vs host twin (exit $?)"

step "benchmark: achieved bandwidth vs device-to-device cudaMemcpy"
logged bench 90 "$tools/softcheck_cuda_bench" || fail "benchmark (exit $?)"

step "summary"
echo "accuracy (softcheck run against the oracle):"
reports=()
for r in run run_attention; do [[ -f $out/$r/report.json ]] && reports+=("$out/$r/report.json"); done
if command -v python3 >/dev/null && ((${#reports[@]})); then
  env -u LD_LIBRARY_PATH python3 - "${reports[@]}" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    for k in json.load(open(path))["kernels"]:
        op = k["op"] + (":" + k["output"] if k.get("output") else "")
        print("  %-30s %-13s %-11s max %8.3f ulp  %5.3f of the bound  (%s)" % (
            k["kernel"], op, k["status"], k["max_ulp"] or 0, k["max_bound_ratio"] or 0,
            k["contract"]["formula"]))
EOF
else
  grep -hE '^(cuda_|tiled_online|split_online|attention_flash_twin)' "$out/run.log" "$out/run_attention.log" || true
fi
echo "CUDA vs host twin (differing outputs, largest difference in ulps):"
sed -n 's/^COMPARE cuda=\([^ ]*\) twin=\([^ ]*\) op=\([^ ]*\) elements=\([0-9]*\) differing=\([0-9]*\) max_ulp=\([^ ]*\) bit_exact_expected=\([01]\)/  \1 \3: \5 of \4 differ, max \6 ulp (bit-exact expected: \7)/p' \
  "$out/compare.log" || true
echo "bandwidth (fraction of the device-to-device copy):"
sed -n 's/^BENCH kernel=\([^ ]*\) op=\([^ ]*\) rows=\([0-9]*\) cols=\([0-9]*\) us=[^ ]* gbps=\([^ ]*\) copy_gbps=\([^ ]*\) fraction=\([^ ]*\)/  \1 \2 \3x\4: \5 GB\/s of \6 (\7)/p' \
  "$out/bench.log" || true
printf '\ngpu-check took %ds; logs and reports in %s\n' $((SECONDS - started)) "$out"
if ((${#failures[@]})); then
  printf 'FAILED steps:\n'
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "gpu-check passed"
