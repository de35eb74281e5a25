"""Assertions for test suites, in the habit of torch.testing.assert_close,
with the exact reference in place of rtol / atol (docs/python.md)."""

from __future__ import annotations

import math
from typing import Any, Optional, Union

__all__ = ["assert_softmax_close"]


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) or math.isnan(v) else ("inf" if v > 0 else "-inf")


def assert_softmax_close(actual: Any, inputs: Any, *, op: str = "softmax", temperature: float = 1.0,
                         dtype: Optional[str] = None, contract: Union[None, float, str] = None,
                         reference_rule: Any = None, masked_policy: str = "nan", msg: Optional[str] = None) -> None:
    """Raise AssertionError unless every row of `actual` holds as op(inputs /
    temperature) under softcheck.check's rule (contract, or the reference
    rule without one). The message names the worst element -- row, column,
    got, exact, error and bound -- and a command line that reproduces its
    exact values. `msg` replaces the first line."""
    from . import check

    r = check(inputs, actual, op=op, temperature=temperature, dtype=dtype, contract=contract,
              reference_rule=reference_rule, masked_policy=masked_policy)
    if r.held:
        return
    n = len(r.verdicts)
    shown = ", ".join(str(i) for i in r.violated_rows[:10]) + (", ..." if len(r.violated_rows) > 10 else "")
    lines = [msg or f"{op} outputs are not close to the exact values ({r.dtype}, temperature {temperature:g})",
             f"rule: {r.rule}",
             f"{len(r.violated_rows)} of {n} rows violated: rows [{shown}]"]
    w = r.worst
    if w is not None:
        if math.isnan(w.reference_ratio) or not math.isinf(w.bound):
            bound = f"bound {_num(w.bound)} {r.unit}" if math.isfinite(w.bound) else "no contract"
        else:
            bound = f"reference rule: error / allowed = {w.reference_ratio:.4g}"
        if math.isfinite(w.bound) and not math.isnan(w.reference_ratio):
            bound += f", reference rule: error / allowed = {w.reference_ratio:.4g}"
        lines.append(f"worst element: row {w.row}, column {w.column}: got {_num(w.got)}, exact {w.exact} "
                     f"(rounded to {r.dtype}: {_num(w.exact_rounded)}), error {_num(w.error)} {r.unit}, {bound}")
        lines.append(f"why: {w.explain}")
        lines.append(f"repro: {w.repro}")
    raise AssertionError("\n".join(lines))
