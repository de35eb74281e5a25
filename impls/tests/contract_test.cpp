// Contract arithmetic (bound_ulps, formula) and row shapes, by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "run_outputs.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/test_values.hpp"

namespace softcheck {
namespace {

using softcheck::test_values::inf;
const double ln2 = std::log(2.0);

Contract make(double a, double b, double c, double d, double t) {
  Contract k;
  k.declared = true;
  k.a = a;
  k.b = b;
  k.c = c;
  k.d = d;
  k.t = t;
  return k;
}

RowShape shape(double n, double R, double M, bool t_one = true) {
  RowShape s;
  s.n = n;
  s.R = R;
  s.M = M;
  s.temperature_is_one = t_one;
  return s;
}

TEST(BoundUlps, FirstOrderTermsAndGamma) {
  const Contract c = make(2, 1, 2, 0, 4);
  const double u = std::ldexp(1.0, -24);
  // K = 2 + 10 + 2*3 = 18, M ignored at T = 1.
  EXPECT_DOUBLE_EQ(c.bound_ulps(shape(10, 3, 100), Format::f32), 18 / (1 - 18 * u));
  // T != 1 adds t*M: K = 18 + 4*100 = 418.
  EXPECT_DOUBLE_EQ(c.bound_ulps(shape(10, 3, 100, false), Format::f32), 418 / (1 - 418 * u));
  // d*M counts at any temperature: K = 2 + 3*5 + 2*1 + 1*7 (+4*7).
  const Contract l = make(2, 3, 2, 1, 4);
  EXPECT_DOUBLE_EQ(l.bound_ulps(shape(5, 1, 7), Format::f32), 26 / (1 - 26 * u));
  EXPECT_DOUBLE_EQ(l.bound_ulps(shape(5, 1, 7, false), Format::f32), 54 / (1 - 54 * u));
  // f64: u = 2^-53, gamma is 1 to the last bits.
  EXPECT_DOUBLE_EQ(c.bound_ulps(shape(10, 3, 100), Format::f64),
                   18 / (1 - 18 * std::ldexp(1.0, -53)));
  // The smallest possible row: n = 1, R = M = 0 -> K = a + b.
  EXPECT_DOUBLE_EQ(make(5, 1, 1, 0, 6).bound_ulps(shape(1, 0, 0), Format::f64),
                   6 / (1 - 6 * std::ldexp(1.0, -53)));
  // Second order is visible for large K: K = 2^20 in f32, K u = 1/16.
  EXPECT_DOUBLE_EQ(make(std::ldexp(1.0, 20), 0, 0, 0, 0).bound_ulps(shape(1, 0, 0), Format::f32),
                   std::ldexp(1.0, 20) * 16 / 15);
}

TEST(BoundUlps, InfiniteWhenKuReachesOneOrUndeclared) {
  const Contract c = make(2, 1, 2, 0, 4);
  // f32: K u >= 1 once K >= 2^24.
  EXPECT_EQ(c.bound_ulps(shape(std::ldexp(1.0, 24), 0, 0), Format::f32), inf);
  EXPECT_EQ(c.bound_ulps(shape(1, std::ldexp(1.0, 23), 0), Format::f32), inf);
  EXPECT_LT(c.bound_ulps(shape(std::ldexp(1.0, 24) - 4, 0, 0), Format::f32), inf);
  EXPECT_EQ(c.bound_ulps(shape(1, 0, 1e7, false), Format::f32), inf);  // 4*1e7 > 2^24
  EXPECT_LT(c.bound_ulps(shape(1, 0, 1e7, false), Format::f64), inf);
  EXPECT_EQ(c.bound_ulps(shape(1, inf, 0), Format::f64), inf);
  EXPECT_EQ(Contract{}.bound_ulps(shape(1, 0, 0), Format::f64), inf);
}

TEST(ContractFormula, AsciiAndSkipsZeroTerms) {
  EXPECT_EQ(make(2, 1, 2, 0, 4).formula(), "2 + 1*n + 2*R + 4*M[T!=1]");
  EXPECT_EQ(make(2, 3, 2, 1, 4).formula(), "2 + 3*n + 2*R + 1*M + 4*M[T!=1]");
  EXPECT_EQ(make(0.5, 0, 0, 0, 0).formula(), "0.5");
  EXPECT_EQ(make(5, 1, 1, 0, 6).formula(), "5 + 1*n + 1*R + 6*M[T!=1]");
  EXPECT_EQ(Contract{}.formula(), "none");
}

// The shifts z_i - max z must fit the format too (fuzz_differential found a
// log-softmax whose z_i - max z overflowed to -inf at T = 1.5); a shift that
// rounds to a finite value stays in scope.
TEST(RowFitsFormat, ShiftsMustBeFiniteValues) {
  const double dmax = std::numeric_limits<double>::max();
  const double fmax = std::numeric_limits<float>::max();
  EXPECT_FALSE(row_fits_format(std::vector<double>{dmax / 2, -dmax}, 1.5, Format::f64));
  EXPECT_TRUE(row_fits_format(std::vector<double>{dmax / 4, -dmax / 2}, 1.5, Format::f64));
  EXPECT_TRUE(row_fits_format(std::vector<double>{90.0, -fmax / 2, -INFINITY}, 1.0, Format::f32));
  EXPECT_TRUE(row_fits_format(std::vector<double>{fmax / 2, -fmax / 2}, 1.0, Format::f32));  // exactly fmax
  EXPECT_FALSE(row_fits_format(std::vector<double>{fmax / 2, -fmax * 0.75}, 1.0, Format::f32));
  EXPECT_FALSE(row_fits_format(std::vector<double>{1.0, -fmax}, 0.5, Format::f32));  // z itself overflows
  EXPECT_TRUE(row_fits_format(std::vector<double>{-INFINITY, -INFINITY}, 1.0, Format::f32));
  // A shift of max_finite + half its ulp ties to inf (max's last bit is odd):
  // out; one float ulp below it rounds to max_finite: in.
  EXPECT_FALSE(row_fits_format(std::vector<double>{-0x1p127, 0x1.fffffep126}, 1.0, Format::f32));
  EXPECT_TRUE(row_fits_format(std::vector<double>{-0x1p127, 0x1.fffffcp126}, 1.0, Format::f32));
  EXPECT_FALSE(row_fits_format(std::vector<double>{-0x1p1023, 0x1.fffffffffffffp1022}, 1.0, Format::f64));
  EXPECT_TRUE(row_fits_format(std::vector<double>{-0x1p1023, 0x1.ffffffffffffep1022}, 1.0, Format::f64));
  EXPECT_FALSE(row_fits_format(std::vector<double>{-32768, 32752}, 1.0, Format::f16));  // 65520: the tie
  EXPECT_TRUE(row_fits_format(std::vector<double>{-32768, 32736}, 1.0, Format::f16));   // 65504
}

TEST(RowShape, FiniteRow) {
  const std::vector<double> x = {-2, 0, 0.5, 3};
  const RowShape s = row_shape(x, 1.0, Format::f32);
  EXPECT_EQ(s.n, 4);
  EXPECT_TRUE(s.temperature_is_one);
  EXPECT_NEAR(s.R, 5.0, 1e-13);
  EXPECT_GE(s.R, 5.0);  // inflated, never below the exact range
  EXPECT_NEAR(s.M, 3.0, 1e-13);
  EXPECT_GE(s.M, 3.0);
}

TEST(RowShape, MaskedEntriesCountInNOnly) {
  const std::vector<double> x = {-inf, 4, -inf, -1, -inf};
  const RowShape s = row_shape(x, 1.0, Format::f64);
  EXPECT_EQ(s.n, 5);
  EXPECT_NEAR(s.R, 5.0, 1e-13);
  EXPECT_NEAR(s.M, 4.0, 1e-13);
  const std::vector<double> all_masked(7, -inf);
  const RowShape m = row_shape(all_masked, 1.0, Format::f32);
  EXPECT_EQ(m.n, 7);
  EXPECT_EQ(m.R, 0);
  EXPECT_EQ(m.M, 0);
}

TEST(RowShape, HugeNegativesDoNotContribute) {
  // oneDNN-style "lowest" masks: exp(z_i - z_max) underflows far below
  // denorm_min/2, so they leave R and M alone.
  const std::vector<double> x = {88, 89, static_cast<double>(std::numeric_limits<float>::lowest()),
                                 90, -1e9};
  const RowShape s = row_shape(x, 1.0, Format::f32);
  EXPECT_NEAR(s.R, 2.0, 1e-12);
  EXPECT_NEAR(s.M, 90.0, 1e-12);
}

TEST(RowShape, ContributingCutoffFollowsTheFormat) {
  // L_T = (p - emin) ln2 + ln2: f32 151 ln2 ~ 104.66, f64 1076 ln2 ~ 745.8.
  const double l32 = 151 * ln2, l64 = 1076 * ln2;
  const std::vector<double> x = {0, -(l32 - 0.01), -(l32 + 0.01)};
  const RowShape s32 = row_shape(x, 1.0, Format::f32);
  EXPECT_NEAR(s32.R, l32 - 0.01, 1e-9);
  EXPECT_NEAR(s32.M, l32 - 0.01, 1e-9);
  // In f64 the same entries all contribute.
  const RowShape s64 = row_shape(x, 1.0, Format::f64);
  EXPECT_NEAR(s64.R, l32 + 0.01, 1e-9);
  const std::vector<double> y = {10, 10 - (l64 - 0.5), 10 - (l64 + 0.5)};
  EXPECT_NEAR(row_shape(y, 1.0, Format::f64).R, l64 - 0.5, 1e-9);
  EXPECT_NEAR(row_shape(y, 1.0, Format::f64).M, l64 - 10.5, 1e-9);
}

TEST(RowShape, TemperatureScalesFirst) {
  const std::vector<double> x = {-6, 2, 10};
  const RowShape s = row_shape(x, 2.0, Format::f32);
  EXPECT_FALSE(s.temperature_is_one);
  EXPECT_NEAR(s.R, 8.0, 1e-13);
  EXPECT_NEAR(s.M, 5.0, 1e-13);
  // A small temperature stretches the range past the cut-off: x = [0, -60] at
  // T = 0.5 gives z = [0, -120], beyond f32's 104.7 but not f64's 745.8.
  const std::vector<double> w = {0, -60};
  EXPECT_EQ(row_shape(w, 0.5, Format::f32).R, 0);
  EXPECT_NEAR(row_shape(w, 0.5, Format::f64).R, 120, 1e-12);
  EXPECT_NEAR(row_shape(w, 0.5, Format::f64).M, 120, 1e-12);
  EXPECT_NEAR(row_shape(x, 3.7, Format::f64).R, 16 / 3.7, 1e-13);
}

TEST(RowShape, NegativeMaxUsesAbsoluteValue) {
  const std::vector<double> x = {-1000, -1003};
  const RowShape s = row_shape(x, 1.0, Format::f32);
  EXPECT_NEAR(s.R, 3.0, 1e-9);
  EXPECT_NEAR(s.M, 1003.0, 1e-9);
  EXPECT_GE(s.R, 3.0);  // the 2^-50 M slack on R
}

TEST(RowShape, BoundOfAKernelOnARow) {
  // shifted on [-2, 0, 0.5]: K = 3 + 3 + 2*2.5 = 11 (+ tiny slack).
  const Kernel* k = find_kernel("shifted_f32");
  ASSERT_NE(k, nullptr);
  const std::vector<double> x = {-2, 0, 0.5};
  const double b = k->find(Op::softmax)->contract.bound_ulps(row_shape(x, 1.0, Format::f32),
                                                             Format::f32);
  EXPECT_NEAR(b, 11.0, 1e-5);
  EXPECT_GE(b, 11.0);
  EXPECT_EQ(k->find(Op::log_softmax)->contract.bound_ulps(row_shape(x, 1.0, Format::f32),
                                                          Format::f32),
            inf);
}

// ------------------------------------------------ contracts against the oracle

struct Row {
  std::vector<double> x;
  double temperature = 1;
  std::string family;
};

// A few hundred rows from the families the contracts must survive: normal
// sigma = 1, 10, 100; XNNPACK's U(90, 100) (exp overflows, exp(x - max) does
// not); -inf masks; sorted rows (the online max moves at every step); rows
// whose outputs are f32 / f64 subnormals; sizes 1..2000; T = 1, 0.5, 3.7.
std::vector<Row> contract_rows(std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  const double temperatures[] = {1.0, 0.5, 3.7};
  std::vector<Row> rows;
  for (int r = 0; r < count; ++r) {
    Row row;
    const std::size_t n = 1 + rng() % (r % 4 == 0 ? 2000 : 64);
    row.x.resize(n);
    row.temperature = temperatures[rng() % 3];
    std::normal_distribution<double> normal(0, 1);
    auto uniform = [&](double lo, double hi) {
      return std::uniform_real_distribution<double>(lo, hi)(rng);
    };
    switch (r % 9) {
      case 0: case 1: case 2: {
        const double sigma = r % 9 == 0 ? 1 : r % 9 == 1 ? 10 : 100;
        row.family = "normal(" + std::to_string(static_cast<int>(sigma)) + ")";
        for (double& v : row.x) v = sigma * normal(rng);
        break;
      }
      case 3: row.family = "U(90,100)"; for (double& v : row.x) v = uniform(90, 100); break;
      case 4:
        row.family = "normal(10)+masks";
        for (double& v : row.x) v = rng() % 3 == 0 ? -inf : 10 * normal(rng);
        row.x[rng() % n] = 10 * normal(rng);  // at least one finite entry
        break;
      case 5:
        row.family = "sorted normal(10)";
        for (double& v : row.x) v = 10 * normal(rng);
        std::sort(row.x.begin(), row.x.end());
        break;
      case 6:
        row.family = "f32 subnormal outputs";
        for (double& v : row.x) v = uniform(-110, -80);
        row.x[rng() % n] = 0;
        break;
      case 7:
        row.family = "f64 subnormal outputs";
        for (double& v : row.x) v = uniform(-760, -700);
        row.x[rng() % n] = 0;
        break;
      default:
        row.family = "dominant entry";  // log-softmax of the max ~ -s', tiny
        for (double& v : row.x) v = uniform(-40, -20);
        row.x[rng() % n] = 0;
        break;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::vector<double> in_kernel_format(std::vector<double> x, Format f) {
  if (f == Format::f32)
    for (double& v : x) v = static_cast<double>(static_cast<float>(v));
  return x;
}

std::vector<double> run_kernel(const Kernel& k, Op op, const std::vector<double>& x, double t) {
  return testing::run_outputs(k, op, x, 1, t).front();
}

struct ContractMeasured {
  double max_ratio = 0, max_ulp = 0;
  std::string worst;
  int rows = 0;
};

// Largest measured ULP error / bound_ulps per kernel and declared op: must be <= 1.
TEST(ContractHolds, EveryDeclaredContractOnRandomRows) {
  // Fixed by default; SOFTCHECK_CONTRACT_SEED / SOFTCHECK_CONTRACT_ROWS replay or widen it.
  auto env = [](const char* var, std::uint64_t fallback) {
    const char* v = std::getenv(var);
    return v ? std::stoull(v) : fallback;
  };
  const std::uint64_t seed = env("SOFTCHECK_CONTRACT_SEED", 20240601);
  const int count = static_cast<int>(env("SOFTCHECK_CONTRACT_ROWS", 360));
  std::map<std::string, ContractMeasured> measured;
  const std::vector<Row> rows = contract_rows(seed, count);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    for (Format f : {Format::f32, Format::f64}) {
      const std::vector<double> x = in_kernel_format(row.x, f);
      const oracle::ExactRow exact = oracle::exact_row(x, row.temperature);
      ASSERT_EQ(exact.status, oracle::RowStatus::ok) << "row " << r;
      const RowShape shape = row_shape(x, row.temperature, f);
      for (const Kernel& k : builtin_kernels()) {
        if (k.format != f || !k.available) continue;
        for (const OpDecl& d : k.ops) {
          const auto outputs = testing::run_outputs(k, d.op, x, 1, row.temperature);
          for (std::size_t o = 0; o < outputs.size(); ++o) {
          const Contract& contract = d.contract_of(o);
          if (!contract.declared) continue;
          const Operand& out = spec(d.op).out[o];
          const RowError e = compare_row(outputs[o], oracle::exact_values(exact, out.kind), f, out);
          const double bound = contract.bound_ulps(shape, f);
          const std::string key = k.name + " " + output_label(d.op, o);
          SCOPED_TRACE(key + " on row " + std::to_string(r) + " (" + row.family +
                       ", n=" + std::to_string(x.size()) +
                       ", T=" + short_number(row.temperature) + ", seed " +
                       std::to_string(seed) + ")");
          EXPECT_EQ(e.nonfinite, 0u);
          EXPECT_EQ(e.special_mismatch, 0u);
          EXPECT_LE(e.max_ulp, bound) << "worst index " << e.worst_index;
          ContractMeasured& m = measured[key];
          ++m.rows;
          m.max_ulp = std::max(m.max_ulp, e.max_ulp);
          if (e.max_ulp / bound >= m.max_ratio) {
            m.max_ratio = e.max_ulp / bound;
            m.worst = row.family + ", n=" + std::to_string(x.size()) +
                      ", T=" + short_number(row.temperature);
          }
          }
        }
      }
    }
  }
  // Every declared contract was exercised; the table is for the docs/report.
  // shifted, shifted_log1p (2 ops), lse_alt, online: 5 per format; plus any
  // later f32/f64 kernel that can run here (e.g. the tiled_online twins).
  std::size_t declared = 0;
  for (const Kernel& k : builtin_kernels())
    if (k.available && (k.format == Format::f32 || k.format == Format::f64))
      for (const OpDecl& d : k.ops)
        for (std::size_t o = 0; o < spec(d.op).out.size(); ++o) declared += d.contract_of(o).declared;
  EXPECT_GE(declared, 10u);
  EXPECT_EQ(measured.size(), declared);
  std::printf("seed %llu, %d rows\n", static_cast<unsigned long long>(seed), count);
  std::printf("%-30s %6s %12s %10s  %s\n", "kernel op", "rows", "max ulp", "ulp/bound",
              "worst row");
  for (const auto& [key, m] : measured)
    std::printf("%-30s %6d %12.3f %10.4f  %s\n", key.c_str(), m.rows, m.max_ulp, m.max_ratio,
                m.worst.c_str());
}

// The same check flags the mutants whose mistake is an accuracy loss: the
// contracts are tight enough to be worth gating on.
TEST(ContractHolds, MutantsBreakTheContractsTheyClaim) {
  auto worst_ratio = [](const char* kernel, Op op, const std::vector<double>& x, double t) {
    const Kernel& k = *find_kernel(kernel);
    const oracle::ExactRow exact = oracle::exact_row(in_kernel_format(x, k.format), t);
    const auto y = run_kernel(k, op, in_kernel_format(x, k.format), t);
    const RowError e =
        compare_row(y, oracle::exact_values(exact, spec(op).out[0].kind), k.format, op);
    if (e.nonfinite + e.special_mismatch > 0) return inf;
    return e.max_ulp / k.find(op)->contract.bound_ulps(row_shape(x, t, k.format), k.format);
  };
  std::vector<double> rising(40), eleven(11), dominant = {0, -20, -25, -30, -19};
  for (std::size_t i = 0; i < rising.size(); ++i) rising[i] = 0.75 * static_cast<double>(i);
  for (std::size_t i = 0; i < eleven.size(); ++i) eleven[i] = static_cast<double>(i % 4);
  EXPECT_GT(worst_ratio("mutant_no_max_shift", Op::softmax, {90, 95, 100}, 1.0), 1);
  EXPECT_GT(worst_ratio("mutant_online_wrong_rescale", Op::softmax, rising, 1.0), 1);
  EXPECT_GT(worst_ratio("mutant_skip_tail", Op::softmax, eleven, 1.0), 1);
  EXPECT_GT(worst_ratio("mutant_temperature_multiplied", Op::softmax, eleven, 3.7), 1);
  EXPECT_GT(worst_ratio("mutant_log_of_softmax", Op::log_softmax, dominant, 1.0), 1);
  // ... and their correct originals pass on the same rows.
  EXPECT_LE(worst_ratio("shifted_f32", Op::softmax, {90, 95, 100}, 1.0), 1);
  EXPECT_LE(worst_ratio("online_f32", Op::softmax, rising, 1.0), 1);
  EXPECT_LE(worst_ratio("shifted_f32", Op::softmax, eleven, 3.7), 1);
  EXPECT_LE(worst_ratio("shifted_log1p_f32", Op::log_softmax, dominant, 1.0), 1);
}

}  // namespace
}  // namespace softcheck
