#!/usr/bin/env bash
# The gate per (family, row length) cell and its bias check (docs/gate.md),
# against a baseline of a correct kernel (candidate_f32, variant 0 of
# impls/tests/plugins/gate_variants_plugin.c), each variant rerun by the gate
# itself (`gate --baseline B --plugin P`):
#   variant 1 (expf as exp2f(z log2 e)) fails cells of normal_s10 on error/bound,
#   variant 2 (every output 2 ulp high) fails the bias check,
#   variant 3 (the sum in reverse order) passes;
# and a baseline whose input rows differ from the rerun's is refused.
#   gate_cells.sh SOFTCHECK PLUGIN_DIR
set -u
bin=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plugin() { echo "$dir/libtest_plugin_gate_variant$1.so"; }

check_all baseline_holds 0 "candidate_f32" -- \
  "$bin" run --plugin "$(plugin 0)" --impl candidate_f32 --jobs 2 --property-tests 0 --out "$tmp/base"

# The gate's own rerun evaluates the baseline's cases: the same kernel gives
# the same figures, and no note that the cases differ.
check_all rerun_same_cases 0 "gate: passed" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --plugin "$(plugin 0)" --jobs 2
check rerun_no_case_note 0 "" -- bash -c \
  "! '$bin' gate --baseline '$tmp/base/report.json' --plugin '$(plugin 0)' --jobs 2 | grep -q 'cases ('"

# The baseline records a digest of the input rows every case ran on; a
# rerun on other rows (an input family changed between two softchecks) is
# refused, not compared; a baseline or report from before the digest gets a note
# that names it.
check inputs_digest_recorded 0 '"inputs": "fnv1a64:[0-9a-f]{16}"' -- cat "$tmp/base/report.json"
sed -E 's/"inputs": "fnv1a64:[0-9a-f]{16}"/"inputs": "fnv1a64:0123456789abcdef"/' "$tmp/base/report.json" \
  >"$tmp/other_rows.json"
check_all gate_refuses_other_rows 2 "ran on different input rows" "fnv1a64:0123456789abcdef against fnv1a64:" -- \
  "$bin" gate --baseline "$tmp/other_rows.json" --plugin "$(plugin 0)" --jobs 2
grep -v '"inputs": "fnv1a64:' "$tmp/base/report.json" >"$tmp/no_digest.json"
check_all gate_notes_no_digest 0 "records no inputs digest" "gate: passed" -- \
  "$bin" gate --baseline "$tmp/no_digest.json" --plugin "$(plugin 0)" --jobs 2
check_all gate_notes_report_without_digest 0 "no_digest.json records no inputs digest" "gate: passed" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/no_digest.json"
sed -E 's/"inputs": "fnv1a64:[0-9a-f]{16}"/"inputs": "fnv1a64:XYZ"/' "$tmp/base/report.json" >"$tmp/bad_digest.json"
check_all gate_rejects_malformed_digest 2 "inputs" "16 lower-case hex digits" -- \
  "$bin" gate --baseline "$tmp/bad_digest.json" --plugin "$(plugin 0)" --jobs 2

check_all exp2_fails_cells 1 "[cell:normal_s10/" "error/bound" "gate: FAILED" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --plugin "$(plugin 1)" --jobs 2 --junit "$tmp/exp2.xml"
check_all exp2_junit_body 0 'name="cell:normal_s10/' '<failure message=' \
  "repro: softcheck run --plugin $(realpath "$(plugin 1)") --impl candidate_f32" -- cat "$tmp/exp2.xml"
# Its overall maximum alone would not have caught it: the margin check passes.
check exp2_margin_passes 0 "" -- bash -c \
  "! '$bin' gate --baseline '$tmp/base/report.json' --plugin '$(plugin 1)' --jobs 2 | grep -q '\[margin\]'"
# The cell's repro line replays as printed.
repro=$(grep -o 'repro: softcheck run [^&<]*' "$tmp/exp2.xml" | head -1 | sed 's/^repro: softcheck //')
check_all exp2_repro_replays 0 "candidate_f32" -- "$bin" $repro --property-tests 0 --out "$tmp/replay"

check_all bias_fails 1 "[bias:" "sign test" "gate: FAILED" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --plugin "$(plugin 2)" --jobs 2
check_all bias_flagged_in_run 0 "BIASED" -- \
  "$bin" run --plugin "$(plugin 2)" --impl candidate_f32 --jobs 2 --property-tests 0 --out "$tmp/biased"
check_all bias_in_report 0 '"biased": true' -- cat "$tmp/biased/report.json"
check_all bias_in_markdown 0 "Bias and distribution" "**BIASED**" -- cat "$tmp/biased/report.md"

# --junit-times: measured seconds in the JUnit file (the rerun only).
check_all junit_times 0 "gate: passed" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --plugin "$(plugin 0)" --jobs 2 --junit "$tmp/times.xml" --junit-times
check all_timed 0 '<testsuite name="softcheck.gate" [^>]* time="[0-9]+\.[0-9]{6}">' -- cat "$tmp/times.xml"
check contract_timed 0 'name="contract" time="[0-9]+\.[0-9]{6}"' -- cat "$tmp/times.xml"
check_all junit_times_needs_rerun 2 "--junit-times needs" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/base/report.json" --junit "$tmp/t2.xml" --junit-times
absent junit_times_wrote_nothing "$tmp/t2.xml"

check_all summation_order_passes 0 "gate: passed" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --plugin "$(plugin 3)" --jobs 2

finish "gate cells"
