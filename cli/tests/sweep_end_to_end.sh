#!/usr/bin/env bash
# `softcheck sweep` through the built binary: exit codes (0 held, 2 usage),
# the --value repro path, --json, and the full-sweep timing line. Exit 1 (a
# violated contract) is covered by cli.Sweep.FindsABugAtOneInputValue, which
# plants a one-value bug in an f16 kernel (no built-in kernel violates).
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# One value (a repro line): every f16 kernel, both ops; then bf16.
check one_value_f16 0 'f16_shifted_f32acc +softmax .*held' -- "$bin" sweep --dtype f16 --value 0x3C00
check one_value_f16acc 0 'f16_shifted_f16acc +log_softmax .*none' -- "$bin" sweep --dtype f16 --value 0x3C00
check one_value_bf16 0 'bf16_shifted_f32acc +softmax' -- "$bin" sweep --dtype bf16 --impl bf16_shifted_f32acc --op softmax --value 0xC2C8
check decimal_pattern 0 'over 1 finite' -- "$bin" sweep --dtype f16 --impl f16_shifted_f32acc --value 15360
check json 0 '' -- bash -c "'$bin' sweep --dtype f16 --value 0x0001 --value 0xFBFF --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j[\"rows\"]==2 and j[\"all_held\"], j'"

# Usage errors: exit 2.
check no_dtype 2 'dtype' -- "$bin" sweep
check bad_dtype 2 'dtype' -- "$bin" sweep --dtype f32
check unknown_impl 2 "unknown kernel 'nosuch'" -- "$bin" sweep --dtype f16 --impl nosuch
check wrong_format 2 'needs f16 kernels' -- "$bin" sweep --dtype f16 --impl shifted_f32
check inf_value 2 'not a finite f16 value' -- "$bin" sweep --dtype f16 --value 0x7C00
check junk_value 2 'not a 16-bit pattern' -- "$bin" sweep --dtype f16 --value zz
check big_value 2 'not a 16-bit pattern' -- "$bin" sweep --dtype f16 --value 0x10000
check bad_op 2 'op' -- "$bin" sweep --dtype f16 --op sparsemax
# Ops the sweep has no operands for (a head dimension, a target, an upstream
# gradient, a second output): refused by name, the accepted ops given.
for op in relu_attention linear_attention attention cross_entropy softmax_backward softmax_lse lse; do
  check "unfed_op_$op" 2 "--op: $op .*sweep runs softmax or log_softmax" -- "$bin" sweep --dtype f16 --op "$op"
done
check unfed_op_f32_elements 2 'relu_attention .*sweep runs softmax or log_softmax' -- \
  "$bin" sweep --dtype f32 --elements e4m3 --op relu_attention
check attention_kernel 2 'sweep runs softmax or log_softmax' -- \
  "$bin" sweep --dtype f32 --elements e4m3 --impl relu_attention_naive_f32
# --help offers exactly the ops it runs.
help_op=$("$bin" sweep --help | grep -A1 -e '--op')
if grep -q '{softmax,log_softmax}' <<<"$help_op" && ! grep -qE 'attention|cross_entropy|backward|lse' <<<"$help_op"; then
  pass=$((pass + 1))
else
  echo "FAIL help_ops: --op offers more than softmax and log_softmax:"; echo "$help_op"; failures=$((failures + 1))
fi

finish "sweep end-to-end"
