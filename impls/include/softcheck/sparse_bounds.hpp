// Absolute error bounds of the sparse kernels (docs/sparse.md, "Error bounds";
// each derived next to its kernel in impls/src/). Componentwise ULP bounds do
// not exist for sparsemax / entmax (cancellation at the threshold), so the
// sparse properties and tests work with these.
#pragma once

#include <span>

#include "softcheck/kernel.hpp"

namespace softcheck {

// max_i |y_i - p_i| for kernel k's op on row x at `temperature`, first order in
// the format's u (a safe constant factor included in each derivation); +inf for
// an op or algorithm without a stated bound.
double sparse_abs_bound(const Kernel& k, const OpDecl& d, std::span<const double> x, double temperature);

}  // namespace softcheck
