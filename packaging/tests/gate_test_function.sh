#!/usr/bin/env bash
# softcheck_add_gate_test (cmake/SoftcheckGateTest.cmake) without an install:
#   - each missing or wrong argument stops the configure with its message;
#   - a valid call adds a test whose command is the gate line it documents;
#   - the test's runner (cmake/SoftcheckGateTestRun.cmake) refuses a baseline
#     without the named kernels before running anything, removes a stale JUnit
#     file, and fails exactly when the gate command fails.
# Usage: gate_test_function.sh CMAKE CTEST TESTS_DIR SOFTCHECK_CMAKE_DIR
set -euo pipefail
cmake=$1 ctest=$2 tests=$3 module_dir=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$tests/../../cli/tests/lib.sh"
set +e  # lib.sh's checks judge exit statuses themselves

# CMake wraps its error messages: the checks read them as one line (pipefail
# keeps CMake's exit status).
configure() {  # configure CASE
  "$cmake" -S "$tests/gate-args" -B "$tmp/$1" -DCASE="$1" -DSOFTCHECK_GATE_TEST="$module_dir/SoftcheckGateTest.cmake" \
    2>&1 | tr -s ' \n' ' '
}

check missing_name 1 'NAME is required' -- configure missing_name
check missing_plugin 1 'PLUGIN is required' -- configure missing_plugin
check missing_kernels 1 'KERNELS is required' -- configure missing_kernels
check missing_baseline 1 'BASELINE is required' -- configure missing_baseline
check kernels_without_value 1 'KERNELS needs a value' -- configure kernels_without_value
check suite 1 'there is no SUITE option: softcheck gate reruns the suite' -- configure suite
check unknown_argument 1 'unexpected arguments: --isolate' -- configure unknown_argument
check static_plugin 1 "PLUGIN 'my_static' is a STATIC_LIBRARY target" -- configure static_plugin
check unknown_plugin 1 "PLUGIN 'no_such_target' is neither a target" -- configure unknown_plugin
check bad_kernel 1 "'a,b' is not a kernel name" -- configure bad_kernel
check bad_jobs 1 "JOBS must be a positive integer, not '0'" -- configure bad_jobs
check no_softcheck 1 'no softcheck::softcheck target; call find_package\(softcheck CONFIG REQUIRED\)' -- configure no_softcheck

# A valid call: the command line, as ctest will run it (one JSON string per argument).
check ok 0 '' -- configure ok
"$ctest" --test-dir "$tmp/ok" --show-only=json-v1 >"$tmp/tests.json"
src=$tests/gate-args bin=$tmp/ok
q() { local s; for s in "$@"; do printf '"%s",' "$s"; done; }
full=$(q -P "$module_dir/SoftcheckGateTestRun.cmake" -- "$src/base/report.json" k1,k2 "$bin/out/g.xml" \
         /opt/sc/bin/softcheck gate --baseline "$src/base/report.json" --plugin /opt/plugins/libmy_plugin.so \
         --plugin "$bin/other/libx.so" --junit "$bin/out/g.xml" --isolate --jobs 3 --margin 0.2 --quiet)
defaults=$(q -P "$module_dir/SoftcheckGateTestRun.cmake" -- /abs/base.json k1 "$bin/softcheck-gate/gate_defaults.xml" \
             /opt/sc/bin/softcheck gate --baseline /abs/base.json --plugin /abs/liby.so \
             --junit "$bin/softcheck-gate/gate_defaults.xml")
tr -d ' \n' <"$tmp/tests.json" >"$tmp/compact.json"
check_all ok_full_command 0 "${full%,}]" -- cat "$tmp/compact.json"
check_all ok_defaults_command 0 "${defaults%,}]" -- cat "$tmp/compact.json"
check_all ok_properties 0 '"name":"PROCESSORS","value":3' '"name":"LABELS","value":["softcheck"]' -- cat "$tmp/compact.json"

# The runner, with stand-ins for softcheck gate.
run() { "$cmake" -P "$module_dir/SoftcheckGateTestRun.cmake" -- "$@" 2>&1 | tr -s ' \n' ' '; }
printf '{"schema": "softcheck-report", "kernels": [{"kernel": "a", "op": "softmax"}, {"kernel": "b", "op": "softmax"}, {"kernel": "a", "op": "log_softmax"}]}\n' >"$tmp/base.json"
printf '{"schema": "softcheck-report", "kernels": [' >"$tmp/truncated.json"
echo stale >"$tmp/junit.xml"
check run_pass 0 '' -- run "$tmp/base.json" a,b "$tmp/junit.xml" true
check run_removes_stale_junit 1 '' -- test -e "$tmp/junit.xml"
check run_gate_regression 1 'softcheck gate exited 1 \(a regression, named above\)' -- \
  run "$tmp/base.json" a "$tmp/junit.xml" sh -c 'exit 1'
check run_gate_harness_error 1 'softcheck gate exited 2 \(a usage or harness error' -- \
  run "$tmp/base.json" a "$tmp/junit.xml" sh -c 'exit 2'
check run_kernel_not_in_baseline 1 'has no entry for c \(it has: a, b\)' -- \
  run "$tmp/base.json" a,c "$tmp/junit.xml" touch "$tmp/ran"
absent run_not_run_without_kernel "$tmp/ran"
check run_no_baseline 1 'baseline .*/nosuch.json does not exist' -- run "$tmp/nosuch.json" a "$tmp/junit.xml" true
check run_bad_baseline 1 'cannot read the kernels of baseline' -- run "$tmp/truncated.json" a "$tmp/junit.xml" true
printf '{"schema": "softcheck-report", "kernels": {"kernel": "a"}}\n' >"$tmp/object.json"
check run_kernels_not_array 1 'kernels is OBJECT, not an array' -- run "$tmp/object.json" a "$tmp/junit.xml" true
check run_usage 1 'usage: cmake -P SoftcheckGateTestRun.cmake' -- run "$tmp/base.json" a

finish packaging.gate_test_function
