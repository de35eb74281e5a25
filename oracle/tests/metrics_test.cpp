// Tests of the error metrics. Expected figures are derived by hand from the
// definitions in REFERENCE.md ("Error metrics in use"; Blanchard, Higham &
// Higham for the normwise error) and from IEEE bit patterns, never from the
// code under test.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "softcheck/metrics.hpp"
#include "softcheck/minifloat.hpp"
#include "softcheck/test_values.hpp"

namespace {

using softcheck::compare_element;
using softcheck::compare_row;
using softcheck::ElementClass;
using softcheck::ElementError;
using softcheck::Format;
using softcheck::Op;
using softcheck::ordinal;
using softcheck::RowError;
using softcheck::oracle::Real;

using softcheck::test_values::inf;
using softcheck::test_values::nan;
constexpr Format all_formats[] = {Format::f64, Format::f32, Format::f16, Format::bf16};

// An exact value given as a sum of doubles, formed exactly in 300 bits.
Real exact(std::initializer_list<double> terms) {
  Real r;
  mpfr_ptr v = r.backend().data();
  mpfr_set_prec(v, 300);
  mpfr_set_zero(v, 1);
  for (double t : terms) mpfr_add_d(v, v, t, MPFR_RNDN);
  return r;
}

void expect_zero_error(const ElementError& e) {
  EXPECT_EQ(e.cls, ElementClass::finite);
  EXPECT_EQ(e.ulp, 0);
  EXPECT_EQ(e.rel, 0);
  EXPECT_EQ(e.abs, 0);
  EXPECT_EQ(e.bits, 0);
}

void expect_worst(const ElementError& e, ElementClass cls, double width) {
  EXPECT_EQ(e.cls, cls);
  EXPECT_EQ(e.ulp, inf);
  EXPECT_EQ(e.rel, inf);
  EXPECT_EQ(e.abs, inf);
  EXPECT_EQ(e.bits, width);
}

// ------------------------------------------------------------------ compare_element

TEST(CompareElement, ExactResultHasZeroError) {
  for (Format f : all_formats)
    for (double v : {1.0, -0.5, 0.0, -0.0, 0.375})
      expect_zero_error(compare_element(v, exact({v}), f));
  expect_zero_error(compare_element(-0.0, exact({0.0}), Format::f32));  // +-0 are 0 apart
}

TEST(CompareElement, UlpRelAbsFromTheDefinitions) {
  // r = 1, v = 1 + 2^-30 in f32: |r - v| = 2^-30, ulp_f32(v) = 2^-23.
  const ElementError a = compare_element(1.0, exact({1.0, 0x1p-30}), Format::f32);
  EXPECT_EQ(a.cls, ElementClass::finite);
  EXPECT_EQ(a.abs, 0x1p-30);
  EXPECT_EQ(a.ulp, 0x1p-7);
  EXPECT_DOUBLE_EQ(a.rel, 0x1p-30 / (1 + 0x1p-30));
  EXPECT_EQ(a.bits, 0);  // r is round_f32(v): Herbie counts no error

  // The float below 1 against v = 1: half an ulp of v (the binade of v counts).
  const ElementError b = compare_element(1.0 - 0x1p-24, exact({1.0}), Format::f32);
  EXPECT_EQ(b.ulp, 0.5);
  EXPECT_EQ(b.abs, 0x1p-24);
  EXPECT_EQ(b.rel, 0x1p-24);
  EXPECT_EQ(b.bits, 1);

  // f16: r = 1 + 2^-10 (next value), v = 1: 1 ulp, 1 bit.
  const ElementError c = compare_element(1.0 + 0x1p-10, exact({1.0}), Format::f16);
  EXPECT_EQ(c.ulp, 1);
  EXPECT_EQ(c.bits, 1);

  // bf16 (ulp 2^-7 at 1.5): r = 1.5, v = 1.5 + 3 * 2^-9 = 1.5 + 0.75 ulp.
  const ElementError d = compare_element(1.5, exact({1.5, 3 * 0x1p-9}), Format::bf16);
  EXPECT_EQ(d.ulp, 0.75);
  EXPECT_EQ(d.bits, 1);  // round_bf16(v) = 1.5 + 2^-7
}

TEST(CompareElement, UlpUsesTheSubnormalQuantumAndTheLastBinade) {
  // f32 v = 3 dm + dm/4: ulp_T(v) = dm.
  const double dm = 0x1p-149;
  const ElementError a = compare_element(3 * dm, exact({3 * dm, dm / 4}), Format::f32);
  EXPECT_EQ(a.ulp, 0.25);
  EXPECT_EQ(a.bits, 0);
  // v = 2^128 (past FLT_MAX), r = FLT_MAX: |r - v| = 2^104 = ulp(FLT_MAX); round_f32(v) = inf,
  // one ordinal past FLT_MAX.
  const ElementError b = compare_element(FLT_MAX, exact({0x1p128}), Format::f32);
  EXPECT_EQ(b.cls, ElementClass::finite);
  EXPECT_EQ(b.ulp, 1);
  EXPECT_EQ(b.bits, 1);
}

TEST(CompareElement, BitsOfError) {
  const float one = 1.0f;
  const float up1 = std::nextafter(one, 2.0f), up3 = std::nextafter(std::nextafter(up1, 2.0f), 2.0f);
  EXPECT_EQ(compare_element(up1, exact({1.0}), Format::f32).bits, 1);  // adjacent: log2(2)
  EXPECT_EQ(compare_element(up3, exact({1.0}), Format::f32).bits, 2);  // 3 apart: log2(4)
  // Across zero: -dm and +dm are 2 apart (+-0 share one ordinal).
  const double dm = 0x1p-149;
  const ElementError z = compare_element(-dm, exact({dm}), Format::f32);
  EXPECT_DOUBLE_EQ(z.bits, std::log2(3.0));
  EXPECT_EQ(z.ulp, 2);
  EXPECT_EQ(z.rel, 2);
  // Exact value 0, result dm: relative error infinite, 1 ulp, 1 bit.
  const ElementError w = compare_element(dm, exact({0.0}), Format::f32);
  EXPECT_EQ(w.rel, inf);
  EXPECT_EQ(w.ulp, 1);
  EXPECT_EQ(w.abs, dm);
  EXPECT_EQ(w.bits, 1);
}

TEST(CompareElement, F64BitsUseExactIntegerOrdinals) {
  // ord(1.0) = 0x3FF0000000000000 ~ 2^62: as doubles, neighbours would be 0 apart.
  const double next = std::nextafter(1.0, 2.0);
  EXPECT_EQ(compare_element(1.0, exact({next}), Format::f64).bits, 1);
  EXPECT_EQ(compare_element(1.0, exact({1.0, 1000 * DBL_EPSILON}), Format::f64).bits, std::log2(1001.0));
  // The largest distance: -DBL_MAX against DBL_MAX, 2 * 0x7FEFFFFFFFFFFFFF apart (> 2^63).
  const long double far = 2.0L * static_cast<long double>(0x7FEFFFFFFFFFFFFFULL) + 1.0L;
  EXPECT_NEAR(compare_element(-DBL_MAX, exact({DBL_MAX}), Format::f64).bits,
              static_cast<double>(std::log2(far)), 1e-12);
}

TEST(CompareElement, NanOrInfResultIsNonfinite) {
  for (Format f : all_formats) {
    const double width = softcheck::info(f).width;  // REFERENCE.md: NaN/inf count as the width
    expect_worst(compare_element(nan, exact({0.25}), f), ElementClass::nonfinite, width);
    expect_worst(compare_element(inf, exact({0.25}), f), ElementClass::nonfinite, width);
    expect_worst(compare_element(-inf, exact({-3.0}), f), ElementClass::nonfinite, width);
  }
  EXPECT_EQ(compare_element(nan, exact({1.0}), Format::f32).bits, 32);
  EXPECT_EQ(compare_element(nan, exact({1.0}), Format::f16).bits, 16);
  EXPECT_EQ(compare_element(nan, exact({1.0}), Format::f64).bits, 64);
}

TEST(CompareElement, CorrectlyRoundedOverflowIsNotAnError) {
  // An f32 log-softmax of [3e38, -3e38] is about -6e38: its f32 rounding is -inf.
  expect_zero_error(compare_element(-inf, exact({-3e38, -3e38}), Format::f32));
  // f16: v = 65520 rounds to inf (the tie goes to even = 2^16).
  expect_zero_error(compare_element(inf, exact({65520.0}), Format::f16));
  // Just below the threshold the correct result is finite: inf is an overflow.
  expect_worst(compare_element(inf, exact({65519.0}), Format::f16), ElementClass::nonfinite, 16);
  expect_worst(compare_element(-inf, exact({-FLT_MAX}), Format::f32), ElementClass::nonfinite, 32);
}

TEST(CompareElement, InfiniteExactValue) {
  // A masked log-softmax entry: exact -inf.
  const Real minus_inf = exact({-inf});
  for (Format f : all_formats) {
    const double width = softcheck::info(f).width;
    expect_zero_error(compare_element(-inf, minus_inf, f));
    expect_worst(compare_element(-1024.0, minus_inf, f), ElementClass::special_mismatch, width);
    expect_worst(compare_element(nan, minus_inf, f), ElementClass::special_mismatch, width);
    expect_worst(compare_element(inf, minus_inf, f), ElementClass::special_mismatch, width);
    expect_zero_error(compare_element(inf, exact({inf}), f));
  }
}

TEST(CompareElement, RejectsNonValuesAndNanExact) {
  EXPECT_THROW(compare_element(0.1, exact({0.1}), Format::f32), std::invalid_argument);
  EXPECT_THROW(compare_element(1e39, exact({1e39}), Format::f32), std::invalid_argument);
  EXPECT_THROW(compare_element(1 + 0x1p-11, exact({1.0}), Format::f16), std::invalid_argument);
  EXPECT_THROW(compare_element(0x1p-25, exact({0.0}), Format::f16), std::invalid_argument);
  EXPECT_THROW(compare_element(1.0, exact({nan}), Format::f32), std::invalid_argument);
  EXPECT_NO_THROW(compare_element(0.1, exact({0.1}), Format::f64));
}

TEST(CompareElement, SameAnswersFromSeveralThreads) {
  const std::vector<double> results = {1.0, 0x1p-149, -inf, nan, 0.75, static_cast<double>(3e38f)};
  const std::vector<Real> exacts = {exact({1.0, 0x1p-30}), exact({0.0}), exact({-inf}), exact({2.0}),
                                    exact({0.7}), exact({-3e38})};
  std::vector<ElementError> serial;
  for (std::size_t i = 0; i < results.size(); ++i)
    serial.push_back(compare_element(results[i], exacts[i], Format::f32));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 2000; ++rep)
        for (std::size_t i = 0; i < results.size(); ++i) {
          const ElementError e = compare_element(results[i], exacts[i], Format::f32);
          const ElementError& s = serial[i];
          if (e.cls != s.cls || e.ulp != s.ulp || e.bits != s.bits || e.rel != s.rel || e.abs != s.abs)
            ++mismatches[t];
        }
    });
  for (auto& t : threads) t.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// ------------------------------------------------------------------ ordinal

TEST(Ordinal, IsTheIeeeBitPatternForF32AndF64) {
  std::uint64_t s = 11;
  for (int r = 0; r < 20000; ++r) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint32_t p32 = static_cast<std::uint32_t>(s >> 33) % 0x7F800001u;  // finite or +inf
    const float x = std::bit_cast<float>(p32);
    EXPECT_EQ(ordinal(x, Format::f32), static_cast<double>(p32));
    EXPECT_EQ(ordinal(-x, Format::f32), -static_cast<double>(p32));
    const std::uint64_t p64 = s % 0x7FF0000000000001ULL;
    const double d = std::bit_cast<double>(p64);
    EXPECT_EQ(ordinal(d, Format::f64), static_cast<double>(p64));  // the rounded integer
  }
  EXPECT_EQ(ordinal(inf, Format::f32), static_cast<double>(0x7F800000u));
  EXPECT_EQ(ordinal(-inf, Format::f64), -static_cast<double>(0x7FF0000000000000ULL));
  EXPECT_EQ(ordinal(FLT_MAX, Format::f32), static_cast<double>(0x7F7FFFFFu));
}

TEST(Ordinal, F16AndBf16Exhaustive) {
  for (std::uint32_t p = 0; p <= 0x7C00; ++p) {  // every finite f16 and +inf
    const double h = static_cast<double>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(p)));
    ASSERT_EQ(ordinal(h, Format::f16), static_cast<double>(p)) << h;
    ASSERT_EQ(ordinal(-h, Format::f16), -static_cast<double>(p)) << h;
  }
  for (std::uint32_t p = 0; p <= 0x7F80; ++p) {  // every finite bf16 and +inf
    const double b = static_cast<double>(std::bit_cast<float>(p << 16));
    ASSERT_EQ(ordinal(b, Format::bf16), static_cast<double>(p)) << b;
    ASSERT_EQ(ordinal(-b, Format::bf16), -static_cast<double>(p)) << b;
  }
}

// Values of the format near zero, the subnormal/normal edge, 1 and the top,
// in increasing order from -inf to +inf, each with its signed bit pattern
// (its ordinal, by the IEEE layout), built from the patterns alone.
struct Walked {
  double value;
  double pattern;  // signed
};
std::vector<Walked> walk(Format f) {
  auto value = [f](std::uint64_t p) {
    switch (f) {
      case Format::f64: return std::bit_cast<double>(p);
      case Format::f32: return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(p)));
      case Format::f16: return static_cast<double>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(p)));
      case Format::bf16: return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(p << 16)));
      case Format::e4m3: return softcheck::decode(softcheck::fp8_e4m3, static_cast<std::uint8_t>(p));
      case Format::e4m3_div256: return softcheck::decode(softcheck::fp8_e4m3, static_cast<std::uint8_t>(p)) / 256;
    }
    return nan;
  };
  const softcheck::FormatInfo fi = softcheck::info(f);
  const std::uint64_t binade = std::uint64_t{1} << (fi.precision - 1);
  const auto inf_pattern = static_cast<std::uint64_t>(fi.emax - fi.emin + 2) * binade;
  const auto one_pattern = static_cast<std::uint64_t>(-fi.emin) * binade + binade;
  std::vector<std::uint64_t> patterns;  // increasing
  for (std::uint64_t q : {std::uint64_t{5}, binade - 1, one_pattern, inf_pattern - 5})
    for (std::uint64_t k = q - 5; k <= q + 5 && k <= inf_pattern; ++k)
      if (patterns.empty() || k > patterns.back()) patterns.push_back(k);
  std::vector<Walked> all;
  for (auto it = patterns.rbegin(); it != patterns.rend(); ++it)
    all.push_back({-value(*it), -static_cast<double>(*it)});
  for (std::uint64_t k : patterns) all.push_back({value(k), static_cast<double>(k)});  // -0 and +0
  return all;
}

TEST(Ordinal, MonotoneAcrossZeroSubnormalsNormalsAndInfinity) {
  for (Format f : all_formats) {
    const std::vector<Walked> walked = walk(f);
    ASSERT_EQ(walked.front().value, -inf);
    ASSERT_EQ(walked.back().value, inf);
    ASSERT_EQ(walked[walked.size() / 2].value, 0.0);
    ASSERT_EQ(ordinal(1.0, f), static_cast<double>(softcheck::info(f).precision == 53 ? 0x3FF0000000000000ULL
                                                   : softcheck::info(f).precision == 24 ? 0x3F800000u
                                                   : softcheck::info(f).precision == 11 ? 0x3C00u
                                                                                        : 0x3F80u));
    for (std::size_t i = 0; i < walked.size(); ++i) {
      const double o = ordinal(walked[i].value, f);
      EXPECT_EQ(o, walked[i].value == 0 ? 0 : walked[i].pattern) << softcheck::name(f) << " " << walked[i].value;
      if (i == 0) continue;
      const double before = ordinal(walked[i - 1].value, f);
      if (walked[i - 1].value == walked[i].value)
        EXPECT_EQ(before, o);  // -0, +0
      else if (std::fabs(o) <= 0x1p53 && std::fabs(before) <= 0x1p53)
        EXPECT_LT(before, o) << softcheck::name(f) << " " << walked[i].value;
      else
        EXPECT_LE(before, o);  // f64 ordinals past 2^53 are rounded doubles
    }
  }
}

TEST(Ordinal, SignedZerosNanAndNonValues) {
  for (Format f : all_formats) {
    EXPECT_EQ(ordinal(0.0, f), 0);
    EXPECT_EQ(ordinal(-0.0, f), 0);
    EXPECT_TRUE(std::isnan(ordinal(nan, f)));
    EXPECT_EQ(ordinal(softcheck::denorm_min(f), f), 1);
    EXPECT_EQ(ordinal(-softcheck::denorm_min(f), f), -1);
  }
  EXPECT_THROW(ordinal(0.1, Format::f32), std::invalid_argument);
  EXPECT_THROW(ordinal(1e-46, Format::f32), std::invalid_argument);
  EXPECT_THROW(ordinal(70000.0, Format::f16), std::invalid_argument);
}

// ------------------------------------------------------------------ compare_row

TEST(CompareRow, NormwiseOfHandPerturbedRow) {
  // softmax([0, 0]) = [1/2, 1/2]; in f32 (u = 2^-24) perturb the first by
  // +3 ulp (3 * 2^-24) and the second by -1 ulp of the binade below (2^-25).
  const auto ex = softcheck::oracle::exact_row(std::vector<double>{0, 0});
  const std::vector<double> r = {0.5 + 3 * 0x1p-24, 0.5 - 0x1p-25};
  const RowError e = compare_row(r, ex.softmax, Format::f32, Op::softmax);
  EXPECT_EQ(e.elements, 2u);
  EXPECT_EQ(e.measured, 2u);
  EXPECT_EQ(e.normwise, 6);  // 3 * 2^-24 / (2^-24 * 1/2)
  EXPECT_EQ(e.max_abs, 3 * 0x1p-24);
  EXPECT_EQ(e.max_ulp, 3);
  EXPECT_EQ(e.sum_ulp, 3.5);  // 3 + (2^-25 / 2^-24)
  EXPECT_EQ(e.max_bits, 2);   // log2(1 + 3)
  EXPECT_EQ(e.sum_bits, 3);   // + log2(1 + 1)
  EXPECT_EQ(e.max_rel, 6 * 0x1p-24);
  EXPECT_EQ(e.worst_index, 0u);

  // f16 (u = 2^-11) on [ln 3, 0]: g = [3/4, 1/4]; results 3/4 - 2^-11 and 1/4 + 2^-11.
  const std::vector<double> x16 = {std::log(3.0), 0.0};
  const auto ex16 = softcheck::oracle::exact_row(x16);
  // g_0 = 3/4 only up to the rounding of ln 3 in double: |g_0 - 3/4| < 2^-53.
  const RowError e16 = compare_row(std::vector<double>{0.75 - 0x1p-11, 0.25 + 0x1p-11}, ex16.softmax,
                                   Format::f16, Op::softmax);
  EXPECT_NEAR(e16.normwise, 0x1p-11 / (0x1p-11 * 0.75), 1e-12);
}

TEST(CompareRow, WorstIndexIsFirstLargestUlpOrFirstBroken) {
  const auto ex = softcheck::oracle::exact_row(std::vector<double>{0, 0, 0, 0});  // all 1/4
  const double u = 0x1p-25;                                                       // f32 ulp at 1/4
  RowError e = compare_row(std::vector<double>{0.25 + u, 0.25 + 3 * u, 0.25 - 3 * u / 2, 0.25 + 3 * u},
                           ex.softmax, Format::f32, Op::softmax);
  EXPECT_EQ(e.worst_index, 1u);
  EXPECT_EQ(e.max_ulp, 3);
  e = compare_row(std::vector<double>{0.25 + u, nan, 0.25 + 3 * u, inf}, ex.softmax, Format::f32, Op::softmax);
  EXPECT_EQ(e.worst_index, 1u);
  EXPECT_EQ(e.nonfinite, 2u);
  EXPECT_EQ(e.measured, 2u);
  // Nonfinite results never enter sums or maxima.
  EXPECT_EQ(e.max_ulp, 3);
  EXPECT_EQ(e.sum_ulp, 4);
  EXPECT_EQ(e.max_bits, 2);
  EXPECT_EQ(e.max_abs, 3 * u);
  EXPECT_EQ(e.normwise, 3 * u / (0x1p-24 * 0.25));
  e = compare_row(std::vector<double>{0.25, 0.25, 0.25, 0.25}, ex.softmax, Format::f32, Op::softmax);
  EXPECT_EQ(e.worst_index, 0u);
  EXPECT_EQ(e.max_ulp, 0);
}

TEST(CompareRow, LogSoftmaxWithMaskedEntries) {
  const auto ex = softcheck::oracle::exact_row(std::vector<double>{0, -inf, 0});
  const double minus_ln2 = -std::log(2.0);  // glibc log: correctly rounded here, checked next
  ASSERT_EQ(softcheck::oracle::round_to(ex.log_softmax[0], Format::f64), minus_ln2);
  RowError e = compare_row(std::vector<double>{minus_ln2, -inf, minus_ln2}, ex.log_softmax, Format::f64,
                           Op::log_softmax);
  EXPECT_EQ(e.measured, 3u);
  EXPECT_EQ(e.special_mismatch, 0u);
  EXPECT_EQ(e.normwise, 0);  // log-softmax: no normwise error
  EXPECT_LE(e.max_ulp, 0.5);
  EXPECT_EQ(e.max_bits, 0);
  e = compare_row(std::vector<double>{minus_ln2, -1e30, nan}, ex.log_softmax, Format::f64, Op::log_softmax);
  EXPECT_EQ(e.special_mismatch, 1u);
  EXPECT_EQ(e.nonfinite, 1u);
  EXPECT_EQ(e.measured, 1u);
  EXPECT_EQ(e.worst_index, 1u);
}

TEST(CompareRow, CorrectlyRoundedRowsAreWithinHalfAnUlp) {
  std::uint64_t s = 5;
  for (int row = 0; row < 20; ++row) {
    std::vector<double> x;
    for (int i = 0; i < 50; ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      x.push_back(static_cast<double>(static_cast<std::int64_t>(s >> 40) - (1 << 23)) * 0x1p-18);
    }
    x[static_cast<std::size_t>(row)] = -inf;
    const auto ex = softcheck::oracle::exact_row(x, 0.5);
    for (Format f : all_formats)
      for (Op op : {Op::softmax, Op::log_softmax}) {
        const auto& ref = op == Op::softmax ? ex.softmax : ex.log_softmax;
        std::vector<double> r;
        for (const Real& v : ref) r.push_back(softcheck::oracle::round_to(v, f));
        const RowError e = compare_row(r, ref, f, op);
        EXPECT_EQ(e.measured, x.size());
        EXPECT_LE(e.max_ulp, 0.5);
        EXPECT_EQ(e.max_bits, 0);
        if (op == Op::softmax) {
          EXPECT_LE(e.normwise, 1);  // |r - g| <= ulp(g) / 2 <= u |g| <= u max g
        }
      }
  }
}

TEST(CompareRow, RejectsLengthMismatchAndHandlesEmpty) {
  const auto ex = softcheck::oracle::exact_row(std::vector<double>{0, 1});
  EXPECT_THROW(compare_row(std::vector<double>{0.5}, ex.softmax, Format::f32, Op::softmax),
               std::invalid_argument);
  const RowError e = compare_row({}, {}, Format::f32, Op::softmax);
  EXPECT_EQ(e.elements, 0u);
  EXPECT_EQ(e.worst_index, 0u);
  EXPECT_EQ(e.normwise, 0);
}

}  // namespace
