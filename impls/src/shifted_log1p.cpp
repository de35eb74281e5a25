// shifted_log1p: Blanchard, Higham & Higham's recommended form (REFERENCE.md,
// "Their final form leaves the max term out of the sum"):
//   a = z_k = max_i z_i (k the first max);  s' = sum_{i != k} exp(z_i - a)
//   softmax_j     = exp(z_j - a) / (1 + s')
//   log-softmax_j = (z_j - a) - log1p(s')
// Fully masked rows follow FlashAttention (shift by 0 when the max is -inf):
// softmax 0, log-softmax -inf.
#include "shifted_log1p_core.hpp"

namespace softcheck::kernels {
namespace {

// Softmax contract: the derivation of `shifted` (its comment) applies term by
// term: 1 + s' is a recursive sum of n terms (n - 1 additions, the term e_k = 1
// exact), exp 0.502u + uR per term, division u: n + 1.004 + 2R; temperature
// 4uM. Hence 2 + 1n + 2R (+4M when T != 1).
Contract softmax_contract() {
  return declared_contract(2, 1, 2, 0, 4,
                           "as shifted: exp(z_j - a) (0.502 + R)u, 1 + s' (n - 1)u plus the "
                           "terms' errors, division u: n + 1.004 + 2R; temperature 4uM");
}

// Log-softmax contract, first order in u:
//  - s' has relative error e <= (n - 2)u (additions) + (0.502 + R)u (terms).
//  - j = k: v_k = -log1p(s'). log1p(s'(1 + e)) = log1p(s') + e s'/(1 + s') and
//    s'/(1 + s') <= log1p(s'), so the relative error is <= |e| + d_log1p with
//    glibc log1p <= 2 ulp <= 4u: <= n + 2.5 + R; the negation is exact.
//  - j != k: v_j = (z_j - a) - log1p(s') subtracts a non-positive from a
//    non-positive number, i.e. adds two same-sign magnitudes: the relative
//    error is at most the larger of the operands' (u for z_j - a,
//    n + 2.5 + R for log1p) plus u for the subtraction: <= n + 3.5 + R.
//  => K <= 5 + 1n + 1R.
//  - temperature: |dz_i| <= 2u|z_i| <= 2uM moves v_j by dz_j - sum_i g_i dz_i.
//    For j = k that is (1 - g_k)dz_k - sum_{i != k} g_i dz_i, at most
//    4uM(1 - g_k), and |v_k| = log1p(s') >= s'/(1 + s') = 1 - g_k: relative
//    <= 4uM. For j != k, g_j <= 1/2 so |v_j| >= ln 2 and the relative change
//    is <= 4uM / ln 2 < 6uM. Hence t = 6.
//  - ulp(v) > u|v|: ulps <= rel / u. Masked entries are exactly -inf.
Contract log_softmax_contract() {
  return declared_contract(5, 1, 1, 0, 6,
                           "log1p(s') has relative error <= (n - 2 + 0.502 + R)u from s' "
                           "(since s'/(1+s') <= log1p(s')) plus glibc log1p 2 ulp; for j != k "
                           "(z_j - a) - log1p(s') adds same-sign magnitudes (+u): "
                           "n + 3.5 + R; temperature: 4uM absolute on |v_k| >= 1 - g_k, "
                           "|v_j| >= ln 2 otherwise: 6uM relative");
}

}  // namespace

Family shifted_log1p_family() {
  return {
      .algorithm = "shifted_log1p",
      .description = "Blanchard-Higham-Higham: exp(z_j - a) / (1 + s') and (z_j - a) - "
                     "log1p(s'), s' = sum of the non-max terms; masked rows give 0",
      .masked_policy = MaskedRowPolicy::zeros,
      .ops = {{Op::softmax, softmax_contract()}, {Op::log_softmax, log_softmax_contract()}},
      .f32 = shifted_log1p_core<float>,
      .f64 = shifted_log1p_core<double>,
  };
}

}  // namespace softcheck::kernels
