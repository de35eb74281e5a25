// naive: y_j = exp(z_j) / sum_i exp(z_i), no max shift ("basic softmax" of
// Blanchard, Higham & Higham; REFERENCE.md). The baseline the report flags:
// exp overflows for z > ~88.7 in f32 (~709.8 in f64), giving inf/inf = NaN.
#include "kernel_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void naive_core(Op /*softmax; entropy's p*/, std::span<T> zy) {
  exp_each(zy);                 // e_i = exp(z_i)
  divide_by(zy, sum<T>(zy));    // y_j = e_j / sum e
}

// The textbook entropy from the naive softmax: p = exp(z) / sum exp(z),
// H = -sum p_j log p_j with 0 log 0 = 0.
template <class T>
T naive_entropy(Op, std::span<T> z) {
  naive_core(Op::softmax, z);
  T h = 0;
  for (T p : z)
    if (p != T(0)) h -= p * std::log(p);
  return h;
}

// The floor checks a NaN output breaks (kernel.hpp), all for one reason.
std::vector<OptOut> overflow_opt_outs(const std::string& reason) {
  std::vector<OptOut> out;
  for (std::string_view check : {floor_no_nonfinite, floor_range, floor_ordering, floor_reference, floor_sum_to_one,
                                 floor_shift_invariance, floor_permutation})
    out.push_back({std::string(check), reason});
  return out;
}

}  // namespace

KernelFamily naive_family() {
  return {
      .algorithm = "naive",
      .description = "exp(z_j) / sum exp(z_i) without a max shift (overflows past z ~ 88.7 in f32)",
      // A fully masked row: every exp(-inf) = 0, 0/0 = NaN.
      .masked_policy = MaskedRowPolicy::nan,
      .ops = {{Op::softmax,
               no_contract("no max shift: exp(z_i) overflows to inf for z > ln(max_finite) "
                           "(~88.7 in f32, ~709.8 in f64) and underflows to 0 for z < ~-103 "
                           "(f32), so the output is NaN or 0/0 on ordinary rows; the bound "
                           "n + 3 of Blanchard-Higham-Higham holds only without "
                           "overflow/underflow. A baseline, reported but never gated."),
               {},
               {},
               overflow_opt_outs("the unshifted exp(z) overflows past z ~ 88.7 (f32) / 709.8 (f64): the baseline "
                                 "that shows why kernels shift by the max")},
              {Op::entropy,
               no_contract("p from the naive softmax (NaN past z ~ 88.7 in f32) and -sum p log p: "
                           "each p_j's (n + 3)u relative error costs |log p_j + 1| p_j, and the sum "
                           "of n terms (n - 1)u H, an error growing like n log n u; a baseline, "
                           "reported but never gated."),
               {},
               {},
               overflow_opt_outs("p from the unshifted softmax: NaN where it overflows")}},
      .f32 = naive_core<float>,
      .f64 = naive_core<double>,
      .reduce_f32 = naive_entropy<float>,
      .reduce_f64 = naive_entropy<double>,
  };
}

}  // namespace softcheck::kernels
