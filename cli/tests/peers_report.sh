#!/usr/bin/env bash
# Peers in `softcheck run`'s report (docs/peers.md): every oneDNN, XNNPACK
# and PyTorch kernel appears with what was measured on the peers' own input
# families (benchdnn, XNNPACK's U(90, 100)) plus masks and N(0, 10) — or, when
# the library or the format is missing, as unavailable with the reason, never
# as passed. A peer's broken promise is a finding (exit 1), not a harness error.
#   peers_report.sh SOFTCHECK HAVE_ONEDNN(0|1) HAVE_XNNPACK(0|1) HAVE_TORCH(0|1)
set -u
bin=$1 have_onednn=$2 have_xnnpack=$3 have_torch=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rc=0
"$bin" run --peers --impl shifted_f32 --impl onednn_f32 --impl onednn_bf16 --impl onednn_f16 \
  --impl xnnpack_f32 --impl xnnpack_f16 --impl torch_f32 --impl torch_bf16 --impl torch_ls0p1_f32 --family benchdnn --family xnnpack_u90_100 --family fully_masked \
  --family mask_neg_inf --family normal_s10 --size 8 --size 1000 --jobs 2 --out "$tmp" >"$tmp/out.txt" 2>&1 || rc=$?
cat "$tmp/out.txt"
if [[ $rc -ne 0 && $rc -ne 1 ]]; then
  echo "FAIL: softcheck run exited $rc (0 or 1 expected)"
  exit 1
fi

python3 - "$tmp/report.json" "$have_onednn" "$have_xnnpack" "$have_torch" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
have = {"onednn": sys.argv[2] == "1", "xnnpack": sys.argv[3] == "1", "torch": sys.argv[4] == "1"}
rows = {(k["kernel"], k["op"]): k for k in report["kernels"]}
failures = []
expected = [("onednn_f32", "softmax"), ("onednn_f32", "log_softmax"), ("onednn_bf16", "softmax"),
            ("onednn_bf16", "log_softmax"), ("onednn_f16", "softmax"), ("xnnpack_f32", "softmax"),
            ("xnnpack_f16", "softmax"), ("torch_f32", "softmax"), ("torch_f32", "cross_entropy"),
            ("torch_f32", "softmax_backward"), ("torch_f32", "log_softmax_backward"), ("torch_bf16", "log_softmax"),
            ("onednn_f32", "softmax_backward"), ("onednn_f32", "log_softmax_backward"),
            ("onednn_bf16", "softmax_backward"), ("torch_ls0p1_f32", "cross_entropy")]
measured = 0
for key in expected:
    k = rows.get(key)
    if k is None:
        failures.append(f"{key} missing from report.json")
        continue
    lib = key[0].split("_")[0]
    if k["status"] == "unavailable":
        if not k.get("unavailable_reason"):
            failures.append(f"{key} unavailable without a reason")
        if key[0].endswith("_f32") and have[lib]:
            failures.append(f"{key} unavailable although {lib} was found at build time: {k['unavailable_reason']}")
        print(f"{key[0]:12} {key[1]:12} unavailable: {k['unavailable_reason']}")
        continue
    if not have[lib]:
        failures.append(f"{key} ran although {lib} was not found at build time")
    if k["status"] not in ("held", "violated", "no_contract"):
        failures.append(f"{key}: status {k['status']!r}")
    if k["rows"] == 0 or k["elements"] == 0:
        failures.append(f"{key}: no rows measured")
    measured += 1
    print(f"{key[0]:12} {key[1]:12} {k['status']:12} max ULP {k['max_ulp']:.4g}  NaN/inf {k['nonfinite']}"
          f"  masked-row policy broken in {k['policy_violations']} rows")
if have["onednn"] or have["xnnpack"] or have["torch"]:
    if measured == 0:
        failures.append("no peer kernel measured")
for f in failures:
    print("FAIL:", f)
print(f"{measured} peer (kernel, op) measured, {len(failures)} failures")
sys.exit(1 if failures else 0)
PY
