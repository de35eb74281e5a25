// The small OCP formats (core/include/softcheck/minifloat.hpp): every bit
// pattern decoded, and the storage layer's encode against the oracle's MPFR
// rounding (minifloat_oracle.hpp) on every input that decides a rounding:
// every f16 and bf16 value, every midpoint between neighbouring values of
// the format and the doubles next to it, the overflow threshold and the
// specials, in both overflow modes.
// The block formats on top of them: every E8M0 code; MX blocks of every
// element format at every E8M0 scale, exhaustively over the element patterns
// and over every input that decides a rounding, against the oracle's MPFR
// conversion (minifloat_oracle.hpp); the special blocks; NVFP4 round trips
// over every block scale and element, and MPFR agreement on random and
// adversarial tensors. Hand-worked blocks pin what both sides must give.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/metrics.hpp"
#include "softcheck/minifloat_oracle.hpp"
#include "softcheck/oracle.hpp"
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

// E4M3 as a result format (format.hpp's Format::e4m3: what a quantised
// kernel's outputs are measured in, Kernel::quantised_outputs). The generic
// format code reads it from its parameters (p = 4, emin = -6, emax = 8) and
// max_finite's 448; here it must agree with the element format above on
// every deciding input: round_to_format, the oracle's round_to, the
// ordinal (Herbie's bits) and the ULP.
TEST(E4m3ResultFormat, IsTheElementFormatOnEveryDecidingInput) {
  EXPECT_EQ(max_finite(Format::e4m3), 448.0);
  EXPECT_EQ(denorm_min(Format::e4m3), 0x1p-9);
  EXPECT_EQ(unit_roundoff(Format::e4m3), 0x1p-4);
  EXPECT_FALSE(parse_format("e4m3").has_value());  // no kernel stores it
  EXPECT_THROW((void)element_size(Format::e4m3), std::logic_error);
  const oracle::PrecisionScope scope(64);  // Real(v) of a double: exact
  std::size_t checked = 0;
  for (double v : deciding_inputs(fp8_e4m3)) {
    if (std::isnan(v)) continue;
    // Past 464 the element format gives its NaN (non-saturating); the
    // generic code's overflow is +-inf there.
    const double element = decode(fp8_e4m3, encode(fp8_e4m3, v, Overflow::to_special));
    const double want = std::isnan(element) ? std::copysign(std::numeric_limits<double>::infinity(), v) : element;
    ASSERT_TRUE(same(round_to_format(v, Format::e4m3), want)) << v;
    ASSERT_TRUE(same(oracle::round_to(oracle::Real(v), Format::e4m3), want)) << v;
    ++checked;
  }
  EXPECT_GT(checked, 250000u);
  for (unsigned p = 0; p < 256; ++p) {
    const double v = decode(fp8_e4m3, static_cast<std::uint8_t>(p));
    if (std::isnan(v)) continue;
    const auto magnitude = static_cast<double>(p & 0x7F);
    EXPECT_EQ(ordinal(v, Format::e4m3), (p & 0x80) != 0 ? -magnitude : magnitude) << p;
    int e = 0;
    std::frexp(v, &e);
    const double ulp = v == 0 ? 0x1p-9 : std::ldexp(1.0, std::max(e - 1, -6) - 3);  // 0: the subnormal quantum
    EXPECT_EQ(oracle::round_to(oracle::ulp(oracle::Real(v), Format::e4m3), Format::f64), ulp) << v;
  }
  // E4M3 / 2^8 (FlashAttention-4's pre-scaled P): every deciding input of
  // E4M3 divided by 2^8 rounds to the element conversion divided by 2^8.
  EXPECT_EQ(max_finite(Format::e4m3_div256), 1.75);
  EXPECT_EQ(denorm_min(Format::e4m3_div256), 0x1p-17);
  EXPECT_TRUE(is_result_format(Format::e4m3_div256));
  EXPECT_EQ(parse_result_format("e4m3_div256"), Format::e4m3_div256);
  EXPECT_THROW((void)element_size(Format::e4m3_div256), std::logic_error);
  std::size_t scaled = 0;
  for (double v : deciding_inputs(fp8_e4m3)) {
    if (std::isnan(v) || std::isinf(v) || std::fabs(v) > 1e300) continue;
    const double element = decode(fp8_e4m3, encode(fp8_e4m3, v, Overflow::to_special));
    const double want = std::isnan(element) ? std::copysign(std::numeric_limits<double>::infinity(), v) : element / 256;
    ASSERT_TRUE(same(round_to_format(v / 256, Format::e4m3_div256), want)) << v;
    ASSERT_TRUE(same(oracle::round_to(oracle::Real(v / 256), Format::e4m3_div256), want)) << v;
    ++scaled;
  }
  EXPECT_GT(scaled, 250000u);
  // Errors in E4M3 ULPs: 0.3 lies 0.4 of a quantum (2^-5) below 0.3125 and
  // 0.6 above 0.28125; a result off the E4M3 grid is the caller's error.
  const oracle::Real exact(0.3);
  EXPECT_NEAR(compare_element(0.3125, exact, Format::e4m3).ulp, 0.4, 1e-12);
  EXPECT_NEAR(compare_element(0.28125, exact, Format::e4m3).ulp, 0.6, 1e-12);
  EXPECT_THROW((void)compare_element(0.3, exact, Format::e4m3), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// E8M0 (OCP MX v1.0, section 5.4.1)

constexpr double infinity = std::numeric_limits<double>::infinity();
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

TEST(E8m0, EveryCodeDecodesAndEncodesBack) {
  EXPECT_EQ(e8m0_decode(127), 1.0);
  EXPECT_EQ(e8m0_decode(0), std::ldexp(1.0, -127));
  EXPECT_EQ(e8m0_decode(254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(e8m0_decode(0xFF)));
  for (int c = 0; c < 255; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    const double x = e8m0_decode(code);
    EXPECT_EQ(x, std::ldexp(1.0, c - 127)) << c;
    EXPECT_EQ(e8m0_encode(x), code) << c;
    EXPECT_EQ(e8m0_from_exponent(c - 127), code) << c;
    // The largest power of two <= v: the whole binade [x, 2x) maps to x.
    EXPECT_EQ(e8m0_encode(std::nextafter(2 * x, 0.0)), code) << c;
    EXPECT_EQ(e8m0_encode(1.5 * x), code) << c;
    if (c > 0) {
      EXPECT_EQ(e8m0_encode(std::nextafter(x, 0.0)), code - 1) << c;
    }
  }
  // Below the range: clamped to 2^-127; from 2^128 up, and what E8M0 has no
  // code for (zero, negative, inf, NaN): NaN.
  EXPECT_EQ(e8m0_encode(std::nextafter(std::ldexp(1.0, -127), 0.0)), 0);
  EXPECT_EQ(e8m0_encode(std::numeric_limits<double>::denorm_min()), 0);
  EXPECT_EQ(e8m0_encode(std::ldexp(1.0, 128)), 0xFF);
  EXPECT_EQ(e8m0_encode(DBL_MAX), 0xFF);
  for (double v : {0.0, -0.0, -1.0, -std::ldexp(1.0, -127), infinity, -infinity, not_a_number})
    EXPECT_EQ(e8m0_encode(v), 0xFF) << v;
  EXPECT_EQ(e8m0_from_exponent(-128), 0);
  EXPECT_EQ(e8m0_from_exponent(INT_MIN), 0);
  EXPECT_EQ(e8m0_from_exponent(128), 0xFF);
  EXPECT_EQ(e8m0_from_exponent(INT_MAX), 0xFF);
}

// ---------------------------------------------------------------------------
// MX blocks (OCP MX v1.0, section 6.3)

// The fast conversion against the oracle's on one block; failures reported
// (the first few) and counted.
void expect_mx_agrees(std::span<const double> block, const MiniFloat& f, std::size_t& mismatches) {
  const MxBlock got = mx_quantize(block, f);
  const oracle::MxReference want = oracle::mx_reference(block, f);
  bool ok = got.scale == want.scale && got.elements.size() == block.size();
  for (std::size_t i = 0; ok && i < block.size(); ++i) ok = same(decode(f, got.elements[i]), want.elements[i]);
  if (!ok && mismatches++ < 10) {
    std::string where;
    for (std::size_t i = 0; i < block.size(); ++i)
      if (!same(decode(f, got.elements[i]), want.elements[i]))
        where += " [" + std::to_string(i) + "] " + std::to_string(block[i]) + ": " +
                 std::to_string(decode(f, got.elements[i])) + " vs " + std::to_string(want.elements[i]);
    ADD_FAILURE() << f.name << " scale " << int(got.scale) << " vs MPFR " << int(want.scale) << where;
  }
}

struct KnownMxBlock {
  MiniFloat f;
  std::vector<double> block;
  std::uint8_t scale;
  std::vector<std::uint8_t> elements;
  std::vector<double> values;  // X * P_i
};

// Worked by hand from section 6.3: X = 2^(floor(log2 max) - emax), then each
// V_i / X to nearest even, clamped to the largest normal.
TEST(Mx, KnownBlocks) {
  const double m0 = -0.0;
  const std::vector<KnownMxBlock> cases = {
      // MXFP4, max 7: X = 2^(2 - 2) = 1. -3.5 ties to -4 (even), 0.3 -> 0.5,
      // 1.25 ties to 1, 7 ties to 8 and clamps to 6, 0.25 ties to 0.
      {fp4_e2m1, {6, -3.5, 0.3, 1.25, 0, 7, m0, 0.25}, 127,
       {0x7, 0xE, 0x1, 0x2, 0x0, 0x7, 0x8, 0x0}, {6, -4, 0.5, 1, 0, 6, m0, 0}},
      // MXFP4, max 24: X = 2^(4 - 2) = 4; -5 ties to -4; 0.25 ties to 0.
      {fp4_e2m1, {24, -20, 1}, 129, {0x7, 0xE, 0x0}, {24, -16, 0}},
      // MXFP8 E4M3, max 1000: X = 2^(9 - 8) = 2; 500 clamps to 448; 8.5 ties
      // to 8; -0.0005 -> -0; 1.5 * 2^-9 ties to 2^-8 (pattern 2, even).
      {fp8_e4m3, {1000, 17, -0.001, 3 * std::ldexp(1.0, -9)}, 128,
       {0x7E, 0x50, 0x80, 0x02}, {896, 16, m0, std::ldexp(1.0, -7)}},
      // MXFP8 E5M2, max 1.5 * 2^20: X = 2^(20 - 15) = 32.
      {fp8_e5m2, {1.5 * std::ldexp(1.0, 20), 1}, 132, {0x7A, 0x28}, {1.5 * std::ldexp(1.0, 20), 1}},
      // MXFP6 E2M3, max 7.9: X = 1; 7.9 -> 8 clamps to 7.5; -0.1 -> -0.125.
      {fp6_e2m3, {7.9, -0.1}, 127, {0x1F, 0x21}, {7.5, -0.125}},
      // MXFP6 E3M2, max 0.75: X = 2^(-1 - 4); 24 = 1.5 * 2^4, 3.2 -> 3.
      {fp6_e3m2, {0.75, 0.1}, 122, {0x1E, 0x12}, {0.75, 3.0 / 32}},
  };
  for (const KnownMxBlock& c : cases) {
    const MxBlock got = mx_quantize(c.block, c.f);
    EXPECT_EQ(got.scale, c.scale) << c.f.name;
    EXPECT_EQ(got.elements, c.elements) << c.f.name;
    const std::vector<double> values = mx_dequantize(got, c.f);
    const oracle::MxReference want = oracle::mx_reference(c.block, c.f);
    EXPECT_EQ(want.scale, c.scale) << c.f.name;
    ASSERT_EQ(values.size(), c.values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_TRUE(same(values[i], c.values[i])) << c.f.name << " [" << i << "] " << values[i];
      EXPECT_TRUE(same(std::ldexp(want.elements[i], static_cast<int>(c.scale) - 127), c.values[i]))
          << c.f.name << " MPFR [" << i << "] " << want.elements[i];
    }
  }
}

TEST(Mx, SpecialBlocks) {
  for (const MiniFloat& f : mini_formats) {
    std::size_t mismatches = 0;
    // All zero: the smallest scale, +-0 elements.
    std::vector<double> zeros(mx_block_size);
    for (std::size_t i = 0; i < zeros.size(); ++i) zeros[i] = i % 2 == 0 ? 0.0 : -0.0;
    const MxBlock z = mx_quantize(zeros, f);
    EXPECT_EQ(z.scale, 0) << f.name;
    for (std::size_t i = 0; i < zeros.size(); ++i)
      EXPECT_EQ(z.elements[i], i % 2 == 0 ? 0 : f.sign_bit()) << f.name << " " << i;
    const std::vector<double> zv = mx_dequantize(z, f);
    for (std::size_t i = 0; i < zeros.size(); ++i) EXPECT_TRUE(same(zv[i], zeros[i])) << f.name;
    expect_mx_agrees(zeros, f, mismatches);
    // A NaN or an infinity anywhere: NaN scale, zero elements, every value NaN.
    for (double special : {not_a_number, infinity, -infinity}) {
      std::vector<double> block(mx_block_size, 1.0);
      block[17] = special;
      const MxBlock b = mx_quantize(block, f);
      EXPECT_EQ(b.scale, e8m0_nan) << f.name << " " << special;
      EXPECT_EQ(b.elements, std::vector<std::uint8_t>(mx_block_size, 0)) << f.name;
      for (double v : mx_dequantize(b, f)) EXPECT_TRUE(std::isnan(v)) << f.name;
      expect_mx_agrees(block, f, mismatches);
    }
    // A max too large for E8M0 (floor(log2 max) - emax > 127): NaN scale.
    const int emax = f.max_exponent();
    for (double huge : {std::ldexp(1.0, 128 + emax), DBL_MAX, -DBL_MAX}) {
      const std::vector<double> block = {1.0, huge};
      EXPECT_EQ(mx_quantize(block, f).scale, e8m0_nan) << f.name << " " << huge;
      expect_mx_agrees(block, f, mismatches);
    }
    // The largest max that still has a scale: 2^127, the top element clamped.
    const std::vector<double> top = {std::nextafter(std::ldexp(1.0, 128 + emax), 0.0), -std::ldexp(1.0, 127 + emax)};
    const MxBlock t = mx_quantize(top, f);
    EXPECT_EQ(t.scale, 254) << f.name;
    EXPECT_EQ(decode(f, t.elements[0]), max_finite(f)) << f.name;
    EXPECT_EQ(decode(f, t.elements[1]), -std::ldexp(1.0, emax)) << f.name;
    expect_mx_agrees(top, f, mismatches);
    // Tiny maxima clamp the scale to 2^-127; elements then round from there.
    for (double tiny : {std::ldexp(1.0, -127 + emax - 1), std::ldexp(1.0, -140), std::ldexp(1.0, -1000),
                        std::numeric_limits<double>::denorm_min()}) {
      const std::vector<double> block = {tiny, -tiny / 3, tiny / 4};
      const MxBlock b = mx_quantize(block, f);
      EXPECT_EQ(b.scale, 0) << f.name << " " << tiny;
      for (std::size_t i = 0; i < block.size(); ++i)
        EXPECT_EQ(b.elements[i], encode(f, std::ldexp(block[i], 127), Overflow::saturate)) << f.name;
      expect_mx_agrees(block, f, mismatches);
    }
    EXPECT_EQ(mismatches, 0u) << f.name;
    // Sizes, and patterns wider than the format.
    EXPECT_THROW(mx_quantize(std::vector<double>{}, f), std::invalid_argument);
    EXPECT_THROW(mx_quantize(std::vector<double>(mx_block_size + 1, 1.0), f), std::invalid_argument);
    EXPECT_THROW(oracle::mx_reference(std::vector<double>(mx_block_size + 1, 1.0), f), std::invalid_argument);
    EXPECT_THROW(mx_dequantize(MxBlock{127, {}}, f), std::invalid_argument);
    if (f.patterns() < 256) {
      EXPECT_THROW(mx_dequantize(MxBlock{127, {static_cast<std::uint8_t>(f.patterns())}}, f), std::invalid_argument);
    }
  }
  // Clamped by hand: max 1.5 * 2^-126 in E2M1 wants 2^(-126 - 2), gets 2^-127,
  // and the element 3; E4M3 max 2^-136 wants 2^-144: 2^-136 / 2^-127 = 2^-9,
  // the smallest subnormal, and 2^-140 / 2^-127 = 2^-13 rounds to 0.
  EXPECT_EQ(mx_quantize(std::vector<double>{1.5 * std::ldexp(1.0, -126)}, fp4_e2m1).elements[0], 0x5);
  const MxBlock e4 = mx_quantize(std::vector<double>{std::ldexp(1.0, -136), std::ldexp(1.0, -140)}, fp8_e4m3);
  EXPECT_EQ(e4.scale, 0);
  EXPECT_EQ(e4.elements, (std::vector<std::uint8_t>{0x01, 0x00}));
  // An element's own specials decode as themselves under a finite scale.
  EXPECT_TRUE(std::isnan(mx_dequantize(MxBlock{130, {0x7F}}, fp8_e4m3)[0]));
  EXPECT_EQ(mx_dequantize(MxBlock{130, {0xFC}}, fp8_e5m2)[0], -infinity);
}

// The finite, non-NaN patterns of f (both zeros included).
std::vector<std::uint8_t> finite_patterns(const MiniFloat& f) {
  std::vector<std::uint8_t> out;
  for (unsigned p = 0; p < f.patterns(); ++p)
    if (std::isfinite(decode(f, static_cast<std::uint8_t>(p)))) out.push_back(static_cast<std::uint8_t>(p));
  return out;
}

// Every finite element pattern at each of the 255 finite scales, 31 to a
// block behind an anchor 2^(s + emax) that fixes the scale at 2^s: the block
// dequantises to exactly 2^s * P_i and converts back to the same scale and
// patterns.
TEST(Mx, EveryElementAtEveryScaleRoundTrips) {
  for (const MiniFloat& f : mini_formats) {
    const std::vector<std::uint8_t> patterns = finite_patterns(f);
    const std::uint8_t anchor = encode(f, std::ldexp(1.0, f.max_exponent()), Overflow::saturate);
    std::size_t checked = 0, failures = 0;
    for (int code = 0; code < 255; ++code) {
      const int s = code - e8m0_bias;
      for (std::size_t start = 0; start < patterns.size(); start += mx_block_size - 1) {
        MxBlock block{static_cast<std::uint8_t>(code), {anchor}};
        for (std::size_t i = start; i < std::min(patterns.size(), start + mx_block_size - 1); ++i)
          block.elements.push_back(patterns[i]);
        const std::vector<double> values = mx_dequantize(block, f);
        bool ok = true;
        for (std::size_t i = 0; i < values.size(); ++i) ok = ok && same(values[i], std::ldexp(decode(f, block.elements[i]), s));
        const MxBlock back = mx_quantize(values, f);
        ok = ok && back.scale == block.scale && back.elements == block.elements;
        checked += values.size();
        if (!ok && failures++ < 10) ADD_FAILURE() << f.name << " scale " << code << " from pattern " << int(patterns[start]);
      }
    }
    EXPECT_EQ(failures, 0u) << f.name;
    EXPECT_GE(checked, 255 * patterns.size()) << f.name;
  }
}

// The inputs (>= 0, in units of X) that decide the conversion of one element
// at a fixed scale: every value of f's grid continued up to 2^(emax + 1) (the
// largest binade any V_i / X reaches), every sixteenth of a quantum in
// between (the midpoints among them), and the doubles next to each value and
// midpoint: the ties, the underflow to zero, and the clamp above the largest
// normal (its midpoint with the next grid value and everything past it).
std::vector<double> mx_deciding_units(const MiniFloat& f) {
  std::vector<double> grid;
  for (int n = 0; n < (1 << f.man_bits); ++n) grid.push_back(n * min_subnormal(f));  // subnormals
  for (int e = f.min_exponent(); e <= f.max_exponent(); ++e)
    for (int n = 0; n < (1 << f.man_bits); ++n) grid.push_back(std::ldexp(1.0 + std::ldexp(n, -f.man_bits), e));
  grid.push_back(std::ldexp(1.0, f.max_exponent() + 1));
  std::vector<double> units;
  for (std::size_t i = 0; i + 1 < grid.size(); ++i) {
    const double step = (grid[i + 1] - grid[i]) / 16;
    for (int k = 0; k < 16; ++k) units.push_back(grid[i] + k * step);
    const double mid = (grid[i] + grid[i + 1]) / 2;
    for (double v : {grid[i], mid})
      for (double towards : {0.0, infinity}) units.push_back(std::nextafter(v, towards));
  }
  units.push_back(std::nextafter(grid.back(), 0.0));
  std::erase_if(units, [](double v) { return v < 0; });
  return units;
}

// Every deciding input, both signs, at every finite scale, in blocks whose
// anchor is the smallest or the largest max that gives the scale: the fast
// conversion is the oracle's.
TEST(Mx, QuantizeIsTheOraclesRoundingAtEveryScale) {
  const oracle::PrecisionScope scope(64);
  for (const MiniFloat& f : mini_formats) {
    std::vector<double> units = mx_deciding_units(f);
    const std::size_t positive = units.size();
    for (std::size_t i = 0; i < positive; ++i) units.push_back(-units[i]);
    std::size_t blocks = 0, mismatches = 0;
    std::vector<double> block;
    for (int s = e8m0_min_exponent; s <= e8m0_max_exponent; ++s) {
      const double low = std::ldexp(1.0, s + f.max_exponent());
      const double high = std::nextafter(2 * low, 0.0);
      for (std::size_t start = 0; start < units.size(); start += mx_block_size - 1) {
        const double anchor = blocks % 4 == 0 ? low : blocks % 4 == 1 ? high : blocks % 4 == 2 ? -low : -high;
        block.assign(1, anchor);
        for (std::size_t i = start; i < std::min(units.size(), start + mx_block_size - 1); ++i)
          block.push_back(std::ldexp(units[i], s));
        expect_mx_agrees(block, f, mismatches);
        ++blocks;
      }
    }
    EXPECT_EQ(mismatches, 0u) << f.name;
    EXPECT_EQ(blocks, 255 * ((units.size() + mx_block_size - 2) / (mx_block_size - 1))) << f.name;
  }
}

// The scale at both ends of every binade of double, from the smallest
// subnormal to the largest finite: 2^k gives 2^(k - emax), the double below
// it 2^(k - 1 - emax), clamped to 2^-127 and NaN past 2^127; and the oracle
// agrees on the whole block.
TEST(Mx, ScaleAtEveryBinadeEdge) {
  for (const MiniFloat& f : mini_formats) {
    std::size_t mismatches = 0;
    for (int k = -1074; k <= 1023; ++k) {
      const double power = std::ldexp(1.0, k);
      for (double amax : {power, std::nextafter(power, 0.0)}) {
        if (amax == 0) continue;
        const int e = amax == power ? k : k - 1;
        const std::vector<double> block = {amax / 3, -amax, amax * 0.75, amax / 8};
        const std::uint8_t want = e - f.max_exponent() > 127  ? e8m0_nan
                                  : e - f.max_exponent() < -127 ? std::uint8_t{0}
                                                                 : static_cast<std::uint8_t>(e - f.max_exponent() + 127);
        EXPECT_EQ(mx_quantize(block, f).scale, want) << f.name << " max " << amax;
        expect_mx_agrees(block, f, mismatches);
      }
    }
    EXPECT_EQ(mismatches, 0u) << f.name;
  }
}

// ---------------------------------------------------------------------------
// NVFP4

// The fast tensor against the oracle's.
void expect_nvfp4_agrees(std::span<const double> values, std::size_t& mismatches) {
  const Nvfp4Tensor got = nvfp4_quantize(values);
  const oracle::Nvfp4Reference want = oracle::nvfp4_reference(values);
  bool ok = static_cast<double>(got.tensor_scale) == want.tensor_scale &&
            got.block_scales.size() == want.block_scales.size() && got.elements.size() == values.size();
  for (std::size_t b = 0; ok && b < got.block_scales.size(); ++b)
    ok = decode(fp8_e4m3, got.block_scales[b]) == want.block_scales[b];
  for (std::size_t i = 0; ok && i < values.size(); ++i) ok = same(decode(fp4_e2m1, got.elements[i]), want.elements[i]);
  if (!ok && mismatches++ < 10) {
    std::string where;
    for (std::size_t b = 0; b < std::min(got.block_scales.size(), want.block_scales.size()); ++b)
      if (decode(fp8_e4m3, got.block_scales[b]) != want.block_scales[b])
        where += " s_b[" + std::to_string(b) + "] " + std::to_string(decode(fp8_e4m3, got.block_scales[b])) + " vs " +
                 std::to_string(want.block_scales[b]);
    for (std::size_t i = 0; i < std::min(got.elements.size(), want.elements.size()); ++i)
      if (!same(decode(fp4_e2m1, got.elements[i]), want.elements[i]))
        where += " [" + std::to_string(i) + "] " + std::to_string(values[i]) + ": " +
                 std::to_string(decode(fp4_e2m1, got.elements[i])) + " vs " + std::to_string(want.elements[i]);
    ADD_FAILURE() << "n " << values.size() << " s_t " << got.tensor_scale << " vs MPFR " << want.tensor_scale << where;
  }
}

// Worked by hand: amax 2688 gives s_t = 1. Block 0: max 2688, s_b = 448,
// -1000 / 448 = -2.23 -> -2, 100 / 448 = 0.22 -> 0. Block 1 (partial, 4
// values): max 12, s_b = 2; 5 / 2 = 2.5 ties to 2, -7 / 2 = -3.5 ties to -4,
// 0.75 / 2 = 0.375 -> 0.5.
TEST(Nvfp4, KnownTensor) {
  std::vector<double> values(20, 0.0);
  values[0] = 2688;
  values[1] = -1000;
  values[2] = 100;
  values[3] = -0.5;
  values[16] = 12;
  values[17] = 5;
  values[18] = -7;
  values[19] = 0.75;
  const Nvfp4Tensor t = nvfp4_quantize(values);
  EXPECT_EQ(t.tensor_scale, 1.0f);
  EXPECT_EQ(t.block_scales, (std::vector<std::uint8_t>{0x7E, 0x40}));
  std::vector<std::uint8_t> elements(20, 0);
  elements[0] = 0x7;
  elements[1] = 0xC;
  elements[3] = 0x8;  // -0.5 / 448 rounds to -0
  elements[16] = 0x7;
  elements[17] = 0x4;
  elements[18] = 0xE;
  elements[19] = 0x1;
  EXPECT_EQ(t.elements, elements);
  std::vector<double> back(20, 0.0);
  back[0] = 2688;
  back[1] = -896;
  back[3] = -0.0;
  back[16] = 12;
  back[17] = 4;
  back[18] = -8;
  back[19] = 1;
  const std::vector<double> got = nvfp4_dequantize(t);
  for (std::size_t i = 0; i < 20; ++i) EXPECT_TRUE(same(got[i], back[i])) << i << " " << got[i];
  const oracle::Nvfp4Reference want = oracle::nvfp4_reference(values);
  EXPECT_EQ(want.tensor_scale, 1.0);
  EXPECT_EQ(want.block_scales, (std::vector<double>{448, 2}));
  for (std::size_t i = 0; i < 20; ++i)
    EXPECT_TRUE(same(want.elements[i] * want.block_scales[i / 16], back[i])) << "MPFR " << i;
}

// Every E4M3 block scale (0 through 448) holding every E2M1 pattern, at
// tensor scales from f32's smallest subnormal to its top: each block holds
// +-6, so its max is 6 s_t s_b and the tensor's 2688 s_t (the block with
// s_b = 448), and the tensor converts back to the same bits (a zero block
// scale to signed zeros). The oracle agrees.
TEST(Nvfp4, EveryBlockScaleAndElementRoundTrips) {
  const float top = std::nextafter(static_cast<float>(FLT_MAX / 2688), 0.0f);
  std::size_t mismatches = 0;
  for (float st : {1.0f, 0.1f, std::ldexp(1.0f, -20), 3.0f, FLT_MIN, std::ldexp(1.0f, -140),
                   std::numeric_limits<float>::denorm_min(), top}) {
    Nvfp4Tensor want{st, {}, {}};
    for (unsigned code = 0x7E;; --code) {  // 448 first: it sets the tensor's max
      want.block_scales.push_back(static_cast<std::uint8_t>(code));
      for (unsigned p = 0; p < 16; ++p)
        want.elements.push_back(static_cast<std::uint8_t>(code == 0 ? p & 0x8 : p));
      if (code == 0) break;
    }
    const std::vector<double> values = nvfp4_dequantize(want);
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_TRUE(same(values[i], static_cast<double>(st) * decode(fp8_e4m3, want.block_scales[i / 16]) *
                                      decode(fp4_e2m1, want.elements[i])));
    const Nvfp4Tensor back = nvfp4_quantize(values);
    EXPECT_EQ(back.tensor_scale, st);
    EXPECT_EQ(back.block_scales, want.block_scales) << st;
    EXPECT_EQ(back.elements, want.elements) << st;
    expect_nvfp4_agrees(values, mismatches);
  }
  EXPECT_EQ(mismatches, 0u);
}

// Ties at each of the three roundings go to even, worked by hand.
TEST(Nvfp4, TiesGoToEven) {
  // s_t: 2688 (1 + 2^-24) / 2688 is halfway between 1 and 1 + 2^-23: 1.
  const double tie = 2688 * (1 + std::ldexp(1.0, -24));
  EXPECT_EQ(nvfp4_tensor_scale(tie), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(std::nextafter(tie, 1e9)), std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(nvfp4_tensor_scale(2688 * (1 + 3 * std::ldexp(1.0, -24))), 1.0f + std::ldexp(1.0f, -22));
  // s_b (s_t = 1): a block max of 6 * 1.0625 is halfway between E4M3's 1 and
  // 1.125: 1 (0x38); 6 * 1.1875 between 1.125 and 1.25: 1.25 (0x3A); 6 *
  // 1.5 * 2^-9 between the subnormals 2^-9 and 2^-8: 2^-8 (0x02); 6 * 2^-10
  // between 0 and 2^-9: 0.
  std::vector<double> values(16, 0.0);
  values[0] = 2688;
  for (double amax : {6 * 1.0625, 6 * 1.1875, 6 * 1.5 * std::ldexp(1.0, -9), 6 * std::ldexp(1.0, -10)}) {
    values.push_back(amax);
    values.resize(values.size() + 15, 0.0);
  }
  const Nvfp4Tensor t = nvfp4_quantize(values);
  EXPECT_EQ(t.block_scales, (std::vector<std::uint8_t>{0x7E, 0x38, 0x3A, 0x02, 0x00}));
  // Elements (s_t = 1, s_b = 448): 2.5 * 448 -> 2, 3.5 * 448 -> 4, 5 * 448 -> 4,
  // 0.25 * 448 -> 0, 0.75 * 448 -> 1.
  const std::vector<double> ties = {2688, 2.5 * 448, 3.5 * 448, -5.0 * 448, 0.25 * 448, 0.75 * 448};
  EXPECT_EQ(nvfp4_quantize(ties).elements, (std::vector<std::uint8_t>{0x7, 0x4, 0x6, 0xE, 0x0, 0x2}));
}

TEST(Nvfp4, SpecialTensors) {
  // Empty, all zero: no scale, signed zeros.
  const Nvfp4Tensor empty = nvfp4_quantize(std::vector<double>{});
  EXPECT_EQ(empty.tensor_scale, 0.0f);
  EXPECT_TRUE(empty.block_scales.empty() && empty.elements.empty());
  EXPECT_TRUE(nvfp4_dequantize(empty).empty());
  const std::vector<double> zeros = {0.0, -0.0, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0};
  const Nvfp4Tensor z = nvfp4_quantize(zeros);
  EXPECT_EQ(z.tensor_scale, 0.0f);
  EXPECT_EQ(z.block_scales, (std::vector<std::uint8_t>{0, 0}));
  for (std::size_t i = 0; i < zeros.size(); ++i) EXPECT_EQ(z.elements[i], std::signbit(zeros[i]) ? 0x8 : 0x0);
  // s_t underflows f32 (2^-151 ties to 0 below half the smallest subnormal):
  // everything is zero; a hair more gives 2^-149.
  const double tie = 2688 * std::ldexp(1.0, -150);
  EXPECT_EQ(nvfp4_tensor_scale(tie), 0.0f);
  EXPECT_EQ(nvfp4_tensor_scale(std::nextafter(tie, 1.0)), std::numeric_limits<float>::denorm_min());
  const Nvfp4Tensor under = nvfp4_quantize(std::vector<double>{tie, -tie / 2});
  EXPECT_EQ(under.block_scales, (std::vector<std::uint8_t>{0}));
  EXPECT_EQ(under.elements, (std::vector<std::uint8_t>{0x0, 0x8}));
  // One outlier: the other block's scale rounds to 0 (2^-20 / (6 * 2^20 / 2688)
  // is far below E4M3's 2^-10), its elements to signed zeros.
  std::vector<double> outlier(32, std::ldexp(1.0, -20));
  outlier[0] = std::ldexp(1.0, 20);
  outlier[31] = -std::ldexp(1.0, -20);
  const Nvfp4Tensor o = nvfp4_quantize(outlier);
  EXPECT_EQ(o.block_scales[0], 0x7E);
  EXPECT_EQ(o.block_scales[1], 0x00);
  EXPECT_EQ(o.elements[16], 0x0);
  EXPECT_EQ(o.elements[31], 0x8);
  // Outside the domain.
  for (double bad : {not_a_number, infinity, -infinity, 2.0 * FLT_MAX}) {
    EXPECT_THROW(nvfp4_quantize(std::vector<double>{1.0, bad}), std::domain_error) << bad;
    EXPECT_THROW(oracle::nvfp4_reference(std::vector<double>{1.0, bad}), std::domain_error) << bad;
  }
  EXPECT_THROW(nvfp4_dequantize(Nvfp4Tensor{1.0f, {}, {0x1}}), std::invalid_argument);
  EXPECT_THROW(nvfp4_dequantize(Nvfp4Tensor{1.0f, {0x38, 0x38}, {0x1}}), std::invalid_argument);
  std::size_t mismatches = 0;
  for (const std::vector<double>& v : {zeros, std::vector<double>{tie, -tie / 2}, outlier}) expect_nvfp4_agrees(v, mismatches);
  EXPECT_EQ(mismatches, 0u);
}

// Random tensors (lengths 1..80, so most end in a partial block; magnitudes
// over a narrow or the whole f32 range) and adversarial ones: ties of the
// tensor scale in f32 (normal and subnormal), of block scales in E4M3
// (normal and subnormal), of elements in E2M1, each with its neighbouring
// doubles; an outlier that pushes the other blocks' scales into E4M3's
// subnormals and to zero; FLT_MAX.
TEST(Nvfp4, QuantizeIsTheOraclesRounding) {
  const oracle::PrecisionScope scope(64);
  std::vector<std::vector<double>> tensors;
  std::mt19937_64 gen(20251);
  for (int t = 0; t < 3000; ++t) {
    const auto n = std::uniform_int_distribution<std::size_t>(1, 80)(gen);
    const int centre = std::uniform_int_distribution<int>(-120, 100)(gen);
    const int spread = t % 3 == 0 ? 120 : t % 3 == 1 ? 12 : 3;
    std::vector<double> v(n);
    for (double& x : v) {
      const double m = std::uniform_real_distribution<double>(1.0, 2.0)(gen);
      const int e = std::clamp(centre + std::uniform_int_distribution<int>(-spread, spread)(gen), -149, 127);
      x = std::uniform_int_distribution<int>(0, 1)(gen) == 0 ? std::ldexp(m, e) : -std::ldexp(m, e);
      if (std::fabs(x) > FLT_MAX) x = std::copysign(FLT_MAX, x);
    }
    tensors.push_back(v);
  }
  auto around = [](double x) {
    return std::vector<double>{std::nextafter(x, 0.0), x, std::nextafter(x, infinity)};
  };
  // Tensor-scale ties: amax = 2688 * (an f32 midpoint), and its neighbours.
  for (double mid : {1.0 + std::ldexp(1.0, -24), 1.0 + 3 * std::ldexp(1.0, -24), std::ldexp(1.5, -149),
                     std::ldexp(1.0, -150), std::ldexp(2.5, -149), std::ldexp(1.0, -126) - std::ldexp(1.0, -150)})
    for (double amax : around(2688 * mid)) tensors.push_back({amax, -amax / 7, amax / 12, 0.3 * amax});
  // Block-scale ties: s_t = 1 (a 2688 entry); a block's max = 6 * (an E4M3
  // midpoint, normal or subnormal) and its neighbours.
  std::vector<double> e4m3_values;
  for (unsigned p = 0; p <= 0x7E; ++p) e4m3_values.push_back(decode(fp8_e4m3, static_cast<std::uint8_t>(p)));
  for (std::size_t i = 0; i + 1 < e4m3_values.size(); ++i) {
    const double mid = (e4m3_values[i] + e4m3_values[i + 1]) / 2;
    std::vector<double> v(16, 0.0);
    v[0] = 2688;
    for (double amax : around(6 * mid)) {
      v.push_back(amax);
      for (int k = 1; k < 16; ++k) v.push_back((k % 2 == 0 ? -amax : amax) * k / 16.0);
    }
    tensors.push_back(v);
  }
  // Element ties: s_t = 1, s_b = 448 and s_b = 2^-8 (subnormal), each E2M1
  // midpoint (and the clamp's 7) and its neighbours.
  for (double sb : {448.0, std::ldexp(1.0, -8)}) {
    std::vector<double> probes;
    for (double mid : {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0})
      for (double x : around(mid * sb)) {
        probes.push_back(x);
        probes.push_back(-x);
      }
    std::vector<double> v(16, 0.0);
    v[0] = 2688;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      if (i % 15 == 0) v.push_back(6 * sb);  // each block's max: s_b = sb
      v.push_back(probes[i]);
    }
    tensors.push_back(v);
  }
  // An outlier over blocks whose scales land in E4M3's subnormals and below.
  std::vector<double> outlier = {2688 * 8.0};  // s_t = 8
  for (int k = 0; k < 224; ++k) outlier.push_back(std::ldexp(1.0 + k / 224.0, -k / 32) * (k % 2 == 0 ? 1 : -1));
  const Nvfp4Tensor o = nvfp4_quantize(outlier);
  EXPECT_GE(std::count_if(o.block_scales.begin(), o.block_scales.end(), [](std::uint8_t b) { return b > 0 && b < 8; }), 3);
  EXPECT_GE(std::count(o.block_scales.begin(), o.block_scales.end(), 0), 1);
  tensors.push_back(outlier);
  tensors.push_back({FLT_MAX, -FLT_MAX / 3, 1.0, FLT_MIN});
  std::size_t mismatches = 0, values = 0;
  for (const std::vector<double>& v : tensors) {
    expect_nvfp4_agrees(v, mismatches);
    values += v.size();
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(values, 20000u);
}

// ---- Rounding exact values to the block formats (oracle --dtype mxfp8_e4m3, nvfp4) ----

// exact(d) + k 2^e with 256 bits: a value no double holds.
oracle::Real nudged(double d, int k, int e) {
  const oracle::PrecisionScope bits(256);
  return oracle::Real(d) + ldexp(oracle::Real(k), e);  // exact in 256 bits (2^-1100 is no double)
}

// A double stays itself; anything else goes toward zero and then to the
// neighbour whose last bit is 1 (never up across a power of two).
TEST(RoundToOdd, DoublesStayTheRestGoesToTheOddNeighbour) {
  for (double d : {1.0, -3.5, 0.0, -0.0, DBL_MAX, -DBL_MAX, std::numeric_limits<double>::denorm_min(), 0x1.fffffffffffffp-1,
                   0x1p-1022, 1e300})
    EXPECT_TRUE(same(oracle::to_double_odd(oracle::Real(d)), d)) << d;
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(1.0, 1, -60)), 1 + 0x1p-52));
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(1.0, -1, -60)), 1 - 0x1p-53));  // all ones below 1: odd already
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(-1.0, -1, -60)), -1 - 0x1p-52));
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(2.0, -1, -80)), 2 - 0x1p-52));  // stays below 2
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(0.0, 1, -1100)), std::numeric_limits<double>::denorm_min()));
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(0.0, -1, -1100)), -std::numeric_limits<double>::denorm_min()));
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(0x1p-1074, 1, -1100)), 0x1p-1074));  // odd already
  EXPECT_TRUE(same(oracle::to_double_odd(nudged(0x1p-1073, 1, -1100)), 0x3p-1074));
  // From text, with no rounding to nearest first: the nearest double of this
  // text is 1, which would tie to even in a 4-bit format; its odd double
  // keeps it above.
  EXPECT_TRUE(same(*oracle::parse_to_odd("1.00000000000000000001"), 1 + 0x1p-52));
  EXPECT_TRUE(same(*oracle::parse_to_odd("0.99999999999999999999"), 1 - 0x1p-53));
  EXPECT_TRUE(same(*oracle::parse_to_odd("1"), 1.0));
  EXPECT_TRUE(same(*oracle::parse_to_odd("-0x1.8p+1"), -3.0));
  EXPECT_TRUE(same(*oracle::parse_to_odd("1e-400"), std::numeric_limits<double>::denorm_min()));
  EXPECT_TRUE(same(*oracle::parse_to_odd("1e400"), DBL_MAX));  // the block conversions refuse it
  EXPECT_TRUE(same(*oracle::parse_to_odd("-inf"), -INFINITY));
  EXPECT_FALSE(oracle::parse_to_odd("1x").has_value());
  EXPECT_FALSE(oracle::parse_to_odd(" 1").has_value());
  EXPECT_FALSE(oracle::parse_to_odd("").has_value());
}

// mx_round decides from the exact values where rounding them to the
// nearest double first would not: the E4M3 tie 272 2^-8 (to 256, even) a
// hair above goes up to 288 2^-8; a hair below 2 keeps the scale 2^-8 and
// clamps to 448 2^-8 = 1.75 (OCP MX 6.3), where the nearest double, 2,
// would take the scale 2^-7 and give 2. On doubles it is mx_reference
// block by block, dequantised; a -inf makes its block NaN, no other.
TEST(Mx, RoundOfExactValuesDecidesFromTheExactValue) {
  const auto one = [](const oracle::Real& v, const MiniFloat& m) { return oracle::mx_round({&v, 1}, m).front(); };
  EXPECT_EQ(one(nudged(1.0625, 1, -80), fp8_e4m3), 1.125);
  EXPECT_EQ(one(nudged(1.0625, -1, -80), fp8_e4m3), 1.0);
  EXPECT_EQ(one(oracle::Real(1.0625), fp8_e4m3), 1.0);
  EXPECT_EQ(one(nudged(2.0, -1, -80), fp8_e4m3), 1.75);
  EXPECT_EQ(one(oracle::Real(2.0), fp8_e4m3), 2.0);
  EXPECT_EQ(one(nudged(2.0, -1, -80), fp4_e2m1), 1.5);  // scale 2^-2, 8 - tiny clamped to 6

  std::mt19937_64 rng(25);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30), length(1, 70);
  for (int trial = 0; trial < 300; ++trial) {
    const MiniFloat& m = mini_formats[static_cast<std::size_t>(trial) % mini_formats.size()];
    std::vector<double> x(static_cast<std::size_t>(length(rng)));
    for (double& v : x) v = std::ldexp(mantissa(rng), exponent(rng));
    const std::vector<oracle::Real> exact(x.begin(), x.end());
    const std::vector<double> got = oracle::mx_round(exact, m);
    ASSERT_EQ(got.size(), x.size());
    for (std::size_t start = 0; start < x.size(); start += mx_block_size) {
      const std::size_t len = std::min(mx_block_size, x.size() - start);
      const oracle::MxReference want = oracle::mx_reference({x.data() + start, len}, m);
      for (std::size_t i = 0; i < len; ++i)
        ASSERT_TRUE(same(got[start + i], e8m0_decode(want.scale) * want.elements[i])) << m.name << " " << start + i;
    }
  }
  std::vector<oracle::Real> masked(40, oracle::Real(1.0));
  masked[35] = oracle::Real(-INFINITY);
  const std::vector<double> q = oracle::mx_round(masked, fp8_e4m3);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_EQ(std::isnan(q[i]), i >= 32) << i;
}

// nvfp4_round: the E2M1 tie 2.5 s_t s_b (to 2, even) decided by the exact
// value a hair off it (s_t = 1 from the tensor's 2688, s_b = 448); on
// doubles nvfp4_reference, dequantised; -inf refused as the recipe does.
TEST(Nvfp4, RoundOfExactValuesDecidesFromTheExactValue) {
  std::vector<oracle::Real> t = {oracle::Real(2688.0), oracle::Real(1120.0)};
  EXPECT_EQ(oracle::nvfp4_round(t)[1], 896.0);
  t[1] = nudged(1120.0, 1, -40);
  EXPECT_EQ(oracle::nvfp4_round(t)[1], 1344.0);
  t[1] = nudged(1120.0, -1, -40);
  EXPECT_EQ(oracle::nvfp4_round(t)[1], 896.0);
  EXPECT_EQ(oracle::nvfp4_round(t)[0], 2688.0);

  std::mt19937_64 rng(26);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-20, 20), length(1, 50);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> x(static_cast<std::size_t>(length(rng)));
    for (double& v : x) v = std::ldexp(mantissa(rng), exponent(rng));
    const std::vector<oracle::Real> exact(x.begin(), x.end());
    const std::vector<double> got = oracle::nvfp4_round(exact);
    const oracle::Nvfp4Reference want = oracle::nvfp4_reference(x);
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_TRUE(same(got[i], want.tensor_scale * want.block_scales[i / nvfp4_block_size] * want.elements[i])) << i;
  }
  const std::vector<oracle::Real> masked = {oracle::Real(1.0), oracle::Real(-INFINITY)};
  EXPECT_THROW(oracle::nvfp4_round(masked), std::domain_error);
}

}  // namespace
}  // namespace softcheck
