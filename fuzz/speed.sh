#!/usr/bin/env bash
# Speed of the fuzz targets (target: >= 10,000 executions per second on one
# core for rows up to 256; measured and reported in docs/fuzzing.md, never
# asserted). One target at a time, one process, a fixed number of runs from an
# empty scratch corpus plus the committed one (read-only), the target's
# .options (build.sh) and the smoke's ASAN_OPTIONS, seed 1: the same command
# before and after a change. Reports runs per CPU second (user + sys: the
# one-core rate, insensitive to other processes sharing the cores, unlike
# libFuzzer's exec/s per wall second) and the final coverage (cov = edges,
# ft = features) after those runs.
#   fuzz/speed.sh [-r RUNS | -t SECONDS] [-n REPEATS] [-o OUT] [TARGET...] [-- LIBFUZZER_FLAGS...]
# Defaults: 40000 runs, 3 repetitions, build-fuzz-clang/out, all three targets.
# -t SECONDS fuzzes for that long instead (-max_total_time): the steady state,
# once the inputs have grown (40,000 runs from the small committed corpus are
# mostly short inputs; docs/fuzzing.md "Speed" quotes both).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source fuzz/options.sh

runs=40000 runs_given= seconds= repeats=3 OUT=${OUT:-$root/build-fuzz-clang/out}
targets=() extra=()
while (($#)); do
  case $1 in
    -r) runs=$2 runs_given=1; shift 2 ;;
    -t) seconds=$2; shift 2 ;;
    -n) repeats=$2; shift 2 ;;
    -o) OUT=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(fuzz_nan_inf fuzz_differential fuzz_inputs)
[[ -z $seconds || -z $runs_given ]] || { echo "fuzz/speed.sh: -r and -t exclude each other (a number of runs or a time)" >&2; exit 2; }
for v in "$runs" "${seconds:-1}" "$repeats"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "fuzz/speed.sh: -r, -t and -n take positive whole numbers, not '$v'" >&2; exit 2; }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0:detect_leaks=1}

if [[ -n $seconds ]]; then bound=(-max_total_time="$seconds") what="$seconds s each"; else bound=(-runs="$runs") what="$runs runs"; fi
echo "fuzz/speed.sh: $(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/'); $what, OUT=$OUT"
for t in "${targets[@]}"; do
  mapfile -t opts < <(libfuzzer_options "$OUT" "$t")
  echo "fuzz/speed.sh: $t ${opts[*]} ${extra[*]}"
  for ((i = 1; i <= repeats; ++i)); do
    rm -rf "$scratch/corpus" && mkdir -p "$scratch/corpus"
    /usr/bin/time -f '%U %S' -o "$scratch/cpu" "$OUT/$t" "${bound[@]}" -seed=1 -timeout=10 -rss_limit_mb=2048 \
      -max_len=4096 "${opts[@]}" "${extra[@]}" -print_final_stats=1 "$scratch/corpus" "fuzz/corpus/$t" \
      >"$scratch/log" 2>&1 || { echo "fuzz/speed.sh: $t failed:"; tail -30 "$scratch/log"; exit 1; }
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$scratch/log" | tail -1)
    executed=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/log" | awk '{print $2}')
    cpu=$(awk '{printf "%.2f", $1 + $2}' "$scratch/cpu")
    awk -v t="$t" -v r="$executed" -v c="$cpu" -v cov="$(awk '{for (i = 1; i < NF; ++i) if ($i == "cov:") print $(i + 1)}' <<<"$done_line")" \
        -v ft="$(awk '{for (i = 1; i < NF; ++i) if ($i == "ft:") print $(i + 1)}' <<<"$done_line")" \
        'BEGIN {printf "  %-18s %7d runs %7.2f CPU-s %7.0f runs/CPU-s  cov %s ft %s\n", t, r, c, r / c, cov, ft}'
  done
done
echo "fuzz/speed.sh: done $(uptime | sed 's/.*load/load/')"
