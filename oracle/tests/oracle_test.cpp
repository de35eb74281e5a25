// Tests of the MPFR oracle: known values from independent sources, exact
// identities, precision doubling, special values, and round_to / ulp /
// to_string against hardware conversions and MPFR's own conversions.
//
// Reference strings marked "mpmath" were produced offline with Python mpmath
// 1.3.0 at mp.prec = 400 from the exact binary doubles (mpf(0.2) is the double
// 0.2), with the plain formula exp(z_i - a) / sum_j exp(z_j - a), then printed
// with nstr(v, 50). No figure here was produced by the code under test.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "softcheck/oracle.hpp"
#include "softcheck/test_values.hpp"

#include "mpfr_scratch.hpp"

namespace {

using softcheck::Format;
using softcheck::oracle::ExactRow;
using softcheck::oracle::exact_row;
using softcheck::oracle::Real;
using softcheck::oracle::round_to;
using softcheck::oracle::RowStatus;

using softcheck::test_values::inf;
using softcheck::test_values::nan;

using softcheck::oracle::testing::Mp;  // an MPFR variable with its own precision, for independent computations
using softcheck::oracle::testing::raw;

Real to_real(mpfr_srcptr v) {
  Real r;
  mpfr_set_prec(raw(r), mpfr_get_prec(v));
  mpfr_set(raw(r), v, MPFR_RNDN);
  return r;
}

Real real_of(double d, mpfr_prec_t bits = 128) {
  Mp m(bits, d);
  return to_real(m.v);
}

// |a - b| / |b| as a double (0 when equal, including equal infinities).
double rel_error(mpfr_srcptr a, mpfr_srcptr b) {
  if (mpfr_equal_p(a, b)) return 0;
  Mp d(64);
  mpfr_sub(d.v, a, b, MPFR_RNDN);
  if (mpfr_zero_p(b)) return inf;
  mpfr_div(d.v, d.v, b, MPFR_RNDN);
  return std::fabs(mpfr_get_d(d.v, MPFR_RNDN));
}
double rel_error(const Real& a, mpfr_srcptr b) { return rel_error(raw(a), b); }
double rel_error(const Real& a, const Real& b) { return rel_error(raw(a), raw(b)); }

double rel_error(const Real& a, const char* decimal) {
  Mp b(400, decimal);
  return rel_error(raw(a), b.v);
}

// Rows that stress the oracle; used by several tests.
std::vector<std::vector<double>> hard_rows() {
  const double lowest32 = -static_cast<double>(FLT_MAX);
  // oneDNN benchdnn's row (REFERENCE.md, "How the peers test softmax"): a few
  // values at the f32 expf overflow edge 88, 89, 90 with the sign flipped
  // every 64 elements, everything else at the format's lowest value.
  std::vector<double> benchdnn(200, lowest32);
  for (std::size_t i = 0; i < benchdnn.size(); i += 7) {
    const double sign = (i / 64) % 2 ? -1.0 : 1.0;
    benchdnn[i] = sign * (88.0 + static_cast<double>(i % 3));
  }
  std::vector<double> wide;  // 0 down to -740 (exp near the f64 subnormal floor)
  for (int i = 0; i <= 740; i += 13) wide.push_back(-static_cast<double>(i) - 0.25);
  std::vector<double> lcg_row;
  std::uint64_t s = 12345;
  for (int i = 0; i < 300; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    lcg_row.push_back(static_cast<double>(static_cast<std::int64_t>(s >> 11)) * 0x1p-50);
  }
  return {
      {88, 89, 90, lowest32, lowest32, 90},
      benchdnn,
      wide,
      lcg_row,
      {1e-300, 2e-300, -1e-300, 0.0, 3e-300},
      {4.9406564584124654e-324, 0.0, -4.9406564584124654e-324},
      {-inf, 0.0, 1.0, -inf, -inf, 0.5},
      {0.0, -1e5, -2e5},
      {0.0, -200.0},  // e^-200 ~ 2^-288: s = 1 + r must not lose r
      {1e300, -1e300, 1e300, 1e299},
      {-DBL_MAX, DBL_MAX, 0.0},
      {3, 1, 0.2},
      {1000, 1001, 1002},
      {-1e9, 0.0, -1e9 + 1},
  };
}

// ------------------------------------------------------------------ environment

TEST(OracleEnv, MpfrIsBuiltWithThreadLocalStorage) {
  // REFERENCE.md: MPFR is thread-safe only when built with TLS.
  EXPECT_TRUE(mpfr_buildopt_tls_p());
}

TEST(PrecisionScope, GivesAtLeastTheRequestedBitsAndRestores) {
  const unsigned before = softcheck::oracle::current_bits();
  for (unsigned bits : {2u, 24u, 53u, 64u, 100u, 113u, 256u, 257u, 512u, 1000u}) {
    {
      softcheck::oracle::PrecisionScope scope(bits);
      const unsigned got = softcheck::oracle::current_bits();
      EXPECT_GE(got, bits);
      EXPECT_LE(got, bits + 8) << "decimal digits should overshoot by a few bits only";
      const Real fresh;
      EXPECT_EQ(static_cast<unsigned>(mpfr_get_prec(raw(fresh))), got);
    }
    EXPECT_EQ(softcheck::oracle::current_bits(), before);
  }
}

TEST(PrecisionScope, Nests) {
  softcheck::oracle::PrecisionScope outer(300);
  const unsigned outer_bits = softcheck::oracle::current_bits();
  {
    softcheck::oracle::PrecisionScope inner(80);
    EXPECT_GE(softcheck::oracle::current_bits(), 80u);
    EXPECT_LT(softcheck::oracle::current_bits(), outer_bits);
  }
  EXPECT_EQ(softcheck::oracle::current_bits(), outer_bits);
}

TEST(ExactRow, CarriesExactlyTheRequestedPrecisionWhateverTheScope) {
  softcheck::oracle::PrecisionScope low(10);  // callers need no scope; a wrong one must not matter
  const std::vector<double> x = {0.5, -1.0, -inf, 3.0};
  for (unsigned bits : {24u, 64u, 256u, 300u, 512u}) {
    const ExactRow r = exact_row(x, 0.75, bits);
    ASSERT_EQ(r.status, RowStatus::ok);
    EXPECT_EQ(mpfr_get_prec(raw(r.lse)), static_cast<mpfr_prec_t>(bits));
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(mpfr_get_prec(raw(r.softmax[i])), static_cast<mpfr_prec_t>(bits));
      EXPECT_EQ(mpfr_get_prec(raw(r.log_softmax[i])), static_cast<mpfr_prec_t>(bits));
    }
  }
}

// ------------------------------------------------------------------ known values

TEST(ExactRow, ReferenceValuesToTheirDigits) {
  // REFERENCE.md, Entmax family "Known values": [-2, 0, 0.5] -> [0.0486, 0.3592, 0.5922].
  const ExactRow r = exact_row(std::vector<double>{-2, 0, 0.5});
  ASSERT_EQ(r.status, RowStatus::ok);
  const double expected[] = {0.0486, 0.3592, 0.5922};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(round_to(r.softmax[i], Format::f64), expected[i], 0.5e-4);
}

TEST(ExactRow, MatchesMpmathStrings) {
  struct Case {
    std::vector<double> x;
    double t;
    std::array<const char*, 3> softmax, log_softmax;
    const char* lse;
  };
  const Case cases[] = {
      {{3, 1, 0.2}, 1.0,  // mpmath
       {"0.83601880278144071652293844447263118653672050636016",
        "0.11314284146556012591847001064185299578157236094379",
        "0.05083835575299915755859154488551581768170713269605"},
       {"-0.17910417478500268581957907896784316179222973640819",
        "-2.1791041747850026858195790789678431617922297364082",
        "-2.9791041747850026747173488327162777575559130555"},
       "3.1791041747850026858195790789678431617922297364082"},
      {{-2, 0, 0.5}, 1.0,  // mpmath
       {"0.048610824031302264936047809827537778270639251074478",
        "0.35918810578253861803750542593205092857948252333882",
        "0.59220107018615911702644676424041129314987822558671"},
       {"-3.0239090561799076648975851705428256872989031132614",
        "-1.0239090561799076648975851705428256872989031132614",
        "-0.52390905617990766489758517054282568729890311326139"},
       "1.0239090561799076648975851705428256872989031132614"},
      {{1, 2, 3}, 0.7,  // mpmath, T = the double 0.7
       {"0.04427826918858725458822568187283407075352458707101",
        "0.18476143415029563713505787372011962264754841236409",
        "0.7709602966611171082767164444070463065989270005649"},
       {"-3.1172612597876020751403007427842541428854504218495",
        "-1.6886898312161734130812783244041226443025065178478",
        "-0.26011840264474475102225590602399114571956261384599"},
       "4.5458326883590307371993231611643856414683943258513"},
  };
  for (const Case& c : cases) {
    const ExactRow r = exact_row(c.x, c.t);
    ASSERT_EQ(r.status, RowStatus::ok);
    for (int i = 0; i < 3; ++i) {
      // The strings hold 46 to 50 significant digits.
      EXPECT_LT(rel_error(r.softmax[i], c.softmax[i]), 1e-44) << i;
      EXPECT_LT(rel_error(r.log_softmax[i], c.log_softmax[i]), 1e-44) << i;
    }
    EXPECT_LT(rel_error(r.lse, c.lse), 1e-44);
  }
}

TEST(ExactRow, LargeLogitsMatchClosedForm) {
  // softmax([1000, 1001, 1002]) = e^{-2} g, e^{-1} g, g with g = 1 / (1 + e^-1 + e^-2).
  const ExactRow r = exact_row(std::vector<double>{1000, 1001, 1002});
  ASSERT_EQ(r.status, RowStatus::ok);

  // Independent closed form in raw MPFR at 600 bits.
  Mp e1(600), e2(600), g(600), s0(600), s1(600), lse(600);
  mpfr_set_si(e1.v, -1, MPFR_RNDN);
  mpfr_exp(e1.v, e1.v, MPFR_RNDN);
  mpfr_sqr(e2.v, e1.v, MPFR_RNDN);
  mpfr_add(g.v, e1.v, e2.v, MPFR_RNDN);
  mpfr_add_ui(g.v, g.v, 1, MPFR_RNDN);
  mpfr_log(lse.v, g.v, MPFR_RNDN);
  mpfr_add_ui(lse.v, lse.v, 1002, MPFR_RNDN);
  mpfr_ui_div(g.v, 1, g.v, MPFR_RNDN);
  mpfr_mul(s0.v, g.v, e2.v, MPFR_RNDN);
  mpfr_mul(s1.v, g.v, e1.v, MPFR_RNDN);
  EXPECT_LT(rel_error(r.softmax[0], s0.v), 0x1p-250);
  EXPECT_LT(rel_error(r.softmax[1], s1.v), 0x1p-250);
  EXPECT_LT(rel_error(r.softmax[2], g.v), 0x1p-250);
  EXPECT_LT(rel_error(r.lse, lse.v), 0x1p-250);

  // The same closed form in long double (64-bit significand): a third opinion.
  const long double gl = 1.0L / (1.0L + std::exp(-1.0L) + std::exp(-2.0L));
  EXPECT_NEAR(static_cast<double>(gl), round_to(r.softmax[2], Format::f64), 1e-16);
  EXPECT_NEAR(static_cast<double>(gl * std::exp(-2.0L)), round_to(r.softmax[0], Format::f64), 1e-16);

  // mpmath strings.
  EXPECT_LT(rel_error(r.softmax[0], "0.090030573170380457998022101484491797867930864911467"), 1e-48);
  EXPECT_LT(rel_error(r.softmax[1], "0.24472847105479765247295961834076279719930007483797"), 1e-48);
  EXPECT_LT(rel_error(r.softmax[2], "0.66524095577482188952901828017474540493276906025056"), 1e-48);
  EXPECT_LT(rel_error(r.lse, "1002.4076059644443803044829199045450704514729471083"), 1e-48);
}

TEST(ExactRow, TinyTermsMatchDirectExp) {
  // [0, -1e5, -2e5]: the first output is 1 - ~e^-1e5, the others are far below
  // every format's range but exact in MPFR.
  const ExactRow r = exact_row(std::vector<double>{0, -1e5, -2e5});
  ASSERT_EQ(r.status, RowStatus::ok);
  Mp t1(600), t2(600), rest(600), s(600), want(600);
  mpfr_set_si(t1.v, -100000, MPFR_RNDN);
  mpfr_exp(t1.v, t1.v, MPFR_RNDN);
  mpfr_set_si(t2.v, -200000, MPFR_RNDN);
  mpfr_exp(t2.v, t2.v, MPFR_RNDN);
  mpfr_add(rest.v, t1.v, t2.v, MPFR_RNDN);
  mpfr_add_ui(s.v, rest.v, 1, MPFR_RNDN);

  mpfr_div(want.v, t1.v, s.v, MPFR_RNDN);
  EXPECT_LT(rel_error(r.softmax[1], want.v), 0x1p-250);
  mpfr_div(want.v, t2.v, s.v, MPFR_RNDN);
  EXPECT_LT(rel_error(r.softmax[2], want.v), 0x1p-250);
  // log_softmax_0 = -log1p(e^-1e5 + e^-2e5) ~ -3.56e-43430: relative accuracy
  // even though s = 1 + 3.56e-43430 rounds to 1 at any sane precision.
  mpfr_log1p(want.v, rest.v, MPFR_RNDN);
  mpfr_neg(want.v, want.v, MPFR_RNDN);
  EXPECT_LT(rel_error(r.log_softmax[0], want.v), 0x1p-250);
  mpfr_sub_ui(want.v, want.v, 100000, MPFR_RNDN);
  EXPECT_LT(rel_error(r.log_softmax[1], want.v), 0x1p-250);
  // mpmath: exp(-100000).
  EXPECT_LT(rel_error(r.softmax[1], "3.5629495653093731210711744187486523686087662221826e-43430"), 1e-48);
  EXPECT_EQ(round_to(r.softmax[0], Format::f64), 1.0);
  EXPECT_EQ(round_to(r.softmax[1], Format::f64), 0.0);
}

TEST(ExactRow, ExponentRangeIsWidenedInEveryThread) {
  // e^-1e9 ~ 2^-1.44e9 lies below MPFR's default exponent range (2^-(2^30)):
  // without widening it would be flushed to 0.
  auto check = [] {
    const ExactRow r = exact_row(std::vector<double>{0, -1e9});
    ASSERT_EQ(r.status, RowStatus::ok);
    ASSERT_TRUE(mpfr_regular_p(raw(r.softmax[1])));
    EXPECT_LT(mpfr_get_exp(raw(r.softmax[1])), -(1L << 30));
    // mpmath: exp(-1e9) / (1 + exp(-1e9)).
    EXPECT_LT(rel_error(r.softmax[1], "1.2495342719210132809243784990149910897645113791867e-434294482"),
              1e-48);
  };
  check();
  std::thread fresh(check);  // a new thread starts with MPFR's default range
  fresh.join();
}

// ------------------------------------------------------------------ identities

TEST(ExactRow, EqualEntriesGiveExactlyOneOverN) {
  for (unsigned n : {1u, 2u, 3u, 5u, 7u, 10u, 49u, 1000u}) {
    for (double v : {0.0, -0.0, 88.0, 1e300, -1e-300, -DBL_MAX}) {
      for (unsigned bits : {64u, 256u}) {
        const ExactRow r = exact_row(std::vector<double>(n, v), 1.0, bits);
        ASSERT_EQ(r.status, RowStatus::ok);
        Mp want(bits), log_n(bits + 64);
        mpfr_ui_div(want.v, 1, Mp(bits, static_cast<double>(n)).v, MPFR_RNDN);  // correctly rounded 1/n
        mpfr_set_ui(log_n.v, n, MPFR_RNDN);
        mpfr_log(log_n.v, log_n.v, MPFR_RNDN);
        for (unsigned i = 0; i < n; ++i) {
          EXPECT_TRUE(mpfr_equal_p(raw(r.softmax[i]), want.v)) << "n=" << n << " v=" << v;
          Mp sum(bits + 64);
          mpfr_add(sum.v, raw(r.log_softmax[i]), log_n.v, MPFR_RNDN);  // log_softmax = -log n
          EXPECT_LE(std::fabs(mpfr_get_d(sum.v, MPFR_RNDN)), std::ldexp(1.0, 2 - static_cast<int>(bits)) * 7);
        }
        EXPECT_EQ(round_to(r.softmax[0], Format::f64), 1.0 / n);  // IEEE division: correctly rounded
        EXPECT_EQ(round_to(r.softmax[0], Format::f32), static_cast<double>(1.0f / static_cast<float>(n)));
      }
    }
  }
}

TEST(ExactRow, LogSoftmaxIsLogitMinusLse) {
  for (const auto& x : hard_rows()) {
    for (double t : {1.0, 0.3, 7.0}) {
      const ExactRow r = exact_row(x, t);
      ASSERT_EQ(r.status, RowStatus::ok);
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i] == -inf) {
          EXPECT_TRUE(mpfr_inf_p(raw(r.log_softmax[i])) && mpfr_signbit(raw(r.log_softmax[i])));
          continue;
        }
        Mp z(600), want(600);  // z_i - lse, with z_i = x_i / T at 600 bits
        mpfr_set_d(z.v, x[i], MPFR_RNDN);
        mpfr_div_d(z.v, z.v, t, MPFR_RNDN);
        mpfr_sub(want.v, z.v, raw(r.lse), MPFR_RNDN);
        // lse carries 256 bits: the identity holds to 2^-250 of the larger term.
        Mp diff(64), scale(64);
        mpfr_sub(diff.v, raw(r.log_softmax[i]), want.v, MPFR_RNDN);
        Mp abs_lse(64);  // scale = max(|z_i|, |lse|, 1)
        mpfr_abs(abs_lse.v, raw(r.lse), MPFR_RNDN);
        mpfr_abs(scale.v, z.v, MPFR_RNDN);
        mpfr_max(scale.v, scale.v, abs_lse.v, MPFR_RNDN);
        mpfr_max(scale.v, scale.v, Mp(64, 1.0).v, MPFR_RNDN);
        mpfr_div(diff.v, diff.v, scale.v, MPFR_RNDN);
        EXPECT_LE(std::fabs(mpfr_get_d(diff.v, MPFR_RNDN)), 0x1p-250) << "row size " << x.size() << " i=" << i;
      }
    }
  }
}

TEST(ExactRow, SoftmaxSumsToOneAndIsExpOfLogSoftmax) {
  for (const auto& x : hard_rows()) {
    for (unsigned bits : {64u, 256u}) {
      const ExactRow r = exact_row(x, 1.0, bits);
      ASSERT_EQ(r.status, RowStatus::ok);
      std::vector<mpfr_ptr> terms;
      for (const Real& g : r.softmax) terms.push_back(const_cast<mpfr_ptr>(raw(g)));
      Mp sum(4 * bits), one(8, 1.0);
      mpfr_sum(sum.v, terms.data(), terms.size(), MPFR_RNDN);
      EXPECT_LE(rel_error(sum.v, one.v), std::ldexp(1.0, 8 - static_cast<int>(bits)));
      for (std::size_t i = 0; i < x.size(); ++i) {
        // exp turns log_softmax_i's absolute error (|log_softmax_i| times its
        // relative one) into a relative error of softmax_i.
        Mp e(2 * bits);
        mpfr_exp(e.v, raw(r.log_softmax[i]), MPFR_RNDN);
        const double size = std::max(1.0, std::fabs(mpfr_get_d(raw(r.log_softmax[i]), MPFR_RNDN)));
        EXPECT_LE(rel_error(r.softmax[i], e.v), size * std::ldexp(1.0, 8 - static_cast<int>(bits))) << i;
      }
    }
  }
}

TEST(ExactRow, ShiftInvariance) {
  // x + c with every x_i + c exact in double: softmax and log-softmax are
  // identical, lse moves by exactly c.
  const std::vector<std::vector<double>> rows = {
      {0.5, -1.25, 3.0, -inf}, {1000, 1001, 1002}, {0, -1e5, -2e5}, {-7.75, -7.5, -100.125}};
  for (const auto& x : rows) {
    for (double c : {1.0, -64.0, 1024.0, 0.25}) {
      std::vector<double> y;
      for (double v : x) {
        y.push_back(v + c);
        ASSERT_TRUE(!std::isfinite(v) || y.back() - c == v);
      }
      const ExactRow a = exact_row(x, 1.0), b = exact_row(y, 1.0);
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(mpfr_equal_p(raw(a.softmax[i]), raw(b.softmax[i])));
        EXPECT_TRUE(mpfr_equal_p(raw(a.log_softmax[i]), raw(b.log_softmax[i])) ||
                    (x[i] == -inf && mpfr_inf_p(raw(b.log_softmax[i]))));
      }
      Mp shifted(600);
      mpfr_add_d(shifted.v, raw(a.lse), c, MPFR_RNDN);
      EXPECT_LE(rel_error(b.lse, shifted.v), 0x1p-240);
    }
  }
}

TEST(ExactRow, PowerOfTwoTemperatureEqualsScaledInput) {
  const std::vector<std::vector<double>> rows = {{0.5, -1.25, 3.0, -inf}, {88, 89, 90}, {1e-300, 3e-300}};
  for (const auto& x : rows) {
    for (double t : {0.5, 2.0, 0.125, 1024.0}) {
      std::vector<double> scaled;
      for (double v : x) {
        scaled.push_back(v / t);
        ASSERT_TRUE(!std::isfinite(v) || scaled.back() * t == v);  // x / T exact
      }
      const ExactRow a = exact_row(x, t), b = exact_row(scaled, 1.0);
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(mpfr_equal_p(raw(a.softmax[i]), raw(b.softmax[i])));
        EXPECT_TRUE(mpfr_equal_p(raw(a.log_softmax[i]), raw(b.log_softmax[i])) || x[i] == -inf);
      }
      EXPECT_TRUE(mpfr_equal_p(raw(a.lse), raw(b.lse)));
    }
  }
}

TEST(ExactRow, SingleElement) {
  for (double v : {0.0, -3.5, 1e300, -1e-310}) {
    const ExactRow r = exact_row(std::vector<double>{v}, 0.5);
    ASSERT_EQ(r.status, RowStatus::ok);
    EXPECT_EQ(mpfr_cmp_ui(raw(r.softmax[0]), 1), 0);
    EXPECT_TRUE(mpfr_zero_p(raw(r.log_softmax[0])));
    EXPECT_EQ(mpfr_cmp_d(raw(r.lse), v * 2), 0);
  }
}

// ------------------------------------------------------------------ precision doubling

bool same_or_close(const Real& a, const Real& b, double tol) {
  if (mpfr_equal_p(raw(a), raw(b))) return true;  // also equal infinities and exact zeros
  return rel_error(a, b) <= tol;
}

TEST(ExactRow, PrecisionDoublingAgrees) {
  for (const auto& x : hard_rows()) {
    for (double t : {1.0, 0.3, 1e-3, 1e3}) {
      const ExactRow lo = exact_row(x, t, 256), hi = exact_row(x, t, 512);
      ASSERT_EQ(lo.status, RowStatus::ok);
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(same_or_close(lo.softmax[i], hi.softmax[i], 0x1p-250)) << "T=" << t << " i=" << i;
        EXPECT_TRUE(same_or_close(lo.log_softmax[i], hi.log_softmax[i], 0x1p-250)) << "T=" << t << " i=" << i;
        for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16}) {
          EXPECT_EQ(round_to(lo.softmax[i], f), round_to(hi.softmax[i], f));
          EXPECT_EQ(round_to(lo.log_softmax[i], f), round_to(hi.log_softmax[i], f));
        }
      }
      // lse = x_k / T + log s may cancel: absolute error ~ 2^-256 (|x_k / T| + log s).
      Mp scale(64);
      mpfr_abs(scale.v, raw(hi.lse), MPFR_RNDN);
      mpfr_add_d(scale.v, scale.v, 2 * std::fabs(*std::max_element(x.begin(), x.end()) / t) + 1, MPFR_RNDN);
      Mp diff(64);
      mpfr_sub(diff.v, raw(lo.lse), raw(hi.lse), MPFR_RNDN);
      mpfr_div(diff.v, diff.v, scale.v, MPFR_RNDN);
      EXPECT_LE(std::fabs(mpfr_get_d(diff.v, MPFR_RNDN)), 0x1p-250);
    }
  }
}

// ------------------------------------------------------------------ special values

TEST(ExactRow, MaskedEntriesAreExactlyZeroAndMinusInf) {
  const ExactRow r = exact_row(std::vector<double>{-inf, 1.0, -inf, 1.0});
  ASSERT_EQ(r.status, RowStatus::ok);
  for (int i : {0, 2}) {
    EXPECT_TRUE(mpfr_zero_p(raw(r.softmax[i])));
    EXPECT_TRUE(mpfr_inf_p(raw(r.log_softmax[i])) && mpfr_signbit(raw(r.log_softmax[i])));
  }
  for (int i : {1, 3}) EXPECT_EQ(mpfr_cmp_d(raw(r.softmax[i]), 0.5), 0);  // like dropping the masked entries
  // REFERENCE.md (entmax tests): -inf entries give the same result as dropping them.
  const ExactRow dropped = exact_row(std::vector<double>{1.0, 1.0});
  EXPECT_TRUE(mpfr_equal_p(raw(r.lse), raw(dropped.lse)));
}

TEST(ExactRow, AllMaskedRow) {
  for (std::size_t n : {1u, 2u, 17u}) {
    const ExactRow r = exact_row(std::vector<double>(n, -inf));
    EXPECT_EQ(r.status, RowStatus::all_masked);
    EXPECT_TRUE(r.softmax.empty());
    EXPECT_TRUE(r.log_softmax.empty());
    EXPECT_TRUE(mpfr_inf_p(raw(r.lse)) && mpfr_signbit(raw(r.lse)));
  }
}

TEST(ExactRow, PlusInfOrNanIsUndefined) {
  const std::vector<std::vector<double>> rows = {
      {1.0, inf}, {nan}, {-inf, inf}, {-inf, nan, -inf}, {0.0, -nan}, {inf, inf}};
  for (const auto& x : rows) {
    const ExactRow r = exact_row(x);
    EXPECT_EQ(r.status, RowStatus::undefined);
    EXPECT_TRUE(r.softmax.empty());
    EXPECT_TRUE(r.log_softmax.empty());
    EXPECT_TRUE(mpfr_nan_p(raw(r.lse)));
  }
}

TEST(ExactRow, RejectsBadArguments) {
  const std::vector<double> x = {1.0, 2.0};
  for (double t : {0.0, -0.0, -1.0, inf, -inf, nan})
    EXPECT_THROW(exact_row(x, t), std::invalid_argument) << t;
  EXPECT_THROW(exact_row(std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW(exact_row(std::vector<double>{}, -1.0), std::invalid_argument);
  EXPECT_THROW(exact_row(x, 1.0, 0), std::invalid_argument);
  EXPECT_NO_THROW(exact_row(x, DBL_MIN * DBL_EPSILON));  // the smallest positive temperature
}

// Entropy: known values, and the definition -sum p log p evaluated
// independently (MPFR at 4096 bits, straight from x) on rows where the
// oracle's shift-free form and the definition take different paths.
TEST(ExactRow, EntropyKnownValues) {
  // Uniform rows: H = log n exactly, whatever the common value and T.
  for (double n : {1.0, 2.0, 7.0, 1000.0}) {
    const std::vector<double> x(static_cast<std::size_t>(n), -3.25);
    const ExactRow e = exact_row(x, 0.7);
    EXPECT_EQ(round_to(e.entropy, Format::f64), std::log(n)) << n;
  }
  // One finite entry among masks: p = (1, 0, ...), H = 0 exactly.
  EXPECT_EQ(round_to(exact_row(std::vector<double>{-inf, 5.0, -inf}).entropy, Format::f64), 0.0);
  // Two entries d apart: p = 1 / (1 + e^-d), H = log(1 + e^-d) + d e^-d / (1 + e^-d).
  const double d = 3.0;
  const double h2 = std::log1p(std::exp(-d)) + d * std::exp(-d) / (1 + std::exp(-d));
  EXPECT_NEAR(round_to(exact_row(std::vector<double>{d, 0.0}).entropy, Format::f64), h2, 4e-16);
  // A fully masked row has no entropy (NaN); lse is log 0 = -inf.
  const ExactRow masked = exact_row(std::vector<double>{-inf, -inf});
  EXPECT_TRUE(std::isnan(round_to(masked.entropy, Format::f64)));
  EXPECT_EQ(round_to(masked.lse, Format::f64), -inf);
}

TEST(ExactRow, EntropyMatchesTheDefinition) {
  const std::vector<std::vector<double>> rows = {
      {1, 2, 3}, {0.5, -inf, 1e-3, 17, -40}, {1e3, 1e3 - 1e-9, -1e3}, {-700, -710, -705.5, 0x1p-30}};
  for (const auto& x : rows)
    for (double t : {1.0, 0.37, 25.0}) {
      const ExactRow e = exact_row(x, t, 600);
      // The definition at 4096 bits straight from x: log p_i = z_i - lse by
      // subtraction (log of a rounded p_i ~ 1 - 1e-304 would lose its term).
      constexpr mpfr_prec_t w = 4096;  // resolves p_k = 1 - e^-1892 of the last row at T = 0.37
      Mp lse(w), z(w), sum(w, 0.0), h(w, 0.0), term(w), lg(w);
      for (double v : x) {
        if (std::isinf(v)) continue;
        mpfr_set_d(z.v, v, MPFR_RNDN);
        mpfr_div_d(z.v, z.v, t, MPFR_RNDN);
        mpfr_exp(term.v, z.v, MPFR_RNDN);
        mpfr_add(sum.v, sum.v, term.v, MPFR_RNDN);
      }
      mpfr_log(lse.v, sum.v, MPFR_RNDN);
      for (double v : x) {
        if (std::isinf(v)) continue;  // 0 log 0 = 0
        mpfr_set_d(z.v, v, MPFR_RNDN);
        mpfr_div_d(z.v, z.v, t, MPFR_RNDN);
        mpfr_sub(lg.v, z.v, lse.v, MPFR_RNDN);  // log p_i
        mpfr_exp(term.v, lg.v, MPFR_RNDN);
        mpfr_mul(term.v, term.v, lg.v, MPFR_RNDN);
        mpfr_sub(h.v, h.v, term.v, MPFR_RNDN);
      }
      // Relative difference below 2^-500: both are exact to far more than any format.
      mpfr_sub(term.v, h.v, raw(e.entropy), MPFR_RNDN);
      mpfr_abs(term.v, term.v, MPFR_RNDN);
      mpfr_mul_2si(lg.v, h.v, -500, MPFR_RNDN);
      EXPECT_LE(mpfr_cmp(term.v, lg.v), 0) << x[0] << " T=" << t;
      // Shift invariance: exact_row subtracts the max before dividing by T.
      std::vector<double> shifted = x;
      for (double& v : shifted) v += 0x1p-2;  // exact for these magnitudes
      const ExactRow es = exact_row(shifted, t, 600);
      EXPECT_EQ(round_to(es.entropy, Format::f64), round_to(e.entropy, Format::f64));
    }
}

// exact_row computes each distinct entry once and copies its outputs to the
// repeats: every output of a row with repeats (of the max, of -inf, +0 and
// -0, before and after the max) must still be its definition's value, and
// the row's outputs must not depend on which copy comes first.
TEST(ExactRow, RepeatedEntriesKeepTheirDefinitionsValues) {
  std::vector<std::vector<double>> rows = {
      {-1, 3, -1, 0.5, 3, -inf, -1, -inf, 3, 0.5}, {-0.0, 0.0, -0.0, 0.0, 0x1p-1074}, {7, 7, 7, -3}};
  std::vector<double> ties;
  for (int i = 0; i < 300; ++i) ties.push_back(static_cast<double>((i * 7919) % 3 - 1) * 2.5);
  rows.push_back(ties);
  constexpr unsigned bits = 200;
  for (const auto& x : rows)
    for (double t : {1.0, 0.3}) {
      const ExactRow e = exact_row(x, t, bits);
      ASSERT_EQ(e.status, RowStatus::ok);
      // The definition at 2048 bits, each entry on its own: p_i = exp(z_i - lse).
      constexpr mpfr_prec_t w = 2048;
      Mp z(w), sum(w, 0.0), term(w), lse(w), lg(w), diff(w), h(w, 0.0);
      for (double v : x) {
        mpfr_set_d(z.v, v, MPFR_RNDN);
        mpfr_div_d(z.v, z.v, t, MPFR_RNDN);
        mpfr_exp(term.v, z.v, MPFR_RNDN);
        mpfr_add(sum.v, sum.v, term.v, MPFR_RNDN);
      }
      mpfr_log(lse.v, sum.v, MPFR_RNDN);
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::isinf(x[i])) {
          EXPECT_TRUE(mpfr_zero_p(raw(e.softmax[i])) && mpfr_inf_p(raw(e.log_softmax[i]))) << i;
          continue;
        }
        mpfr_set_d(z.v, x[i], MPFR_RNDN);
        mpfr_div_d(z.v, z.v, t, MPFR_RNDN);
        mpfr_sub(lg.v, z.v, lse.v, MPFR_RNDN);  // log p_i
        mpfr_exp(term.v, lg.v, MPFR_RNDN);      // p_i
        EXPECT_LE(rel_error(e.softmax[i], term.v), std::ldexp(1.0, 4 - static_cast<int>(bits))) << "i=" << i << " T=" << t;
        mpfr_sub(diff.v, raw(e.log_softmax[i]), lg.v, MPFR_RNDN);
        EXPECT_LE(std::fabs(mpfr_get_d(diff.v, MPFR_RNDN)), std::ldexp(std::max(1.0, std::fabs(mpfr_get_d(lg.v, MPFR_RNDN))), 4 - static_cast<int>(bits)))
            << "i=" << i << " T=" << t;
        mpfr_mul(term.v, term.v, lg.v, MPFR_RNDN);
        mpfr_sub(h.v, h.v, term.v, MPFR_RNDN);
      }
      mpfr_sub(diff.v, raw(e.entropy), h.v, MPFR_RNDN);
      EXPECT_LE(std::fabs(mpfr_get_d(diff.v, MPFR_RNDN)), std::ldexp(std::max(1.0, mpfr_get_d(h.v, MPFR_RNDN)), 4 - static_cast<int>(bits)));
      // Reversed, each repeat's first copy changes: the same values, bit for bit.
      const std::vector<double> rx(x.rbegin(), x.rend());
      const ExactRow r = exact_row(rx, t, bits);
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(mpfr_equal_p(raw(e.softmax[i]), raw(r.softmax[x.size() - 1 - i])) || mpfr_zero_p(raw(e.softmax[i]))) << i;
        EXPECT_TRUE(mpfr_equal_p(raw(e.log_softmax[i]), raw(r.log_softmax[x.size() - 1 - i])) ||
                    mpfr_inf_p(raw(e.log_softmax[i])))
            << i;
      }
      EXPECT_TRUE(mpfr_equal_p(raw(e.entropy), raw(r.entropy)));
      EXPECT_TRUE(mpfr_equal_p(raw(e.lse), raw(r.lse)));
    }
}

TEST(ExactRow, ExactValuesFollowTheOutputKind) {
  const ExactRow e = exact_row(std::vector<double>{1, 2, 3});
  using softcheck::OutputKind;
  EXPECT_EQ(softcheck::oracle::exact_values(e, OutputKind::probabilities).size(), 3u);
  EXPECT_EQ(softcheck::oracle::exact_values(e, OutputKind::log_probabilities).data(), e.log_softmax.data());
  EXPECT_EQ(softcheck::oracle::exact_values(e, OutputKind::log_sum_exp).data(), &e.lse);
  EXPECT_EQ(softcheck::oracle::exact_values(e, OutputKind::entropy).data(), &e.entropy);
}

// x_i - x_k on an f32 or f64 midpoint with log s = log1p(e^-256) ~ 7e-112,
// below 2^-bits of it: the exact log-softmax lies just past the midpoint and
// rounds away from it, to the odd neighbour, which rounding to nearest at
// `bits` would have lost (it lands on the midpoint and ties to even, to 256).
// The lse of an x_k on an f32 midpoint (a double), likewise just above it.
TEST(ExactRow, LogSoftmaxAndLseBesideAMidpointRoundAsTheExactValues) {
  for (const unsigned bits : {64u, 256u}) {
    // f32: -256 - 2^-16 is a double; f64: -256 - 2^-45 = -256 - x_k with x_k = 2^-45.
    const ExactRow f32 = exact_row(std::vector<double>{0.0, -(256.0 + 0x1p-16)}, 1.0, bits);
    EXPECT_EQ(round_to(f32.log_softmax[1], Format::f32), -(256.0 + 0x1p-15)) << bits;
    const ExactRow f64 = exact_row(std::vector<double>{0x1p-45, -256.0}, 1.0, bits);
    EXPECT_EQ(round_to(f64.log_softmax[1], Format::f64), -(256.0 + 0x1p-44)) << bits;
    const ExactRow lse = exact_row(std::vector<double>{256.0 + 0x1p-16, 0.0}, 1.0, bits);
    EXPECT_EQ(round_to(lse.lse, Format::f32), 256.0 + 0x1p-15) << bits;
  }
}

TEST(ExactRow, StatusNames) {
  EXPECT_EQ(softcheck::oracle::name(RowStatus::ok), "ok");
  EXPECT_EQ(softcheck::oracle::name(RowStatus::all_masked), "all_masked");
  EXPECT_EQ(softcheck::oracle::name(RowStatus::undefined), "undefined");
}

TEST(ExactRow, ConcurrentThreadsMatchSerial) {
  const auto rows = hard_rows();
  const unsigned precisions[] = {64, 256, 113, 512};
  std::vector<std::vector<ExactRow>> serial(4);
  for (int k = 0; k < 4; ++k)
    for (const auto& x : rows) serial[k].push_back(exact_row(x, 0.3, precisions[k]));
  std::vector<std::vector<ExactRow>> parallel(4);
  const unsigned saved_digits = Real::default_precision();  // Boost 1.74: scopes race on a global
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      softcheck::oracle::PrecisionScope scope(precisions[k]);  // racing scopes must not matter
      for (int rep = 0; rep < 3; ++rep) {
        parallel[k].clear();
        for (const auto& x : rows) parallel[k].push_back(exact_row(x, 0.3, precisions[k]));
      }
    });
  for (auto& t : threads) t.join();
  Real::default_precision(saved_digits);
  for (int k = 0; k < 4; ++k)
    for (std::size_t j = 0; j < rows.size(); ++j)
      for (std::size_t i = 0; i < rows[j].size(); ++i) {
        EXPECT_TRUE(mpfr_equal_p(raw(serial[k][j].softmax[i]), raw(parallel[k][j].softmax[i])));
        EXPECT_EQ(mpfr_get_prec(raw(parallel[k][j].softmax[i])), static_cast<mpfr_prec_t>(precisions[k]));
      }
}

// ------------------------------------------------------------------ round_to

// Expected rounding of a value strictly between two neighbours lo < hi of the format.
struct Boundary {
  double lo, hi;  // consecutive values of the format (hi may be 2^(emax+1): inf)
  double even;    // the one with an even last significand bit
};

// The value just off the midpoint by `offset` units of the midpoint's gap.
Real midpoint_plus(const Boundary& b, double offset_units, mpfr_prec_t bits = 256) {  // 53 + 1 + 150 bits needed
  Mp m(bits), gap(bits);
  mpfr_set_d(m.v, b.lo, MPFR_RNDN);
  mpfr_set_d(gap.v, b.hi, MPFR_RNDN);
  mpfr_sub(gap.v, gap.v, m.v, MPFR_RNDN);
  mpfr_add(m.v, m.v, gap.v, MPFR_RNDN);
  mpfr_add_d(m.v, m.v, b.lo, MPFR_RNDN);
  mpfr_div_2ui(m.v, m.v, 1, MPFR_RNDN);  // (lo + hi) / 2, exact
  mpfr_mul_d(gap.v, gap.v, offset_units, MPFR_RNDN);
  mpfr_add(m.v, m.v, gap.v, MPFR_RNDN);
  return to_real(m.v);
}

void expect_boundary(const Boundary& b, Format f, const char* what) {
  const double hi = std::fabs(b.hi) > softcheck::max_finite(f) ? std::copysign(inf, b.hi) : b.hi;
  const double even = std::fabs(b.even) > softcheck::max_finite(f) ? std::copysign(inf, b.even) : b.even;
  EXPECT_EQ(round_to(midpoint_plus(b, 0), f), even) << what << " lo=" << b.lo;
  EXPECT_EQ(round_to(midpoint_plus(b, 0x1p-150), f), hi) << what << " lo=" << b.lo;
  EXPECT_EQ(round_to(midpoint_plus(b, -0x1p-150), f), b.lo) << what << " lo=" << b.lo;
  EXPECT_EQ(round_to(midpoint_plus(b, 0.25), f), hi) << what;
  EXPECT_EQ(round_to(midpoint_plus(b, -0.25), f), b.lo) << what;
  EXPECT_EQ(round_to(real_of(b.lo), f), b.lo) << what;  // values of the format are fixed points
}

std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }

TEST(RoundTo, F32BoundariesMatchHardwareAndMpfr) {
  std::uint64_t s = 99;
  auto next_random = [&s] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(s >> 33);
  };
  int checked = 0;
  for (std::uint32_t exponent = 0; exponent < 255; ++exponent) {
    std::vector<std::uint32_t> mantissas = {0, 1, 2, 3, 0x400000, 0x7FFFFE, 0x7FFFFF};
    for (int r = 0; r < 8; ++r) mantissas.push_back(next_random() & 0x7FFFFF);
    for (std::uint32_t m : mantissas) {
      for (std::uint32_t sign : {0u, 0x80000000u}) {
        const float lo = std::bit_cast<float>(sign | exponent << 23 | m);
        // The neighbour away from zero; past FLT_MAX it is 2^128 (overflow).
        const double hi = lo == FLT_MAX || lo == -FLT_MAX ? std::copysign(0x1p128, lo)
                                                          : std::nextafter(lo, std::copysign(INFINITY, lo));
        const double even = (bits_of(lo) & 1) == 0 ? lo : hi;
        expect_boundary({lo, hi, even}, Format::f32, "f32");
        // Independent references: the hardware double -> float conversion of
        // exact doubles (midpoint +- 2^-28 of the gap fits in 53 bits), and
        // MPFR's own conversion of the 200-bit value.
        for (double off : {0.0, 0x1p-28, -0x1p-28, 0x1p-150, -0x1p-150}) {
          const Real v = midpoint_plus({lo, hi, even}, off);
          const double mine = round_to(v, Format::f32);
          EXPECT_EQ(mine, static_cast<double>(mpfr_get_flt(raw(v), MPFR_RNDN)));
          if (std::fabs(off) > 0x1p-40) {
            const volatile double exact = mpfr_get_d(raw(v), MPFR_RNDN);
            Mp back(256, exact);
            ASSERT_TRUE(mpfr_equal_p(back.v, raw(v)));  // exactly a double
            EXPECT_EQ(mine, static_cast<double>(static_cast<float>(exact)));
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 30000);
}

TEST(RoundTo, F64BoundariesTieToEven) {
  std::uint64_t s = 7;
  for (int r = 0; r < 4000; ++r) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    std::uint64_t pattern = s & 0x7FFFFFFFFFFFFFFFULL;
    if (r < 8) pattern = std::array<std::uint64_t, 8>{0, 1, 2, 3, 0x000FFFFFFFFFFFFFULL, 0x0010000000000000ULL,
                                                      0x3FF0000000000000ULL, 0x7FEFFFFFFFFFFFFEULL}[r];
    if ((pattern >> 52) == 0x7FF || pattern == 0x7FEFFFFFFFFFFFFFULL) continue;  // overflow: its own test
    for (std::uint64_t sign : {0ULL, 0x8000000000000000ULL}) {
      const double lo = std::bit_cast<double>(sign | pattern);
      const double hi = std::nextafter(lo, std::copysign(INFINITY, lo));
      const double even = (std::bit_cast<std::uint64_t>(lo) & 1) == 0 ? lo : hi;
      expect_boundary({lo, hi, even}, Format::f64, "f64");
      const Real v = midpoint_plus({lo, hi, even}, 0x1p-100);
      EXPECT_EQ(round_to(v, Format::f64), mpfr_get_d(raw(v), MPFR_RNDN));
    }
  }
}

TEST(RoundTo, F16ExhaustiveAgainstFloat16) {
  // GCC's _Float16 conversion from double (libgcc soft-fp) is a single correct
  // rounding: an independent reference for every f16 boundary.
  for (std::uint32_t pattern = 0; pattern < 0x7C00; ++pattern) {
    for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
      const auto h = std::bit_cast<_Float16>(static_cast<std::uint16_t>(sign | pattern));
      const double lo = static_cast<double>(h);
      const double hi = pattern == 0x7BFF ? std::copysign(65536.0, lo)
                                          : static_cast<double>(std::bit_cast<_Float16>(
                                                static_cast<std::uint16_t>(sign | (pattern + 1))));
      const double even = (pattern & 1) == 0 ? lo : hi;
      expect_boundary({lo, hi, even}, Format::f16, "f16");
      for (double off : {0.0, 0x1p-30, -0x1p-30}) {
        const Real v = midpoint_plus({lo, hi, even}, off);
        const volatile double exact = mpfr_get_d(raw(v), MPFR_RNDN);
        EXPECT_EQ(round_to(v, Format::f16), static_cast<double>(static_cast<_Float16>(exact)));
      }
    }
  }
}

// bf16 from an exact float: round to nearest even on the top 16 bits.
double bf16_by_bits(float v) {
  const std::uint32_t b = bits_of(v);
  return static_cast<double>(std::bit_cast<float>((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u));
}

TEST(RoundTo, Bf16ExhaustiveAgainstBitRounding) {
  for (std::uint32_t pattern = 0; pattern < 0x7F80; ++pattern) {
    for (std::uint32_t sign : {0u, 0x8000u}) {
      const double lo = static_cast<double>(std::bit_cast<float>((sign | pattern) << 16));
      const double hi = pattern == 0x7F7F ? std::copysign(0x1p128, lo)
                                          : static_cast<double>(std::bit_cast<float>((sign | (pattern + 1)) << 16));
      const double even = (pattern & 1) == 0 ? lo : hi;
      expect_boundary({lo, hi, even}, Format::bf16, "bf16");
      for (double off : {0.0, 0x1p-12, -0x1p-12}) {  // exact floats: 8 + 1 + 12 bits
        const Real v = midpoint_plus({lo, hi, even}, off);
        const float exact = mpfr_get_flt(raw(v), MPFR_RNDN);
        Mp back(256);
        mpfr_set_flt(back.v, exact, MPFR_RNDN);
        ASSERT_TRUE(mpfr_equal_p(back.v, raw(v)));
        EXPECT_EQ(round_to(v, Format::bf16), bf16_by_bits(exact));
      }
    }
  }
}

TEST(RoundTo, SubnormalTiesToEven) {
  for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16}) {
    const double dm = softcheck::denorm_min(f);
    for (int k = 0; k < 12; ++k) {
      // (k + 1/2) dm is a tie between k dm and (k + 1) dm: the even multiple wins.
      Mp v(200, static_cast<double>(k) + 0.5);
      mpfr_mul_d(v.v, v.v, dm, MPFR_RNDN);
      const double even = (k % 2 == 0 ? k : k + 1) * dm;
      EXPECT_EQ(round_to(to_real(v.v), f), even) << softcheck::name(f) << " k=" << k;
      mpfr_neg(v.v, v.v, MPFR_RNDN);
      EXPECT_EQ(round_to(to_real(v.v), f), -even);
      EXPECT_TRUE(std::signbit(round_to(to_real(v.v), f)));  // -dm/2 -> -0
    }
    // Far below the range: signed zero.
    Mp tiny(64, dm);
    mpfr_div_2ui(tiny.v, tiny.v, 1000, MPFR_RNDN);
    EXPECT_EQ(round_to(to_real(tiny.v), f), 0.0);
    EXPECT_FALSE(std::signbit(round_to(to_real(tiny.v), f)));
    mpfr_neg(tiny.v, tiny.v, MPFR_RNDN);
    EXPECT_TRUE(std::signbit(round_to(to_real(tiny.v), f)));
    // Just above half of denorm_min: up to denorm_min.
    Mp above(300, dm);
    mpfr_div_2ui(above.v, above.v, 1, MPFR_RNDN);
    mpfr_nextabove(above.v);
    EXPECT_EQ(round_to(to_real(above.v), f), dm);
  }
}

TEST(RoundTo, OverflowThresholds) {
  struct Case {
    Format f;
    double max, half_ulp;
  };
  const Case cases[] = {
      {Format::f64, DBL_MAX, 0x1p970},
      {Format::f32, FLT_MAX, 0x1p103},
      {Format::f16, 65504.0, 16.0},  // 65520 is the f16 overflow threshold
      {Format::bf16, 0x1.FEp127, 0x1p119},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(softcheck::max_finite(c.f), c.max);
    Mp t(300, c.max);
    mpfr_add_d(t.v, t.v, c.half_ulp, MPFR_RNDN);  // max + ulp/2: a tie, to even = 2^(emax+1) = inf
    EXPECT_EQ(round_to(to_real(t.v), c.f), inf) << softcheck::name(c.f);
    mpfr_nextbelow(t.v);
    EXPECT_EQ(round_to(to_real(t.v), c.f), c.max) << softcheck::name(c.f);
    mpfr_neg(t.v, t.v, MPFR_RNDN);
    EXPECT_EQ(round_to(to_real(t.v), c.f), -c.max);
    mpfr_set_d(t.v, c.max, MPFR_RNDN);
    mpfr_mul_2ui(t.v, t.v, 100000, MPFR_RNDN);  // far past any double
    EXPECT_EQ(round_to(to_real(t.v), c.f), inf);
    mpfr_neg(t.v, t.v, MPFR_RNDN);
    EXPECT_EQ(round_to(to_real(t.v), c.f), -inf);
  }
  EXPECT_EQ(round_to(real_of(65520.0), Format::f16), inf);
  EXPECT_EQ(round_to(real_of(65519.99), Format::f16), 65504.0);
}

TEST(RoundTo, KnownF16AndBf16Values) {
  Mp third(256);
  mpfr_set_ui(third.v, 1, MPFR_RNDN);
  mpfr_div_ui(third.v, third.v, 3, MPFR_RNDN);
  // f16 0x3555: 2^-2 (1 + 0x155 / 1024) = 1365 / 4096.
  EXPECT_EQ(round_to(to_real(third.v), Format::f16), 0.333251953125);
  // bf16 0x3EAB: 2^-2 (1 + 0x2B / 128) = 171 / 512.
  EXPECT_EQ(round_to(to_real(third.v), Format::bf16), 0.333984375);
  EXPECT_EQ(round_to(to_real(third.v), Format::f32), static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(round_to(to_real(third.v), Format::f64), 1.0 / 3.0);
  Mp tenth(256, "0.1");
  EXPECT_EQ(round_to(to_real(tenth.v), Format::f16), 0.0999755859375);  // 0x2E66 = 1638.4 -> 1638 / 16384
  Mp pi(256);
  mpfr_const_pi(pi.v, MPFR_RNDN);
  EXPECT_EQ(round_to(to_real(pi.v), Format::bf16), 3.140625);  // 0x4049
  EXPECT_EQ(round_to(to_real(pi.v), Format::f16), 3.140625);   // 0x4248
  EXPECT_EQ(round_to(to_real(pi.v), Format::f64), std::numbers::pi);
  EXPECT_EQ(round_to(real_of(0x1p-24), Format::f16), 0x1p-24);  // f16 denorm_min
  EXPECT_EQ(round_to(real_of(0x1p-25), Format::f16), 0.0);      // its half: tie to 0
}

TEST(RoundTo, SpecialsAndSignedZero) {
  for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16}) {
    EXPECT_TRUE(std::isnan(round_to(real_of(nan), f)));
    EXPECT_EQ(round_to(real_of(inf), f), inf);
    EXPECT_EQ(round_to(real_of(-inf), f), -inf);
    EXPECT_EQ(round_to(real_of(0.0), f), 0.0);
    EXPECT_FALSE(std::signbit(round_to(real_of(0.0), f)));
    EXPECT_TRUE(std::signbit(round_to(real_of(-0.0), f)));
    EXPECT_EQ(round_to(real_of(1.0), f), 1.0);
    EXPECT_EQ(round_to(real_of(-2.5), f), -2.5);
  }
}

// ------------------------------------------------------------------ ulp

double ulp_d(double v, Format f) { return mpfr_get_d(raw(softcheck::oracle::ulp(real_of(v), f)), MPFR_RNDN); }

TEST(Ulp, DocumentedValues) {
  EXPECT_EQ(ulp_d(1.0, Format::f32), 0x1p-23);
  EXPECT_EQ(ulp_d(1.0, Format::f64), DBL_EPSILON);
  EXPECT_EQ(ulp_d(1.0, Format::f16), 0x1p-10);
  EXPECT_EQ(ulp_d(1.0, Format::bf16), 0x1p-7);
  EXPECT_EQ(ulp_d(0.75, Format::f32), 0x1p-24);
  EXPECT_EQ(ulp_d(-1.5, Format::f32), 0x1p-23);
  // Subnormal range and zero: denorm_min.
  EXPECT_EQ(ulp_d(1e-40, Format::f32), 0x1p-149);
  EXPECT_EQ(ulp_d(0x1p-127, Format::f32), 0x1p-149);
  EXPECT_EQ(ulp_d(0x1p-126, Format::f32), 0x1p-149);  // smallest normal: same quantum
  EXPECT_EQ(ulp_d(0.0, Format::f32), 0x1p-149);
  EXPECT_EQ(ulp_d(1e-6, Format::f16), 0x1p-24);
  EXPECT_EQ(ulp_d(1e-320, Format::f64), 0x1p-1074);
  EXPECT_EQ(ulp_d(1e-42, Format::bf16), 0x1p-133);
  // Past the largest binade: the ulp of max_finite.
  EXPECT_EQ(ulp_d(FLT_MAX, Format::f32), 0x1p104);
  EXPECT_EQ(ulp_d(1e39, Format::f32), 0x1p104);
  EXPECT_EQ(ulp_d(1e300, Format::f32), 0x1p104);
  EXPECT_EQ(ulp_d(inf, Format::f32), 0x1p104);
  EXPECT_EQ(ulp_d(70000.0, Format::f16), 32.0);
  EXPECT_TRUE(std::isnan(ulp_d(nan, Format::f32)));
}

TEST(Ulp, MatchesNextafterGaps) {
  std::uint64_t s = 3;
  for (int r = 0; r < 20000; ++r) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double d = std::bit_cast<double>(s & 0x7FEFFFFFFFFFFFFFULL);
    if (d != 0 && d < DBL_MAX) {
      EXPECT_EQ(ulp_d(d, Format::f64), std::nextafter(d, INFINITY) - d) << d;
    }
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(s >> 33) & 0x7F7FFFFFu);
    if (x != 0 && x < FLT_MAX) {
      EXPECT_EQ(ulp_d(x, Format::f32), static_cast<double>(std::nextafter(x, INFINITY) - x)) << x;
    }
  }
}

TEST(Ulp, KeepsThePrecisionOfItsArgument) {
  const Real v = real_of(3.0, 333);
  EXPECT_EQ(mpfr_get_prec(raw(softcheck::oracle::ulp(v, Format::f32))), 333);
}

// ------------------------------------------------------------------ to_string

TEST(ToString, MatchesPrintfForDoubles) {
  // glibc's printf rounds exactly (ties to even): an independent reference.
  const double values[] = {1.0, 0.1, 1.0 / 3, 0.125, 2.5, 1e300, -1e-300, 4.9406564584124654e-324,
                           DBL_MAX, -123456.789, 0.5922, 9.9999999e-5, 65504.0};
  char want[64];
  for (double v : values)
    for (int digits = 1; digits <= 20; ++digits) {
      std::snprintf(want, sizeof want, "%.*e", digits - 1, v);
      EXPECT_EQ(softcheck::oracle::to_string(real_of(v), digits), want) << v << " " << digits;
    }
}

TEST(ToString, SpecialValuesAndHighPrecision) {
  EXPECT_EQ(softcheck::oracle::to_string(real_of(0.0), 4), "0.000e+00");
  EXPECT_EQ(softcheck::oracle::to_string(real_of(-0.0), 1), "-0e+00");
  EXPECT_EQ(softcheck::oracle::to_string(real_of(inf), 5), "inf");
  EXPECT_EQ(softcheck::oracle::to_string(real_of(-inf), 5), "-inf");
  EXPECT_EQ(softcheck::oracle::to_string(real_of(nan), 5), "nan");
  EXPECT_THROW(softcheck::oracle::to_string(real_of(1.0), 0), std::invalid_argument);
  Mp third(256);
  mpfr_set_ui(third.v, 2, MPFR_RNDN);
  mpfr_div_ui(third.v, third.v, 3, MPFR_RNDN);
  EXPECT_EQ(softcheck::oracle::to_string(to_real(third.v), 40), "6." + std::string(38, '6') + "7e-01");
  const ExactRow r = exact_row(std::vector<double>{0, -1e5});
  EXPECT_EQ(softcheck::oracle::to_string(r.softmax[1], 5), "3.5629e-43430");  // mpmath: 3.56294956...e-43430
}

}  // namespace
