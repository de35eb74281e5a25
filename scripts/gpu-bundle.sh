#!/usr/bin/env bash
# gpu-bundle: builds what scripts/gpu-check.sh runs, here (a Debian 12 machine
# with nvcc but no GPU), and packs it with the shared libraries it needs into
# one folder that can travel to a GPU machine whose image lacks this project's
# Debian packages (MPFR, GMP, fmt, ...): the device machines lent here have
# CUDA's driver and toolkit but none of them, and no package registry.
#
#   scripts/gpu-bundle.sh            -> build-gpu-bundle/{bin,lib}
#   then, on the GPU machine:  GPU_CHECK_PREBUILT=build-gpu-bundle scripts/gpu-check.sh
#
# The peers (oneDNN, XNNPACK, libtorch), the Python module and .npy reading are
# left out: gpu-check runs none of them, and libtorch alone is larger than what
# may travel. The C library, the dynamic loader and libcuda (the driver's) are
# the GPU machine's own; everything else the binaries load is copied.
#
# Environment: BUILD_DIR (default build-gpu), BUNDLE_DIR (default build-gpu-bundle),
# SOFTCHECK_CUDA_ARCHITECTURES (default 90), JOBS (default nproc), CUDACXX
# (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-gpu}
bundle=${BUNDLE_DIR:-build-gpu-bundle}
archs=${SOFTCHECK_CUDA_ARCHITECTURES:-90}
jobs=${JOBS:-$(nproc)}
if [[ -z ${CUDACXX:-} ]]; then
  CUDACXX=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
fi
[[ -x $CUDACXX ]] || { echo "gpu-bundle: no nvcc (looked for $CUDACXX); set CUDACXX" >&2; exit 2; }
export CUDACXX

targets=(softcheck softcheck_cuda_bench cuda_twin_compare tiled_online_tests attention_twin_tests)

mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSOFTCHECK_ENABLE_CUDA=ON \
      -DSOFTCHECK_CUDA_ARCHITECTURES="$archs" -DSOFTCHECK_PEERS=OFF -DSOFTCHECK_PYTHON=OFF \
      -DSOFTCHECK_NPY=OFF >"$build/gpu-bundle-configure.log" 2>&1 ||
  { tail -30 "$build/gpu-bundle-configure.log"; echo "gpu-bundle: configure failed" >&2; exit 2; }
grep -q 'softcheck: CUDA: found' "$build/gpu-bundle-configure.log" ||
  { grep 'softcheck: CUDA' "$build/gpu-bundle-configure.log"; echo "gpu-bundle: CUDA kernels would not be built" >&2; exit 2; }
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for t in "${targets[@]}"; do
  path=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
  [[ -n $path ]] || { echo "gpu-bundle: $t was not built" >&2; exit 2; }
  cp "$path" "$bundle/bin/"
  strip --strip-debug "$bundle/bin/$t"
done

# Every library the binaries load, less the GPU machine's own: the C library
# and its loader (newer there; theirs must be used) and the CUDA driver.
own='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda\.so)'
ldd "$bundle"/bin/* | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  [[ $name =~ $own ]] && continue
  cp -L "$path" "$bundle/lib/$name"
done
if ldd "$bundle"/bin/* | grep -q 'not found'; then
  ldd "$bundle"/bin/* | grep 'not found' >&2
  echo "gpu-bundle: a library is missing here" >&2
  exit 2
fi
{
  echo "built $(date -u +%FT%TZ) from $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes')"
  echo "nvcc: $("$CUDACXX" --version | tail -1)"
  echo "architectures: $archs"
} >"$bundle/BUILD_INFO"
du -sh "$bundle"
ls "$bundle/lib"
