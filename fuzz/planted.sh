#!/usr/bin/env bash
# Planted regression (docs/fuzzing.md): with a deliberately broken,
# test-only kernel selected (SOFTCHECK_FUZZ_PLANTED, never set in the normal
# smoke), fuzz_nan_inf must find a crash from an empty corpus within
# PLANTED_SECONDS (default 60), and the saved crash must replay:
#   1. through the libFuzzer binary,
#   2. through the g++ replay main (REPLAY_BIN, default build/fuzz/fuzz_nan_inf) if built,
#   3. through the printed `softcheck repro` line (SOFTCHECK_BIN, default
#      build/softcheck) if the CLI has the repro command: exit status 1.
# The mutants (impls/src/mutants.cpp): mutant_online_wrong_rescale (online
# softmax rescaling with the wrong sign) and mutant_masked_nan (NaN for a
# fully masked row while declaring the zeros policy). Both run at once.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source fuzz/options.sh
OUT=${OUT:-$root/build-fuzz-clang/out}
PLANTED_SECONDS=${PLANTED_SECONDS:-60}
REPLAY_BIN=${REPLAY_BIN:-$root/build/fuzz/fuzz_nan_inf}
SOFTCHECK_BIN=${SOFTCHECK_BIN:-$root/build/softcheck}
dir=$root/build-fuzz-clang/planted
mutants=(mutant_online_wrong_rescale mutant_masked_nan)

[[ -x $OUT/fuzz_nan_inf ]] || bash fuzz/build.sh
mapfile -t options < <(libfuzzer_options "$OUT" fuzz_nan_inf)  # the target's own .options, as CI runs it

say() { echo "fuzz/planted.sh: $*"; }

# must_crash LOG CMD...: CMD must fail (abort) and print a repro line.
must_crash() {
  local log=$1
  shift
  if ("$@") >"$log" 2>&1; then  # the subshell keeps bash's "Aborted" notice in the log
    say "replay did NOT crash: $*"
    return 1
  fi
  grep -q '^  repro: softcheck repro ' "$log" || { say "no repro line in $log"; return 1; }
}

repro_with_cli() {  # repro_with_cli LINE: runs `softcheck repro ...`, expects exit 1
  local line=$1 words rc=0
  read -ra words <<<"$line"
  "$SOFTCHECK_BIN" "${words[@]:1}" >"$2" 2>&1 || rc=$?
  [[ $rc -eq 1 ]] || { say "'$line' exited $rc, expected 1 (violation); see $2"; return 1; }
}

hunt() {  # hunt MUTANT
  local m=$1 d=$dir/$1 t0 t1 crash line
  rm -rf "$d" && mkdir -p "$d/corpus"
  export SOFTCHECK_FUZZ_PLANTED=$m
  t0=$(date +%s.%N)
  if "$OUT/fuzz_nan_inf" -max_total_time="$PLANTED_SECONDS" -seed=1 -timeout=10 \
      "${options[@]}" -artifact_prefix="$d/" "$d/corpus" >"$d/fuzz.log" 2>&1; then
    say "$m: NOT found within ${PLANTED_SECONDS} s"
    return 1
  fi
  t1=$(date +%s.%N)
  crash=$(ls "$d"/crash-* 2>/dev/null | head -1 || true)
  [[ -n $crash ]] || { say "$m: fuzzer failed without a crash file"; tail -30 "$d/fuzz.log"; return 1; }
  say "$m: found in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s: $crash"

  must_crash "$d/replay-libfuzzer.txt" "$OUT/fuzz_nan_inf" -runs=1 "$crash" || return 1
  line=$(grep -o 'softcheck repro .*' "$d/replay-libfuzzer.txt" | head -1)
  grep -E 'property:|row \(n=' "$d/replay-libfuzzer.txt" | sed 's/^/    /'
  say "$m: replays through libFuzzer: $line"
  if [[ -x $REPLAY_BIN ]]; then
    must_crash "$d/replay-main.txt" "$REPLAY_BIN" "$crash" || return 1
    say "$m: replays through the replay main ($REPLAY_BIN)"
  else
    say "$m: no replay main at $REPLAY_BIN (normal build not there): skipped"
  fi
  unset SOFTCHECK_FUZZ_PLANTED
  if [[ -x $SOFTCHECK_BIN ]] && "$SOFTCHECK_BIN" repro --help >/dev/null 2>&1; then
    repro_with_cli "$line" "$d/repro-cli.txt" || return 1
    say "$m: replays through softcheck repro (exit 1)"
  else
    say "$m: $SOFTCHECK_BIN has no repro command: CLI replay skipped"
  fi
}

mkdir -p "$dir"
declare -A pid
for m in "${mutants[@]}"; do
  hunt "$m" >"$dir/$m.log" 2>&1 &
  pid[$m]=$!
done
status=0
for m in "${mutants[@]}"; do
  wait "${pid[$m]}" || status=1
  cat "$dir/$m.log"
done
((status == 0)) && say "every planted mutant found and replayed" || say "FAILED"
exit $status
