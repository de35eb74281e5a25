// shifted_log1p_simd_f32 (impls/src/shifted_log1p_simd.cpp): the same bits
// from every ISA's code for its four ops, its contracts against the oracle
// on random, tied, masked and confident rows, and the policy's exact values.
// The harness checks it broadly with every built-in kernel (`softcheck run`,
// the properties, impls.Builtin/EveryKernel).
#include "shifted_log1p_simd.hpp"
#include "simd_test_rows.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/judge.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {
namespace {

constexpr Op all_ops[] = {Op::softmax, Op::log_softmax, Op::lse, Op::entropy};

bool per_entry(Op op) { return op == Op::softmax || op == Op::log_softmax; }

std::vector<float> run_on(Op op, SimdIsa isa, const std::vector<float>& x, std::int64_t cols, float temperature) {
  const std::size_t rows = x.size() / static_cast<std::size_t>(cols);
  std::vector<float> out(per_entry(op) ? x.size() : rows);
  shifted_log1p_simd(op, isa, x.data(), out.data(), static_cast<std::int64_t>(rows), cols, temperature);
  return out;
}

const Kernel& the_kernel() {
  const Kernel* k = find_kernel("shifted_log1p_simd_f32");
  if (k == nullptr) throw std::runtime_error("shifted_log1p_simd_f32 is not registered");
  return *k;
}

// Whether every row's value holds the kernel's contract (or its masked-row
// policy), judged as `softcheck run` judges it.
::testing::AssertionResult holds(Op op, const std::vector<float>& x, std::int64_t cols, float temperature = 1) {
  const Kernel& k = the_kernel();
  const auto rows = static_cast<std::int64_t>(x.size()) / cols;
  const auto n = static_cast<std::size_t>(cols);
  const std::size_t per_row = per_entry(op) ? n : 1;
  std::vector<float> out(static_cast<std::size_t>(rows) * per_row);
  const void* in[] = {x.data()};
  void* outs[] = {out.data()};
  k.call({op, in, outs, rows, cols, temperature});
  const OpDecl& d = *k.find(op);
  oracle::RowJudge judge(Format::f32);
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
    // A named row: the judge keeps a view of it.
    const std::vector<double> row(x.begin() + static_cast<std::ptrdiff_t>(r * n),
                                  x.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
    judge.set_row(row, temperature);
    const std::vector<double> got(out.begin() + static_cast<std::ptrdiff_t>(r * per_row),
                                  out.begin() + static_cast<std::ptrdiff_t>((r + 1) * per_row));
    const oracle::RowVerdict v = judge.judge(d, k.masked_policy, got, 0);
    if (!v.holds())
      return ::testing::AssertionFailure() << name(op) << " row " << r << ": " << oracle::explain(v, d, got, judge, 0);
  }
  return ::testing::AssertionSuccess();
}

using test_rows::random_rows;

TEST(ShiftedLog1pSimd, EveryIsaGivesTheSameBits) {
  std::mt19937 rng(29);
  int compared = 0;
  for (Op op : all_ops)
    for (std::int64_t cols : {1, 3, 15, 16, 17, 63, 64, 65, 100, 1000, 4097, 70001})
      for (float t : {1.0f, 0.7f, 3.0f}) {
        const std::vector<float> x = random_rows(rng, cols > 5000 ? 8 : 22, cols, 20.0f);
        const std::vector<float> ref = run_on(op, SimdIsa::baseline, x, cols, t);
        for (SimdIsa isa : {SimdIsa::avx2, SimdIsa::avx512}) {
          if (!simd_isa_supported(isa)) continue;
          const std::vector<float> got = run_on(op, isa, x, cols, t);
          for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(ref[i]))
                << name(op) << " " << name(isa) << " cols " << cols << " T " << t << " row " << i;
          ++compared;
        }
      }
  std::printf("shifted_log1p_simd: compared %d batches against the baseline code (here: %s)\n", compared,
              std::string(name(best_simd_isa())).c_str());
}

TEST(ShiftedLog1pSimd, HoldsItsContractsOnRandomRows) {
  std::mt19937 rng(11);
  for (Op op : all_ops)
    for (std::int64_t cols : {1, 2, 7, 16, 33, 200, 4097, 70001})
      for (float sd : {0.1f, 1.0f, 20.0f})
        for (float t : {1.0f, 0.7f, 2.5f}) {
          const std::vector<float> x = random_rows(rng, cols > 1000 ? 6 : 14, cols, sd);
          EXPECT_TRUE(holds(op, x, cols, t)) << name(op) << " cols " << cols << " sd " << sd << " T " << t;
        }
}

// The policy's values and the cases the form is built for: a fully masked
// row (lse -inf, entropy 0); a single entry (lse = x, entropy exactly 0);
// c tied maxima with the rest underflowing (lse = a + log c, entropy log c);
// a confident row (the entropy ~ rest (1 + gap), far below u, still
// positive and within its contract: the naive -sum p log p gives 0 or a
// cancelled value there).
TEST(ShiftedLog1pSimd, ExactValuesAndConfidentRows) {
  const std::vector<float> x = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                3, -INFINITY, -INFINITY, -INFINITY,  //
                                7, 7, 7, -300,  //
                                0, -30, -30, -30};
  for (SimdIsa isa : {SimdIsa::baseline, SimdIsa::avx2, SimdIsa::avx512}) {
    if (!simd_isa_supported(isa)) continue;
    const std::vector<float> lse = run_on(Op::lse, isa, x, 4, 1.0f);
    const std::vector<float> h = run_on(Op::entropy, isa, x, 4, 1.0f);
    EXPECT_EQ(lse[0], -INFINITY);
    EXPECT_EQ(h[0], 0.0f);
    EXPECT_EQ(lse[1], 3.0f);
    EXPECT_EQ(h[1], 0.0f);
    EXPECT_EQ(lse[2], static_cast<float>(7.0 + std::log(3.0)));
    EXPECT_EQ(h[2], static_cast<float>(std::log(3.0)));
    const std::vector<float> y = run_on(Op::softmax, isa, x, 4, 1.0f);
    const std::vector<float> ly = run_on(Op::log_softmax, isa, x, 4, 1.0f);
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(y[j], 0.0f);
      EXPECT_EQ(ly[j], -INFINITY);
    }
    EXPECT_EQ(y[4], 1.0f);
    EXPECT_EQ(ly[4], 0.0f);
    EXPECT_EQ(y[5], 0.0f);
    EXPECT_EQ(ly[5], -INFINITY);
    EXPECT_EQ(y[8], 1.0f / 3.0f);
    EXPECT_EQ(ly[8], static_cast<float>(-std::log(3.0)));
    EXPECT_LT(ly[12], 0.0f);  // -log1p(3 e^-30), not 0
    EXPECT_GT(h[3], 0.0f);
    EXPECT_NEAR(h[3], 3 * std::exp(-30.0) * 31, 1e-6 * 3 * std::exp(-30.0) * 31);
  }
  for (Op op : all_ops) EXPECT_TRUE(holds(op, x, 4)) << name(op);
}

// One dominant entry and 999 others `gap` below it: rest = 999 e^-gap, and
// the log-softmax at the max is -log1p(rest) ~ -rest. From gap ~ 87 the
// terms are subnormal and exp16 rounds each to the subnormal grid (up to
// denorm_min/2 off): below rest = 2^-64 rest comes from the double pass, and
// the max entry stays within a couple of ulp (hundreds without it).
TEST(ShiftedLog1pSimd, ConfidentRowsWithSubnormalTermsKeepTheMaxEntryAccurate) {
  for (float gap : {20.0f, 44.0f, 60.0f, 87.0f, 90.0f, 100.0f, 103.0f, 110.0f}) {
    std::vector<float> x(1000, -gap);
    x[0] = 0;
    for (SimdIsa isa : {SimdIsa::baseline, SimdIsa::avx2, SimdIsa::avx512}) {
      if (!simd_isa_supported(isa)) continue;
      const float got = run_on(Op::log_softmax, isa, x, 1000, 1.0f)[0];
      const double exact = -std::log1p(999 * std::exp(-static_cast<double>(gap)));
      const double ulp = std::nextafter(static_cast<float>(-exact), INFINITY) - static_cast<float>(-exact);
      // Above 2^-64 (gap < 51.3) rest is the 16-lane f32 sum: within the
      // contract (n/16 + 9 + R), not within 2 ulp.
      if (gap > 52) {
        EXPECT_LE(std::fabs(got - exact), 2 * ulp) << "gap " << gap << " " << name(isa);
      }
    }
    for (Op op : all_ops) EXPECT_TRUE(holds(op, x, 1000)) << name(op) << " gap " << gap;
    for (std::size_t j = 1; j < x.size(); j += 3) x[j] -= 0.5f;  // rounding errors of mixed sign
    for (Op op : all_ops) {
      EXPECT_TRUE(holds(op, x, 1000)) << name(op) << " gap " << gap;
      EXPECT_TRUE(holds(op, x, 1000, 0.7f)) << name(op) << " gap " << gap;
    }
  }
}

TEST(ShiftedLog1pSimd, OpsAreChecked) {
  const std::vector<float> x = {1, 2};
  float out[2];
  EXPECT_THROW(shifted_log1p_simd(Op::sparsemax, best_simd_isa(), x.data(), out, 1, 2, 1), std::invalid_argument);
  const Kernel& k = the_kernel();
  EXPECT_EQ(k.format, Format::f32);
  EXPECT_EQ(k.masked_policy, MaskedRowPolicy::zeros);
  for (Op op : all_ops) EXPECT_NE(k.find(op), nullptr) << name(op);
  const void* in[] = {x.data()};
  void* out_ptrs[] = {out};
  EXPECT_THROW(k.call({Op::sparsemax, in, out_ptrs, 1, 2, 1.0}), std::invalid_argument);
}

}  // namespace
}  // namespace softcheck::kernels
