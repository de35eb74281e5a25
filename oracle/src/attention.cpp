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
#include <string>

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

// The checks every exact attention op makes (attention_oracle.hpp); d as
// a size. Prepares the thread's MPFR state.
std::size_t check_attention_arguments(std::span<const double> x, std::span<const double> q,
                                      std::span<const double> K, std::span<const double> V, std::int64_t d,
                                      double temperature, unsigned bits, double resolution, const char* who) {
  const std::string w(who);
  if (!(resolution >= 0) || !std::isfinite(resolution))
    throw std::invalid_argument(w + ": resolution must be finite and >= 0");
  if (d < 1) throw std::invalid_argument(w + ": d must be >= 1");
  detail::check_arguments(x, temperature, bits, who);
  const auto dim = static_cast<std::size_t>(d);
  const std::size_t n = x.size();
  if (q.size() != dim) throw std::invalid_argument(w + ": q must hold d values");
  // n x d without forming the product (no overflow).
  const auto holds_n_by_d = [&](std::span<const double> v) { return v.size() % dim == 0 && v.size() / dim == n; };
  if (!holds_n_by_d(K) || !holds_n_by_d(V)) throw std::invalid_argument(w + ": K and V must hold n x d values");
  prepare_mpfr_thread();
  return dim;
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

// O_i = (sum_t e_t V_(keys_t) i) / l and its scale s_i = (sum_t max(e_t,
// rho l) |V_(keys_t) i|) / l + |keys| rho for positive weights e_t (w bits)
// of the unmasked keys `keys`, their sum l and the resolution rho: the
// weights' normalisation shared by softmax attention (e_j = exp(z_j - m))
// and linear attention (e_j = a_j). Each product is exact (w + 53 bits),
// each sum correctly rounded (mpfr_sum), the division one rounding: O_i
// within 2u_w s_i of the exact value for the weights given, s_i within 3u_w
// of itself; both rounded once more to `bits`.
void weighted_values(const std::vector<std::size_t>& keys, const std::vector<Real>& e, mpfr_srcptr l,
                     std::span<const double> V, std::size_t dim, mpfr_prec_t w, unsigned bits, double resolution,
                     ExactAttention& a) {
  Scratch sum(w);
  std::vector<Real> weighted;  // e_j V_ji: exact in w + 53 bits
  weighted.reserve(keys.size());
  for (std::size_t t = 0; t < keys.size(); ++t) weighted.push_back(real_with_bits(w + 53));
  const std::vector<mpfr_ptr> weighted_ptr = pointers(weighted);
  // The scale's weights: max(e_j, resolution l), i.e. p_j floored at the
  // resolution (exact: resolution is a double, l has w bits).
  Scratch floor_weight(w + 53), resolution_mass(w + 64);
  mpfr_mul_d(floor_weight.v, l, resolution, MPFR_RNDN);
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
    mpfr_div(raw(a.output.back()), sum.v, l, MPFR_RNDN);
    for (std::size_t t = 0; t < keys.size(); ++t) {
      mpfr_mul_d(raw(weighted[t]), raw(scale_weight[t]), V[keys[t] * dim + i], MPFR_RNDN);
      mpfr_abs(raw(weighted[t]), raw(weighted[t]), MPFR_RNDN);
    }
    mpfr_sum(sum.v, weighted_ptr.data(), weighted_ptr.size(), MPFR_RNDN);
    mpfr_div(sum.v, sum.v, l, MPFR_RNDN);
    a.scale.push_back(real_with_bits(bits));
    mpfr_add(raw(a.scale.back()), sum.v, resolution_mass.v, MPFR_RNDN);
  }
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
  if (!(softcap >= 0) || !std::isfinite(softcap))
    throw std::invalid_argument("exact_attention: softcap must be finite and >= 0");
  if (std::isnan(sink) || sink == INFINITY)
    throw std::invalid_argument("exact_attention: the sink logit must be finite or -inf (none)");
  const std::size_t dim = check_attention_arguments(x, q, K, V, d, temperature, bits, resolution, "exact_attention");
  const std::size_t n = x.size();
  const bool has_sink = std::isfinite(sink);
  const RowStatus status = attention_status(x, q, K, V, dim);
  // Every key masked: with a sink the row is still a softmax, of the sink alone.
  if (status != RowStatus::ok && !(status == RowStatus::all_masked && has_sink))
    return undefined_attention(status, bits);

  const mpfr_prec_t w = working_bits(x, q, K, dim, temperature, bits, sink);
  static_assert(sizeof(unsigned long) == 8, "d must fit an unsigned long");
  Scratch root_scale(w), m(w), shift(w), l(w), log_l(w);
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

  weighted_values(keys, e, l.v, V, dim, w, bits, resolution, a);
  return a;
}

// ReLU attention (attention_oracle.hpp). At w = bits + 64 bits, per
// unmasked key:
//   dot_j  mpfr_sum of the exact products q_i K_ji: u_w |dot_j|
//   y_j    dot_j / fl(fl(sqrt d) T): three roundings, 4 u_w |y_j| in all
//   z_j    y_j + x_j: u_w |z_j|
// so |z^_j - z_j| <= 6 u_w (D_j + |x_j|) (to first order; D_j the key's
// score mass, |y_j| <= D_j), and relu, 1-Lipschitz, passes it on as it is,
// at its kink too. relu(z_j) V_ji is exact in w + 53 bits, the sum over the
// keys correctly rounded (u_w |N_i| <= u_w n s_i) and the division by n one
// rounding: O_i within 8 u_w s_i = 2^-(bits+61) s_i of the exact value. No
// exponential is taken, so unlike softmax attention no error scales with
// the largest score: each key's error is relative to its own mass, and
// bits + 64 suffices for any finite inputs (scores up to d 2^2048 / T stay
// inside MPFR's exponent range). The scale: D_j (sum_i |q_i K_ji| + d rho)
// / (T sqrt d), the same roundings, relative.
ExactAttention exact_relu_attention(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                                    std::span<const double> V, std::int64_t d, double temperature, unsigned bits,
                                    double resolution) {
  const std::size_t dim =
      check_attention_arguments(x, q, K, V, d, temperature, bits, resolution, "exact_relu_attention");
  const std::size_t n = x.size();
  const RowStatus status = attention_status(x, q, K, V, dim);
  if (status == RowStatus::undefined) return undefined_attention(status, bits);
  // Every key masked: O = (1/n) times an empty sum, exactly 0, and so is
  // its scale (no policy question: relu(-inf) = 0).
  ExactAttention a;
  a.status = RowStatus::ok;
  a.lse = real_with_bits(bits);
  mpfr_set_nan(raw(a.lse));  // relu attention has no lse

  const mpfr_prec_t w = static_cast<mpfr_prec_t>(bits) + 64;
  Scratch root_scale(w), sum(w), floor_mass(w);
  mpfr_sqrt_ui(root_scale.v, static_cast<unsigned long>(dim), MPFR_RNDN);
  mpfr_mul_d(root_scale.v, root_scale.v, temperature, MPFR_RNDN);  // T sqrt(d)
  mpfr_set_d(floor_mass.v, resolution, MPFR_RNDN);
  mpfr_mul_ui(floor_mass.v, floor_mass.v, static_cast<unsigned long>(dim), MPFR_RNDN);  // d rho

  std::vector<Real> products;  // q_i K_ji (exact in 2 x 53 bits), then |q_i K_ji|
  products.reserve(dim);
  for (std::size_t i = 0; i < dim; ++i) products.push_back(real_with_bits(106));
  const std::vector<mpfr_ptr> product_ptr = pointers(products);

  std::vector<std::size_t> keys;  // the unmasked keys, in order
  std::vector<Real> r, mass;      // relu(z_j) and D_j + |x_j| per unmasked key, w bits
  for (std::size_t j = 0; j < n; ++j) {
    if (x[j] == -INFINITY) continue;
    keys.push_back(j);
    for (std::size_t i = 0; i < dim; ++i) {
      mpfr_set_d(raw(products[i]), q[i], MPFR_RNDN);
      mpfr_mul_d(raw(products[i]), raw(products[i]), K[j * dim + i], MPFR_RNDN);
    }
    r.push_back(real_with_bits(w));
    mpfr_sum(raw(r.back()), product_ptr.data(), dim, MPFR_RNDN);
    mpfr_div(raw(r.back()), raw(r.back()), root_scale.v, MPFR_RNDN);
    mpfr_add_d(raw(r.back()), raw(r.back()), x[j], MPFR_RNDN);
    if (mpfr_sgn(raw(r.back())) < 0) mpfr_set_zero(raw(r.back()), 1);  // relu
    for (Real& p : products) mpfr_abs(raw(p), raw(p), MPFR_RNDN);
    mass.push_back(real_with_bits(w));
    mpfr_sum(raw(mass.back()), product_ptr.data(), dim, MPFR_RNDN);
    mpfr_add(raw(mass.back()), raw(mass.back()), floor_mass.v, MPFR_RNDN);
    mpfr_div(raw(mass.back()), raw(mass.back()), root_scale.v, MPFR_RNDN);
    mpfr_add_d(raw(mass.back()), raw(mass.back()), std::fabs(x[j]), MPFR_RNDN);
  }

  std::vector<Real> weighted;  // relu(z_j) V_ji or (D_j + |x_j|) |V_ji|: exact in w + 53 bits
  weighted.reserve(keys.size() + 1);
  for (std::size_t t = 0; t <= keys.size(); ++t) weighted.push_back(real_with_bits(w + 53));
  // The last term of the scale's sum: |keys| rho, the products' underflow floor.
  mpfr_set_d(raw(weighted.back()), resolution, MPFR_RNDN);
  mpfr_mul_ui(raw(weighted.back()), raw(weighted.back()), static_cast<unsigned long>(keys.size()), MPFR_RNDN);
  const std::vector<mpfr_ptr> weighted_ptr = pointers(weighted);
  a.output.reserve(dim);
  a.scale.reserve(dim);
  for (std::size_t i = 0; i < dim; ++i) {
    for (std::size_t t = 0; t < keys.size(); ++t)
      mpfr_mul_d(raw(weighted[t]), raw(r[t]), V[keys[t] * dim + i], MPFR_RNDN);
    mpfr_sum(sum.v, weighted_ptr.data(), keys.size(), MPFR_RNDN);  // 0 for no key
    a.output.push_back(real_with_bits(bits));
    mpfr_div_ui(raw(a.output.back()), sum.v, static_cast<unsigned long>(n), MPFR_RNDN);
    for (std::size_t t = 0; t < keys.size(); ++t) {
      mpfr_mul_d(raw(weighted[t]), raw(mass[t]), std::fabs(V[keys[t] * dim + i]), MPFR_RNDN);
    }
    mpfr_sum(sum.v, weighted_ptr.data(), weighted_ptr.size(), MPFR_RNDN);
    a.scale.push_back(real_with_bits(bits));
    mpfr_div_ui(raw(a.scale.back()), sum.v, static_cast<unsigned long>(n), MPFR_RNDN);
  }
  return a;
}

namespace {

// Below this argument phi(t) = exp(t) would leave MPFR's exponent range
// (about -3.2e18) once two of them are multiplied: a row with such a
// component has no exact linear attention here.
constexpr double phi_floor = -0x1p60;

// phi(t) = elu(t) + 1: t + 1 for t > 0, exp(t) for t <= 0 (Katharopoulos
// et al. 2020, section 3.2.1), rounded once to r's precision.
void phi(mpfr_ptr r, mpfr_srcptr t) {
  if (mpfr_sgn(t) > 0)
    mpfr_add_ui(r, t, 1, MPFR_RNDN);
  else
    mpfr_exp(r, t, MPFR_RNDN);
}

}  // namespace

// Linear attention (attention_oracle.hpp). At w = bits + 64 + E bits, E >= 0
// bounding |q_i / T| < 2^E and |x_j| < 2^E over the unmasked keys (the
// exponent bounds of working_bits, from the inputs alone):
//   q'_i   q_i / T: u_w |q'_i|, through exp's slope a relative error u_w 2^E
//          of phi(q'_i) (t + 1 passes at most u_w on);
//   phi    one rounding each of phi(q'_i) and phi(K_ji) (K_ji exact);
//   a_j    the d products exact (2w bits), their sum correctly rounded:
//          all terms positive, so the sum's relative error is u_w;
//   E_j    exp(x_j - m), m the largest unmasked bias (exact): the
//          subtraction u_w |x_j - m| < u_w 2^(E+1) through exp's slope,
//          exp's rounding u_w; a_j E_j one rounding.
// Each weight within u_w (3 2^E + 6) relatively, so (weighted_values) O_i
// within u_w (6 2^E + 14) s_i <= 2^-(bits+60) s_i, the scale within
// 2^-(bits+60) of itself: far below the final rounding to `bits`. Every
// a_j E_j > 0 and the largest bias's E_j = 1, so l > 0: no shift by the
// largest weight is needed (all weights stay inside MPFR's exponent range
// when every unmasked q'_i and K_ji is >= -2^60: phi_floor).
ExactAttention exact_linear_attention(std::span<const double> x, std::span<const double> q,
                                      std::span<const double> K, std::span<const double> V, std::int64_t d,
                                      double temperature, unsigned bits, double resolution) {
  const std::size_t dim =
      check_attention_arguments(x, q, K, V, d, temperature, bits, resolution, "exact_linear_attention");
  const std::size_t n = x.size();
  const RowStatus status = attention_status(x, q, K, V, dim);
  if (status != RowStatus::ok) {
    ExactAttention u = undefined_attention(status, bits);
    mpfr_set_nan(raw(u.lse));  // linear attention has no lse
    return u;
  }
  bool in_range = true;
  int widest = 0;  // E
  for (double v : q) {
    if (v / temperature < phi_floor) in_range = false;
    if (v != 0) widest = std::max(widest, exponent_bound(v) - std::ilogb(temperature) + 1);
  }
  double m = -INFINITY;
  for (std::size_t j = 0; j < n; ++j) {
    if (x[j] == -INFINITY) continue;
    m = std::max(m, x[j]);
    if (x[j] != 0) widest = std::max(widest, exponent_bound(x[j]));
    for (std::size_t i = 0; i < dim; ++i)
      if (K[j * dim + i] < phi_floor) in_range = false;
  }
  if (!in_range) return undefined_attention(RowStatus::undefined, bits);

  const mpfr_prec_t w = static_cast<mpfr_prec_t>(bits) + 64 + widest;
  Scratch t(w), phi_k(w), l(w), shift(w), e_shift(w);
  std::vector<Real> phi_q;
  phi_q.reserve(dim);
  for (std::size_t i = 0; i < dim; ++i) {
    mpfr_set_d(t.v, q[i], MPFR_RNDN);
    mpfr_div_d(t.v, t.v, temperature, MPFR_RNDN);
    phi_q.push_back(real_with_bits(w));
    phi(raw(phi_q.back()), t.v);
  }
  std::vector<Real> products;  // phi(q'_i) phi(K_ji): exact in 2w bits
  products.reserve(dim);
  for (std::size_t i = 0; i < dim; ++i) products.push_back(real_with_bits(2 * w));
  const std::vector<mpfr_ptr> product_ptr = pointers(products);

  std::vector<std::size_t> keys;
  std::vector<Real> e;  // a_j E_j per unmasked key
  for (std::size_t j = 0; j < n; ++j) {
    if (x[j] == -INFINITY) continue;
    keys.push_back(j);
    for (std::size_t i = 0; i < dim; ++i) {
      mpfr_set_d(t.v, K[j * dim + i], MPFR_RNDN);  // exact: w >= 53
      phi(phi_k.v, t.v);
      mpfr_mul(raw(products[i]), phi_k.v, raw(phi_q[i]), MPFR_RNDN);
    }
    e.push_back(real_with_bits(w));
    mpfr_sum(raw(e.back()), product_ptr.data(), dim, MPFR_RNDN);
    mpfr_set_d(shift.v, x[j], MPFR_RNDN);
    mpfr_sub_d(shift.v, shift.v, m, MPFR_RNDN);
    mpfr_exp(e_shift.v, shift.v, MPFR_RNDN);
    mpfr_mul(raw(e.back()), raw(e.back()), e_shift.v, MPFR_RNDN);
  }
  const std::vector<mpfr_ptr> e_ptr = pointers(e);
  mpfr_sum(l.v, e_ptr.data(), e_ptr.size(), MPFR_RNDN);

  ExactAttention a;
  a.status = RowStatus::ok;
  a.lse = real_with_bits(bits);
  mpfr_set_nan(raw(a.lse));  // linear attention has no lse
  weighted_values(keys, e, l.v, V, dim, w, bits, resolution, a);
  return a;
}

std::span<const Real> exact_values(const ExactAttention& a, OutputKind kind) {
  if (is_attention_output(kind)) return a.output;
  if (kind == OutputKind::log_sum_exp) return {&a.lse, 1};
  throw std::invalid_argument("exact_values: not an attention output");
}

}  // namespace softcheck::oracle
