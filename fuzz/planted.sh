#!/usr/bin/env bash
# Planted regression (docs/fuzzing.md): with a deliberately broken,
# test-only kernel selected (SOFTCHECK_FUZZ_PLANTED, never set in the normal
# smoke), its fuzz target must find a crash from an empty corpus within
# PLANTED_SECONDS (default 60), and the saved crash must replay:
#   1. through the libFuzzer binary,
#   2. through the g++ replay main (REPLAY_DIR/<target>, default build/fuzz) if built,
#   3. through the printed `softcheck repro` line (SOFTCHECK_BIN, default
#      build/softcheck) if the CLI has the repro command: exit status 1; a
#      gradient op's report also has a `softcheck oracle` line, which must
#      exit 0 and print the exact outputs (shown beside the ones got).
# The planted kernels: mutant_online_wrong_rescale (online softmax rescaling
# with the wrong sign) and mutant_masked_nan (NaN for a fully masked row while
# declaring the zeros policy), impls/src/mutants.cpp, for fuzz_nan_inf; and
# careless_cross_entropy_f32 (the loss as -log of a rounded p_t: 0 on a
# confident row), impls/src/cross_entropy.cpp, for fuzz_differential. All
# run at once.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source fuzz/options.sh
OUT=${OUT:-$root/build-fuzz-clang/out}
PLANTED_SECONDS=${PLANTED_SECONDS:-60}
REPLAY_DIR=${REPLAY_DIR:-$root/build/fuzz}
SOFTCHECK_BIN=${SOFTCHECK_BIN:-$root/build/softcheck}
dir=$root/build-fuzz-clang/planted
planted=(fuzz_nan_inf:mutant_online_wrong_rescale fuzz_nan_inf:mutant_masked_nan
         fuzz_differential:careless_cross_entropy_f32)

[[ -x $OUT/fuzz_nan_inf && -x $OUT/fuzz_differential ]] || bash fuzz/build.sh

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

repro_with_cli() {  # repro_with_cli LINE LOG: runs `softcheck repro ...`, expects exit 1
  local line=$1 words rc=0
  read -ra words <<<"$line"
  "$SOFTCHECK_BIN" "${words[@]:1}" >"$2" 2>&1 || rc=$?
  [[ $rc -eq 1 ]] || { say "'$line' exited $rc, expected 1 (violation); see $2"; return 1; }
}

oracle_with_cli() {  # oracle_with_cli LINE LOG: runs `softcheck oracle ...`, expects exit 0 and the outputs
  local line=$1 words rc=0
  read -ra words <<<"$line"
  "$SOFTCHECK_BIN" "${words[@]:1}" >"$2" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { say "'$line' exited $rc, expected 0; see $2"; return 1; }
  grep -qE '^dx ' "$2" || { say "'$line' printed no dx values; see $2"; return 1; }
}

hunt() {  # hunt TARGET KERNEL
  local t=$1 m=$2 d=$dir/$2 t0 t1 crash line exact options
  mapfile -t options < <(libfuzzer_options "$OUT" "$t")  # the target's own .options, as CI runs it
  rm -rf "$d" && mkdir -p "$d/corpus"
  export SOFTCHECK_FUZZ_PLANTED=$m
  t0=$(date +%s.%N)
  if "$OUT/$t" -max_total_time="$PLANTED_SECONDS" -seed=1 -timeout=10 \
      "${options[@]}" -artifact_prefix="$d/" "$d/corpus" >"$d/fuzz.log" 2>&1; then
    say "$m: NOT found by $t within ${PLANTED_SECONDS} s"
    return 1
  fi
  t1=$(date +%s.%N)
  crash=$(ls "$d"/crash-* 2>/dev/null | head -1 || true)
  [[ -n $crash ]] || { say "$m: $t failed without a crash file"; tail -30 "$d/fuzz.log"; return 1; }
  say "$m: found by $t in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s: $crash"

  must_crash "$d/replay-libfuzzer.txt" "$OUT/$t" -runs=1 "$crash" || return 1
  line=$(grep -o 'softcheck repro .*' "$d/replay-libfuzzer.txt" | head -1)
  exact=$(grep -o 'softcheck oracle .*' "$d/replay-libfuzzer.txt" | head -1 || true)
  grep -E 'property:|output:|row \(n=|target:|upstream g:|got ' "$d/replay-libfuzzer.txt" | sed 's/^/    /'
  say "$m: replays through libFuzzer: $line"
  if [[ -x $REPLAY_DIR/$t ]]; then
    must_crash "$d/replay-main.txt" "$REPLAY_DIR/$t" "$crash" || return 1
    say "$m: replays through the replay main ($REPLAY_DIR/$t)"
  else
    say "$m: no replay main at $REPLAY_DIR/$t (normal build not there): skipped"
  fi
  unset SOFTCHECK_FUZZ_PLANTED
  if [[ -x $SOFTCHECK_BIN ]] && "$SOFTCHECK_BIN" repro --help >/dev/null 2>&1; then
    repro_with_cli "$line" "$d/repro-cli.txt" || return 1
    say "$m: replays through softcheck repro (exit 1)"
    if [[ -n $exact ]]; then
      oracle_with_cli "$exact" "$d/oracle-cli.txt" || return 1
      say "$m: its oracle line prints the exact outputs (exit 0):"
      sed 's/^/    /' "$d/oracle-cli.txt" | head -12
    fi
  else
    say "$m: $SOFTCHECK_BIN has no repro command: CLI replay skipped"
  fi
}

mkdir -p "$dir"
declare -A pid
for p in "${planted[@]}"; do
  hunt "${p%%:*}" "${p#*:}" >"$dir/${p#*:}.log" 2>&1 &
  pid[$p]=$!
done
status=0
for p in "${planted[@]}"; do
  wait "${pid[$p]}" || status=1
  cat "$dir/${p#*:}.log"
done
((status == 0)) && say "every planted kernel found and replayed" || say "FAILED"
exit $status
