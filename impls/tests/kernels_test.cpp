// Behaviour of every built-in kernel on known values, masks, batches and
// temperatures; the registry's declarations; the mutants' separation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "exp_lab_softmax.hpp"
#include "run_outputs.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/test_values.hpp"

namespace softcheck {
namespace {

using softcheck::test_values::inf;

// Runs `k` on rows x cols given as doubles; the op's first output.
std::vector<double> run(const Kernel& k, Op op, const std::vector<double>& x, std::int64_t rows = 1,
                        double temperature = 1.0) {
  return testing::run_outputs(k, op, x, rows, temperature).front();
}

double eps(const Kernel& k) { return 2 * unit_roundoff(k.format); }

// Reference softmax / log-softmax in long double (x exactly representable).
std::vector<long double> ref_softmax(const std::vector<double>& x) {
  long double a = -INFINITY;
  for (double v : x) a = std::max(a, static_cast<long double>(v));
  long double s = 0;
  for (double v : x) s += std::exp(static_cast<long double>(v) - a);
  std::vector<long double> y;
  for (double v : x) y.push_back(std::exp(static_cast<long double>(v) - a) / s);
  return y;
}

bool is_shift_family(const Kernel& k) { return k.algorithm != "naive"; }

std::vector<double> as_format(const Kernel& k, std::vector<double> x) {
  if (k.format == Format::f32)
    for (double& v : x) v = static_cast<float>(v);
  return x;
}

class EveryKernel : public ::testing::TestWithParam<const Kernel*> {};

std::string kernel_name(const ::testing::TestParamInfo<const Kernel*>& p) { return p.param->name; }

// The f32/f64 kernels that can run here (f16 kernels and the CUDA kernels are
// covered by their own tests, e.g. tiled_online_test.cpp; the exp lab's
// kernels, whose exps are approximate by design and whose tolerances are
// their contracts, by exp_lab_softmax_test.cpp).
std::vector<const Kernel*> all_builtin() {
  std::vector<const Kernel*> out;
  for (const Kernel& k : builtin_kernels())
    if (k.available && (k.format == Format::f32 || k.format == Format::f64) && !kernels::is_exp_lab_softmax(k))
      out.push_back(&k);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Builtin, EveryKernel, ::testing::ValuesIn(all_builtin()), kernel_name);

TEST_P(EveryKernel, KnownValuesFromReference) {
  // REFERENCE.md, Entmax family: x = [-2, 0, 0.5] -> softmax [0.0486, 0.3592, 0.5922].
  const Kernel& k = *GetParam();
  const std::vector<double> x = {-2, 0, 0.5};
  const auto y = run(k, Op::softmax, x);
  const double expect[] = {0.0486, 0.3592, 0.5922};
  const auto ref = ref_softmax(x);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(y[j], expect[j], 5e-5) << j;
    EXPECT_NEAR(y[j], static_cast<double>(ref[j]), 8 * eps(k) * static_cast<double>(ref[j])) << j;
  }
  if (k.find(Op::log_softmax)) {
    const auto l = run(k, Op::log_softmax, x);
    for (std::size_t j = 0; j < 3; ++j)
      EXPECT_NEAR(l[j], static_cast<double>(std::log(ref[j])), 8 * eps(k) * 3) << j;
  }
}

TEST_P(EveryKernel, LargeInputsOverflowOnlyWithoutShift) {
  // exp(1000) overflows in f32 and f64: the point of the max shift.
  const Kernel& k = *GetParam();
  const auto y = run(k, Op::softmax, {1000, 1001, 1002});
  if (is_shift_family(k)) {
    const auto ref = ref_softmax({0, 1, 2});  // [0.0900, 0.2447, 0.6652]
    // lse_alt pays u|lse| ~ 1002u in exp's argument (its contract's 1*M term).
    const double tol = (k.algorithm == "lse_alt" ? 1100 : 16) * eps(k);
    for (std::size_t j = 0; j < 3; ++j) {
      ASSERT_TRUE(std::isfinite(y[j])) << j;
      EXPECT_NEAR(y[j], static_cast<double>(ref[j]), tol) << j;
    }
    EXPECT_NEAR(y[2], 0.6652, 5e-5);
  } else {
    for (double v : y) EXPECT_TRUE(std::isnan(v)) << "naive: inf/inf expected, got " << v;
  }
}

TEST_P(EveryKernel, EqualEntriesGiveOneOverN) {
  const Kernel& k = *GetParam();
  for (std::size_t n : {1u, 2u, 3u, 7u, 100u, 1000u}) {
    const std::vector<double> x(n, 0.3);
    const auto y = run(k, Op::softmax, x);
    const double dn = static_cast<double>(n);
    for (double v : y) EXPECT_NEAR(v, 1.0 / dn, (dn + 4) * eps(k) / dn) << n;
    if (is_shift_family(k) && k.algorithm != "lse_alt") {
      // exp(0) = 1 exactly, sum = n exactly, one rounding of 1/n.
      const double expect = k.format == Format::f32 ? static_cast<double>(1.0f / static_cast<float>(n))
                                                    : 1.0 / static_cast<double>(n);
      for (double v : y) EXPECT_EQ(v, expect) << n;
    }
    if (k.find(Op::log_softmax)) {
      const auto l = run(k, Op::log_softmax, x);
      for (double v : l)
        EXPECT_NEAR(v, -std::log(static_cast<double>(n)), 4 * eps(k) * (1 + std::log(n))) << n;
    }
  }
}

TEST_P(EveryKernel, SumsToOneAndLogSoftmaxIsConsistent) {
  const Kernel& k = *GetParam();
  std::mt19937_64 rng(1234);
  std::normal_distribution<double> normal(0, 3);
  for (int rep = 0; rep < 50; ++rep) {
    const std::size_t n = 1 + rng() % 300;
    std::vector<double> x(n);
    for (double& v : x) v = normal(rng);
    x = as_format(k, x);
    const auto y = run(k, Op::softmax, x);
    double s = 0;
    for (double v : y) {
      EXPECT_GE(v, 0);
      EXPECT_LE(v, 1);
      s += v;
    }
    EXPECT_NEAR(s, 1.0, 3 * static_cast<double>(n) * eps(k));
    if (k.find(Op::log_softmax)) {
      const auto l = run(k, Op::log_softmax, x);
      for (std::size_t j = 0; j < n; ++j) {
        EXPECT_LE(l[j], 0.0);
        EXPECT_NEAR(std::exp(l[j]), y[j], (3 * static_cast<double>(n) + 40) * eps(k) * y[j] + 1e-300);
      }
    }
  }
}

TEST_P(EveryKernel, MaskedEntriesAreExactlyZeroAndLikeDropped) {
  const Kernel& k = *GetParam();
  const std::vector<double> masked = {-inf, 1, -inf, 2, 0.5, -inf};
  const std::vector<double> kept = {1, 2, 0.5};
  const auto y = run(k, Op::softmax, masked);
  const auto y_kept = run(k, Op::softmax, kept);
  EXPECT_EQ(y[0], 0.0);
  EXPECT_EQ(y[2], 0.0);
  EXPECT_EQ(y[5], 0.0);
  EXPECT_FALSE(std::signbit(y[0]));
  // Masked entries add exactly 0 to every sum: bitwise equal to dropping them.
  EXPECT_EQ(y[1], y_kept[0]);
  EXPECT_EQ(y[3], y_kept[1]);
  EXPECT_EQ(y[4], y_kept[2]);
  if (k.find(Op::log_softmax)) {
    const auto l = run(k, Op::log_softmax, masked);
    const auto l_kept = run(k, Op::log_softmax, kept);
    EXPECT_EQ(l[0], -inf);
    EXPECT_EQ(l[2], -inf);
    EXPECT_EQ(l[5], -inf);
    EXPECT_EQ(l[1], l_kept[0]);
    EXPECT_EQ(l[3], l_kept[1]);
    EXPECT_EQ(l[4], l_kept[2]);
  }
}

TEST_P(EveryKernel, LeadingMaskedEntries) {
  // The online normaliser must not turn a leading -inf into -inf - -inf = NaN.
  const Kernel& k = *GetParam();
  const auto y = run(k, Op::softmax, {-inf, 1, 2});
  const auto ref = ref_softmax({1, 2});
  EXPECT_EQ(y[0], 0.0);
  EXPECT_NEAR(y[1], static_cast<double>(ref[0]), 8 * eps(k));
  EXPECT_NEAR(y[2], static_cast<double>(ref[1]), 8 * eps(k));
  const auto single = run(k, Op::softmax, {-inf, -inf, 7});
  EXPECT_EQ(single[0], 0.0);
  EXPECT_EQ(single[1], 0.0);
  EXPECT_EQ(single[2], 1.0);
}

TEST_P(EveryKernel, FullyMaskedRowFollowsDeclaredPolicy) {
  const Kernel& k = *GetParam();
  for (std::size_t n : {1u, 4u, 33u}) {
    const std::vector<double> x(n, -inf);
    for (const OpDecl& d : k.ops) {
      const auto y = run(k, d.op, x);
      ASSERT_EQ(y.size(), spec(d.op).scalar_output() ? 1u : n);
      for (double v : y)  // the policy's values (op.hpp), written out for the row ops
        switch (k.masked_policy) {
          case MaskedRowPolicy::nan:
            EXPECT_TRUE(std::isnan(v) || (d.op == Op::lse && v == -inf)) << name(d.op);
            break;
          case MaskedRowPolicy::zeros:
            EXPECT_EQ(v, d.op == Op::log_softmax || d.op == Op::lse ? -inf : 0.0) << name(d.op);
            break;
          case MaskedRowPolicy::uniform:
            EXPECT_TRUE(is_masked_row_value(v, spec(d.op).out[0].kind, k.masked_policy, static_cast<double>(n),
                                            unit_roundoff(k.format)))
                << name(d.op) << " " << v;
            break;
        }
    }
  }
}

TEST_P(EveryKernel, BatchedRowsAreIndependent) {
  const Kernel& k = *GetParam();
  std::mt19937_64 rng(99);
  std::normal_distribution<double> normal(0, 10);
  const std::int64_t rows = 5, cols = 37;
  std::vector<double> x(rows * cols);
  for (double& v : x) v = normal(rng);
  x = as_format(k, x);
  x[2 * cols + 5] = -inf;
  for (std::int64_t j = 0; j < cols; ++j) x[3 * cols + j] = -inf;  // a fully masked row
  for (const OpDecl& d : k.ops) {
    const auto batched = run(k, d.op, x, rows);
    const std::int64_t out_cols = output_cols(d.op, cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::vector<double> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      const auto single = run(k, d.op, row);
      for (std::int64_t j = 0; j < out_cols; ++j) {
        const double b = batched[r * out_cols + j], s = single[j];
        EXPECT_TRUE(b == s || (std::isnan(b) && std::isnan(s))) << r << "," << j;
      }
    }
  }
}

TEST_P(EveryKernel, InPlaceRunMatches) {
  const Kernel& k = *GetParam();
  const std::vector<double> x = {0.25, -3, 8, 1, -inf, 2};
  const auto y = run(k, Op::softmax, x, 1, 1.5);
  if (k.format == Format::f64) {
    std::vector<double> xy = x;
    k.run(Op::softmax, xy.data(), xy.data(), 1, 6, 1.5);
    EXPECT_EQ(xy, y);
  } else {
    std::vector<float> xy(x.begin(), x.end());
    k.run(Op::softmax, xy.data(), xy.data(), 1, 6, 1.5);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(static_cast<double>(xy[i]), y[i]);
  }
}

TEST_P(EveryKernel, TemperatureTwoEqualsHalvedInputs) {
  // Halving integers is exact, so T = 2 must equal running on x/2 bitwise.
  const Kernel& k = *GetParam();
  const std::vector<double> x = {-7, 3, 0, 12, 5, -1, 9};
  std::vector<double> half = x;
  for (double& v : half) v /= 2;
  for (const OpDecl& d : k.ops) {
    EXPECT_EQ(run(k, d.op, x, 1, 2.0), run(k, d.op, half)) << name(d.op);
    // Lower temperature sharpens: the largest entry's probability grows.
  }
  const auto cold = run(k, Op::softmax, x, 1, 0.5);
  const auto warm = run(k, Op::softmax, x, 1, 4.0);
  const auto plain = run(k, Op::softmax, x);
  EXPECT_GT(cold[3], plain[3]);
  EXPECT_LT(warm[3], plain[3]);
}

TEST_P(EveryKernel, TemperatureIsRoundedToTheFormatThenDivides) {
  // z_i = x_i / T(temperature) in T: the same as scaling beforehand in T.
  const Kernel& k = *GetParam();
  const std::vector<double> x = {0.1, -2.5, 3.3, 7.25, 1};
  std::vector<double> z = x;
  if (k.format == Format::f32) {
    const float t = 3.7f;
    for (double& v : z) v = static_cast<double>(static_cast<float>(v) / t);
  } else {
    for (double& v : z) v /= 3.7;
  }
  for (const OpDecl& d : k.ops) EXPECT_EQ(run(k, d.op, x, 1, 3.7), run(k, d.op, z)) << name(d.op);
}

TEST(Naive, OverflowEdgeInF32) {
  const Kernel* k = find_kernel("naive_f32");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(std::isfinite(run(*k, Op::softmax, {88.0, 87.0})[0]));
  EXPECT_TRUE(std::isnan(run(*k, Op::softmax, {89.0, 87.0})[0]));  // expf(89) = inf
}

TEST(ShiftedLog1p, DominantEntryKeepsItsTinyLogSoftmax) {
  // [0, -30]: log-softmax_0 = -log1p(e^-30) ~ -9.36e-14, which log(1 + s') loses.
  const double exact = -std::log1p(std::exp(-30.0));
  const auto good = run(*find_kernel("shifted_log1p_f64"), Op::log_softmax, {0, -30});
  EXPECT_NEAR(good[0], exact, 4e-16 * std::abs(exact));
  const auto shifted = run(*find_kernel("shifted_f32"), Op::log_softmax, {0, -30});
  EXPECT_EQ(shifted[0], 0.0);  // why "shifted" declares no log-softmax contract
  const auto good32 = run(*find_kernel("shifted_log1p_f32"), Op::log_softmax, {0, -30});
  EXPECT_NEAR(good32[0], exact, 1e-6 * std::abs(exact));
}

// softmax_lse is the online softmax and the online lse from one state: each
// output is bit-identical to the op computed on its own.
TEST(Online, SoftmaxLseIsBothOutputsOfOnePass) {
  for (const char* name : {"online_f32", "online_f64"}) {
    const Kernel& k = *find_kernel(name);
    const std::vector<double> x = {-50, -3, 0, 10, 2, 40, -inf, 7.25, 1, 2, 3, 4, -inf, -inf, -inf, -inf};
    for (double t : {1.0, 0.7}) {
      const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
      const auto both = testing::run_outputs(k, Op::softmax_lse, x, 4, t);
      ASSERT_EQ(both.size(), 2u);
      const auto y = run(k, Op::softmax, x, 4, t);
      ASSERT_EQ(both[0].size(), y.size());
      for (std::size_t j = 0; j < y.size(); ++j) EXPECT_TRUE(same(both[0][j], y[j])) << name << " y[" << j << "]";
      const auto lse = run(k, Op::lse, x, 4, t);
      ASSERT_EQ(both[1].size(), 4u);
      for (std::size_t r = 0; r < 4; ++r) EXPECT_TRUE(same(both[1][r], lse[r])) << name << " row " << r;
      EXPECT_EQ(both[1][3], -inf) << "a fully masked row has lse log 0";
    }
  }
}

TEST(Online, RescalesWhenTheMaxMovesLater) {
  const auto y = run(*find_kernel("online_f64"), Op::softmax, {-50, -3, 0, 10, 2, 40});
  const auto ref = ref_softmax({-50, -3, 0, 10, 2, 40});
  for (std::size_t j = 0; j < y.size(); ++j)
    EXPECT_NEAR(y[j], static_cast<double>(ref[j]), 1e-14 * static_cast<double>(ref[j]) + 1e-300);
}

// ------------------------------------------------------------------ registry

TEST(Registry, TenKernelsInFixedOrder) {
  const std::vector<std::string> expected = {
      "naive_f32",   "naive_f64",   "shifted_f32", "shifted_f64", "shifted_log1p_f32",
      "shifted_log1p_f64", "lse_alt_f32", "lse_alt_f64", "online_f32",  "online_f64"};
  std::vector<std::string> names;
  for (const Kernel& k : builtin_kernels()) names.push_back(k.name);
  // The first ten; later families (tiled_online, cuda_*) are checked by their own tests.
  names.resize(std::min(names.size(), expected.size()));
  EXPECT_EQ(names, expected);
}

// The low-precision kernels of lowp_shifted.cpp: FORMAT_ALGORITHM names
// (f16_shifted_f32acc), contracts in units of their 16-bit format.
bool is_lowp_shifted(const Kernel& k) {
  return k.algorithm == "shifted_f32acc" || k.algorithm == "shifted_f16acc";
}

TEST(Registry, EveryKernelDeclaresItself) {
  std::set<std::string> names;
  for (const auto* list : {&builtin_kernels(), &mutant_kernels()}) {
    for (const Kernel& k : *list) {
      SCOPED_TRACE(k.name);
      EXPECT_TRUE(names.insert(k.name).second) << "duplicate name";
      EXPECT_FALSE(k.algorithm.empty());
      EXPECT_FALSE(k.description.empty());
      EXPECT_TRUE(k.compute);
      EXPECT_TRUE(k.available || !k.unavailable_reason.empty()) << "an unavailable kernel says why";
      ASSERT_FALSE(k.ops.empty());
      ASSERT_NE(k.find(Op::softmax), nullptr) << "every kernel provides softmax";
      std::set<Op> ops;
      for (const OpDecl& d : k.ops) {
        EXPECT_TRUE(ops.insert(d.op).second) << "op declared twice";
        EXPECT_EQ(d.further_contracts.size(), spec(d.op).out.size() - 1) << "one contract per output";
        EXPECT_FALSE(d.contract.why.empty()) << "contract (or its absence) needs a why";
        if (d.contract.declared && is_lowp_shifted(k)) {
          // f16/bf16 kernels computing in f32 (lowp_shifted.cpp): 0.5 ulp for the
          // final rounding, the f32 terms (temperature included) scaled by u32/u_f.
          EXPECT_GE(d.contract.a, 0.5) << "the final rounding alone is 0.5 ulp";
          EXPECT_GT(d.contract.t, 0) << "fl(x / T) in f32 moves softmax by up to 4 u32 M";
        } else if (d.contract.declared && spec(d.op).out[0].metric == Metric::absolute) {
          // lse, entropy: absolute error in units of u (docs/ops.md); no subnormal ulps to cover.
          EXPECT_GE(d.contract.t, 2) << "fl(x / T) moves lse by up to 2uM (entropy by 4uM log n)";
        } else if (d.contract.declared) {
          EXPECT_GE(d.contract.a, 1) << "a >= 1 covers subnormal / non-contributing outputs";
          EXPECT_GE(d.contract.t, 4) << "fl(x / T) moves softmax by up to 4uM";
        }
        EXPECT_EQ(k.find(d.op), &d);
      }
      if (!k.test_only && is_lowp_shifted(k)) {
        EXPECT_EQ(k.name, std::string(name(k.format)) + "_" + k.algorithm);  // f16_shifted_f32acc
        EXPECT_EQ(find_kernel(k.name), &k);
      } else if (!k.test_only) {
        EXPECT_EQ(k.name, k.algorithm + "_" + std::string(name(k.format)));
        EXPECT_EQ(find_kernel(k.name), &k);
      }
    }
  }
}

TEST(Registry, DeclaredContractsAndPolicies) {
  auto contract = [](std::string_view kname, Op op) {
    const Kernel* k = find_kernel(kname);
    EXPECT_NE(k, nullptr) << kname;
    const OpDecl* d = k ? k->find(op) : nullptr;
    return d ? d->contract.formula() : std::string("<not provided>");
  };
  for (const char* f : {"_f32", "_f64"}) {
    const std::string s(f);
    EXPECT_EQ(contract("naive" + s, Op::softmax), "none");
    EXPECT_EQ(contract("naive" + s, Op::log_softmax), "<not provided>");
    EXPECT_EQ(contract("shifted" + s, Op::softmax), "3 + 1*n + 2*R + 4*M[T!=1]");
    EXPECT_EQ(contract("shifted" + s, Op::log_softmax), "none");
    EXPECT_EQ(contract("shifted_log1p" + s, Op::softmax), "3 + 1*n + 2*R + 4*M[T!=1]");
    EXPECT_EQ(contract("shifted_log1p" + s, Op::log_softmax), "5 + 1*n + 1*R + 6*M[T!=1]");
    EXPECT_EQ(contract("lse_alt" + s, Op::softmax), "2 + 3*n + 2*R + 1*M + 4*M[T!=1]");
    EXPECT_EQ(contract("lse_alt" + s, Op::log_softmax), "none");
    EXPECT_EQ(contract("online" + s, Op::softmax), "2 + 3.02*n + 3*R + 4*M[T!=1]");
    EXPECT_EQ(contract("online" + s, Op::log_softmax), "<not provided>");
    EXPECT_EQ(find_kernel("shifted_log1p" + s)->masked_policy, MaskedRowPolicy::zeros);
    for (const char* a : {"naive", "shifted", "lse_alt", "online"})
      EXPECT_EQ(find_kernel(a + s)->masked_policy, MaskedRowPolicy::nan) << a;
  }
  EXPECT_EQ(find_kernel("no_such_kernel"), nullptr);
}

TEST(Registry, UndeclaredOpThrows) {
  const Kernel& k = *find_kernel("naive_f32");
  std::vector<float> x = {1, 2}, y(2);
  EXPECT_THROW(k.run(Op::log_softmax, x.data(), y.data(), 1, 2, 1.0), std::invalid_argument);
}

// ------------------------------------------------------------------- mutants

TEST(Mutants, AreTestOnlyF32AndNotBuiltin) {
  const std::vector<std::string> expected = {
      "mutant_no_max_shift",          "mutant_online_wrong_rescale", "mutant_skip_tail",
      "mutant_temperature_multiplied", "mutant_log_of_softmax",      "mutant_masked_nan"};
  std::vector<std::string> names;
  for (const Kernel& m : mutant_kernels()) {
    names.push_back(m.name);
    EXPECT_TRUE(m.test_only);
    EXPECT_EQ(m.format, Format::f32);
    EXPECT_EQ(find_kernel(m.name), &m);
    for (const Kernel& b : builtin_kernels()) {
      EXPECT_NE(b.name, m.name);
      EXPECT_FALSE(b.test_only);
    }
  }
  EXPECT_EQ(names, expected);
}

TEST(Mutants, ClaimTheContractsAndPolicyOfTheKernelTheyMutate) {
  const struct {
    const char* mutant;
    const char* original;
  } pairs[] = {{"mutant_no_max_shift", "shifted_f32"},
               {"mutant_online_wrong_rescale", "online_f32"},
               {"mutant_skip_tail", "shifted_f32"},
               {"mutant_temperature_multiplied", "shifted_f32"},
               {"mutant_log_of_softmax", "shifted_log1p_f32"},
               {"mutant_masked_nan", "shifted_log1p_f32"}};
  for (const auto& p : pairs) {
    const Kernel& m = *find_kernel(p.mutant);
    const Kernel& o = *find_kernel(p.original);
    SCOPED_TRACE(p.mutant);
    EXPECT_EQ(m.masked_policy, o.masked_policy);
    for (const OpDecl& d : m.ops) {
      ASSERT_NE(o.find(d.op), nullptr);
      EXPECT_EQ(d.contract.formula(), o.find(d.op)->contract.formula());
      EXPECT_EQ(d.contract.declared, o.find(d.op)->contract.declared);
    }
    ASSERT_NE(m.find(Op::softmax), nullptr);
    EXPECT_TRUE(m.find(Op::softmax)->contract.declared);
  }
}

// Each mutant agrees with its original where its mistake is invisible and
// differs where it shows, so a property suite has something to find.
TEST(Mutants, DifferFromTheOriginalOnlyWhereTheMistakeShows) {
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) { return a == b; };
  const Kernel& shifted = *find_kernel("shifted_f32");
  const Kernel& log1p = *find_kernel("shifted_log1p_f32");
  const Kernel& online = *find_kernel("online_f32");

  const Kernel& no_shift = *find_kernel("mutant_no_max_shift");
  EXPECT_TRUE(std::isnan(run(no_shift, Op::softmax, {90, 95, 100})[0]));
  EXPECT_FALSE(std::isnan(run(shifted, Op::softmax, {90, 95, 100})[0]));

  const Kernel& rescale = *find_kernel("mutant_online_wrong_rescale");
  const std::vector<double> max_first = {5, 1, 2, -3};
  const std::vector<double> max_later = {1, 2, 5, -3};
  EXPECT_TRUE(same(run(rescale, Op::softmax, max_first), run(online, Op::softmax, max_first)));
  EXPECT_FALSE(same(run(rescale, Op::softmax, max_later), run(online, Op::softmax, max_later)));

  const Kernel& tail = *find_kernel("mutant_skip_tail");
  std::vector<double> x16(16), x11(11);
  for (std::size_t i = 0; i < 16; ++i) x16[i] = static_cast<double>(i % 5);
  for (std::size_t i = 0; i < 11; ++i) x11[i] = static_cast<double>(i % 5);
  EXPECT_TRUE(same(run(tail, Op::softmax, x16), run(shifted, Op::softmax, x16)));
  const auto t11 = run(tail, Op::softmax, x11);
  EXPECT_EQ(t11[10], 0.0);
  EXPECT_FALSE(same(t11, run(shifted, Op::softmax, x11)));

  const Kernel& temp = *find_kernel("mutant_temperature_multiplied");
  const std::vector<double> x = {1, 2, 3};
  EXPECT_TRUE(same(run(temp, Op::softmax, x, 1, 1.0), run(shifted, Op::softmax, x, 1, 1.0)));
  EXPECT_FALSE(same(run(temp, Op::softmax, x, 1, 2.0), run(shifted, Op::softmax, x, 1, 2.0)));

  const Kernel& logsm = *find_kernel("mutant_log_of_softmax");
  EXPECT_TRUE(same(run(logsm, Op::softmax, x), run(log1p, Op::softmax, x)));
  EXPECT_EQ(run(logsm, Op::log_softmax, {0, -200})[1], -inf);  // exact: -200
  EXPECT_NEAR(run(log1p, Op::log_softmax, {0, -200})[1], -200, 1e-4);

  const Kernel& masked = *find_kernel("mutant_masked_nan");
  EXPECT_TRUE(same(run(masked, Op::log_softmax, x), run(log1p, Op::log_softmax, x)));
  EXPECT_TRUE(std::isnan(run(masked, Op::softmax, {-inf, -inf})[0]));
  EXPECT_EQ(run(log1p, Op::softmax, {-inf, -inf})[0], 0.0);
}

}  // namespace
}  // namespace softcheck
