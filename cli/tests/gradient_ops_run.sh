#!/usr/bin/env bash
# The gradient ops, ops with a second input (docs/gradients.md).
# Cross-entropy (the class target): `run --op cross_entropy` on the quick suite runs every
# kernel that provides it, both outputs (loss, dx) hold their contracts and
# the run exits 0; the careless kernel (loss = -log(softmax(x)_t)) violates
# its loss contract and exits 1 with a repro line that replays the failure;
# `oracle --target` prints the exact loss and gradient; the gate reruns an
# --op baseline (its selection records the op) and passes.
# softmax / log-softmax backward (the upstream gradient): `run --op` holds
# both outputs' contracts for the naive and the wide kernels; `oracle
# --upstream` prints the exact gradient.
#   gradient_ops_run.sh SOFTCHECK
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Every quick-suite family at five of its sizes (1 to 4096: the row lengths
# where tiling, masking and the one-element row differ; 65536 adds oracle
# time, not paths), both temperatures.
sizes=(--size 1 --size 3 --size 31 --size 1000 --size 4096)

check_all quick_suite_holds 0 "cross_entropy_f32" "cross_entropy:loss" "cross_entropy:dx" \
  "cross_entropy_chunked_f64" "bf16_cross_entropy_f32acc" "cross_entropy_ls0p1_f32" "every declared contract held" -- \
  "$bin" run --op cross_entropy "${sizes[@]}" --jobs 2 --property-tests 0 --out "$tmp/ce"
check_all quick_suite_report 0 -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["run"]["selection"]["ops"] == ["cross_entropy"], r["run"]["selection"]
ks = r["kernels"]
assert {k["op"] for k in ks} == {"cross_entropy"}, {k["op"] for k in ks}
assert len(ks) == 26 and {k["output"] for k in ks} == {"loss", "dx"}, len(ks)
# The kernels declaring label smoothing 0.1 (docs/gradients.md) are judged
# against the smoothed target: four of them, both outputs.
assert len([k for k in ks if "_ls0p1_" in k["kernel"]]) == 8, [k["kernel"] for k in ks]
for k in ks:
    assert k["status"] == "held" and k["contract"]["declared"], (k["kernel"], k["output"], k["status"])
    assert 0 < k["max_bound_ratio"] <= 1, (k["kernel"], k["max_bound_ratio"])
    assert k["rows"] > 1000, (k["kernel"], k["rows"])
assert r["verdict"] == "held"
' "$tmp/ce/report.json"

check_all careless_fails 1 "careless_cross_entropy_f32" "CONTRACT VIOLATED" -- \
  "$bin" run --impl careless_cross_entropy_f32 "${sizes[@]}" --jobs 2 --property-tests 0 --out "$tmp/careless"
check_all careless_counted 0 -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
loss = [k for k in r["kernels"] if k["output"] == "loss"][0]
assert loss["status"] == "violated" and loss["contract_violations"] > 0, loss["status"]
assert loss["worst"]["repro"].startswith("softcheck run --impl careless_cross_entropy_f32 "), loss["worst"]["repro"]
open(sys.argv[2], "w").write(loss["worst"]["repro"].replace("softcheck ", "", 1))
' "$tmp/careless/report.json" "$tmp/repro_args"
read -r -a repro < "$tmp/repro_args"
check_all careless_repro_replays 1 "CONTRACT VIOLATED" -- "$bin" "${repro[@]}" --property-tests 0 --out "$tmp/replay"

# The exact values: x = [0, 0], target 0: loss log 2, gradient [-1/2, 1/2].
check_all oracle_target 0 "loss 6.93147180559945309417e-01" "dx -5.00000000000000000000e-01 -0.5" \
  "dx 5.00000000000000000000e-01 0.5" -- "$bin" oracle --op cross_entropy --target 0 --digits 21 0 0
# Label smoothing 0.1 on x = [0, 0], target 0: q = [0.95, 0.05], loss log 2, gradient [-0.45, 0.45].
check_all oracle_label_smoothing 0 "loss 6.931e-01" "dx -4.500e-01 -0.45" "dx 4.500e-01 0.45" -- \
  "$bin" oracle --op cross_entropy --target 0 --label-smoothing 0.1 --digits 4 0 0
check_all oracle_label_smoothing_range 2 "--label-smoothing must be in [0, 1]" -- \
  "$bin" oracle --op cross_entropy --target 0 --label-smoothing 1.5 0 0
check_all oracle_label_smoothing_other_op 2 "--label-smoothing applies to --op cross_entropy only" -- \
  "$bin" oracle --op softmax --label-smoothing 0.1 0 0
check_all oracle_needs_target 2 "--op cross_entropy needs --target" -- "$bin" oracle --op cross_entropy 0 0
check_all oracle_target_range 2 "outside [0, 2)" -- "$bin" oracle --op cross_entropy --target 2 0 0
check_all oracle_target_other_op 2 "--target applies to --op cross_entropy only" -- \
  "$bin" oracle --op softmax --target 0 0 0
check_all unknown_op 2 "--op" -- "$bin" run --op nosuch --out "$tmp/x"
# --op with nothing to run is an error, not a pass.
check_all op_not_provided 2 "kernel shifted_f32 provides none of the ops given with --op" -- \
  "$bin" run --impl shifted_f32 --op cross_entropy --out "$tmp/x"
# An ignored row: loss and gradient 0 whatever x holds, fully masked too.
check_all oracle_ignored_masked 0 "loss 0.000e+00 0" "dx 0.000e+00 0" -- \
  "$bin" oracle --op cross_entropy --target -100 --digits 4 -- -inf -inf

# The gate reruns the baseline's selection, --op included.
check_all gate_passes 0 "gate: passed" -- "$bin" gate --baseline "$tmp/ce/report.json" --jobs 2

check_all backward_holds 0 "softmax_backward_wide_f64" "bf16_log_softmax_backward_f32acc" "log_softmax_backward:dx" \
  "every declared contract held" -- \
  "$bin" run --op softmax_backward --op log_softmax_backward "${sizes[@]}" --jobs 2 --property-tests 0 --out "$tmp/bw"
check_all backward_footnote 0 "softmax_backward:dx (s_i = y_i (|g_i| + sum_j y_j |g_j|))" -- cat "$tmp/bw/report.md"
check_all backward_report 0 -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
ks = r["kernels"]
assert r["run"]["selection"]["ops"] == ["softmax_backward", "log_softmax_backward"], r["run"]["selection"]
assert len(ks) == 28 and {k["output"] for k in ks} == {"y", "dx"}, len(ks)
for k in ks:
    assert k["status"] == "held" and 0 < k["max_bound_ratio"] <= 1, (k["kernel"], k["output"], k["status"])
    # The conditional mode: dx only, every row measured, nothing broken.
    assert ("conditional" in k) == (k["output"] == "dx"), (k["kernel"], k["output"])
    if k["output"] == "dx":
        c = k["conditional"]
        assert c["rows"] == k["rows"] - k["policy_rows"] and c["broken"] == 0, (k["kernel"], c)
# Given its own y, the wide softmax backward is one rounding from exact
# (its backward alone: 1 + (n + 3) 2^-29), while end to end it carries the
# forward error: the mode separates them.
wide = [k for k in ks if k["kernel"] == "softmax_backward_wide_f32" and k["output"] == "dx"][0]
assert wide["conditional"]["max_error"] < 2 < wide["max_ulp"], (wide["conditional"], wide["max_ulp"])
' "$tmp/bw/report.json"
check_all backward_conditional_md 0 "conditional mode (dx against the exact backward of the kernel's own y" -- \
  cat "$tmp/bw/report.md"
# x = [0, 0], g = [1, 0]: y = [1/2, 1/2], dx = [1/4, -1/4].
check_all oracle_upstream 0 "dx 2.500e-01 0.25" "dx -2.500e-01 -0.25" -- \
  "$bin" oracle --op softmax_backward --upstream 1,0 --digits 4 0 0
check_all oracle_needs_upstream 2 "--op log_softmax_backward needs --upstream" -- \
  "$bin" oracle --op log_softmax_backward 0 0
finish gradient_ops_run
