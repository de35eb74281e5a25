// topk_softmax: softmax over the k largest entries, the others exactly 0.
// Tie rule (docs/sparse.md): every entry equal to the k-th largest value is
// kept, so the support may exceed k; deterministic and
// permutation-equivariant. -inf entries are never kept; with fewer than k
// finite entries all finite ones are kept. Then the shifted softmax of
// shifted.cpp on the kept entries:
//   v = k-th largest finite z;  a = max z;  e_i = z_i >= v ? exp(z_i - a) : 0;
//   y_i = e_i / sum e.
// Selection is made on z = fl(x / T): rounding is monotone, so the kept set is
// the exact one unless two distinct x_i / T round to the same value at the k-th
// place (then both are kept: a support mismatch, reported as such).
#include <string>

#include "sparse_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void topk_core(std::int64_t k, std::span<T> z) {
  const T a = reduce_max<T>(z);
  if (zero_if_fully_masked(z, a)) return;
  std::vector<T> s = sorted_finite_desc<T>(z);
  const T kth = s[std::min<std::size_t>(static_cast<std::size_t>(k), s.size()) - 1];
  T sum_e = 0;
  for (T& v : z) {
    v = v >= kth ? exp_of(v - a) : T(0);
    sum_e += v;
  }
  divide_by(z, sum_e);
}

// The shifted softmax's contract (shifted.cpp: n + 2.04 + 2R, temperature
// 4uM) on the kept entries: their count is <= n and their range <= R, so the
// row's n and R bound it; dropped entries are exactly 0. Holds when the kept
// set equals the oracle's (see the selection note above).
Contract topk_contract() {
  return declared_contract(3, 1, 2, 0, 4,
                           "shifted softmax on the kept entries (count <= n, range <= R): "
                           "n + 2.04 + 2R, temperature 4uM; dropped entries exactly 0");
}

}  // namespace

KernelFamily topk_softmax_family(std::int64_t k) {
  if (k < 1) throw std::invalid_argument("topk_softmax: k must be >= 1, got " + std::to_string(k));
  OpDecl decl{Op::topk_softmax, topk_contract()};
  decl.params.k = k;
  return {
      .algorithm = "topk_softmax_k" + std::to_string(k),
      .description = "softmax over the " + std::to_string(k) +
                     " largest entries (ties at the k-th value all kept), the rest 0",
      .masked_policy = MaskedRowPolicy::zeros,
      .ops = {decl},
      .f32 = [k](Op, std::span<float> z) { topk_core<float>(k, z); },
      .f64 = [k](Op, std::span<double> z) { topk_core<double>(k, z); },
  };
}

}  // namespace softcheck::kernels
