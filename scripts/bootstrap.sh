#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), configures and builds into build/.
# Idempotent: a second run installs nothing, reconfigures nothing and rebuilds
# only what changed. Nothing is downloaded at build time.
#   scripts/bootstrap.sh                    install, configure, build
#   scripts/bootstrap.sh --print-packages   the package list, one per line, and nothing else
#                                           (scripts/check-deps.sh takes its closure)
set -euo pipefail
cd "$(dirname "$0")/.."
print_packages=false
case "${1:-}" in
  "") ;;
  --print-packages) print_packages=true ;;
  *) echo "usage: scripts/bootstrap.sh [--print-packages]" >&2; exit 2 ;;
esac

# Each package and why it is here:
packages=(
  g++ cmake make pkg-config   # C++20 toolchain, CMake >= 3.25
  libboost-dev                # Boost.Multiprecision: the oracle's mpfr_float
  libmpfr-dev libgmp-dev      # MPFR (and GMP under it): arbitrary-precision arithmetic
  libgtest-dev                # unit tests
  librapidcheck-dev           # property tests with shrinking (and its GoogleTest integration)
  libbenchmark-dev            # performance benchmarks
  libcli11-dev                # command-line parsing
  nlohmann-json3-dev          # report JSON
  libfmt-dev                  # formatting
  libdnnl-dev                 # oneDNN: the onednn_* peer kernels (softmax_v2, f32/bf16)
  ocl-icd-opencl-dev          # OpenCL headers + libOpenCL.so: Debian's dnnl-config.cmake calls
                              # find_package(OpenCL REQUIRED) (its GPU runtime is OCL); only a Recommends of libdnnl-dev
  libxnnpack-dev              # XNNPACK: the xnnpack_* peer kernels (softmax_nc f32)
  libpthreadpool-dev          # pthreadpool.h, which xnnpack.h includes (libxnnpack-dev does not pull it in)
  libtorch-dev                # PyTorch's C++ API (CPU): the torch_* peer kernels (softmax, cross-entropy, backward;
                              # docs/gradients.md), the reference most kernel authors compare with
  clang-14 libclang-rt-14-dev # libFuzzer, ASan, UBSan for the fuzzers (fuzz/smoke.sh, docs/fuzzing.md)
  python3                     # JSON checks in the end-to-end tests (cli/tests/*.sh); scripts/check-deps.sh
  libxtensor-dev              # xtensor's .npy reader for `softcheck compare` (pulls in xtl-dev)
  pybind11-dev                # the Python module (python/, docs/python.md)
  python3-dev                 # Python.h and libpython for the module (pybind11-dev does not depend on it)
  python3-numpy               # the module's arrays; the interpreter the module is built for must import it
  python3-pytest              # python/tests, run by ctest (python.pytest)
  python3-torch               # PyTorch's CPU softmax / log_softmax that python.pytest judges (f32, bf16)
  python3-venv python3-pip python3-setuptools python3-wheel   # `pip install build/python` offline (python.pip_install,
                              # the softcheck_wheel target)
)
if $print_packages; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
# -g1: line tables and function names only (backtraces, perf and the
# sanitizers' reports keep file:line; gdb sees no local variables). It
# compiles about 30 % faster than -g (reports/tests/report_read_test.cpp:
# 13.8 s against 19.7 s wall), which CI's 20 minutes need; configure a tree
# of your own with -g to step through code.
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
fi
cmake --build build -j "$jobs"
