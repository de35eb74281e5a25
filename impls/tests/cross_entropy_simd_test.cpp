// cross_entropy_simd_f32 (impls/src/cross_entropy_simd.cpp): the same bits
// from every ISA's code, and its contracts against the oracle on the rows
// where the fused formulas matter: confident correct predictions (the loss
// ~ rest, p_t - 1 cancelling), their subnormal terms, ties at the max,
// masked entries and targets, ignored and fully masked rows, temperatures.
// The harness checks it broadly with every other gradient kernel
// (`softcheck run --op cross_entropy`, the gradient properties).
#include "cross_entropy_simd.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/judge.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {
namespace {

struct Result {
  std::vector<float> loss, dx;
};

Result run_on(SimdIsa isa, const std::vector<float>& x, std::int64_t cols, const std::vector<std::int64_t>& targets,
              float temperature) {
  Result r{std::vector<float>(targets.size()), std::vector<float>(x.size())};
  cross_entropy_simd(isa, x.data(), targets.data(), r.loss.data(), r.dx.data(),
                     static_cast<std::int64_t>(targets.size()), cols, temperature);
  return r;
}

const Kernel& the_kernel() {
  const Kernel* k = find_kernel("cross_entropy_simd_f32");
  if (k == nullptr) throw std::runtime_error("cross_entropy_simd_f32 is not registered");
  return *k;
}

// Whether every row's loss and dx hold the kernel's contracts (or its
// masked-row policy), judged as `softcheck run` judges them; the largest
// loss error (ULP) raised into *worst_loss_ulp when given.
::testing::AssertionResult holds(const std::vector<float>& x, std::int64_t cols,
                                 const std::vector<std::int64_t>& targets, float temperature = 1,
                                 double* worst_loss_ulp = nullptr) {
  const Kernel& k = the_kernel();
  const auto rows = static_cast<std::int64_t>(targets.size());
  std::vector<float> loss(targets.size()), dx(x.size());
  const void* in[] = {x.data(), targets.data()};
  void* out[] = {loss.data(), dx.data()};
  k.call({Op::cross_entropy, in, out, rows, cols, temperature});
  const OpDecl& d = *k.find(Op::cross_entropy);
  oracle::RowJudge judge(Format::f32);
  const auto n = static_cast<std::size_t>(cols);
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const std::vector<double> row(x.begin() + static_cast<std::ptrdiff_t>(r * n),
                                  x.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
    judge.set_row(row, temperature);
    judge.set_target(targets[r]);
    const std::vector<double> l = {loss[r]};
    const std::vector<double> g(dx.begin() + static_cast<std::ptrdiff_t>(r * n),
                                dx.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
    for (std::size_t o = 0; o < 2; ++o) {
      const std::span<const double> y = o == 0 ? std::span<const double>(l) : std::span<const double>(g);
      const oracle::RowVerdict v = judge.judge(d, k.masked_policy, y, o);
      if (!v.holds())
        return ::testing::AssertionFailure() << "row " << r << " target " << targets[r] << " output " << o << ": "
                                             << oracle::explain(v, d, y, judge, o);
      if (o == 0 && worst_loss_ulp != nullptr && v.status == oracle::RowStatus::ok)
        *worst_loss_ulp = std::max(*worst_loss_ulp, v.error.max_ulp);
    }
  }
  return ::testing::AssertionSuccess();
}

// Rows of `cols` entries N(0, sd), 1 in 10 masked, one target per row drawn
// from: the max entry, any entry (masked ones included), the min entry,
// ignore_index. Every fifth row has its max repeated (a tie) and every
// seventh a dominant entry 120 above the rest at the target (rest is then
// subnormal: the double pass).
struct Batch {
  std::vector<float> x;
  std::vector<std::int64_t> targets;
};
Batch random_batch(std::mt19937& rng, std::int64_t rows, std::int64_t cols, float sd) {
  std::normal_distribution<float> normal(0.0f, sd);
  std::uniform_int_distribution<int> mask(0, 9);
  std::uniform_int_distribution<std::int64_t> entry(0, cols - 1);
  Batch b;
  const auto n = static_cast<std::size_t>(cols);
  b.x.resize(static_cast<std::size_t>(rows) * n);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = b.x.data() + static_cast<std::size_t>(r) * n;
    for (std::size_t j = 0; j < n; ++j) row[j] = mask(rng) == 0 ? -INFINITY : normal(rng);
    std::size_t hi = 0, lo = 0;
    for (std::size_t j = 1; j < n; ++j) {
      if (row[j] > row[hi]) hi = j;
      if (row[j] != -INFINITY && (row[lo] == -INFINITY || row[j] < row[lo])) lo = j;
    }
    if (r % 5 == 4 && n > 1) row[(hi + 1) % n] = row[hi];
    std::int64_t t = 0;
    switch (r % 4) {
      case 0: t = static_cast<std::int64_t>(hi); break;
      case 1: t = entry(rng); break;
      case 2: t = static_cast<std::int64_t>(lo); break;
      default: t = ignore_index; break;
    }
    if (r % 7 == 6) {
      t = entry(rng);
      row[t] = (row[hi] == -INFINITY ? 0.0f : row[hi]) + 120.0f;
    }
    b.targets.push_back(t);
  }
  return b;
}

// The 16-lane arithmetic is the same on every ISA: the same bits on rows of
// every length class (shorter than a vector, ragged tails, long), with
// masks, ties, confident rows, ignored targets and temperatures.
TEST(CrossEntropySimd, EveryIsaGivesTheSameBits) {
  std::mt19937 rng(17);
  int compared = 0;
  for (std::int64_t cols : {1, 3, 15, 16, 17, 63, 64, 65, 100, 1000, 4097, 70001})
    for (float t : {1.0f, 0.7f, 3.0f}) {
      const Batch b = random_batch(rng, cols > 5000 ? 8 : 28, cols, 20.0f);
      const Result ref = run_on(SimdIsa::baseline, b.x, cols, b.targets, t);
      for (SimdIsa isa : {SimdIsa::avx2, SimdIsa::avx512}) {
        if (!simd_isa_supported(isa)) continue;
        const Result r = run_on(isa, b.x, cols, b.targets, t);
        for (std::size_t i = 0; i < r.loss.size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(r.loss[i]), std::bit_cast<std::uint32_t>(ref.loss[i]))
              << name(isa) << " cols " << cols << " T " << t << " row " << i;
        for (std::size_t i = 0; i < r.dx.size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(r.dx[i]), std::bit_cast<std::uint32_t>(ref.dx[i]))
              << name(isa) << " cols " << cols << " T " << t << " element " << i;
        ++compared;
      }
    }
  std::printf("cross_entropy_simd: compared %d batches against the baseline code (here: %s)\n", compared,
              std::string(name(best_simd_isa())).c_str());
}

// The hard rows of impls/tests/gradient_kernels_test.cpp: confident (p_t ~
// 1 - e^-40), plain, a masked entry, a masked target (loss +inf), ignored,
// fully masked, a tie at the max.
const std::vector<float> rows4 = {40,        0,         -1,        -2,         //
                                  0.5,       -0.25,     2,         1,          //
                                  3,         -INFINITY, 1,         2,          //
                                  3,         -INFINITY, 1,         2,          //
                                  1,         2,         3,         4,          //
                                  -INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                  5,         5,         -3,        0};
const std::vector<std::int64_t> targets4 = {0, 3, 2, 1, ignore_index, 0, 1};

TEST(CrossEntropySimd, HoldsItsContractsOnTheHardRows) {
  EXPECT_TRUE(holds(rows4, 4, targets4));
  EXPECT_TRUE(holds(rows4, 4, targets4, 0.7f));
  EXPECT_TRUE(holds(rows4, 4, targets4, 3.0f));
}

// The policy's exact values: ignored and fully masked rows all 0, a masked
// entry's gradient 0, a masked target's loss +inf and gradient -1; a
// confident correct prediction keeps a non-zero loss (about e^-40 here,
// where 1 - p_t rounds to 0) and p_t - 1 = -rest / D.
TEST(CrossEntropySimd, ExactValuesOfThePolicyAndConfidentRows) {
  for (SimdIsa isa : {SimdIsa::baseline, SimdIsa::avx2, SimdIsa::avx512}) {
    if (!simd_isa_supported(isa)) continue;
    const Result o = run_on(isa, rows4, 4, targets4, 1.0f);
    EXPECT_GT(o.loss[0], 0.0f);
    EXPECT_LT(o.loss[0], 1e-17f);
    EXPECT_LT(o.dx[0], 0.0f);
    EXPECT_FLOAT_EQ(o.dx[0], -o.loss[0]);  // both ~ rest
    EXPECT_EQ(o.loss[3], INFINITY);
    EXPECT_EQ(o.dx[3 * 4 + 1], -1.0f);
    for (std::size_t r : {4u, 5u}) {
      EXPECT_EQ(o.loss[r], 0.0f);
      for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(o.dx[r * 4 + j], 0.0f);
    }
    EXPECT_EQ(o.dx[2 * 4 + 1], 0.0f);
    // A tie at the max, target on the second one: p_t = 1/D with D = 2 + ...
    EXPECT_LT(o.dx[6 * 4 + 1], -0.49f);
    EXPECT_GT(o.dx[6 * 4 + 0], 0.49f);
  }
}

// One dominant entry at the target and 999 others g below it: rest = 999
// e^-g. Down to g ~ 87 the terms are normal; below they are subnormal and
// exp16 rounds each to the subnormal grid (up to denorm_min/2 off), which
// would move a subnormal loss by up to 450 ulp at g = 100 against a bound of
// about 172: rest comes from the double pass there (cross_entropy_simd.cpp,
// "Subnormal terms", below rest = 2^-64, i.e. g > 51.3), whose loss is
// within a couple of ulp.
TEST(CrossEntropySimd, ConfidentRowsWithSubnormalTermsKeepTheLossAccurate) {
  for (float gap : {20.0f, 44.0f, 60.0f, 87.0f, 90.0f, 100.0f, 103.0f, 110.0f}) {
    std::vector<float> x(1000, -gap);
    x[0] = 0;
    double worst = 0;
    EXPECT_TRUE(holds(x, 1000, {0}, 1.0f, &worst)) << "gap " << gap;
    if (gap > 52) {
      EXPECT_LE(worst, 2.0) << "gap " << gap;
    }
    for (std::size_t j = 1; j < x.size(); j += 3) x[j] -= 0.5f;  // not all equal: rounding errors of mixed sign
    EXPECT_TRUE(holds(x, 1000, {0}, 1.0f, &worst)) << "gap " << gap;
    EXPECT_TRUE(holds(x, 1000, {0}, 0.7f)) << "gap " << gap;
  }
}

// Random rows, short and long, every target kind, three temperatures.
TEST(CrossEntropySimd, HoldsItsContractsOnRandomRows) {
  std::mt19937 rng(5);
  for (std::int64_t cols : {2, 7, 16, 33, 200, 4097})
    for (float sd : {1.0f, 20.0f})
      for (float t : {1.0f, 0.7f, 2.5f}) {
        const Batch b = random_batch(rng, cols > 1000 ? 8 : 14, cols, sd);
        EXPECT_TRUE(holds(b.x, cols, b.targets, t)) << "cols " << cols << " sd " << sd << " T " << t;
      }
}

TEST(CrossEntropySimd, TargetsAndBuffersAreChecked) {
  const std::vector<float> x = {1, 2};
  float loss = 0, dx[2];
  const std::int64_t bad = 2, negative = -1;
  EXPECT_THROW(cross_entropy_simd(best_simd_isa(), x.data(), &bad, &loss, dx, 1, 2, 1), std::invalid_argument);
  EXPECT_THROW(cross_entropy_simd(best_simd_isa(), x.data(), &negative, &loss, dx, 1, 2, 1), std::invalid_argument);
  std::vector<float> in_place = x;
  const std::int64_t ok = 1;
  EXPECT_THROW(cross_entropy_simd(best_simd_isa(), in_place.data(), &ok, &loss, in_place.data(), 1, 2, 1),
               std::invalid_argument);
  const Kernel& k = the_kernel();
  EXPECT_EQ(k.format, Format::f32);
  EXPECT_EQ(k.masked_policy, MaskedRowPolicy::zeros);
  EXPECT_FALSE(k.test_only);
}

}  // namespace
}  // namespace softcheck::kernels
