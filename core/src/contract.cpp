// Row shapes and contract bounds (core/include/softcheck/kernel.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
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

double Contract::bound_ulps(const RowShape& s, Format f) const {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (!declared) return inf;
  const double m_coefficient = d + (s.temperature_is_one ? 0.0 : t);
  const double K = a + b * s.n + c * s.R + m_coefficient * s.M;
  const double u = unit_roundoff(f);
  if (!(K * u < 1)) return inf;  // also NaN K
  return K / (1 - K * u);       // Higham's gamma_K in units of u
}

std::string Contract::formula(const std::function<std::string(double, std::string_view)>& term) const {
  if (!declared) return "none";
  // The constant is written when non-zero or when it is the only term.
  std::string out = a != 0 || (b == 0 && c == 0 && d == 0 && t == 0) ? term(a, "") : "";
  const std::pair<double, std::string_view> terms[] = {{b, "n"}, {c, "R"}, {d, "M"}, {t, "M[T!=1]"}};
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
