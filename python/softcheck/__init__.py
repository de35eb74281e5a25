"""softcheck: exact softmax references and row-by-row verdicts for outputs
computed anywhere (docs/python.md).

    import softcheck
    softcheck.oracle(x, op="softmax", temperature=1.0, dtype="f32")
    r = softcheck.check(x, y, op="softmax")          # the reference rule
    r = softcheck.check(x, y, contract=4)            # a bound of 4 ulps
    r = softcheck.check(x, y, contract="shifted_f32")  # a built-in kernel's derived contract
    softcheck.testing.assert_softmax_close(y, x)     # raises AssertionError

Arrays: NumPy float64 / float32 / float16 arrays, PyTorch tensors (float64,
float32, float16, bfloat16, on any device: they are copied to the CPU), or
NumPy uint16 / int16 arrays of bf16 bit patterns with dtype="bf16". x is one
row (n) or rows x n; y has x's shape for softmax and log_softmax and one value
per row for lse and entropy. The judging is done by the same C++ function as
`softcheck compare` (judge_rows in compare/), which asks the row judge that
`softcheck run` asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from . import _softcheck

__version__ = _softcheck.__version__
__all__ = ["oracle", "check", "CheckResult", "RowVerdict", "Worst", "ops", "dtypes", "kernel_contract", "testing"]

_FLOAT_DTYPES = {8: "f64", 4: "f32", 2: "f16"}
_TORCH_DTYPES = {"torch.float64": "f64", "torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}
_NUMPY_OF = {"f64": np.float64, "f32": np.float32, "f16": np.float16}


def ops() -> List[str]:
    """The ops softcheck.check and softcheck.oracle take."""
    return list(_softcheck.ops())


def dtypes() -> List[str]:
    return ["f64", "f32", "f16", "bf16"]


def kernel_contract(kernel: str, op: str = "softmax", dtype: str = "f32") -> Tuple[str, str]:
    """The derived contract a built-in kernel declares (formula, derivation),
    as `softcheck list --wide` prints it: what contract=KERNEL holds rows to."""
    return _softcheck.kernel_contract(kernel, op, dtype)


def _is_torch(a: Any) -> bool:
    return type(a).__module__.split(".")[0] == "torch"


@dataclass(frozen=True)
class _Values:
    values: np.ndarray  # float64, exact
    dtype: Optional[str]  # what the container says (None: a plain float64 array or a list)
    kind: str  # "numpy", "torch", "bits"
    container: Any  # the NumPy dtype or the torch dtype


def _values(a: Any, what: str, dtype: Optional[str]) -> _Values:
    if _is_torch(a):
        t = a.detach().cpu()
        inferred = _TORCH_DTYPES.get(str(t.dtype))
        if inferred is None:
            raise ValueError(f"{what}: torch dtype {t.dtype} is not float64, float32, float16 or bfloat16")
        import torch  # only when a tensor was given

        return _Values(t.to(torch.float64).numpy(), inferred, "torch", t.dtype)
    arr = np.asarray(a)
    if arr.dtype in (np.uint16, np.int16):
        if dtype != "bf16":
            raise ValueError(f"{what}: {arr.dtype} arrays are read as bf16 bit patterns, with dtype='bf16' only")
        bits = arr.view(np.uint16).astype(np.uint32) << np.uint32(16)
        return _Values(bits.view(np.float32).astype(np.float64), "bf16", "bits", arr.dtype)
    if arr.dtype.kind == "f" and arr.dtype.itemsize in _FLOAT_DTYPES:
        inferred = _FLOAT_DTYPES[arr.dtype.itemsize]
        # A float64 array says nothing of the format its values are in.
        return _Values(arr.astype(np.float64), None if inferred == "f64" else inferred, "numpy", arr.dtype)
    if arr.dtype.kind in "iub":
        return _Values(arr.astype(np.float64), None, "numpy", arr.dtype)
    raise ValueError(f"{what}: cannot read {arr.dtype} values (float64, float32, float16, bf16 bits or torch)")


def _resolve_dtype(dtype: Optional[str], *given: Tuple[str, _Values]) -> str:
    if dtype is not None:
        if dtype not in dtypes():
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(dtypes())}")
        return dtype
    seen = {what: v.dtype for what, v in given if v.dtype is not None}
    kinds = set(seen.values())
    if len(kinds) > 1:
        said = ", ".join(f"{w} is {d}" for w, d in seen.items())
        raise ValueError(f"the arrays disagree on the format ({said}): pass dtype=")
    return kinds.pop() if kinds else "f64"


def _as_rows(v: np.ndarray, what: str) -> np.ndarray:
    if v.ndim == 1:
        v = v.reshape(1, -1)
    if v.ndim != 2:
        raise ValueError(f"{what} has shape {v.shape}: one row (n,) or rows x n (rows, n) is taken")
    if v.shape[0] == 0 or v.shape[1] == 0:
        raise ValueError(f"{what} has shape {v.shape}: no values")
    return np.ascontiguousarray(v, dtype=np.float64)


def _row_output(op: str) -> bool:
    return op in ("softmax", "log_softmax")


def oracle(x: Any, op: str = "softmax", temperature: float = 1.0, dtype: Optional[str] = None,
           masked_policy: str = "nan", bits: int = 256) -> Any:
    """The exact op(x / temperature) of every row, correctly rounded to dtype
    (MPFR at `bits` bits, docs/oracle.md).

    x is first rounded to dtype, once, as `softcheck oracle` rounds its
    text; dtype defaults to what x's container says (f64 for a list or a
    float64 array). The result comes in x's container: a torch tensor of
    x's dtype (on the CPU), bf16 bit patterns as x's uint16 / int16, else a NumPy array
    of the dtype (float32 for bf16, whose values it holds exactly). A row
    of -inf gets the masked_policy's value (nan, zeros, uniform), a row
    with a NaN or +inf entry NaN.
    """
    if op not in ops():
        raise ValueError(f"op {op!r} is not one of {', '.join(ops())}")
    v = _values(x, "x", dtype)
    f = _resolve_dtype(dtype, ("x", v))
    rows = _as_rows(v.values, "x")
    y = _softcheck.exact(rows, op, f, float(temperature), masked_policy, int(bits))
    if _row_output(op):
        y = y.reshape(v.values.shape)
    else:
        y = y.reshape(-1) if v.values.ndim == 2 else y.reshape(())
    if v.kind == "torch":
        import torch

        return torch.from_numpy(np.ascontiguousarray(y)).to(v.container)
    if v.kind == "bits":
        b = y.astype(np.float32).view(np.uint32) >> np.uint32(16)
        return b.astype(np.uint16).view(v.container)
    return y.astype(_NUMPY_OF.get(f, np.float32))  # bf16 values are float32 values


@dataclass(frozen=True)
class RowVerdict:
    """One row's verdict: its words are rows.csv's (docs/report-schema.md)."""

    row: int
    verdict: str  # held | violated | broken | reference_held | reference_violated | no_contract
    #               | policy_held | policy_violated | undefined
    holds: bool
    max_error: float  # in `unit` (ulp; u for lse and entropy); NaN for masked / undefined rows
    column: int  # where max_error is (the first NaN/inf output if any); -1 without
    got: float
    bound: float  # the contract's bound on this row; inf without a contract
    reference_ratio: float  # the reference rule's error / allowed; NaN where it did not judge
    explain: str  # why (violated rows, up to explain_limit, and the worst row)
    repro: str  # `softcheck oracle ... -- values`: the row's exact values


@dataclass(frozen=True)
class Worst:
    """The row that broke its rule most, at its worst element."""

    row: int
    column: int
    got: float
    exact: str  # 21 significant digits
    exact_rounded: float  # the exact value correctly rounded to the dtype
    error: float
    bound: float
    reference_ratio: float
    explain: str
    repro: str


class CheckResult:
    """Per-row verdicts of softcheck.check; true when every row held."""

    def __init__(self, d: dict, op: str, dtype: str, temperature: float):
        self.op, self.dtype, self.temperature = op, dtype, temperature
        self.held: bool = bool(d["held"])
        self.rule: str = d["rule"]  # what judged the rows, and its bound
        self.unit: str = d["unit"]
        self.verdicts: List[str] = list(d["verdict"])
        self.holds: np.ndarray = d["holds"]
        self.max_error: np.ndarray = d["max_error"]  # per row
        self.column: np.ndarray = d["element"]
        self.got: np.ndarray = d["got"]
        self.bound: np.ndarray = d["bound"]
        self.reference_ratio: np.ndarray = d["reference_ratio"]
        self.explain: List[str] = list(d["explain"])
        self.repro: List[str] = list(d["repro"])
        self.tier: List[str] = list(d["tier"])
        self.violated_rows: List[int] = [i for i, h in enumerate(self.holds) if not h]
        self.undefined_rows = int(d["undefined_rows"])
        self.masked_rows = int(d["masked_rows"])
        self.report_json: str = d["report_json"]
        w = d["worst"]
        self.worst: Optional[Worst] = None if w is None else Worst(**w)

    @property
    def rows(self) -> List[RowVerdict]:
        return [RowVerdict(i, self.verdicts[i], bool(self.holds[i]), float(self.max_error[i]), int(self.column[i]),
                           float(self.got[i]), float(self.bound[i]), float(self.reference_ratio[i]), self.explain[i],
                           self.repro[i]) for i in range(len(self.verdicts))]

    @property
    def max_ulp(self) -> float:
        """The largest error over the measured outputs (in `unit`)."""
        m = self.max_error[np.isfinite(self.max_error)]
        return float(m.max()) if m.size else 0.0

    def write_report(self, directory: str) -> None:
        """report.json, report.md and report.html into directory, as `softcheck compare --out`."""
        _softcheck.write_report(self.report_json, str(directory))

    def __bool__(self) -> bool:
        return self.held

    def __repr__(self) -> str:
        return (f"CheckResult(held={self.held}, rows={len(self.verdicts)}, violated={len(self.violated_rows)}, "
                f"max_error={self.max_ulp:.4g} {self.unit}, rule={self.rule!r})")


def _reference_settings(reference_rule: Any) -> Tuple[str, float, float]:
    k, slack = 2.0, 4.0  # run's defaults (report.hpp ReferenceRuleSettings)
    if reference_rule is None:
        return "no_contract", k, slack
    if reference_rule is False or reference_rule == "off":
        return "off", k, slack
    if reference_rule is True:
        return "all", k, slack
    if isinstance(reference_rule, dict):
        extra = set(reference_rule) - {"k", "slack"}
        if extra:
            raise ValueError(f"reference_rule takes k and slack, not {sorted(extra)}")
        return "all", float(reference_rule.get("k", k)), float(reference_rule.get("slack", slack))
    if isinstance(reference_rule, tuple) and len(reference_rule) == 2:
        return "all", float(reference_rule[0]), float(reference_rule[1])
    raise ValueError("reference_rule: None (judges without a contract), True, False, (k, slack) or {'k':, 'slack':}")


def check(x: Any, y: Any, op: str = "softmax", temperature: float = 1.0, dtype: Optional[str] = None,
          contract: Union[None, float, str] = None, reference_rule: Any = None, masked_policy: str = "nan",
          explain_limit: int = 16, oracle: str = "tiered", name: str = "python") -> CheckResult:
    """Judge y = op(x / temperature) row by row against the exact values.

    contract: None (default) -- no contract: the reference rule judges each
        row (max |y - exact| <= k x that of softcheck's stable kernel of the
        dtype + slack u max(1, max |output|), k = 2, slack = 4: `softcheck
        run`'s rule for kernels without a contract) together with the floor
        (no NaN/inf where the exact value is finite);
      a number K -- each row's largest error (ulps; units of u for lse and
        entropy) must stay within K / (1 - K u), the form of every contract;
      a kernel name -- the derived contract of that built-in kernel of the
        same dtype (softcheck.kernel_contract shows it; e.g. "shifted_f32").
    reference_rule: None -- it judges when there is no contract; False --
        off; True, (k, slack) or {"k": k, "slack": s} -- also beside a contract.
    masked_policy: what y holds on rows of x that are all -inf (nan, zeros, uniform).
    Values must be values of dtype (ValueError names the first that is not).
    """
    if op not in ops():
        raise ValueError(f"op {op!r} is not one of {', '.join(ops())}")
    vx, vy = _values(x, "x", dtype), _values(y, "y", dtype)
    f = _resolve_dtype(dtype, ("x", vx), ("y", vy))
    xs = _as_rows(vx.values, "x")
    ny = vy.values
    if _row_output(op):
        if ny.shape != vx.values.shape:
            raise ValueError(f"y has shape {ny.shape}; {op} of x {vx.values.shape} has shape {vx.values.shape}")
        ys = np.ascontiguousarray(ny.reshape(xs.shape))
    else:
        want = (xs.shape[0],) if vx.values.ndim == 2 else ()
        if ny.shape != want and not (vx.values.ndim == 1 and ny.shape == (1,)):
            raise ValueError(f"y has shape {ny.shape}; {op} of x {vx.values.shape} gives one value per row {want}")
        ys = np.ascontiguousarray(ny.reshape(-1))
    contract_ulps = contract_kernel = None
    if isinstance(contract, str):
        contract_kernel = contract
    elif contract is not None:
        contract_ulps = float(contract)
        if not math.isfinite(contract_ulps) or contract_ulps <= 0:
            raise ValueError(f"contract={contract!r}: a bound in ulps must be finite and > 0")
    scope, k, slack = _reference_settings(reference_rule)
    if oracle not in ("tiered", "mpfr"):
        raise ValueError("oracle: 'tiered' or 'mpfr'")
    d = _softcheck.judge(xs, ys, op, f, float(temperature), contract_ulps, contract_kernel, scope, k, slack,
                         masked_policy, int(explain_limit), oracle == "tiered", name)
    return CheckResult(d, op, f, float(temperature))


from . import testing  # noqa: E402  (testing uses check)
