#!/usr/bin/env bash
# The SIMD kernels of the ops beyond softmax against their peers, as the
# tables in docs/measurements.md ("Cross-entropy speed against PyTorch",
# "The other ops' SIMD kernels against their peers"):
#   -p cross-entropy (default): `build/softcheck_bench --paired-cross-entropy`,
#      cross_entropy_f32, cross_entropy_chunked_f32 and cross_entropy_simd_f32
#      (loss and gradient in one call) against torch_f32 (at::cross_entropy_loss
#      forward and autograd backward); shapes 1 x 262144 and 4096 x 32000;
#      about 6 minutes a round on 2 cores.
#   -p ops: `build/softcheck_bench --paired-ops`, shifted_log1p_simd_f32's lse
#      and entropy against torch_f32 (logsumexp; Categorical's entropy), and
#      softmax_backward_simd_f32 / log_softmax_backward_simd_f32 (y and dx in
#      one call) against torch_f32 and oneDNN's primitives on one OpenMP
#      thread; shapes 1 x 262144, 1024 x 4096 and 64 x 32000; and
#      attention_flash_simd_f32 against torch_f32 (the math composition) and
#      attention_flash_bc64_f32 (the scalar loop), 256 queries x 1024 keys x
#      d 64 and 64 x 4096 x 128.
# Each pair times KERNEL and PEER in alternating bursts on the same rows, both
# on one thread, and keeps the ratio of each pair (above 1: ours is faster).
# Each round is one run; the table gives per pair and shape the median over
# rounds of each run's median ratio, its quartiles' medians, and each side's
# GB/s (input + outputs). Nothing is asserted: a measurement.
#   scripts/gradient-speed.sh [-r ROUNDS] [-p cross-entropy|ops]     (default 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=3
pairs=cross-entropy
while getopts r:p: opt; do
  case $opt in
    r) reps=$OPTARG ;;
    p) pairs=$OPTARG ;;
    *) sed -n 2,20p "$0" >&2; exit 2 ;;
  esac
done
case $pairs in
  cross-entropy | ops) ;;
  *) echo "scripts/gradient-speed.sh: -p wants cross-entropy or ops, not '$pairs'" >&2; exit 2 ;;
esac
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "scripts/gradient-speed.sh: -r wants a positive number of rounds, not '$reps'" >&2; exit 2; }
bench=build/softcheck_bench
[[ -x $bench ]] || { echo "scripts/gradient-speed.sh: $bench not built (scripts/bootstrap.sh)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "scripts/gradient-speed.sh: $(date -u +%FT%TZ), $(nproc) CPUs, $(uptime | sed 's/.*load/load/'), $reps rounds of --paired-$pairs"
for ((round = 1; round <= reps; ++round)); do
  "$bench" "--paired-$pairs" --benchmark_min_time=0.5 --benchmark_out="$out/round-$round.json" \
    --benchmark_out_format=json >/dev/null 2>"$out/round-$round.log" || { cat "$out/round-$round.log" >&2; exit 1; }
done
python3 - "$out" "$reps" <<'PY'
import json, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for b in json.load(open(f"{folder}/round-{r}.json"))["benchmarks"]:
        parts = b["name"].split("/")
        key = (parts[1], parts[2], parts[3], parts[5])
        rows.setdefault(key, []).append(b)
print("| kernel | peer | op | shape | ratio (peer time / ours) | q1 | q3 | ours GB/s | peer GB/s | pairs per round |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (kernel, peer, op, shape), bs in rows.items():
    med = lambda k: statistics.median(b[k] for b in bs)
    print(f"| {kernel} | {peer} | {op} | {shape} | {med('ratio'):.2f} | {med('ratio_q1'):.2f} | {med('ratio_q3'):.2f} | "
          f"{med('kernel_GBps'):.2f} | {med('peer_GBps'):.2f} | {int(med('pairs'))} |")
PY
