#!/usr/bin/env bash
# The gate demo (docs/gate.md) on the built binary, plus `softcheck report`
# and a `softcheck bench` smoke (no timing is asserted):
#   - baseline from a correct kernel, candidate from a broken one under the
#     same name -> exit 1 naming the regression;
#   - a kernel against its own baseline -> exit 0 (given report and rerun);
#   - malformed, foreign, missing baselines -> exit 2, nothing written.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

small=(--family xnnpack_u90_100 --family normal_s10 --size 31 --size 100 --seed 3 --jobs 2 --quiet)

# Baseline: the correct shifted_f32. Candidate: mutant_skip_tail (shifted, but
# the last cols % 8 entries are dropped and written as 0) renamed shifted_f32 --
# a broken build of the same kernel, as CI would see it.
check baseline_run 0 '' -- "$bin" run --impl shifted_f32 "${small[@]}" --out "$tmp/base"
check broken_run 1 '' -- "$bin" run --impl mutant_skip_tail "${small[@]}" --out "$tmp/broken"
sed -e 's/"kernel": "mutant_skip_tail"/"kernel": "shifted_f32"/' "$tmp/broken/report.json" >"$tmp/candidate.json"
check renamed 0 '' -- grep -q '"kernel": "shifted_f32"' "$tmp/candidate.json"

# Broken kernel under the same name: exit 1, the regression named with its numbers.
check gate_regression 1 'shifted_f32 +softmax +\[margin\]: max ULP [0-9.e+]+ -> [0-9.e+]+ \(allowed' -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/candidate.json" --junit "$tmp/junit.xml"
check gate_regression_contract 1 'shifted_f32 +softmax +\[contract\]: contract violated' -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/candidate.json"
check gate_regression_table 1 'shifted_f32 +softmax .*FAIL: contract, margin' -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/candidate.json"
check junit_failures 0 '' -- grep -q '<testcase classname="softcheck.gate.shifted_f32.softmax" name="margin">' "$tmp/junit.xml"
check junit_counts 0 '' -- grep -qE '<testsuites name="softcheck gate" tests="[0-9]+" failures="[1-9]' "$tmp/junit.xml"

# The same kernel against its own baseline: given, and rerun from the
# baseline's recorded suite, seed and kernels.
check gate_same_report 0 'gate: passed' -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/base/report.json"
check gate_same_rerun 0 'gate: passed' -- "$bin" gate --baseline "$tmp/base/report.json" --jobs 2 \
  --junit "$tmp/junit-pass.xml"
check junit_pass 0 '' -- grep -q 'failures="0"' "$tmp/junit-pass.xml"

# FlashAttention-style rule: online_f32 against k x shifted_f32 in the same run.
check pair_run 0 '' -- "$bin" run --impl shifted_f32 --impl online_f32 "${small[@]}" --out "$tmp/pair"
check gate_reference_pass 0 'online_f32 +softmax .*ok' -- "$bin" gate --baseline "$tmp/pair/report.json" \
  --report "$tmp/pair/report.json" --reference-rule shifted_f32:2 --junit "$tmp/junit-ref.xml"
check junit_reference 0 '' -- grep -q 'classname="softcheck.gate.online_f32.softmax" name="reference:shifted_f32"' \
  "$tmp/junit-ref.xml"

# Harness errors: exit 2, a clear message, no JUnit written.
printf '{"schema": "softcheck-report", "schema_version": 1, ' >"$tmp/truncated.json"
printf '{"schema": "someone-elses-report", "schema_version": 1}\n' >"$tmp/foreign.json"
sed -e 's/"schema_version": 1/"schema_version": 2/' "$tmp/base/report.json" >"$tmp/future.json"
sed -e 's/"max_ulp": \([0-9.e+-]*\),/"max_ulp": "\1",/' "$tmp/base/report.json" >"$tmp/mistyped.json"
check gate_truncated 2 'truncated.json: not valid JSON' -- \
  "$bin" gate --baseline "$tmp/truncated.json" --report "$tmp/base/report.json" --junit "$tmp/j2.xml"
check gate_foreign 2 "schema is 'someone-elses-report', expected 'softcheck-report'" -- \
  "$bin" gate --baseline "$tmp/foreign.json" --report "$tmp/base/report.json" --junit "$tmp/j2.xml"
check gate_future 2 'unsupported schema_version 2' -- \
  "$bin" gate --baseline "$tmp/future.json" --report "$tmp/base/report.json" --junit "$tmp/j2.xml"
check gate_mistyped 2 'kernels\[0\]\.max_ulp: expected a number or null, found a string' -- \
  "$bin" gate --baseline "$tmp/mistyped.json" --report "$tmp/base/report.json" --junit "$tmp/j2.xml"
check gate_missing 2 'nosuch.json: no such file' -- \
  "$bin" gate --baseline "$tmp/nosuch.json" --report "$tmp/base/report.json" --junit "$tmp/j2.xml"
check gate_bad_report 2 'foreign.json' -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/foreign.json" --junit "$tmp/j2.xml"
check gate_bad_rule 2 'expected KERNEL:K' -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/base/report.json" --reference-rule shifted_f32
check gate_unknown_rule_kernel 2 "kernel 'nosuch_f32' is not in the report" -- \
  "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/base/report.json" --reference-rule nosuch_f32:2
absent gate_errors_write_nothing "$tmp/j2.xml"

# report: re-rendering a saved run gives the same files; bad input writes nothing.
check report_render 0 'wrote' -- "$bin" report "$tmp/base/report.json" --html "$tmp/r/out.html" --md "$tmp/r/out.md"
check report_same_html 0 '' -- cmp "$tmp/r/out.html" "$tmp/base/report.html"
check report_same_md 0 '' -- cmp "$tmp/r/out.md" "$tmp/base/report.md"
mkdir -p "$tmp/saved" && cp "$tmp/base/report.json" "$tmp/saved/run.json"
check report_defaults 0 '' -- "$bin" report "$tmp/saved/run.json" --quiet
check report_default_files 0 '' -- test -s "$tmp/saved/run.html" -a -s "$tmp/saved/run.md"
check report_html_plots 0 '' -- grep -q '<svg class="plot"' "$tmp/saved/run.html"
check report_foreign 2 "schema is 'someone-elses-report'" -- "$bin" report "$tmp/foreign.json" --html "$tmp/bad.html"
check report_malformed 2 'not valid JSON' -- "$bin" report "$tmp/truncated.json" --html "$tmp/bad.html"
check report_missing 2 'no such file' -- "$bin" report "$tmp/nosuch.json" --html "$tmp/bad.html"
absent report_errors_write_nothing "$tmp/bad.html"

# bench smoke (when Google Benchmark was found): tiny, merged into the report,
# which the gate still reads. Nothing about timing is asserted.
if [[ -x $(dirname "$bin")/softcheck_bench ]]; then
  check bench_smoke 0 '' -- "$bin" bench --impl shifted_f32 --min-time 0.01 --out "$tmp/base" --quiet
  check bench_json 0 '' -- grep -q '"schema": "softcheck-bench"' "$tmp/base/bench.json"
  check bench_merged 0 '' -- grep -q '"performance"' "$tmp/base/report.json"
  check bench_html 0 '' -- grep -q 'id="performance"' "$tmp/base/report.html"
  check bench_gate_reads 0 'gate: passed' -- \
    "$bin" gate --baseline "$tmp/base/report.json" --report "$tmp/base/report.json"
  check bench_unknown 2 "unknown kernel 'nosuch'" -- "$bin" bench --impl nosuch --out "$tmp/nobench"
  absent bench_unknown_writes_nothing "$tmp/nobench"
else
  echo "softcheck_bench not built (no Google Benchmark): bench smoke skipped"
fi

finish
