#!/usr/bin/env bash
# `run --budget SECONDS` (docs/scaling.md, "A time budget"): the cases a
# budget keeps are chosen by the cost model, never a clock, so the same budget
# gives the same report.json for any --jobs; the report lists what it skipped;
# the gate reruns the baseline's budget and refuses a run of other cases; a
# budget that cannot hold one case of each kernel, a NaN or a shard is exit 2.
# `--case-times` writes one line per case run, which scripts/fit-cost-model.py reads.
# Usage: budget.sh SOFTCHECK [PYTHON_WITH_NUMPY]
set -u
bin=$1
python=${2:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sc() { timeout 300 "$@"; }

sel=(--impl shifted_f32 --impl online_f64 --family normal_s10 --family mask_neg_inf --size 3 --size 300
     --size 65536 --temperature 1 --property-tests 2 --seed 5)
check whole 0 '' -- sc "$bin" run "${sel[@]}" --jobs 2 --out "$tmp/whole" --quiet
# Start-up and the property checks are modelled at 0.16 s here, the cases at
# about 0.06 s: 0.19 s keeps some.
check_all budget_j1 0 'budget 0.19 s:' -- sc "$bin" run "${sel[@]}" --budget 0.19 --jobs 1 --out "$tmp/b1"
check budget_j2 0 '' -- sc "$bin" run "${sel[@]}" --budget 0.19 --jobs 2 --out "$tmp/b2" --quiet \
  --case-times "$tmp/times.csv"
# One line per case run, after the header.
cases_run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["budget"]["cases_run"])' "$tmp/b2/report.json")
[[ $(head -1 "$tmp/times.csv") == format,family,n,temperature,rows,head_dim,outputs,sparse_outputs,mpfr_rows,modelled_seconds,cpu_seconds &&
   $(($(wc -l <"$tmp/times.csv") - 1)) -eq $cases_run ]] && pass=$((pass + 1)) ||
  { echo "FAIL case_times: wanted the header and $cases_run lines"; head -3 "$tmp/times.csv"; failures=$((failures + 1)); }
if [[ -n $python ]]; then
  check fit_script 0 'fast \([0-9]+ cases' -- "$python" "$root/scripts/fit-cost-model.py" "$tmp/times.csv"
else
  echo "fit_script: not checked (no Python interpreter with numpy was given)"
fi
cmp -s "$tmp/b1/report.json" "$tmp/b2/report.json" && pass=$((pass + 1)) ||
  { echo "FAIL budget_jobs: --jobs 1 and 2 kept other cases"; failures=$((failures + 1)); }
# What it kept and skipped: some of each, every entry with a case, counts that add up.
python3 - "$tmp/b1/report.json" "$tmp/whole/report.json" <<'PY' && pass=$((pass + 1)) || failures=$((failures + 1))
import json, sys
b, w = (json.load(open(p)) for p in sys.argv[1:3])
budget = b["run"]["budget"]
why = []
if not 0 < budget["cases_run"] < budget["cases"]: why.append(f"kept {budget['cases_run']} of {budget['cases']}")
if budget["cases_run"] + len(budget["skipped"]) != budget["cases"]: why.append("counts do not add up")
if not budget["modelled_seconds"] <= budget["suite_seconds"] < budget["seconds"]: why.append("modelled beyond the share")
if any(s["n"] != 65536 for s in budget["skipped"]): why.append(f"skipped a short row: {budget['skipped']}")
for k in b["kernels"]:
    whole = next(x for x in w["kernels"] if x["kernel"] == k["kernel"] and x["op"] == k["op"] and x.get("output") == k.get("output"))
    if not 0 < k["cases"] <= whole["cases"]: why.append(f"{k['kernel']} {k['op']}: {k['cases']} cases of {whole['cases']}")
if "budget" in w["run"]: why.append("a budget object in the run without --budget")
if why: print("FAIL budget_contents:", "; ".join(why))
sys.exit(1 if why else 0)
PY
grep -qF 'this run kept' "$tmp/b1/report.md" && grep -qF 'this run kept' "$tmp/b1/report.html" && pass=$((pass + 1)) ||
  { echo "FAIL budget_renderings: report.md or report.html does not say what was skipped"; failures=$((failures + 1)); }

# The gate: a rerun of the baseline's budget runs its cases; other cases are refused.
check gate_reruns_budget 0 '' -- sc "$bin" gate --baseline "$tmp/b1/report.json" --jobs 2 --quiet
check gate_takes_same_budget 0 '' -- sc "$bin" gate --baseline "$tmp/b1/report.json" --report "$tmp/b2/report.json" --quiet
check_all gate_refuses_other_cases 2 'ran different cases' -- \
  sc "$bin" gate --baseline "$tmp/whole/report.json" --report "$tmp/b1/report.json" --quiet
check_all gate_refuses_other_cases_back 2 'ran different cases' -- \
  sc "$bin" gate --baseline "$tmp/b1/report.json" --report "$tmp/whole/report.json" --quiet

# Bad budgets: exit 2, nothing written.
for bad in nan inf 0 -1 ''; do
  check "budget_'$bad'" 2 '--budget' -- sc "$bin" run "${sel[@]}" --budget "$bad" --out "$tmp/bad" --quiet
done
check_all budget_with_shard 2 '--budget and --shard do not combine' -- \
  sc "$bin" run "${sel[@]}" --budget 5 --shard 0/2 --out "$tmp/bad" --quiet
check_all budget_below_overhead 2 'leaves nothing for the cases' -- \
  sc "$bin" run "${sel[@]}" --budget 0.1 --out "$tmp/bad" --quiet
# Above start-up and the property checks, below one 65536-entry case of each kernel.
check_all budget_below_one_case 2 'modelled for one case of each kernel' -- \
  sc "$bin" run --impl shifted_f32 --family normal_s10 --size 65536 --temperature 1 --property-tests 0 \
  --budget 0.152 --out "$tmp/bad" --quiet
absent bad_not_written "$tmp/bad/report.json"
finish budget
