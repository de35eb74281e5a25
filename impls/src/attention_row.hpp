// One query row of an attention op (op.hpp: attention, relu_attention,
// linear_attention): its operands in the element type, the score scale and
// the dot product every attention kernel forms the same way
// (impls/src/attention.cpp, impls/src/attention_alternatives.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <span>

#include "kernel_util.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels::attention_row {

// One query's operands in the element type T: the n bias entries, q (d
// values), K and V (n x d values, key-major), and the keys its window lets
// it see, [visible_first, visible_end) (KeyWindow::first / end, relative to
// this query's key 0). A key is masked by a -inf bias or outside that range.
template <class T>
struct Query {
  std::span<const T> x, q, K, V;
  std::size_t d;
  std::size_t visible_first = 0, visible_end = static_cast<std::size_t>(-1);

  std::size_t keys() const { return x.size(); }
  bool masked(std::size_t j) const { return j < visible_first || j >= visible_end || x[j] == minus_inf<T>; }
  std::span<const T> key(std::size_t j) const { return K.subspan(j * d, d); }
  std::span<const T> value(std::size_t j) const { return V.subspan(j * d, d); }
};

// s = 1 / (T sqrt(d)) in the element type, once per call: fl(sqrt(d)), fl(T)
// and their product (both exact at T = 1), then the reciprocal.
template <class T>
T score_scale(double temperature, std::size_t d) {
  const T root = std::sqrt(static_cast<T>(d));
  return T(1) / (static_cast<T>(temperature) * root);
}

// q . k summed left to right (0 + the first product is exact):
// |fl(q . k) - q . k| <= gamma_d sum_i |q_i k_i| (Higham, Accuracy and
// Stability of Numerical Algorithms, eq. 3.5).
template <class T>
T dot(std::span<const T> q, std::span<const T> k) {
  T acc = 0;
  for (std::size_t i = 0; i < q.size(); ++i) acc += q[i] * k[i];
  return acc;
}

// O(query) for every query of a call of an op whose one output is O (relu
// and linear attention): the bias row, q, K, V and the windows in, rows x d
// values out.
template <class T, class Row>
void for_each_query_output(const OpCall& c, Row&& row) {
  const auto n = static_cast<std::size_t>(c.cols), d = static_cast<std::size_t>(c.head_dim);
  const auto* x = static_cast<const T*>(c.in[0]);
  const auto* q = static_cast<const T*>(c.in[1]);
  const auto* K = static_cast<const T*>(c.in[2]);
  const auto* V = static_cast<const T*>(c.in[3]);
  const auto* window = static_cast<const KeyWindow*>(c.in[4]);
  auto* O = static_cast<T*>(c.out[0]);
  for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r) {
    const Query<T> query{{x + r * n, n},
                         {q + r * d, d},
                         {K + r * n * d, n * d},
                         {V + r * n * d, n * d},
                         d,
                         static_cast<std::size_t>(window[r].first(c.cols)),
                         static_cast<std::size_t>(window[r].end(c.cols))};
    row(query, std::span<T>(O + r * d, d));
  }
}

}  // namespace softcheck::kernels::attention_row
