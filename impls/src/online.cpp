// online: the one-pass normaliser of Milakov & Gimelshein 2018 (REFERENCE.md,
// "Online softmax"), then a second pass for the outputs:
//   m_0 = -inf, d_0 = 0;  m_j = max(m_{j-1}, z_j);
//   d_j = d_{j-1} exp(m_{j-1} - m_j) + exp(z_j - m_j);  y_j = exp(z_j - m_n) / d_n
#include "kernel_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void online_core(Op /*softmax only*/, std::span<T> zy) {
  OnlineNormaliser<T> s;
  for (T z : zy) s.push(z);
  // A fully masked row ends with (m, d) = (-inf, 0): exp(-inf - -inf) / 0 = NaN.
  exp_shifted(zy, s.m);
  divide_by(zy, s.d);
}

// lse = m_n + log d_n from the same one-pass state (what a tiled or
// split-KV kernel carries between passes, REFERENCE.md "FlashAttention
// tiling"). A fully masked row keeps (-inf, 0): -inf + log 0 = -inf.
// softmax_lse: the second pass writes y_j = exp(z_j - m_n) / d_n over z as
// well, so both outputs come from one (m_n, d_n).
template <class T>
T online_lse(Op op, std::span<T> z) {
  OnlineNormaliser<T> s;
  for (T v : z) s.push(v);
  if (op == Op::softmax_lse) {
    exp_shifted(z, s.m);
    divide_by(z, s.d);
  }
  return lse_from_shift(s.m, std::log(s.d), s.m == minus_inf<T>);
}

// Softmax contract, first order in u:
//  - d_n is a chain of n - 1 additions ((n - 1)u) and of rescales; each
//    rescale with m_j != m_{j-1} multiplies by fl(exp(fl(m_{j-1} - m_j))):
//    1.02u (exp: 0.51 ulp, shifted.cpp) + u|dm_j| (its argument) + u (the
//    multiply), at most n - 1 of them, and sum_j |dm_j| = m_n - (first max)
//    <= R (a rescale with dm = 0 is exp(0) = 1, exact). Each term
//    exp(z_j - m_j): (1.02 + R)u.
//    Relative error of d_n <= (n - 1)(1 + 2.02) + R + 1.02 + R.
//  - second pass exp(z_j - m_n): (1.02 + R)u; the division: u.
//  Total: 3.02n + 0.02 + 3R <= 2 + 3.02n + 3R. Temperature 4uM (t = 4) as for
//  shifted. ulp(v) > u|v|; subnormal outputs as for shifted.
//  (A rescale from a state whose terms are all non-contributing only moves
//  values far below denorm_min relative to d_n >= 1.)
Contract softmax_contract() {
  return declared_contract(2, 3.02, 3, 0, 4,
                           "d_n: n - 1 additions plus up to n - 1 rescales, each 1.02u (exp 0.51 ulp) + "
                           "u|dm| (argument) + u (multiply), sum|dm| <= R, terms (1.02 + R)u; "
                           "output exp (1.02 + R)u, division u: 3.02n + 3R + 0.02; "
                           "temperature 4uM");
}

// Lse contract, absolute error in units of u: d_n's relative error (above)
// (n - 1)3.02 + 2R + 1.02 becomes absolute through log; log's 2u log n <=
// 0.74nu; m + log d rounds by u(M + log n) <= u(M + 0.37n). Total
// 4.13n - 2 + 2R + M <= 4.13n + 2R + M; temperature 2uM (as shifted's lse).
Contract lse_contract() {
  return declared_contract(0, 4.13, 2, 1, 2,
                           "absolute, units of u: d_n relative 3.02(n - 1) + 2R + 1.02 becomes absolute "
                           "through log; log 2u log n; m + log d rounds by u(M + log n): "
                           "4.13n + 2R + M; temperature 2uM");
}

}  // namespace

KernelFamily online_family() {
  return {
      .algorithm = "online",
      .description = "Milakov-Gimelshein one-pass (max, sum) with rescaling, then "
                     "exp(z_j - m) / d",
      .masked_policy = MaskedRowPolicy::nan,
      .ops = {{Op::softmax, softmax_contract()},
              {Op::lse, lse_contract()},
              {.op = Op::softmax_lse, .contract = softmax_contract(), .further_contracts = {lse_contract()}}},
      .f32 = online_core<float>,
      .f64 = online_core<double>,
      .reduce_f32 = online_lse<float>,
      .reduce_f64 = online_lse<double>,
  };
}

}  // namespace softcheck::kernels
