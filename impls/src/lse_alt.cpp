// lse_alt: the "alternative" softmax through the log-sum-exp (older SciPy;
// REFERENCE.md "alternative shifted"):
//   a = max_i z_i;  lse = a + log(sum_i exp(z_i - a))
//   softmax_j = exp(z_j - lse);  log-softmax_j = z_j - lse
#include "kernel_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void lse_alt_core(Op op, std::span<T> zy) {
  const T a = reduce_max<T>(zy);  // -inf for a fully masked row: NaN below
  const T lse = a + std::log(sum_exp_shifted<T>(zy, a));
  if (op == Op::softmax)
    exp_shifted(zy, lse);  // y_j = exp(z_j - lse)
  else
    subtract(zy, lse);     // y_j = z_j - lse
}

// Softmax contract, first order in u (Blanchard-Higham-Higham "alternative
// shifted" 1 + max_j|x_j - y| + |y + n - x_min|, made componentwise):
//  - S = sum exp(z_i - a) in [1, n]: relative error (n - 1)u + (1.02 + R)u
//    (exp 0.51 ulp <= 1.02u, shifted.cpp); log(S) then has absolute error
//    (n + 0.02 + R)u + 2u ln n (log's own rounding, < 1 ulp <= 2u, on
//    |log S| <= ln n), and a + log(S) rounds once more by u|lse|:
//    |d lse| <= (R + n + 0.02 + 2 ln n + |lse|)u with |lse| <= M + ln n.
//  - fl(z_j - lse) adds u|z_j - lse| <= u(R + ln n) (contributing j), and an
//    absolute argument error is a relative error of exp; exp adds 1.02u.
//  Total: 1.04 + n + 2R + M + 4 ln n <= 2 + 3n + 2R + 1M, using
//  4 ln n <= 1.48n (ln n <= n/e). Temperature: 4uM as for shifted (t = 4).
//  ulp(v) > u|v|, subnormal outputs as for shifted.
Contract softmax_contract() {
  return declared_contract(2, 3, 2, 1, 4,
                           "lse has absolute error <= (R + n + 0.02 + 2 ln n + |lse|)u with "
                           "|lse| <= M + ln n; z_j - lse adds u(R + ln n); exp 1.02u: "
                           "n + 2R + M + 4 ln n + 1.04 <= 2 + 3n + 2R + M; temperature 4uM");
}

}  // namespace

KernelFamily lse_alt_family() {
  return {
      .algorithm = "lse_alt",
      .description = "exp(z_j - lse), lse = a + log(sum exp(z - a)); log-softmax z_j - lse",
      // A fully masked row: a = -inf and z_i - a = -inf - -inf = NaN.
      .masked_policy = MaskedRowPolicy::nan,
      .ops = {{Op::softmax, softmax_contract()},
              {Op::log_softmax,
               no_contract("z_k - lse cancels for a dominant entry: lse carries an absolute "
                           "error ~u|lse| (up to u(M + ln n)) while z_k - lse can be ~1e-10, "
                           "so the relative (ULP) error is unbounded"),
               {},
               {},
               {{std::string(floor_reference),
                 "z_j - lse cancels: its absolute error ~u|lse| grows with |x| while the shifted kernel's "
                 "d_j - log s stays ~u|d_j| (quick suite, k = 2, slack 1 u: up to 44x (f32) and 60x (f64) the "
                 "error the rule allows)"}}}},
      .f32 = lse_alt_core<float>,
      .f64 = lse_alt_core<double>,
  };
}

}  // namespace softcheck::kernels
