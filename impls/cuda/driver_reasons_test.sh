#!/usr/bin/env bash
# The CUDA kernels' unavailable reason says what is missing, not CUDA's "CUDA
# driver version is insufficient for CUDA runtime version", which the runtime
# answers both without a driver and with an old one: with a stand-in
# libcuda.so.1 first on LD_LIBRARY_PATH (fake_libcuda.c) that is an old driver,
# then one that is no driver; and, where this machine has no libcuda.so.1 at
# all, without one.
#   driver_reasons_test.sh path/to/softcheck OLD_DRIVER_DIR NOT_A_DRIVER_DIR
set -u
bin=$1 old_dir=$2 none_dir=$3
failures=0

# reason [DIR]: the one unavailable reason of the cuda_* kernels in `list --json`.
reason() {
  LD_LIBRARY_PATH=${1:+$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} "$bin" list --json | python3 -c '
import json, sys
reasons = {k["unavailable_reason"] for k in json.load(sys.stdin) if k["algorithm"].startswith("cuda_")}
print(reasons.pop() if len(reasons) == 1 else f"not one reason: {reasons}")'
}

# expect NAME REGEX [DIR]
expect() {
  local got
  got=$(reason "${3:-}")
  if [[ $got =~ $2 ]]; then echo "ok   $1: $got"; else echo "FAIL $1: '$got' does not match /$2/"; failures=$((failures + 1)); fi
}

expect old_driver '^no CUDA device: NVIDIA driver too old for this CUDA runtime \(driver: CUDA 11\.0, runtime: CUDA [0-9]+\.[0-9]+\)$' "$old_dir"
expect not_a_driver '^no CUDA device: libcuda\.so\.1 found, but it is no NVIDIA driver \(no cuDriverGetVersion\)$' "$none_dir"
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  expect no_driver '^no CUDA device: no NVIDIA driver \(libcuda\.so\.1\) found$'
else
  echo "note: this machine has a libcuda.so.1: the no-driver case is not checked here"
fi
# The text table says it once for the six kernels.
n=$(LD_LIBRARY_PATH=$old_dir "$bin" list | tr '\n' ' ' | tr -s ' ' | grep -o 'NVIDIA driver too old' | wc -l)
if [[ $n == 1 ]]; then echo "ok   once: the reason printed once by list"; else
  echo "FAIL once: the reason printed $n times by list"; failures=$((failures + 1)); fi
exit $((failures > 0))
