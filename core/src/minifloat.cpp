#include "softcheck/minifloat.hpp"

#include <algorithm>
#include <cfloat>
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

// ---------------------------------------------------------------------------
// E8M0

double e8m0_decode(std::uint8_t bits) {
  if (bits == e8m0_nan) return NAN;
  return std::ldexp(1.0, static_cast<int>(bits) - e8m0_bias);
}

std::uint8_t e8m0_from_exponent(int e) {
  if (e > e8m0_max_exponent) return e8m0_nan;
  return static_cast<std::uint8_t>(std::max(e, e8m0_min_exponent) + e8m0_bias);
}

namespace {

// floor(log2(a)) of a finite a > 0, exactly (frexp reads the exponent; no
// rounded log2 that could reach the next integer just below a power of two).
int floor_log2(double a) {
  int k = 0;
  std::frexp(a, &k);  // a = m 2^k, m in [1/2, 1)
  return k - 1;
}

}  // namespace

std::uint8_t e8m0_encode(double v) {
  if (!(v > 0) || std::isinf(v)) return e8m0_nan;  // NaN, zero, negative, inf
  return e8m0_from_exponent(floor_log2(v));
}

// ---------------------------------------------------------------------------
// MX blocks

namespace {

void check_mx_size(std::size_t n, const char* who) {
  if (n == 0 || n > mx_block_size)
    throw std::invalid_argument(std::string(who) + ": an MX block holds 1 to 32 elements, not " + std::to_string(n));
}

}  // namespace

MxBlock mx_quantize(std::span<const double> block, const MiniFloat& element) {
  check_mx_size(block.size(), "mx_quantize");
  MxBlock out;
  out.elements.assign(block.size(), 0);
  double amax = 0;
  for (double v : block) {
    if (!std::isfinite(v)) return out;  // scale NaN, elements 0
    amax = std::max(amax, std::fabs(v));
  }
  // An all-zero block has no power of two <= its max: it takes the smallest
  // scale, as a max below 2^(-127 + emax) does.
  const int shared = amax == 0 ? e8m0_min_exponent : floor_log2(amax) - element.max_exponent();
  out.scale = e8m0_from_exponent(shared);
  if (out.scale == e8m0_nan) return out;
  const int s = static_cast<int>(out.scale) - e8m0_bias;
  for (std::size_t i = 0; i < block.size(); ++i)
    // ldexp is exact unless V_i / X falls below double's normal range, where
    // it lies far below the element's smallest subnormal (>= 2^-17) and
    // rounds to +-0 either way.
    out.elements[i] = encode(element, std::ldexp(block[i], -s), Overflow::saturate);
  return out;
}

std::vector<double> mx_dequantize(const MxBlock& block, const MiniFloat& element) {
  check_mx_size(block.elements.size(), "mx_dequantize");
  std::vector<double> out(block.elements.size(), NAN);
  if (block.scale == e8m0_nan) {
    for (std::uint8_t p : block.elements) (void)decode(element, p);  // still reject a malformed pattern
    return out;
  }
  const int s = static_cast<int>(block.scale) - e8m0_bias;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::ldexp(decode(element, block.elements[i]), s);
  return out;
}

std::vector<double> mx_row(std::span<const double> row, const MiniFloat& element) {
  std::vector<double> out(row.begin(), row.end());
  std::vector<double> block;
  for (std::size_t start = 0; start < row.size(); start += mx_block_size) {
    const std::size_t len = std::min(mx_block_size, row.size() - start);
    block.assign(row.begin() + static_cast<std::ptrdiff_t>(start),
                 row.begin() + static_cast<std::ptrdiff_t>(start + len));
    for (double& v : block)
      if (v == -INFINITY) v = 0;
    const std::vector<double> held = mx_dequantize(mx_quantize(block, element), element);
    for (std::size_t i = 0; i < len; ++i)
      if (row[start + i] != -INFINITY) out[start + i] = held[i];
  }
  return out;
}

// ---------------------------------------------------------------------------
// NVFP4

namespace {

// RN_f(a / b), saturating, for finite a and b > 0, as one division in
// double and one rounding to f: that is the correctly rounded quotient,
// because no boundary between two roundings of f (a midpoint m of its values,
// or its saturation threshold, of at most 25 bits: f32's midpoints) lies
// between a / b and its double. The quotients here have b of at most 28 bits
// (2688 = 21 * 2^7, 6 s_t, s_t s_b), so m b has at most 31 and a - m b is a
// multiple of a's last place: a / b != m is at least ulp(a) / b > 2^-53 |a / b|
// away from m, more than the double rounding moves it. (A subnormal a gives a
// quotient far below every grid here: +-0 either way.)
std::uint8_t encode_quotient(const MiniFloat& f, double a, double b) {
  return encode(f, a / b, Overflow::saturate);
}

double max_magnitude(std::span<const double> values) {
  double amax = 0;
  for (double v : values) amax = std::max(amax, std::fabs(v));
  return amax;
}

}  // namespace

float nvfp4_tensor_scale(double amax) {
  // One correct rounding to f32 (to nearest, the default mode), for the
  // reason given at encode_quotient.
  return static_cast<float>(amax / (448.0 * 6.0));
}

Nvfp4Tensor nvfp4_quantize(std::span<const double> values) {
  for (double v : values)
    if (!(std::fabs(v) <= FLT_MAX))
      throw std::domain_error("nvfp4_quantize: values must be finite and within f32's range");
  Nvfp4Tensor out;
  out.tensor_scale = nvfp4_tensor_scale(max_magnitude(values));
  const double st = out.tensor_scale;
  out.elements.resize(values.size());
  for (std::size_t start = 0; start < values.size(); start += nvfp4_block_size) {
    const auto block = values.subspan(start, std::min(nvfp4_block_size, values.size() - start));
    // 6 s_t and s_t s_b are exact in double (at most 26 and 28 bits).
    const std::uint8_t sb_bits = st == 0 ? 0 : encode_quotient(fp8_e4m3, max_magnitude(block), 6 * st);
    out.block_scales.push_back(sb_bits);
    const double scale = st * decode(fp8_e4m3, sb_bits);
    for (std::size_t i = 0; i < block.size(); ++i)
      out.elements[start + i] = scale == 0 ? (std::signbit(block[i]) ? fp4_e2m1.sign_bit() : 0)
                                           : encode_quotient(fp4_e2m1, block[i], scale);
  }
  return out;
}

std::vector<double> nvfp4_dequantize(const Nvfp4Tensor& tensor) {
  const std::size_t n = tensor.elements.size();
  if (tensor.block_scales.size() != (n + nvfp4_block_size - 1) / nvfp4_block_size)
    throw std::invalid_argument("nvfp4_dequantize: one block scale per 16 elements expected");
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<double>(tensor.tensor_scale) * decode(fp8_e4m3, tensor.block_scales[i / nvfp4_block_size]) *
             decode(fp4_e2m1, tensor.elements[i]);
  return out;
}

}  // namespace softcheck
