// Storage of the formats: bit patterns of binary16 and bfloat16 (neither g++'s
// _Float16 nor __bf16 exists on clang 14 for x86, the fuzzers' compiler, so the
// types are plain uint16 patterns everywhere), and element buffers in a
// kernel's own format for the batched interface.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "softcheck/format.hpp"

namespace softcheck {

// Bit pattern of a value of a 16-bit format f (f16 or bf16). v is rounded to f
// first (ties to even, one rounding from the double), so any double is fine.
// NaN maps to the quiet NaN pattern with the sign of v.
inline std::uint16_t encode16(double v, Format f) {
  const FormatInfo fi = info(f);
  const int mant_bits = fi.precision - 1;
  const int bias = fi.emax;
  const std::uint16_t sign = std::signbit(v) ? std::uint16_t(0x8000) : std::uint16_t(0);
  const std::uint16_t exp_all = static_cast<std::uint16_t>(((1 << (15 - mant_bits)) - 1) << mant_bits);
  if (std::isnan(v)) return static_cast<std::uint16_t>(sign | exp_all | (1u << (mant_bits - 1)));
  const double r = std::fabs(round_to_format(v, f));
  if (std::isinf(r)) return static_cast<std::uint16_t>(sign | exp_all);
  if (r == 0) return sign;
  int e = std::ilogb(r);
  if (e < fi.emin) {  // subnormal: multiple of denorm_min, biased exponent 0
    const auto m = static_cast<std::uint16_t>(r / denorm_min(f));
    return static_cast<std::uint16_t>(sign | m);
  }
  const auto m = static_cast<std::uint16_t>(std::ldexp(r, mant_bits - e) - std::ldexp(1.0, mant_bits));
  return static_cast<std::uint16_t>(sign | ((e + bias) << mant_bits) | m);
}

// Value of a 16-bit pattern of format f (exact in double).
inline double decode16(std::uint16_t bits, Format f) {
  const FormatInfo fi = info(f);
  const int mant_bits = fi.precision - 1;
  const int bias = fi.emax;
  const int exp_field = (bits & 0x7FFF) >> mant_bits;
  const int mant = bits & ((1 << mant_bits) - 1);
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exp_max = (1 << (15 - mant_bits)) - 1;
  if (exp_field == exp_max) return mant ? std::copysign(NAN, sign) : sign * INFINITY;
  if (exp_field == 0) return sign * mant * denorm_min(f);
  return sign * std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -mant_bits), exp_field - bias);
}

inline std::size_t element_size(Format f) {
  return f == Format::f64 ? sizeof(double) : f == Format::f32 ? sizeof(float) : sizeof(std::uint16_t);
}

// One element of a buffer of f: v (already exact in f, or rounded to f on
// the way) stored at p, and the value at p (exact as a double).
inline void store_element(unsigned char* p, double v, Format f) {
  if (f == Format::f64) {
    std::memcpy(p, &v, sizeof(double));
  } else if (f == Format::f32) {
    const float w = static_cast<float>(v);
    std::memcpy(p, &w, sizeof w);
  } else {
    const std::uint16_t w = encode16(v, f);
    std::memcpy(p, &w, sizeof w);
  }
}
inline double load_element(const unsigned char* p, Format f) {
  if (f == Format::f64) {
    double v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  if (f == Format::f32) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return decode16(v, f);
}

// Values (already exact in f, or rounded to f on the way) into a buffer of f.
inline std::vector<unsigned char> pack(const std::vector<double>& x, Format f) {
  std::vector<unsigned char> b(x.size() * element_size(f));
  for (std::size_t i = 0; i < x.size(); ++i) store_element(b.data() + i * element_size(f), x[i], f);
  return b;
}

// The first `count` elements of a buffer of f, as doubles (exact).
inline std::vector<double> unpack(const std::vector<unsigned char>& b, Format f, std::size_t count) {
  if (b.size() < count * element_size(f)) throw std::logic_error("unpack: buffer too small");
  std::vector<double> y(count);
  for (std::size_t i = 0; i < count; ++i) y[i] = load_element(b.data() + i * element_size(f), f);
  return y;
}

}  // namespace softcheck
