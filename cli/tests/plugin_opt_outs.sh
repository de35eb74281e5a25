#!/usr/bin/env bash
# Plugin kernels opt out of floor checks with a reason (softcheck_opt_out in
# a version-2 descriptor; docs/plugin-abi.md): the report shows the reason and
# the check is not applied; an unknown check or an empty reason is refused at
# load time (exit 2); a plugin built with the header before opt_outs loads
# and opts out of nothing (impls/tests/plugins/opt_out_plugin_v2.c).
#   plugin_opt_outs.sh SOFTCHECK PLUGIN_DIR
set -u
bin=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plugin() { echo "$dir/libtest_plugin_opt_out$1.so"; }
few=(--family normal_s1 --size 8 --jobs 2 --property-tests 0)

check_all opted_out_runs 0 "optout_wrong_f32" "every declared contract held" -- \
  "$bin" run --plugin "$(plugin 0)" --impl optout_wrong_f32 "${few[@]}" --out "$tmp/ok"
check_all opt_out_in_report 0 -- python3 -c '
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
assert k["reference"] == {"not_applied": "opted out: test: scaled by 1 + 1e6 u on purpose"}, k["reference"]
assert k["status"] == "no_contract", k["status"]
' "$tmp/ok/report.json"
check_all opt_out_in_markdown 0 "reference rule: not applied: opted out: test: scaled by 1 + 1e6 u on purpose" -- \
  cat "$tmp/ok/report.md"
check_all opt_out_in_check 0 "opted out: test: scaled by 1 + 1e6 u on purpose" -- \
  "$bin" check --plugin "$(plugin 0)" --impl optout_wrong_f32 --property sum_to_one --tests 10 --jobs 2

check_all unknown_check_refused 2 "opt_outs[0].check 'no_such_check' is not a floor check" -- \
  "$bin" run --plugin "$(plugin 1)" "${few[@]}" --out "$tmp/bad1"
absent unknown_check_wrote_nothing "$tmp/bad1/report.json"
check_all empty_reason_refused 2 "opt_outs[0] (reference): the reason is empty" -- \
  "$bin" run --plugin "$(plugin 2)" "${few[@]}" --out "$tmp/bad2"

check_all old_header_loads 1 "optout_wrong_f32" "optout_old2_f32" "REFERENCE" -- \
  "$bin" run --plugin "$(plugin 3)" "${few[@]}" --out "$tmp/old"

finish "plugin opt-outs"
