#!/usr/bin/env bash
# Kernels whose outputs are quantised to a narrower format (P cast to E4M3;
# docs/low-precision.md, "P cast to E4M3"):
#  - `check` claims the properties stated in the output format (sum_to_one:
#    the mass a row keeps; ordering up to rounding's ties; accuracy in E4M3
#    ULPs) and passes them; the others are listed not claimed with the reason;
#  - the truncating cast fails accuracy and sum_to_one, and its repro line
#    replays the failure naming the format `f32->e4m3`;
#  - the commands that measure in the storage format refuse these kernels
#    with one message and exit 2;
#  - a kernel reading MXFP8 blocks runs on MX rows in `run`, and is refused
#    or claims nothing elsewhere.
#   quantised_outputs.sh SOFTCHECK
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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

# Rows read as MXFP8 blocks: `run` gives the kernel MX rows (held; the scale
# decoded with the wrong bias violated); check gives it MX rows too, for the
# properties stated on the row as given (the others not claimed), and
# catches the mutant; sweep refuses it.
check mx_run_holds 0 'softmax_mxfp8_e4m3_f32 +softmax .* held' \
  -- "$bin" run --impl softmax_mxfp8_e4m3_f32 --family normal_s10 --family mask_neg_inf --size 100 \
  --property-tests 0 --out "$tmp/mx"
check_all mx_report_names_the_format 0 '"input_format": "mxfp8_e4m3"' '| mxfp8_e4m3->f32 |' \
  -- cat "$tmp/mx/report.json" "$tmp/mx/report.md"
check mx_mutant_violated 1 'mutant_mxfp8_scale_low_f32 +softmax .* VIOLATED' \
  -- "$bin" run --impl mutant_mxfp8_scale_low_f32 --family normal_s10 --size 100 --property-tests 0 --out "$tmp/low"
check_all mx_check_on_mx_rows 0 "accuracy                       passed" \
  "shift_invariance               not_claimed 0      the rows are read as mxfp8_e4m3 blocks" \
  -- "$bin" check --impl softmax_mxfp8_e4m3_f32 --tests 30
check mx_mutant_caught 1 'mutant_mxfp8_scale_low_f32 +softmax +accuracy +failed' \
  -- "$bin" check --impl mutant_mxfp8_scale_low_f32 --property accuracy --tests 30
check mx_repro_needs_an_mx_row 2 'row entry 2 \(0x1.19999ap\+0\) is not what its mxfp8_e4m3 block holds \(0x1.2p\+0\)' \
  -- "$bin" repro --impl softmax_mxfp8_e4m3_f32 --op softmax --property accuracy --temperature=1 --row=0,0x1.19999ap+0
check mx_sweep_refuses 2 "'softmax_mxfp8_e4m3_f32' reads its rows as mxfp8_e4m3 blocks" \
  -- "$bin" sweep --impl softmax_mxfp8_e4m3_f32 --dtype f32
# The other element formats: MXFP4 rows, and a repro row entry that is an
# E4M3 block's value but not an E2M1 block's.
check mx4_run_holds 0 'softmax_mxfp4_e2m1_f32 +log_softmax .* held' \
  -- "$bin" run --impl softmax_mxfp4_e2m1_f32 --family normal_s10 --family mask_neg_inf --size 100 \
  --property-tests 0 --out "$tmp/mx4"
check mx4_report_names_the_format 0 '"input_format": "mxfp4_e2m1"' -- cat "$tmp/mx4/report.json"
check mx4_repro_needs_an_mx4_row 2 'is not what its mxfp4_e2m1 block holds' \
  -- "$bin" repro --impl softmax_mxfp4_e2m1_f32 --op softmax --property accuracy --temperature=1 --row=0,0x1.2p+0

finish "quantised outputs"
