#!/usr/bin/env bash
# The SIMD kernels against oneDNN, as the table in docs/measurements.md ("SIMD kernels against oneDNN"):
# `build/softcheck_bench --paired`, which times each kernel and its oneDNN
# peer in alternating bursts a few milliseconds apart on the same rows
# (shifted_simd and online_simd against oneDNN pinned to one OpenMP thread,
# their _mt twins against oneDNN's default threading) and keeps the ratio of
# each pair: on this shared VM the machine's speed drifts by tens of percent
# within seconds, and two bursts that close see the same machine. (The _mt
# pairs rest REST_MS, default 10, before each burst, so that oneDNN's
# spinning OpenMP threads are idle, and are a fixed 41 pairs:
# softmax_bench.cpp says why.)
# The table gives, per kernel and shape, the median of those per-pair ratios
# with its quartiles (above 1: ours is faster), and each side's median GB/s
# (input + output bytes). With ROUNDS > 1 the whole run is repeated and each
# figure is the median over the rounds. Nothing is asserted: a measurement,
# not a test.
#   scripts/kernel-speed.sh [-r ROUNDS] [-t MIN_TIME_S] [-w REST_MS] [-o JSON_DIR]
# SOFTCHECK_BENCH names another softcheck_bench (default build/softcheck_bench).
# Defaults: 3 rounds, 0.5 s of timed bursts per single-threaded pair and
# shape, the JSON files in a temporary folder. About a minute a round.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=3 min_time=0.5 rest_ms=10 out=
usage() { sed -n 2,20p "$0" >&2; exit 2; }
while getopts r:t:w:o: opt; do
  case $opt in
    r) reps=$OPTARG ;;
    t) min_time=$OPTARG ;;
    w) rest_ms=$OPTARG ;;
    o) out=$OPTARG ;;
    *) usage ;;
  esac
done
(( OPTIND > $# )) || usage
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "scripts/kernel-speed.sh: -r wants a positive number of rounds, not '$reps'" >&2; exit 2; }
[[ $rest_ms =~ ^[0-9]+$ ]] || { echo "scripts/kernel-speed.sh: -w wants whole milliseconds, not '$rest_ms'" >&2; exit 2; }
[[ $min_time =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ && ! $min_time =~ ^[0.]+$ ]] ||
  { echo "scripts/kernel-speed.sh: -t wants a positive number of seconds, not '$min_time'" >&2; exit 2; }
bench=${SOFTCHECK_BENCH:-build/softcheck_bench}  # another build of it: docs/measurements.md runs one on a second machine
[[ -x $bench ]] || { echo "scripts/kernel-speed.sh: $bench not built (scripts/bootstrap.sh)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "scripts/kernel-speed.sh: needs python3 for the table" >&2; exit 2; }
if [[ -z $out ]]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; else mkdir -p "$out"; fi

echo "scripts/kernel-speed.sh: $(date -u +%FT%TZ), $(nproc) CPUs, $(uptime | sed 's/.*load/load/'), $reps rounds of $min_time s per pair and shape, multi-threaded pairs resting $rest_ms ms"
for ((round = 1; round <= reps; ++round)); do
  "$bench" --paired --pair-rest-ms="$rest_ms" --benchmark_min_time="$min_time" \
    --benchmark_out="$out/round-$round.json" --benchmark_out_format=json >/dev/null 2>"$out/round-$round.log" ||
    { cat "$out/round-$round.log" >&2; exit 1; }
  rm -f "$out/round-$round.log"
done
echo "scripts/kernel-speed.sh: done, $(uptime | sed 's/.*load/load/')"

python3 - "$out" "$reps" <<'EOF'
import json, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
runs = []  # per round: (kernel, shape) -> counters
for r in range(1, rounds + 1):
    one = {}
    for b in json.load(open(f"{folder}/round-{r}.json"))["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        _pair, kernel, _peer, _op, _fmt, shape = b["run_name"].split("/")[:6]
        one[(kernel, shape)] = b
    runs.append(one)
kernels = ["shifted_simd_f32", "online_simd_f32", "shifted_simd_mt_f32", "online_simd_mt_f32"]
heads = ["shifted / oneDNN 1t", "online / oneDNN 1t", "shifted_mt / oneDNN", "online_mt / oneDNN"]
shapes = sorted({s for one in runs for (_, s) in one}, key=lambda s: (int(s.split("x")[0]) > 1, int(s.split("x")[1])))

def med(kernel, shape, counter):
    v = [one[(kernel, shape)][counter] for one in runs if (kernel, shape) in one]
    return statistics.median(v) if v else None

print(f"ratio: median over the pairs of oneDNN's time / ours (above 1: ours is faster), quartiles in brackets;"
      f" GB/s: each side's median; {rounds} round(s), each figure the median over them")
print()
print("| rows x cols | shifted_simd | online_simd | oneDNN 1 thread | shifted_simd_mt | online_simd_mt | oneDNN default | "
      + " | ".join(heads) + " |")
print("|---" * (7 + len(heads)) + "|")
below = {h: [] for h in heads}
pairs = []
for s in shapes:
    def gbps(v):
        return f"{v:.2f}" if v is not None else "-"
    one_thread_peer = [v for v in (med(k, s, "peer_GBps") for k in kernels[:2]) if v is not None]
    default_peer = [v for v in (med(k, s, "peer_GBps") for k in kernels[2:]) if v is not None]
    cells = [gbps(med(k, s, "kernel_GBps")) for k in kernels[:2]]
    cells.append(gbps(statistics.median(one_thread_peer) if one_thread_peer else None))
    cells += [gbps(med(k, s, "kernel_GBps")) for k in kernels[2:]]
    cells.append(gbps(statistics.median(default_peer) if default_peer else None))
    ratios = []
    for k, h in zip(kernels, heads):
        m = med(k, s, "ratio")
        if m is None:
            ratios.append("-")
            continue
        ratios.append(f"{m:.2f} ({med(k, s, 'ratio_q1'):.2f}-{med(k, s, 'ratio_q3'):.2f})")
        pairs.append(med(k, s, "pairs"))
        if m < 1:
            below[h].append(s)
    print(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
print()
if pairs:
    print(f"pairs per ratio: {int(min(pairs))} to {int(max(pairs))}")
for h, where in below.items():
    print(f"{h}: median below 1 on {len(where)} of {len(shapes)} shapes" + (f" ({', '.join(where)})" if where else ""))
EOF
