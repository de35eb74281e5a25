// The gradient kernels (cross_entropy.cpp, softmax_backward.cpp) against the
// oracle through the row judge, on the rows where the textbook formulas
// break: a confident correct prediction (p_t - 1 and the loss cancel), masked
// entries and targets, ignored and fully masked rows, chunk merges, and an
// upstream gradient whose <g, y> cancels g exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernel_util.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/storage.hpp"

namespace softcheck {
namespace {

struct Outputs {
  std::vector<double> loss, dx;
};

// One call on `rows` rows of x (values of k's format), with one target per row.
Outputs call(const Kernel& k, const std::vector<double>& x, std::int64_t cols, const std::vector<std::int64_t>& targets,
             double temperature = 1) {
  const auto rows = static_cast<std::int64_t>(targets.size());
  const std::vector<unsigned char> xin = pack(x, k.format);
  std::vector<unsigned char> loss(static_cast<std::size_t>(rows) * element_size(k.format));
  std::vector<unsigned char> dx(x.size() * element_size(k.format));
  const void* in[] = {xin.data(), targets.data()};
  void* out[] = {loss.data(), dx.data()};
  k.call({Op::cross_entropy, in, out, rows, cols, temperature});
  return {unpack(loss, k.format, static_cast<std::size_t>(rows)), unpack(dx, k.format, x.size())};
}

// Whether both outputs of every row hold k's contracts (or policy).
::testing::AssertionResult holds(const Kernel& k, const std::vector<double>& x, std::int64_t cols,
                                 const std::vector<std::int64_t>& targets, double temperature = 1) {
  const Outputs o = call(k, x, cols, targets, temperature);
  const OpDecl& d = *k.find(Op::cross_entropy);
  oracle::RowJudge judge(k.format);
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const std::span<const double> row(x.data() + r * static_cast<std::size_t>(cols), static_cast<std::size_t>(cols));
    judge.set_row(row, temperature);
    judge.set_target(targets[r]);
    const std::span<const double> loss(&o.loss[r], 1);
    const std::span<const double> dx(o.dx.data() + r * static_cast<std::size_t>(cols), static_cast<std::size_t>(cols));
    for (std::size_t out = 0; out < 2; ++out) {
      const std::span<const double> y = out == 0 ? loss : dx;
      const oracle::RowVerdict v = judge.judge(d, k.masked_policy, y, out);
      if (!v.holds())
        return ::testing::AssertionFailure() << k.name << " row " << r << " target " << targets[r] << " output "
                                             << out << ": " << oracle::explain(v, d, y, judge, out);
    }
  }
  return ::testing::AssertionSuccess();
}

const Kernel& gradient_kernel(const std::string& name) {
  const Kernel* k = find_kernel(name);
  if (k == nullptr) throw std::runtime_error("no kernel " + name);
  return *k;
}

// Rows of 4: confident (t the max, p_t ~ 1 - e^-40), plain, a masked entry,
// a masked target (loss +inf), ignored, fully masked, a tie at the max.
const std::vector<double> rows4 = {40,        0,         -1,  -2,         //
                                   0.5,       -0.25,     2,   1,          //
                                   3,         -INFINITY, 1,   2,          //
                                   3,         -INFINITY, 1,   2,          //
                                   1,         2,         3,   4,          //
                                   -INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                   5,         5,         -3,  0};
const std::vector<std::int64_t> targets4 = {0, 3, 2, 1, ignore_index, 0, 1};

TEST(CrossEntropyKernels, EveryKernelHoldsItsContractsOnTheHardRows) {
  for (const Kernel& k : gradient_kernels()) {
    if (k.test_only || k.find(Op::cross_entropy) == nullptr) continue;
    // f16 / bf16: the same rows rounded to the format (all of them are values of both).
    EXPECT_TRUE(holds(k, rows4, 4, targets4)) << k.name;
    EXPECT_TRUE(holds(k, rows4, 4, targets4, 0.7)) << k.name;
  }
}

TEST(CrossEntropyKernels, IgnoredMaskedAndFullyMaskedRowsAreExactZeros) {
  for (const char* name : {"cross_entropy_f32", "cross_entropy_chunked_f64", "bf16_cross_entropy_f32acc"}) {
    const Outputs o = call(gradient_kernel(name), rows4, 4, targets4);
    EXPECT_EQ(o.loss[3], INFINITY) << name;  // the target is masked: p_t = 0
    EXPECT_EQ(o.dx[3 * 4 + 1], -1.0) << name;
    for (std::size_t r : {4u, 5u}) {
      EXPECT_EQ(o.loss[r], 0.0) << name;
      for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(o.dx[r * 4 + j], 0.0) << name;
    }
    EXPECT_EQ(o.dx[2 * 4 + 1], 0.0) << name;  // a masked entry
  }
}

// Chunks of 3 over rows of 10 (a merge at every chunk, a fully masked chunk,
// the max in the last chunk) hold the chunked contracts; a row within one
// chunk is the two-pass kernel bit for bit.
TEST(CrossEntropyKernels, ChunkMergesHoldAndOneChunkIsTheTwoPassKernel) {
  const Kernel chunked = kernels::cross_entropy_chunked_kernel(3);
  const std::vector<double> x = {1,   -2, 0.5, -INFINITY, -INFINITY, -INFINITY, 3,  30, -7, 29.5,  //
                                 -40, 1,  2,   3,         4,         5,         6,  7,  8,  100};
  EXPECT_TRUE(holds(chunked, x, 10, {7, 9}));
  EXPECT_TRUE(holds(chunked, x, 10, {0, 4}, 3.7));
  const Kernel wide = kernels::cross_entropy_chunked_kernel(16);
  const Outputs a = call(wide, x, 10, {7, 2}), b = call(gradient_kernel("cross_entropy_f64"), x, 10, {7, 2});
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.dx, b.dx);
}

// Rows of 200 (13 chunks of 16): the max growing in every chunk (each merge
// rescales the whole rest), a fully masked chunk, a masked target, a
// dominant entry late in the row, and an ignored row.
std::vector<double> many_chunk_rows() {
  std::vector<double> x;
  for (int j = 0; j < 200; ++j) x.push_back(0.125 * j);
  for (int j = 0; j < 200; ++j) x.push_back(j >= 16 && j < 32 ? -INFINITY : j == 150 ? 40.0 : -0.25 * (j % 7));
  for (int j = 0; j < 200; ++j) x.push_back(static_cast<double>((j * 37) % 23) - 11);
  return x;
}

// The chunk-16 kernels, registered for the fuzzers' rows of up to 256
// entries: their contracts are the two-pass ones raised by with_chunk_merges
// at C = 16, they hold them on rows of many chunks, and a row within one
// chunk is the two-pass kernel bit for bit.
TEST(CrossEntropyKernels, Chunk16KernelsHoldTheirContractsOverManyMerges) {
  const std::vector<double> x = many_chunk_rows();
  for (const auto& [name, two_pass] : {std::pair{"cross_entropy_chunked16_f32", "cross_entropy_f32"},
                                       std::pair{"cross_entropy_chunked16_f64", "cross_entropy_f64"}}) {
    const Kernel& k = gradient_kernel(name);
    EXPECT_FALSE(k.test_only) << name;
    const OpDecl& d = *k.find(Op::cross_entropy);
    const OpDecl& base = *gradient_kernel(two_pass).find(Op::cross_entropy);
    for (std::size_t out = 0; out < 2; ++out) {
      const Contract &c = d.contract_of(out), &c0 = base.contract_of(out);
      EXPECT_DOUBLE_EQ(c.a, c0.a + 5) << name;
      EXPECT_DOUBLE_EQ(c.b, c0.b + 4.02 / 16) << name;
      EXPECT_DOUBLE_EQ(c.c, c0.c + 1) << name;
      EXPECT_DOUBLE_EQ(c.t, c0.t) << name;
    }
    EXPECT_TRUE(holds(k, x, 200, {199, 20, 5}));
    EXPECT_TRUE(holds(k, x, 200, {0, 150, ignore_index}, 0.7));
    const Outputs a = call(k, rows4, 4, targets4), b = call(gradient_kernel(two_pass), rows4, 4, targets4);
    EXPECT_EQ(a.loss, b.loss) << name;
    EXPECT_EQ(a.dx, b.dx) << name;
  }
}

// The careless kernel rounds p_t to 1 on a confident row, so its loss is 0
// where the exact loss is ~e^-20: the judge flags it (the mutation test of
// the cross-entropy contracts).
TEST(CrossEntropyKernels, CarelessLossIsCaught) {
  const Kernel& careless = gradient_kernel("careless_cross_entropy_f32");
  ASSERT_TRUE(careless.test_only);
  const std::vector<double> x = {20, 0, -1};
  EXPECT_EQ(call(careless, x, 3, {0}).loss[0], 0.0);
  EXPECT_FALSE(holds(careless, x, 3, {0}));
  EXPECT_TRUE(holds(gradient_kernel("cross_entropy_f32"), x, 3, {0}));
}

// A kernel that declares label smoothing but computes the one-hot loss and
// gradient is caught on every plain row (its loss misses eps (lse - mean z)
// - eps (lse - z_t), its gradient eps / n); the smoothed kernel holds.
TEST(CrossEntropyKernels, IgnoredLabelSmoothingIsCaught) {
  const Kernel& smoothed = gradient_kernel("cross_entropy_ls0p1_f64");
  ASSERT_EQ(smoothed.find(Op::cross_entropy)->params.label_smoothing, 0.1);
  Kernel ignores = gradient_kernel("cross_entropy_f64");
  ignores.ops = smoothed.ops;  // claims eps = 0.1 and its contracts
  const std::vector<double> x = {0.5, -0.25, 2, 1};
  EXPECT_FALSE(holds(ignores, x, 4, {3}));
  EXPECT_TRUE(holds(smoothed, x, 4, {3}));
  // And the other way: smoothing where none is declared.
  Kernel smooths = smoothed;
  smooths.ops = gradient_kernel("cross_entropy_f64").ops;
  EXPECT_FALSE(holds(smooths, x, 4, {3}));
}

// The smoothed loss takes its shifts from x: an entry whose x / T overflows
// the format (x = -max at T = 0.7) has p = 0 but a finite share eps / n of
// the loss, which the kernel returns finite and within its contract.
TEST(CrossEntropyKernels, SmoothedLossOfAnEntryBeyondTheFormatAfterScaling) {
  for (const char* name : {"cross_entropy_ls0p1_f32", "cross_entropy_ls0p1_f64", "bf16_cross_entropy_ls0p1_f32acc"}) {
    const Kernel& k = gradient_kernel(name);
    const std::vector<double> x = {90, lowest(k.format)};
    EXPECT_TRUE(std::isfinite(call(k, x, 2, {0}, 0.7).loss[0])) << name;
    EXPECT_TRUE(holds(k, x, 2, {0}, 0.7)) << name;
  }
}

// At T = 2^-126 the smoothed loss's terms q_j (x_k - x_j) must be divided
// by T before the product can go subnormal: a row whose products q d_j
// q d_j / 2 (d_j ~ 7.7 2^-126) each round down by almost half a subnormal
// ulp cost 459 ulp against a bound of 319 when the loss summed
// q (x_k / 2 - x_j / 2) and scaled the sum by 2 / T at the end.
TEST(CrossEntropyKernels, SmoothedLossAtATinyTemperature) {
  const Kernel& k = gradient_kernel("cross_entropy_ls0p1_f32");
  const std::size_t n = 256;
  const float q = static_cast<float>(0.1 / n), tiny = 0x1p-126f;
  std::vector<double> x = {0};
  for (std::int64_t m = 7 * (1 << 23); x.size() < n; ++m) {
    const float d = std::ldexp(static_cast<float>(m), -149);  // a normal multiple of 2^-149 near 7.7 tiny
    const double product = static_cast<double>(q) * (d / 2);  // exact: what a sum of q (x_k/2 - x_j/2) rounds
    const double units = product / 0x1p-149;                  // in subnormal ulps
    if (units - std::floor(units) > 0.45 && units - std::floor(units) < 0.5) x.push_back(-static_cast<double>(d));
  }
  ASSERT_GT(-x[1], 7 * tiny);
  EXPECT_TRUE(holds(k, x, static_cast<std::int64_t>(n), {0}, tiny));
}

TEST(CrossEntropyKernels, OperandCountsAndTargetsAreChecked) {
  const Kernel& k = gradient_kernel("cross_entropy_f64");
  const std::vector<double> x = {1, 2};
  double loss = 0, dx[2];
  const void* one_in[] = {x.data()};
  void* out[] = {&loss, dx};
  EXPECT_THROW(k.call({Op::cross_entropy, one_in, out, 1, 2, 1.0}), std::invalid_argument);
  EXPECT_THROW(k.run(Op::cross_entropy, x.data(), out, 1, 2, 1.0), std::invalid_argument);
  const std::int64_t bad = 2;
  const void* in[] = {x.data(), &bad};
  EXPECT_THROW(k.call({Op::cross_entropy, in, out, 1, 2, 1.0}), std::invalid_argument);
}


// ---------------------------------------------------------------- backward

Outputs call_backward(const Kernel& k, Op op, const std::vector<double>& x, const std::vector<double>& g,
                      std::int64_t cols, double temperature = 1) {
  const auto rows = static_cast<std::int64_t>(x.size()) / cols;
  const std::vector<unsigned char> xin = pack(x, k.format), gin = pack(g, k.format);
  std::vector<unsigned char> y(x.size() * element_size(k.format)), dx(x.size() * element_size(k.format));
  const void* in[] = {xin.data(), gin.data()};
  void* out[] = {y.data(), dx.data()};
  k.call({op, in, out, rows, cols, temperature});
  return {unpack(y, k.format, x.size()), unpack(dx, k.format, x.size())};
}

::testing::AssertionResult backward_holds(const Kernel& k, Op op, const std::vector<double>& x,
                                          const std::vector<double>& g, std::int64_t cols, double temperature = 1) {
  const Outputs o = call_backward(k, op, x, g, cols, temperature);
  const OpDecl& d = *k.find(op);
  oracle::RowJudge judge(k.format);
  const auto n = static_cast<std::size_t>(cols);
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    judge.set_row({x.data() + r * n, n}, temperature);
    judge.set_upstream({g.data() + r * n, n});
    for (std::size_t out = 0; out < 2; ++out) {
      const std::span<const double> y((out == 0 ? o.loss : o.dx).data() + r * n, n);
      const oracle::RowVerdict v = judge.judge(d, k.masked_policy, y, out);
      if (!v.holds())
        return ::testing::AssertionFailure() << k.name << " row " << r << " output " << out << ": "
                                             << oracle::explain(v, d, y, judge, out);
    }
  }
  return ::testing::AssertionSuccess();
}

// Rows of 4 and their g: random, constant (the exact softmax gradient is 0),
// one-hot, a masked entry, a fully masked row, a dominant entry.
const std::vector<double> back_x = {0.5, -0.25, 2, 1,  //
                                    3, 1, -2, 0.125,   //
                                    1, 2, 3, 4,        //
                                    3, -INFINITY, 1, 2,  //
                                    -INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                    60, 0, -1, 2};
const std::vector<double> back_g = {0.75, -1.5, 0.25, 2,  //
                                    -1.25, -1.25, -1.25, -1.25,  //
                                    0, 0, 1, 0,  //
                                    1, 5, -2, 0.5,  //
                                    1, 2, 3, 4,  //
                                    -0.5, 3, 1, 1};

TEST(BackwardKernels, EveryKernelHoldsItsContractsOnTheHardRows) {
  int checked = 0;
  for (const Kernel& k : gradient_kernels())
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
      if (k.find(op) == nullptr) continue;
      ++checked;
      EXPECT_TRUE(backward_holds(k, op, back_x, back_g, 4));
      EXPECT_TRUE(backward_holds(k, op, back_x, back_g, 4, 0.7));
    }
  EXPECT_EQ(checked, 14);  // f32 / f64 naive and wide, f16 / bf16, SIMD f32, both ops
}

// Masked entries: softmax dx exactly 0, log-softmax dx_i = g_i (p_i = 0);
// a fully masked row: dx exactly 0 (the gradient of a constant row).
TEST(BackwardKernels, MaskedEntriesAndRows) {
  for (const char* name : {"softmax_backward_f32", "softmax_backward_wide_f64", "softmax_backward_simd_f32"}) {
    const Outputs o = call_backward(gradient_kernel(name), Op::softmax_backward, back_x, back_g, 4);
    EXPECT_EQ(o.dx[3 * 4 + 1], 0.0) << name;
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(o.dx[4 * 4 + j], 0.0) << name;
  }
  for (const char* name :
       {"log_softmax_backward_f64", "log_softmax_backward_wide_f32", "log_softmax_backward_simd_f32"}) {
    const Outputs o = call_backward(gradient_kernel(name), Op::log_softmax_backward, back_x, back_g, 4);
    EXPECT_EQ(o.dx[3 * 4 + 1], 5.0) << name;
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(o.dx[4 * 4 + j], 0.0) << name;
      EXPECT_EQ(o.loss[4 * 4 + j], -INFINITY) << name;  // y = log-softmax of a fully masked row
    }
  }
}

// A kernel whose backward ignores the <y, g> term (dx = y g) is caught on
// the random and the constant rows.
TEST(BackwardKernels, AWrongGradientIsCaught) {
  Kernel wrong = gradient_kernel("softmax_backward_f64");
  const ComputeFn right = wrong.compute;
  wrong.compute = [right](const OpCall& c) {
    right(c);
    const auto* y = static_cast<const double*>(c.out[0]);
    const auto* g = static_cast<const double*>(c.in[1]);
    auto* dx = static_cast<double*>(c.out[1]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i) dx[i] = y[i] * g[i];
  };
  EXPECT_FALSE(backward_holds(wrong, Op::softmax_backward, back_x, back_g, 4));
}

}  // namespace
}  // namespace softcheck
