// The f16 / bf16 kernels (impls/src/lowp_shifted.cpp, docs/low-precision.md):
// registration and declarations; f32 accumulation is the f32 kernel rounded
// once; f16 accumulation matches an independent op-by-op rounding reference;
// behaviour on masks, batches, aliasing and temperatures; the f32-accumulation
// contracts against the oracle (and whether they stay within 1 ulp); and the
// f16-accumulation kernel failing where it should (long rows, large logits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"
#include "softcheck/test_values.hpp"

namespace softcheck {
namespace {

using softcheck::test_values::inf;

const Kernel& kernel(const char* name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::logic_error(std::string("no kernel ") + name);
  return *k;
}

std::vector<double> in_format(std::vector<double> x, Format f) {
  for (double& v : x) v = round_to_format(v, f);
  return x;
}

// Runs a 16-bit kernel on rows of doubles (rounded to its format on the way in).
std::vector<double> run16(const Kernel& k, Op op, const std::vector<double>& x, std::int64_t rows = 1,
                          double temperature = 1.0) {
  const auto cols = static_cast<std::int64_t>(x.size()) / rows;
  const std::vector<unsigned char> in = pack(x, k.format);
  std::vector<unsigned char> out(in.size());
  k.run(op, in.data(), out.data(), rows, cols, temperature);
  return unpack(out, k.format, x.size());
}

// Runs an f32 kernel.
std::vector<double> run32(const Kernel& k, Op op, const std::vector<double>& x, double temperature) {
  std::vector<float> xf(x.size()), yf(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i]);
  k.run(op, xf.data(), yf.data(), 1, static_cast<std::int64_t>(x.size()), temperature);
  return {yf.begin(), yf.end()};
}

bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

const char* const kLowp[] = {"f16_shifted_f32acc", "bf16_shifted_f32acc", "f16_shifted_f16acc"};

// ------------------------------------------------------------- declarations

TEST(Lowp, RegisteredWithFormatsPoliciesAndOps) {
  struct Want {
    const char* name;
    const char* algorithm;
    Format format;
    bool contract;
  };
  for (const Want& w : {Want{"f16_shifted_f32acc", "shifted_f32acc", Format::f16, true},
                        Want{"bf16_shifted_f32acc", "shifted_f32acc", Format::bf16, true},
                        Want{"f16_shifted_f16acc", "shifted_f16acc", Format::f16, false}}) {
    SCOPED_TRACE(w.name);
    const Kernel& k = kernel(w.name);
    EXPECT_EQ(k.algorithm, w.algorithm);
    EXPECT_EQ(k.format, w.format);
    EXPECT_TRUE(k.available);
    EXPECT_FALSE(k.test_only);
    EXPECT_EQ(k.masked_policy, MaskedRowPolicy::zeros);
    ASSERT_NE(k.find(Op::softmax), nullptr);
    ASSERT_NE(k.find(Op::log_softmax), nullptr);
    for (const OpDecl& d : k.ops) EXPECT_EQ(d.contract.declared, w.contract) << name(d.op);
    const auto in_registry = std::count_if(builtin_kernels().begin(), builtin_kernels().end(),
                                           [&](const Kernel& b) { return b.name == w.name; });
    EXPECT_EQ(in_registry, 1);
  }
}

TEST(Lowp, F32AccContractIsTheF32OneRoundedOnce) {
  // 0.5 ulp (final rounding) + 1.5 K32 u32/u_f (lowp_shifted.cpp's derivation),
  // K32 the contract of the same core in f32 (shifted_log1p_f32).
  const Kernel& f32 = kernel("shifted_log1p_f32");
  for (const char* kname : {"f16_shifted_f32acc", "bf16_shifted_f32acc"}) {
    const Kernel& k = kernel(kname);
    const int p = info(k.format).precision;
    const double scale = 1.5 * std::ldexp(1.0, p - 24);  // u32 / u_f = 2^(p - 24)
    for (Op op : {Op::softmax, Op::log_softmax}) {
      SCOPED_TRACE(std::string(kname) + " " + std::string(name(op)));
      const Contract& c = k.find(op)->contract;
      const Contract& c32 = f32.find(op)->contract;
      ASSERT_TRUE(c.declared);
      EXPECT_EQ(c.a, 0.5 + scale * c32.a);
      EXPECT_EQ(c.b, scale * c32.b);
      EXPECT_EQ(c.c, scale * c32.c);
      EXPECT_EQ(c.d, scale * c32.d);
      EXPECT_EQ(c.t, scale * c32.t);
    }
  }
  // By hand for f16 softmax: K32 = 3 + n + 2R + 4M[T!=1], so
  // a = 0.5 + 4.5 * 2^-13, b = 1.5 * 2^-13, c = 3 * 2^-13, t = 6 * 2^-13.
  const Contract& c = kernel("f16_shifted_f32acc").find(Op::softmax)->contract;
  EXPECT_EQ(c.a, 0.5 + 4.5 * 0x1p-13);
  EXPECT_EQ(c.b, 1.5 * 0x1p-13);
  EXPECT_EQ(c.c, 3 * 0x1p-13);
  EXPECT_EQ(c.t, 6 * 0x1p-13);
  // A 2-entry row of R = 1 at T = 1: K = 0.5 + (3 + 2 + 2) 1.5 2^-13, bound K / (1 - K 2^-11).
  const std::vector<double> x = {0, -1};
  const double K = 0.5 + 7 * 1.5 * 0x1p-13;
  EXPECT_DOUBLE_EQ(c.bound_ulps(row_shape(x, 1.0, Format::f16), Format::f16), K / (1 - K * 0x1p-11));
}

// ----------------------------------------------- what the kernels compute

// Random rows of format f: normal(0, sigma) with some -inf masks and sizes 1..300.
std::vector<std::vector<double>> random_rows(Format f, std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> rows;
  for (int r = 0; r < count; ++r) {
    const std::size_t n = 1 + rng() % 300;
    const double sigma = r % 3 == 0 ? 1 : r % 3 == 1 ? 10 : 100;
    std::normal_distribution<double> normal(0, sigma);
    std::vector<double> x(n);
    for (double& v : x) v = rng() % 8 == 0 ? -inf : normal(rng);
    x[rng() % n] = normal(rng);
    rows.push_back(in_format(x, f));
  }
  return rows;
}

TEST(Lowp, F32AccumulationIsTheF32KernelRoundedOnce) {
  // Same core in f32 (shifted_log1p_f32, whose inputs are the same exact
  // values), then one round-to-nearest-even to the storage format.
  const Kernel& f32 = kernel("shifted_log1p_f32");
  for (const char* kname : {"f16_shifted_f32acc", "bf16_shifted_f32acc"}) {
    const Kernel& k = kernel(kname);
    for (const auto& x : random_rows(k.format, 7, 60))
      for (double t : {1.0, 0.7, 3.7})
        for (Op op : {Op::softmax, Op::log_softmax}) {
          const auto y = run16(k, op, x, 1, t);
          const auto y32 = run32(f32, op, x, t);
          for (std::size_t j = 0; j < x.size(); ++j)
            ASSERT_TRUE(same_bits(y[j], round_to_format(y32[j], k.format)))
                << kname << " " << name(op) << " T=" << t << " j=" << j;
        }
  }
}

// An independent reference for f16 accumulation: the shifted_log1p formula
// written out with an explicit rounding to f16 after every operation (in
// double, then round_to_format: correctly rounded for +, -, *, / since
// 53 >= 2 * 11 + 2).
std::vector<double> f16_every_op_reference(Op op, const std::vector<double>& x, double temperature) {
  auto r = [](double v) { return round_to_format(v, Format::f16); };
  const double t = r(temperature);
  std::vector<double> z(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) z[i] = r(x[i] / t);
  std::size_t k = 0;
  for (std::size_t i = 1; i < z.size(); ++i)
    if (z[i] > z[k]) k = i;
  const double a = z[k] == -inf ? 0.0 : z[k];
  double s = 0;
  for (std::size_t i = 0; i < z.size(); ++i)
    if (i != k) s = r(s + r(std::exp(r(z[i] - a))));
  std::vector<double> y(z.size());
  for (std::size_t j = 0; j < z.size(); ++j)
    y[j] = op == Op::softmax ? r(r(std::exp(r(z[j] - a))) / r(1 + s)) : r(r(z[j] - a) - r(std::log1p(s)));
  return y;
}

TEST(Lowp, F16AccumulationRoundsEveryOperation) {
  const Kernel& k = kernel("f16_shifted_f16acc");
  for (const auto& x : random_rows(Format::f16, 11, 80))
    for (double t : {1.0, 0.7, 3.7})
      for (Op op : {Op::softmax, Op::log_softmax}) {
        const auto y = run16(k, op, x, 1, t);
        const auto ref = f16_every_op_reference(op, x, t);
        for (std::size_t j = 0; j < x.size(); ++j)
          ASSERT_TRUE(same_bits(y[j], ref[j])) << name(op) << " T=" << t << " j=" << j << " n=" << x.size();
      }
}

TEST(Lowp, F16SumStallsAt2048) {
  // n equal entries: every term exp(0) = 1. In f16 the partial sums are exact
  // up to 2048; 2048 + 1 = 2049 lies halfway between 2048 and 2050 and ties to
  // 2048 (even significand), so s' stops at 2048 and 1 + s' = 2048 too.
  // n = 2048: 1 + 2047 = 2048, exact: 2^-11. n = 4096: 2^-11 instead of 2^-12.
  const Kernel& f16acc = kernel("f16_shifted_f16acc");
  const Kernel& f32acc = kernel("f16_shifted_f32acc");
  EXPECT_EQ(run16(f16acc, Op::softmax, std::vector<double>(2048, 0.5))[0], 0x1p-11);
  EXPECT_EQ(run16(f16acc, Op::softmax, std::vector<double>(4096, 0.5))[0], 0x1p-11);
  EXPECT_EQ(run16(f32acc, Op::softmax, std::vector<double>(4096, 0.5))[0], 0x1p-12);
  // log-softmax: -log1p(2048) rounded, instead of -log(4096) = -12 ln 2.
  EXPECT_EQ(run16(f16acc, Op::log_softmax, std::vector<double>(4096, 0.5))[0],
            -round_to_format(std::log1p(2048.0), Format::f16));
  EXPECT_EQ(run16(f32acc, Op::log_softmax, std::vector<double>(4096, 0.5))[0],
            round_to_format(-12 * std::log(2.0), Format::f16));
}

TEST(Lowp, KnownValuesAndLargeInputs) {
  // REFERENCE.md, Entmax family: x = [-2, 0, 0.5] -> softmax [0.0486, 0.3592, 0.5922].
  // f16 ulps there: 2^-15, 2^-12, 2^-11; bf16: 2^-12, 2^-9, 2^-8 (+ the
  // reference's 4-digit rounding, 5e-5).
  const double expect[] = {0.0486, 0.3592, 0.5922};
  for (const char* kname : kLowp) {
    const Kernel& k = kernel(kname);
    const double u = unit_roundoff(k.format);
    const auto y = run16(k, Op::softmax, {-2, 0, 0.5});
    for (std::size_t j = 0; j < 3; ++j) EXPECT_NEAR(y[j], expect[j], 2 * u * expect[j] + 5e-5) << kname << j;
    // [1000, 1001, 1002]: exact in f16; in bf16 (ulp 4 in [512, 1024)) 1001
    // rounds to 1000 and 1002, a tie, to 1000 (even). No overflow thanks to the shift.
    const auto big = run16(k, Op::softmax, {1000, 1001, 1002});
    for (double v : big) EXPECT_TRUE(std::isfinite(v)) << kname;
    if (k.format == Format::f16) {
      EXPECT_NEAR(big[2], 0.6652, 2 * u);
    }
  }
}

TEST(Lowp, MasksMinusOneE9AndFullyMaskedRows) {
  for (const char* kname : kLowp) {
    SCOPED_TRACE(kname);
    const Kernel& k = kernel(kname);
    // A -inf entry behaves bitwise like a dropped one.
    const auto y = run16(k, Op::softmax, {-inf, 1, -inf, 2, 0.5});
    const auto kept = run16(k, Op::softmax, {1, 2, 0.5});
    EXPECT_EQ(y[0], 0.0);
    EXPECT_EQ(y[2], 0.0);
    EXPECT_EQ(y[1], kept[0]);
    EXPECT_EQ(y[3], kept[1]);
    EXPECT_EQ(y[4], kept[2]);
    const auto l = run16(k, Op::log_softmax, {-inf, 1, -inf, 2, 0.5});
    EXPECT_EQ(l[0], -inf);
    EXPECT_EQ(l[1], run16(k, Op::log_softmax, {1, 2, 0.5})[0]);
    // -1e9 overflows to -inf in f16 (REFERENCE.md, "What users keep reporting")
    // and so is an exact mask; in bf16 it is a finite value whose exp underflows.
    const auto m = run16(k, Op::softmax, {-1e9, 1, 2, 0.5});
    EXPECT_EQ(m[0], 0.0);
    EXPECT_EQ(m[1], kept[0]);
    EXPECT_EQ(run16(k, Op::log_softmax, {-1e9, 1, 2, 0.5})[0],
              k.format == Format::f16 ? -inf : round_to_format(round_to_format(-1e9, k.format) - 2, k.format));
    // Fully masked: policy zeros (softmax 0, log-softmax -inf).
    for (double v : run16(k, Op::softmax, std::vector<double>(5, -inf))) EXPECT_EQ(v, 0.0);
    for (double v : run16(k, Op::log_softmax, std::vector<double>(5, -inf))) EXPECT_EQ(v, -inf);
  }
}

TEST(Lowp, BatchedInPlaceAndTemperature) {
  for (const char* kname : kLowp) {
    SCOPED_TRACE(kname);
    const Kernel& k = kernel(kname);
    std::mt19937_64 rng(3);
    std::normal_distribution<double> normal(0, 5);
    const std::int64_t rows = 4, cols = 33;
    std::vector<double> x(rows * cols);
    for (double& v : x) v = normal(rng);
    for (std::int64_t j = 0; j < cols; ++j) x[2 * cols + j] = -inf;  // a fully masked row
    x = in_format(x, k.format);
    for (Op op : {Op::softmax, Op::log_softmax}) {
      const auto batched = run16(k, op, x, rows, 0.7);
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::vector<double> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
        const auto single = run16(k, op, row, 1, 0.7);
        for (std::int64_t j = 0; j < cols; ++j) ASSERT_TRUE(same_bits(batched[r * cols + j], single[j]));
      }
      // In place: x and y the same buffer.
      std::vector<unsigned char> buf = pack(x, k.format);
      k.run(op, buf.data(), buf.data(), rows, cols, 0.7);
      const auto in_place = unpack(buf, k.format, x.size());
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(same_bits(in_place[i], batched[i]));
    }
    // T = 2 halves integers exactly: equal to running on x / 2.
    const std::vector<double> ints = {-7, 3, 0, 12, 5, -1, 9};
    std::vector<double> half = ints;
    for (double& v : half) v /= 2;
    EXPECT_EQ(run16(k, Op::softmax, ints, 1, 2.0), run16(k, Op::softmax, half));
  }
}

TEST(Lowp, OutputsAreCanonicalPatterns) {
  // Each output pattern is the encoding of its own value (no stray NaN payloads).
  const Kernel& k = kernel("bf16_shifted_f32acc");
  std::vector<std::uint16_t> x = {encode16(1.0, Format::bf16), encode16(-3.0, Format::bf16)}, y(2);
  k.run(Op::softmax, x.data(), y.data(), 1, 2, 1.0);
  for (std::uint16_t b : y) EXPECT_EQ(encode16(decode16(b, Format::bf16), Format::bf16), b);
}

// ------------------------------------------------------------ vs the oracle

struct LowpRow {
  std::vector<double> x;
  double temperature = 1;
  std::string family;
};

// The built-in families' shapes in f16/bf16 (core/src/input_families.cpp):
// normal sigma 1/10/100, XNNPACK's f16 U(15, 20) and f32 U(90, 100), benchdnn
// (+-88..90 among `lowest`), -inf and -1e9 masks, a dominant entry, outputs in
// f16's subnormal range, attention-like N(0, 1) sums; sizes 1..2000;
// T = 1, 0.7, 3.7.
std::vector<LowpRow> lowp_rows(Format f, std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  const double temperatures[] = {1.0, 0.7, 3.7};
  std::vector<LowpRow> rows;
  for (int r = 0; r < count; ++r) {
    LowpRow row;
    const std::size_t n = 1 + rng() % (r % 4 == 0 ? 2000 : 64);
    row.temperature = temperatures[rng() % 3];
    std::vector<double>& x = row.x;
    x.resize(n);
    std::normal_distribution<double> normal(0, 1);
    auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    switch (r % 10) {
      case 0: case 1: case 2: {
        const double sigma = r % 10 == 0 ? 1 : r % 10 == 1 ? 10 : 100;
        row.family = "normal(" + std::to_string(static_cast<int>(sigma)) + ")";
        for (double& v : x) v = sigma * normal(rng);
        break;
      }
      case 3: row.family = "U(15,20)"; for (double& v : x) v = uniform(15, 20); break;
      case 4: row.family = "U(90,100)"; for (double& v : x) v = uniform(90, 100); break;
      case 5:
        row.family = "benchdnn";
        for (double& v : x) v = lowest(f);
        for (std::size_t h = 0; h < std::min<std::size_t>(n, 3) + n / 32; ++h)
          x[rng() % n] = (rng() % 2 ? 1 : -1) * (88.0 + static_cast<double>(rng() % 3));
        break;
      case 6:
        row.family = rng() % 2 ? "masks -inf" : "masks -1e9";
        for (double& v : x) v = rng() % 4 == 0 ? (row.family == "masks -inf" ? -inf : -1e9) : 3 * normal(rng);
        x[rng() % n] = 3 * normal(rng);
        break;
      case 7:
        row.family = "dominant entry";
        for (double& v : x) v = normal(rng);
        x[rng() % n] = uniform(20, 60);
        break;
      case 8:
        row.family = "f16 subnormal outputs";
        for (double& v : x) v = uniform(-17, -9);
        x[rng() % n] = 0;
        break;
      default:
        row.family = "attention-like N(0,1) x 8";
        for (double& v : x) v = 8 * normal(rng) / std::sqrt(8.0);
        break;
    }
    x = in_format(x, f);
    rows.push_back(std::move(row));
  }
  return rows;
}

struct Measured {
  double max_ulp = 0, max_ratio = 0;
  std::string worst;
  int rows = 0;
};

// The f32-accumulation contracts hold on every row, and the measured error
// stays within 1 ulp of the format (the "<= 1 ulp" question; the
// derived bound itself exceeds 1 ulp only for long rows, see lowp_shifted.cpp).
TEST(LowpContract, F32AccumulationHoldsAndStaysWithinOneUlp) {
  const char* seed_env = std::getenv("SOFTCHECK_LOWP_SEED");
  const std::uint64_t seed = seed_env ? std::stoull(seed_env) : 20240611;
  std::map<std::string, Measured> measured;
  for (const char* kname : {"f16_shifted_f32acc", "bf16_shifted_f32acc"}) {
    const Kernel& k = kernel(kname);
    for (const LowpRow& row : lowp_rows(k.format, seed, 300)) {
      const oracle::ExactRow exact = oracle::exact_row(row.x, row.temperature);
      ASSERT_EQ(exact.status, oracle::RowStatus::ok);
      const RowShape shape = row_shape(row.x, row.temperature, k.format);
      for (const OpDecl& d : k.ops) {
        const auto y = run16(k, d.op, row.x, 1, row.temperature);
        const RowError e =
            compare_row(y, d.op == Op::softmax ? exact.softmax : exact.log_softmax, k.format, d.op);
        const double bound = d.contract.bound_ulps(shape, k.format);
        const std::string where = row.family + ", n=" + std::to_string(row.x.size()) +
                                  ", T=" + std::to_string(row.temperature).substr(0, 3);
        SCOPED_TRACE(std::string(kname) + " " + std::string(name(d.op)) + " on " + where);
        EXPECT_EQ(e.nonfinite + e.special_mismatch, 0u);
        EXPECT_LE(e.max_ulp, bound) << "worst index " << e.worst_index;
        EXPECT_LE(e.max_ulp, 1.0) << "worst index " << e.worst_index;
        Measured& m = measured[std::string(kname) + " " + std::string(name(d.op))];
        ++m.rows;
        if (e.max_ulp >= m.max_ulp) {
          m.max_ulp = e.max_ulp;
          m.worst = where;
        }
        m.max_ratio = std::max(m.max_ratio, e.max_ulp / bound);
      }
    }
  }
  std::printf("seed %llu\n%-32s %5s %9s %10s  %s\n", static_cast<unsigned long long>(seed), "kernel op", "rows",
              "max ulp", "ulp/bound", "worst row");
  for (const auto& [key, m] : measured)
    std::printf("%-32s %5d %9.4f %10.4f  %s\n", key.c_str(), m.rows, m.max_ulp, m.max_ratio, m.worst.c_str());
}

double max_ulp_of(const Kernel& k, Op op, const std::vector<double>& x, double t, bool* nonfinite = nullptr);

TEST(LowpContract, OneUlpIsNotABoundForLongRows) {
  // Why the declared f16 contract grows with n instead of being a flat 1 ulp:
  // [0, -d, ..., -d] with 65535 equal terms e = fl32(exp(-d)). Within a binade
  // of the running f32 sum s', s' + e always rounds the same way (the same
  // e mod ulp(s')), so the sum drifts by up to n u32 (Higham's gamma_{n-1})
  // instead of ~sqrt(n) u32: here s' = 65535 e^(-127/64) = 9008.87 comes out
  // 9016.67 in f32 (8.7e-4 = 14534 u32 = 1.77 u16 relative), softmax_0 =
  // 1/(1 + s') ~ 1.11e-4 is 1.61 ulp16 low before its final rounding and
  // 2.09 ulp after. Found by a search over d = k/64 (docs/low-precision.md);
  // the contract (12.58 ulps at this n) still holds.
  const Kernel& k = kernel("f16_shifted_f32acc");
  std::vector<double> x(65536, -127.0 / 64);  // exact in f16
  x[0] = 0;
  const double err = max_ulp_of(k, Op::softmax, x, 1.0);
  EXPECT_GT(err, 1.0);
  EXPECT_LE(err, k.find(Op::softmax)->contract.bound_ulps(row_shape(x, 1.0, Format::f16), Format::f16));
}

double max_ulp_of(const Kernel& k, Op op, const std::vector<double>& x, double t, bool* nonfinite) {
  const oracle::ExactRow exact = oracle::exact_row(x, t);
  const auto y = run16(k, op, x, 1, t);
  const RowError e = compare_row(y, op == Op::softmax ? exact.softmax : exact.log_softmax, k.format, op);
  if (nonfinite) *nonfinite = e.nonfinite + e.special_mismatch > 0;
  return e.max_ulp;
}

TEST(LowpContract, F16AccumulationFailsWhereItShould) {
  const Kernel& f16acc = kernel("f16_shifted_f16acc");
  const Kernel& f32acc = kernel("f16_shifted_f32acc");
  // Long rows: 4096 equal entries (the stall: 2^-11 for 2^-12 is 2^-12 / 2^-22
  // = 1024 ulps), and a 1000-entry N(0, 1) row (rounded partial sums).
  const std::vector<double> equal(4096, 0.25);
  EXPECT_EQ(max_ulp_of(f16acc, Op::softmax, equal, 1.0), 1024);
  EXPECT_LE(max_ulp_of(f32acc, Op::softmax, equal, 1.0), 0.5);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> long_row(1000);
  for (double& v : long_row) v = normal(rng);
  long_row = in_format(long_row, Format::f16);
  EXPECT_GT(max_ulp_of(f16acc, Op::softmax, long_row, 1.0), 2.0);
  EXPECT_LE(max_ulp_of(f32acc, Op::softmax, long_row, 1.0), 1.0);
  // Large logits at T = 0.5: 60000 / 0.5 = 120000 overflows f16 -> inf - inf = NaN;
  // f32 accumulation keeps z = 120000 and is fine.
  bool nonfinite = false;
  max_ulp_of(f16acc, Op::softmax, {60000, 59990, 0}, 0.5, &nonfinite);
  EXPECT_TRUE(nonfinite);
  max_ulp_of(f32acc, Op::softmax, {60000, 59990, 0}, 0.5, &nonfinite);
  EXPECT_FALSE(nonfinite);
}

}  // namespace
}  // namespace softcheck
