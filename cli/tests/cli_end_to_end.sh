#!/usr/bin/env bash
# End-to-end checks of the built `softcheck` binary: exit codes, messages,
# report files (none left half-written), determinism.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# oracle: values for scripting, and every kind of bad input.
# Independent reference: Python's decimal module at 60 digits,
#   e = Decimal(1).exp(); s = 1 + e + e*e; format(1/s, '.39e'), e/s, e*e/s
# and the rounded column is float(v) of the same Decimal (correctly rounded by Python).
# (softmax is shift-invariant, so [1000, 1001, 1002] has the values of [0, 1, 2]).
# All 40 printed digits must agree.
expected='9.003057317038045799802210148449179786793e-02 0.09003057317038046
2.447284710547976524729596183407627971993e-01 0.24472847105479764
6.652409557748218895290182801747454049328e-01 0.6652409557748219'
check oracle_values 0 '' -- bash -c "[[ \"\$('$bin' oracle 1000 1001 1002)\" == \"$expected\" ]]"
check oracle_lines 0 '' -- bash -c "[[ \$('$bin' oracle 1 2 3 4 | wc -l) -eq 4 ]]"
check oracle_masked 0 '^0\.0000e\+00 0$' -- "$bin" oracle --digits 5 -- 1 -inf 2
check oracle_no_values 2 'give the row as X1 X2 ... or --rows FILE' -- "$bin" oracle
check oracle_nan 2 'NaN' -- "$bin" oracle 1 nan 2
check oracle_pinf 2 'undefined' -- "$bin" oracle 1 inf
check oracle_junk 2 "not a number: 'abc'" -- "$bin" oracle 1 abc
check oracle_all_masked 2 'every entry is -inf' -- "$bin" oracle -- -inf -inf
check oracle_bad_temperature 2 'temperature' -- "$bin" oracle --temperature 0 1 2
check oracle_bad_dtype 2 'dtype' -- "$bin" oracle --dtype f8 1 2
# --dtype f16, bf16 and the OCP element formats: each input rounded once from
# its text (1 + 2^-11 plus a hair reads as 1 + 2^-10 in f16, though its nearest
# double is the midpoint, which ties to 1).
check oracle_f16_one_rounding 0 '^7\.3125e-01 0\.7314453125$' -- \
  "$bin" oracle --dtype f16 --digits 5 1.00048828125000000000001 0
check oracle_f16_midpoint 0 '^7\.3106e-01 0\.73095703125$' -- "$bin" oracle --dtype f16 --digits 5 1.00048828125 0
check oracle_bf16 0 '^5\.0000e-01 0\.5$' -- "$bin" oracle --dtype bf16 --digits 5 0.1 0.1
check oracle_e4m3 0 '^7\.3106e-01 0\.75$' -- "$bin" oracle --dtype e4m3 --digits 5 1 0
check oracle_e4m3_overflow 2 "'500' overflows e4m3 \(largest finite 448\)" -- "$bin" oracle --dtype e4m3 1 500
check oracle_e4m3_lse_nan 0 '^8\.9669e\+02 nan$' -- "$bin" oracle --dtype e4m3 --op lse --temperature 0.5 --digits 5 448 448
check oracle_e2m1_saturates 0 '^1\.2693e\+01 6$' -- "$bin" oracle --dtype e2m1 --op lse --temperature 0.5 --digits 5 6 6
# Block formats: the row, and each output, is one tensor. Just below 2 the
# MX block keeps the scale 2^-8 and clamps to 1.75 (e4m3 alone rounds to 2);
# MXFP4's block of [0.9975, 0.0025] has the scale 2^-3, so 7.98 clamps to 6
# and the small entry goes to 0; a -inf makes its MX block NaN (refused).
check_all oracle_mxfp8_clamps 0 "8.5195e-01 0.875" "1.4805e-01 0.140625" -- \
  "$bin" oracle --dtype mxfp8_e4m3 --digits 5 1.99999999999999999999 0
check_all oracle_mxfp4 0 "9.9753e-01 0.75" "2.4726e-03 0" -- "$bin" oracle --dtype mxfp4_e2m1 --digits 5 0 -6
check oracle_mxfp8_mask 2 'the MX block of entries 0 to 2 has a NaN scale' -- "$bin" oracle --dtype mxfp8_e4m3 -- 1 -inf 2
check oracle_nvfp4_mask 2 'NVFP4 holds finite values within f32' -- "$bin" oracle --dtype nvfp4 -- 1 -inf
check oracle_nvfp4_lse 0 '^3\.4076e\+00 [0-9.]+$' -- "$bin" oracle --dtype nvfp4 --op lse --digits 5 1 2 3
# --rows: one row per line from a file or standard input, each output line
# prefixed with the row's index; a bad row names its line and prints nothing.
rows_file="$tmp/rows.txt"
printf '# rows\n1 2 3\n\n0,0\n' >"$rows_file"
check oracle_rows_file 0 '' -- bash -c "[[ \"\$('$bin' oracle --rows '$rows_file' --digits 3 | cut -d' ' -f1 | tr '\n' ' ')\" == '0 0 0 1 1 ' ]]"
check oracle_rows_stdin 0 '^1 5\.00e-01 0\.5$' -- bash -c "printf '1 2\n3 3\n' | '$bin' oracle --rows - --digits 3"
check oracle_rows_bad_line 2 'standard input line 2: NaN input' -- bash -c "printf '1 2\n1 nan\n' | '$bin' oracle --rows -"
check oracle_rows_nothing_printed 0 '' -- bash -c "[[ -z \"\$(printf '1 2\n1 nan\n' | '$bin' oracle --rows - 2>/dev/null)\" ]]"
check oracle_rows_and_values 2 'one of them' -- "$bin" oracle --rows "$rows_file" 1 2
check oracle_rows_missing_file 2 "cannot read '/nonexistent/rows'" -- "$bin" oracle --rows /nonexistent/rows
check oracle_rows_empty 2 'no row' -- bash -c "printf '# nothing\n' | '$bin' oracle --rows -"
check oracle_rows_two_inputs 2 'takes more per row' -- "$bin" oracle --op cross_entropy --target 0 --rows "$rows_file"

# oracle --op for the sparse ops (docs/sparse.md): REFERENCE.md's known values
# ([-2, 0, 0.5] -> sparsemax [0, 0.25, 0.75] exactly, entmax15 [0, 0.3260, 0.6740]),
# alpha = 2 / 1.5 as the sort-based forms, the bisection summing to 1, bad input.
sm_expected='0.0000e+00 0
2.5000e-01 0.25
7.5000e-01 0.75'
check oracle_sparsemax 0 '' -- bash -c "[[ \"\$('$bin' oracle --op sparsemax --digits 5 -- -2 0 0.5)\" == \"$sm_expected\" ]]"
check oracle_entmax_alpha2 0 '' -- bash -c "[[ \"\$('$bin' oracle --op entmax --alpha 2 --digits 5 -- -2 0 0.5)\" == \"$sm_expected\" ]]"
check oracle_entmax15 0 '^3\.260e-01 ' -- "$bin" oracle --op entmax15 --digits 4 -- -2 0 0.5
check oracle_entmax15_top 0 '^6\.740e-01 ' -- "$bin" oracle --op entmax15 --digits 4 -- -2 0 0.5
check oracle_entmax_bisect_near_15 0 '' -- bash -c "[[ \"\$('$bin' oracle --op entmax --alpha 1.5000000001 --digits 6 -- -2 0 0.5 | cut -d' ' -f1)\" == \"\$('$bin' oracle --op entmax15 --digits 6 -- -2 0 0.5 | cut -d' ' -f1)\" ]]"
check oracle_entmax_sum 0 '' -- bash -c "'$bin' oracle --op entmax --alpha 1.3 --temperature 0.5 -- 0.1 -1 2 0.3 | awk '{s += \$2} END {exit !(s > 0.999999 && s < 1.000001)}'"
check oracle_topk 0 '' -- bash -c "[[ \$('$bin' oracle --op topk_softmax --k 2 -- 1 2 2 3 | awk '\$2 > 0' | wc -l) -eq 3 ]]"
check oracle_threshold 0 '^0\.0000e\+00 0$' -- "$bin" oracle --op threshold_softmax --threshold 0.05 --digits 5 -- -2 0 0.5
check oracle_entmax_needs_alpha 2 'needs --alpha' -- "$bin" oracle --op entmax 1 2
check oracle_bad_alpha 2 'alpha must be finite and > 1' -- "$bin" oracle --op entmax --alpha 1 1 2
check oracle_alpha_wrong_op 2 'applies to --op entmax only' -- "$bin" oracle --op sparsemax --alpha 1.5 1 2
check oracle_bad_k 2 'k must be >= 1' -- "$bin" oracle --op topk_softmax --k 0 1 2
check oracle_bad_threshold 2 'threshold must be in' -- "$bin" oracle --op threshold_softmax --threshold 2 1 2
check oracle_sparse_nan 2 'NaN' -- "$bin" oracle --op sparsemax 1 nan
check oracle_sparse_all_masked 2 'every entry is -inf' -- "$bin" oracle --op entmax15 -- -inf -inf
check oracle_bad_op 2 'op' -- "$bin" oracle --op sparsemaxx 1 2

# run with sparse kernels (docs/sparse.md): ULP error on the support, support
# mismatches counted apart in report.json / report.md; only `run` takes them.
sparse=(--impl sparsemax_f32 --impl entmax15_f64 --impl entmax_bisect_a1p5_i10_f32 --impl topk_softmax_k8_f32
        --impl threshold_softmax_t0p01_f64 --family normal_s1 --family ties --size 8 --size 100 --seed 3)
check run_sparse 0 'support: [0-9]+ false zeros, [0-9]+ false non-zeros' -- "$bin" run "${sparse[@]}" --out "$tmp/sp" --jobs 2
check run_sparse_json 0 '"false_nonzeros"' -- cat "$tmp/sp/report.json"
check run_sparse_md 0 'false zeros' -- cat "$tmp/sp/report.md"
check run_sparse_topk_held 0 '' -- bash -c "grep -A12 '\"kernel\": \"topk_softmax_k8_f32\"' '$tmp/sp/report.json' | grep -q '\"status\": \"held\"'"
check run_sparse_report_reads 0 '' -- "$bin" report "$tmp/sp/report.json" --md "$tmp/sp2.md" --quiet
check run_sparse_gate 0 'gate: passed' -- "$bin" gate --baseline "$tmp/sp/report.json" --report "$tmp/sp/report.json"
check list_sparse 0 'entmax_bisect_a1p5_i30_f32' -- "$bin" list --sparse
check check_sparse 0 'sparse_accuracy' -- "$bin" check --impl sparsemax_f32 --tests 5
check repro_sparse 0 '' -- "$bin" repro --impl sparsemax_f64 --op sparsemax --property sparse_accuracy --row=-2,0,0.5
check sweep_sparse_refused 2 'sparse kernel' -- "$bin" sweep --dtype f16 --impl sparsemax_f32

# run: bad input gives exit 2 and writes nothing.
check run_unknown_impl 2 "unknown kernel 'nosuch'" -- "$bin" run --impl nosuch --out "$tmp/none1"
[[ ! -e $tmp/none1 ]] || { echo "FAIL run_unknown_impl left $tmp/none1"; failures=$((failures + 1)); }
mkdir -p "$tmp/ro" && chmod 0555 "$tmp/ro"
if [[ $(id -u) -eq 0 ]]; then unwritable=/proc/softcheck/out; else unwritable=$tmp/ro/out; fi
check run_unwritable 2 'cannot create output directory|not writable' -- "$bin" run --impl shifted_f32 --size 4 --out "$unwritable"
check run_bad_suite 2 'suite' -- "$bin" run --suite nosuch --out "$tmp/none2"
check run_bad_family 2 "unknown family" -- "$bin" run --family nosuch --out "$tmp/none3"
check run_bad_size 2 "size" -- "$bin" run --size 0 --out "$tmp/none4"
[[ ! -e $tmp/none2 && ! -e $tmp/none3 && ! -e $tmp/none4 ]] || { echo "FAIL: bad run created files"; failures=$((failures + 1)); }

# run: a small real run, determinism, and a violation's exit status.
small=(--impl shifted_f32 --impl naive_f32 --family xnnpack_u90_100 --family normal_s10 --size 3 --size 100 --seed 5)
check run_small 0 'FLAGGED' -- "$bin" run "${small[@]}" --out "$tmp/a" --jobs 1
check run_small_again 0 '' -- "$bin" run "${small[@]}" --out "$tmp/b" --jobs 2 --quiet
check run_deterministic 0 '' -- cmp "$tmp/a/report.json" "$tmp/b/report.json"
check run_md 0 'softcheck report' -- cat "$tmp/a/report.md"
check run_no_temporaries 0 '' -- bash -c "[[ \$(ls -A '$tmp/a' | wc -l) -eq 3 ]]"  # report.json, .md, .html
check run_violation 1 'VIOLATED' -- "$bin" run --impl mutant_no_max_shift --family xnnpack_u90_100 --size 8 --out "$tmp/c"
# --fp-env (docs/fp-env.md): the kernels under FTZ + DAZ, recorded in the
# report; normal_s100's subnormal outputs flushed to 0 break shifted_f32's
# contract; gate reruns the baseline in its environment; a bad name is exit 2.
check run_fp_env_ftz_daz 1 'CONTRACT VIOLATED' -- "$bin" run --impl shifted_f32 --family normal_s100 --size 64 \
  --property-tests 0 --fp-env ftz_daz --out "$tmp/ftz"
check run_fp_env_recorded 0 '"fp_env": "ftz_daz"' -- cat "$tmp/ftz/report.json"
check run_fp_env_md 0 'floating-point environment `ftz_daz`' -- cat "$tmp/ftz/report.md"
check run_fp_env_default_holds 0 'every declared contract held' -- "$bin" run --impl shifted_f32 --family normal_s100 \
  --size 64 --property-tests 0 --out "$tmp/noftz"
check run_fp_env_not_recorded 1 '' -- grep -q fp_env "$tmp/noftz/report.json"
# The rerun reproduces the baseline's maximum exactly ("=": in the default
# environment shifted_f32 holds at a few ulp); the violated baseline fails.
check run_fp_env_gate_reruns_it 1 'shifted_f32 +softmax +f32 +[0-9.e+]+ +[0-9.e+]+ += ' -- \
  "$bin" gate --baseline "$tmp/ftz/report.json" --jobs 1
check run_fp_env_bad 2 'fp-env' -- "$bin" run --impl shifted_f32 --fp-env fast --out "$tmp/ftz_bad"
# check --fp-env: the properties with the kernel's calls under FTZ + DAZ (a
# subnormal output of [96, 0] flushed to 0 breaks the accuracy contract);
# the repro line carries the environment and replays the case in it only.
check check_fp_env_ftz_daz 1 'softcheck repro --fp-env ftz_daz --impl shifted_f32 --op softmax --property accuracy' -- \
  "$bin" check --impl shifted_f32 --property accuracy --tests 100 --fp-env ftz_daz
check check_fp_env_default_holds 0 'accuracy +passed' -- "$bin" check --impl shifted_f32 --property accuracy --tests 100
check repro_fp_env_fails 1 'result: +fail' -- "$bin" repro --fp-env ftz_daz --impl shifted_f32 --op softmax \
  --property accuracy --temperature=0x1p+0 --row=0x1.8p+6,0x0p+0
check repro_fp_env_default_passes 0 'result: +pass' -- "$bin" repro --impl shifted_f32 --op softmax \
  --property accuracy --temperature=0x1p+0 --row=0x1.8p+6,0x0p+0
check check_fp_env_bad 2 'fp-env' -- "$bin" check --impl shifted_f32 --fp-env fast

# check and repro: a shrunk counterexample replays; the correct kernel passes the same case.
check check_mutant 1 'softcheck repro --impl mutant_online_wrong_rescale' -- "$bin" check --impl mutant_online_wrong_rescale --property sum_to_one --tests 30
check repro_fails 1 'result: +fail' -- "$bin" repro --impl mutant_online_wrong_rescale --op softmax --property sum_to_one --temperature=0x1p+0 --row=-0x1p+0,0x0p+0
check repro_passes 0 'result: +pass' -- "$bin" repro --impl online_f32 --op softmax --property sum_to_one --temperature=0x1p+0 --row=-0x1p+0,0x0p+0
check repro_bad_row 2 'row' -- "$bin" repro --impl online_f32 --property sum_to_one --row=1,abc
check run_property_verdicts 0 '' -- bash -c "grep -q '\"property\": \"shift_invariance\"' '$tmp/a/report.json'"

# list
check list_table 0 'shifted_log1p_f32' -- "$bin" list
check list_json 0 '"masked_row_policy"' -- "$bin" list --json
check list_families 0 'benchdnn' -- "$bin" list --families
check no_command 2 '' -- "$bin"

finish
