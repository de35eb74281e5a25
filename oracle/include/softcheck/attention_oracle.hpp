// The exact attention row (docs/attention.md): one query q against n keys K_j
// and values V_j of head dimension d, with an additive bias row x (-inf masks
// a key):
//   z_j = (q . K_j) / (T sqrt(d)) + x_j,   p = softmax(z),
//   O   = sum_j p_j V_j,   lse = log sum_j exp(z_j),
// computed in MPFR from the exact binary values of the inputs (the shape of
// exact_row: no shortcuts).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "softcheck/oracle.hpp"

namespace softcheck::oracle {

struct ExactAttention {
  RowStatus status = RowStatus::ok;
  std::vector<Real> output;  // O_i, d values (empty unless status ok)
  // The scaled metric's scale of O_i, s_i = sum_j p_j |V_ji| (op.hpp,
  // OutputKind::attention_output); empty unless status ok.
  std::vector<Real> scale;
  Real lse;  // -inf when every key is masked, NaN when undefined
};

// With a softcap c > 0 (OpParams::softcap; Gemma 2, Grok) the scores are
// z_j = c tanh(y_j / c) + x_j, y_j = (q . K_j) / (T sqrt(d)): the cap acts
// before the bias and the mask, so a masked key stays at -inf.
// With a sink logit s (OpParams::sink; finite, -inf for none) the
// softmax's denominator gains exp(s) and nothing else does (the sink has no
// value): p_j = exp(z_j) / (sum_k exp(z_k) + exp(s)), O = sum_j p_j V_j,
// s_i = sum_j p_j |V_ji|, lse = log(sum_k exp(z_k) + exp(s)). A query with
// every key masked then has a value, O = 0 (scale 0: exactly 0) and lse = s,
// with status ok.
// x: n bias entries; q: d values; K and V: n x d values, key-major (K[j * d + i]).
// Status: undefined when x holds +inf or NaN, or q (even with every key
// masked), or the K or V row of an unmasked key holds a non-finite value
// (the K and V of a masked key, x_j = -inf, are never read: they may hold
// anything); all_masked when every x_j is -inf; ok otherwise.
// Accuracy: computed in a working precision that grows with the exponents
// of the scores' terms (attention.cpp), then rounded once to `bits`: O_i
// within 2^-bits (1 + 2^-58) of s_i (its components can cancel; the metric
// is relative to s_i), s_i within 2^-bits (1 + 2^-58) of itself, lse within
// 2^-bits (1 + 2^-57) of max(1, |lse|), for any finite inputs. Every Real
// returned carries exactly `bits` bits. Throws std::invalid_argument for
// d < 1, an empty x, spans of the wrong length, a temperature not finite
// and > 0, bits outside [1, 2^24], or a sink of +inf or NaN. Thread-safe.
//
// `resolution` (rho >= 0): the scale becomes
//   s_i = sum_j (max(p_j, rho) |V_ji| + rho)   over the unmasked keys,
// the scaled metric's floor for what underflows in a format (as
// exact_backward's resolution; the judge passes rho = denorm_min / u of
// the kernel's format): a p_j, a rescale factor or a product p_j V_ji that
// underflows carries an absolute error up to denorm_min, which is u rho,
// not u p_j |V_ji| (REFERENCE.md; found by constructing rows whose p_j is
// subnormal and V_j near the format's max). 0 gives the exact scale.
ExactAttention exact_attention(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                               std::span<const double> V, std::int64_t d, double temperature = 1.0,
                               unsigned bits = default_bits, double resolution = 0, double softcap = 0,
                               double sink = -HUGE_VAL);

// ReLU attention (op.hpp, OutputKind::relu_attention_output; Wortsman et
// al. 2023): O_i = (1/n) sum_j relu(z_j) V_ji over the unmasked keys, n =
// x.size(), the scores z_j as exact_attention's (no softcap). lse is NaN
// (the op has none). Status: undefined as exact_attention's; a row with
// every key masked is ok with O = 0 and s = 0 (the exact value, no policy).
// The scale s_i = (1/n) sum_j ((D_j + |x_j|) |V_ji| + rho) with each key's
// score mass D_j = sum_i (|q_i K_ji| + rho) / (T sqrt(d)) and rho =
// `resolution` (0: the exact scale; the judge passes denorm_min / u of the
// kernel's format: a product q_i K_ji or relu(z_j) V_ji that underflows
// carries an absolute error up to denorm_min = u rho). Accuracy: O_i within
// 2^-bits (1 + 2^-60) of s_i, s_i within 2^-bits (1 + 2^-60) of itself,
// at a working precision of bits + 64 (attention.cpp: no exponential, each
// key's error is relative to its own mass). Throws as exact_attention.
ExactAttention exact_relu_attention(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                                    std::span<const double> V, std::int64_t d, double temperature = 1.0,
                                    unsigned bits = default_bits, double resolution = 0);

// Linear attention (op.hpp, OutputKind::linear_attention_output;
// Katharopoulos et al. 2020): q' = q / T, phi(t) = elu(t) + 1,
//   a_j = (phi(q') . phi(K_j)) exp(x_j),  w_j = a_j / sum_k a_k,
//   O_i = sum_j w_j V_ji
// over the unmasked keys. lse is NaN (the op has none). Status: undefined
// as exact_attention's, and also when an unmasked K_ji or a q_i / T lies
// below -2^60 (phi of it would leave MPFR's exponent range); all_masked
// when every x_j is -inf (0/0: the kernel's policy). The scale is
// exact_attention's with w_j for p_j: s_i = sum_j (max(w_j, rho) |V_ji| +
// rho). Accuracy: O_i within 2^-bits (1 + 2^-59) of s_i, s_i within
// 2^-bits (1 + 2^-59) of itself, at a working precision of bits + 64 + E,
// E bounding the exponents of q / T and of the biases (attention.cpp).
// Throws as exact_attention.
ExactAttention exact_linear_attention(std::span<const double> x, std::span<const double> q,
                                      std::span<const double> K, std::span<const double> V, std::int64_t d,
                                      double temperature = 1.0, unsigned bits = default_bits, double resolution = 0);

// O (any attention op's output kind, is_attention_output) or the lse
// (log_sum_exp, attention's only).
std::span<const Real> exact_values(const ExactAttention& a, OutputKind kind);

}  // namespace softcheck::oracle
