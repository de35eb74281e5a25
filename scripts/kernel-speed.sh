#!/usr/bin/env bash
# The SIMD kernels against oneDNN (issue 10), as the table in docs/kernels.md:
# build/softcheck_bench with the four SIMD kernels, oneDNN pinned to one
# OpenMP thread and oneDNN with its default threading, in ROUNDS: each round
# is one Google Benchmark run of every kernel and shape once, in random order.
# The table gives each kernel's median GB/s over the rounds and, for each
# ratio, the median of the per-round ratios with their range: a ratio is
# taken between two measurements of the same round (seconds apart), so a
# drift of the whole machine's speed between rounds (this VM's is about
# +-10 %) cancels out of it. Nothing is asserted: a measurement, not a test.
#   scripts/kernel-speed.sh [-r ROUNDS] [-t MIN_TIME_S] [-o JSON_DIR]
# Defaults: 5 rounds, 0.2 s per benchmark, the JSON files in a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5 min_time=0.2 out=
while getopts r:t:o: opt; do
  case $opt in
    r) reps=$OPTARG ;;
    t) min_time=$OPTARG ;;
    o) out=$OPTARG ;;
    *) sed -n 2,12p "$0"; exit 2 ;;
  esac
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "scripts/kernel-speed.sh: -r wants a positive number of rounds, not '$reps'" >&2; exit 2; }
bench=build/softcheck_bench
[[ -x $bench ]] || { echo "scripts/kernel-speed.sh: $bench not built (scripts/bootstrap.sh)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "scripts/kernel-speed.sh: needs python3 for the table" >&2; exit 2; }
if [[ -z $out ]]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; else mkdir -p "$out"; fi

echo "scripts/kernel-speed.sh: $(date -u +%FT%TZ), $(nproc) CPUs, $(uptime | sed 's/.*load/load/'), $reps rounds of $min_time s per benchmark"
for ((round = 1; round <= reps; ++round)); do
  "$bench" '--benchmark_filter=^(shifted_simd_f32|online_simd_f32|shifted_simd_mt_f32|online_simd_mt_f32|onednn_f32|onednn_f32_1thread)/softmax/' \
    --benchmark_enable_random_interleaving=true --benchmark_min_time="$min_time" \
    --benchmark_out="$out/round-$round.json" --benchmark_out_format=json >/dev/null 2>"$out/round-$round.log" ||
    { cat "$out/round-$round.log" >&2; exit 1; }
  rm -f "$out/round-$round.log"
done
echo "scripts/kernel-speed.sh: done, $(uptime | sed 's/.*load/load/')"

python3 - "$out" "$reps" <<'EOF'
import json, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
gbs = []  # per round: (kernel, shape) -> GB/s
for r in range(1, rounds + 1):
    one = {}
    for b in json.load(open(f"{folder}/round-{r}.json"))["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        kernel, _op, _fmt, shape = b["run_name"].split("/")[:4]
        one[(kernel, shape)] = b["bytes_per_second"] / 1e9
    gbs.append(one)
kernels = ["shifted_simd_f32", "online_simd_f32", "onednn_f32_1thread",
           "shifted_simd_mt_f32", "online_simd_mt_f32", "onednn_f32"]
heads = ["shifted_simd", "online_simd", "oneDNN 1 thread", "shifted_simd_mt", "online_simd_mt", "oneDNN default"]
ratios = [("shifted_simd_f32", "onednn_f32_1thread", "shifted / oneDNN 1t"),
          ("online_simd_f32", "onednn_f32_1thread", "online / oneDNN 1t"),
          ("shifted_simd_mt_f32", "onednn_f32", "shifted_mt / oneDNN"),
          ("online_simd_mt_f32", "onednn_f32", "online_mt / oneDNN")]
shapes = sorted({s for one in gbs for (_, s) in one}, key=lambda s: (int(s.split("x")[0]) > 1, int(s.split("x")[1])))
print(f"median GB/s over {rounds} rounds; ratios: median of the per-round ratios (lowest-highest)")
print()
print("| rows x cols | " + " | ".join(heads) + " | " + " | ".join(r[2] for r in ratios) + " |")
print("|---" * (1 + len(heads) + len(ratios)) + "|")
below = {r[2]: [] for r in ratios}
for s in shapes:
    cells = []
    for k in kernels:
        v = [one[(k, s)] for one in gbs if (k, s) in one]
        cells.append(f"{statistics.median(v):.2f}" if v else "-")
    rs = []
    for a, b, name in ratios:
        q = [one[(a, s)] / one[(b, s)] for one in gbs if (a, s) in one and (b, s) in one]
        if not q:
            rs.append("-")
            continue
        m = statistics.median(q)
        rs.append(f"{m:.2f} ({min(q):.2f}-{max(q):.2f})" if len(q) > 1 else f"{m:.2f}")
        if m < 1:
            below[name].append(s)
    print(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(rs) + " |")
print()
for name, where in below.items():
    print(f"{name}: median below 1 on {len(where)} of {len(shapes)} shapes" + (f" ({', '.join(where)})" if where else ""))
EOF
