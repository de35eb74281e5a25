// Floating-point formats the harness knows: their parameters and rounding to
// them. Header-only and free of MPFR so that kernels and fuzzers use it
// cheaply (the ops are in softcheck/op.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace softcheck {

// f64 ... bf16 are the kernels' storage formats (Kernel::format). The others
// are result formats only: the values a kernel's outputs are quantised to
// (Kernel::quantised_outputs), measured in their ULPs; nothing is stored in
// them (storage.hpp refuses them).
//   e4m3         OCP FP8 E4M3 (core/minifloat.hpp: no inf, S.1111.111 the
//                only NaN, max 448): P cast to E4M3 before P.V
//   e4m3_div256  E4M3 values divided by 2^8 (max 1.75, smallest 2^-17): P
//                multiplied by 2^8 before the cast and the product divided
//                back (FlashAttention-4's pre-scale, REFERENCE.md
//                "Low-precision formats")
enum class Format { f64, f32, f16, bf16, e4m3, e4m3_div256 };

// Whether f is a result format only (no kernel stores values in it).
constexpr bool is_result_format(Format f) { return f == Format::e4m3 || f == Format::e4m3_div256; }

// IEEE-style parameters: precision p counts the implicit bit; emin is the
// exponent of the smallest normal number (2^emin); emax of the largest binade.
struct FormatInfo {
  std::string_view name;
  int precision;
  int emin;
  int emax;
  int width;  // storage bits; Herbie's "bits of error" for a NaN/inf result
  // The top binade's all-ones significand is the NaN, not a number (OCP
  // E4M3, which has no infinity): the largest finite value is one step
  // below IEEE's (2 - 2^(2-p)) * 2^emax.
  bool top_pattern_is_nan = false;
};

// Indexed by Format (checked below): a load the compiler inlines where a
// switch stayed a call (1.3 % of the quick suite, through round_to_format
// and max_finite).
inline constexpr FormatInfo format_infos[] = {
    {"f64", 53, -1022, 1023, 64},     {"f32", 24, -126, 127, 32},   {"f16", 11, -14, 15, 16},
    {"bf16", 8, -126, 127, 16},       {"e4m3", 4, -6, 8, 8, true},  {"e4m3_div256", 4, -14, 0, 8, true},
};

constexpr FormatInfo info(Format f) {
  const auto i = static_cast<std::size_t>(f);
  return i < std::size(format_infos) ? format_infos[i] : FormatInfo{"?", 0, 0, 0, 0};
}
static_assert(info(Format::f64).name == "f64" && info(Format::f32).name == "f32" && info(Format::f16).name == "f16" &&
              info(Format::bf16).name == "bf16" && info(Format::e4m3).name == "e4m3" &&
              info(Format::e4m3_div256).name == "e4m3_div256" && std::size(format_infos) == 6);

constexpr std::string_view name(Format f) { return info(f).name; }

// The format column of the tables: the storage format's name, "f32";
// "f32->e4m3" for outputs quantised to a result format; "mxfp8_e4m3->f32"
// for rows read as MX blocks (empty strings: none).
inline std::string format_label(std::string_view storage, std::string_view quantised_to,
                                std::string_view mx_inputs = {}) {
  std::string s(mx_inputs);
  if (!s.empty()) s.append("->");
  s.append(storage);
  if (!quantised_to.empty()) s.append("->").append(quantised_to);
  return s;
}

// The double of a bit pattern, and the pattern of a double (memcpy, not
// std::bit_cast: the CUDA sources include this header as C++17).
inline double double_of_bits(std::uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
inline std::uint64_t bits_of_double(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// 2^k as a double, from its bit pattern: exact, and no libm call (ldexp's
// scalbn was a few percent of the quick suite, through the 16-bit formats'
// conversions). 0 below 2^-1074, inf above 2^1023.
inline double exact_pow2(int k) {
  if (k > 1023) return std::numeric_limits<double>::infinity();
  if (k >= -1022) return double_of_bits(static_cast<std::uint64_t>(k + 1023) << 52);
  if (k >= -1074) return double_of_bits(std::uint64_t{1} << (k + 1074));  // subnormal
  return 0;
}

// A result format by name ("e4m3", "e4m3_div256").
inline std::optional<Format> parse_result_format(std::string_view s) {
  for (Format f : {Format::e4m3, Format::e4m3_div256})
    if (info(f).name == s) return f;
  return std::nullopt;
}

// The kernels' storage formats, by name (not the result formats).
inline std::optional<Format> parse_format(std::string_view s) {
  for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16})
    if (info(f).name == s) return f;
  return std::nullopt;
}

// u = 2^-p (REFERENCE.md, "Notation").
inline double unit_roundoff(Format f) { return exact_pow2(-info(f).precision); }
// Smallest positive subnormal, 2^(emin - p + 1).
inline double denorm_min(Format f) { return exact_pow2(info(f).emin - info(f).precision + 1); }
// Largest finite value, (2 - 2^(1-p)) * 2^emax (exact: f64's is DBL_MAX);
// where the top pattern is the NaN (E4M3) one step less, (2 - 2^(2-p)) *
// 2^emax = 448 (1.75 for e4m3_div256).
inline double max_finite(Format f) {
  const int drop = info(f).top_pattern_is_nan ? 2 : 1;
  return (2.0 - exact_pow2(drop - info(f).precision)) * exact_pow2(info(f).emax);
}
inline double lowest(Format f) { return -max_finite(f); }

// Round a double to the nearest value of `f` (ties to even), subnormal-aware,
// overflowing to +-inf at max_finite + ulp/2 (E4M3: from 464, OCP's
// overflow threshold; +-inf stands for its NaN or saturation there). One rounding from the double:
// scaling by a power of two is exact and nearbyint rounds once. Used to build
// inputs that are exact values of a format (the oracle rounds exact results
// with oracle::round_to instead).
//
// Inlined, with the integer rounding done by an addition (the 16-bit
// kernels round every operation through here: libm's nearbyint, which saves
// and restores the floating-point environment, was most of its cost).
[[gnu::always_inline]] inline double round_to_format(double v, Format f) {
  if (!std::isfinite(v)) return v;
  // +-0 as the sign's zero, not v: under DAZ (denormals-are-zero) a
  // subnormal v compares equal to 0 and must become 0, as every operation
  // there reads it (returned as v, a kernel's cast passed it through).
  if (v == 0) return std::copysign(0.0, v);
  if (f == Format::f64) return v;
  const FormatInfo fi = info(f);
  // v's binade from its exponent field (a subnormal double, field 0, is far
  // below every format's emin here: f64 returned above), clamped to the
  // subnormal quantum.
  const int e = std::max(static_cast<int>((bits_of_double(v) >> 52) & 0x7ff) - 1023, fi.emin);
  const int q = e - fi.precision + 1;
  // t = v / 2^q, exactly (|t| < 2^p <= 2^24, normal). nearbyint(t): adding
  // and subtracting 1.5 2^52 with t's sign rounds t to an integer once, in
  // the current rounding mode as nearbyint does (|t| < 2^51; the sum has t's
  // sign, so toward zero is toward zero for t too); a zero takes t's sign.
  const double t = v * exact_pow2(-q);
  constexpr double shift = 0x1.8p52;
  const double n = std::copysign(t >= 0 ? (t + shift) - shift : (t - shift) + shift, t);
  const double r = n * exact_pow2(q);
  if (std::fabs(r) > max_finite(f)) return std::copysign(INFINITY, v);
  return r;
}

}  // namespace softcheck
