"""softcheck's Python module against PyTorch's CPU softmax / log_softmax (f32,
bf16), deliberately wrong NumPy softmaxes, known oracle values and bad
arguments. Run by ctest (python.pytest) with PYTHONPATH=build/python;
SOFTCHECK_BIN, when set, is the softcheck binary the repro lines are run with.

What the PyTorch outputs are held to: PyTorch declares no componentwise
contract (impls/src/peer_torch.cpp), so softcheck.check's default applies, the
rule `softcheck run` judges a kernel without a contract by: the reference rule
(max |y - exact| <= 2 x that of softcheck's stable kernel of the same format +
4 u max(1, max |output|), docs/gating-your-kernel.md) and the floor. The
figures it measured are in docs/python.md ("PyTorch on the test rows").
"""

import math
import os
import shlex
import subprocess

import numpy as np
import pytest

import softcheck
from softcheck.testing import assert_softmax_close

try:
    import torch
except ImportError:  # python3-torch is in scripts/bootstrap.sh; without it these tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (python3-torch) is not installed")

SEED = 20240611


def blocks():
    """Named 2-D float32 blocks of rows: the peers' hard cases and plain ones."""
    rng = np.random.default_rng(SEED)
    out = []
    for n in (1, 2, 7, 33, 257, 1000):
        out.append((f"normal_n{n}", rng.standard_normal((6, n))))
        out.append((f"normal_s30_n{n}", 30 * rng.standard_normal((6, n))))
    # XNNPACK's f32 rows: exp overflows, exp(x - max) does not.
    out.append(("uniform_90_100", rng.uniform(90, 100, (6, 129))))
    # oneDNN benchdnn's rows: a few entries at 88, 89, 90 (the f32 exp
    # overflow edge) among a huge negative "mask" near f32's lowest value.
    b = np.full((4, 300), -3.0e38)
    for r in range(4):
        live = np.arange(r, 300, 37)
        b[r, live] = 88 + np.arange(live.size) % 3
    out.append(("benchdnn_88_90", b))
    m = rng.standard_normal((6, 65))
    m[rng.uniform(size=m.shape) < 0.3] = -np.inf  # masked entries
    m[:, 0] = 0.5  # every row keeps one live entry
    out.append(("masked_30pct", m))
    d = rng.standard_normal((6, 100))
    d[np.arange(6), rng.integers(0, 100, 6)] = 40  # one dominant entry
    out.append(("one_dominant", d))
    return [(name, v.astype(np.float32)) for name, v in out]


MEASURED = {}


@needs_torch
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_torch_holds_the_reference_rule(op, dtype):
    torch.set_num_threads(1)
    fn = torch.softmax if op == "softmax" else torch.log_softmax
    tdtype = torch.float32 if dtype == "f32" else torch.bfloat16
    worst = 0.0
    for name, x32 in blocks():
        x = torch.from_numpy(x32).to(tdtype)
        y = fn(x, dim=-1)
        r = softcheck.check(x, y, op=op)
        assert r.dtype == dtype
        assert r.held, f"{name}: {r!r}\n{r.worst}"
        assert "reference rule" in r.rule
        worst = max(worst, r.max_ulp)
        # The same through the testing helper (no exception).
        assert_softmax_close(y, x, op=op)
    MEASURED[(op, dtype)] = worst
    print(f"torch {op} {dtype}: max error {worst:.4g} ulp over {len(blocks())} blocks")


@needs_torch
def test_torch_bf16_holds_the_contract_of_the_kernel_that_computes_as_it_does():
    # PyTorch's CPU bf16 softmax accumulates in f32 and rounds each output
    # once: what bf16_shifted_f32acc does, whose derived contract applies.
    torch.set_num_threads(1)
    for name, x32 in blocks():
        x = torch.from_numpy(x32).to(torch.bfloat16)
        r = softcheck.check(x, torch.softmax(x, dim=-1), contract="bf16_shifted_f32acc")
        assert r.held, f"{name}: {r!r}\n{r.worst}"
        assert r.rule.startswith("contract ")


def naive_softmax_f32(x):
    """Deliberately wrong: no max shift, so exp overflows to inf past 88.7."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x.astype(np.float32))
        return e / e.sum(axis=-1, keepdims=True, dtype=np.float32)


def f16_exp_softmax(x):
    """Deliberately wrong: exp computed in float16, the rest in float32."""
    x = x.astype(np.float32)
    e = np.exp((x - x.max(axis=-1, keepdims=True)).astype(np.float16)).astype(np.float32)
    return e / e.sum(axis=-1, keepdims=True, dtype=np.float32)


def test_missing_max_shift_is_caught_at_the_overflowing_element():
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((8, 33)).astype(np.float32)
    x[5, 17] = 100  # exp(100) overflows f32: inf / inf = NaN there, 0 elsewhere in the row
    y = naive_softmax_f32(x)
    r = softcheck.check(x, y)
    assert not r.held
    assert r.violated_rows == [5]
    assert r.verdicts[5] == "broken"
    assert (r.worst.row, r.worst.column) == (5, 17)
    assert math.isnan(r.worst.got)
    assert r.worst.exact_rounded == softcheck.oracle(x[5], dtype="f32")[17]
    with pytest.raises(AssertionError) as e:
        assert_softmax_close(y, x)
    text = str(e.value)
    assert "1 of 8 rows violated: rows [5]" in text
    assert "worst element: row 5, column 17: got nan" in text
    assert "repro: softcheck oracle --op softmax --dtype f32 -- " in text
    _replays(r.worst)


def ulp_errors_f32(y, exact):
    """|y - v| / ulp_f32(v), from f64 values of the exact results (numpy only)."""
    e = np.abs(exact)
    expo = np.floor(np.log2(np.where(e > 0, e, 1.0)))
    ulp = np.exp2(np.maximum(expo, -126) - 23)
    return np.abs(y.astype(np.float64) - exact) / ulp


def test_f16_exp_is_caught_and_the_worst_element_is_the_largest_ulp_error():
    rng = np.random.default_rng(SEED + 1)
    x = (4 * rng.standard_normal((16, 50))).astype(np.float32)
    y = f16_exp_softmax(x)
    # A constant bound of 8 ulps: the worst row is the one with the largest
    # error, its worst element the largest of the row.
    r = softcheck.check(x, y, contract=8)
    assert not r.held
    exact = softcheck.oracle(x, dtype="f64")  # x's f32 values, exact results rounded to f64
    errors = ulp_errors_f32(y, exact)
    row, col = np.unravel_index(np.argmax(errors), errors.shape)
    assert (r.worst.row, r.worst.column) == (row, col)
    assert r.worst.error == pytest.approx(errors[row, col], rel=1e-6)
    assert r.worst.got == y[row, col]
    assert len(r.violated_rows) == 16
    # The default rule (no contract) catches every row too.
    assert not softcheck.check(x, y).held
    with pytest.raises(AssertionError, match=rf"row {row}, column {col}: got"):
        assert_softmax_close(y, x, contract=8)
    _replays(r.worst)


def _replays(worst):
    """The repro line, run with the built binary, prints the exact value."""
    binary = os.environ.get("SOFTCHECK_BIN")
    if not binary:
        return
    args = shlex.split(worst.repro)
    assert args[0] == "softcheck"
    out = subprocess.run([binary] + args[1:], capture_output=True, text=True, check=True).stdout.splitlines()
    exact, rounded = out[worst.column].split()
    # The oracle prints the shortest text that reads back in the dtype.
    as_dtype = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32}[args[args.index("--dtype") + 1]]
    assert as_dtype(rounded) == as_dtype(worst.exact_rounded)
    assert exact[:10] == worst.exact[:10]


def test_correct_numpy_softmax_holds_and_its_report_is_written(tmp_path):
    rng = np.random.default_rng(SEED + 2)
    x = rng.standard_normal((5, 40)).astype(np.float32)
    y = softcheck.oracle(x)
    assert y.dtype == np.float32
    r = softcheck.check(x, y, contract=0.5)
    assert r.held and r.max_ulp <= 0.5
    assert all(v == "held" for v in r.verdicts)
    r.write_report(tmp_path)
    import json

    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "held"
    assert report["kernels"][0]["rows"] == 5
    assert (tmp_path / "report.md").exists() and (tmp_path / "report.html").exists()


def test_oracle_known_values():
    # softmax([0, ln 2]) = [1/3, 2/3], rounded to f32 (x's ln 2 is f32's).
    y = softcheck.oracle(np.array([0.0, math.log(2.0)], np.float32), dtype="f32")
    assert y.dtype == np.float32
    assert list(y) == [np.float32(1 / 3), np.float32(2 / 3)]
    # REFERENCE.md's known values: x = [-2, 0, 0.5] -> [0.0486, 0.3592, 0.5922].
    assert np.allclose(softcheck.oracle([-2.0, 0.0, 0.5]), [0.0486, 0.3592, 0.5922], atol=5e-5)
    # Equal entries: exactly 1/n; log_softmax -log 2; lse log 2.
    assert list(softcheck.oracle([1.0, 1.0, 1.0, 1.0])) == [0.25] * 4
    assert softcheck.oracle([0.0, 0.0], op="log_softmax")[0] == -math.log(2.0)
    assert float(softcheck.oracle([0.0, 0.0], op="lse")) == math.log(2.0)
    # Temperature: softmax(x / 2).
    assert list(softcheck.oracle([0.0, 2 * math.log(2.0)], temperature=2.0)) == [1 / 3, 2 / 3]
    # A masked entry is exactly 0; a fully masked row follows masked_policy.
    assert list(softcheck.oracle([0.0, -math.inf])) == [1.0, 0.0]
    assert np.isnan(softcheck.oracle([-math.inf, -math.inf])).all()
    assert list(softcheck.oracle([-math.inf, -math.inf], masked_policy="uniform")) == [0.5, 0.5]
    # bf16 bit patterns in, bit patterns out; the same values as float32 in.
    bits = np.array([0x3F80, 0x4000, 0xC000], np.uint16)  # 1, 2, -2
    out = softcheck.oracle(bits, dtype="bf16")
    assert out.dtype == np.uint16
    as_f32 = softcheck.oracle(np.array([1.0, 2.0, -2.0], np.float32), dtype="bf16")
    assert list((out.astype(np.uint32) << 16).view(np.float32)) == list(as_f32)


@needs_torch
def test_oracle_keeps_the_torch_dtype():
    x = torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.bfloat16)
    y = softcheck.oracle(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16 and y.shape == x.shape
    assert softcheck.check(x, y, contract=0.5).held


def test_bad_arguments_raise_value_error():
    x = np.zeros((3, 4), np.float32)
    y = np.full((3, 4), 0.25, np.float32)
    with pytest.raises(ValueError, match="shape"):
        softcheck.check(x, np.zeros((3, 5), np.float32))
    with pytest.raises(ValueError, match="shape"):
        softcheck.check(np.zeros((2, 3, 4), np.float32), np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="no values"):
        softcheck.check(np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32))
    with pytest.raises(ValueError, match="disagree"):
        softcheck.check(x, y.astype(np.float16))
    with pytest.raises(ValueError, match=r"y\[0, 0\] = 0.10000000149011612 is not a value of f16"):
        softcheck.check(x, np.full((3, 4), 0.1, np.float32), dtype="f16")
    with pytest.raises(ValueError, match="bf16 bit patterns"):
        softcheck.check(x, y.view(np.uint16)[:, :4])
    with pytest.raises(ValueError, match="op"):
        softcheck.check(x, y, op="sparsemax")
    with pytest.raises(ValueError, match="one value per row"):
        softcheck.check(x, y, op="lse")
    with pytest.raises(ValueError, match="finite and > 0"):
        softcheck.check(x, y, contract=float("nan"))
    with pytest.raises(ValueError, match="declares no contract"):
        softcheck.check(x, y, contract="torch_f32")
    with pytest.raises(ValueError, match="computes in f64"):
        softcheck.check(x, y, contract="shifted_f64")
    with pytest.raises(ValueError, match="temperature"):
        softcheck.check(x, y, temperature=0.0)
    assert softcheck.check(x, y).held
    assert softcheck.check(x[0], y[0]).held  # one row
