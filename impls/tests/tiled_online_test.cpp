// The tiled online softmax's host twin (CPU only): its portable exp/log, its
// contracts against the oracle, the rows where tiles and merges matter, that it
// follows the merge order it declares, and how the CUDA kernels are listed and
// skipped where they cannot run (docs/cuda.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda_backend.hpp"
#include "softcheck/run_suite.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/online_state.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"
#include "tiled_online.hpp"

namespace softcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
using online::MergeOrder;
using online::State;

// ---------------------------------------------------------------- helpers

std::vector<double> run(const Kernel& k, Op op, const std::vector<double>& x, double t = 1.0,
                        std::int64_t rows = 1) {
  const std::vector<unsigned char> in = pack(x, k.format);
  std::vector<unsigned char> out(in.size());
  k.run(op, in.data(), out.data(), rows, static_cast<std::int64_t>(x.size()) / rows, t);
  return unpack(out, k.format, x.size());
}

const Kernel& kernel(const std::string& name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::logic_error("no kernel " + name);
  return *k;
}

std::vector<const Kernel*> twins() {
  std::vector<const Kernel*> out;
  for (const Kernel& k : builtin_kernels())
    if (k.algorithm.rfind("tiled_online", 0) == 0 || k.algorithm.rfind("split_online", 0) == 0)
      out.push_back(&k);
  return out;
}

std::vector<double> in_format(std::vector<double> x, Format f) {
  for (double& v : x) v = round_to_format(v, f);
  return x;
}

// ULP error / contract bound of one row, and the ULP error.
struct Measure {
  double ulp = 0, ratio = 0;
};

Measure measure(const Kernel& k, const std::vector<double>& x, double t, const oracle::ExactRow& exact) {
  EXPECT_EQ(exact.status, oracle::RowStatus::ok);
  const std::vector<double> y = run(k, Op::softmax, x, t);
  const RowError e = compare_row(y, exact.softmax, k.format, Op::softmax);
  EXPECT_EQ(e.nonfinite, 0u) << k.name;
  EXPECT_EQ(e.special_mismatch, 0u) << k.name;
  const double bound = k.find(Op::softmax)->contract.bound_ulps(row_shape(x, t, k.format), k.format);
  return {e.max_ulp, e.max_ulp / bound};
}

Measure measure(const Kernel& k, const std::vector<double>& x, double t) {
  return measure(k, x, t, oracle::exact_row(x, t));
}

std::vector<double> normal_row(std::mt19937_64& rng, std::size_t n, double sigma, double mean = 0) {
  std::normal_distribution<double> normal(mean, sigma);
  std::vector<double> x(n);
  for (double& v : x) v = normal(rng);
  return x;
}

// ----------------------------------------------------------- portable math

// Error of a float result r against the exact value v (long double), in ulps of v.
double ulps(float r, long double v) {
  if (std::isinf(v) || v > static_cast<long double>(std::numeric_limits<float>::max()))
    return std::isinf(r) ? 0 : inf;
  const int e = std::max(std::ilogb(static_cast<double>(v)), -126);
  return static_cast<double>(std::fabs(static_cast<long double>(r) - v) / std::ldexp(1.0L, e - 23));
}

TEST(PortableMath, ExpWithinHalfUlpPlusTinyOverTheWholeRange) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> any(-104.5f, 89.5f), near0(-1.0f, 1.0f);
  double worst = 0;
  int not_correctly_rounded = 0;
  for (int i = 0; i < 400000; ++i) {
    const float x = i % 4 == 0 ? near0(rng) : any(rng);
    const double err = ulps(portable::exp(x), std::exp(static_cast<long double>(x)));
    worst = std::max(worst, err);
    not_correctly_rounded += err > 0.5;
  }
  std::printf("portable::exp: max %.9f ulp, %d of 400000 not correctly rounded\n", worst,
              not_correctly_rounded);
  EXPECT_LE(worst, 0.5 + std::ldexp(1.0, -20));
}

TEST(PortableMath, ExpSpecialValuesAndEdges) {
  EXPECT_EQ(portable::exp(0.0f), 1.0f);
  EXPECT_EQ(portable::exp(-0.0f), 1.0f);
  EXPECT_EQ(portable::exp(-INFINITY), 0.0f);
  EXPECT_EQ(portable::exp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(portable::exp(NAN)));
  // Just below the overflow edge (REFERENCE.md: 88.72), correctly rounded.
  EXPECT_EQ(portable::exp(88.72283f), static_cast<float>(std::exp(static_cast<long double>(88.72283f))));
  EXPECT_LT(portable::exp(88.72283f), INFINITY);
  EXPECT_EQ(portable::exp(88.7229f), INFINITY);
  EXPECT_EQ(portable::exp(-103.279f), std::numeric_limits<float>::denorm_min());  // exp ~ 1.5 denorm_min
  EXPECT_EQ(portable::exp(-104.0f), 0.0f);                                        // < denorm_min / 2
  // Subnormal results are rounded once, like normal ones.
  for (float x = -103.9f; x < -87.0f; x += 0.37f)
    EXPECT_LE(ulps(portable::exp(x), std::exp(static_cast<long double>(x))), 0.5 + 1e-6) << x;
}

TEST(PortableMath, LogWithinHalfUlpPlusTiny) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exponent(-149, 128);
  std::uniform_real_distribution<float> near1(0.5f, 2.0f);
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    const float v = i % 3 == 0 ? near1(rng) : static_cast<float>(std::exp2(exponent(rng)));
    if (!(v > 0) || std::isinf(v)) continue;
    const long double exact = std::log(static_cast<long double>(v));
    const float r = portable::log(v);
    if (exact == 0) {
      EXPECT_EQ(r, 0.0f);
      continue;
    }
    worst = std::max(worst, ulps(std::fabs(r), std::fabs(exact)));
  }
  std::printf("portable::log: max %.9f ulp\n", worst);
  EXPECT_LE(worst, 0.5 + std::ldexp(1.0, -20));
  EXPECT_EQ(portable::log(1.0f), 0.0f);
  EXPECT_EQ(portable::log(0.0f), -INFINITY);
  EXPECT_EQ(portable::log(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(portable::log(-1.0f)));
}

// ------------------------------------------------------------ online state

constexpr online::PortableExp exp_fn{};

TEST(OnlineState, MergeWithEmptyIsExactAndMergeIsCommutative) {
  const State a{3.5f, 1.75f}, b{-2.0f, 7.25f}, empty = online::empty_state();
  const State ae = online::merge(a, empty, exp_fn), ea = online::merge(empty, a, exp_fn);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(ae), std::bit_cast<std::uint64_t>(a));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(ea), std::bit_cast<std::uint64_t>(a));
  const State ab = online::merge(a, b, exp_fn), ba = online::merge(b, a, exp_fn);
  EXPECT_EQ(ab.m, ba.m);
  EXPECT_EQ(ab.d, ba.d);
  const State ee = online::merge(empty, empty, exp_fn);
  EXPECT_EQ(ee.m, -INFINITY);
  EXPECT_EQ(ee.d, 0.0f);
}

TEST(OnlineState, MergeIsNotAssociativeInFloatingPoint) {
  // REFERENCE.md: associative in exact arithmetic, not in floating point.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> m(-5, 5), d(1, 100);
  int differ = 0;
  for (int i = 0; i < 2000; ++i) {
    const State a{m(rng), d(rng)}, b{m(rng), d(rng)}, c{m(rng), d(rng)};
    const State left = online::merge(online::merge(a, b, exp_fn), c, exp_fn);
    const State right = online::merge(a, online::merge(b, c, exp_fn), exp_fn);
    EXPECT_EQ(left.m, right.m);
    EXPECT_NEAR(left.d, right.d, 1e-5 * left.d);
    differ += left.d != right.d;
  }
  EXPECT_GT(differ, 100) << "grouping should change the rounding of d for many triples";
}

TEST(OnlineState, AbsorbTileIsFlashAttentionsUpdate) {
  // m' = max(m, tile max); d' = d exp(m - m') + sum exp(z - m'), in that order.
  const State s{1.0f, 2.5f};
  const float z[4] = {0.5f, 3.0f, -INFINITY, 2.0f};
  const State r = online::absorb_tile(s, z, 4, exp_fn);
  EXPECT_EQ(r.m, 3.0f);
  const float sum = ((0.0f + portable::exp(0.5f - 3.0f)) + portable::exp(0.0f)) + 0.0f + portable::exp(2.0f - 3.0f);
  EXPECT_EQ(r.d, 2.5f * portable::exp(1.0f - 3.0f) + sum);
  const float masked[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  const State unchanged = online::absorb_tile(s, masked, 4, exp_fn);
  EXPECT_EQ(unchanged.m, s.m);
  EXPECT_EQ(unchanged.d, s.d);
}

// The device's warp reduction, simulated lane by lane: every lane merges its
// state with __shfl_down_sync(offset)'s (its own state past lane 31), all
// lanes at once; the result is lane 0's. Independent of online::tree_fold.
State simulated_shuffle_down(std::vector<State> lanes) {
  for (int offset = 16; offset > 0; offset /= 2) {
    std::vector<State> next(32);
    for (int lane = 0; lane < 32; ++lane) {
      const State other = lane + offset < 32 ? lanes[static_cast<std::size_t>(lane + offset)]
                                             : lanes[static_cast<std::size_t>(lane)];
      next[static_cast<std::size_t>(lane)] = online::merge(lanes[static_cast<std::size_t>(lane)], other, exp_fn);
    }
    lanes = next;
  }
  return lanes[0];
}

// The twin's row state rebuilt in the test: per-thread states from the
// shared absorb_tile, merged by the simulated shuffles (tree) or a plain fold.
State reference_row_state(const std::vector<float>& z, int threads, int per_thread, MergeOrder order) {
  const std::int64_t tile = static_cast<std::int64_t>(threads) * per_thread;
  const auto n = static_cast<std::int64_t>(z.size());
  std::vector<State> states;
  for (int t = 0; t < threads; ++t) {
    State s = online::empty_state();
    for (std::int64_t start = 0; start < n; start += tile) {
      std::vector<float> mine;
      for (int v = 0; v < per_thread; ++v) {
        const std::int64_t i = start + t * per_thread + v;
        mine.push_back(i < n ? z[static_cast<std::size_t>(i)] : -INFINITY);
      }
      s = online::absorb_tile(s, mine.data(), per_thread, exp_fn);
    }
    states.push_back(s);
  }
  if (order == MergeOrder::sequential) {
    State acc = states[0];
    for (std::size_t i = 1; i < states.size(); ++i) acc = online::merge(acc, states[i], exp_fn);
    return acc;
  }
  std::vector<State> warps(32, online::empty_state());
  for (int w = 0; w < threads / 32; ++w)
    warps[static_cast<std::size_t>(w)] = simulated_shuffle_down(
        std::vector<State>(states.begin() + w * 32, states.begin() + (w + 1) * 32));
  return simulated_shuffle_down(warps);
}

std::vector<float> as_floats(const std::vector<double>& x) { return {x.begin(), x.end()}; }

std::vector<double> reference_softmax(const std::vector<double>& x, int threads, MergeOrder order) {
  const std::vector<float> z = as_floats(x);
  const online::Normaliser n = online::normaliser(reference_row_state(z, threads, 4, order));
  std::vector<double> y;
  for (float v : z) y.push_back(online::softmax_of(v, n, exp_fn));
  return y;
}

// --------------------------------------------------------------- merge order

TEST(MergeOrder, TwinFollowsTheSimulatedWarpShufflesAndTheSequentialFold) {
  std::mt19937_64 rng(21);
  for (std::size_t n : {1u, 5u, 1000u, 1024u, 1025u, 3000u, 9000u}) {
    const std::vector<double> x = in_format(normal_row(rng, n, 4), Format::f32);
    EXPECT_EQ(run(kernel("tiled_online_t1024_tree_f32"), Op::softmax, x), reference_softmax(x, 256, MergeOrder::tree)) << n;
    EXPECT_EQ(run(kernel("tiled_online_t1024_seq_f32"), Op::softmax, x),
              reference_softmax(x, 256, MergeOrder::sequential)) << n;
    EXPECT_EQ(run(kernel("tiled_online_t128_tree_f32"), Op::softmax, x), reference_softmax(x, 32, MergeOrder::tree)) << n;
    EXPECT_EQ(run(kernel("tiled_online_t4096_tree_f32"), Op::softmax, x), reference_softmax(x, 1024, MergeOrder::tree))
        << n;
  }
}

// The first seeded row (n = 5000, N(0, 4)) on which tree and sequential merges
// give different bits, or an empty row.
std::vector<double> row_where_merge_order_matters(int& tried) {
  std::mt19937_64 rng(5);
  const Kernel& tree = kernel("tiled_online_t1024_tree_f32");
  const Kernel& seq = kernel("tiled_online_t1024_seq_f32");
  for (tried = 1; tried <= 50; ++tried) {
    const std::vector<double> x = in_format(normal_row(rng, 5000, 4), Format::f32);
    if (run(tree, Op::softmax, x) != run(seq, Op::softmax, x)) return x;
  }
  return {};
}

TEST(MergeOrder, ARowWhoseResultChangesWithMergeOrderAndBothHoldTheContract) {
  int tried = 0;
  const std::vector<double> x = row_where_merge_order_matters(tried);
  ASSERT_FALSE(x.empty()) << "tree and sequential merges agreed on 50 rows";
  const std::vector<double> tree = run(kernel("tiled_online_t1024_tree_f32"), Op::softmax, x);
  const std::vector<double> seq = run(kernel("tiled_online_t1024_seq_f32"), Op::softmax, x);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += tree[i] != seq[i];
  std::printf("row %d: tree and sequential merges differ in %zu of %zu outputs\n", tried, differ, x.size());
  // Each matches its own merge order, not the other one.
  EXPECT_EQ(tree, reference_softmax(x, 256, MergeOrder::tree));
  EXPECT_EQ(seq, reference_softmax(x, 256, MergeOrder::sequential));
  EXPECT_NE(tree, reference_softmax(x, 256, MergeOrder::sequential));
  for (const char* k : {"tiled_online_t1024_tree_f32", "tiled_online_t1024_seq_f32"}) {
    const Measure m = measure(kernel(k), x, 1.0);
    EXPECT_LE(m.ratio, 1) << k;
  }
}

TEST(MergeOrder, TileSizeChangesTheRoundingToo) {
  std::mt19937_64 rng(8);
  int differ = 0;
  for (int i = 0; i < 20; ++i) {
    const std::vector<double> x = in_format(normal_row(rng, 5000, 4), Format::f32);
    differ += run(kernel("tiled_online_t128_tree_f32"), Op::softmax, x) !=
              run(kernel("tiled_online_t4096_tree_f32"), Op::softmax, x);
  }
  EXPECT_GT(differ, 0);
}

// ------------------------------------------------- contracts against the oracle

TEST(TiledOnline, EveryTwinHoldsItsContractOnManyRows) {
  std::mt19937_64 rng(20240611);
  const std::vector<std::size_t> sizes = {1, 2, 3, 4, 5, 31, 127, 128, 129, 1000, 1023, 1024, 1025, 4095, 4097, 12000};
  struct Worst {
    double ulp = 0, ratio = 0;
    int rows = 0;
  };
  std::map<std::string, Worst> worst;
  for (std::size_t n : sizes)
    for (int family = 0; family < 5; ++family)
      for (double t : {1.0, 0.7, 3.7}) {
        std::vector<double> x;
        switch (family) {
          case 0: x = normal_row(rng, n, 1); break;
          case 1: x = normal_row(rng, n, 10); break;
          case 2: x = normal_row(rng, n, 100); break;
          case 3: {  // XNNPACK's U(90, 100)
            std::uniform_real_distribution<double> u(90, 100);
            for (std::size_t i = 0; i < n; ++i) x.push_back(u(rng));
            break;
          }
          default: {  // a quarter masked, one finite entry kept
            x = normal_row(rng, n, 3);
            for (std::size_t i = 0; i < n; ++i)
              if (rng() % 4 == 0) x[i] = -inf;
            x[rng() % n] = 1.5;
          }
        }
        for (Format f : {Format::f32, Format::f16}) {
          const std::vector<double> xf = in_format(x, f);
          const oracle::ExactRow exact = oracle::exact_row(xf, t);  // once per row and format
          if (exact.status != oracle::RowStatus::ok) continue;    // f16: everything masked
          for (const Kernel* k : twins()) {
            if (k->format != f) continue;
            const Measure m = measure(*k, xf, t, exact);
            EXPECT_LE(m.ratio, 1) << k->name << " n=" << n << " family " << family << " T=" << t;
            Worst& w = worst[k->name];
            w.ulp = std::max(w.ulp, m.ulp);
            w.ratio = std::max(w.ratio, m.ratio);
            ++w.rows;
          }
        }
      }
  std::printf("%-32s %6s %10s %10s  %s\n", "twin", "rows", "max ulp", "ulp/bound", "softmax contract");
  for (const auto& [name, w] : worst)
    std::printf("%-32s %6d %10.3f %10.4f  %s\n", name.c_str(), w.rows, w.ulp, w.ratio,
                kernel(name).find(Op::softmax)->contract.formula().c_str());
  EXPECT_EQ(worst.size(), twins().size());
}

TEST(TiledOnline, ErrorVersusTileSizeAndMergeOrderOnLongRows) {
  // Informative: rows of U(-1, 1) (R < 2, so the exp arguments' rounding is
  // small and the sums' rounding shows) of 65536 entries; largest and mean ULP
  // error per configuration, next to the one-chain online and shifted kernels.
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<const Kernel*> ks;
  for (const Kernel* k : twins())
    if (k->format == Format::f32) ks.push_back(k);
  ks.push_back(&kernel("online_f32"));
  ks.push_back(&kernel("shifted_f32"));
  std::map<std::string, std::pair<double, double>> err;  // max, sum of row means
  const int rows = 4;
  for (int r = 0; r < rows; ++r) {
    std::vector<double> x(65536);
    for (double& v : x) v = u(rng);
    x = in_format(x, Format::f32);
    const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
    for (const Kernel* k : ks) {
      const RowError e = compare_row(run(*k, Op::softmax, x), exact.softmax, Format::f32, Op::softmax);
      auto& [mx, mean] = err[k->name];
      mx = std::max(mx, e.max_ulp);
      mean += e.sum_ulp / static_cast<double>(e.measured) / rows;
    }
  }
  for (const Kernel* k : ks)
    std::printf("U(-1, 1), n = 65536: %-30s max %7.3f ulp, mean %6.3f ulp\n", k->name.c_str(),
                err[k->name].first, err[k->name].second);
  // Tiling shortens the chains of additions: every tiled configuration beats the single chain.
  for (const Kernel* k : twins()) {
    if (k->format == Format::f32) {
      EXPECT_LT(err[k->name].first, err["online_f32"].first) << k->name;
    }
  }
}

// ----------------------------------------------------------------- edge rows

TEST(TiledOnline, TileBoundaryMaximaAndANewMaxInTheLastTile) {
  std::mt19937_64 rng(13);
  for (const Kernel* k : twins()) {
    std::vector<double> boundary = normal_row(rng, 3072, 1);
    boundary[1023] = boundary[1024] = 12;  // the max on both sides of a tile boundary
    std::vector<double> last = normal_row(rng, 4100, 1);
    last[4099] = 30;  // a new max in the last (short) tile: every state rescales
    std::vector<double> rising(5000);
    for (std::size_t i = 0; i < rising.size(); ++i) rising[i] = 0.01 * static_cast<double>(i);
    for (const auto* x : {&boundary, &last, &rising}) {
      const std::vector<double> xf = in_format(*x, k->format);
      EXPECT_LE(measure(*k, xf, 1.0).ratio, 1) << k->name;
    }
    const std::vector<double> y = run(*k, Op::softmax, in_format(last, k->format));
    EXPECT_GT(y[4099], 0.999) << k->name;
  }
}

TEST(TiledOnline, FullyMaskedTilesAndRowsShorterThanATile) {
  std::mt19937_64 rng(17);
  for (const Kernel* k : twins()) {
    std::vector<double> x = normal_row(rng, 5000, 2);
    std::fill(x.begin(), x.begin() + 2048, -inf);  // two whole tiles masked (threads with empty states)
    std::fill(x.begin() + 3000, x.begin() + 4100, -inf);
    const std::vector<double> xf = in_format(x, k->format);
    EXPECT_LE(measure(*k, xf, 0.7).ratio, 1) << k->name;
    const std::vector<double> y = run(*k, Op::softmax, xf), l = run(*k, Op::log_softmax, xf);
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i] == -inf) {
        ASSERT_EQ(y[i], 0.0) << k->name << " " << i;
        ASSERT_FALSE(std::signbit(y[i]));
        ASSERT_EQ(l[i], -inf) << k->name << " " << i;
      }
    // Rows shorter than a tile: most threads never see an entry.
    for (std::size_t n : {1u, 2u, 5u, 100u}) {
      const std::vector<double> s = in_format(normal_row(rng, n, 3), k->format);
      EXPECT_LE(measure(*k, s, 1.0).ratio, 1) << k->name << " n=" << n;
    }
    EXPECT_EQ(run(*k, Op::softmax, {4.25})[0], 1.0);
    EXPECT_EQ(run(*k, Op::log_softmax, {4.25})[0], 0.0);
    // One finite entry at the very end of a masked row.
    std::vector<double> lone(3000, -inf);
    lone.back() = -7;
    const std::vector<double> one = run(*k, Op::softmax, lone);
    EXPECT_EQ(one.back(), 1.0);
    EXPECT_EQ(std::count(one.begin(), one.end(), 0.0), 2999);
  }
}

TEST(TiledOnline, AllMinusInfRowsFollowTheZerosPolicy) {
  for (const Kernel* k : twins()) {
    EXPECT_EQ(k->masked_policy, MaskedRowPolicy::zeros);
    for (std::size_t n : {1u, 7u, 1024u, 3000u, 9000u}) {
      const std::vector<double> x(n, -inf);
      for (double v : run(*k, Op::softmax, x)) ASSERT_EQ(v, 0.0) << k->name << " n=" << n;
      for (double v : run(*k, Op::log_softmax, x)) ASSERT_EQ(v, -inf) << k->name << " n=" << n;
    }
  }
}

TEST(TiledOnline, F16IsTheF32TwinRoundedOnce) {
  // f16 in/out with f32 statistics: the same f32 computation, one rounding at the end.
  std::mt19937_64 rng(23);
  for (std::size_t n : {3u, 1000u, 1025u, 7000u})
    for (double t : {1.0, 0.7}) {
      const std::vector<double> x = in_format(normal_row(rng, n, 3), Format::f16);
      for (Op op : {Op::softmax, Op::log_softmax}) {
        const std::vector<double> y32 = run(kernel("tiled_online_t1024_tree_f32"), op, x, t);
        const std::vector<double> y16 = run(kernel("tiled_online_t1024_tree_f16"), op, x, t);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y16[i], round_to_format(y32[i], Format::f16)) << i;
      }
    }
}

TEST(TiledOnline, SplitRowEqualsItsSegmentsMergedInOrder) {
  // split_online = tiled states of the 8 segments (whole tiles each), ⊕ in segment order.
  std::mt19937_64 rng(29);
  const std::vector<double> x = in_format(normal_row(rng, 20000, 5), Format::f32);
  const std::vector<float> z = as_floats(x);
  const std::int64_t seg = online::segment_length(20000, 8, 1024);
  EXPECT_EQ(seg, 3072);
  std::vector<State> parts;
  for (std::int64_t s = 0; s < 8; ++s) {
    const auto begin = std::min<std::int64_t>(s * seg, 20000), end = std::min<std::int64_t>(begin + seg, 20000);
    parts.push_back(reference_row_state(std::vector<float>(z.begin() + begin, z.begin() + end), 256, 4, MergeOrder::tree));
  }
  const online::Normaliser n = online::normaliser(online::sequential_fold(parts.data(), 8, exp_fn));
  std::vector<double> expect;
  for (float v : z) expect.push_back(online::softmax_of(v, n, exp_fn));
  EXPECT_EQ(run(kernel("split_online_t1024_s8_f32"), Op::softmax, x), expect);
}

TEST(TiledOnline, LogSoftmaxIsConsistentAndHasNoContract) {
  std::mt19937_64 rng(31);
  for (const Kernel* k : twins()) {
    EXPECT_FALSE(k->find(Op::log_softmax)->contract.declared) << k->name;
    const std::vector<double> x = in_format(normal_row(rng, 2000, 3), k->format);
    const std::vector<double> y = run(*k, Op::softmax, x), l = run(*k, Op::log_softmax, x);
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(std::exp(l[i]), y[i], 1e-2 * y[i] + 1e-7) << k->name << " " << i;
  }
  // Why none: the dominant entry's log-softmax ~ -e^-20 is lost in d = fl(1 + s').
  const std::vector<double> l = run(kernel("tiled_online_t1024_tree_f32"), Op::log_softmax, {0, -20});
  EXPECT_EQ(l[0], 0.0);
}

TEST(TiledOnline, BatchedRowsAndInPlace) {
  std::mt19937_64 rng(37);
  for (const Kernel* k : twins()) {
    const std::vector<double> x = in_format(normal_row(rng, 3 * 1500, 4), k->format);
    const std::vector<double> batched = run(*k, Op::softmax, x, 1.3, 3);
    for (std::size_t r = 0; r < 3; ++r) {
      const std::vector<double> row(x.begin() + static_cast<long>(r * 1500), x.begin() + static_cast<long>((r + 1) * 1500));
      const std::vector<double> single = run(*k, Op::softmax, row, 1.3);
      ASSERT_TRUE(std::equal(single.begin(), single.end(), batched.begin() + static_cast<long>(r * 1500))) << k->name;
    }
    std::vector<unsigned char> buf = pack(x, k->format);
    k->run(Op::softmax, buf.data(), buf.data(), 3, 1500, 1.3);
    EXPECT_EQ(unpack(buf, k->format, x.size()), batched) << k->name;
  }
}

// --------------------------------------------------------------- contracts

TEST(Contracts, DerivedFromTheTileShapeMergeOrderAndExp) {
  auto formula = [](const std::string& k) { return kernel(k).find(Op::softmax)->contract.formula(); };
  // a = 2e0 + V + 1 + L(2 + e0), b = (2 + e0)/(S P V), c = 3(1 + e1); docs/cuda.md.
  EXPECT_EQ(formula("tiled_online_t1024_tree_f32"), "31 + 0.00292969*n + 3*R + 4*M[T!=1]");
  EXPECT_EQ(formula("tiled_online_t1024_seq_f32"), "772 + 0.00292969*n + 3*R + 4*M[T!=1]");
  EXPECT_EQ(formula("tiled_online_t128_tree_f32"), "22 + 0.0234375*n + 3*R + 4*M[T!=1]");
  EXPECT_EQ(formula("tiled_online_t4096_tree_f32"), "37 + 0.000732422*n + 3*R + 4*M[T!=1]");
  EXPECT_EQ(formula("split_online_t1024_s8_f32"), "52 + 0.000366211*n + 3*R + 4*M[T!=1]");
  EXPECT_EQ(formula("tiled_online_t1024_tree_f16"), "1.00378 + 3.57628e-07*n + 0.000366211*R + 4*M[T!=1]");
  // The CUDA kernels: the twin's contract with their own exp.
  EXPECT_EQ(formula("cuda_tiled_online_f32"), formula("tiled_online_t1024_tree_f32"));
  EXPECT_EQ(formula("cuda_tiled_online_f16"), formula("tiled_online_t1024_tree_f16"));
  EXPECT_EQ(formula("cuda_split_online_f32"), formula("split_online_t1024_s8_f32"));
  EXPECT_EQ(formula("cuda_tiled_online_expf_f32"), "61 + 0.00585938*n + 3*R + 4*M[T!=1]");
  // __expf: 2 + 1.173|x| ulp = (4 + 2.346|x|)u per exp; |x| <= R on every path.
  EXPECT_EQ(formula("cuda_tiled_online_fastexp_f32"), "61 + 0.00585938*n + 10.038*R + 4*M[T!=1]");
}

// ----------------------------------------------------- CUDA kernels listed

std::vector<const Kernel*> cuda_entries() {
  std::vector<const Kernel*> out;
  for (const Kernel& k : builtin_kernels())
    if (k.algorithm.rfind("cuda_", 0) == 0) out.push_back(&k);
  return out;
}

TEST(CudaKernels, AlwaysListedAndUnavailableWithAReasonWhereTheyCannotRun) {
  const std::vector<const Kernel*> ks = cuda_entries();
  ASSERT_EQ(ks.size(), 6u);
  const std::string why = cuda::unavailable_reason();
#if SOFTCHECK_TEST_BUILT_WITH_CUDA
  const bool built = true;
#else
  const bool built = false;
#endif
  if (!built) {
    EXPECT_EQ(why, "built without CUDA");
  } else if (!why.empty()) {
    EXPECT_TRUE(why.rfind("no CUDA device", 0) == 0 || why.rfind("no kernel image", 0) == 0) << why;
  }
  std::printf("CUDA kernels: %s\n", why.empty() ? "available" : why.c_str());
  for (const Kernel* k : ks) {
    EXPECT_EQ(k->available, why.empty()) << k->name;
    EXPECT_EQ(k->unavailable_reason, why) << k->name;
    EXPECT_EQ(k->masked_policy, MaskedRowPolicy::zeros);
    EXPECT_TRUE(k->find(Op::softmax)->contract.declared);
    if (!k->available) {  // running one anyway is a reported failure, never a crash or a result
      std::vector<float> x(8, 1.0f), y(8, 0.0f);
      EXPECT_THROW(k->run(Op::softmax, x.data(), y.data(), 1, 8, 1.0), KernelFailure) << k->name;
    }
  }
}

TEST(CudaKernels, EveryOneHasAHostTwinOfTheSameOrder) {
  const std::vector<kernels::CudaTwinPair> pairs = kernels::cuda_twin_pairs();
  ASSERT_EQ(pairs.size(), 6u);
  for (const kernels::CudaTwinPair& p : pairs) {
    ASSERT_NE(find_kernel(p.cuda), nullptr) << p.cuda;
    ASSERT_NE(find_kernel(p.twin), nullptr) << p.twin;
    EXPECT_EQ(find_kernel(p.cuda)->format, find_kernel(p.twin)->format);
    EXPECT_EQ(p.bit_exact, p.cuda.find("exp") == std::string::npos) << p.cuda;
  }
}

TEST(CudaKernels, ARunThatIncludesThemSkipsThemAndStillHolds) {
  std::vector<const Kernel*> ks = cuda_entries();
  ks.push_back(&kernel("tiled_online_t1024_tree_f32"));
  ks.push_back(&kernel("tiled_online_t1024_tree_f16"));
  RunOptions opt;
  opt.selection.families = {"normal_s1", "mask_neg_inf", "fully_masked"};
  opt.selection.sizes = {3, 1025};
  opt.selection.temperatures = {1.0};
  opt.jobs = 2;
  const Report r = run_suite(ks, opt);
  const bool available = cuda::unavailable_reason().empty();
  for (const KernelSummary& s : r.kernels) {
    SCOPED_TRACE(s.kernel + " " + s.op);
    if (s.kernel.rfind("cuda_", 0) == 0 && !available) {
      EXPECT_EQ(s.status, "unavailable");
      EXPECT_EQ(s.unavailable_reason, cuda::unavailable_reason());
      EXPECT_EQ(s.rows, 0u);
    } else {
      EXPECT_NE(s.status, "violated");
      EXPECT_GT(s.rows, 0u);
    }
  }
  EXPECT_TRUE(r.all_held());
  const std::string json = to_json(r);
  if (!available) {
    EXPECT_NE(json.find("\"status\": \"unavailable\""), std::string::npos);
  }
}

}  // namespace
}  // namespace softcheck
