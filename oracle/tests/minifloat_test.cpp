// The small OCP formats (core/include/softcheck/minifloat.hpp): every bit
// pattern decoded, and the storage layer's encode against the oracle's MPFR
// rounding (minifloat_oracle.hpp) on every input that decides a rounding:
// every f16 and bf16 value, every midpoint between neighbouring values of
// the format and the doubles next to it, the overflow threshold and the
// specials, in both overflow modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "softcheck/minifloat_oracle.hpp"
#include "softcheck/storage.hpp"

namespace softcheck {
namespace {

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);  // -0 is not +0
}

TEST(MiniFloat, KnownValues) {
  EXPECT_EQ(max_finite(fp8_e4m3), 448.0);
  EXPECT_EQ(min_subnormal(fp8_e4m3), std::ldexp(1.0, -9));
  EXPECT_EQ(max_finite(fp8_e5m2), 57344.0);
  EXPECT_EQ(min_subnormal(fp8_e5m2), std::ldexp(1.0, -16));
  EXPECT_EQ(max_finite(fp6_e2m3), 7.5);
  EXPECT_EQ(min_subnormal(fp6_e2m3), 0.125);
  EXPECT_EQ(max_finite(fp6_e3m2), 28.0);
  EXPECT_EQ(min_subnormal(fp6_e3m2), 0.0625);
  EXPECT_EQ(max_finite(fp4_e2m1), 6.0);
  EXPECT_EQ(min_subnormal(fp4_e2m1), 0.5);
  // E4M3: 0x7F / 0xFF the only NaNs, 0x7E = 448, no inf; E5M2: 0x7C = inf.
  EXPECT_TRUE(std::isnan(decode(fp8_e4m3, 0x7F)));
  EXPECT_TRUE(std::isnan(decode(fp8_e4m3, 0xFF)));
  EXPECT_EQ(decode(fp8_e4m3, 0x7E), 448.0);
  EXPECT_EQ(decode(fp8_e4m3, 0x78), 256.0);  // top exponent, finite
  EXPECT_EQ(decode(fp8_e5m2, 0x7C), INFINITY);
  EXPECT_EQ(decode(fp8_e5m2, 0xFC), -INFINITY);
  EXPECT_EQ(decode(fp8_e4m3, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(decode(fp4_e2m1, 0x7), 6.0);
  EXPECT_EQ(decode(fp4_e2m1, 0xF), -6.0);
  EXPECT_THROW(decode(fp4_e2m1, 0x10), std::invalid_argument);
  // Overflow: E4M3 448 + 16 ties to 448 (even), above it NaN or 448; E5M2
  // 57344 + 4096 ties to 65536 (even): inf or 57344.
  EXPECT_EQ(encode(fp8_e4m3, 464, Overflow::to_special), 0x7E);
  EXPECT_EQ(encode(fp8_e4m3, std::nextafter(464.0, 1e9), Overflow::to_special), 0x7F);
  EXPECT_EQ(encode(fp8_e4m3, 1e9, Overflow::saturate), 0x7E);
  EXPECT_EQ(encode(fp8_e4m3, -INFINITY, Overflow::saturate), 0xFE);
  EXPECT_EQ(encode(fp8_e4m3, -INFINITY, Overflow::to_special), 0xFF);
  EXPECT_EQ(encode(fp8_e5m2, 61440, Overflow::to_special), 0x7C);
  EXPECT_EQ(encode(fp8_e5m2, 61440, Overflow::saturate), 0x7B);
  EXPECT_EQ(encode(fp8_e5m2, std::nextafter(61440.0, 0), Overflow::to_special), 0x7B);
  EXPECT_EQ(encode(fp4_e2m1, INFINITY, Overflow::to_special), 0x7);  // no specials: saturates
  EXPECT_THROW(encode(fp4_e2m1, NAN, Overflow::saturate), std::domain_error);
  EXPECT_EQ(encode(fp8_e4m3, -0.0, Overflow::saturate), 0x80);
}

// Every pattern: the finite ones encode back to themselves, the NaNs to the
// canonical NaN; counts of finite values as the specification has them.
TEST(MiniFloat, EveryPatternRoundTrips) {
  for (const MiniFloat& f : mini_formats) {
    unsigned finite = 0;
    for (unsigned p = 0; p < f.patterns(); ++p) {
      const auto bits = static_cast<std::uint8_t>(p);
      const double v = decode(f, bits);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(decode(f, encode(f, v, Overflow::to_special)))) << f.name << " " << p;
        continue;
      }
      finite += std::isfinite(v) ? 1 : 0;
      EXPECT_EQ(encode(f, v, Overflow::to_special), bits) << f.name << " " << p;
      if (std::isfinite(v)) {
        EXPECT_EQ(encode(f, v, Overflow::saturate), bits) << f.name << " " << p;
      }
    }
    const unsigned expected = f.specials == MiniSpecials::ieee       ? f.patterns() - 2 * (1u << f.man_bits)
                              : f.specials == MiniSpecials::nan_only ? f.patterns() - 2
                                                                     : f.patterns();
    EXPECT_EQ(finite, expected) << f.name;
  }
}

// The inputs that decide every rounding of f: its neighbours' midpoints and
// the doubles on either side, ties at and past the overflow threshold, the
// underflow to zero, and every f16 and bf16 value; both signs.
std::vector<double> deciding_inputs(const MiniFloat& f) {
  std::vector<double> values;
  for (unsigned p = 0; p < f.patterns(); ++p) {
    const double v = decode(f, static_cast<std::uint8_t>(p));
    if (std::isfinite(v) && v >= 0) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  // The next value an unbounded exponent would have: max + its quantum.
  const double max = values.back();
  values.push_back(max + (max - values[values.size() - 2]));
  std::vector<double> in;
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const double mid = (values[i] + values[i + 1]) / 2;  // exact in double
    for (double v : {values[i], mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY)}) in.push_back(v);
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {values.back(), 2 * max, 1e300, inf, min_subnormal(f) / 4, 1e-300}) in.push_back(v);
  for (unsigned p = 0; p < 65536; ++p)
    for (Format g : {Format::f16, Format::bf16}) in.push_back(decode16(static_cast<std::uint16_t>(p), g));
  const std::size_t positive = in.size();
  for (std::size_t i = 0; i < positive; ++i) in.push_back(-in[i]);
  return in;
}

TEST(MiniFloat, EncodeIsTheOraclesRoundingOnEveryDecidingInput) {
  const oracle::PrecisionScope scope(64);  // Real(v) of a double: exact
  for (const MiniFloat& f : mini_formats) {
    std::size_t checked = 0, mismatches = 0;
    for (double v : deciding_inputs(f)) {
      if (std::isnan(v) && f.specials == MiniSpecials::none) {
        EXPECT_THROW(oracle::round_to(oracle::Real(v), f, Overflow::saturate), std::domain_error);
        continue;
      }
      for (Overflow o : {Overflow::saturate, Overflow::to_special}) {
        const double exact = oracle::round_to(oracle::Real(v), f, o);
        const double got = decode(f, encode(f, v, o));
        ++checked;
        if (!same(got, exact) && mismatches++ < 10)
          ADD_FAILURE() << f.name << " " << v << (o == Overflow::saturate ? " saturate" : " to_special") << ": encode "
                        << got << ", MPFR " << exact;
      }
    }
    EXPECT_EQ(mismatches, 0u) << f.name;
    EXPECT_GT(checked, 500000u) << f.name;
  }
}

}  // namespace
}  // namespace softcheck
