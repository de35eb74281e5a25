// The small element formats of the OCP 8-bit floating point and
// microscaling (MX) specifications (REFERENCE.md, "Low-precision formats"):
// FP8 E4M3 and E5M2, FP6 E2M3 and E3M2, FP4 E2M1. One sign bit, `exp_bits`
// of biased exponent, `man_bits` of fraction, subnormals at exponent field 0.
// They differ in their special values:
//   ieee      E5M2: the top exponent holds inf (fraction 0) and NaN, as in IEEE 754
//   nan_only  E4M3: no inf; S.1111.111 is the only NaN, the rest of the top
//             exponent is finite (max 448)
//   none      FP6, FP4: every pattern is a finite number
// Conversion from double rounds to nearest, ties to even, with an unbounded
// exponent above; a result beyond the largest finite value overflows, and
// the mode says to what: the largest finite value of the sign (saturate), or
// the format's special (inf for E5M2, NaN for E4M3; a format without
// specials always saturates). Infinite inputs follow the same rule; NaN
// becomes the canonical NaN (a format without NaN cannot hold it: throws).
// The oracle's MPFR rounding (oracle/include/softcheck/minifloat_oracle.hpp)
// is tested against this one exhaustively.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace softcheck {

enum class MiniSpecials : std::uint8_t { ieee, nan_only, none };

struct MiniFloat {
  std::string_view name;
  int exp_bits, man_bits, bias;
  MiniSpecials specials;

  constexpr int bits() const { return 1 + exp_bits + man_bits; }
  constexpr unsigned patterns() const { return 1u << bits(); }
  constexpr std::uint8_t sign_bit() const { return static_cast<std::uint8_t>(1u << (exp_bits + man_bits)); }
  // Unbiased exponent of the smallest normal binade, and of the largest
  // binade holding a finite value.
  constexpr int min_exponent() const { return 1 - bias; }
  constexpr int max_exponent() const {
    return ((1 << exp_bits) - (specials == MiniSpecials::ieee ? 2 : 1)) - bias;
  }
};

inline constexpr MiniFloat fp8_e4m3{"e4m3", 4, 3, 7, MiniSpecials::nan_only};
inline constexpr MiniFloat fp8_e5m2{"e5m2", 5, 2, 15, MiniSpecials::ieee};
inline constexpr MiniFloat fp6_e2m3{"e2m3", 2, 3, 1, MiniSpecials::none};
inline constexpr MiniFloat fp6_e3m2{"e3m2", 3, 2, 3, MiniSpecials::none};
inline constexpr MiniFloat fp4_e2m1{"e2m1", 2, 1, 1, MiniSpecials::none};
inline constexpr std::array<MiniFloat, 5> mini_formats = {fp8_e4m3, fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4_e2m1};

enum class Overflow : std::uint8_t { saturate, to_special };

// The largest finite value (448 for E4M3, 57344 for E5M2, 7.5, 28, 6) and
// the smallest positive one (2^(min_exponent - man_bits)).
double max_finite(const MiniFloat& f);
double min_subnormal(const MiniFloat& f);
// The value of a bit pattern (< f.patterns()), exactly; NaN for a NaN pattern.
double decode(const MiniFloat& f, std::uint8_t bits);
// v rounded to f (above); -0 keeps its sign.
std::uint8_t encode(const MiniFloat& f, double v, Overflow overflow);

}  // namespace softcheck
