// The CUDA attention kernel's host twin (CPU only; docs/attention.md, "The
// CUDA kernel and its host twin"): the portable exp2 and log2 it is built on
// against long double, densely; its declared O and lse contracts against the
// MPFR oracle on every attention family; the exact properties of its loop
// (a fully masked tile leaves the state as it was, masked keys' K and V are
// never read, V = 1 gives O = 1 exactly, a fully masked row gives O = 0 and
// lse = -inf); that it is attention_flash_bc64_f32's arithmetic with another
// exp2 and log2; and how cuda_attention_flash_f32 is listed where it cannot
// run.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention_twin.hpp"
#include "cuda_backend.hpp"
#include "softcheck/attention_oracle.hpp"
#include "softcheck/attention_steps.hpp"
#include "softcheck/format.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/portable_math.hpp"
#include "softcheck/storage.hpp"

namespace softcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr float finf = std::numeric_limits<float>::infinity();

// ----------------------------------------------------------- portable math

// Error of a float result r against the exact value v (long double), in ulps
// of v's binade (subnormal spacing below 2^-126).
double ulps(float r, long double v) {
  if (std::isinf(v) || v > static_cast<long double>(std::numeric_limits<float>::max()))
    return std::isinf(r) ? 0 : inf;
  if (v == 0) return r == 0 ? 0 : inf;
  const int e = std::max(static_cast<int>(std::ilogb(static_cast<double>(std::fabs(v)))), -126);
  return static_cast<double>(std::fabs(static_cast<long double>(r) - v) / std::ldexp(1.0L, e - 23));
}

// The worst error over a set of arguments, and how many were not correctly
// rounded (error above half an ulp).
struct Sweep {
  double worst = 0;
  std::uint64_t count = 0, above_half = 0;
  float where = 0;
  void add(float x, double err) {
    ++count;
    above_half += err > 0.5;
    if (err > worst) worst = err, where = x;
  }
};

const double portable_bound = 0.5 + std::ldexp(1.0, -20);  // portable_math.hpp's claim

// Every float of [lo, hi) with bit patterns stepping by `stride` (1:
// exhaustive), both bounds positive floats.
template <class F>
void sweep_positive(float lo, float hi, std::uint32_t stride, F f) {
  for (std::uint32_t b = std::bit_cast<std::uint32_t>(lo); b < std::bit_cast<std::uint32_t>(hi); b += stride)
    f(std::bit_cast<float>(b));
}

TEST(PortableExp2, EveryFloatOfTwoBinadesAndADenseSweepOfTheRange) {
  Sweep s;
  auto check = [&](float x) { s.add(x, ulps(portable::exp2(x), std::exp2(static_cast<long double>(x)))); };
  // Exhaustive: every float of [0.5, 2) and of (-2, -0.5] (the reduced
  // argument r = x - k takes every value these produce), and of [64, 128)'s
  // first 2^20 (large k, results near the overflow edge).
  sweep_positive(0.5f, 2.0f, 1, [&](float x) {
    check(x);
    check(-x);
  });
  sweep_positive(64.0f, 64.0f + 8.0f, 1, check);
  // Dense: every 251st float of (0, 128) and of (-151, 0), subnormal results included.
  sweep_positive(std::numeric_limits<float>::denorm_min(), 128.0f, 251, [&](float x) {
    check(x);
    if (x < 151.0f) check(-x);
  });
  std::printf("portable::exp2: max %.9f ulp over %llu floats (at %a), %llu not correctly rounded\n", s.worst,
              static_cast<unsigned long long>(s.count), static_cast<double>(s.where),
              static_cast<unsigned long long>(s.above_half));
  EXPECT_LE(s.worst, portable_bound);
  EXPECT_GT(s.count, 20000000u);
}

TEST(PortableExp2, ExactPowersOfTwoAndTheEdges) {
  EXPECT_EQ(portable::exp2(0.0f), 1.0f);
  EXPECT_EQ(portable::exp2(-0.0f), 1.0f);
  for (int k = -149; k <= 127; ++k)
    EXPECT_EQ(portable::exp2(static_cast<float>(k)), std::ldexp(1.0f, k)) << k;
  EXPECT_EQ(portable::exp2(128.0f), finf);
  EXPECT_EQ(portable::exp2(std::nextafter(128.0f, 0.0f)), static_cast<float>(std::exp2(static_cast<long double>(
                                                               std::nextafter(128.0f, 0.0f)))));
  EXPECT_LT(portable::exp2(std::nextafter(128.0f, 0.0f)), finf);
  EXPECT_EQ(portable::exp2(-150.0f), 0.0f);  // denorm_min / 2: a tie, to even
  EXPECT_EQ(portable::exp2(std::nextafter(-150.0f, 0.0f)), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(portable::exp2(-151.5f), 0.0f);
  EXPECT_EQ(portable::exp2(-finf), 0.0f);
  EXPECT_EQ(portable::exp2(finf), finf);
  EXPECT_TRUE(std::isnan(portable::exp2(std::numeric_limits<float>::quiet_NaN())));
  // Tiny arguments round to 1 from both sides.
  EXPECT_EQ(portable::exp2(1e-9f), 1.0f);
  EXPECT_EQ(portable::exp2(-1e-9f), 1.0f);
}

TEST(PortableLog2, EveryFloatOfTwoBinadesAndADenseSweepOfAllPositiveFloats) {
  Sweep s;
  auto check = [&](float v) {
    const long double exact = std::log2(static_cast<long double>(v));
    const float r = portable::log2(v);
    if (exact == 0) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(r), 0u);  // +0 at 1
      return;
    }
    s.add(v, ulps(std::fabs(r), std::fabs(exact)));
  };
  sweep_positive(0.5f, 2.0f, 1, check);  // exhaustive around 1, where log2 v is small
  sweep_positive(std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), 193, check);
  std::printf("portable::log2: max %.9f ulp over %llu floats (at %a), %llu not correctly rounded\n", s.worst,
              static_cast<unsigned long long>(s.count), static_cast<double>(s.where),
              static_cast<unsigned long long>(s.above_half));
  EXPECT_LE(s.worst, portable_bound);
  EXPECT_GT(s.count, 20000000u);
}

TEST(PortableLog2, PowersOfTwoAreExactAndSpecialValues) {
  for (int k = -149; k <= 127; ++k)
    EXPECT_EQ(portable::log2(std::ldexp(1.0f, k)), static_cast<float>(k)) << k;
  EXPECT_EQ(portable::log2(0.0f), -finf);
  EXPECT_EQ(portable::log2(-0.0f), -finf);
  EXPECT_EQ(portable::log2(finf), finf);
  EXPECT_TRUE(std::isnan(portable::log2(-1.0f)));
  EXPECT_TRUE(std::isnan(portable::log2(std::numeric_limits<float>::quiet_NaN())));
}

// ------------------------------------------------------------------ calls

const Kernel& kernel(const std::string& name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::logic_error("no kernel " + name);
  return *k;
}

// Queries of one shape in f32 (every value a float): bias rows, q, K, V.
struct Batch {
  std::string label;
  std::int64_t rows = 1, n = 0, d = 0;
  double temperature = 1;
  std::vector<double> x, q, K, V;
  std::vector<KeyWindow> window = std::vector<KeyWindow>(static_cast<std::size_t>(rows));
};

struct Outputs {
  std::vector<float> O, lse;
};

Outputs call(const Kernel& k, const Batch& b) {
  const std::vector<unsigned char> x = pack(b.x, k.format), q = pack(b.q, k.format), K = pack(b.K, k.format),
                                   V = pack(b.V, k.format);
  Outputs out{std::vector<float>(static_cast<std::size_t>(b.rows * b.d)),
              std::vector<float>(static_cast<std::size_t>(b.rows))};
  const void* in[] = {x.data(), q.data(), K.data(), V.data(), b.window.data()};
  void* outs[] = {out.O.data(), out.lse.data()};
  k.call({Op::attention, in, outs, b.rows, b.n, b.temperature, b.d});
  return out;
}

Batch family_batch(const InputFamily& fam, std::int64_t rows, std::int64_t n, double t, std::uint64_t seed) {
  const AttentionOperands ops = fill_attention_operands(fam, Format::f32, rows, n, seed);
  return {fam.name + " n=" + std::to_string(n) + " T=" + std::to_string(t).substr(0, 3),
          rows,
          n,
          fam.head_dim,
          t,
          fill_rows(fam, Format::f32, rows, n, seed),
          ops.q,
          ops.K,
          ops.V,
          ops.window};
}

// Gaussian q, K, V of one query (n keys, head dimension d), bias 0.
Batch gaussian_batch(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  auto draw = [&](std::int64_t count) {
    std::vector<double> v(static_cast<std::size_t>(count));
    for (double& e : v) e = round_to_format(g(rng), Format::f32);
    return v;
  };
  return {"gaussian n=" + std::to_string(n), 1, n, d, 1.0, std::vector<double>(static_cast<std::size_t>(n), 0.0),
          draw(d), draw(n * d), draw(n * d)};
}

// Masks key j: bias -inf, and K_j, V_j set to NaN and inf, which the kernel must never read.
void mask(Batch& b, std::int64_t j) {
  b.x[static_cast<std::size_t>(j)] = -inf;
  for (std::int64_t i = 0; i < b.d; ++i) {
    b.K[static_cast<std::size_t>(j * b.d + i)] = std::numeric_limits<double>::quiet_NaN();
    b.V[static_cast<std::size_t>(j * b.d + i)] = i % 2 == 0 ? inf : -inf;
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  return true;
}

// ------------------------------------------------------------- contracts

struct Worst {
  double ratio[2] = {0, 0};
  std::string where[2];
};

// Every row of the batch within the twin's bounds (fully masked rows: policy
// zeros, O = +0 and lse = -inf); the worst error / bound kept.
::testing::AssertionResult holds(const Kernel& k, const Batch& b, Worst& worst) {
  const Outputs out = call(k, b);
  const OpDecl& decl = *k.find(Op::attention);
  const auto n = static_cast<std::size_t>(b.n), d = static_cast<std::size_t>(b.d);
  const OperandList outs = spec(Op::attention).out;
  std::string failures;
  for (std::size_t r = 0; r < static_cast<std::size_t>(b.rows); ++r) {
    // The exact attention of the row with the keys outside its window masked.
    const std::vector<double> bias = window_masked_bias({b.x.data() + r * n, n}, b.window[r]);
    const std::span<const double> x(bias), q(b.q.data() + r * d, d), K(b.K.data() + r * n * d, n * d),
        V(b.V.data() + r * n * d, n * d);
    const oracle::ExactAttention e = oracle::exact_attention(x, q, K, V, b.d, b.temperature);
    const std::vector<double> O(out.O.begin() + static_cast<std::ptrdiff_t>(r * d),
                                out.O.begin() + static_cast<std::ptrdiff_t>((r + 1) * d));
    const std::vector<double> lse = {out.lse[r]};
    const std::string where = b.label + " row " + std::to_string(r);
    if (e.status == oracle::RowStatus::all_masked) {
      for (double o : O)
        if (o != 0 || std::signbit(o)) failures += "\n  " + where + ": fully masked row, O != +0";
      if (lse[0] != -inf) failures += "\n  " + where + ": fully masked row, lse != -inf";
      continue;
    }
    const RowShape shape = attention_row_shape(x, q, K, b.d, b.temperature, k.format);
    const RowError errors[2] = {compare_row(O, e.output, k.format, outs[0], e.scale),
                                compare_row(lse, oracle::exact_values(e, OutputKind::log_sum_exp), k.format, outs[1])};
    for (std::size_t o = 0; o < 2; ++o) {
      const double bound = decl.contract_of(o).bound_ulps(shape, k.format);
      const double ratio = errors[o].max_ulp / bound;
      if (ratio > worst.ratio[o]) worst.ratio[o] = ratio, worst.where[o] = where;
      if (errors[o].nonfinite != 0 || errors[o].special_mismatch != 0 || !(errors[o].max_ulp <= bound))
        failures += "\n  " + where + (o == 0 ? ": O" : ": lse") + " error " + std::to_string(errors[o].max_ulp) +
                    " bound " + std::to_string(bound);
    }
  }
  if (failures.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << k.name << failures;
}

TEST(AttentionTwin, HoldsItsContractsOnEveryAttentionFamily) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  Worst worst;
  std::size_t batches = 0;
  for (const InputFamily& fam : attention_input_families())
    for (double t : {1.0, 0.7})
      for (std::int64_t n : {1, 17, 64, 65, 200, 1000}) {
        if (fam.head_dim >= 256 && n > 200) continue;  // the oracle's cost: n x d exact products per row
        const std::uint64_t seed = hash_mix(hash_mix(hash_mix(11, fam.name), static_cast<std::uint64_t>(n)),
                                            static_cast<std::uint64_t>(t * 1000));
        EXPECT_TRUE(holds(twin, family_batch(fam, 2, n, t, seed), worst));
        ++batches;
      }
  std::printf("attention_flash_twin_f32 on %zu batches: O %.4f of the bound (%s), lse %.4f (%s)\n", batches,
              worst.ratio[0], worst.where[0].c_str(), worst.ratio[1], worst.where[1].c_str());
  EXPECT_GT(worst.ratio[0], 0.0);  // measured, not vacuous
  EXPECT_GT(worst.ratio[1], 0.0);
}

TEST(AttentionTwin, DeclaresTheDerivedContractsAndTheCudaKernelTheSame) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  const OpDecl& d = *twin.find(Op::attention);
  const Contract O = d.contract_of(0), lse = d.contract_of(1);
  ASSERT_TRUE(O.declared);
  ASSERT_TRUE(lse.declared);
  // attention_twin.cpp: O (2 e2 + 2 Bc) + 2(e2 + 2)/Bc n + 3R + 4M + 2 h D + 12 D,
  // lse (e2 + Bc - 1 + (3 + e_log2)(log 4096 - 1)) + ((e2 + 2)/Bc + (3 + e_log2)/4096) n + R + 6M + h D + 6 D,
  // e2 = e_log2 = 1 + 2^-19, Bc = 64.
  const double e2 = 1 + std::ldexp(1.0, -19), bc = 64, log_a = std::log(4096.0) - 1;
  EXPECT_DOUBLE_EQ(O.a, 2 * e2 + 2 * bc);
  EXPECT_DOUBLE_EQ(O.b, 2 * (e2 + 2) / bc);
  EXPECT_EQ(O.c, 3);
  EXPECT_EQ(O.d, 4);
  EXPECT_EQ(O.hd, 2);
  EXPECT_EQ(O.dot, 12);
  EXPECT_DOUBLE_EQ(lse.a, e2 + bc - 1 + (3 + e2) * log_a);
  EXPECT_DOUBLE_EQ(lse.b, (e2 + 2) / bc + (3 + e2) / 4096);
  EXPECT_EQ(lse.c, 1);
  EXPECT_EQ(lse.d, 6);
  EXPECT_EQ(lse.hd, 1);
  EXPECT_EQ(lse.dot, 6);
  EXPECT_EQ(twin.masked_policy, MaskedRowPolicy::zeros);
  // Tighter than attention_flash_bc64_f32's (glibc's exp2f and log2f are
  // 0.502 and 0.752 ulp), the same terms otherwise.
  const OpDecl& cpu = *kernel("attention_flash_bc64_f32").find(Op::attention);
  EXPECT_LT(O.a, cpu.contract_of(0).a);
  EXPECT_LT(lse.a, cpu.contract_of(1).a);
  EXPECT_EQ(O.c, cpu.contract_of(0).c);
  EXPECT_EQ(lse.d, cpu.contract_of(1).d);
  // The CUDA kernel declares the twin's contracts: it computes the twin's bits.
  const OpDecl& gpu = *kernel("cuda_attention_flash_f32").find(Op::attention);
  EXPECT_EQ(gpu.contract_of(0).formula(), O.formula());
  EXPECT_EQ(gpu.contract_of(1).formula(), lse.formula());
}

// --------------------------------------------------------- exact properties

// A fully masked tile leaves (m, l) and O as they were: a row whose first
// 64-key tile is masked (with NaN and inf in its K and V) gives the bits of
// the same row without that tile (the later tiles keep their boundaries).
TEST(AttentionTwin, AFullyMaskedTileLeavesTheStateUntouched) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  for (std::int64_t n : {1, 63, 64, 65, 300}) {
    const Batch tail = gaussian_batch(n, 64, 100 + static_cast<std::uint64_t>(n));
    Batch with_masked = gaussian_batch(64, 64, 7);
    with_masked.n = 64 + n;
    with_masked.x.insert(with_masked.x.end(), tail.x.begin(), tail.x.end());
    with_masked.K.insert(with_masked.K.end(), tail.K.begin(), tail.K.end());
    with_masked.V.insert(with_masked.V.end(), tail.V.begin(), tail.V.end());
    with_masked.q = tail.q;
    for (std::int64_t j = 0; j < 64; ++j) mask(with_masked, j);
    const Outputs a = call(twin, tail), b = call(twin, with_masked);
    EXPECT_TRUE(same_bits(a.O, b.O)) << "n = " << n;
    EXPECT_TRUE(same_bits(a.lse, b.lse)) << "n = " << n;
  }
}

// Masked keys' K and V are never read: NaN and inf there, or other finite
// values, give the same bits; keys masked on and across tile boundaries.
TEST(AttentionTwin, MaskedKeysKAndVAreNeverRead) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  Batch b = gaussian_batch(300, 32, 3);
  for (std::int64_t j : {0, 5, 63, 64, 100, 127, 128, 191, 299}) b.x[static_cast<std::size_t>(j)] = -inf;
  const Outputs plain = call(twin, b);
  for (std::int64_t j = 0; j < b.n; ++j)
    if (b.x[static_cast<std::size_t>(j)] == -inf) mask(b, j);
  const Outputs poisoned = call(twin, b);
  EXPECT_TRUE(same_bits(plain.O, poisoned.O));
  EXPECT_TRUE(same_bits(plain.lse, poisoned.lse));
  for (float o : poisoned.O) EXPECT_TRUE(std::isfinite(o));
}

// V = 1: O's numerator and l take the same operations on the same values
// (alpha O and rescale(l) are the same product, the tile sums the same
// sums), so O = 1 exactly (mass conservation, REFERENCE.md "Attention rows").
TEST(AttentionTwin, UnitValuesGiveExactlyOne) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  for (const InputFamily& fam : attention_input_families())
    for (std::int64_t n : {1, 64, 65, 500}) {
      Batch b = family_batch(fam, 2, n, 0.7, hash_mix(5, fam.name));
      std::fill(b.V.begin(), b.V.end(), 1.0);
      const Outputs out = call(twin, b);
      for (std::int64_t r = 0; r < b.rows; ++r) {
        const bool all_masked = std::all_of(b.x.begin() + r * n, b.x.begin() + (r + 1) * n,
                                            [](double v) { return v == -inf; });
        for (std::int64_t i = 0; i < b.d; ++i)
          EXPECT_EQ(out.O[static_cast<std::size_t>(r * b.d + i)], all_masked ? 0.0f : 1.0f) << b.label << " row " << r;
      }
    }
}

TEST(AttentionTwin, FullyMaskedRowsFollowThePolicyZeros) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  for (std::int64_t n : {1, 64, 129}) {
    Batch b = gaussian_batch(n, 16, 9);
    for (std::int64_t j = 0; j < n; ++j) mask(b, j);
    const Outputs out = call(twin, b);
    for (float o : out.O) EXPECT_EQ(std::bit_cast<std::uint32_t>(o), 0u);  // +0
    EXPECT_EQ(out.lse[0], -finf);
  }
}

// The twin is attention_flash_bc64_f32's arithmetic with the portable exp2
// and log2 for glibc's exp2f and log2f. Both are correctly rounded on almost
// every argument (0.5 ulp + 2^-20 and 0.502 ulp), so on the attention
// families the two kernels' bits differ only where one of them rounds a
// near-midpoint the other way, a handful of outputs at most; a different
// order of any step (the dot products, the tile sums, the rescales) would
// change most of them.
TEST(AttentionTwin, IsTheCpuFlashKernelsArithmeticWithAnotherExp2) {
  const Kernel& twin = kernel("attention_flash_twin_f32");
  const Kernel& cpu = kernel("attention_flash_bc64_f32");
  std::uint64_t outputs = 0, differing = 0;
  double max_ulp = 0;
  for (const InputFamily& fam : attention_input_families())
    for (std::int64_t n : {17, 300, 2000}) {
      const Batch b = family_batch(fam, 4, n, 0.7, hash_mix(23, fam.name));
      const Outputs a = call(twin, b), c = call(cpu, b);
      for (const auto& [u, v] : {std::pair{&a.O, &c.O}, std::pair{&a.lse, &c.lse}})
        for (std::size_t i = 0; i < u->size(); ++i) {
          ++outputs;
          const float p = (*u)[i], r = (*v)[i];
          if (std::bit_cast<std::uint32_t>(p) == std::bit_cast<std::uint32_t>(r)) continue;
          ++differing;
          max_ulp = std::max(max_ulp, std::fabs(static_cast<double>(p) - r) /
                                          static_cast<double>(std::nextafter(std::fabs(r), finf) - std::fabs(r)));
        }
    }
  std::printf("twin vs attention_flash_bc64_f32: %llu of %llu outputs differ, max %.3g ulp\n",
              static_cast<unsigned long long>(differing), static_cast<unsigned long long>(outputs), max_ulp);
  EXPECT_GT(outputs, 10000u);
  EXPECT_LE(static_cast<double>(differing), 0.01 * static_cast<double>(outputs));
}

// ------------------------------------------------------------- the CUDA kernel

TEST(CudaAttention, ListedWithTheTwinAndUnavailableWithAReasonWhereItCannotRun) {
  const Kernel* k = nullptr;
  for (const Kernel& a : attention_kernels())
    if (a.name == "cuda_attention_flash_f32") k = &a;
  ASSERT_NE(k, nullptr) << "cuda_attention_flash_f32 is not in attention_kernels()";
  const std::string why = cuda::unavailable_reason();
#if SOFTCHECK_TEST_BUILT_WITH_CUDA
  if (!why.empty()) {
    EXPECT_TRUE(why.rfind("no CUDA device", 0) == 0 || why.rfind("no kernel image", 0) == 0) << why;
  }
#else
  EXPECT_EQ(why, "built without CUDA");
#endif
  EXPECT_EQ(k->available, why.empty());
  EXPECT_EQ(k->unavailable_reason, why);
  EXPECT_EQ(k->format, Format::f32);
  EXPECT_EQ(k->masked_policy, MaskedRowPolicy::zeros);
  EXPECT_FALSE(k->test_only);
  std::printf("cuda_attention_flash_f32: %s\n", why.empty() ? "available" : why.c_str());
  if (!k->available) {  // running it anyway is a reported failure, never a crash or a result
    const Batch b = gaussian_batch(8, 4, 1);
    EXPECT_THROW(call(*k, b), KernelFailure);
  }
  const std::vector<kernels::CudaTwinPair> pairs = kernels::cuda_attention_twin_pairs();
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].cuda, "cuda_attention_flash_f32");
  EXPECT_EQ(pairs[0].twin, "attention_flash_twin_f32");
  EXPECT_TRUE(pairs[0].bit_exact);
}

// The scales are one function on both sides (the CUDA launch computes them on
// the host with it): s = 1 / (fl(T) fl(sqrt d)), s2 = fl(s log2 e), as
// attention.cpp's score_scale and ScoreScales.
TEST(CudaAttention, ScalesAreAttentionCppsScoreScales) {
  for (std::int64_t d : {1, 3, 64, 100, 128, 256})
    for (double t : {1.0, 0.7, 3.7}) {
      const flash::Scales s = flash::scales(static_cast<float>(t), d);
      const float root = std::sqrt(static_cast<float>(d));
      const float expected = 1.0f / (static_cast<float>(t) * root);
      EXPECT_EQ(s.s, expected);
      EXPECT_EQ(s.s2, expected * std::numbers::log2e_v<float>);
    }
}

}  // namespace
}  // namespace softcheck
