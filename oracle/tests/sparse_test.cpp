// Tests of the sparse oracle (sparse_oracle.hpp): the published known values
// (REFERENCE.md, "Entmax family"), identities between the algorithms
// (alpha = 2 <-> sparsemax, alpha = 1.5 bisection <-> exact entmax15,
// alpha -> 1 -> softmax), sum to one, tau consistency recomputed independently,
// precision doubling, invariances, -inf dropping, tie rules and bad input.
// The only figures written here are the published known values; everything
// else is compared with another computation.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "softcheck/sparse_oracle.hpp"
#include "softcheck/test_values.hpp"
#include "mpfr_scratch.hpp"

namespace {

using namespace softcheck::oracle;

using softcheck::test_values::inf;
using softcheck::test_values::nan;

using softcheck::oracle::testing::Mp;
using softcheck::oracle::testing::raw;

double to_d(const Real& r) { return mpfr_get_d(raw(r), MPFR_RNDN); }

// |a - b| in double (0 for equal values).
double abs_diff(const Real& a, const Real& b) {
  Mp d(64);
  mpfr_sub(d.v, raw(a), raw(b), MPFR_RNDN);
  return std::fabs(mpfr_get_d(d.v, MPFR_RNDN));
}

// |1 - sum p| computed in 2048 bits from the returned values.
double sum_defect(const SparseRow& r) {
  Mp s(2048);
  mpfr_set_si(s.v, -1, MPFR_RNDN);
  for (const Real& p : r.p) mpfr_add(s.v, s.v, raw(p), MPFR_RNDN);
  return std::fabs(mpfr_get_d(s.v, MPFR_RNDN));
}

// sum_i [(alpha - 1) x_i / T - tau]_+^(1/(alpha - 1)), independent MPFR code at 1024 bits.
double tau_sum(std::span<const double> x, double alpha, double T, const Real& tau) {
  Mp s(1024), u(1024), a(1024), e(1024);
  mpfr_set_d(a.v, alpha, MPFR_RNDN);
  mpfr_sub_ui(a.v, a.v, 1, MPFR_RNDN);
  mpfr_ui_div(e.v, 1, a.v, MPFR_RNDN);
  mpfr_set_zero(s.v, 1);
  for (double v : x) {
    if (!std::isfinite(v)) continue;
    mpfr_set_d(u.v, v, MPFR_RNDN);
    mpfr_div_d(u.v, u.v, T, MPFR_RNDN);
    mpfr_mul(u.v, u.v, a.v, MPFR_RNDN);
    mpfr_sub(u.v, u.v, raw(tau), MPFR_RNDN);
    if (mpfr_sgn(u.v) <= 0) continue;
    mpfr_pow(u.v, u.v, e.v, MPFR_RNDN);
    mpfr_add(s.v, s.v, u.v, MPFR_RNDN);
  }
  return mpfr_get_d(s.v, MPFR_RNDN);
}

std::vector<double> random_row(std::mt19937_64& g, std::size_t n, double scale) {
  std::normal_distribution<double> d(0, scale);
  std::vector<double> x(n);
  for (double& v : x) v = d(g);
  return x;
}

// Sparsemax in long double, the textbook algorithm (Martins & Astudillo 2016):
// an independent implementation to compare with.
std::vector<long double> sparsemax_ld(std::span<const double> x, double T) {
  std::vector<long double> z;
  for (double v : x) z.push_back(static_cast<long double>(v) / T);
  std::vector<long double> s = z;
  std::sort(s.rbegin(), s.rend());
  long double cum = 0, tau = 0;
  for (std::size_t r = 1; r <= s.size(); ++r) {
    cum += s[r - 1];
    if (1 + r * s[r - 1] > cum) tau = (cum - 1) / r;
  }
  for (long double& v : z) v = std::max(v - tau, 0.0L);
  return z;
}

TEST(Sparse, KnownValuesSparsemax) {
  // REFERENCE.md: [-2, 0, 0.5] -> sparsemax [0, 0.25, 0.75] (exact values).
  const std::vector<double> x = {-2, 0, 0.5};
  const SparseRow r = exact_sparsemax(x);
  ASSERT_EQ(r.status, RowStatus::ok);
  EXPECT_EQ(to_d(r.p[0]), 0.0);
  EXPECT_EQ(to_d(r.p[1]), 0.25);
  EXPECT_EQ(to_d(r.p[2]), 0.75);
  EXPECT_EQ(r.support_size, 2u);
  EXPECT_FALSE(r.support[0]);
  // alpha = 2 through the bisection gives the same values.
  const SparseRow b = exact_entmax_bisect(x, 2.0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_LT(abs_diff(b.p[i], r.p[i]), 0x1p-240) << i;
}

TEST(Sparse, KnownValuesEntmax15) {
  // REFERENCE.md: [-2, 0, 0.5] -> entmax15 [0, 0.3260, 0.6740] (4 decimals).
  const std::vector<double> x = {-2, 0, 0.5};
  const SparseRow r = exact_entmax15(x);
  EXPECT_EQ(to_d(r.p[0]), 0.0);
  EXPECT_NEAR(to_d(r.p[1]), 0.3260, 5e-5);
  EXPECT_NEAR(to_d(r.p[2]), 0.6740, 5e-5);
  const SparseRow b = exact_entmax_bisect(x, 1.5);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_LT(abs_diff(b.p[i], r.p[i]), 0x1p-240) << i;
  EXPECT_EQ(b.support, r.support);
}

TEST(Sparse, SparsemaxAgreesWithLongDouble) {
  std::mt19937_64 g(1);
  for (int rep = 0; rep < 50; ++rep) {
    const auto x = random_row(g, 1 + rep % 17, rep % 3 == 0 ? 0.1 : 2.0);
    const double T = rep % 2 ? 1.0 : 0.7;
    const SparseRow r = exact_sparsemax(x, T);
    const auto ref = sparsemax_ld(x, T);
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(to_d(r.p[i]), static_cast<double>(ref[i]), 1e-15) << rep << " " << i;
  }
}

TEST(Sparse, IdentitiesOnRandomRows) {
  std::mt19937_64 g(2);
  for (int rep = 0; rep < 12; ++rep) {
    const auto x = random_row(g, 2 + rep, 1.5);
    const double T = rep % 3 == 0 ? 0.5 : 1.0;
    const SparseRow sm = exact_sparsemax(x, T);
    const SparseRow e15 = exact_entmax15(x, T);
    const SparseRow b2 = exact_entmax_bisect(x, 2.0, T);
    const SparseRow b15 = exact_entmax_bisect(x, 1.5, T);
    for (const SparseRow* r : {&sm, &e15, &b2, &b15}) EXPECT_LT(sum_defect(*r), 0x1p-240) << rep;
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_LT(abs_diff(sm.p[i], b2.p[i]), 0x1p-230) << rep << " " << i;
      EXPECT_LT(abs_diff(e15.p[i], b15.p[i]), 0x1p-230) << rep << " " << i;
    }
    // tau consistency, recomputed independently from the returned tau.
    EXPECT_NEAR(tau_sum(x, 2.0, T, sm.tau), 1.0, 1e-15);
    EXPECT_NEAR(tau_sum(x, 1.5, T, e15.tau), 1.0, 1e-15);
    const SparseRow b13 = exact_entmax_bisect(x, 1.3, T);
    EXPECT_NEAR(tau_sum(x, 1.3, T, b13.tau), 1.0, 1e-15);
    EXPECT_LT(sum_defect(b13), 0x1p-200);
    EXPECT_TRUE(b13.tau_lo <= b13.tau && b13.tau <= b13.tau_hi);
    EXPECT_LT(abs_diff(b13.tau_hi, b13.tau_lo), 0x1p-250) << "bracket not narrowed";
    EXPECT_EQ(b13.undecided, 0u);
    EXPECT_TRUE(b15.tau_lo <= e15.tau && e15.tau <= b15.tau_hi) << "certified bracket misses tau";
    EXPECT_TRUE(b2.tau_lo <= sm.tau && sm.tau <= b2.tau_hi) << "certified bracket misses tau";
  }
}

TEST(Sparse, AlphaToOneApproachesSoftmax) {
  const std::vector<double> x = {-1, 0.25, 0.5, 2};
  const ExactRow s = exact_row(x);
  double prev = inf;
  for (double a : {1.1, 1.01, 1.001}) {
    const SparseRow r = exact_entmax_bisect(x, a, 1.0, 128);
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, abs_diff(r.p[i], s.softmax[i]));
    EXPECT_LT(worst, prev) << a;  // monotone approach
    EXPECT_LT(worst, 2 * (a - 1)) << a;  // first order in alpha - 1
    prev = worst;
  }
}

TEST(Sparse, PrecisionDoubling) {
  const std::vector<std::vector<double>> rows = {
      {-2, 0, 0.5}, {1e-300, -1e-300, 0}, {88, 89, 90, -3.4e38}, {1e15, 1e15 - 0.25, -1e15},
      {0x1p-1074, 0, -0x1p-1074, 0.5}, {3, 3, 3, 2.5},
      // benchdnn's f64 row: the format's lowest next to 88/89/90 (2 x lowest overflows a double)
      {88, -DBL_MAX}, {88, -DBL_MAX, 89, -DBL_MAX, 90}, {DBL_MAX, -DBL_MAX, DBL_MAX}};
  for (const auto& x : rows) {
    for (double T : {1.0, 0.3}) {
      const SparseRow a = exact_sparsemax(x, T, 256), b = exact_sparsemax(x, T, 512);
      const SparseRow c = exact_entmax15(x, T, 256), d = exact_entmax15(x, T, 512);
      const SparseRow e = exact_entmax_bisect(x, 1.7, T, 256), f = exact_entmax_bisect(x, 1.7, T, 512);
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_LT(abs_diff(a.p[i], b.p[i]), 0x1p-250);
        EXPECT_LT(abs_diff(c.p[i], d.p[i]), 0x1p-250);
        EXPECT_LT(abs_diff(e.p[i], f.p[i]), 0x1p-235);
      }
      EXPECT_EQ(a.support, b.support);
      EXPECT_EQ(c.support, d.support);
      for (const SparseRow* r : {&a, &c, &e}) EXPECT_LT(sum_defect(*r), 0x1p-200);  // also: no NaN
    }
  }
}

TEST(Sparse, ShiftPermutationAndTemperature) {
  const std::vector<double> x = {0.5, -0.25, 1.0, 0.75, -3};
  std::vector<double> shifted, perm = {1.0, -3, 0.75, 0.5, -0.25}, halved;
  for (double v : x) shifted.push_back(v + 1024);  // exact shift
  for (double v : x) halved.push_back(v * 0.5);
  const std::vector<std::size_t> where = {3, 4, 0, 2, 1};  // x[i] is perm[where[i]]
  for (int op = 0; op < 3; ++op) {
    auto run = [&](std::span<const double> r, double T) {
      return op == 0 ? exact_sparsemax(r, T) : op == 1 ? exact_entmax15(r, T) : exact_entmax_bisect(r, 1.25, T);
    };
    const SparseRow a = run(x, 1), b = run(shifted, 1), c = run(perm, 1), d = run(halved, 0.5);
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_LT(abs_diff(a.p[i], b.p[i]), 0x1p-235) << op;
      EXPECT_LT(abs_diff(a.p[i], c.p[where[i]]), 0x1p-235) << op;
      EXPECT_LT(abs_diff(a.p[i], d.p[i]), 0x1p-235) << op;
      if (i > 0 && x[i] > x[i - 1]) {
        EXPECT_TRUE(a.p[i] >= a.p[i - 1]);  // ordering
      }
    }
  }
  // sparsemax: correctly rounded exact values, so bit-identical.
  const SparseRow a = exact_sparsemax(x), b = exact_sparsemax(shifted);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(a.p[i] == b.p[i]);
}

TEST(Sparse, MinusInfIsDropped) {
  const std::vector<double> x = {-2, 0, 0.5}, xm = {-inf, -2, 0, -inf, 0.5};
  const std::vector<std::size_t> at = {1, 2, 4};
  for (int op = 0; op < 5; ++op) {
    auto run = [&](std::span<const double> r) {
      switch (op) {
        case 0: return exact_sparsemax(r);
        case 1: return exact_entmax15(r);
        case 2: return exact_entmax_bisect(r, 3.0);
        case 3: return exact_topk_softmax(r, 2);
        default: return exact_threshold_softmax(r, 0.1);
      }
    };
    const SparseRow a = run(x), b = run(xm);
    EXPECT_EQ(to_d(b.p[0]), 0.0);
    EXPECT_EQ(to_d(b.p[3]), 0.0);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_LT(abs_diff(a.p[i], b.p[at[i]]), 0x1p-240) << op;
  }
}

TEST(Sparse, TopKTieRuleAndValues) {
  const std::vector<double> x = {1, 2, 2, 3, -inf};
  const SparseRow r = exact_topk_softmax(x, 2);  // the 2nd largest is 2, tied: both kept
  EXPECT_EQ(r.support, (std::vector<bool>{false, true, true, true, false}));
  const ExactRow s = exact_row(std::vector<double>{2, 2, 3});
  EXPECT_TRUE(r.p[1] == s.softmax[0] && r.p[2] == s.softmax[1] && r.p[3] == s.softmax[2]);
  const SparseRow all = exact_topk_softmax(x, 10);  // more than the finite entries
  EXPECT_EQ(all.support_size, 4u);
  const SparseRow one = exact_topk_softmax(x, 1);
  EXPECT_EQ(to_d(one.p[3]), 1.0);
}

TEST(Sparse, ThresholdRule) {
  const std::vector<double> eq = {0, 0};
  EXPECT_EQ(exact_threshold_softmax(eq, 0.5).support_size, 2u);  // exactly at: kept
  const SparseRow none = exact_threshold_softmax(eq, 0.6);       // none reach: maxima kept
  EXPECT_EQ(to_d(none.p[0]), 0.5);
  const std::vector<double> x = {-2, 0, 0.5};  // softmax [0.0486, 0.3592, 0.5922]
  const SparseRow r = exact_threshold_softmax(x, 0.05);
  EXPECT_EQ(r.support, (std::vector<bool>{false, true, true}));
  const ExactRow s = exact_row(std::vector<double>{0, 0.5});
  EXPECT_TRUE(r.p[1] == s.softmax[0] && r.p[2] == s.softmax[1]);
  EXPECT_EQ(exact_threshold_softmax(x, 0).support_size, 3u);
}

TEST(Sparse, BadInputAndSpecialRows) {
  const std::vector<double> x = {1, 2}, empty;
  EXPECT_THROW(exact_entmax_bisect(x, 1.0), std::invalid_argument);
  EXPECT_THROW(exact_entmax(x, 0.5), std::invalid_argument);
  EXPECT_THROW(exact_entmax(x, nan), std::invalid_argument);
  EXPECT_THROW(exact_topk_softmax(x, 0), std::invalid_argument);
  EXPECT_THROW(exact_threshold_softmax(x, -0.1), std::invalid_argument);
  EXPECT_THROW(exact_threshold_softmax(x, nan), std::invalid_argument);
  EXPECT_THROW(exact_sparsemax(empty), std::invalid_argument);
  EXPECT_THROW(exact_sparsemax(x, 0.0), std::invalid_argument);
  EXPECT_THROW(exact_entmax15(x, inf), std::invalid_argument);
  EXPECT_EQ(exact_sparsemax(std::vector<double>{1, nan}).status, RowStatus::undefined);
  EXPECT_EQ(exact_entmax15(std::vector<double>{1, inf}).status, RowStatus::undefined);
  EXPECT_EQ(exact_entmax_bisect(std::vector<double>{-inf, -inf}, 1.2).status, RowStatus::all_masked);
  EXPECT_TRUE(exact_topk_softmax(std::vector<double>{-inf}, 1).p.empty());
}

}  // namespace
