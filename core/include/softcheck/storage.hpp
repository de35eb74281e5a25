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
#include <string>
#include <vector>

#include "softcheck/format.hpp"

namespace softcheck {

// Thrown where a storage format is needed and `f` is a result format only
// (format.hpp: e4m3): a switch over the storage formats ends here.
[[noreturn]] inline void throw_not_a_storage_format(Format f) {
  throw std::logic_error(std::string(name(f)) + " is a result format: no kernel stores values in it");
}

// Bit pattern of a value of a 16-bit format f (f16 or bf16). v is rounded to f
// first (ties to even, one rounding from the double), so any double is fine.
// NaN maps to the quiet NaN pattern with the sign of v. The fields come from
// the rounded value's float pattern (every f16 and bf16 value is a float),
// without libm calls: these conversions run on every element a 16-bit kernel
// or its inputs touch.
inline std::uint16_t encode16(double v, Format f) {
  if (f != Format::f16 && f != Format::bf16) throw std::invalid_argument("encode16: not a 16-bit format");
  const int mant_bits = info(f).precision - 1;
  const std::uint16_t sign = std::signbit(v) ? std::uint16_t(0x8000) : std::uint16_t(0);
  const std::uint16_t exp_all = static_cast<std::uint16_t>(((1 << (15 - mant_bits)) - 1) << mant_bits);
  if (std::isnan(v)) return static_cast<std::uint16_t>(sign | exp_all | (1u << (mant_bits - 1)));
  const double r = std::fabs(round_to_format(v, f));
  if (std::isinf(r)) return static_cast<std::uint16_t>(sign | exp_all);
  const auto b = std::bit_cast<std::uint32_t>(static_cast<float>(r));  // exact
  if (f == Format::bf16) return static_cast<std::uint16_t>(sign | (b >> 16));  // bf16 is float's upper half
  // f16: below 2^-14 a multiple of denorm_min = 2^-24 (exact integer here).
  if (r < exact_pow2(-14)) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r * exact_pow2(24)));
  const auto e = static_cast<std::uint32_t>((b >> 23) & 0xff) - 127 + 15;  // 1..30
  return static_cast<std::uint16_t>(sign | (e << 10) | ((b >> 13) & 0x3ff));
}

// Value of a 16-bit pattern of format f (exact in double).
inline double decode16(std::uint16_t bits, Format f) {
  if (f != Format::f16 && f != Format::bf16) throw std::invalid_argument("decode16: not a 16-bit format");
  const int mant_bits = info(f).precision - 1;
  const int exp_field = (bits & 0x7FFF) >> mant_bits;
  const std::uint32_t mant = bits & ((1u << mant_bits) - 1);
  const bool negative = (bits & 0x8000) != 0;
  const int exp_max = (1 << (15 - mant_bits)) - 1;
  if (exp_field == exp_max) return mant ? std::copysign(NAN, negative ? -1.0 : 1.0) : negative ? -INFINITY : INFINITY;
  if (f == Format::bf16) return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);  // float's upper half
  if (exp_field == 0) {  // f16 subnormal or zero: mant 2^-24
    const double m = static_cast<double>(mant) * exact_pow2(-24);
    return negative ? -m : m;
  }
  const std::uint32_t pattern = (negative ? 0x80000000u : 0u) |
                                (static_cast<std::uint32_t>(exp_field - 15 + 127) << 23) | (mant << 13);
  return std::bit_cast<float>(pattern);
}

inline std::size_t element_size(Format f) {
  if (is_result_format(f)) throw_not_a_storage_format(f);
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
