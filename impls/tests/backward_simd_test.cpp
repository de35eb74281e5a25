// softmax_backward_simd_f32 and log_softmax_backward_simd_f32
// (impls/src/backward_simd.cpp): the same bits from every ISA's code, and
// their contracts against the oracle on the rows where the SIMD forms
// matter: ragged tails, long rows, ties at the max, masked entries, fully
// masked rows, confident rows whose rest has subnormal terms (the
// log-softmax's max entry ~ -rest), temperatures. The harness checks them
// broadly with every other gradient kernel (`softcheck run --op
// softmax_backward`, the gradient properties); the hard rows of
// gradient_kernels_test.cpp run on them too.
#include "backward_simd.hpp"
#include "simd_test_rows.hpp"

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

constexpr Op both_ops[] = {Op::softmax_backward, Op::log_softmax_backward};

struct Result {
  std::vector<float> y, dx;
};

Result run_on(Op op, SimdIsa isa, const std::vector<float>& x, const std::vector<float>& g, std::int64_t cols,
              float temperature) {
  Result r{std::vector<float>(x.size()), std::vector<float>(x.size())};
  backward_simd(op, isa, x.data(), g.data(), r.y.data(), r.dx.data(), static_cast<std::int64_t>(x.size()) / cols,
                cols, temperature);
  return r;
}

const Kernel& kernel_for(Op op) {
  const char* name = op == Op::softmax_backward ? "softmax_backward_simd_f32" : "log_softmax_backward_simd_f32";
  const Kernel* k = find_kernel(name);
  if (k == nullptr) throw std::runtime_error(std::string(name) + " is not registered");
  return *k;
}

// Whether every row's y and dx hold the kernel's contracts (or its
// masked-row policy), judged as `softcheck run` judges them; the largest y
// error (ULP) raised into *worst_y_ulp when given.
::testing::AssertionResult holds(Op op, const std::vector<float>& x, const std::vector<float>& g, std::int64_t cols,
                                 float temperature = 1, double* worst_y_ulp = nullptr) {
  const Kernel& k = kernel_for(op);
  std::vector<float> y(x.size()), dx(x.size());
  const void* in[] = {x.data(), g.data()};
  void* out[] = {y.data(), dx.data()};
  const auto rows = static_cast<std::int64_t>(x.size()) / cols;
  k.call({op, in, out, rows, cols, temperature});
  const OpDecl& d = *k.find(op);
  oracle::RowJudge judge(Format::f32);
  const auto n = static_cast<std::size_t>(cols);
  const auto slice = [n](const std::vector<float>& v, std::size_t r) {
    return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(r * n),
                               v.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
  };
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
    const std::vector<double> xr = slice(x, r), gr = slice(g, r);
    judge.set_row(xr, temperature);
    judge.set_upstream(gr);
    for (std::size_t o = 0; o < 2; ++o) {
      const std::vector<double> got = slice(o == 0 ? y : dx, r);
      const oracle::RowVerdict v = judge.judge(d, k.masked_policy, got, o);
      if (!v.holds())
        return ::testing::AssertionFailure() << k.name << " row " << r << " output " << o << ": "
                                             << oracle::explain(v, d, got, judge, o);
      if (o == 0 && worst_y_ulp != nullptr && v.status == oracle::RowStatus::ok)
        *worst_y_ulp = std::max(*worst_y_ulp, v.error.max_ulp);
    }
  }
  return ::testing::AssertionSuccess();
}

// test_rows::random_rows (simd_test_rows.hpp) and an upstream gradient g,
// N(0, 1) per entry.
struct Batch {
  std::vector<float> x, g;
};
Batch random_batch(std::mt19937& rng, std::int64_t rows, std::int64_t cols, float sd) {
  Batch b{test_rows::random_rows(rng, rows, cols, sd), {}};
  std::normal_distribution<float> upstream(0.0f, 1.0f);
  b.g.resize(b.x.size());
  for (float& v : b.g) v = upstream(rng);
  return b;
}

// The 16-lane arithmetic is the same on every ISA: the same bits on rows of
// every length class (shorter than a vector, ragged tails, long), with
// masks, ties, confident and fully masked rows, temperatures.
TEST(BackwardSimd, EveryIsaGivesTheSameBits) {
  std::mt19937 rng(23);
  int compared = 0;
  for (Op op : both_ops)
    for (std::int64_t cols : {1, 3, 15, 16, 17, 63, 64, 65, 100, 1000, 4097, 70001})
      for (float t : {1.0f, 0.7f, 3.0f}) {
        const Batch b = random_batch(rng, cols > 5000 ? 8 : 22, cols, 20.0f);
        const Result ref = run_on(op, SimdIsa::baseline, b.x, b.g, cols, t);
        for (SimdIsa isa : {SimdIsa::avx2, SimdIsa::avx512}) {
          if (!simd_isa_supported(isa)) continue;
          const Result r = run_on(op, isa, b.x, b.g, cols, t);
          for (std::size_t i = 0; i < r.y.size(); ++i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(r.y[i]), std::bit_cast<std::uint32_t>(ref.y[i]))
                << name(op) << " " << name(isa) << " cols " << cols << " T " << t << " y " << i;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(r.dx[i]), std::bit_cast<std::uint32_t>(ref.dx[i]))
                << name(op) << " " << name(isa) << " cols " << cols << " T " << t << " dx " << i;
          }
          ++compared;
        }
      }
  std::printf("backward_simd: compared %d batches against the baseline code (here: %s)\n", compared,
              std::string(name(best_simd_isa())).c_str());
}

// Random rows, short and long, three temperatures, both ops.
TEST(BackwardSimd, HoldsItsContractsOnRandomRows) {
  std::mt19937 rng(7);
  for (Op op : both_ops)
    for (std::int64_t cols : {2, 7, 16, 33, 200, 4097})
      for (float sd : {1.0f, 20.0f})
        for (float t : {1.0f, 0.7f, 2.5f}) {
          const Batch b = random_batch(rng, cols > 1000 ? 8 : 14, cols, sd);
          EXPECT_TRUE(holds(op, b.x, b.g, cols, t)) << name(op) << " cols " << cols << " sd " << sd << " T " << t;
        }
}

// One dominant entry and 999 others `gap` below it: rest = 999 e^-gap, and
// the log-softmax at the max is -log1p(rest) ~ -rest. From gap ~ 87 the
// terms are subnormal and exp16 rounds each to the subnormal grid (up to
// denorm_min/2 off): rest comes from the double pass below 2^-64, and the
// max entry's y stays within a couple of ulp. Without that pass a gap of 100
// costs hundreds of ulp (cross_entropy_simd_test.cpp measures the same sum).
TEST(BackwardSimd, ConfidentRowsWithSubnormalTermsKeepTheMaxEntryAccurate) {
  for (float gap : {20.0f, 44.0f, 60.0f, 87.0f, 90.0f, 100.0f, 103.0f, 110.0f}) {
    std::vector<float> x(1000, -gap), g(1000, 0.25f);
    x[0] = 0;
    g[0] = -1.5f;
    for (Op op : both_ops) {
      double worst = 0;
      EXPECT_TRUE(holds(op, x, g, 1000, 1.0f, &worst)) << name(op) << " gap " << gap;
      if (op == Op::log_softmax_backward && gap > 52) {
        EXPECT_LE(worst, 2.0) << "gap " << gap;
      }
    }
    for (std::size_t j = 1; j < x.size(); j += 3) x[j] -= 0.5f;  // rounding errors of mixed sign
    for (Op op : both_ops) {
      EXPECT_TRUE(holds(op, x, g, 1000, 1.0f)) << name(op) << " gap " << gap;
      EXPECT_TRUE(holds(op, x, g, 1000, 0.7f)) << name(op) << " gap " << gap;
    }
  }
}

// The policy's exact values and the forms that must be exact: a fully
// masked row y = 0 / -inf and dx = 0; a masked entry's softmax y and dx 0,
// its log-softmax y -inf and dx = g; a tie of two maxima with the rest far
// below: y = 1/2 each (log-softmax -log 2).
TEST(BackwardSimd, ExactValuesOfThePolicyAndTies) {
  const std::vector<float> x = {3, -INFINITY, 1, 2,  //
                                -INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                5, 5, -200, -300};
  const std::vector<float> g = {1, 5, -2, 0.5,  //
                                1, 2, 3, 4,  //
                                1, -1, 0.5, 0.25};
  for (SimdIsa isa : {SimdIsa::baseline, SimdIsa::avx2, SimdIsa::avx512}) {
    if (!simd_isa_supported(isa)) continue;
    const Result s = run_on(Op::softmax_backward, isa, x, g, 4, 1.0f);
    const Result l = run_on(Op::log_softmax_backward, isa, x, g, 4, 1.0f);
    EXPECT_EQ(s.y[1], 0.0f);
    EXPECT_EQ(s.dx[1], 0.0f);
    EXPECT_EQ(l.y[1], -INFINITY);
    EXPECT_EQ(l.dx[1], 5.0f);
    for (std::size_t j = 4; j < 8; ++j) {
      EXPECT_EQ(s.y[j], 0.0f);
      EXPECT_EQ(s.dx[j], 0.0f);
      EXPECT_EQ(l.y[j], -INFINITY);
      EXPECT_EQ(l.dx[j], 0.0f);
    }
    EXPECT_EQ(s.y[8], 0.5f);
    EXPECT_EQ(s.y[9], 0.5f);
    EXPECT_EQ(s.dx[8], 0.5f);  // 1/2 (1 - 0) with <y, g> = 1/2 - 1/2 = 0
    EXPECT_EQ(l.y[8], -std::log(2.0f));
    EXPECT_EQ(l.dx[9], -1.375f);  // -1 - (1/2)(1 - 1 + 0.5 + 0.25)
  }
}

TEST(BackwardSimd, OpsAndBuffersAreChecked) {
  const std::vector<float> x = {1, 2}, g = {0.5, -0.5};
  float y[2], dx[2];
  EXPECT_THROW(backward_simd(Op::softmax, best_simd_isa(), x.data(), g.data(), y, dx, 1, 2, 1), std::invalid_argument);
  std::vector<float> in_place = x;
  for (Op op : both_ops) {
    EXPECT_THROW(backward_simd(op, best_simd_isa(), in_place.data(), g.data(), in_place.data(), dx, 1, 2, 1),
                 std::invalid_argument);
    EXPECT_THROW(backward_simd(op, best_simd_isa(), x.data(), g.data(), y, y, 1, 2, 1), std::invalid_argument);
    const Kernel& k = kernel_for(op);
    EXPECT_EQ(k.format, Format::f32);
    EXPECT_EQ(k.masked_policy, MaskedRowPolicy::zeros);
    EXPECT_FALSE(k.test_only);
    EXPECT_NE(k.find(op), nullptr);
  }
}

// A later pass reads x and g after y or dx was written: an output that
// shares any element with an input or with the other output is refused;
// arrays that only touch end to end are not.
TEST(BackwardSimd, OverlappingBuffersAreRefused) {
  std::vector<float> buf(16, 1.0f);
  float* a = buf.data();  // a[0..4), a[4..8), a[8..12), a[12..16): four rows of 4 apart
  const auto call = [](const float* x, const float* g, float* y, float* dx) {
    backward_simd(Op::softmax_backward, best_simd_isa(), x, g, y, dx, 1, 4, 1.0f);
  };
  EXPECT_NO_THROW(call(a, a + 4, a + 8, a + 12));
  EXPECT_THROW(call(a, a + 4, a, a + 12), std::invalid_argument);      // y is x
  EXPECT_THROW(call(a, a + 4, a + 8, a + 7), std::invalid_argument);   // dx's first element is g's last
  EXPECT_THROW(call(a, a + 4, a + 8, a + 11), std::invalid_argument);  // dx starts inside y
}

}  // namespace
}  // namespace softcheck::kernels
