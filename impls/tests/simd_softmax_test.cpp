// shifted_simd_f32 and online_simd_f32 (impls/src/simd_softmax.cpp): their
// exp monotone and within the bound their contracts use, and the same bits
// from every ISA's code. Their contracts and properties are checked with every other
// kernel's (impls.ContractHolds, props.Suite).
#include "simd_softmax.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

namespace softcheck::kernels {
namespace {

// Every f32 d in [-104, 0] (every 16th unless SOFTCHECK_EXHAUSTIVE is set):
// |exp16(d) - exp(d)| <= 1.5u exp(d) + denorm_min/2, u = 2^-24 (derived in
// simd_softmax.cpp), against exp in double (within 2^-52 relative: the slack
// below). Also prints the largest error in ulps of the result (the figure
// docs/kernels.md quotes), which the bound does not need.
TEST(SimdSoftmax, ExpIsWithinItsBound) {
  const char* all = std::getenv("SOFTCHECK_EXHAUSTIVE");
  const std::uint32_t stride = all != nullptr && *all != '\0' && *all != '0' ? 1 : 16;
  const std::uint32_t lo = std::bit_cast<std::uint32_t>(-0.0f), hi = std::bit_cast<std::uint32_t>(-104.0f);
  std::vector<float> d;
  double worst = 0, worst_ulps = 0;
  float worst_at = 0;
  std::uint64_t checked = 0;
  for (std::uint64_t b = lo; b <= hi;) {
    d.clear();
    for (; b <= hi && d.size() < (1u << 20); b += stride)
      d.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
    const std::vector<float> e = exp16_for_test(best_simd_isa(), d);
    for (std::size_t i = 0; i < d.size(); ++i) {
      const double exact = std::exp(static_cast<double>(d[i]));
      const double excess = (std::fabs(e[i] - exact) - 0x1p-150) / (0x1p-24 * exact);
      if (excess > worst) worst = excess, worst_at = d[i];
      const double ulp = exact >= 0x1p-126 ? std::ldexp(1.0, std::ilogb(exact) - 23) : 0x1p-149;
      worst_ulps = std::max(worst_ulps, std::fabs(e[i] - exact) / ulp);
    }
    checked += d.size();
  }
  std::printf("exp16: max (|err| - denorm_min/2) / (u exp) = %.4f at %a, max %.4f ulp, over %llu arguments\n",
              worst, static_cast<double>(worst_at), worst_ulps, static_cast<unsigned long long>(checked));
  EXPECT_LE(worst, 1.5 * (1 + 0x1p-40));
  EXPECT_GT(checked, 60'000'000u);
}

// Monotone on every f32 in [-104, 0], every one of them: the ordering
// property every kernel with a contract claims rests on it. Then the other
// ISAs give the same bits on a sample.
TEST(SimdSoftmax, ExpIsMonotoneOnEveryF32) {
  const std::uint32_t lo = std::bit_cast<std::uint32_t>(-0.0f), hi = std::bit_cast<std::uint32_t>(-104.0f);
  std::vector<float> d;
  float previous = 1.0f;  // exp16(-0) = 1; bits ascending = arguments descending
  std::uint64_t inversions = 0, checked = 0;
  for (std::uint64_t b = lo; b <= hi;) {
    d.clear();
    for (; b <= hi && d.size() < (1u << 22); ++b)
      d.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
    const std::vector<float> e = exp16_for_test(best_simd_isa(), d);
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (e[i] > previous) {
        if (inversions < 5)
          ADD_FAILURE() << "exp16(" << std::hexfloat << d[i] << ") = " << e[i] << " > " << previous;
        ++inversions;
      }
      previous = e[i];
    }
    checked += d.size();
  }
  std::printf("exp16: %llu inversions over %llu arguments\n", static_cast<unsigned long long>(inversions),
              static_cast<unsigned long long>(checked));
  EXPECT_EQ(inversions, 0u);
  std::vector<float> sample;
  for (std::uint64_t b = lo; b <= hi; b += 977)
    sample.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  const std::vector<float> ref = exp16_for_test(SimdIsa::baseline, sample);
  for (SimdIsa isa : {SimdIsa::avx512, SimdIsa::avx2}) {
    if (!simd_isa_supported(isa)) continue;
    const std::vector<float> e = exp16_for_test(isa, sample);
    for (std::size_t i = 0; i < e.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(e[i]), std::bit_cast<std::uint32_t>(ref[i])) << name(isa);
  }
}

TEST(SimdSoftmax, SpecialArguments) {
  const std::vector<float> d = {0.0f, -0.0f, -INFINITY, -104.0f, -200.0f, NAN, -87.0f, -103.0f};
  const std::vector<float> e = exp16_for_test(best_simd_isa(), d);
  EXPECT_EQ(e[0], 1.0f);
  EXPECT_EQ(e[1], 1.0f);
  EXPECT_EQ(e[2], 0.0f);  // masked: exactly 0
  EXPECT_LE(e[3], 0x1p-149f);
  EXPECT_EQ(e[4], 0.0f);  // below -104: the rounded value, 0
  EXPECT_TRUE(std::isnan(e[5]));
  EXPECT_GT(e[6], 0.0f);  // normal: 1.6e-38
  EXPECT_GT(e[7], 0.0f);  // subnormal: 1.4e-45 * 1.3
}

std::vector<float> random_rows(std::mt19937& rng, std::int64_t rows, std::int64_t cols) {
  std::normal_distribution<float> normal(0.0f, 20.0f);
  std::uniform_int_distribution<int> mask(0, 9);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (float& v : x) v = mask(rng) == 0 ? -INFINITY : normal(rng);
  return x;
}

// The 16-lane arithmetic is the same on every ISA: same bits, rows of every
// length class (shorter than a vector, ragged tails, long), with masks and
// temperatures.
TEST(SimdSoftmax, EveryIsaGivesTheSameBits) {
  for (SimdAlgorithm algorithm : {SimdAlgorithm::shifted, SimdAlgorithm::online}) {
    std::mt19937 rng(7);
    const std::vector<SimdIsa> isas = {SimdIsa::avx512, SimdIsa::avx2, SimdIsa::baseline};
    int compared = 0;
    for (std::int64_t cols : {1, 3, 15, 16, 17, 31, 100, 255, 1000, 4099}) {
      for (float t : {1.0f, 0.7f, 3.0f}) {
        const std::int64_t rows = 3;
        const std::vector<float> x = random_rows(rng, rows, cols);
        std::vector<float> ref(x.size());
        simd_softmax(algorithm, SimdIsa::baseline, x.data(), ref.data(), rows, cols, t);
        for (SimdIsa isa : isas) {
          if (!simd_isa_supported(isa)) continue;
          std::vector<float> y(x.size());
          simd_softmax(algorithm, isa, x.data(), y.data(), rows, cols, t);
          for (std::size_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(ref[i]))
                << name(isa) << " cols " << cols << " T " << t << " element " << i;
          ++compared;
        }
      }
    }
    std::printf("compared %d (shape, ISA) runs; best ISA here: %s\n", compared,
                std::string(name(best_simd_isa())).c_str());
    EXPECT_GE(compared, 30);
  }
}

TEST(SimdSoftmax, MaskedEntriesAreZeroAndAFullyMaskedRowIsNan) {
  for (SimdAlgorithm algorithm : {SimdAlgorithm::shifted, SimdAlgorithm::online}) {
    const std::vector<float> x = {-INFINITY, 1.0f,      -INFINITY, 2.0f,     -INFINITY,
                                  2.0f,      -INFINITY, -INFINITY, -INFINITY};
    std::vector<float> y(x.size());
    simd_softmax(algorithm, best_simd_isa(), x.data(), y.data(), 3, 3, 1.0f);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[1], 1.0f);
    EXPECT_EQ(y[2], 0.0f);
    EXPECT_EQ(y[3], 0.5f);
    EXPECT_EQ(y[4], 0.0f);
    EXPECT_EQ(y[5], 0.5f);
    EXPECT_TRUE(std::isnan(y[6]) && std::isnan(y[7]) && std::isnan(y[8]));  // the declared nan policy
  }
}

// online_simd keeps the exps of the blocks shifted by the final maximum and
// computes the others again; in place it stores nothing and computes every
// block again. Both must give the same bits wherever the maximum (and its
// last growth) falls: first block, a middle one, the ragged last one, every
// block (ascending rows), with masks, temperatures and every ISA.
TEST(SimdSoftmax, OnlineStoredExpsGiveTheRecomputedBits) {
  std::mt19937 rng(13);
  int compared = 0;
  for (std::int64_t cols : {1, 16, 63, 64, 65, 200, 1000, 4099}) {
    for (int where = 0; where < 4; ++where) {
      std::vector<float> x = random_rows(rng, 1, cols);
      const auto n = static_cast<std::size_t>(cols);
      if (where == 0) x[0] = 500.0f;                    // the maximum first
      if (where == 1) x[n / 2] = 500.0f;                // in the middle
      if (where == 2) x[n - 1] = 500.0f;                // in the last (ragged) block
      if (where == 3) std::sort(x.begin(), x.end());    // grows in every block
      for (float t : {1.0f, 0.7f}) {
        for (SimdIsa isa : {SimdIsa::avx512, SimdIsa::avx2, SimdIsa::baseline}) {
          if (!simd_isa_supported(isa)) continue;
          std::vector<float> apart(n), in_place = x;
          simd_softmax(SimdAlgorithm::online, isa, x.data(), apart.data(), 1, cols, t);
          simd_softmax(SimdAlgorithm::online, isa, in_place.data(), in_place.data(), 1, cols, t);
          ASSERT_EQ(0, std::memcmp(apart.data(), in_place.data(), n * sizeof(float)))
              << name(isa) << " cols " << cols << " where " << where << " T " << t;
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 64);
}

TEST(SimdSoftmax, InPlaceIsTheSame) {
  for (SimdAlgorithm algorithm : {SimdAlgorithm::shifted, SimdAlgorithm::online}) {
    std::mt19937 rng(3);
    const std::vector<float> x = random_rows(rng, 4, 333);
    std::vector<float> y(x.size()), z = x;
    simd_softmax(algorithm, best_simd_isa(), x.data(), y.data(), 4, 333, 0.5f);
    simd_softmax(algorithm, best_simd_isa(), z.data(), z.data(), 4, 333, 0.5f);
    EXPECT_EQ(y, z);
  }
}

// Row blocks on several threads give the single-threaded bits: every split
// (thread counts that do and do not divide the rows, more threads than rows)
// and the registered _mt kernels against the plain ones. Only bits are
// compared; how many threads actually start depends on the shape
// (simd_threads_used), which is checked so the threaded path is exercised.
TEST(SimdSoftmax, RowParallelGivesTheSingleThreadedBits) {
  struct Shape {
    std::int64_t rows, cols;
  };
  int threaded = 0;
  for (SimdAlgorithm algorithm : {SimdAlgorithm::shifted, SimdAlgorithm::online}) {
    std::mt19937 rng(11);
    for (const Shape s : {Shape{7, 20000}, Shape{64, 4097}, Shape{3, 1 << 16}, Shape{1, 1 << 17}, Shape{100, 333}}) {
      for (float t : {1.0f, 0.7f}) {
        const std::vector<float> x = random_rows(rng, s.rows, s.cols);
        std::vector<float> one(x.size());
        simd_softmax(algorithm, best_simd_isa(), x.data(), one.data(), s.rows, s.cols, t, 1);
        for (unsigned threads : {2u, 3u, 5u, 16u}) {
          std::vector<float> many(x.size());
          simd_softmax(algorithm, best_simd_isa(), x.data(), many.data(), s.rows, s.cols, t, threads);
          ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
              << s.rows << "x" << s.cols << " T " << t << " threads " << threads;
          if (simd_threads_used(s.rows, s.cols, threads) > 1) ++threaded;
        }
      }
    }
  }
  EXPECT_GE(threaded, 20);  // 7x20000 (up to 7 blocks), 64x4097 (16), 3x2^16 (3), 100x333 (4)
  EXPECT_EQ(simd_threads_used(1, 1 << 20, 16), 1u);  // one row: one thread
  EXPECT_EQ(simd_threads_used(4096, 128, 2), 2u);

  for (const std::string algorithm : {"shifted_simd", "online_simd"}) {
    const std::string plain = algorithm + "_f32";
    const Kernel* k = find_kernel(plain);
    const Kernel* k_mt = find_kernel(algorithm + "_mt_f32");
    ASSERT_NE(k, nullptr);
    ASSERT_NE(k_mt, nullptr) << algorithm << "_mt_f32 is not registered";
    std::mt19937 rng(5);
    const std::vector<float> x = random_rows(rng, 256, 1000);
    std::vector<float> y(x.size()), y_mt(x.size());
    k->run(Op::softmax, x.data(), y.data(), 256, 1000, 1.0);
    k_mt->run(Op::softmax, x.data(), y_mt.data(), 256, 1000, 1.0);
    EXPECT_EQ(0, std::memcmp(y.data(), y_mt.data(), y.size() * sizeof(float))) << plain;
    EXPECT_EQ(k->ops[0].contract.formula(), k_mt->ops[0].contract.formula());
  }
}

}  // namespace
}  // namespace softcheck::kernels
