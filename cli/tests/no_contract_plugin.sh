#!/usr/bin/env bash
# The floor every kernel gets whatever it declares (docs/gating-your-kernel.md,
# "The floor"): a plugin kernel with no contract that returns NaN on rows its
# format holds makes `run` exit 1 and fails the gate's "floor" check; a correct
# one without a contract exits 0 ("no_contract", floor passed).
#   no_contract_plugin.sh SOFTCHECK NO_CONTRACT_PLUGIN
set -u
bin=$1 plugin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

few=(--family xnnpack_u90_100 --family normal_s10 --size 8 --size 100 --jobs 2 --property-tests 0)

check_all unshifted_fails_run 1 "nc_unshifted_f32" "FLOOR VIOLATED" "NaN/inf where the exact value is finite" \
  -- "$bin" run --plugin "$plugin" --impl nc_unshifted_f32 "${few[@]}" --out "$tmp/bad"
check_all unshifted_in_report 0 '"status": "violated"' '"no_nonfinite"' -- cat "$tmp/bad/report.json"
check_all unshifted_floor_counted 0 -- python3 -c '
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
assert k["contract"]["declared"] is False, k["contract"]
v = k["floor"]["no_nonfinite"]["violations"]
assert v > 0 and k["contract_violations"] == 0, (v, k["contract_violations"])
assert json.load(open(sys.argv[1]))["verdict"] == "violated"
' "$tmp/bad/report.json"
check_all unshifted_in_markdown 0 "floor (no contract):" -- cat "$tmp/bad/report.md"

check_all shifted_passes_run 0 "nc_shifted_f32" -- \
  "$bin" run --plugin "$plugin" --impl nc_shifted_f32 "${few[@]}" --out "$tmp/ok"
check_all shifted_floor_zero 0 -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); k = r["kernels"][0]
assert k["status"] == "no_contract" and k["floor"]["no_nonfinite"]["violations"] == 0, k["status"]
assert r["verdict"] == "held"
' "$tmp/ok/report.json"

# The gate: the floor check fails the violating kernel, passes the correct one.
check_all gate_floor_fails 1 "floor" "nc_unshifted_f32" -- \
  "$bin" gate --baseline "$tmp/bad/report.json" --report "$tmp/bad/report.json" --junit "$tmp/bad.xml"
check_all gate_floor_junit 0 'name="floor"' '<failure' -- cat "$tmp/bad.xml"
check_all gate_floor_passes 0 "gate: passed" -- \
  "$bin" gate --baseline "$tmp/ok/report.json" --report "$tmp/ok/report.json"

finish "no-contract plugin"
