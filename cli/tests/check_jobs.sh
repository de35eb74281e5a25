#!/usr/bin/env bash
# `softcheck check --jobs N`: worker processes, same output and exit status for
# any N (a mutant gives failures with counterexamples to carry over the pipes).
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(check --impl shifted_f32 --impl online_f32 --impl mutant_skip_tail --impl mutant_masked_nan --impl naive_f64 --tests 25 --seed 5)
"$bin" "${args[@]}" --jobs 1 > "$tmp/one.txt"; one=$?
"$bin" "${args[@]}" --jobs 3 > "$tmp/three.txt"; three=$?
"$bin" "${args[@]}" > "$tmp/default.txt"; dflt=$?
fail=0
[ "$one" = 1 ] || { echo "expected exit 1 (mutants fail), got $one"; fail=1; }
[ "$three" = "$one" ] && [ "$dflt" = "$one" ] || { echo "exit status differs: $one $three $dflt"; fail=1; }
cmp -s "$tmp/one.txt" "$tmp/three.txt" || { echo "--jobs 3 output differs"; diff "$tmp/one.txt" "$tmp/three.txt" | head; fail=1; }
cmp -s "$tmp/one.txt" "$tmp/default.txt" || { echo "default --jobs output differs"; fail=1; }
grep -q "counterexample\|failed" "$tmp/three.txt" || { echo "no failure reported"; fail=1; }
exit $fail
