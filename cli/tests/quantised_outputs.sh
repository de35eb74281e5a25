#!/usr/bin/env bash
# Kernels whose outputs are quantised to a narrower format (P cast to E4M3;
# docs/low-precision.md, "P cast to E4M3"):
#  - `check` claims the properties stated in the output format (sum_to_one:
#    the mass a row keeps; ordering up to rounding's ties; accuracy in E4M3
#    ULPs) and passes them; the others are listed not claimed with the reason;
#  - the truncating cast fails accuracy and sum_to_one, and its repro line
#    replays the failure naming the format `f32->e4m3`;
#  - the commands that measure in the storage format refuse these kernels
#    with one message and exit 2.
#   quantised_outputs.sh SOFTCHECK
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

check pe4m3_holds 0 'softmax_pe4m3_f32 +softmax +sum_to_one +passed +60 +worst .* u of e4m3' \
  -- "$bin" check --impl softmax_pe4m3_f32 --tests 60 --seed 2
check_all pe4m3_claims 0 "ordering" "accuracy" "permutation" "batch_independence" \
  "underflow" "this property's tolerance is stated in the storage format" \
  -- "$bin" check --impl softmax_pe4m3_x256_f32 --tests 60 --seed 2
check truncated_fails 1 'mutant_pe4m3_truncated_f32 +softmax +accuracy +failed' \
  -- "$bin" check --impl mutant_pe4m3_truncated_f32 --property accuracy --property sum_to_one --seed 3
line=$("$bin" check --impl mutant_pe4m3_truncated_f32 --property accuracy --seed 3 2>&1 | grep -m1 -oE 'softcheck repro .*')
read -r -a words <<<"${line#softcheck }"
check truncated_replays 1 'kernel: +mutant_pe4m3_truncated_f32 \(f32->e4m3\)' -- "$bin" "${words[@]}"
check sweep_refuses 2 "'softmax_pe4m3_f32' quantises its outputs to e4m3 .*this command measures in the storage format" \
  -- "$bin" sweep --impl softmax_pe4m3_f32 --dtype f32

finish "quantised outputs"
