#include "softcheck/minifloat.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace softcheck {

namespace {

// The canonical NaN: all exponent and fraction bits set (E4M3's only NaN;
// one of E5M2's).
std::uint8_t nan_pattern(const MiniFloat& f) { return static_cast<std::uint8_t>(f.sign_bit() - 1); }
// The pattern of +max_finite and of +inf (ieee only).
std::uint8_t max_pattern(const MiniFloat& f) {
  return static_cast<std::uint8_t>(f.specials == MiniSpecials::nan_only ? nan_pattern(f) - 1
                                   : f.specials == MiniSpecials::ieee
                                       ? ((((1u << f.exp_bits) - 2) << f.man_bits) | ((1u << f.man_bits) - 1))
                                       : nan_pattern(f));
}
std::uint8_t inf_pattern(const MiniFloat& f) {
  return static_cast<std::uint8_t>(((1u << f.exp_bits) - 1) << f.man_bits);
}

// |v| (finite, >= 0) to the nearest multiple of its binade's quantum, ties
// to even, the binade's exponent at least min_exponent (subnormals share its
// quantum). Exact in double: every format here has far fewer bits.
double round_magnitude(const MiniFloat& f, double a) {
  if (a == 0) return 0;
  int k = 0;
  std::frexp(a, &k);  // a = m 2^k, m in [0.5, 1): binade exponent k - 1
  const int e = std::max(k - 1, f.min_exponent());
  const double quantum = std::ldexp(1.0, e - f.man_bits);
  const double r = a / quantum;  // exact: a power-of-two division in range
  double n = std::floor(r);
  const double frac = r - n;  // exact
  if (frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) != 0)) n += 1;
  return n * quantum;
}

}  // namespace

double max_finite(const MiniFloat& f) { return decode(f, max_pattern(f)); }

double min_subnormal(const MiniFloat& f) { return std::ldexp(1.0, f.min_exponent() - f.man_bits); }

double decode(const MiniFloat& f, std::uint8_t bits) {
  if (bits >= f.patterns()) throw std::invalid_argument("decode: pattern wider than " + std::string(f.name));
  const bool negative = (bits & f.sign_bit()) != 0;
  const unsigned field = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const unsigned fraction = bits & ((1u << f.man_bits) - 1);
  const unsigned top = (1u << f.exp_bits) - 1;
  double v = 0;
  if (f.specials == MiniSpecials::ieee && field == top) {
    v = fraction == 0 ? INFINITY : NAN;
  } else if (f.specials == MiniSpecials::nan_only && field == top && fraction == (1u << f.man_bits) - 1) {
    v = NAN;
  } else if (field == 0) {
    v = std::ldexp(static_cast<double>(fraction), f.min_exponent() - f.man_bits);
  } else {
    v = std::ldexp(static_cast<double>(fraction + (1u << f.man_bits)), static_cast<int>(field) - f.bias - f.man_bits);
  }
  return negative ? -v : v;
}

std::uint8_t encode(const MiniFloat& f, double v, Overflow overflow) {
  if (std::isnan(v)) {
    if (f.specials == MiniSpecials::none)
      throw std::domain_error("encode: " + std::string(f.name) + " has no NaN");
    return nan_pattern(f);
  }
  const std::uint8_t sign = std::signbit(v) ? f.sign_bit() : 0;
  const double rounded = std::isinf(v) ? INFINITY : round_magnitude(f, std::fabs(v));
  if (rounded > max_finite(f)) {
    if (overflow == Overflow::saturate || f.specials == MiniSpecials::none) return sign | max_pattern(f);
    return f.specials == MiniSpecials::ieee ? sign | inf_pattern(f) : sign | nan_pattern(f);
  }
  if (rounded == 0) return sign;
  int k = 0;
  std::frexp(rounded, &k);
  const int e = k - 1;
  if (e < f.min_exponent())  // subnormal: field 0
    return sign | static_cast<std::uint8_t>(std::ldexp(rounded, f.man_bits - f.min_exponent()));
  const auto fraction = static_cast<unsigned>(std::ldexp(rounded, f.man_bits - e)) - (1u << f.man_bits);
  return sign | static_cast<std::uint8_t>((static_cast<unsigned>(e + f.bias) << f.man_bits) | fraction);
}

}  // namespace softcheck
