#!/usr/bin/env bash
# The floor every kernel gets whatever it declares (docs/gating-your-kernel.md,
# "The floor"): a plugin kernel with no contract that returns NaN on rows its
# format holds makes `run` exit 1 and fails the gate's "floor" check; one
# wrong by 1e6 ulp and one that drops the tail of the row break the reference
# rule and exit 1; a correct one without a contract exits 0 ("no_contract",
# floor and reference rule passed). Repro lines name the plugin and replay.
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
assert k["reference"]["violations"] == 0 and k["reference"]["rows"] > 0, k["reference"]
assert r["verdict"] == "held"
' "$tmp/ok/report.json"

# The reference rule: finite, ordered, wrong outputs.
for k in nc_wrong_f32 nc_droptail_f32; do
  check_all "${k}_fails_run" 1 "$k" "REFERENCE" "error above 2 x shifted_f32's + 4 u" "FLOOR VIOLATED" -- \
    "$bin" run --plugin "$plugin" --impl "$k" "${few[@]}" --out "$tmp/$k"
  check_all "${k}_reference_counted" 0 -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); k = r["kernels"][0]
ref = k["reference"]
assert ref["kernel"] == "shifted_f32" and ref["violations"] > 0 and ref["violations"] <= ref["rows"], ref
assert k["status"] == "violated" and k["nonfinite"] == 0 and r["verdict"] == "violated", k["status"]
' "$tmp/$k/report.json"
done
check_all reference_in_markdown 0 "reference rule against" -- cat "$tmp/nc_wrong_f32/report.md"
check_all gate_reference_fails 1 "[reference]" "nc_droptail_f32" -- \
  "$bin" gate --baseline "$tmp/nc_droptail_f32/report.json" --report "$tmp/nc_droptail_f32/report.json"

# Repro lines of a plugin kernel load it as the run did (--plugin, --isolate)
# and replay as printed: in the terminal, report.md and report.json.
check_all isolated_run_fails 1 "repro: softcheck run --plugin $(realpath "$plugin")" "--isolate" -- \
  "$bin" run --plugin "$plugin" --isolate --impl nc_wrong_f32 --family normal_s1 --size 8 --jobs 2 \
  --property-tests 0 --out "$tmp/iso"
check_all repro_in_markdown 0 "--plugin $(realpath "$plugin") --isolate --impl nc_wrong_f32" -- cat "$tmp/iso/report.md"
repro=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["worst"]["repro"])' \
  "$tmp/iso/report.json")
check_all repro_names_plugin 0 "--isolate" -- echo "$repro"
check_all repro_replays 1 "REFERENCE" -- bash -c "'$bin' ${repro#softcheck } --property-tests 0 --out '$tmp/replayed'"

# A failing property's repro line (check's output) loads the plugin and replays.
check_all check_repro_names_plugin 1 "softcheck repro --plugin $(realpath "$plugin") --impl nc_wrong_f32" -- \
  "$bin" check --plugin "$plugin" --impl nc_wrong_f32 --property sum_to_one --tests 20 --jobs 2
prepro=$("$bin" check --plugin "$plugin" --impl nc_wrong_f32 --property sum_to_one --tests 20 --jobs 2 2>&1 |
  grep -o 'softcheck repro --plugin [^ ]* --impl nc_wrong_f32 .*' | head -1)
check_all check_repro_replays 1 "fail" -- bash -c "'$bin' ${prepro#softcheck }"

# The gate: the floor check fails the violating kernel, passes the correct one.
check_all gate_floor_fails 1 "floor" "nc_unshifted_f32" -- \
  "$bin" gate --baseline "$tmp/bad/report.json" --report "$tmp/bad/report.json" --junit "$tmp/bad.xml"
check_all gate_floor_junit 0 'name="floor"' '<failure' -- cat "$tmp/bad.xml"
check_all gate_floor_passes 0 "gate: passed" -- \
  "$bin" gate --baseline "$tmp/ok/report.json" --report "$tmp/ok/report.json"

finish "no-contract plugin"
