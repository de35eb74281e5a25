// The exact attention row (attention_oracle.hpp; REFERENCE.md, "Attention
// rows"). Like oracle.cpp, every MPFR variable gets an explicit precision and
// nothing is shared between calls, so exact_attention is thread-safe.
#include "softcheck/attention_oracle.hpp"

#include "mpfr_util.hpp"

#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace softcheck::oracle {

namespace {

using detail::prepare_mpfr_thread;
using detail::raw;
using detail::real_with_bits;
using detail::Scratch;

bool all_finite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); });
}

// undefined before all_masked: a non-finite q leaves no exact value even when
// every key is masked. The K and V rows of masked keys are never read.
RowStatus attention_status(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                           std::span<const double> V, std::size_t dim) {
  const RowStatus scores = detail::classify(x);
  if (scores == RowStatus::undefined || !all_finite(q)) return RowStatus::undefined;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (x[j] != -INFINITY && (!all_finite(K.subspan(j * dim, dim)) || !all_finite(V.subspan(j * dim, dim))))
      return RowStatus::undefined;
  return scores;
}

// |v| < 2^exponent_bound(v) for a finite v != 0 (ilogb is exact for
// subnormals too).
int exponent_bound(double v) { return std::ilogb(v) + 1; }

// Working precision w = bits + 64 + E for a row with status ok, where E >= 0
// bounds the unmasked keys' terms: |y_j| < 2^E and |x_j| < 2^E for
// y_j = dot_j / (T sqrt(d)), so |z_j| < 2^(E+1). E comes from the inputs'
// exponents alone, before any MPFR work: |dot_j| <= sum_i |q_i K_ji| <
// d 2^max_i(e(q_i) + e(K_ji)) (e = exponent_bound) with d < 2^bit_width(d),
// and T sqrt(d) >= 2^ilogb(T). An overestimate only costs time.
//
// Why it suffices (standard model, |rounding| <= u |result| with u = 2^-w,
// Higham, ASNA 2nd ed., §2.2): dot_j (mpfr_sum, correctly rounded), T sqrt(d)
// (two roundings) and the division leave y_j within 4u 2^E (to first order);
// adding x_j leaves z_j within 7u 2^E = delta. Perturbing every score by at
// most delta moves lse by at most delta and each p_j by a factor within
// exp(+-2 delta) (Blanchard, Higham & Higham 2021: softmax is conditioned by
// absolute, not relative, perturbations of its arguments). The shift z_j - m
// (|.| < 2^(E+2)) adds 4u 2^E to each argument of exp; exp, the sum l and the
// division add one u each. So p_j is within 26u 2^E <= 2^-(bits+59)
// relatively, O_i within 2^-(bits+59) of s_i = sum_j p_j |V_ji|, and lse
// (log l adds u log n <= 45u) within 2^-(bits+58) absolutely -- far below
// the one final rounding to `bits`. Nothing else grows with n: l and the
// numerators of O_i and s_i are correctly rounded sums (mpfr_sum) of exact
// products e_j V_ji. Scores beyond the double range (|dot_j| up to d 2^2048,
// T down to 2^-1074) stay far inside MPFR's exponent range; exp of shifts
// below about -3e18 underflows to 0 (oracle.cpp, prepare_mpfr_thread), a
// relative weight no output can show.
mpfr_prec_t working_bits(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                         std::size_t dim, double temperature, unsigned bits, double sink) {
  const int extra = static_cast<int>(std::bit_width(dim)) - std::ilogb(temperature);
  int widest = 0;  // E
  if (std::isfinite(sink) && sink != 0) widest = exponent_bound(sink);  // a score of its own
  for (std::size_t j = 0; j < x.size(); ++j) {
    if (x[j] == -INFINITY) continue;
    if (x[j] != 0) widest = std::max(widest, exponent_bound(x[j]));
    for (std::size_t i = 0; i < dim; ++i) {
      const double k = K[j * dim + i];
      if (q[i] != 0 && k != 0) widest = std::max(widest, exponent_bound(q[i]) + exponent_bound(k) + extra);
    }
  }
  return static_cast<mpfr_prec_t>(bits) + 64 + widest;
}

ExactAttention undefined_attention(RowStatus status, unsigned bits) {
  ExactAttention a;
  a.status = status;
  a.lse = real_with_bits(bits);
  // log of an empty sum (every key masked) is -inf; +inf/NaN inputs have none.
  if (status == RowStatus::all_masked)
    mpfr_set_inf(raw(a.lse), -1);
  else
    mpfr_set_nan(raw(a.lse));
  return a;
}

std::vector<mpfr_ptr> pointers(std::vector<Real>& v) {
  std::vector<mpfr_ptr> p;
  p.reserve(v.size());
  for (Real& r : v) p.push_back(raw(r));
  return p;
}

}  // namespace

// The FlashAttention recurrence in one tile (REFERENCE.md, "FlashAttention
// tiling"), each step in w = working_bits(...) precision:
//   z_j = dot_j / (T sqrt(d)) + x_j     (dot_j: mpfr_sum of exact products)
//   m = max_j z_j,  e_j = exp(z_j - m)  (e = 1 exactly at the max)
//   l = sum_j e_j,  lse = m + log l
//   O_i = (sum_j e_j V_ji) / l,  s_i = (sum_j e_j |V_ji|) / l
// over the unmasked keys only; a sink logit s joins m's max and adds
// exp(s - m) to l (no value); every returned value is rounded once to `bits`.
ExactAttention exact_attention(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                               std::span<const double> V, std::int64_t d, double temperature, unsigned bits,
                               double resolution, double softcap, double sink) {
  if (!(resolution >= 0) || !std::isfinite(resolution))
    throw std::invalid_argument("exact_attention: resolution must be finite and >= 0");
  if (!(softcap >= 0) || !std::isfinite(softcap))
    throw std::invalid_argument("exact_attention: softcap must be finite and >= 0");
  if (std::isnan(sink) || sink == INFINITY)
    throw std::invalid_argument("exact_attention: the sink logit must be finite or -inf (none)");
  if (d < 1) throw std::invalid_argument("exact_attention: d must be >= 1");
  detail::check_arguments(x, temperature, bits, "exact_attention");
  const auto dim = static_cast<std::size_t>(d);
  const std::size_t n = x.size();
  if (q.size() != dim) throw std::invalid_argument("exact_attention: q must hold d values");
  // n x d without forming the product (no overflow).
  const auto holds_n_by_d = [&](std::span<const double> v) { return v.size() % dim == 0 && v.size() / dim == n; };
  if (!holds_n_by_d(K) || !holds_n_by_d(V))
    throw std::invalid_argument("exact_attention: K and V must hold n x d values");
  prepare_mpfr_thread();
  const bool has_sink = std::isfinite(sink);
  const RowStatus status = attention_status(x, q, K, V, dim);
  // Every key masked: with a sink the row is still a softmax, of the sink alone.
  if (status != RowStatus::ok && !(status == RowStatus::all_masked && has_sink))
    return undefined_attention(status, bits);

  const mpfr_prec_t w = working_bits(x, q, K, dim, temperature, bits, sink);
  static_assert(sizeof(unsigned long) == 8, "d must fit an unsigned long");
  Scratch root_scale(w), m(w), shift(w), l(w), log_l(w), sum(w);
  mpfr_sqrt_ui(root_scale.v, static_cast<unsigned long>(dim), MPFR_RNDN);
  mpfr_mul_d(root_scale.v, root_scale.v, temperature, MPFR_RNDN);  // T sqrt(d)

  std::vector<Real> products;  // q_i K_ji: exact in 2 x 53 bits
  products.reserve(dim);
  for (std::size_t i = 0; i < dim; ++i) products.push_back(real_with_bits(106));
  const std::vector<mpfr_ptr> product_ptr = pointers(products);

  std::vector<std::size_t> keys;  // the unmasked keys, in order
  std::vector<Real> e;            // z_j, then e_j, per unmasked key, w bits
  for (std::size_t j = 0; j < n; ++j) {
    if (x[j] == -INFINITY) continue;
    keys.push_back(j);
    for (std::size_t i = 0; i < dim; ++i) {
      mpfr_set_d(raw(products[i]), q[i], MPFR_RNDN);
      mpfr_mul_d(raw(products[i]), raw(products[i]), K[j * dim + i], MPFR_RNDN);
    }
    e.push_back(real_with_bits(w));
    Real& z = e.back();
    mpfr_sum(raw(z), product_ptr.data(), dim, MPFR_RNDN);
    mpfr_div(raw(z), raw(z), root_scale.v, MPFR_RNDN);
    if (softcap > 0) {  // c tanh(y / c): |result| <= |y| < 2^E, tanh's slope <= 1 keeps the error
      mpfr_div_d(raw(z), raw(z), softcap, MPFR_RNDN);
      mpfr_tanh(raw(z), raw(z), MPFR_RNDN);
      mpfr_mul_d(raw(z), raw(z), softcap, MPFR_RNDN);
    }
    mpfr_add_d(raw(z), raw(z), x[j], MPFR_RNDN);
  }
  // m: the largest score, or the sink (exact: w >= 53 bits).
  if (has_sink) mpfr_set_d(m.v, sink, MPFR_RNDN);
  else mpfr_set_inf(m.v, -1);
  for (const Real& z : e) mpfr_max(m.v, m.v, raw(z), MPFR_RNDN);
  for (Real& z : e) {
    mpfr_sub(shift.v, raw(z), m.v, MPFR_RNDN);
    mpfr_exp(raw(z), shift.v, MPFR_RNDN);
  }
  Real sink_term = real_with_bits(w);  // exp(s - m), in l only
  std::vector<mpfr_ptr> e_ptr = pointers(e);
  if (has_sink) {
    mpfr_sub_d(shift.v, m.v, sink, MPFR_RNDN);
    mpfr_neg(shift.v, shift.v, MPFR_RNDN);
    mpfr_exp(raw(sink_term), shift.v, MPFR_RNDN);
    e_ptr.push_back(raw(sink_term));
  }
  mpfr_sum(l.v, e_ptr.data(), e_ptr.size(), MPFR_RNDN);

  ExactAttention a;
  a.status = RowStatus::ok;
  mpfr_log(log_l.v, l.v, MPFR_RNDN);
  a.lse = real_with_bits(bits);
  mpfr_add(raw(a.lse), m.v, log_l.v, MPFR_RNDN);

  std::vector<Real> weighted;  // e_j V_ji: exact in w + 53 bits
  weighted.reserve(keys.size());
  for (std::size_t t = 0; t < keys.size(); ++t) weighted.push_back(real_with_bits(w + 53));
  const std::vector<mpfr_ptr> weighted_ptr = pointers(weighted);
  // The scale's weights: max(e_j, resolution l), i.e. p_j floored at the
  // resolution (exact: resolution is a double, l has w bits).
  Scratch floor_weight(w + 53), resolution_mass(w + 64);
  mpfr_mul_d(floor_weight.v, l.v, resolution, MPFR_RNDN);
  std::vector<Real> scale_weight;
  scale_weight.reserve(keys.size());
  for (const Real& et : e) {
    scale_weight.push_back(real_with_bits(w + 53));
    mpfr_max(raw(scale_weight.back()), raw(et), floor_weight.v, MPFR_RNDN);
  }
  // n_unmasked x resolution, added to every s_i.
  mpfr_set_d(resolution_mass.v, resolution, MPFR_RNDN);
  mpfr_mul_ui(resolution_mass.v, resolution_mass.v, static_cast<unsigned long>(keys.size()), MPFR_RNDN);
  a.output.reserve(dim);
  a.scale.reserve(dim);
  for (std::size_t i = 0; i < dim; ++i) {
    for (std::size_t t = 0; t < keys.size(); ++t)
      mpfr_mul_d(raw(weighted[t]), raw(e[t]), V[keys[t] * dim + i], MPFR_RNDN);
    mpfr_sum(sum.v, weighted_ptr.data(), weighted_ptr.size(), MPFR_RNDN);
    a.output.push_back(real_with_bits(bits));
    mpfr_div(raw(a.output.back()), sum.v, l.v, MPFR_RNDN);
    for (std::size_t t = 0; t < keys.size(); ++t) {
      mpfr_mul_d(raw(weighted[t]), raw(scale_weight[t]), V[keys[t] * dim + i], MPFR_RNDN);
      mpfr_abs(raw(weighted[t]), raw(weighted[t]), MPFR_RNDN);
    }
    mpfr_sum(sum.v, weighted_ptr.data(), weighted_ptr.size(), MPFR_RNDN);
    mpfr_div(sum.v, sum.v, l.v, MPFR_RNDN);
    a.scale.push_back(real_with_bits(bits));
    mpfr_add(raw(a.scale.back()), sum.v, resolution_mass.v, MPFR_RNDN);
  }
  return a;
}

std::span<const Real> exact_values(const ExactAttention& a, OutputKind kind) {
  if (kind == OutputKind::attention_output) return a.output;
  if (kind == OutputKind::log_sum_exp) return {&a.lse, 1};
  throw std::invalid_argument("exact_values: not an attention output");
}

}  // namespace softcheck::oracle
