// entmax15: the exact sort-based 1.5-entmax of Peters, Niculae & Martins 2019
// (REFERENCE.md, "Entmax family"; deep-spin/entmax's _entmax_threshold_and_support):
//   z' = (z - max) / 2 sorted descending; for each rho: mean_rho = cumsum/rho,
//   ss_rho = rho (mean_sq_rho - mean_rho^2), delta_rho = (1 - ss_rho)/rho,
//   tau_rho = mean_rho - sqrt(max(delta_rho, 0));
//   support size k = #{rho : tau_rho <= s_rho} (as the reference counts it);
//   y_i = max(z'_i - tau_k, 0)^2.
#include "sparse_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void entmax15_core(Op, std::span<T> z) {
  const T a = reduce_max<T>(z);
  if (zero_if_fully_masked(z, a)) return;
  for (T& v : z) v = (v - a) / T(2);
  const std::vector<T> s = sorted_finite_desc<T>(z);
  std::vector<T> tau(s.size());
  T cum = 0, cum_sq = 0;
  std::size_t k = 0;
  for (std::size_t r = 1; r <= s.size(); ++r) {
    cum += s[r - 1];
    cum_sq += s[r - 1] * s[r - 1];
    const T mean = cum / T(r);
    const T mean_sq = cum_sq / T(r);
    const T ss = T(r) * (mean_sq - mean * mean);
    const T delta = (T(1) - ss) / T(r);
    tau[r - 1] = mean - std::sqrt(std::max(delta, T(0)));
    if (tau[r - 1] <= s[r - 1]) ++k;
  }
  const T t = tau[std::max<std::size_t>(k, 1) - 1];
  for (T& v : z) {
    const T d = std::max(v - t, T(0));
    v = d * d;
  }
}

// No componentwise ULP contract (y_i = (z'_i - tau)^2 cancels near the
// threshold). Absolute error, first order (docs/sparse.md, "Error bounds"):
// support entries have z'_i in [-1, 0]; cumsum and cum_sq of k terms <= 1 carry
// (k - 1) k u absolute, so mean, mean_sq and ss ~ 3 k^2 u; delta ~ 3 k u and,
// since delta >= 1/k^2 on the true support (sum (s_j - tau) >= 1 by
// Cauchy-Schwarz, so mean - tau >= 1/k), sqrt(delta) ~ 3 k^2 u / 2; tau and
// z'_i - tau: ~ 2 k^2 u; squaring a value <= 1: |y_i - p_i| <~ 4 k^2 u + 4u.
Contract entmax15_contract() {
  return no_contract(
      "componentwise ULPs unbounded: (z_i - tau)^2 cancels near the threshold; "
      "absolute error ~ 4 n^2 u (cumulative sums, sqrt(delta) with delta >= 1/k^2, "
      "see docs/sparse.md)");
}

}  // namespace

KernelFamily entmax15_family() {
  return {
      .algorithm = "entmax15",
      .description = "exact sort-based 1.5-entmax (Peters et al. 2019, deep-spin/entmax)",
      .masked_policy = MaskedRowPolicy::zeros,
      .ops = {{Op::entmax15, entmax15_contract()}},
      .f32 = entmax15_core<float>,
      .f64 = entmax15_core<double>,
  };
}

}  // namespace softcheck::kernels
