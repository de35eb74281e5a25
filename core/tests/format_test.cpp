// round_to_format (format.hpp) against the definition it implements: v
// divided by its binade's quantum, rounded to an integer by std::nearbyint in
// the current rounding mode, scaled back, overflowing past max_finite. Bit
// for bit (the sign of a zero included), for every format, on the values
// where roundings go wrong (midpoints, binade and subnormal edges, the
// overflow threshold) and on random doubles, in each rounding mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/fp_env.hpp"

namespace softcheck {
namespace {

double by_definition(double v, Format f) {
  if (!std::isfinite(v)) return v;
  if (v == 0) return std::copysign(0.0, v);
  if (f == Format::f64) return v;
  const FormatInfo fi = info(f);
  const int e = std::max(std::ilogb(v), fi.emin);
  const double quantum = std::ldexp(1.0, e - fi.precision + 1);
  const double r = std::nearbyint(v / quantum) * quantum;
  if (std::fabs(r) > max_finite(f)) return std::copysign(INFINITY, v);
  return r;
}

// Values of each format's edges and their neighbours: every midpoint of the
// first and last binades, the subnormal quanta, max_finite and the overflow
// threshold (max + ulp/2), each nudged one double either way.
std::vector<double> edge_values(Format f) {
  const FormatInfo fi = info(f);
  std::vector<double> base;
  const double q_min = denorm_min(f);
  for (int k = 0; k <= 8; ++k) base.push_back(q_min * k / 2.0);
  for (int e : {fi.emin, fi.emin + 1, 0, fi.emax})
    for (int k = 0; k < 8; ++k) base.push_back(std::ldexp(1.0 + k * std::ldexp(0.5, 1 - fi.precision), e));
  base.push_back(max_finite(f));
  base.push_back(max_finite(f) + std::ldexp(1.0, fi.emax - fi.precision)); 
  std::vector<double> out;
  for (double b : base)
    for (double v : {b, std::nextafter(b, 0.0), std::nextafter(b, INFINITY)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  // Exact midpoints between neighbours of random binades (ties), and a
  // double either side of each.
  std::mt19937_64 rng(static_cast<std::uint64_t>(fi.precision));
  for (int i = 0; i < 2000; ++i) {
    const int e = fi.emin + static_cast<int>(rng() % static_cast<std::uint64_t>(fi.emax - fi.emin + 1));
    const double m = std::ldexp(1.0, fi.precision - 1) + static_cast<double>(rng() % (1ULL << (fi.precision - 1)));
    const double mid = std::ldexp(m + 0.5, e - fi.precision + 1);
    for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  for (double v : {0x1p-1074, 0x1p-1022, 1e300, 0.0, double{INFINITY}, double{NAN}}) {
    out.push_back(v);
    out.push_back(-v);
  }
  return out;
}

TEST(RoundToFormat, IsItsDefinitionBitForBitInEveryRoundingMode) {
  std::mt19937_64 rng(20261205);
  std::vector<double> random;
  for (int i = 0; i < 20000; ++i) {
    // Random bit patterns below 2^40, and random values spread over the
    // narrow formats' range.
    random.push_back(std::bit_cast<double>((rng() & 0x7fffffffffffffffULL) % 0x4270000000000000ULL));
    random.push_back(std::ldexp(std::uniform_real_distribution<double>(-2, 2)(rng),
                                static_cast<int>(rng() % 300) - 160));
  }
  std::size_t checked = 0;
  for (FpEnv env : {FpEnv::standard, FpEnv::upward, FpEnv::downward, FpEnv::toward_zero}) {
    for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16, Format::e4m3, Format::e4m3_div256}) {
      std::vector<double> values = edge_values(f);
      values.insert(values.end(), random.begin(), random.end());
      std::vector<double> got(values.size()), want(values.size());
      {
        const FpEnvScope scope(env);
        for (std::size_t i = 0; i < values.size(); ++i) {
          got[i] = round_to_format(values[i], f);
          want[i] = by_definition(values[i], f);
        }
      }
      for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(bits_of_double(got[i]) == bits_of_double(want[i]) || (std::isnan(got[i]) && std::isnan(want[i])),
                  true)
            << name(f) << " in " << name(env) << ": " << std::hexfloat << values[i] << " gave " << got[i]
            << ", by definition " << want[i];
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 900000u);
}

// In the default environment f32's rounding is the hardware's conversion.
TEST(RoundToFormat, F32IsTheHardwareConversion) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const double v = std::bit_cast<double>(rng());
    if (std::isnan(v)) continue;
    ASSERT_EQ(bits_of_double(round_to_format(v, Format::f32)), bits_of_double(static_cast<float>(v)))
        << std::hexfloat << v;
  }
}

}  // namespace
}  // namespace softcheck
