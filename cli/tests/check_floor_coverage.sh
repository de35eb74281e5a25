#!/usr/bin/env bash
# `softcheck check` on kernels without a contract and its coverage lines
# (docs/properties.md, "The floor's generic tolerance" and "Coverage"):
#  - a plugin kernel without a contract claims sum_to_one, shift_invariance and
#    permutation with the generic tolerance and passes them; one without the
#    max shift fails them;
#  - every verdict that ran has a coverage line whose counts fit its scope,
#    a passed property with a zero count among masks / ties / t_not_1 has the
#    "never met" line naming exactly those, and the output is the same for
#    any --jobs.
#   check_floor_coverage.sh SOFTCHECK NO_CONTRACT_PLUGIN
set -u
bin=$1 plugin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

floor=(--property sum_to_one --property shift_invariance --property permutation --tests 30)
check nc_shifted_claims_and_passes 0 \
  'nc_shifted_f32 +softmax +shift_invariance +passed +30 +worst .*; the floor: generic tolerance' \
  -- "$bin" check --plugin "$plugin" --impl nc_shifted_f32 "${floor[@]}"
check_all nc_shifted_all_three 0 "sum_to_one" "permutation" "64 + 12n + 12R + 4M + 16M[T!=1] ulps, no contract" \
  -- "$bin" check --plugin "$plugin" --impl nc_shifted_f32 "${floor[@]}"
check nc_unshifted_fails 1 'nc_unshifted_f32 +softmax +shift_invariance +failed' \
  -- "$bin" check --plugin "$plugin" --impl nc_unshifted_f32 "${floor[@]}"

# Coverage: the same lines for --jobs 1 and 3.
cov=(check --impl shifted_f32 --impl online_f32 --impl f16_shifted_f16acc --property masked_entries
     --property fully_masked --property sum_to_one --property permutation --property no_nonfinite)
"$bin" "${cov[@]}" --tests 20 --seed 3 --jobs 1 > "$tmp/one.txt" 2>&1; one=$?
"$bin" "${cov[@]}" --tests 20 --seed 3 --jobs 3 > "$tmp/three.txt" 2>&1; three=$?
check_all coverage_exit 0 -- test "$one$three" = 00
check_all coverage_same_for_any_jobs 0 -- cmp "$tmp/one.txt" "$tmp/three.txt"
# Tiny budgets, where some classes go unmet.
for seed in 1 2 3; do "$bin" "${cov[@]}" --tests 2 --seed "$seed" --jobs 2 > "$tmp/tiny$seed.txt" 2>&1; done

check_all coverage_counts 0 -- python3 - "$tmp"/one.txt "$tmp"/tiny?.txt <<'EOF'
import re, sys
classes = ["masks", "ties", "overflow_edge", "subnormal_outputs", "t_not_1", "long_rows"]
never_lines = 0
for path in sys.argv[1:]:
    text = open(path).read()
    verdicts = {}  # (kernel, op, property) -> verdict, from the table
    for m in re.finditer(r"^(\S+) +(\S+) +(\S+) +(passed|failed|not_claimed|skipped|gave_up|error) ", text, re.M):
        verdicts[m.group(1, 2, 3)] = m.group(4)
    never = {}
    for m in re.finditer(r"^never met: (\S+) (\S+) (\S+): none of its (\d+) passing cases had (.*)$", text, re.M):
        never[m.group(1, 2, 3)] = m.group(5).split(", ")
    never_lines += len(never)
    lines = re.findall(r"^coverage (\S+) +(\S+) +(\S+) +cases=(\d+) (.*)$", text, re.M)
    assert lines, "no coverage lines in " + path
    ran = {k for k, v in verdicts.items() if v != "not_claimed"}
    assert ran == {l[:3] for l in lines}, ("coverage lines != verdicts that ran", ran ^ {l[:3] for l in lines})
    for kernel, op, prop, cases, rest in lines:
        counts = dict(kv.split("=") for kv in rest.split())
        assert list(counts) == classes, counts
        counts = {k: int(v) for k, v in counts.items()}
        cases = int(cases)
        assert all(0 <= v <= cases for v in counts.values()), (kernel, prop, counts)
        if prop in ("masked_entries", "fully_masked"):
            assert counts["masks"] == cases, (kernel, prop, counts)
        if prop in ("fully_masked", "no_nonfinite"):
            assert counts["masks" if prop == "no_nonfinite" else "ties"] == 0, (kernel, prop, counts)
        if prop in ("sum_to_one", "permutation") and verdicts[(kernel, op, prop)] == "passed":
            unmet = [c for c in ("masks", "ties", "t_not_1") if counts[c] == 0]
            assert never.get((kernel, op, prop), []) == unmet, (kernel, op, prop, counts, never.get((kernel, op, prop)))
assert never_lines > 0, "no 'never met' line at --tests 2"
EOF

finish "check floor and coverage"
