#!/usr/bin/env bash
# `softcheck sweep --elements` through the built binary: the whole E4M3 and
# E5M2 length-2 sweeps, the whole FP4 length-3 one, a shard of the E4M3
# length-3 sweep, the
# test-only mutant_no_max_shift (exp(x) unshifted: inf / inf past x ~ 88.7,
# inside E4M3's range up to 448) caught with exit 1 and its repro line
# replaying exactly its worst row, and the usage errors (exit 2).
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Whole length-2 sweeps through an f32 kernel: every value exact in f32.
check e4m3_pairs_f32 0 'shifted_f32 +softmax .*held' -- "$bin" sweep --dtype f32 --elements e4m3 --impl shifted_f32
check e4m3_pairs_rows 0 '64516 rows, every e4m3 pattern but 0x7F 0xFF' -- \
  "$bin" sweep --dtype f16 --elements e4m3 --length 2 --impl f16_shifted_f32acc --op softmax
check e5m2_pairs_json 0 '' -- bash -c "'$bin' sweep --dtype bf16 --elements e5m2 --impl bf16_shifted_f32acc --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j[\"rows\"] == 249 * 249 and j[\"all_held\"], j[\"rows\"]
assert j[\"row\"] == {\"elements\": \"e5m2\", \"length\": 2, \"temperature\": 1.0, \"rows_of_all\": 65536, \"excluded_rows\": 3535,
                      \"excluded_patterns\": [\"0x7C\", \"0x7D\", \"0x7E\", \"0x7F\", \"0xFD\", \"0xFE\", \"0xFF\"]}, j[\"row\"]
assert all(k[\"masked_rows\"] == 1 and k[\"policy_violations\"] == 0 for k in j[\"kernels\"])'"

# FP4: every row of 3 of its 16 values, whole.
check e2m1_triples 0 '4096 rows, every e2m1 pattern' -- "$bin" sweep --dtype f16 --elements e2m1 --length 3

# One shard of the length-3 sweep: its share of the first entry, in JSON.
check e4m3_triples_shard 0 '' -- bash -c "'$bin' sweep --dtype f16 --elements e4m3 --length 3 --impl f16_shifted_f32acc --op softmax --shard 200/254 --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j[\"rows\"] == 254 * 254 and j[\"all_held\"], j[\"rows\"]
assert j[\"shard\"] == {\"index\": 200, \"count\": 254, \"first_values\": 1, \"of\": 254, \"range\": \"0xC9..0xC9\"}, j[\"shard\"]
assert j[\"row\"][\"rows_of_all\"] == 256 ** 3 and j[\"row\"][\"excluded_rows\"] == 256 ** 3 - 254 ** 3'"

# A broken kernel: exit 1, and its repro line replays the one worst row.
"$bin" sweep --dtype f32 --elements e4m3 --length 2 --impl mutant_no_max_shift --json >"$tmp/mutant.json" 2>"$tmp/err"
rc=$?
if [[ $rc -ne 1 ]]; then
  echo "FAIL mutant: exit $rc, wanted 1"; cat "$tmp/err"; failures=$((failures + 1))
else
  pass=$((pass + 1))
  repro=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["worst"]["repro"])' "$tmp/mutant.json")
  case $repro in
    "softcheck sweep --dtype f32 --elements e4m3 --length 2 --impl mutant_no_max_shift --op softmax --value 0x"*" --second 0x"*)
      pass=$((pass + 1)) ;;
    *) echo "FAIL mutant_repro_shape: '$repro'"; failures=$((failures + 1)) ;;
  esac
  # The repro line, run as printed (its words split, "softcheck" the binary).
  read -r -a words <<<"${repro#softcheck }"
  "$bin" "${words[@]}" --json >"$tmp/replay.json" 2>"$tmp/err"
  rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL mutant_repro: exit $rc, wanted 1"; cat "$tmp/err"; failures=$((failures + 1))
  elif ! python3 - "$tmp/mutant.json" "$tmp/replay.json" <<'EOF'
import json, sys
whole = json.load(open(sys.argv[1]))["kernels"][0]
j = json.load(open(sys.argv[2]))
k = j["kernels"][0]
assert j["rows"] == 1 and k["violations"] == 1, (j["rows"], k["violations"])
for f in ("row", "got", "element", "pattern", "second", "repro"):
    assert k["worst"][f] == whole["worst"][f], f
EOF
  then
    echo "FAIL mutant_repro: the replay's worst row differs"; failures=$((failures + 1))
  else
    pass=$((pass + 1))
  fi
fi

# Usage errors: exit 2.
check length_4 2 'rows have 2 or 3 entries' -- "$bin" sweep --dtype f16 --elements e4m3 --length 4
check length_1 2 'rows have 2 or 3 entries' -- "$bin" sweep --dtype f16 --elements e4m3 --length 1
check unknown_elements 2 'elements' -- "$bin" sweep --dtype f16 --elements e8m0
check elements_and_pairs 2 'give one of them' -- "$bin" sweep --dtype f16 --elements e4m3 --pairs
check length_alone 2 '--length is for --elements' -- "$bin" sweep --dtype f16 --length 3
check third_in_pairs 2 '--third is for --elements with --length 3' -- "$bin" sweep --dtype f16 --elements e4m3 --third 0x38
check nan_value 2 'a NaN of e4m3' -- "$bin" sweep --dtype f16 --elements e4m3 --value 0x7F
check inf_value 2 '\+inf of e5m2' -- "$bin" sweep --dtype f16 --elements e5m2 --second 0x7C
check wide_value 2 'not an e4m3 pattern \(8 bits\)' -- "$bin" sweep --dtype f16 --elements e4m3 --value 0x100
check wide_fp4_value 2 'not an e2m1 pattern \(4 bits\)' -- "$bin" sweep --dtype f16 --elements e2m1 --value 0x10
check f32_without_elements 2 'dtype f32 takes --elements' -- "$bin" sweep --dtype f32
check wrong_format 2 'needs f32 kernels' -- "$bin" sweep --dtype f32 --elements e4m3 --impl f16_shifted_f32acc
check bad_shard 2 'shard' -- "$bin" sweep --dtype f16 --elements e4m3 --length 3 --shard 254/254

finish "sweep --elements end-to-end"
