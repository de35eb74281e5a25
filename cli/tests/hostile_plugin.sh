#!/usr/bin/env bash
# A gate that cannot be fooled (docs/gate.md, "What the gate trusts"): a kernel
# under test that exits, stalls, stops itself or changes process-wide state, a
# NaN or out-of-range option, a typo, a full stdout, a kill: none of them may
# end in exit 0 or a verdict status. Driven by the hostile test plugin
# (impls/tests/plugins/hostile_plugin.c, SOFTCHECK_HOSTILE=MODE).
#   hostile_plugin.sh SOFTCHECK HOSTILE_PLUGIN
set -u
bin=$(realpath "$1") plugin=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

few=(--impl hostile_f32 --family normal_s10 --size 8 --temperature 1 --property-tests 0 --jobs 1)
run_hostile() { local mode=$1; shift; SOFTCHECK_HOSTILE=$mode timeout 120 "$bin" "$@"; }

# A baseline of the correct kernel, for the gate's rerun.
check base 0 "" -- run_hostile none run --plugin "$plugin" "${few[@]}" --out "$tmp/base"

# ---- The process ends inside the plugin: exit status 2, never 0 or a verdict.
for mode in exit0 exit3 _exit0; do
  check "run_$mode" 2 "before softcheck gave a verdict" -- run_hostile $mode run --plugin "$plugin" "${few[@]}" --out "$tmp/run_$mode"
  absent "run_${mode}_no_report" "$tmp/run_$mode/report.json"
  check "check_$mode" 2 "before softcheck gave a verdict" -- run_hostile $mode check --plugin "$plugin" --impl hostile_f32 --tests 5 --jobs 1
  check "repro_$mode" 2 "before softcheck gave a verdict" -- run_hostile $mode repro --plugin "$plugin" --impl hostile_f32 --op softmax --property accuracy --temperature=1 --row=1,2,3
  check "gate_$mode" 2 "before softcheck gave a verdict" -- run_hostile $mode gate --plugin "$plugin" --baseline "$tmp/base/report.json" --junit "$tmp/gate_$mode.xml" --jobs 1
  absent "gate_${mode}_no_junit" "$tmp/gate_$mode.xml"
done
check ctor_exit0 2 "before softcheck gave a verdict" -- run_hostile ctor_exit0 list --plugin "$plugin"
check atexit3 2 "the verdict was exit status 0 but the process then exited with status 3" -- \
  run_hostile atexit3 run --plugin "$plugin" "${few[@]}" --out "$tmp/atexit3"
# Isolated, the same exits are one kernel's failure and the run goes on (exit 1).
check isolated_exit0 1 "VIOLATED" -- run_hostile exit0 run --plugin "$plugin" "${few[@]}" --isolate --out "$tmp/iso_exit0"
check isolated_exit0_named 0 "exited with status 0 before run returned" -- cat "$tmp/iso_exit0/report.json"

# ---- Nothing hangs: per-call time limit, a kernel that stops itself.
check isolated_loop_times_out 1 "VIOLATED" -- \
  run_hostile loop run --plugin "$plugin" "${few[@]}" --isolate --call-timeout 1 --out "$tmp/loop"
check isolated_loop_in_report 0 "timed out after 1 s" -- cat "$tmp/loop/report.json"
check inprocess_loop_ends 2 "still running after 1 s" -- \
  run_hostile loop run --plugin "$plugin" "${few[@]}" --call-timeout 1 --out "$tmp/loop2"
absent inprocess_loop_no_report "$tmp/loop2/report.json"
check isolated_stop_times_out 1 "VIOLATED" -- \
  run_hostile stop run --plugin "$plugin" "${few[@]}" --isolate --call-timeout 1 --out "$tmp/stop"
check isolated_stop_in_report 0 "timed out after 1 s" -- cat "$tmp/stop/report.json"
check inprocess_stop_killed 2 "stopped itself with SIGSTOP" -- \
  run_hostile stop run --plugin "$plugin" "${few[@]}" --out "$tmp/stop2"
check call_timeout_nan 2 "not a number" -- "$bin" run --plugin "$plugin" --call-timeout nan

# ---- No orphan: killing softcheck ends its --isolate children and check workers.
# wait_for_processes N PATTERN: until N processes match (60 s at most), so that
# a slow machine delays the kill but never changes what it tests.
wait_for_processes() {
  local i
  for ((i = 0; i < 600; ++i)); do (($(pgrep -fc -- "$2") >= $1)) && return 0; sleep 0.1; done
  return 1
}
# gone PATTERN: no process matches within 20 s (dying children take a moment).
gone() {
  local i
  for ((i = 0; i < 200; ++i)); do pgrep -f -- "$1" >/dev/null || return 0; sleep 0.1; done
  return 1
}
SOFTCHECK_HOSTILE=loop "$bin" run --plugin "$plugin" "${few[@]}" --isolate --call-timeout 0 --out "$tmp/orphan" \
  >/dev/null 2>&1 &
victim=$!
wait_for_processes 3 "$tmp/orphan"
# softcheck, the command's process and the isolated call: the test means nothing without them.
running=$(pgrep -fc "$tmp/orphan")
kill -KILL "$victim"
wait "$victim" 2>/dev/null
if ((running < 3)); then echo "FAIL orphan_isolate_setup: $running processes before the kill, wanted 3"; failures=$((failures + 1))
elif ! gone "$tmp/orphan"; then echo "FAIL orphan_isolate: a child outlived SIGKILL of softcheck"; pgrep -af "$tmp/orphan"
  pkill -KILL -f "$tmp/orphan"; failures=$((failures + 1)); else pass=$((pass + 1)); fi
SOFTCHECK_HOSTILE=loop "$bin" check --plugin "$plugin" --impl hostile_f32 --impl shifted_f32 --jobs 2 --tests 5 \
  --call-timeout 0 --seed 4242 >/dev/null 2>&1 &
victim=$!
wait_for_processes 3 "--seed 4242"
running=$(pgrep -fc -- "--seed 4242")  # softcheck, the command's process, the worker on hostile_f32
kill -KILL "$victim"
wait "$victim" 2>/dev/null
if ((running < 3)); then echo "FAIL orphan_workers_setup: $running processes before the kill, wanted 3"; failures=$((failures + 1))
elif ! gone "--seed 4242"; then echo "FAIL orphan_workers: a check worker outlived softcheck"
  pkill -KILL -f -- "--seed 4242"; failures=$((failures + 1)); else pass=$((pass + 1)); fi

# ---- SIGTERM / SIGINT: exit 2, no report and no temporary left.
for sig in TERM INT; do
  SOFTCHECK_HOSTILE=loop "$bin" run --plugin "$plugin" "${few[@]}" --isolate --call-timeout 0 \
    --out "$tmp/sig$sig" >"$tmp/sig$sig.log" 2>&1 &
  victim=$!
  wait_for_processes 3 "$tmp/sig$sig"  # the isolated call is running: the handlers are in place
  kill -$sig "$victim"
  wait "$victim"; rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q "interrupted by signal" "$tmp/sig$sig.log"; then
    echo "FAIL sig$sig: exit $rc"; cat "$tmp/sig$sig.log"; failures=$((failures + 1)); else pass=$((pass + 1)); fi
  leftovers=$(find "$tmp/sig$sig" -type f ! -name '.softcheck.lock' 2>/dev/null)
  if [[ -n $leftovers ]]; then echo "FAIL sig${sig}_files: $leftovers"; failures=$((failures + 1)); else pass=$((pass + 1)); fi
done

# ---- Process-wide state a kernel changes: restored, and the kernel fails.
for mode in setlocale round ftz chdir signal; do
  case $mode in
    setlocale) what="the locale" ;; round) what="the rounding mode (toward zero)" ;; ftz) what="MXCSR (FTZ on DAZ on)" ;;
    chdir) what="the working directory" ;; signal) what="the handler of SIGINT" ;;
  esac
  check "state_$mode" 1 "VIOLATED" -- run_hostile $mode run --plugin "$plugin" "${few[@]}" --out "$tmp/state_$mode"
  check_all "state_${mode}_named" 0 "left process-wide state changed: $what" -- cat "$tmp/state_$mode/report.json"
  check "state_${mode}_report_parses" 0 "" -- python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/state_$mode/report.json"
done
# At load time: restored with a warning; a relative --out still means the
# directory softcheck was started in.
(cd "$tmp" && check_all ctor_chdir 0 "changed process-wide state while loading" "the working directory" -- \
  run_hostile ctor_chdir run --plugin "$plugin" "${few[@]}" --out rel_out)
[[ -f $tmp/rel_out/report.json ]] && pass=$((pass + 1)) || { echo "FAIL ctor_chdir_out: no $tmp/rel_out/report.json"; failures=$((failures + 1)); }
check_all ctor_ftz 0 "FTZ on DAZ on" -- run_hostile ctor_ftz run --plugin "$plugin" "${few[@]}" --out "$tmp/ctor_ftz"

# ---- Numeric options: NaN, inf, negative unsigned and beyond 64 bits are usage errors naming the value.
# A +457 % regression of max ULP: the default margin fails it; a NaN margin
# used to switch the comparison off and pass it.
"$bin" run --impl shifted_f32 --family normal_s10 --size 100 --property-tests 0 --jobs 1 --quiet --out "$tmp/gb"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for k in r["kernels"]: k["max_ulp"] *= 5.57
json.dump(r, open(sys.argv[2], "w"), indent=2)' "$tmp/gb/report.json" "$tmp/worse.json"
check gate_regression_caught 1 "margin" -- "$bin" gate --baseline "$tmp/gb/report.json" --report "$tmp/worse.json"
check gate_margin_nan 2 "'nan' is not a number" -- "$bin" gate --baseline "$tmp/gb/report.json" --report "$tmp/worse.json" --margin nan
check gate_slack_nan 2 "'nan' is not a number" -- "$bin" gate --baseline "$tmp/gb/report.json" --report "$tmp/worse.json" --slack-ulp nan
check gate_margin_inf 2 "inf" -- "$bin" gate --baseline "$tmp/gb/report.json" --report "$tmp/worse.json" --margin inf
check bench_min_time_nan 2 "'nan' is not a number" -- timeout 20 "$bin" bench --min-time nan --out "$tmp/bench"
check run_temperature_1e309 2 "'1e309' is not finite" -- "$bin" run --temperature 1e309 --out "$tmp/t"
check run_seed_negative 2 "'-1' is negative" -- "$bin" run --seed -1 --out "$tmp/t"
check run_size_2p63 2 "'9223372036854775808' is out of range" -- "$bin" run --size 9223372036854775808 --out "$tmp/t"
check check_jobs_huge 2 "'99999999999999999999' is out of range" -- "$bin" check --jobs 99999999999999999999
absent numeric_no_output "$tmp/t/report.json"

# ---- One temperature rule for run and repro: an f32-subnormal T is refused
# by run (2) and not applicable in repro (3), never a verdict in one and not the other.
check run_subnormal_t 2 "is not a normal f32 value" -- "$bin" run --impl shifted_f32 --temperature 1e-40 --out "$tmp/t"
check repro_subnormal_t 3 "" -- "$bin" repro --impl shifted_f32 --op softmax --property accuracy --temperature=1e-40 --row=1,2

# ---- Messages that name the real problem.
check unknown_subcommand 2 "unknown subcommand 'rnu'" -- "$bin" rnu
check bare_short_help 2 "usage: softcheck SUBCOMMAND" -- "$bin"

# ---- A verdict nobody could read is not a pass: stdout write errors exit 2.
if [[ -w /dev/full ]]; then
  for cmd in "oracle 1 2 3" "list" "repro --impl shifted_f32 --op softmax --property accuracy --temperature=1 --row=1,2" \
             "check --impl shifted_f32 --tests 3 --jobs 1" "report $tmp/base/report.json --md $tmp/full.md" \
             "gate --baseline $tmp/base/report.json --report $tmp/base/report.json --plugin $plugin"; do
    read -ra words <<<"$cmd"
    check "dev_full_${words[0]}" 2 "writing to standard output failed" -- sh -c '"$0" "$@" >/dev/full' "$bin" "${words[@]}"
  done
else
  echo "FAIL dev_full: /dev/full is not writable here"; failures=$((failures + 1))
fi

finish hostile_plugin
