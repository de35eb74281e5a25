// The core of shifted_log1p (Blanchard, Higham & Higham's recommended form,
// REFERENCE.md "Their final form leaves the max term out of the sum"), shared
// by the f32/f64 kernels (shifted_log1p.cpp) and the f16/bf16 kernels
// (lowp_shifted.cpp), which run it in f32 or with every operation rounded to
// f16. T is the arithmetic type: float, double or Rounded<F> (lowp.hpp).
#pragma once

#include "kernel_util.hpp"

namespace softcheck::kernels {

//   a = z_k = max_i z_i (k the first max);  s' = sum_{i != k} exp(z_i - a)
//   softmax_j     = exp(z_j - a) / (1 + s')
//   log-softmax_j = (z_j - a) - log1p(s')
// A fully masked row shifts by 0 (FlashAttention): softmax 0, log-softmax -inf.
template <class T>
void shifted_log1p_core(Op op, std::span<T> zy) {
  const std::size_t k = index_of_max<T>(zy);
  const T a = max_or_zero_if_masked(zy[k]);
  const T s = sum_exp_shifted_except<T>(zy, a, k);  // s' (0 for a fully masked row)
  if (op == Op::softmax) {
    exp_shifted(zy, a);             // e_k = exp(0) = 1 exactly
    divide_by(zy, T(1) + s);        // y_j = e_j / (1 + s')
  } else {
    log_softmax_shifted(zy, a, log1p_of(s));
  }
}

}  // namespace softcheck::kernels
