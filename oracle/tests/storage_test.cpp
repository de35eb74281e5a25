// Exhaustive tests of the 16-bit storage formats (storage.hpp, format.hpp):
// every f16 and bf16 bit pattern decodes to its value and encodes back; the
// f32/f64 -> f16/bf16 rounding of round_to_format and encode16 agrees with the
// MPFR oracle's one-step rounding (oracle::round_to, itself tested against
// GCC's _Float16 and bit rounding in oracle_test.cpp) on every rounding
// boundary of both formats and on a large random sample; and the ULP / bits
// metrics in f16 and bf16 are consistent with the bit patterns.
//
// Expected values come from the IEEE 754 layout (sign, biased exponent,
// significand), from the oracle, or are derived by hand in the comments; none
// is computed by the code under test.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"
#include "softcheck/test_values.hpp"

namespace {

using softcheck::decode16;
using softcheck::encode16;
using softcheck::Format;
using softcheck::round_to_format;
using softcheck::oracle::Real;
using softcheck::oracle::round_to;

using softcheck::test_values::inf;

// Layout of a 16-bit format: 1 sign bit, E exponent bits, 15 - E significand
// bits (f16: 5 + 10, bias 15; bf16: 8 + 7, bias 127; IEEE 754-2008 / Google
// brain float).
struct Layout {
  int mant_bits;
  int bias;
  std::uint16_t exp_mask() const {
    return static_cast<std::uint16_t>(0x7FFF & ~((1u << mant_bits) - 1u));
  }
  std::uint16_t inf_pattern() const { return exp_mask(); }
};

Layout layout(Format f) { return f == Format::f16 ? Layout{10, 15} : Layout{7, 127}; }

std::string hex(std::uint16_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04X", static_cast<unsigned>(b));
  return buf;
}

bool is_nan_pattern(std::uint16_t b, Format f) {
  const Layout l = layout(f);
  return (b & l.exp_mask()) == l.exp_mask() && (b & ((1u << l.mant_bits) - 1u)) != 0;
}

// The value of a pattern straight from the IEEE layout, written independently
// of decode16: (-1)^s * m * 2^(e - bias - mant_bits) with the implicit bit for
// e > 0 and e = 1 for subnormals.
double value_by_layout(std::uint16_t b, Format f) {
  const Layout l = layout(f);
  const int e = (b & 0x7FFF) >> l.mant_bits;
  const int m = b & ((1 << l.mant_bits) - 1);
  const double mag = e == 0 ? std::ldexp(m, 1 - l.bias - l.mant_bits)
                            : std::ldexp(m + (1 << l.mant_bits), e - l.bias - l.mant_bits);
  return (b & 0x8000) ? -mag : mag;
}

Real exact_real(double v) { return Real(v); }  // doubles convert to MPFR exactly

// The oracle's rounding of the exact value v (a double: f32 and f64 values are exact).
double mpfr_rounding(double v, Format f) { return round_to(exact_real(v), f); }

bool same_value(double a, double b) {  // equal including the sign of zero, NaN == NaN
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

const Format kFormats[] = {Format::f16, Format::bf16};

// ---------------------------------------------------------------- patterns

TEST(Storage16, EveryPatternDecodesByTheLayoutAndRoundTrips) {
  for (Format f : kFormats) {
    int finite = 0, nans = 0;
    for (std::uint32_t p = 0; p <= 0xFFFF; ++p) {
      const auto b = static_cast<std::uint16_t>(p);
      const double v = decode16(b, f);
      SCOPED_TRACE(std::string(softcheck::name(f)) + " " + hex(b));
      if (is_nan_pattern(b, f)) {
        ++nans;
        ASSERT_TRUE(std::isnan(v));
        // Any NaN encodes to a NaN pattern of the same sign (the quiet one).
        const std::uint16_t back = encode16(v, f);
        EXPECT_TRUE(is_nan_pattern(back, f));
        EXPECT_EQ(back & 0x8000, b & 0x8000);
        continue;
      }
      if (std::isfinite(v)) ++finite;
      ASSERT_TRUE(same_value(v, value_by_layout(b, f)) || (std::isinf(v) && (b & 0x7FFF) == layout(f).inf_pattern()));
      ASSERT_EQ(encode16(v, f), b);                           // round trip, bit for bit
      ASSERT_TRUE(same_value(round_to_format(v, f), v));      // values of f are fixed points
      ASSERT_TRUE(same_value(mpfr_rounding(v, f), v));        // and so for the oracle
    }
    // f16: 2 * 31 * 1024 finite patterns, 2 * 1023 NaNs; bf16: 2 * 255 * 128, 2 * 127.
    const Layout l = layout(f);
    const int exps = (1 << (15 - l.mant_bits)) - 1, mants = 1 << l.mant_bits;
    EXPECT_EQ(finite, 2 * exps * mants);
    EXPECT_EQ(nans, 2 * (mants - 1));
  }
}

#ifdef __FLT16_MANT_DIG__
TEST(Storage16, F16DecodeMatchesGccFloat16) {
  // g++ has _Float16 on x86 (clang 14 does not: hence storage.hpp).
  for (std::uint32_t p = 0; p <= 0xFFFF; ++p) {
    const auto b = static_cast<std::uint16_t>(p);
    const double v = static_cast<double>(std::bit_cast<_Float16>(b));
    ASSERT_TRUE(same_value(decode16(b, Format::f16), v)) << hex(b);
    if (!std::isnan(v)) {
      ASSERT_EQ(encode16(v, Format::f16), b) << hex(b);
    }
  }
}
#endif

TEST(Storage16, Bf16DecodeIsTheTopHalfOfAFloat) {
  for (std::uint32_t p = 0; p <= 0xFFFF; ++p) {
    const auto b = static_cast<std::uint16_t>(p);
    const double v = static_cast<double>(std::bit_cast<float>(p << 16));
    ASSERT_TRUE(same_value(decode16(b, Format::bf16), v)) << hex(b);
  }
}

TEST(Storage16, PatternsAreOrderedLikeTheirValues) {
  // Positive finite patterns increase with their value; the metrics' ordinal
  // of a value is its pattern (Herbie's ordinal, REFERENCE.md "Error metrics
  // in use": 0 for +-0, k for the k-th subnormal, ...), negated for negatives.
  for (Format f : kFormats) {
    const std::uint16_t top = layout(f).inf_pattern();
    for (std::uint16_t b = 0; b <= top; ++b) {
      const double v = decode16(b, f);
      if (b > 0) {
        ASSERT_LT(decode16(static_cast<std::uint16_t>(b - 1), f), v) << hex(b);
      }
      ASSERT_EQ(softcheck::ordinal(v, f), static_cast<double>(b)) << hex(b);
      ASSERT_EQ(softcheck::ordinal(-v, f), -static_cast<double>(b)) << hex(b);
    }
  }
}

// ------------------------------------------------------ rounding boundaries

// f32 and f64 values around every rounding boundary of f: each midpoint between
// neighbours lo < hi (for the largest finite value, hi = 2^(emax+1), where
// values round to inf), and the f32 and f64 neighbours of the midpoint on both
// sides. Both signs. Every midpoint of f16 and bf16 is exact in f32 (12 and 9
// significant bits).
std::vector<double> boundary_values(Format f) {
  std::vector<double> out;
  const std::uint16_t top = layout(f).inf_pattern();
  for (std::uint16_t b = 0; b < top; ++b) {
    const double lo = decode16(b, f);
    const double hi = b + 1 == top ? std::ldexp(1.0, softcheck::info(f).emax + 1)
                                   : decode16(static_cast<std::uint16_t>(b + 1), f);
    const double mid = (lo + hi) / 2;  // exact in double
    const auto midf = static_cast<float>(mid);
    EXPECT_EQ(static_cast<double>(midf), mid) << "midpoint not exact in f32";
    for (double s : {1.0, -1.0}) {
      out.push_back(s * mid);
      out.push_back(s * static_cast<double>(std::nextafter(midf, INFINITY)));
      out.push_back(s * static_cast<double>(std::nextafter(midf, -INFINITY)));
      out.push_back(s * std::nextafter(mid, inf));
      out.push_back(s * std::nextafter(mid, -inf));
    }
  }
  return out;
}

// round_to_format (and encode16 / decode16) of v against MPFR's rounding.
void expect_rounds_like_mpfr(double v, Format f) {
  const double want = mpfr_rounding(v, f);
  const double got = round_to_format(v, f);
  ASSERT_TRUE(same_value(got, want)) << softcheck::name(f) << " v=" << std::hexfloat << v
                                     << " got " << got << " want " << want;
  ASSERT_TRUE(same_value(decode16(encode16(v, f), f), want))
      << softcheck::name(f) << " v=" << std::hexfloat << v;
}

TEST(Storage16, RoundingAgreesWithMpfrOnEveryBoundary) {
  for (Format f : kFormats) {
    const std::vector<double> values = boundary_values(f);
    for (double v : values) expect_rounds_like_mpfr(v, f);
    // 2 signs x 5 values per gap, one gap per finite non-negative pattern.
    const Layout l = layout(f);
    EXPECT_EQ(values.size(), 10u * l.inf_pattern());
  }
}

TEST(Storage16, MidpointsTieToTheEvenPattern) {
  // Independent of MPFR: the tie between patterns b and b + 1 goes to the even one.
  for (Format f : kFormats) {
    const std::uint16_t top = layout(f).inf_pattern();
    for (std::uint16_t b = 0; b < top; ++b) {
      const double lo = decode16(b, f);
      const double hi = b + 1 == top ? std::ldexp(1.0, softcheck::info(f).emax + 1)
                                     : decode16(static_cast<std::uint16_t>(b + 1), f);
      const auto even = static_cast<std::uint16_t>(b % 2 == 0 ? b : b + 1);
      ASSERT_EQ(encode16((lo + hi) / 2, f), even) << softcheck::name(f) << " " << hex(b);
      ASSERT_EQ(encode16(-(lo + hi) / 2, f), even | 0x8000) << softcheck::name(f) << " " << hex(b);
      ASSERT_EQ(encode16(std::nextafter((lo + hi) / 2, -inf), f), b);
      ASSERT_EQ(encode16(std::nextafter((lo + hi) / 2, inf), f), b + 1);
    }
  }
}

// A random f32 bit pattern (every class: zeros, subnormals, normals, inf, NaN).
struct Lcg {
  std::uint64_t s;
  std::uint32_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(s >> 32);
  }
};

TEST(Storage16, RandomF32ValuesRoundLikeMpfr) {
  for (Format f : kFormats) {
    Lcg rng{f == Format::f16 ? 16u : 17u};
    // 1M uniformly random f32 patterns (most lie outside f16's range: 0 or
    // inf), then 1M with exponents around f's range (from 2^-2 below the
    // smallest subnormal to 2 binades past the overflow threshold).
    const int lo_exp = softcheck::info(f).emin - softcheck::info(f).precision - 1;
    const int hi_exp = softcheck::info(f).emax + 2;
    for (int i = 0; i < 2'000'000; ++i) {
      std::uint32_t bits = rng.next();
      if (i >= 1'000'000) {
        const int e = lo_exp + static_cast<int>(rng.next() % static_cast<std::uint32_t>(hi_exp - lo_exp + 1));
        const auto biased = static_cast<std::uint32_t>(std::clamp(e + 127, 0, 254));
        bits = (bits & 0x807FFFFFu) | (biased << 23);
      }
      const double v = static_cast<double>(std::bit_cast<float>(bits));
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(round_to_format(v, f)));
        EXPECT_TRUE(is_nan_pattern(encode16(v, f), f));
        continue;
      }
      expect_rounds_like_mpfr(v, f);
    }
  }
}

// ------------------------------------------------------------ special values

TEST(Storage16, SpecialValues) {
  for (Format f : kFormats) {
    const Layout l = layout(f);
    const auto inf_p = l.inf_pattern();
    EXPECT_EQ(encode16(0.0, f), 0x0000);
    EXPECT_EQ(encode16(-0.0, f), 0x8000);
    EXPECT_EQ(encode16(inf, f), inf_p);
    EXPECT_EQ(encode16(-inf, f), inf_p | 0x8000);
    EXPECT_TRUE(is_nan_pattern(encode16(std::numeric_limits<double>::quiet_NaN(), f), f));
    EXPECT_TRUE(is_nan_pattern(encode16(-std::numeric_limits<double>::quiet_NaN(), f), f));
    EXPECT_EQ(encode16(-std::numeric_limits<double>::quiet_NaN(), f) & 0x8000, 0x8000);
    // Smallest subnormal 2^(emin - p + 1) is pattern 1; half of it ties to +-0
    // (0 is even), anything above half rounds up to it; 3/2 of it ties to 2.
    const double dm = softcheck::denorm_min(f);
    EXPECT_EQ(encode16(dm, f), 0x0001);
    EXPECT_EQ(encode16(dm / 2, f), 0x0000);
    EXPECT_EQ(encode16(-dm / 2, f), 0x8000);
    EXPECT_EQ(encode16(std::nextafter(dm / 2, 1.0), f), 0x0001);
    EXPECT_EQ(encode16(1.5 * dm, f), 0x0002);
    EXPECT_EQ(encode16(2.5 * dm, f), 0x0002);
    EXPECT_TRUE(std::signbit(round_to_format(-dm / 4, f)));
    // Largest subnormal and smallest normal 2^emin.
    const auto first_normal = static_cast<std::uint16_t>(1u << l.mant_bits);
    EXPECT_EQ(encode16(std::ldexp(1.0, softcheck::info(f).emin), f), first_normal);
    EXPECT_EQ(encode16(std::ldexp(1.0, softcheck::info(f).emin) - dm, f), first_normal - 1);
  }
  // Hand-checked patterns: 1 = 0x3C00 (f16) / 0x3F80 (bf16); -2 = 0xC000 / 0xC000;
  // 65504 = 0x7BFF (f16 max); 2^-24 = 0x0001 (f16); 2^-14 = 0x0400.
  EXPECT_EQ(encode16(1.0, Format::f16), 0x3C00);
  EXPECT_EQ(encode16(1.0, Format::bf16), 0x3F80);
  EXPECT_EQ(encode16(-2.0, Format::f16), 0xC000);
  EXPECT_EQ(encode16(-2.0, Format::bf16), 0xC000);
  EXPECT_EQ(encode16(65504.0, Format::f16), 0x7BFF);
  EXPECT_EQ(encode16(0x1p-24, Format::f16), 0x0001);
  EXPECT_EQ(encode16(0x1p-14, Format::f16), 0x0400);
  // -1e9 masks: -inf in f16 (past -65520), finite in bf16: 1e9 lies in
  // [2^29, 2^30), quantum 2^22; 1e9 / 2^22 = 238.4185... -> 238 * 2^22 = 998244352.
  EXPECT_EQ(decode16(encode16(-1e9, Format::f16), Format::f16), -inf);
  EXPECT_EQ(decode16(encode16(-1e9, Format::bf16), Format::bf16), -998244352.0);
}

TEST(Storage16, F16OverflowsAt65520) {
  // 65504 = max; the next binade's first value would be 65536, so the
  // threshold is the midpoint 65520: below it 65504, from it on inf (the tie
  // goes to the even "65536", i.e. inf, since 0x7BFF is odd).
  const Format f = Format::f16;
  EXPECT_EQ(round_to_format(65519.0, f), 65504.0);
  EXPECT_EQ(round_to_format(static_cast<double>(std::nextafter(65520.0f, 0.0f)), f), 65504.0);
  EXPECT_EQ(round_to_format(std::nextafter(65520.0, 0.0), f), 65504.0);
  EXPECT_EQ(round_to_format(65520.0, f), inf);
  EXPECT_EQ(round_to_format(-65520.0, f), -inf);
  EXPECT_EQ(round_to_format(1e5, f), inf);
  EXPECT_EQ(encode16(65520.0, f), 0x7C00);
  EXPECT_EQ(encode16(-65519.0, f), 0xFBFF);
  EXPECT_EQ(softcheck::lowest(f), -65504.0);
  // bf16: max (2 - 2^-7) 2^127, threshold (2 - 2^-8) 2^127; FLT_MAX is above it.
  EXPECT_EQ(round_to_format(static_cast<double>(std::numeric_limits<float>::max()), Format::bf16), inf);
  EXPECT_EQ(round_to_format(std::ldexp(2 - 0x1p-8, 127) * (1 - 0x1p-30), Format::bf16),
            std::ldexp(2 - 0x1p-7, 127));
}

// ------------------------------------------------------- metrics in f16/bf16

Real exact(double v) { return Real(v); }

TEST(Metrics16, HandCases) {
  using softcheck::compare_element;
  using softcheck::ElementClass;
  // f16: ulp(1) = 2^-10. r = 1 + 2^-10 against v = 1: 1 ulp, 1 ordinal apart
  // -> bits = log2(2) = 1.
  auto e = compare_element(1 + 0x1p-10, exact(1), Format::f16);
  EXPECT_EQ(e.ulp, 1);
  EXPECT_EQ(e.bits, 1);
  // r = 1 against v = 1 + 2^-12 (a quarter ulp above): 0.25 ulp, and v rounds to 1: 0 bits.
  e = compare_element(1, exact(1 + 0x1p-12), Format::f16);
  EXPECT_EQ(e.ulp, 0.25);
  EXPECT_EQ(e.bits, 0);
  // Below 1 the ulp halves: r = 1 - 2^-11 (the f16 neighbour below 1) vs v = 1:
  // ulp(1) = 2^-10, so 0.5 ulp; ordinals 1 apart: 1 bit.
  e = compare_element(1 - 0x1p-11, exact(1), Format::f16);
  EXPECT_EQ(e.ulp, 0.5);
  EXPECT_EQ(e.bits, 1);
  // Subnormal: r = 3 * 2^-24 vs v = 2^-24: 2 ulps (ulp = 2^-24), ordinals 3 and 1: log2(3).
  e = compare_element(3 * 0x1p-24, exact(0x1p-24), Format::f16);
  EXPECT_EQ(e.ulp, 2);
  EXPECT_DOUBLE_EQ(e.bits, std::log2(3.0));
  // v = 0, r = smallest subnormal: 1 ulp (ulp_T(0) = denorm_min), 1 bit.
  e = compare_element(0x1p-24, exact(0), Format::f16);
  EXPECT_EQ(e.ulp, 1);
  EXPECT_EQ(e.bits, 1);
  // bf16: ulp(1) = 2^-7: r = 1 + 2^-7 vs v = 1 is 1 ulp; r = 1 + 2^-6 is 2 ulps,
  // 2 ordinals: log2(3).
  e = compare_element(1 + 0x1p-7, exact(1), Format::bf16);
  EXPECT_EQ(e.ulp, 1);
  EXPECT_EQ(e.bits, 1);
  e = compare_element(1 + 0x1p-6, exact(1), Format::bf16);
  EXPECT_EQ(e.ulp, 2);
  EXPECT_DOUBLE_EQ(e.bits, std::log2(3.0));
  // f16 overflow: v = 65520 rounds to inf, so r = inf is the correctly rounded
  // result (class finite, 0 error) ...
  e = compare_element(inf, exact(65520), Format::f16);
  EXPECT_EQ(e.cls, ElementClass::finite);
  EXPECT_EQ(e.ulp, 0);
  // ... and r = 65504 is 16 away, the ulp past the top binade is that of max (32): 0.5 ulp;
  // ordinal(65504) = 0x7BFF, ordinal(inf) = 0x7C00: 1 bit.
  e = compare_element(65504, exact(65520), Format::f16);
  EXPECT_EQ(e.ulp, 0.5);
  EXPECT_EQ(e.bits, 1);
  // r = inf against v = 65504 (representable): a non-finite result, width 16 bits.
  e = compare_element(inf, exact(65504), Format::f16);
  EXPECT_EQ(e.cls, ElementClass::nonfinite);
  EXPECT_EQ(e.bits, 16);
  // A value that is not an f16 value is rejected.
  EXPECT_THROW(compare_element(1 + 0x1p-12, exact(1), Format::f16), std::invalid_argument);
  EXPECT_THROW(compare_element(1 + 0x1p-9, exact(1), Format::bf16), std::invalid_argument);
}

TEST(Metrics16, UlpAndBitsFollowThePatternDistance) {
  // For two values r, v of f in the same binade (same exponent field, same sign)
  // the ulp error is exactly the pattern distance |b_r - b_v|, and the bits
  // error is log2(1 + that distance) for any two values of the same sign.
  for (Format f : kFormats) {
    const Layout l = layout(f);
    Lcg rng{f == Format::f16 ? 5u : 6u};
    for (int i = 0; i < 20000; ++i) {
      const auto bv = static_cast<std::uint16_t>(rng.next() % l.inf_pattern());
      const int d = static_cast<int>(rng.next() % 64) - 32;
      const int br_i = std::clamp(static_cast<int>(bv) + d, 0, l.inf_pattern() - 1);
      const auto br = static_cast<std::uint16_t>(br_i);
      const std::uint16_t sign = (rng.next() & 1) ? 0x8000 : 0;
      const double v = decode16(static_cast<std::uint16_t>(bv | sign), f);
      const double r = decode16(static_cast<std::uint16_t>(br | sign), f);
      const auto e = softcheck::compare_element(r, exact(v), f);
      const double dist = std::abs(static_cast<double>(br) - static_cast<double>(bv));
      ASSERT_EQ(e.bits, std::log2(1 + dist)) << hex(bv) << " " << hex(br);
      const bool same_binade = (bv >> l.mant_bits) == (br >> l.mant_bits) ||
                               ((bv >> l.mant_bits) <= 1 && (br >> l.mant_bits) <= 1);
      if (same_binade) {
        ASSERT_EQ(e.ulp, dist) << hex(bv) << " " << hex(br);
      }
    }
  }
}

}  // namespace
