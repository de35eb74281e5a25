// Row shapes and contract bounds (core/include/softcheck/kernel.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <vector>
#include <string>
#include <string_view>
#include <utility>

#include "softcheck/kernel.hpp"

namespace softcheck {

namespace {

// L_T, the "contributing" cut-off of kernel.hpp: (p - emin) ln 2 + ln 2.
// exp(-(p - emin) ln 2) = 2^(emin - p) = denorm_min/2, so the header's extra
// ln 2 keeps one binade of slack below the cut-off (f32: 151 ln 2 ~ 104.7):
// counting more entries only enlarges R and M, i.e. the bound.
double contributing_cutoff(Format f) {
  const FormatInfo fi = info(f);
  return (fi.precision - fi.emin) * std::log(2.0) + std::log(2.0);
}

std::string coefficient(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

bool temperature_fits_format(double temperature, Format f) {
  const double r = round_to_format(temperature, f);
  return std::isfinite(temperature) && temperature > 0 && r >= std::ldexp(1.0, info(f).emin) && r <= max_finite(f);
}

bool row_fits_format(std::span<const double> x, double temperature, Format f) {
  const double u = unit_roundoff(f);
  double hi = -std::numeric_limits<double>::infinity(), lo = std::numeric_limits<double>::infinity(), zmax = 0;
  for (double v : x) {
    if (!std::isfinite(v)) continue;
    const double z = v / temperature;
    hi = std::max(hi, z);
    lo = std::min(lo, z);
    zmax = std::max(zmax, std::fabs(z));
  }
  if (!(hi >= lo)) return true;                                  // no finite entry
  if (!(zmax * (1 + 4 * u) <= max_finite(f))) return false;      // z itself overflows
  const double margin = temperature == 1.0 ? 1.0 : 1 + 4 * u;
  // fl(max z - min z) is finite iff the exact shift is below max_finite plus
  // half its ulp: max_finite's last bit is odd, so the tie rounds to inf
  // (fuzz_nan_inf: x = [-2^127, 0x1.fffffep+126] in f32, shift 2^128 - 2^103,
  // entropy NaN on a row the old bound max (1 + u) let in).
  if (f == Format::f64) {  // max + half an ulp is no double: subtract as the kernel does
    const double shift = hi - lo;
    return std::isfinite(shift) && std::isfinite(shift * margin);
  }
  const double max = max_finite(f), threshold = max + std::ldexp(u, std::ilogb(max));  // exact in double
  return (hi - lo) * margin < threshold;
}

RowShape row_shape(std::span<const double> x, double temperature, Format f) {
  RowShape s;
  s.n = static_cast<double>(x.size());
  s.temperature_is_one = temperature == 1.0;

  // z_i = x_i / temperature in double: one rounding, |dz_i| <= 2^-53 |z_i|.
  double z_max = -std::numeric_limits<double>::infinity();
  for (double xi : x) {
    const double z = xi / temperature;
    if (std::isfinite(z)) z_max = std::max(z_max, z);
  }
  if (!std::isfinite(z_max)) return s;  // no finite entry: R = M = 0

  const double cutoff = contributing_cutoff(f);
  double z_min = z_max;
  double m = 0;
  for (double xi : x) {
    const double z = xi / temperature;
    if (!std::isfinite(z) || z_max - z > cutoff) continue;  // masked or not contributing
    z_min = std::min(z_min, z);
    m = std::max(m, std::abs(z));
  }

  // Keep R and M upper bounds of the exact values despite the roundings of
  // x_i / temperature and z_max - z_min in double. Each z_i is within
  // 2^-53 |z_i| of the exact one, so M grows by at most that relative amount
  // and R by 2^-53 (|z_max| + |z_min|) <= 2^-52 M absolute plus the
  // subtraction's 2^-53 R: inflating by 2^-50 (relative, plus 2^-50 M for R)
  // covers both with room to spare. Negligible against any u >= 2^-53 but it
  // keeps "bound" an upper bound rather than a rounded estimate.
  const double slack = std::ldexp(1.0, -50);
  s.M = m * (1 + slack);
  s.R = (z_max - z_min) * (1 + slack) + slack * s.M;
  return s;
}

namespace {

// One attention row's scores in double, with a bound on each one's error:
// z_j = dot_j s + x_j, s = 1 / (T sqrt(d)), dot_j = q . K_j summed in order.
// With underflow a product carries |error| <= u |q_i K_ji| + 2^emin u
// (Higham, Accuracy and Stability, eq. 2.8 and 3.5), so the mass a score's
// error is a multiple of is A_j = s sum_i (|q_i K_ji| + 2^emin(f)) with f's
// smallest normal 2^emin (>= double's: it covers this computation too). In
// double: |fl(dot_j) - dot_j| <= gamma_d sum_i (|q_i K_ji| + 2^-1022), then
// s (3 roundings), the product and the sum with x_j: err_j <= (d + 6) 2^-53
// (A_j + |x_j|) over 1 - (d + 6) 2^-53; A_j itself carries (d + 4) 2^-53
// relative (inflated below).
struct AttentionScores {
  // Per key, then the sink when one is given: score (-inf masked), its
  // error bound in double, A_j (0 for the sink: no dot product) and the
  // magnitude a kernel's own score error is a multiple of, A_j + |x_j| (|s|
  // for the sink: the one rounding of fl(s log2 e)).
  std::vector<double> z, err, mass, term;
  double unscaled_mass = 0;  // max_j sum_i |q_i K_ji| over the unmasked keys
};

AttentionScores attention_scores(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                                 std::int64_t d, double temperature, Format f, double softcap, double sink) {
  const std::size_t n = x.size(), dim = static_cast<std::size_t>(d);
  if (std::isnan(sink) || sink == std::numeric_limits<double>::infinity())
    throw std::invalid_argument("attention row: the sink logit must be finite or -inf (none)");
  if (d < 1 || q.size() != dim || K.size() != n * dim)
    throw std::invalid_argument("attention row: q must hold d values and K cols x d (d >= 1)");
  const double s = 1 / (temperature * std::sqrt(static_cast<double>(d)));
  const double rel = (static_cast<double>(d) + 6) * std::ldexp(1.0, -53);
  const double grow = (1 + rel) / (1 - rel);
  const double floor = std::ldexp(1.0, info(f).emin);  // f's smallest normal
  AttentionScores a;
  a.z.assign(n, -std::numeric_limits<double>::infinity());
  a.err.assign(n, 0);
  a.mass.assign(n, 0);
  a.term.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(x[j])) {
      a.z[j] = x[j];  // -inf masked; +inf / NaN leave the row undefined
      continue;
    }
    double dot = 0, abs_dot = 0;
    for (std::size_t i = 0; i < dim; ++i) {
      dot += q[i] * K[j * dim + i];
      abs_dot += std::fabs(q[i] * K[j * dim + i]) + floor;
    }
    a.unscaled_mass = std::max(a.unscaled_mass, abs_dot * grow);
    a.mass[j] = abs_dot * s * grow;
    const double y = dot * s;
    // The softcap c tanh(y / c) passes y's error on times sech^2 <= 1 and
    // adds its own three roundings (y / c, tanh within 2 ulp, times c) of a
    // value at most |y| <= A_j: 8 2^-53 A_j more.
    a.z[j] = (softcap > 0 ? softcap * std::tanh(y / softcap) : y) + x[j];
    a.err[j] = (rel * (a.mass[j] + std::fabs(x[j])) + (softcap > 0 ? 8 * std::ldexp(a.mass[j], -53) : 0)) * grow;
    a.term[j] = a.mass[j] + std::fabs(x[j]);
  }
  if (std::isfinite(sink)) {  // exact in double
    a.z.push_back(sink);
    a.err.push_back(0);
    a.mass.push_back(0);
    a.term.push_back(std::fabs(sink));
  }
  return a;
}

}  // namespace

std::vector<double> window_masked_bias(std::span<const double> x, const KeyWindow& w) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<double> out(x.begin(), x.end());
  const std::int64_t first = w.first(n), end = w.end(n);
  for (std::int64_t j = 0; j < n; ++j)
    if (j < first || j >= end) out[static_cast<std::size_t>(j)] = -INFINITY;
  return out;
}

RowShape attention_row_shape(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                             std::int64_t d, double temperature, Format f, double softcap, double sink) {
  const AttentionScores a = attention_scores(x, q, K, d, temperature, f, softcap, sink);
  RowShape s;
  s.n = static_cast<double>(a.z.size());  // the keys and the sink
  s.h = static_cast<double>(d);
  s.temperature_is_one = temperature == 1.0;
  // Which keys contribute is decided by the scores a kernel of format f
  // computes, not the exact ones: a key the kernel lifts to near its max
  // weighs in O however far below the exact max it is. Each kernel's score
  // error is within (h + 8) u_f (A_j + |x_j|) (docs/attention.md: the
  // kernels' derivations give (h + 6) A_j + 2 |z_j|); a key contributes
  // unless even its highest computed score sits the cut-off below the
  // lowest computed max. The others' p_j underflow, and the scale's
  // resolution (exact_attention) covers what they still carry.
  const double uf = unit_roundoff(f) * (1 + std::ldexp(1.0, -40));
  std::vector<double> reach(a.z.size(), 0);  // the double and the kernel's error of z_j
  double max_low = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < a.z.size(); ++j) {
    if (!std::isfinite(a.z[j])) continue;
    reach[j] = a.err[j] + (s.h + 8) * uf * a.term[j];
    max_low = std::max(max_low, a.z[j] - reach[j]);
  }
  if (!std::isfinite(max_low)) return s;
  const double cutoff = contributing_cutoff(f);
  double hi = -std::numeric_limits<double>::infinity(), lo = std::numeric_limits<double>::infinity(), m = 0,
         mass = 0;
  for (std::size_t j = 0; j < a.z.size(); ++j) {
    if (!std::isfinite(a.z[j]) || a.z[j] + reach[j] < max_low - cutoff) continue;
    // R and M of the exact scores: their double errors only.
    hi = std::max(hi, a.z[j] + a.err[j]);
    lo = std::min(lo, a.z[j] - a.err[j]);
    m = std::max(m, std::fabs(a.z[j]) + a.err[j]);
    mass = std::max(mass, a.mass[j]);
  }
  const double slack = std::ldexp(1.0, -50);
  s.M = m * (1 + slack);
  s.R = (hi - lo) * (1 + slack) + slack * s.M;
  s.D = mass * (1 + slack);
  return s;
}

RowShape relu_attention_row_shape(std::span<const double> x, std::int64_t d, double temperature) {
  RowShape s;
  s.n = static_cast<double>(x.size());
  s.h = static_cast<double>(d);
  s.temperature_is_one = temperature == 1.0;
  return s;
}

RowShape linear_attention_row_shape(std::span<const double> x, std::span<const double> q, std::int64_t d,
                                    double temperature, Format f) {
  if (d < 1 || q.size() != static_cast<std::size_t>(d))
    throw std::invalid_argument("linear attention row: q must hold d values (d >= 1)");
  // R: the exponents x_j - max x of the unmasked biases within the cut-off,
  // as row_shape's range of z = x at T = 1 (the temperature acts on q here).
  RowShape s = row_shape(x, 1.0, f);
  s.M = 0;
  s.h = static_cast<double>(d);
  s.temperature_is_one = temperature == 1.0;
  // q_i / T in double: one rounding, inflated as row_shape's figures.
  double m = 0;
  for (double v : q) m = std::max(m, -v / temperature);
  s.M = m * (1 + std::ldexp(1.0, -50));
  return s;
}

RowShape attention_op_row_shape(Op op, std::span<const double> x, std::span<const double> q,
                                std::span<const double> K, std::int64_t d, double temperature, Format f,
                                double softcap, double sink) {
  switch (spec(op).out[0].kind) {
    case OutputKind::relu_attention_output: return relu_attention_row_shape(x, d, temperature);
    case OutputKind::linear_attention_output: return linear_attention_row_shape(x, q, d, temperature, f);
    default: return attention_row_shape(x, q, K, d, temperature, f, softcap, sink);
  }
}

bool attention_row_fits_format(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                               std::int64_t d, double temperature, Format f, double softcap, double sink) {
  const AttentionScores a = attention_scores(x, q, K, d, temperature, f, softcap, sink);
  // Twice the largest magnitude for a kernel that folds log2(e) into the
  // scale (FlashAttention's exp2), and 4u for the roundings on the way.
  const double limit = max_finite(f) / (2 * (1 + 4 * unit_roundoff(f)));
  double hi = -std::numeric_limits<double>::infinity(), lo = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < a.z.size(); ++j) {
    if (!std::isfinite(a.z[j])) continue;
    if (!(a.term[j] <= limit)) return false;
    hi = std::max(hi, a.z[j] + a.err[j]);
    lo = std::min(lo, a.z[j] - a.err[j]);
  }
  if (!(a.unscaled_mass <= limit)) return false;
  return !(hi >= lo) || hi - lo <= limit;
}

double Contract::bound_ulps(const RowShape& s, Format f) const {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (!declared) return inf;
  const double m_coefficient = d + (s.temperature_is_one ? 0.0 : t);
  const double K = a + b * s.n + c * s.R + m_coefficient * s.M + (hd * s.h + dot) * s.D + head * s.h;
  const double u = unit_roundoff(f);
  if (!(K * u < 1)) return inf;  // also NaN K
  return K / (1 - K * u);       // Higham's gamma_K in units of u
}

std::string Contract::formula(const std::function<std::string(double, std::string_view)>& term) const {
  if (!declared) return "none";
  // The constant is written when non-zero or when it is the only term.
  std::string out =
      a != 0 || (b == 0 && c == 0 && d == 0 && t == 0 && hd == 0 && dot == 0 && head == 0) ? term(a, "") : "";
  const std::pair<double, std::string_view> terms[] = {{b, "n"},    {c, "R"},   {d, "M"},   {t, "M[T!=1]"},
                                                       {hd, "h*D"}, {dot, "D"}, {head, "h"}};
  for (const auto& [v, var] : terms)
    if (v != 0) out += (out.empty() ? "" : " + ") + term(v, var);
  return out;
}

std::string Contract::formula() const {
  return formula([](double v, std::string_view var) {
    return var.empty() ? coefficient(v) : coefficient(v) + "*" + std::string(var);
  });
}

}  // namespace softcheck
