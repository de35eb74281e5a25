#!/usr/bin/env bash
# Report files through the built binary (docs/report-schema.md):
#   - the strict reader refuses impossible values, duplicate entries, and
#     anything but a regular file of bounded size (no hang on a FIFO);
#   - no output replaces an input or another output, however it is spelled,
#     and a refused command writes nothing;
#   - concurrent runs into one --out leave one run's set (the renderings
#     carry the digest of their report.json), stale temporaries are removed;
#   - text from a report (a plugin's description) cannot inject Markdown.
# Usage: report_files.sh SOFTCHECK EXAMPLE_PLUGIN.so
set -u
bin=$1
plugin=$2
tmp=$(mktemp -d)
sleeper=
trap '[[ -n $sleeper ]] && kill "$sleeper" 2>/dev/null; rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Every command gets a time limit: a reader that blocks fails the test (124)
# instead of hanging ctest. The endless inputs also get a memory limit, so a
# reader that reads /dev/zero to the end fails without exhausting the machine.
sc() { timeout 60 "$bin" "$@"; }
sc_bounded() { (ulimit -v 4000000 && timeout 10 "$bin" "$@"); }

small=(--impl shifted_f32 --family normal_s10 --size 31 --jobs 1 --quiet --property-tests 2)
check base_run 0 '' -- sc run "${small[@]}" --seed 3 --out "$tmp/base"
base=$tmp/base/report.json

# --- The reader ---------------------------------------------------------------
sed -e '0,/"max_ulp": [0-9.e+-]*,/s//"max_ulp": -5,/' "$base" >"$tmp/negative.json"
check_all read_negative_report 2 "kernels[0].max_ulp: -5 is negative (kernel 'shifted_f32', op softmax)" -- \
  sc report "$tmp/negative.json" --html "$tmp/w/negative.html"
check_all read_negative_gate 2 "negative.json: kernels[0].max_ulp: -5 is negative (kernel 'shifted_f32'" -- \
  sc gate --baseline "$tmp/negative.json" --report "$base" --junit "$tmp/w/negative.xml"
sed -e '0,/"mean_bits": [0-9.e+-]*,/s//"mean_bits": -0.25,/' "$base" >"$tmp/negative_bits.json"
check_all read_negative_bits 2 "kernels[0].mean_bits: -0.25 is negative" -- \
  sc gate --baseline "$base" --report "$tmp/negative_bits.json"
python3 - "$base" "$tmp/duplicate.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["kernels"].append(doc["kernels"][0])
json.dump(doc, open(sys.argv[2], "w"), indent=2)
EOF
entries=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["kernels"]))' "$base")
check_all read_duplicate 2 "kernels[$entries]: duplicate entry for kernel 'shifted_f32', op softmax (also kernels[0])" -- \
  sc gate --baseline "$tmp/duplicate.json" --report "$base" --junit "$tmp/w/duplicate.xml"
check_all read_dev_zero 2 '/dev/zero: not a regular file' -- sc_bounded report /dev/zero --html "$tmp/w/zero.html"
check_all read_dev_urandom 2 '/dev/urandom: not a regular file' -- \
  sc_bounded gate --baseline "$base" --report /dev/urandom
mkfifo "$tmp/fifo.json"
check_all read_fifo_report 2 'fifo.json: not a regular file' -- sc_bounded report "$tmp/fifo.json" --md "$tmp/w/fifo.md"
check_all read_fifo_gate 2 'fifo.json: not a regular file' -- sc_bounded gate --baseline "$tmp/fifo.json" --report "$base"
absent read_errors_write_nothing "$tmp/w"

# --- Outputs against inputs -----------------------------------------------------
mkdir -p "$tmp/in/sub"
cp "$base" "$tmp/in/x.json"
cp "$base" "$tmp/pristine.json"
ln -s x.json "$tmp/in/link.json"
ln "$tmp/in/x.json" "$tmp/in/hard.json"
unchanged() { check "$1" 0 '' -- cmp "$tmp/pristine.json" "$tmp/in/x.json"; }
check_all report_dot_slash 2 'would overwrite the input' -- bash -c "cd '$tmp/in' && '$bin' report x.json --md ./x.json"
unchanged report_dot_slash_unchanged
check_all report_dotdot 2 'would overwrite the input' -- sc report "$tmp/in/x.json" --html "$tmp/in/sub/../x.json"
check_all report_symlink 2 'would overwrite the input' -- sc report "$tmp/in/link.json" --md "$tmp/in/x.json"
check_all report_hardlink 2 'would overwrite the input' -- sc report "$tmp/in/x.json" --md "$tmp/in/hard.json"
unchanged report_links_unchanged
check_all report_same_output_twice 2 'are the same file' -- \
  sc report "$tmp/in/x.json" --html "$tmp/new/same" --md "$tmp/new/../new/same"
absent report_same_output_twice_writes_nothing "$tmp/new"
check_all gate_junit_over_baseline 2 'would overwrite the input' -- \
  sc gate --baseline "$tmp/in/x.json" --report "$base" --junit "$tmp/in/x.json"
check_all gate_junit_over_report 2 'would overwrite the input' -- \
  sc gate --baseline "$base" --report "$tmp/in/link.json" --junit "$tmp/in/./x.json"
unchanged gate_junit_unchanged
check gate_junit_elsewhere 0 'gate: passed' -- sc gate --baseline "$tmp/in/x.json" --report "$base" --junit "$tmp/in/gate.xml"
# A plugin library where run would write report.html.
mkdir -p "$tmp/plug"
cp "$plugin" "$tmp/plug/report.html"
check_all run_over_plugin 2 'would overwrite the input' -- sc run --plugin "$tmp/plug/report.html" --impl shifted_f32 \
  --family normal_s10 --size 8 --quiet --property-tests 0 --out "$tmp/plug"
check run_over_plugin_unchanged 0 '' -- cmp "$plugin" "$tmp/plug/report.html"
if [[ -x $(dirname "$bin")/softcheck_bench ]]; then
  mkdir -p "$tmp/bench"
  cp "$base" "$tmp/bench/report.json"
  ln "$tmp/bench/report.json" "$tmp/bench/bench.json"
  check_all bench_outputs_linked 2 'are the same file' -- sc bench --impl shifted_f32 --min-time 0.001 --quiet --out "$tmp/bench"
fi

# --- The report set ------------------------------------------------------------
# The digest report.md and report.html name, and FNV-1a 64 of report.json.
digests() {
  python3 - "$1" <<'EOF'
import re, sys
d = sys.argv[1]
h = 0xcbf29ce484222325
for b in open(d + "/report.json", "rb").read():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
md = re.findall(r"fnv1a64:[0-9a-f]{16}", open(d + "/report.md").read())
html = re.findall(r'<meta name="softcheck-report-digest" content="(fnv1a64:[0-9a-f]{16})">', open(d + "/report.html").read())
print("json=fnv1a64:%016x md=%s html=%s" % (h, ",".join(md) or "none", ",".join(html) or "none"))
EOF
}
one_set() {  # the three files come from one run: one digest, and the same seed
  local d=$1 line json
  line=$(digests "$d")
  json=${line#json=}
  json=${json%% *}
  [[ $line == "json=$json md=$json html=$json" ]] || { echo "$line"; return 1; }
  [[ $(grep -m1 '"seed"' "$d/report.json" | tr -dc 0-9) == $(grep -m1 -o 'seed [0-9]*' "$d/report.md" | tr -dc 0-9) ]]
}
check digest_single_run 0 '' -- one_set "$tmp/base"
check digest_rerendered 0 '' -- sc report "$base" --md "$tmp/again/report.md" --html "$tmp/again/report.html" --quiet
check digest_rerendered_same 0 '' -- cmp "$tmp/again/report.md" "$tmp/base/report.md"

mixed=0 leftovers=0
for round in 1 2 3 4 5 6 7 8 9 10; do
  rm -rf "$tmp/race"
  pids=()
  for seed in 11 12 13; do sc run "${small[@]}" --seed "$seed" --out "$tmp/race" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
  one_set "$tmp/race" >/dev/null || mixed=$((mixed + 1))
  [[ $(ls -A "$tmp/race" | tr '\n' ' ') == "report.html report.json report.md " ]] || leftovers=$((leftovers + 1))
done
check concurrent_runs_one_set 0 '' -- test "$mixed" -eq 0
check concurrent_runs_no_leftovers 0 '' -- test "$leftovers" -eq 0
[[ $mixed -eq 0 && $leftovers -eq 0 ]] || echo "  $mixed of 10 rounds mixed, $leftovers with leftover files"

# Temporaries of a process that no longer exists (killed between writing and
# renaming) are removed; a live process's and files of other names stay.
true & dead=$!
wait "$dead"
sleep 60 & sleeper=$!
mkdir -p "$tmp/stale"
touch "$tmp/stale/.report.json.tmp.$dead" "$tmp/stale/.report.html.tmp.$dead" "$tmp/stale/.report.md.tmp.$sleeper" \
  "$tmp/stale/.notes.tmp.$dead"
check stale_run 0 '' -- sc run "${small[@]}" --seed 3 --out "$tmp/stale"
check_all stale_removed 0 ".notes.tmp.$dead .report.md.tmp.$sleeper report.html report.json report.md" -- \
  bash -c "ls -A '$tmp/stale' | tr '\n' ' '"
check stale_dead_gone 0 '' -- test ! -e "$tmp/stale/.report.json.tmp.$dead" -a ! -e "$tmp/stale/.report.html.tmp.$dead"

# --- Markdown injection -------------------------------------------------------------
sed -e '0,/"description": "[^"]*"/s//"description": "evil | cell\\n# heading <script>alert(1)<\/script> `x` *b* [l](http:\/\/e)"/' \
  "$base" >"$tmp/inject.json"
check inject_render 0 '' -- sc report "$tmp/inject.json" --md "$tmp/inject.md" --quiet
check inject_no_script 1 '' -- grep -q '<script' "$tmp/inject.md"
check inject_no_heading 1 '' -- grep -q '^# heading' "$tmp/inject.md"
check_all inject_escaped 0 'evil \| cell # heading &lt;script>alert(1)&lt;/script> \`x\` \*b\* \[l\](http://e)' -- \
  cat "$tmp/inject.md"

# --- --rows-csv: one line per judged row and report entry -----------------------
check rows_csv_run 0 '' -- sc run --impl shifted_f32 --impl naive_f32 --family normal_s10 --family fully_masked \
  --size 5 --size 80 --jobs 2 --quiet --property-tests 0 --out "$tmp/rows" --rows-csv "$tmp/rows/rows.csv"
check_all rows_csv_content 0 -- python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
report = json.load(open(sys.argv[2]))
header = "kernel,output,format,family,n,temperature,row,R,M,max_error,unit,bound,reference_ratio,verdict,repro"
assert list(rows[0].keys()) == header.split(","), list(rows[0].keys())
for k in report["kernels"]:
    label = k["op"] + (":" + k["output"] if k.get("output") else "")
    mine = [r for r in rows if r["kernel"] == k["kernel"] and r["output"] == label]
    assert len(mine) == k["rows"], (k["kernel"], label, len(mine), k["rows"])
    worst = max(float(r["max_error"]) for r in mine if r["max_error"])
    assert worst == k["max_ulp"], (k["kernel"], label, worst, k["max_ulp"])
verdicts = {r["verdict"] for r in rows}
assert {"held", "policy_held"} <= verdicts, verdicts
assert all(r["repro"].startswith("softcheck ") for r in rows)
assert all(float(r["max_error"]) <= float(r["bound"]) for r in rows if r["verdict"] == "held")
' "$tmp/rows/rows.csv" "$tmp/rows/report.json"
check_all rows_csv_no_temporaries 0 -- bash -c "! ls -a '$tmp/rows' | grep -q '\.tmp\.'"
check rows_csv_over_report 2 'same file|replace' -- sc run "${small[@]}" --out "$tmp/rows" --rows-csv "$tmp/rows/report.json"
check rows_csv_unwritable 2 'not writable: /proc' -- \
  sc run "${small[@]}" --out "$tmp/rows2" --rows-csv /proc/softcheck-rows.csv

finish report_files
