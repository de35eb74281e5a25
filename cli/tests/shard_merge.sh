#!/usr/bin/env bash
# A run in 3 shards, each shard told its part the way a scheduler would tell
# it (--shard, GoogleTest's variables, a Slurm array, a Kubernetes Indexed
# Job), merged with `report --merge`: the merged report.json is the
# unsharded run's, byte for byte, and the gate takes it. What is not the
# shards of one run is refused with exit 2. `check` and `sweep` shards
# together do the whole work once (docs/scaling.md).
# Usage: shard_merge.sh SOFTCHECK
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sc() { timeout 300 env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE \
  -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT -u SLURM_ARRAY_TASK_MIN -u JOB_COMPLETION_INDEX \
  -u SOFTCHECK_TOTAL_SHARDS "$@"; }

talk=(run --impl shifted_f32 --impl naive_f32 --impl bf16_shifted_f32acc --impl online_f32
      --family normal_s1 --family xnnpack_u90_100 --family fully_masked --size 1 --size 7 --size 300
      --temperature 1 --temperature 0.5 --property-tests 3)
run=("${talk[@]}" --seed 11 --quiet)

check whole 0 '' -- sc "$bin" "${run[@]}" --jobs 2 --out "$tmp/whole"
check shard0_flag 0 '' -- sc "$bin" "${run[@]}" --jobs 1 --shard 0/3 --out "$tmp/s0"
check shard1_gtest 0 '' -- sc GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=3 GTEST_SHARD_STATUS_FILE="$tmp/status" \
  "$bin" "${run[@]}" --jobs 2 --out "$tmp/s1"
[[ -e $tmp/status ]] && pass=$((pass + 1)) || { echo "FAIL gtest_status_file: not touched"; failures=$((failures + 1)); }
# A Slurm array 1-3: task 3 is the third shard.
check shard2_slurm 0 '' -- sc SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 \
  "$bin" "${run[@]}" --jobs 2 --out "$tmp/s2"
check_all shard_says_which 0 'shard 2/3 (from JOB_COMPLETION_INDEX/SOFTCHECK_TOTAL_SHARDS)' -- \
  sc JOB_COMPLETION_INDEX=2 SOFTCHECK_TOTAL_SHARDS=3 "$bin" "${talk[@]}" --seed 11 --jobs 2 --out "$tmp/s2k"
cmp -s "$tmp/s2/report.json" "$tmp/s2k/report.json" && pass=$((pass + 1)) ||
  { echo "FAIL k8s_shard: JOB_COMPLETION_INDEX=2 ran other cases than the Slurm task 3"; failures=$((failures + 1)); }

for s in s0 s1 s2; do
  grep -q '"shard": {' "$tmp/$s/report.json" && pass=$((pass + 1)) || { echo "FAIL $s: no shard object"; failures=$((failures + 1)); }
done
! grep -q '"shard"' "$tmp/whole/report.json" && pass=$((pass + 1)) || { echo "FAIL whole: a shard object"; failures=$((failures + 1)); }

check_all merge 0 'merged 3 shards' -- sc "$bin" report --merge "$tmp/s2/report.json" "$tmp/s0/report.json" \
  "$tmp/s1/report.json" --out "$tmp/merged"
if cmp "$tmp/whole/report.json" "$tmp/merged/report.json"; then
  pass=$((pass + 1))
else
  echo "FAIL merged_bytes: the merged report.json differs from the unsharded run's"; failures=$((failures + 1))
fi
# Same report.json, same renderings.
cmp -s "$tmp/whole/report.md" "$tmp/merged/report.md" && cmp -s "$tmp/whole/report.html" "$tmp/merged/report.html" &&
  pass=$((pass + 1)) || { echo "FAIL merged_renderings differ"; failures=$((failures + 1)); }
check gate_takes_merged 0 '' -- sc "$bin" gate --baseline "$tmp/merged/report.json" --report "$tmp/whole/report.json" --quiet
check gate_reruns_merged 0 '' -- sc "$bin" gate --baseline "$tmp/merged/report.json" --jobs 2 --quiet

# What is not the shards of one run.
check_all gate_refuses_shard 2 'shard 1/3 of a run' -- sc "$bin" gate --baseline "$tmp/s1/report.json" --quiet
check_all gate_refuses_shard_report 2 'shard 0/3 of a run' -- \
  sc "$bin" gate --baseline "$tmp/whole/report.json" --report "$tmp/s0/report.json" --quiet
check_all merge_missing 2 'shard reports missing: 1/3' -- \
  sc "$bin" report --merge "$tmp/s0/report.json" "$tmp/s2/report.json" --out "$tmp/m2"
check_all merge_twice 2 'shard 0/3 is given twice' -- \
  sc "$bin" report --merge "$tmp/s0/report.json" "$tmp/s0/report.json" "$tmp/s2/report.json" --out "$tmp/m3"
check_all merge_whole 2 'not a shard' -- sc "$bin" report --merge "$tmp/whole/report.json" --out "$tmp/m4"
check_all merge_needs_out 2 '--merge needs --out' -- sc "$bin" report --merge "$tmp/s0/report.json"
sc "$bin" "${talk[@]}" --quiet --seed 12 --shard 1/3 --out "$tmp/other" >/dev/null 2>&1
check_all merge_other_run 2 'not of the same run' -- \
  sc "$bin" report --merge "$tmp/s0/report.json" "$tmp/other/report.json" "$tmp/s2/report.json" --out "$tmp/m5"
check_all merge_onto_input 2 '' -- \
  sc "$bin" report --merge "$tmp/s0/report.json" "$tmp/s1/report.json" "$tmp/s2/report.json" --out "$tmp/s0"
[[ ! -e $tmp/m2 && ! -e $tmp/m3 && ! -e $tmp/m5 ]] && pass=$((pass + 1)) ||
  { echo "FAIL refused_merge_wrote"; failures=$((failures + 1)); }
grep -q '"shard": {' "$tmp/s0/report.json" && pass=$((pass + 1)) || { echo "FAIL merge_onto_input replaced a shard"; failures=$((failures + 1)); }

# Bad shards: a clear error and exit 2, before any work.
check_all shard_out_of_range 2 'shard index 3 is not below the shard count 3' -- \
  sc "$bin" "${run[@]}" --shard 3/3 --out "$tmp/bad1"
check_all shard_not_a_shard 2 "expected I/N" -- sc "$bin" "${run[@]}" --shard 1of3 --out "$tmp/bad2"
check_all gtest_half_set 2 'GTEST_TOTAL_SHARDS is not set' -- \
  sc GTEST_SHARD_INDEX=1 "$bin" "${run[@]}" --out "$tmp/bad3"
check_all slurm_bad 2 "SLURM_ARRAY_TASK_ID='x'" -- \
  sc SLURM_ARRAY_TASK_ID=x SLURM_ARRAY_TASK_COUNT=3 "$bin" "${run[@]}" --out "$tmp/bad4"
check_all k8s_without_count 2 'SOFTCHECK_TOTAL_SHARDS is not set' -- \
  sc JOB_COMPLETION_INDEX=0 "$bin" "${run[@]}" --out "$tmp/bad5"
[[ ! -e $tmp/bad1 && ! -e $tmp/bad3 ]] && pass=$((pass + 1)) || { echo "FAIL bad_shard_wrote"; failures=$((failures + 1)); }

# check: every kernel in exactly one shard, with the verdict lines of the whole check.
chk=(check --impl shifted_f32 --impl naive_f32 --impl online_f32 --impl bf16_shifted_f32acc --tests 4 --jobs 2)
sc "$bin" "${chk[@]}" >"$tmp/check_whole.txt" 2>&1
for i in 0 1 2; do sc "$bin" "${chk[@]}" --shard $i/3 >"$tmp/check_$i.txt" 2>&1; done
grep -v '^shard ' "$tmp"/check_[012].txt | sed 's/^[^:]*://' | grep -E '^[a-z0-9_]+ +[a-z_]+ +[a-z_0-9]+ +(passed|failed|not_claimed|skipped)' | tr -s ' ' | sort >"$tmp/check_shards.sorted"
grep -E '^[a-z0-9_]+ +[a-z_]+ +[a-z_0-9]+ +(passed|failed|not_claimed|skipped)' "$tmp/check_whole.txt" | tr -s ' ' | sort >"$tmp/check_whole.sorted"
if [[ -s $tmp/check_whole.sorted ]] && cmp -s "$tmp/check_whole.sorted" "$tmp/check_shards.sorted"; then
  pass=$((pass + 1))
else
  echo "FAIL check_shards: the shards' verdicts are not the whole check's"; diff "$tmp/check_whole.sorted" "$tmp/check_shards.sorted" | head; failures=$((failures + 1))
fi
check check_shard_names 0 '^shard 2/3: [12] of the 4 kernels: [a-z0-9_]' -- sc "$bin" "${chk[@]}" --shard 2/3

# sweep: contiguous shares of x whose rows add up to the whole sweep; the
# pair sweep's repro line replays its worst row alone.
swp=(sweep --dtype f16 --impl f16_shifted_f32acc --op softmax --json)
rows=0
for i in 0 1 2; do
  r=$(sc SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=3 "$bin" "${swp[@]}" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["rows"])')
  rows=$((rows + r))
done
whole_rows=$(sc "$bin" "${swp[@]}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["rows"])')
[[ $rows -eq $whole_rows && $rows -eq 63488 ]] && pass=$((pass + 1)) ||
  { echo "FAIL sweep_shards: $rows rows in 3 shards, $whole_rows whole (63488 finite f16)"; failures=$((failures + 1)); }
check_all sweep_pairs_shard 0 'sweep f16 pairs: 63488 rows' '(shard 7/63488: 1 of the 63488' -- \
  sc "$bin" sweep --dtype f16 --impl f16_shifted_f32acc --op softmax --pairs --shard 7/63488
check_all sweep_pair_repro 0 'sweep f16 pairs: 1 rows' -- \
  sc "$bin" sweep --dtype f16 --impl f16_shifted_f32acc --op softmax --pairs --value 0x7918 --second 0x7917
check_all sweep_second_without_pairs 2 '--second is for --pairs' -- \
  sc "$bin" sweep --dtype f16 --impl f16_shifted_f32acc --second 0x3C00
check_all sweep_bad_shard 2 'is not below' -- sc "$bin" sweep --dtype f16 --impl f16_shifted_f32acc --shard 3/3

echo "shard_merge: $pass passed, $failures failed"
[[ $failures -eq 0 ]]
