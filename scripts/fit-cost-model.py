#!/usr/bin/env python3
"""Fits the cost model of `softcheck run --budget` (suite/src/run_suite.cpp,
modelled_case_seconds) to the per-case CPU seconds of `run --jobs 1
--case-times FILE`, and shows how well it predicts (docs/measurements.md,
"The cost model of --budget").

  scripts/fit-cost-model.py CASE_TIMES.csv...

Each case is judged one of three ways, each with its own least-squares fit of
CPU seconds: attention families (the MPFR attention oracle), rows whose exact
values come from MPFR (an output without a fast tier), and the fast tiers
(per-value cost by format). Prints the coefficients in the order the C++
function uses them, then, per file, the modelled and measured CPU seconds of
the cheapest cases (by the fitted model) that fit each budget."""
import csv
import sys

import numpy as np

FORMATS = ["f64", "f32", "f16", "bf16"]


def load(path):
    with open(path, newline="") as f:
        return [dict(r, _file=path) for r in csv.DictReader(f)]


def kind(r):
    if int(r["head_dim"]) > 1:
        return "attention"
    return "mpfr_rows" if r["mpfr_rows"] == "1" else "fast"


def features(r):
    rows, n, d = int(r["rows"]), int(r["n"]), int(r["head_dim"])
    outputs, sparse = int(r["outputs"]), int(r["sparse_outputs"])
    values = rows * n * d
    k = kind(r)
    if k == "attention":
        return [rows * outputs, values * outputs]
    if k == "mpfr_rows":
        return [rows * outputs, values, values * (outputs - sparse), values * sparse]
    return [rows * outputs] + [values * outputs * (r["format"] == f) for f in FORMATS]


NAMES = {"attention": ["rows x outputs", "values x outputs"],
         "mpfr_rows": ["rows x outputs", "values", "values x non-sparse outputs", "values x sparse outputs"],
         "fast": ["rows x outputs"] + [f"values x outputs ({f})" for f in FORMATS]}


def main(paths):
    data = [r for p in paths for r in load(p)]
    coef = {}
    for k in NAMES:
        part = [r for r in data if kind(r) == k]
        if not part:
            print(f"{k}: no cases")
            continue
        x = np.array([features(r) for r in part], float)
        y = np.array([float(r["cpu_seconds"]) for r in part])
        coef[k], *_ = np.linalg.lstsq(x, y, rcond=None)
        print(f"{k} ({len(part)} cases, {y.sum():.2f} CPU s):")
        for name, c in zip(NAMES[k], coef[k]):
            print(f"  {name:28s} {c:.3g}")
    for p in paths:
        part = [r for r in data if r["_file"] == p and kind(r) in coef]
        model = np.array([float(np.dot(features(r), coef[kind(r)])) for r in part])
        meas = np.array([float(r["cpu_seconds"]) for r in part])
        print(f"\n{p}: {len(part)} cases, modelled {model.sum():.2f} CPU s, measured {meas.sum():.2f}")
        print("  budget (CPU s) | cases | modelled | measured")
        order = np.argsort(model, kind="stable")
        for budget in [0.5, 1, 2, 4, 8, 16, 50, 100, 200]:
            used = took = 0.0
            count = 0
            for i in order:
                if used + model[i] > budget:
                    break
                used += model[i]
                took += meas[i]
                count += 1
            print(f"  {budget:14g} | {count:5d} | {used:8.2f} | {took:8.2f}")
            if count == len(part):
                break


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
