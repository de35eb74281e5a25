// The sparse kernels (docs/sparse.md) against the sparse oracle: known values,
// absolute error within each kernel's derived bound, sum to one,
// non-negativity, support equal to the oracle's except for entries within the
// bound of the threshold, -inf entries equal to dropping them, masked rows,
// error against bisection iterations, and the top-k contract in ULPs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_util.hpp"  // the families, for their argument checks
#include "softcheck/kernel.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/sparse_oracle.hpp"
#include "softcheck/test_values.hpp"

namespace {

using namespace softcheck;

using softcheck::test_values::inf;

std::vector<double> run(const Kernel& k, Op op, const std::vector<double>& x, double T) {
  const auto n = static_cast<std::int64_t>(x.size());
  if (k.format == Format::f64) {
    std::vector<double> y(x.size());
    k.run(op, x.data(), y.data(), 1, n, T);
    return y;
  }
  std::vector<float> xf(x.begin(), x.end()), yf(x.size());
  k.run(op, xf.data(), yf.data(), 1, n, T);
  return {yf.begin(), yf.end()};
}

// Largest |z_i| over the finite entries (the temperature term's M).
double max_abs(const std::vector<double>& x, double T) {
  double m = 0;
  for (double v : x)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v / T));
  return m;
}

// The absolute error each kernel's derivation gives (first order in u), in the
// kernel's format; see the contract comments next to each kernel and
// docs/sparse.md, "Error bounds". A temperature != 1 adds fl(x/T)'s error
// |dz| <= 2uM (kernels.md), which moves sparsemax and entmax15 by at most
// 2|dz| (both are 2-Lipschitz in the max norm on [-1, 0]-shifted supports).
double absolute_bound(const Kernel& k, const OpDecl& d, const std::vector<double>& x, double T) {
  const double u = unit_roundoff(k.format);
  const double n = static_cast<double>(x.size());
  const double temp = T == 1 ? 0 : 4 * max_abs(x, T);
  switch (d.op) {
    case Op::sparsemax: return (n + 5 + temp) * u;
    case Op::entmax15: return (4 * n * n + 4 + temp) * u;
    case Op::entmax: {
      // tau to 2^-K after K halvings; p_i moves by <= tau error / (alpha - 1)
      // (X - tau <= 1), the normalisation by up to n times that; plus the
      // rounding floor (n + 4) u / (alpha - 1) and the temperature term.
      const double a = d.params.alpha - 1;
      const int K = std::stoi(k.name.substr(k.name.find("_i") + 2));
      return (n + 1) / a * std::ldexp(1.0, -K) + ((4 * n + 8) / a + temp / a) * u;
    }
    case Op::topk_softmax:
    case Op::threshold_softmax: return (n + 3 + temp) * u;  // shifted softmax, p <= 1
    default: return 0;
  }
}

TEST(SparseKernels, KnownValues) {
  const std::vector<double> x = {-2, 0, 0.5};
  for (const char* name : {"sparsemax_f64", "sparsemax_f32"}) {
    const Kernel* k = find_sparse_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(run(*k, Op::sparsemax, x, 1), (std::vector<double>{0, 0.25, 0.75})) << name;
  }
  for (const char* name : {"entmax15_f64", "entmax15_f32", "entmax_bisect_a1p5_i30_f32",
                           "entmax_bisect_a1p5_i60_f64"}) {
    const Kernel* k = find_sparse_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    const std::vector<double> y = run(*k, k->ops[0].op, x, 1);
    EXPECT_EQ(y[0], 0.0) << name;
    EXPECT_NEAR(y[1], 0.3260, 5e-5) << name;
    EXPECT_NEAR(y[2], 0.6740, 5e-5) << name;
  }
}

TEST(SparseKernels, AgainstOracleOnRandomRows) {
  std::mt19937_64 g(11);
  for (const Kernel& k : sparse_kernels()) {
    if (k.format != Format::f32 && k.format != Format::f64) continue;  // 16-bit: the property suite
    const OpDecl& d = k.ops.at(0);
    ASSERT_TRUE(is_sparse(d.op)) << k.name;
    for (std::size_t n : {1, 2, 3, 8, 33, 100}) {
      for (double T : {1.0, 0.7}) {
        std::normal_distribution<double> dist(0, n < 10 ? 1.0 : 0.3);
        std::vector<double> x(n);
        for (double& v : x) v = k.format == Format::f32 ? static_cast<float>(dist(g)) : dist(g);
        const std::vector<double> y = run(k, d.op, x, T);
        const oracle::SparseRow e = oracle::exact_sparse(d.op, d.params, x, T, 128);
        const double tol = absolute_bound(k, d, x, T);
        double sum = 0;
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_TRUE(std::isfinite(y[i]) && y[i] >= 0) << k.name << " n=" << n;
          sum += y[i];
          const double exact = static_cast<double>(e.p[i]);
          EXPECT_LE(std::fabs(y[i] - exact), tol) << k.name << " n=" << n << " T=" << T << " i=" << i;
          // Support: a mismatch only within the tolerance of the threshold.
          if ((y[i] > 0) != e.support[i]) {
            EXPECT_LE(std::max(y[i], exact), tol) << k.name;
          }
        }
        // Sum to one: n roundings of the final normalisation / subtraction plus
        // the error of the entries, bounded by n * tol.
        const double nd = static_cast<double>(n);
        EXPECT_NEAR(sum, 1.0, nd * tol + nd * unit_roundoff(k.format)) << k.name << " n=" << n;
      }
    }
  }
}

TEST(SparseKernels, ErrorFallsWithIterations) {
  // entmax_bisect_a1p5_i{10,20,30,60}: the measured error shrinks with the
  // iteration count until the format's floor (REFERENCE.md: ~24 halvings for f32).
  std::mt19937_64 g(5);
  std::normal_distribution<double> dist(0, 1);
  std::vector<double> x(64);
  for (double& v : x) v = dist(g);
  const oracle::SparseRow e = oracle::exact_entmax15(x, 1.0, 128);
  double prev = inf;
  for (int K : {10, 20, 30, 60}) {
    const Kernel* k = find_sparse_kernel("entmax_bisect_a1p5_i" + std::to_string(K) + "_f64");
    ASSERT_NE(k, nullptr);
    const std::vector<double> y = run(*k, Op::entmax, x, 1);
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(y[i] - static_cast<double>(e.p[i])));
    EXPECT_LT(worst, prev) << K;
    prev = worst;
  }
  EXPECT_LT(prev, 1e-13);
}

TEST(SparseKernels, MinusInfEqualsDroppingAndMaskedRows) {
  const std::vector<double> x = {-2, 0, 0.5, 1.25}, xm = {-inf, -2, 0, -inf, 0.5, 1.25};
  for (const Kernel& k : sparse_kernels()) {
    if (k.format != Format::f32 && k.format != Format::f64) continue;  // 16-bit: the property suite
    const Op op = k.ops[0].op;
    const std::vector<double> a = run(k, op, x, 1), b = run(k, op, xm, 1);
    EXPECT_EQ(b[0], 0.0) << k.name;
    EXPECT_EQ(b[3], 0.0) << k.name;
    EXPECT_EQ((std::vector<double>{b[1], b[2], b[4], b[5]}), a) << k.name;
    EXPECT_EQ(run(k, op, {-inf, -inf}, 1), (std::vector<double>{0, 0})) << k.name;
    EXPECT_EQ(k.masked_policy, MaskedRowPolicy::zeros);
  }
}

TEST(SparseKernels, TopKContractInUlpsAndTieRule) {
  const Kernel* k = find_sparse_kernel("topk_softmax_k8_f32");
  ASSERT_NE(k, nullptr);
  std::mt19937_64 g(3);
  std::normal_distribution<double> dist(0, 3);
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<double> x(40);
    for (double& v : x) v = static_cast<float>(dist(g));
    const std::vector<double> y = run(*k, Op::topk_softmax, x, 1);
    const oracle::SparseRow e = oracle::exact_topk_softmax(x, 8, 1.0, 128);
    const RowError err = compare_row(y, e.p, Format::f32, Op::softmax);
    EXPECT_LE(err.max_ulp, k->ops[0].contract.bound_ulps(row_shape(x, 1, Format::f32), Format::f32));
    EXPECT_EQ(e.support_size, 8u);
  }
  // ties at the 8th value: all kept
  std::vector<double> x(12, 1.0);
  x[0] = 2;
  const std::vector<double> y = run(*k, Op::topk_softmax, x, 1);
  for (double v : y) EXPECT_GT(v, 0);
}

TEST(SparseKernels, ThresholdKeepsOnlyTheExactMaximaWhenNoneReachesIt) {
  // 200 entries, every probability ~1/200 < 0.01: the rule keeps the maxima.
  // In f32, exp(z_i - max) rounds to 1 for an entry one ulp below the max at
  // 0.001, so the maxima must be recognised before exp.
  const Kernel* k = find_sparse_kernel("threshold_softmax_t0p01_f32");
  ASSERT_NE(k, nullptr);
  std::vector<double> x(200, 0.001f);
  x[7] = std::nextafter(0.001f, 1.0f);
  const std::vector<double> y = run(*k, Op::threshold_softmax, x, 1);
  const oracle::SparseRow e = oracle::exact_threshold_softmax(x, 0.01, 1.0, 128);
  EXPECT_EQ(e.support_size, 1u);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], i == 7 ? 1.0 : 0.0) << i;
}

TEST(SparseKernels, BisectionApproachesSoftmaxAsAlphaGoesToOne) {
  // REFERENCE.md: alpha -> 1 is softmax. The entmax map deviates from softmax
  // at first order in alpha - 1 (log p_i = (1/a) log(1 - a d_i / t) + c
  // = -d_i / t - a d_i^2 / (2 t^2) + O(a^2), a = alpha - 1), so ten times
  // smaller a must give a deviation at least ~5 times smaller (first order
  // with slack), until the kernel's own error (its bound grows like 1/a) is
  // reached; 1.01 -> 1.001 stays well above that in f64.
  const std::vector<double> x = {-1, 0.25, 0.5, 2, -0.75};
  const oracle::ExactRow s = oracle::exact_row(x);
  double prev = inf;
  for (double alpha : {1.1, 1.01, 1.001}) {
    const Kernel k = kernels::make_kernel<double>(kernels::entmax_bisect_family(alpha, 60));
    const std::vector<double> y = run(k, Op::entmax, x, 1);
    double dev = 0;
    for (std::size_t i = 0; i < x.size(); ++i) dev = std::max(dev, std::fabs(y[i] - static_cast<double>(s.softmax[i])));
    EXPECT_LT(dev, prev / 5) << alpha;
    prev = dev;
  }
  EXPECT_LT(prev, 1e-2);
}

TEST(SparseKernels, FamiliesRejectBadParameters) {
  EXPECT_THROW(kernels::topk_softmax_family(0), std::invalid_argument);
  EXPECT_THROW(kernels::entmax_bisect_family(1.0, 10), std::invalid_argument);
  EXPECT_THROW(kernels::entmax_bisect_family(std::nan(""), 10), std::invalid_argument);
  EXPECT_THROW(kernels::entmax_bisect_family(1.5, -1), std::invalid_argument);
  EXPECT_THROW(kernels::threshold_softmax_family(-0.5), std::invalid_argument);
  EXPECT_THROW(kernels::threshold_softmax_family(1.5), std::invalid_argument);
  EXPECT_NO_THROW(kernels::topk_softmax_family(1));
}

TEST(SparseKernels, RejectsOtherOps) {
  const Kernel* k = find_sparse_kernel("sparsemax_f64");
  ASSERT_NE(k, nullptr);
  EXPECT_THROW(run(*k, Op::softmax, {1, 2}, 1), std::invalid_argument);
  EXPECT_EQ(find_kernel("sparsemax_f64"), nullptr);  // not in the softmax registries
}

}  // namespace
