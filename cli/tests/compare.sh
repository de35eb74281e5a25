#!/usr/bin/env bash
# softcheck compare end to end: .npy files written here (plain Python, not
# NumPy, so the reader is checked against an independent writer), exact
# outputs from `softcheck oracle --rows` held in f32, f16, bf16 (bit
# patterns), Fortran order and a scalar op; a perturbed element violated at
# its row and column, its repro line replaying it; shape, dtype, truncated and
# foreign files, an output onto an input and a NaN option exit 2 writing
# nothing; --help is a real help.
#   compare.sh SOFTCHECK NPY_FOUND(0|1)
set -uo pipefail
softcheck=$1 npy=$2
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check_all help 0 "--contract" "--reference-rule" "--masked-policy" "Exit status: 0 every row held" -- \
  "$softcheck" compare --help
if [[ $npy != 1 ]]; then
  touch "$tmp/x.npy"
  check unavailable 2 'built without xtensor' -- "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/x.npy" --dtype f32
  finish compare
  exit
fi

# npy.py PATH DESCR ROWS COLS ORDER FORMAT < values: one .npy file (version
# 1.0, padded as NumPy pads), values in row-major order on standard input.
cat >"$tmp/npy.py" <<'EOF'
import struct, sys
path, descr, rows, cols, order, fmt = sys.argv[1:7]
rows, cols = int(rows), int(cols)
vals = [float(v) if fmt != "H" else int(v) for v in sys.stdin.read().split()]
assert len(vals) == max(rows, 1) * cols, (len(vals), rows, cols)
shape = f"({cols},)" if rows == 0 else f"({rows}, {cols})"
if order == "F" and rows > 0:
    vals = [vals[r * cols + c] for c in range(cols) for r in range(rows)]
header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if order == "F" else "False", shape)
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%d%s" % (len(vals), fmt), *vals))
EOF
npy() { python3 "$tmp/npy.py" "$@"; }
# The rows: values exact in bf16 (so in f16 and f32 too), spread, with a
# large range in the last rows.
python3 - >"$tmp/x.txt" <<'EOF'
rows, cols = 6, 9
for r in range(rows):
    print(" ".join(str(((r * cols + c) * 37 % 61 - 30) / 8 * (1 + 3 * (r >= 4))) for c in range(cols)))
EOF
# exact DTYPE: the oracle's values rounded to DTYPE, one row per line.
exact() {
  "$softcheck" oracle --dtype "$1" --op "${2:-softmax}" --rows "$tmp/x.txt" |
    python3 -c '
import sys
rows = {}
for line in sys.stdin:
    r, _, v = line.split()
    rows.setdefault(int(r), []).append(v)
for r in sorted(rows):
    print(" ".join(rows[r]))'
}
bits() { python3 -c '
import struct, sys
print(" ".join(str(struct.unpack("<I", struct.pack("<f", float(v)))[0] >> 16) for v in sys.stdin.read().split()))'; }

npy "$tmp/x.npy" '<f4' 6 9 C f <"$tmp/x.txt"
exact f32 >"$tmp/y.txt"
npy "$tmp/y.npy" '<f4' 6 9 C f <"$tmp/y.txt"
check_all f32_held 0 "held: 0 of 6 rows violated" "the reference rule" "shifted_f32" -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --op softmax --dtype f32 --out "$tmp/held"
check report_readable 0 '' -- "$softcheck" report "$tmp/held/report.json" --md "$tmp/held.md"
check_all contract_held 0 "contract 1" -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --dtype f32 --contract 1 --out "$tmp/c1"

# One element 2^-10 relatively off (about 8192 ulp): row 3, column 5.
python3 -c '
import struct, sys
v = [l.split() for l in open(sys.argv[1])]
x = float(v[3][5]) * (1 + 2.0**-10)
v[3][5] = repr(struct.unpack("<f", struct.pack("<f", x))[0])
print("\n".join(" ".join(r) for r in v))' "$tmp/y.txt" >"$tmp/bad.txt"
npy "$tmp/bad.npy" '<f4' 6 9 C f <"$tmp/bad.txt"
check_all f32_violated 1 "VIOLATED: 1 of 6 rows violated" "row 3: reference_violated" "at [5]" "--row 3" -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/bad.npy" --dtype f32 --out "$tmp/bad"
check_all violated_report 0 -- python3 -c '
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
assert k["status"] == "violated" and k["reference"]["violations"] == 1, k["status"]
assert (k["worst"]["row"], k["worst"]["element"]) == (3, 5), k["worst"]
assert k["worst"]["repro"].endswith("--row 3"), k["worst"]["repro"]' "$tmp/bad/report.json"
repro=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"][0]["worst"]["repro"])' "$tmp/bad/report.json")
check_all repro_replays 1 "row 3: reference_violated" "exact values: softcheck oracle --op softmax --dtype f32 --" -- \
  bash -c "${repro/softcheck /$softcheck }"
# Two compare reports gate like two run reports: the perturbed one fails its cell.
check gate_same 0 'gate: passed' -- "$softcheck" gate --baseline "$tmp/held/report.json" --report "$tmp/held/report.json"
check gate_regression 1 'cell:compare/9' -- "$softcheck" gate --baseline "$tmp/held/report.json" --report "$tmp/bad/report.json"
check_all contract_violated 1 "row 3: violated" "> bound" -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/bad.npy" --dtype f32 --contract shifted_f32 --out "$tmp/bad2"

# Fortran order, f16, bf16 bit patterns, and lse (one value per row).
npy "$tmp/xF.npy" '<f4' 6 9 F f <"$tmp/x.txt"
npy "$tmp/yF.npy" '<f4' 6 9 F f <"$tmp/y.txt"
check fortran_order 0 'held: 0 of 6' -- "$softcheck" compare --x "$tmp/xF.npy" --y "$tmp/y.npy" --dtype f32 --out "$tmp/F"
check fortran_both 0 'held: 0 of 6' -- "$softcheck" compare --x "$tmp/xF.npy" --y "$tmp/yF.npy" --dtype f32 --out "$tmp/F2"
npy "$tmp/x16.npy" '<f2' 6 9 C e <"$tmp/x.txt"
exact f16 | npy "$tmp/y16.npy" '<f2' 6 9 C e
check f16_held 0 'held: 0 of 6' -- "$softcheck" compare --x "$tmp/x16.npy" --y "$tmp/y16.npy" --dtype f16 --out "$tmp/h"
bits <"$tmp/x.txt" | npy "$tmp/xb.npy" '<u2' 6 9 C H
exact bf16 | bits | npy "$tmp/yb.npy" '<u2' 6 9 C H
check bf16_held 0 'held: 0 of 6' -- "$softcheck" compare --x "$tmp/xb.npy" --y "$tmp/yb.npy" --dtype bf16 --out "$tmp/b"
# lse's y is one value per row: shape (6,).
"$softcheck" oracle --dtype f32 --op lse --rows "$tmp/x.txt" | awk '{print $3}' | npy "$tmp/lse.npy" '<f4' 0 6 C f
check lse_held 0 'held: 0 of 6' -- "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/lse.npy" --op lse --dtype f32 --out "$tmp/l"

# A fully masked row: NaN follows the default policy (PyTorch's), not zeros.
printf -- '-inf -inf -inf\n0 1 2\n' >"$tmp/m.txt"
npy "$tmp/xm.npy" '<f8' 2 3 C d <"$tmp/m.txt"
printf 'nan nan nan\n0.09003057317038046 0.24472847105479764 0.6652409557748219\n' | npy "$tmp/ym.npy" '<f8' 2 3 C d
check masked_nan 0 'held' -- "$softcheck" compare --x "$tmp/xm.npy" --y "$tmp/ym.npy" --dtype f64 --out "$tmp/m1"
check masked_zeros 1 'row 0: policy_violated' -- \
  "$softcheck" compare --x "$tmp/xm.npy" --y "$tmp/ym.npy" --dtype f64 --masked-policy zeros --out "$tmp/m2"

# Usage errors: exit 2, nothing written.
head -n 5 "$tmp/y.txt" | npy "$tmp/short.npy" '<f4' 5 9 C f
check shape_mismatch 2 'shape mismatch: .*short.npy is \(5, 9\).*needs \(6, 9\)' -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/short.npy" --dtype f32 --out "$tmp/e1"
absent shape_mismatch_wrote "$tmp/e1/report.json"
check wrong_dtype 2 "holds float32 \('<f4'\); --dtype f16 needs float16 \('<f2'\)" -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --dtype f16 --out "$tmp/e2"
absent wrong_dtype_wrote "$tmp/e2/report.json"
check mixed_dtype 2 "y16.npy holds float16" -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y16.npy" --dtype f32 --out "$tmp/e3"
head -c 150 "$tmp/y.npy" >"$tmp/trunc.npy"
check truncated 2 'the header says 54 values \(216 bytes\) but the file holds 22 bytes' -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/trunc.npy" --dtype f32 --out "$tmp/e4"
python3 -c '
import struct, sys
h = b"{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (-1, 9), }\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + bytes(216))' "$tmp/neg.npy"
check malformed_header 2 'not a .npy header NumPy writes' -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/neg.npy" --dtype f32 --out "$tmp/e9"
check not_npy 2 'not a .npy file' -- "$softcheck" compare --x "$tmp/x.txt" --y "$tmp/y.npy" --dtype f32 --out "$tmp/e5"
check missing 2 'no such file' -- "$softcheck" compare --x "$tmp/none.npy" --y "$tmp/y.npy" --dtype f32 --out "$tmp/e6"
check nan_temperature 2 'nan' -- "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --dtype f32 --temperature nan
check bad_contract 2 'no built-in kernel' -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --dtype f32 --contract nosuch --out "$tmp/e7"
check other_format_contract 2 'computes in f16' -- \
  "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --dtype f32 --contract f16_shifted_f32acc --out "$tmp/e8"
mkdir -p "$tmp/io" && cp "$tmp/x.npy" "$tmp/io/report.json"
check output_onto_input 2 '' -- "$softcheck" compare --x "$tmp/io/report.json" --y "$tmp/y.npy" --dtype f32 --out "$tmp/io"
check_all input_untouched 0 -- cmp "$tmp/x.npy" "$tmp/io/report.json"
check row_out_of_range 2 'x has 6 rows' -- "$softcheck" compare --x "$tmp/x.npy" --y "$tmp/y.npy" --dtype f32 --row 6

finish compare
