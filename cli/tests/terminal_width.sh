#!/usr/bin/env bash
# The human-readable outputs fit a 100-column terminal: every line of `list`
# (also --sparse, --mutants, --families), of a small `run` and of a small
# `sweep` is at most 100 columns, whatever the kernel names; the tables stay
# aligned when a name is too long for its column; `list --wide` keeps the
# contract formulas in full; a reason shared by several rows (unavailable
# kernels) is printed once, not on each row.
#   terminal_width.sh path/to/softcheck
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# capture NAME FILE command...: the command's stdout (and stderr) in FILE; a
# failure when it does not exit 0.
capture() {
  local name=$1 file=$2; shift 2
  if "$@" >"$file" 2>&1; then pass=$((pass + 1)); else
    echo "FAIL $name: exit $?"; tail -20 "$file"; failures=$((failures + 1))
  fi
}

# fits NAME FILE: no line of FILE longer than 100 columns.
fits() {
  local long
  long=$(awk 'length > 100 { printf "line %d (%d columns): %s\n", NR, length, $0 }' "$2")
  if [[ -n $long ]]; then
    echo "FAIL $1: lines wider than 100 columns:"; echo "$long" | head -10; failures=$((failures + 1))
  else
    pass=$((pass + 1))
  fi
}

# aligned NAME FILE COLUMN VALUES: in the table at the top of FILE (up to its
# first line that does not start a row), the cell under the header COLUMN is
# one of VALUES (a regex) on every row: a long name moved to a line of its own
# and a wrapped contract must leave the columns where the header puts them.
aligned() {
  local why
  why=$(python3 - "$2" "$3" "$4" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
column, values = sys.argv[2], re.compile(sys.argv[3] + r"\Z")
head = next(i for i, l in enumerate(lines) if l.startswith("kernel "))
at = (lines[head] + " ").index(" " + column + " ") + 1
rows = 0
for l in lines[head + 1:]:
    if not l or l.startswith("[") or not re.match(r"[A-Za-z0-9_ ]", l):
        break
    if " " not in l:          # a long name, alone above its row
        continue
    if l[:at].strip() == "":  # a wrapped last column
        continue
    # The word over the header's span: left-aligned cells start under the
    # header, right-aligned ones end under it.
    over = [m.group() for m in re.finditer(r"\S+", l) if m.start() < at + len(column) and m.end() > at]
    cell = over[0] if len(over) == 1 else " ".join(over)
    if not values.match(cell):
        print(f"'{cell}' under '{column}' in: {l}")
        break
    rows += 1
if rows == 0:
    print("no table rows found")
PY
)
  if [[ -n $why ]]; then echo "FAIL $1: $why"; failures=$((failures + 1)); else pass=$((pass + 1)); fi
}

# once NAME TEXT_FILE JSON_FILE: every unavailable reason in the JSON appears
# exactly once in the text output. Where no kernel is unavailable (a machine
# with a GPU and every peer) there is nothing to check, and it says so.
once() {
  local why
  why=$(python3 - "$2" "$3" <<'PY'
import json, re, sys
text = re.sub(r"\n +", " ", open(sys.argv[1]).read())  # wrapped lines joined
data = json.load(open(sys.argv[2]))
rows = data if isinstance(data, list) else data["kernels"]
reasons = [k["unavailable_reason"] for k in rows if k.get("unavailable_reason")]
if len(reasons) == len(set(reasons)):
    print("note: no reason shared by two rows here")
for r in sorted(set(reasons)):
    n = text.count(r)
    if n != 1:
        print(f"FAIL: '{r}' ({reasons.count(r)} rows) printed {n} times")
PY
)
  if grep -q '^FAIL' <<<"$why"; then
    echo "FAIL $1: $why"; failures=$((failures + 1))
  else
    [[ -z $why ]] || echo "$1: $why"
    pass=$((pass + 1))
  fi
}

capture list "$tmp/list.txt" "$bin" list
capture list_sparse "$tmp/sparse.txt" "$bin" list --sparse
capture list_mutants "$tmp/mutants.txt" "$bin" list --sparse --mutants
capture list_families "$tmp/families.txt" "$bin" list --families
capture list_json "$tmp/list.json" "$bin" list --sparse --mutants --json
fits list "$tmp/list.txt"
# The top-level help: one line per subcommand, bare `softcheck` the same text on stderr (exit 2).
"$bin" --help >"$tmp/help.txt"
fits help "$tmp/help.txt"
check help_one_line_each 0 '' -- test "$(grep -cE '^  (list|run|oracle|check|repro|report|gate|bench|sweep) ' "$tmp/help.txt")" -eq 9
check bare_help 2 'Subcommands:' -- "$bin"
fits list_sparse "$tmp/sparse.txt"
fits list_mutants "$tmp/mutants.txt"
fits list_families "$tmp/families.txt"
# --sparse has the longest names (bf16_threshold_softmax_t0p01_f32acc).
aligned list_sparse_fmt "$tmp/sparse.txt" fmt '(mxfp8_e4m3->)?(f16|bf16|f32|f64)(->e4m3(_div256)?)?'  # a storage format, MX inputs before it, a quantised output's format after it
# The op names from the op table, as `oracle --help` lists them ({softmax,log_softmax,...}).
# An op name, or "op:output" for one output of an op with several (softmax_lse:lse).
ops="(($("$bin" oracle --help | sed -n 's/.*--op TEXT:{\([^}]*\)}.*/\1/p' | tr ',' '|'))(:[a-zA-Z]+)?|-)"
aligned list_sparse_op "$tmp/sparse.txt" op "$ops"
aligned list_mutants_status "$tmp/mutants.txt" status '(available|test-only|unavailable)'
once list_reasons_once "$tmp/mutants.txt" "$tmp/list.json"
# cudaGetDeviceCount's "CUDA driver version is insufficient for CUDA runtime
# version" on a machine with no driver at all: the reason says what is missing.
check_all list_cuda_reason_says_what_is_missing 0 -- bash -c "! grep -q 'insufficient for CUDA runtime' '$tmp/list.txt'"

# --wide: the contract formulas in full, on their kernel's row.
capture list_wide "$tmp/wide.txt" "$bin" list --sparse --mutants --wide
check_all list_wide_full_contracts 0 -- python3 - "$tmp/wide.txt" "$tmp/list.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
missing = []
for k in json.load(open(sys.argv[2])):
    for op in k["ops"]:
        formula = op["contract"]["formula"]
        label = op["op"] + (":" + op["output"] if "output" in op else "")
        if not any(l.startswith(k["name"] + " ") and f" {label} " in l and f" {formula} " in l + " " for l in lines):
            missing.append(f"{k['name']} {label}: {formula}")
if missing:
    sys.exit("not in list --wide:\n" + "\n".join(missing[:10]))
PY
# ... which the narrow table does not fit (else the check above proves nothing).
check_all list_narrow_shortens 0 -- bash -c "! grep -qF '0.000183105*n' '$tmp/list.txt' && grep -qF '0.000183105*n' '$tmp/wide.txt'"

# A small run: long names (CUDA, a sparse f16 kernel), unavailable kernels
# (CUDA without a device, or built without it), sparse support notes.
small=(--impl shifted_f32 --impl naive_f32 --impl cuda_tiled_online_f32 --impl cuda_tiled_online_fastexp_f32
       --impl f16_entmax_bisect_a1p5_i30_f32acc --impl bf16_threshold_softmax_t0p01_f32acc
       --family normal_s1 --family mask_neg_inf --size 8 --property-tests 0 --jobs 2)
capture run "$tmp/run.txt" "$bin" run "${small[@]}" --out "$tmp/run"
fits run "$tmp/run.txt"
aligned run_op "$tmp/run.txt" op "$ops"
aligned run_cases "$tmp/run.txt" cases '[0-9]+'
once run_reasons_once "$tmp/run.txt" "$tmp/run/report.json"
check_all run_support_note 0 'bf16_threshold_softmax_t0p01_f32acc threshold_softmax: support: ' -- cat "$tmp/run.txt"

# A small sweep (one value of x): every f16 and bf16 kernel, both ops.
capture sweep_f16 "$tmp/sweep16.txt" "$bin" sweep --dtype f16 --value 0x3C00 --value 0x0001
capture sweep_bf16 "$tmp/sweepbf16.txt" "$bin" sweep --dtype bf16 --value 0xC2C8
fits sweep_f16 "$tmp/sweep16.txt"
fits sweep_bf16 "$tmp/sweepbf16.txt"
aligned sweep_f16_op "$tmp/sweep16.txt" op '(softmax|log_softmax)'
aligned sweep_f16_worst "$tmp/sweep16.txt" 'worst x' '0x[0-9A-F]{4}'
# One FP8 row of length 3 through every f32 kernel (the longest names).
capture sweep_e4m3_f32 "$tmp/sweep_e4m3.txt" "$bin" sweep --dtype f32 --elements e4m3 --length 3 --value 0x38 \
  --second 0xB8 --third 0x7E
fits sweep_e4m3_f32 "$tmp/sweep_e4m3.txt"
aligned sweep_e4m3_f32_worst "$tmp/sweep_e4m3.txt" 'worst x' '0x[0-9A-F]{2},0x[0-9A-F]{2},0x[0-9A-F]{2}'

finish "terminal width"
