#!/usr/bin/env bash
# Plugins through the built `softcheck` (docs/plugin-abi.md): the example
# plugin's flawed kernel is caught and named, its correct one holds; every
# failure mode gives its exact message and exit status, and the other kernels
# are still reported.
#   plugin_end_to_end.sh SOFTCHECK EXAMPLE_PLUGIN TEST_PLUGIN_DIR
set -u
bin=$1 example=$2 plugins=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

lib() { echo "$plugins/libtest_plugin_$1.so"; }
few=(--family xnnpack_u90_100 --family normal_s10 --size 8 --size 100 --jobs 2)

# The example: the flawed kernel is caught (exit 1, named), the correct one holds.
check_all list_example 0 "example_softmax_f32" "example_flawed_f32" "plugin:libsoftcheck_example_plugin.so" \
  -- "$bin" list --plugin "$example"
check_all example_caught 1 "example_flawed_f32" "VIOLATED" "CONTRACT VIOLATED" \
  -- "$bin" run --plugin "$example" --impl example_softmax_f32 --impl example_flawed_f32 "${few[@]}" --out "$tmp/ex"
check_all example_named_in_report 0 '"kernel": "example_flawed_f32"' '"status": "violated"' -- cat "$tmp/ex/report.json"
check_all example_correct_holds 0 "every declared contract held" \
  -- "$bin" run --plugin "$example" --impl example_softmax_f32 --out "$tmp/ok"
check_all example_held_in_report 0 '"status": "held"' -- cat "$tmp/ok/report.json"

# check: the flawed kernel fails a property it claims, with a repro line that
# replays through `repro` (exit 1); the correct one passes every property.
check_all check_example_correct 0 "example_softmax_f32" -- \
  "$bin" check --plugin "$example" --impl example_softmax_f32 --tests 20
# The repro line loads the plugin itself (--plugin, as check was given it)
# and replays as printed.
check_all check_example_flawed 1 "example_flawed_f32" "FAIL" \
  "softcheck repro --plugin $(realpath "$example") --impl example_flawed_f32" -- \
  "$bin" check --plugin "$example" --impl example_flawed_f32 --tests 20
repro_line=$("$bin" check --plugin "$example" --impl example_flawed_f32 --tests 20 2>&1 |
  grep -o 'softcheck repro --plugin [^ ]* --impl example_flawed_f32.*' | head -1)
read -ra repro_words <<<"${repro_line:-softcheck repro}"
check_all repro_example_flawed 1 "example_flawed_f32" -- "$bin" "${repro_words[@]:1}"

# gate: the correct kernel against its own baseline passes; the flawed one,
# renamed into the baseline of the correct one (a kernel team's regression),
# fails naming the checks; the rerun (no --report) needs the plugin to find
# the kernel, and reruns the baseline's property verdicts too.
check_all gate_report_ok 0 "example_softmax_f32" -- "$bin" gate --baseline "$tmp/ok/report.json" --report "$tmp/ok/report.json"
check_all gate_rerun_ok 0 "gate: passed" -- \
  "$bin" gate --baseline "$tmp/ok/report.json" --plugin "$example" --jobs 2 --junit "$tmp/gate-ok.xml"
check_all gate_rerun_junit 0 'example_softmax_f32' 'name="property:accuracy"' 'name="property:sum_to_one"' -- cat "$tmp/gate-ok.xml"
"$bin" run --plugin "$example" --impl example_flawed_f32 --jobs 2 --out "$tmp/bad" >/dev/null 2>&1
sed 's/example_flawed_f32/example_softmax_f32/g' "$tmp/bad/report.json" >"$tmp/bad-renamed.json"
check_all gate_catches_flawed 1 "example_softmax_f32" "FAIL" -- \
  "$bin" gate --baseline "$tmp/ok/report.json" --report "$tmp/bad-renamed.json"
check_all gate_without_plugin 2 "no kernel of the baseline exists in this build (a plugin's kernels need --plugin)" -- "$bin" gate --baseline "$tmp/ok/report.json" --jobs 2

# Load failures: harness errors (exit 2), nothing written.
check_all missing_file 2 "softcheck: error: plugin '$tmp/nope.so': no such file" \
  -- "$bin" run --plugin "$tmp/nope.so" --out "$tmp/none"
printf 'not a library\n%.0s' {1..20} >"$tmp/text.so"
check_all not_a_library 2 "softcheck: error: plugin '$tmp/text.so': not a loadable shared library ($tmp/text.so: invalid ELF header)" \
  -- "$bin" list --plugin "$tmp/text.so"
check_all missing_symbol 2 "plugin '$(lib no_entry)': does not export softcheck_plugin_kernels" \
  -- "$bin" run --plugin "$(lib no_entry)" --out "$tmp/none"
check_all abi_mismatch 2 "plugin '$(lib abi_v2)': ABI version mismatch: softcheck speaks version 1, the plugin version 2" \
  -- "$bin" run --plugin "$(lib abi_v2)" --out "$tmp/none"
check_all null_name 2 "plugin '$(lib null_name)': descriptor [1]: name is NULL" \
  -- "$bin" list --plugin "$(lib null_name)"
check_all duplicate 2 "descriptor [2] 'tp_ok_f32': duplicate of descriptor [0] (same name and op)" \
  -- "$bin" list --plugin "$(lib duplicate)"
check_all bad_enums 2 "8 problems:" "descriptor [2] 'tp_bad_f32': bad format value 7 (expected 1..4)" \
  -- "$bin" list --plugin "$(lib bad_enums)"
check_all clash_builtin 2 "descriptor [1] 'shifted_f32': name already used by a built-in kernel" \
  -- "$bin" list --plugin "$(lib clash)"
check_all loaded_twice 2 "name already used by a kernel of plugin:libsoftcheck_example_plugin.so" \
  -- "$bin" list --plugin "$example" --plugin "$example"
[[ ! -e $tmp/none ]] || { echo "FAIL: a failed load created $tmp/none"; failures=$((failures + 1)); }

# Run failures: that kernel fails, the others are still reported.
mis=(--plugin "$(lib misbehaving)" --impl tp_ok_f32 --impl tp_fails_f32 --impl tp_nan_f32)
check_all nonzero_and_nan 1 "kernel failed: plugin kernel 'tp_fails_f32' (softmax): run returned 7" \
  "FLAGGED: NaN/inf on finite input" -- "$bin" run "${mis[@]}" "${few[@]}" --out "$tmp/mis"
check_all others_reported 0 '"kernel": "tp_ok_f32"' '"status": "held"' '"kernel": "tp_nan_f32"' -- cat "$tmp/mis/report.json"
crash=(--plugin "$(lib misbehaving)" --impl tp_ok_f32 --impl tp_segv_f32 --impl tp_abort_f32)
check_all isolated_crash 1 "plugin kernel 'tp_segv_f32' (softmax): crashed with signal 11 (SIGSEGV)" \
  "plugin kernel 'tp_abort_f32' (softmax): crashed with signal 6 (SIGABRT)" \
  -- "$bin" run "${crash[@]}" --isolate "${few[@]}" --out "$tmp/iso"
check_all isolated_others_held 0 '"kernel": "tp_ok_f32"' '"status": "held"' -- cat "$tmp/iso/report.json"
# Without --isolate a crash takes the run down (documented): no verdict (2), the signal named, with a hint.
check_all crash_without_isolate 2 "rerun with --isolate" "ended by signal 11 (SIGSEGV) before it gave a verdict" \
  -- "$bin" run --plugin "$(lib misbehaving)" --impl tp_segv_f32 --size 8 --out "$tmp/down"

# An op this softcheck cannot run: listed as unavailable, no part in a run.
check_all sparsemax_listed 0 "unavailable: op sparsemax not supported by this softcheck version" \
  -- "$bin" list --plugin "$(lib misbehaving)"
check_all sparsemax_no_part 0 "kernel tp_sparsemax_f32 takes no part" \
  -- "$bin" run --plugin "$(lib misbehaving)" --impl tp_sparsemax_f32 --size 8 --out "$tmp/sparse"

# ABI version 2 (operands): an lse kernel next to softmax, run in-process and
# isolated, both ops held; the version-1 example above still runs unchanged.
check_all v2_listed 0 "v2test_shifted_f64" "lse" -- "$bin" list --plugin "$(lib lse_v2)"
check_all v2_run 0 '"op": "lse"' '"status": "held"' -- bash -c \
  "\"\$0\" run --plugin \"\$1\" --impl v2test_shifted_f64 --size 8 --size 1000 --out \"\$2\" --quiet && cat \"\$2/report.json\"" \
  "$bin" "$(lib lse_v2)" "$tmp/v2"
check_all v2_run_isolated 0 '"op": "lse"' -- bash -c \
  "\"\$0\" run --plugin \"\$1\" --impl v2test_shifted_f64 --size 8 --isolate --out \"\$2\" --quiet && cat \"\$2/report.json\"" \
  "$bin" "$(lib lse_v2)" "$tmp/v2iso"

finish
