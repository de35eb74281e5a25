// sparsemax: Martins & Astudillo 2016 (REFERENCE.md, "Entmax family"), the
// sort-based exact algorithm, on the max-shifted row (sparsemax is shift
// invariant, and the shift keeps every support entry in [-1, 0]):
//   z'_i = z_i - a;  s = z' sorted descending;
//   k = max{rho : 1 + rho s_rho > sum_{j<=rho} s_j};  tau = (sum_{j<=k} s_j - 1) / k;
//   y_i = max(z'_i - tau, 0).
#include "sparse_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void sparsemax_core(Op, std::span<T> z) {
  const T a = reduce_max<T>(z);
  if (zero_if_fully_masked(z, a)) return;
  subtract(z, a);  // -inf stays -inf and ends as 0 below
  const std::vector<T> s = sorted_finite_desc<T>(z);
  T cum = 0, cum_k = 0;
  std::size_t k = 1;
  for (std::size_t r = 1; r <= s.size(); ++r) {
    cum += s[r - 1];
    if (T(1) + T(r) * s[r - 1] > cum) {
      k = r;
      cum_k = cum;
    }
  }
  const T tau = (cum_k - T(1)) / T(k);
  for (T& v : z) v = std::max(v - tau, T(0));
}

// No componentwise ULP contract: y_i = z'_i - tau cancels for entries near the
// threshold (y_i -> 0 while the absolute error of tau stays ~ k u), so the
// relative error of a support entry is unbounded. What holds instead, first
// order in u (derivation in docs/sparse.md, "Error bounds"): the support
// entries have z'_i in [-1, 0] (tau >= -1 since y_max = -tau <= 1), so
//   fl(z_i - a): u each; the prefix sum of k terms of size <= 1: (k - 1) k u
//   plus the k input errors; minus 1: (k + 1) u; divided by k, plus its own
//   rounding: |d tau| <= (k + 3) u; y_i = fl(z'_i - tau): u + |d tau| + u.
//   |y_i - p_i| <= (k + 5) u <= (n + 5) u, absolute.
Contract sparsemax_contract() {
  return no_contract(
      "componentwise ULPs unbounded: y_i = z_i - tau cancels near the threshold; "
      "absolute error <= (n + 5) u (shifted entries in [-1, 0], prefix sum (k-1)k u, "
      "see docs/sparse.md)");
}

}  // namespace

KernelFamily sparsemax_family() {
  return {
      .algorithm = "sparsemax",
      .description = "sort-based sparsemax (Martins & Astudillo 2016) on z - max",
      .masked_policy = MaskedRowPolicy::zeros,
      .ops = {{Op::sparsemax, sparsemax_contract()}},
      .f32 = sparsemax_core<float>,
      .f64 = sparsemax_core<double>,
  };
}

}  // namespace softcheck::kernels
