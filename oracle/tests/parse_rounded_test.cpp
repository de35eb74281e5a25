// Reading a number's text straight into a format (oracle.hpp and
// minifloat_oracle.hpp, parse_rounded): one rounding from the text, so a
// decimal just above a midpoint of the format rounds up even where its
// nearest double is the midpoint itself (reading through f64 would round
// twice and tie to even). Known values, then every midpoint of f16, bf16 and
// the OCP element formats against the storage layer's own rounding (an
// independent implementation, from a double).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "softcheck/minifloat_oracle.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::oracle {
namespace {

double parsed(const char* text, Format f) {
  const std::optional<double> v = parse_rounded(text, f);
  EXPECT_TRUE(v.has_value()) << text;
  return v.value_or(NAN);
}

TEST(ParseRounded, KnownValues) {
  // 1 + 2^-11 is the midpoint of 1 and 1 + 2^-10 in f16: ties to even (1);
  // a hair above it rounds up, although its nearest double is the midpoint.
  EXPECT_EQ(parsed("1.00048828125", Format::f16), 1.0);
  EXPECT_EQ(std::strtod("1.00048828125000000000001", nullptr), 1.00048828125);
  EXPECT_EQ(parsed("1.00048828125000000000001", Format::f16), 1.0009765625);
  EXPECT_EQ(parsed("0.1", Format::f16), 0.0999755859375);
  EXPECT_EQ(parsed("0.1", Format::bf16), 0.10009765625);
  EXPECT_EQ(parsed("0.1", Format::f32), static_cast<double>(0.1f));
  EXPECT_EQ(parsed("0.1", Format::f64), 0.1);
  // f16's largest finite value 65504; 65520 is the midpoint to 2^16: ties to
  // the even neighbour, 2^16, which overflows.
  EXPECT_EQ(parsed("65519.999", Format::f16), 65504.0);
  EXPECT_EQ(parsed("65520", Format::f16), INFINITY);
  EXPECT_EQ(parsed("-65520", Format::f16), -INFINITY);
  // Subnormals: 2^-24 is f16's smallest; half of it ties to 0, a hair above rounds up.
  EXPECT_EQ(parsed("5.9604644775390625e-8", Format::f16), std::ldexp(1.0, -24));
  EXPECT_EQ(parsed("2.98023223876953125e-8", Format::f16), 0.0);
  EXPECT_EQ(parsed("2.980232238769531250001e-8", Format::f16), std::ldexp(1.0, -24));
  EXPECT_EQ(parsed("-2.980232238769531250001e-8", Format::f16), -std::ldexp(1.0, -24));
  EXPECT_TRUE(std::signbit(parsed("-0", Format::f16)));
  EXPECT_TRUE(std::signbit(parsed("-1e-30", Format::f16)));  // rounds to -0
  EXPECT_EQ(parsed("0x1.8p-3", Format::bf16), 0.1875);
  EXPECT_EQ(parsed("inf", Format::f16), INFINITY);
  EXPECT_EQ(parsed("-inf", Format::f32), -INFINITY);
  EXPECT_TRUE(std::isnan(parsed("nan", Format::f64)));
  for (const char* bad : {"", "abc", "1 ", " 1", "1,2", "0x", "1e"})
    EXPECT_FALSE(parse_rounded(bad, Format::f16).has_value()) << "'" << bad << "'";
  // The OCP element formats: E4M3's largest is 448 and it has no inf (NaN past
  // it, non-saturating); E5M2 overflows to inf; E2M1 (no NaN, no inf) saturates.
  // 464 is the midpoint of 448 (1.110b x 2^8) and 480 (1.111b x 2^8, E4M3's
  // NaN pattern): it ties to the even 448; anything above rounds to 480,
  // past the largest value.
  EXPECT_EQ(parse_rounded("464", fp8_e4m3, Overflow::to_special), 448.0);
  EXPECT_TRUE(std::isnan(*parse_rounded("464.001", fp8_e4m3, Overflow::to_special)));
  EXPECT_EQ(parse_rounded("464.001", fp8_e4m3, Overflow::saturate), 448.0);
  EXPECT_EQ(parse_rounded("1e6", fp8_e5m2, Overflow::to_special), INFINITY);
  EXPECT_EQ(parse_rounded("7", fp4_e2m1, Overflow::to_special), 6.0);
  EXPECT_EQ(parse_rounded("0.3", fp4_e2m1, Overflow::to_special), 0.5);  // 0.25 is the midpoint of 0 and 0.5
  EXPECT_EQ(parse_rounded("0.25", fp4_e2m1, Overflow::to_special), 0.0);
  EXPECT_FALSE(parse_rounded("x", fp8_e4m3, Overflow::to_special).has_value());
}

// "%a" text of m with hex digits appended to its significand: m plus a
// positive amount far below a double's resolution (m > 0).
std::string just_above(double m) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", m);
  std::string s(buf);
  const std::size_t p = s.find('p');
  std::string significand = s.substr(0, p);
  if (significand.find('.') == std::string::npos) significand += '.';
  return significand + "000000000000000000001" + s.substr(p);
}

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// Every pair of neighbouring non-negative finite values a < b of a format
// (`values`, sorted): the midpoint m (exact in double) reads as
// `round_double(m)`, the storage layer's rounding of that double (ties to
// even); m plus a hair as b; the doubles next to m as a and b.
template <class Parse, class RoundDouble>
void check_every_midpoint(const std::vector<double>& values, Parse parse, RoundDouble round_double,
                          const std::string& format) {
  std::size_t checked = 0;
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const double a = values[i], b = values[i + 1], m = a + (b - a) / 2;
    ASSERT_TRUE(a < m && m < b) << format;
    EXPECT_EQ(parse(hex(m)), round_double(m)) << format << " midpoint " << hex(m);
    EXPECT_EQ(parse(just_above(m)), b) << format << " " << just_above(m);
    EXPECT_EQ(parse(hex(std::nextafter(m, 0.0))), a) << format << " below " << hex(m);
    EXPECT_EQ(parse(hex(std::nextafter(m, INFINITY))), b) << format << " above " << hex(m);
    EXPECT_EQ(parse("-" + just_above(m)), -b) << format;
    ++checked;
  }
  EXPECT_GT(checked, values.size() / 2) << format;
}

TEST(ParseRounded, EveryMidpointOfTheSixteenBitFormats) {
  for (Format f : {Format::f16, Format::bf16}) {
    std::vector<double> values;
    for (std::uint32_t bits = 0; bits < 0x8000; ++bits) {
      const double v = decode16(static_cast<std::uint16_t>(bits), f);
      if (std::isfinite(v)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    check_every_midpoint(
        values, [f](const std::string& t) { return parse_rounded(t, f).value_or(-1.0); },
        [f](double m) { return decode16(encode16(m, f), f); }, std::string(name(f)));
  }
}

TEST(ParseRounded, EveryMidpointOfTheOcpElementFormats) {
  for (const MiniFloat& f : mini_formats) {
    std::vector<double> values;
    for (unsigned bits = 0; bits < f.sign_bit(); ++bits) {
      const double v = decode(f, static_cast<std::uint8_t>(bits));
      if (std::isfinite(v)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    check_every_midpoint(
        values, [&f](const std::string& t) { return parse_rounded(t, f, Overflow::to_special).value_or(-1.0); },
        [&f](double m) { return decode(f, encode(f, m, Overflow::to_special)); }, std::string(f.name));
  }
}

}  // namespace
}  // namespace softcheck::oracle
