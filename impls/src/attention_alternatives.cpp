// Attention with the softmax replaced, per call row one query q against the
// n keys K_j and values V_j (head dimension d) of that row, with the bias
// row x (-inf masks a key; its K and V are never read):
//
//   relu_attention (Wortsman et al. 2023, "Replacing softmax with ReLU in
//   Vision Transformers", arXiv:2309.08586: relu divided by the sequence
//   length):
//     z_j = (q . K_j) / (T sqrt(d)) + x_j   (attention's scores)
//     O   = (1/n) sum_j relu(z_j) V_j       (n the row length)
//
//   linear_attention (Katharopoulos et al. 2020, "Transformers are RNNs",
//   arXiv:2006.16236, eq. 4-6 with phi(t) = elu(t) + 1):
//     q'  = q / T                           (T = 1 is the paper)
//     a_j = (phi(q') . phi(K_j)) exp(x_j)   (the bias a log-weight)
//     O   = sum_j a_j V_j / sum_j a_j
//
// Every operation is in the element type (float for _f32, double for _f64)
// under the project's -ffp-contract=off. The contracts are derived below,
// beside the code that declares them (op.hpp gives each output's scale).
#include "attention_alternatives.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attention_row.hpp"
#include "kernel_util.hpp"
#include "softcheck/format.hpp"

namespace softcheck::kernels {
namespace {

using attention_row::dot;
using attention_row::for_each_query_output;
using attention_row::Query;
using attention_row::score_scale;

// ------------------------------------------------------------ relu attention

// O_i = (1/n) sum_j relu(z_j) V_ji with z_j = fl(fl(q . K_j) s) + x_j, the
// keys left to right; a masked key (and a key whose relu is 0) adds nothing,
// its V unread. `mean` false: the test-only kernel that forgets the 1/n.
template <class T>
void relu_row(const Query<T>& query, T s, bool mean, std::span<T> O) {
  std::fill(O.begin(), O.end(), T(0));
  for (std::size_t j = 0; j < query.keys(); ++j) {
    if (query.masked(j)) continue;
    const T r = std::max(dot(query.q, query.key(j)) * s + query.x[j], T(0));
    if (r == 0) continue;
    const std::span<const T> v = query.value(j);
    for (std::size_t i = 0; i < O.size(); ++i) O[i] += r * v[i];
  }
  if (mean) divide_by<T>(O, static_cast<T>(query.keys()));
}

// ---------------------------------------------------------- linear attention

// phi(t) = elu(t) + 1 = t + 1 for t > 0, exp(t) for t <= 0 (Katharopoulos et
// al., section 3.2.1): positive everywhere.
template <class T>
T phi(T t) {
  return t > 0 ? t + T(1) : exp_of(t);
}

// phi(q'), q' = q / fl(T) (q unchanged at T = 1), once per query.
template <class T>
void phi_of_query(std::span<const T> q, double temperature, std::span<T> out) {
  const T t = static_cast<T>(temperature);
  for (std::size_t i = 0; i < q.size(); ++i) out[i] = phi(temperature == 1.0 ? q[i] : q[i] / t);
}

// The largest unmasked bias, -inf when every key is masked.
template <class T>
T largest_bias(const Query<T>& query) {
  T m = minus_inf<T>;
  for (std::size_t j = 0; j < query.keys(); ++j)
    if (!query.masked(j)) m = std::max(m, query.x[j]);
  return m;
}

// phi(q') . phi(K_j), left to right.
template <class T>
T feature_dot(std::span<const T> phi_q, std::span<const T> k) {
  T acc = 0;
  for (std::size_t i = 0; i < k.size(); ++i) acc += phi_q[i] * phi(k[i]);
  return acc;
}

// What the quadratic kernel divides by: the weights' sum (the op), or n (the
// test-only kernel averaging the weighted values).
enum class Normaliser { weight_sum, row_length };

// The quadratic form: a_j = fl(phi(q') . phi(K_j)) exp(x_j - m) (m the
// largest unmasked bias: the weights' ratios are those of exp(x_j), and
// exp never overflows), l = sum_j a_j, w_j = a_j / l, O_i = sum_j w_j V_ji,
// each sum left to right over the keys. Policy nan: a fully masked query has
// no weights (0/0).
template <class T>
void linear_naive_row(const Query<T>& query, std::span<const T> phi_q, Normaliser by, std::span<T> w,
                      std::span<T> O) {
  const T m = largest_bias(query);
  if (m == minus_inf<T>) {
    std::fill(O.begin(), O.end(), std::numeric_limits<T>::quiet_NaN());
    return;
  }
  T l = 0;
  for (std::size_t j = 0; j < query.keys(); ++j) {
    w[j] = query.masked(j) ? T(0) : feature_dot(phi_q, query.key(j)) * exp_of(query.x[j] - m);
    l += w[j];
  }
  divide_by<T>(w, by == Normaliser::weight_sum ? l : static_cast<T>(query.keys()));
  std::fill(O.begin(), O.end(), T(0));
  for (std::size_t j = 0; j < query.keys(); ++j) {
    if (query.masked(j)) continue;
    const std::span<const T> v = query.value(j);
    for (std::size_t i = 0; i < O.size(); ++i) O[i] += w[j] * v[i];
  }
}

// The linear-time form ("Transformers are RNNs", eq. 6 and its recurrent
// form, section 3.4): by associativity
//   sum_j (phi(q')^T phi(K_j)) E_j V_j^T = phi(q')^T (sum_j E_j phi(K_j) V_j^T),
// so the keys fold into S = sum_j g_j V_j^T (d x d) and zsum = sum_j g_j,
// g_j = E_j phi(K_j), E_j = exp(x_j - m), before the query is read:
//   O_b = (sum_a phi(q')_a S_ab) / (sum_a phi(q')_a zsum_a).
// The state is what a causal model carries from token to token; here one
// query reads it, each sum left to right. Policy zeros: a fully masked query
// leaves the state empty and gets O = 0.
template <class T>
void linear_rnn_row(const Query<T>& query, std::span<const T> phi_q, std::span<T> S, std::span<T> zsum,
                    std::span<T> g, std::span<T> O) {
  const std::size_t d = query.d;
  std::fill(S.begin(), S.end(), T(0));
  std::fill(zsum.begin(), zsum.end(), T(0));
  const T m = largest_bias(query);
  if (m == minus_inf<T>) {
    std::fill(O.begin(), O.end(), T(0));
    return;
  }
  for (std::size_t j = 0; j < query.keys(); ++j) {
    if (query.masked(j)) continue;
    const T E = exp_of(query.x[j] - m);
    const std::span<const T> k = query.key(j), v = query.value(j);
    for (std::size_t a = 0; a < d; ++a) {
      g[a] = E * phi(k[a]);
      zsum[a] += g[a];
      for (std::size_t b = 0; b < d; ++b) S[a * d + b] += g[a] * v[b];
    }
  }
  T den = 0;
  for (std::size_t a = 0; a < d; ++a) den += phi_q[a] * zsum[a];
  for (std::size_t b = 0; b < d; ++b) {
    T num = 0;
    for (std::size_t a = 0; a < d; ++a) num += phi_q[a] * S[a * d + b];
    O[b] = num / den;
  }
}

// ------------------------------------------------------------------ calls

void check_call(const OpCall& c, Op op, const std::string& kernel_name) {
  if (c.op != op) throw std::invalid_argument(kernel_name + " does not provide " + std::string(name(c.op)));
  if (c.head_dim < 1) throw std::invalid_argument(kernel_name + ": " + std::string(name(op)) + " needs d >= 1");
}

template <class T>
ComputeFn relu_compute(std::string kernel_name, bool mean) {
  return [kernel_name, mean](const OpCall& c) {
    check_call(c, Op::relu_attention, kernel_name);
    const T s = score_scale<T>(c.temperature, static_cast<std::size_t>(c.head_dim));
    for_each_query_output<T>(c, [&](const Query<T>& query, std::span<T> O) { relu_row<T>(query, s, mean, O); });
  };
}

template <class T>
ComputeFn linear_naive_compute(std::string kernel_name, Normaliser by) {
  return [kernel_name, by](const OpCall& c) {
    check_call(c, Op::linear_attention, kernel_name);
    std::vector<T> phi_q(static_cast<std::size_t>(c.head_dim)), w(static_cast<std::size_t>(c.cols));
    for_each_query_output<T>(c, [&](const Query<T>& query, std::span<T> O) {
      phi_of_query<T>(query.q, c.temperature, phi_q);
      linear_naive_row<T>(query, phi_q, by, w, O);
    });
  };
}

template <class T>
ComputeFn linear_rnn_compute(std::string kernel_name) {
  return [kernel_name](const OpCall& c) {
    check_call(c, Op::linear_attention, kernel_name);
    const auto d = static_cast<std::size_t>(c.head_dim);
    std::vector<T> phi_q(d), S(d * d), zsum(d), g(d);
    for_each_query_output<T>(c, [&](const Query<T>& query, std::span<T> O) {
      phi_of_query<T>(query.q, c.temperature, phi_q);
      linear_rnn_row<T>(query, phi_q, S, zsum, g, O);
    });
  };
}

// ------------------------------------------------------------- contracts
//
// First order in u, in units of u; the declared bound is K / (1 - K u),
// Higham's gamma_K (kernel.hpp). n is the row length, h = d; the other
// figures are the op's row shape (kernel.hpp: relu_attention_row_shape,
// linear_attention_row_shape). e_exp: the exponential's relative error
// (expf 0.502 ulp, 1.004u; exp of double 0.51 ulp, 1.02u: attention.cpp's
// libm figures, REFERENCE.md "exp accuracy"). Dot products and sums:
// |fl(sum_j a_j b_j) - sum_j a_j b_j| <= gamma_n sum_j |a_j b_j| (Higham,
// Accuracy and Stability of Numerical Algorithms, eq. 3.5).
//
// relu_attention_naive. The scale is s_i = (1/n) sum_j (D_j + |x_j|) |V_ji|
// with D_j = s sum_k |q_k K_jk| (op.hpp). Key j's score z^_j =
// fl(fl(fl(q . K_j) s^) + x_j):
//   fl(q . K_j)   gamma_d sum_k |q_k K_jk|, times s:            h D_j
//   s^            fl(sqrt d), fl(T), their product, the reciprocal:
//                 4 roundings of a factor of y_j, |y_j| <= D_j    4 D_j
//   times s^      one rounding of |y_j| <= D_j                    D_j
//   plus x_j      one rounding of |z_j| <= D_j + |x_j|           D_j + |x_j|
// |z^_j - z_j| <= (h + 6)(D_j + |x_j|). relu is 1-Lipschitz (at its kink
// too), so |relu(z^_j) - relu(z_j)| is no larger, and times |V_ji| / n
// summed over j: (h + 6) s_i. The products and sum over the keys: gamma_n
// sum_j relu(z_j) |V_ji| <= n (n s_i) (relu(z_j) <= |z_j| <= D_j + |x_j|),
// n s_i after the 1/n. The division by fl(n) (n exact below 2^24 in f32,
// one rounding beyond) and its rounding: 2 |O_i| <= 2 s_i.
//   O   K = (h + 6) + n + 2 = 8 + n + h.
// No R, M or D: every key's error is relative to its own share of s_i. A
// product q_k K_jk or relu(z_j) V_ji below the normal range carries an
// absolute error up to denorm_min = u rho instead; the judge's scale adds
// rho per product and per key (attention_oracle.hpp), which covers it.
//
// linear_attention (naive and RNN form). The scale is s_i = sum_j w_j
// |V_ji|. phi(t) = t + 1 (one rounding, and t's relative error r passes as
// r t / (1 + t) < r) or exp(t) (e_exp, and t's error r |t| through exp's
// slope), so with q'_i = fl(q_i / fl(T)) (2 roundings at T != 1, none at
// T = 1) phi(q'_i) carries e_exp + (2 + 2M)[T != 1], M = max_i -q_i / T
// (the shape's M), and phi(K_ji) carries e_exp (K exact). The bias weight
// E_j = exp(fl(x_j - m)), m the largest unmasked bias (exact), carries
// R + e_exp: R the range of the unmasked biases (the shape's R).
//   naive   a_j = fl(fl(phi(q') . phi(K_j)) E_j): d products and sums of
//           positive terms, gamma_d relative (h), the product 1:
//           r = 3 e_exp + 3 + h + R + 2M[T != 1] (the 2 at T != 1 declared
//           at T = 1 too: the contract ties only M to T). l = sum a_j,
//           n - 1 additions of positive terms; w_j = a_j / l one rounding;
//           so w^_j = w_j (1 + eps_j), |eps_j| <= 2r + (n - 1) + 1 (a_j's
//           own r and l's weighted mean of them). O_i = sum_j w^_j V_ji:
//           |sum_j w_j eps_j V_ji| <= max|eps| s_i, and gamma_n: n s_i.
//     O   K = 2r + 2n = (6 e_exp + 6) + 2n + 2R + 4M[T != 1] + 2h.
//   rnn     each elementary term phi(q')_a E_j phi(K_ja) V_jb of the
//           numerator: E_j R + e_exp, phi(K_ja) e_exp, g = E phi 1, g V 1,
//           S's sum over the keys n - 1, phi(q')_a e_exp + 2 + 2M[T != 1],
//           the product with S 1, the sum over a d - 1:
//           r_num = 3 e_exp + 3 + R + n + h + 2M[T != 1];
//           the denominator's terms one product fewer: r_num - 1. All
//           terms of the denominator are positive and those of the
//           numerator are l w_j |V_jb| in absolute value, so num^ =
//           num + r_num l s_b, den^ = l (1 + r_den), and the division 1:
//           |O^_b - O_b| <= (r_num + r_den + 1) s_b (|O_b| <= s_b).
//     O   K = 2 r_num = (6 e_exp + 6) + 2n + 2R + 4M[T != 1] + 2h,
//           the naive kernel's: the associativity reorders the same
//           roundings.
// A weight whose E_j or phi products underflow carries an absolute error
// up to denorm_min: the scale's resolution rho (exact_linear_attention)
// covers a w_j below rho; the biases more than the format's cut-off below
// m are left out of R (row_shape), as for every softmax kernel
// (docs/kernels.md).

struct ExpError {
  double e_exp;
  std::string what;
};

ExpError exp_error(Format f) {
  if (f == Format::f32) return {1.004, "expf 0.502 ulp"};
  return {1.02, "exp 0.51 ulp"};
}

Contract relu_contract() {
  Contract c = declared_contract(8, 1, 0, 0, 0,
                                 "scores (h + 6)(D_j + |x_j|), relu 1-Lipschitz; relu(z) V summed gamma_n: n; "
                                 "/ n 2 (attention_alternatives.cpp)");
  c.head = 1;
  return c;
}

Contract linear_contract(Format f, const std::string& form) {
  const ExpError e = exp_error(f);
  Contract c = declared_contract(6 * e.e_exp + 6, 2, 2, 0, 4,
                                 form + ": each weight phi(q') . phi(K_j) exp(x_j - m) within 3 e_exp + 3 + h + R + "
                                        "2M[T!=1], twice through the normalisation; the sums n - 1 and n (" +
                                     e.what + "; attention_alternatives.cpp)");
  c.head = 2;
  return c;
}

// ---------------------------------------------------------------- kernels

template <class T>
std::string typed_name(const std::string& algorithm) {
  return algorithm + "_" + std::string(name(format_of<T>()));
}

Kernel alternative_kernel(std::string kernel_name, std::string algorithm, Op op, Format f, MaskedRowPolicy policy,
                          Contract contract, std::string description, ComputeFn compute) {
  Kernel k;
  k.name = std::move(kernel_name);
  k.algorithm = std::move(algorithm);
  k.format = f;
  k.ops = {OpDecl{.op = op, .contract = std::move(contract)}};
  k.masked_policy = policy;
  k.description = std::move(description);
  k.compute = std::move(compute);
  return k;
}

// The naive and RNN kernels' algorithm names: the op's name and the form.
std::string algorithm_of(Op op, const std::string& form) { return std::string(name(op)) + "_" + form; }

// Relu attention has no masked-row question (a fully masked query's O is
// exactly 0, op.hpp); zeros is the value its kernels return there.
template <class T>
Kernel relu_naive_kernel() {
  const std::string algorithm = algorithm_of(Op::relu_attention, "naive");
  return alternative_kernel(typed_name<T>(algorithm), algorithm, Op::relu_attention, format_of<T>(),
                            MaskedRowPolicy::zeros, relu_contract(),
                            "per key the score q.K_j s + x_j (s = 1/(T sqrt d) once per call), relu, relu(z_j) V_j "
                            "summed over the keys, then / n",
                            relu_compute<T>(typed_name<T>(algorithm), true));
}

template <class T>
Kernel linear_naive_kernel() {
  const std::string algorithm = algorithm_of(Op::linear_attention, "naive");
  return alternative_kernel(typed_name<T>(algorithm), algorithm, Op::linear_attention, format_of<T>(),
                            MaskedRowPolicy::nan, linear_contract(format_of<T>(), "quadratic"),
                            "the quadratic form: weights a_j = (phi(q/T) . phi(K_j)) exp(x_j - max x), their sum l, "
                            "w_j = a_j / l, then sum_j w_j V_j",
                            linear_naive_compute<T>(typed_name<T>(algorithm), Normaliser::weight_sum));
}

template <class T>
Kernel linear_rnn_kernel() {
  const std::string algorithm = algorithm_of(Op::linear_attention, "rnn");
  return alternative_kernel(typed_name<T>(algorithm), algorithm, Op::linear_attention, format_of<T>(),
                            MaskedRowPolicy::zeros, linear_contract(format_of<T>(), "RNN form"),
                            "the linear-time form: the state S = sum_j E_j phi(K_j) V_j^T and z = sum_j E_j phi(K_j) "
                            "(E_j = exp(x_j - max x)), then phi(q/T)^T S / phi(q/T)^T z",
                            linear_rnn_compute<T>(typed_name<T>(algorithm)));
}

}  // namespace

std::vector<Kernel> make_attention_alternative_kernels() {
  return {relu_naive_kernel<float>(),   relu_naive_kernel<double>(), linear_naive_kernel<float>(),
          linear_naive_kernel<double>(), linear_rnn_kernel<float>(),  linear_rnn_kernel<double>()};
}

std::vector<Kernel> make_attention_alternative_mutants() {
  const std::string relu = algorithm_of(Op::relu_attention, "no_mean");
  Kernel no_mean = alternative_kernel(
      typed_name<float>(relu), relu, Op::relu_attention, Format::f32, MaskedRowPolicy::zeros, relu_contract(),
      "relu attention without the 1/n: sum_j relu(z_j) V_j (test only: claims relu_attention_naive_f32's contract)",
      relu_compute<float>(typed_name<float>(relu), false));
  no_mean.test_only = true;
  const std::string mean = algorithm_of(Op::linear_attention, "mean");
  Kernel by_n = alternative_kernel(
      typed_name<float>(mean), mean, Op::linear_attention, Format::f32, MaskedRowPolicy::nan,
      linear_contract(Format::f32, "quadratic"),
      "linear attention dividing the weighted values by n instead of the weights' sum (test only: claims "
      "linear_attention_naive_f32's contract)",
      linear_naive_compute<float>(typed_name<float>(mean), Normaliser::row_length));
  by_n.test_only = true;
  return {std::move(no_mean), std::move(by_n)};
}

}  // namespace softcheck::kernels
