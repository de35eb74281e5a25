#!/usr/bin/env bash
# The SIMD kernels against oneDNN (issue 10), as the table in docs/kernels.md:
# one Google Benchmark run of build/softcheck_bench with the four SIMD kernels,
# oneDNN pinned to one OpenMP thread and oneDNN with its default threading,
# repetitions interleaved at random (so machine noise falls on all of them
# alike), then the median GB/s of each and the ratios between kernels measured
# in that same run. Nothing is asserted: a measurement, not a test.
#   scripts/kernel-speed.sh [-r REPETITIONS] [-t MIN_TIME_S] [-o JSON]
# Defaults: 5 repetitions, 0.2 s each, the JSON in a temporary file.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5 min_time=0.2 json=
while getopts r:t:o: opt; do
  case $opt in
    r) reps=$OPTARG ;;
    t) min_time=$OPTARG ;;
    o) json=$OPTARG ;;
    *) sed -n 2,9p "$0"; exit 2 ;;
  esac
done
bench=build/softcheck_bench
[[ -x $bench ]] || { echo "scripts/kernel-speed.sh: $bench not built (scripts/bootstrap.sh)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "scripts/kernel-speed.sh: needs python3 for the table" >&2; exit 2; }
[[ -n $json ]] || { json=$(mktemp); trap 'rm -f "$json"' EXIT; }

echo "scripts/kernel-speed.sh: $(date -u +%FT%TZ), $(nproc) CPUs, $(uptime | sed 's/.*load/load/'), $reps repetitions of $min_time s"
"$bench" '--benchmark_filter=^(shifted_simd_f32|online_simd_f32|shifted_simd_mt_f32|online_simd_mt_f32|onednn_f32|onednn_f32_1thread)/softmax/' \
  --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true --benchmark_min_time="$min_time" \
  --benchmark_report_aggregates_only=true --benchmark_out="$json" --benchmark_out_format=json >/dev/null 2>"$json.log" ||
  { cat "$json.log" >&2; exit 1; }
rm -f "$json.log"
echo "scripts/kernel-speed.sh: done, $(uptime | sed 's/.*load/load/')"

python3 - "$json" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
gbs = {}  # (kernel, shape) -> median GB/s
for r in runs:
    if r.get("aggregate_name") != "median":
        continue
    kernel, _op, _fmt, shape = r["run_name"].split("/")[:4]
    gbs[(kernel, shape)] = r["bytes_per_second"] / 1e9
kernels = ["shifted_simd_f32", "online_simd_f32", "onednn_f32_1thread",
           "shifted_simd_mt_f32", "online_simd_mt_f32", "onednn_f32"]
heads = ["shifted_simd", "online_simd", "oneDNN 1 thread", "shifted_simd_mt", "online_simd_mt", "oneDNN default"]
ratios = [("shifted_simd_f32", "onednn_f32_1thread", "shifted / oneDNN 1t"),
          ("online_simd_f32", "onednn_f32_1thread", "online / oneDNN 1t"),
          ("shifted_simd_mt_f32", "onednn_f32", "shifted_mt / oneDNN"),
          ("online_simd_mt_f32", "onednn_f32", "online_mt / oneDNN")]
shapes = sorted({s for (_, s) in gbs}, key=lambda s: (int(s.split("x")[0]) > 1, int(s.split("x")[1])))
print("| rows x cols | " + " | ".join(heads) + " | " + " | ".join(r[2] for r in ratios) + " |")
print("|---" * (1 + len(heads) + len(ratios)) + "|")
below = {r[2]: [] for r in ratios}
for s in shapes:
    cells = [f"{gbs[(k, s)]:.2f}" if (k, s) in gbs else "-" for k in kernels]
    rs = []
    for a, b, name in ratios:
        if (a, s) in gbs and (b, s) in gbs:
            q = gbs[(a, s)] / gbs[(b, s)]
            rs.append(f"{q:.2f}")
            if q < 1:
                below[name].append(s)
        else:
            rs.append("-")
    print(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(rs) + " |")
print()
for name, where in below.items():
    print(f"{name}: below 1 on {len(where)} of {len(shapes)} shapes" + (f" ({', '.join(where)})" if where else ""))
EOF
