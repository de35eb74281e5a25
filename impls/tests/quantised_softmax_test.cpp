// softmax_pe4m3_f32 (impls/src/quantised_softmax.cpp, docs/low-precision.md):
// its registration; P is shifted_log1p_f32's softmax rounded once to E4M3,
// every output an E4M3 value and the order of the row kept; its contract,
// in E4M3 ULPs, held on every input family while the truncating cast is
// caught; and the mass a row loses without renormalisation, measured on
// sink rows against what the rounding predicts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "softcheck/input_families.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck {
namespace {

const Kernel& quantised(const std::string& kernel_name) {
  for (const Kernel& k : quantised_kernels())
    if (k.name == kernel_name) return k;
  throw std::logic_error("no quantised kernel " + kernel_name);
}

// Runs an f32 kernel's softmax on `rows` rows of x (exact f32 values).
std::vector<double> softmax_f32(const Kernel& k, const std::vector<double>& x, std::int64_t rows, double t) {
  std::vector<float> xf(x.begin(), x.end()), yf(x.size());
  k.run(Op::softmax, xf.data(), yf.data(), rows, static_cast<std::int64_t>(x.size()) / rows, t);
  return {yf.begin(), yf.end()};
}

bool same_bits(double a, double b) { return a == b && std::signbit(a) == std::signbit(b); }

TEST(QuantisedSoftmax, RegisteredAsAnF32KernelWithE4m3Outputs) {
  const Kernel& k = quantised("softmax_pe4m3_f32");
  EXPECT_EQ(k.format, Format::f32);
  EXPECT_EQ(k.output_format(), Format::e4m3);
  EXPECT_EQ(k.format_label(), "f32->e4m3");
  EXPECT_FALSE(k.test_only);
  EXPECT_EQ(k.masked_policy, MaskedRowPolicy::zeros);
  EXPECT_EQ(find_kernel("softmax_pe4m3_f32"), &k);
  EXPECT_TRUE(quantised("mutant_pe4m3_truncated_f32").test_only);
  // The storage-format paths (builtin_kernels: properties, sweep, fuzzers) hold none.
  for (const Kernel& b : builtin_kernels()) EXPECT_FALSE(b.quantised_outputs.has_value()) << b.name;
  // Its contract is shifted_log1p_f32's softmax contract rounded once to E4M3:
  // 0.5 + 1.5 K32 u32/u_e4m3, u32/u_e4m3 = 2^-20.
  const OpDecl* d = k.find(Op::softmax);
  const OpDecl* f32 = find_kernel("shifted_log1p_f32")->find(Op::softmax);
  ASSERT_TRUE(d && f32 && d->contract.declared);
  EXPECT_EQ(d->contract.a, 0.5 + 1.5 * 0x1p-20 * f32->contract.a);
  EXPECT_EQ(d->contract.b, 1.5 * 0x1p-20 * f32->contract.b);
  EXPECT_EQ(d->contract.c, 1.5 * 0x1p-20 * f32->contract.c);
  EXPECT_EQ(d->contract.d, 1.5 * 0x1p-20 * f32->contract.d);
  EXPECT_EQ(d->contract.t, 1.5 * 0x1p-20 * f32->contract.t);
  EXPECT_EQ(k.ops.size(), 1u);  // softmax only: a log-probability is not cast to FP8 before P.V
  // The pre-scaled kernel: results in E4M3 / 2^8, the same derivation there.
  const Kernel& x256 = quantised("softmax_pe4m3_x256_f32");
  EXPECT_EQ(x256.output_format(), Format::e4m3_div256);
  EXPECT_EQ(x256.format_label(), "f32->e4m3_div256");
  EXPECT_EQ(x256.find(Op::softmax)->contract.a, 0.5 + 1.5 * 0x1p-20 * f32->contract.a);
}

// Every input family, lengths 1 to 1000, T = 1 and 0.7.
struct FamilyRows {
  std::string where;
  std::vector<double> x;
  std::int64_t rows;
  double t;
};
std::vector<FamilyRows> family_rows() {
  std::vector<FamilyRows> all;
  std::uint64_t seed = 7;
  for (const InputFamily& fam : input_families())
    for (std::int64_t n : {1, 2, 7, 100, 1000}) {
      if (fam.fixed_cols > 0 && fam.fixed_cols != n) continue;
      for (double t : {1.0, 0.7}) {
        const std::int64_t rows = n >= 1000 ? 4 : 16;
        all.push_back({fam.name + ", n=" + std::to_string(n) + ", T=" + std::to_string(t).substr(0, 3),
                       fill_rows(fam, Format::f32, rows, n, ++seed), rows, t});
      }
    }
  return all;
}

TEST(QuantisedSoftmax, IsTheF32CoreRoundedOnceToE4m3AndKeepsTheOrder) {
  const Kernel& k = quantised("softmax_pe4m3_f32");
  const Kernel& x256 = quantised("softmax_pe4m3_x256_f32");
  const Kernel& f32 = *find_kernel("shifted_log1p_f32");
  std::size_t outputs = 0;
  for (const FamilyRows& r : family_rows()) {
    SCOPED_TRACE(r.where);
    const std::vector<double> y = softmax_f32(k, r.x, r.rows, r.t), y32 = softmax_f32(f32, r.x, r.rows, r.t);
    // FlashAttention-4's steps (times 2^8, cast, divided back) are one
    // rounding to E4M3 / 2^8.
    const std::vector<double> y256 = softmax_f32(x256, r.x, r.rows, r.t);
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (!std::isnan(y32[i])) {
        ASSERT_TRUE(same_bits(y256[i], round_to_format(y32[i], Format::e4m3_div256))) << i << ": " << y256[i];
      }
    }
    const std::size_t n = r.x.size() / static_cast<std::size_t>(r.rows);
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(y32[i])) {  // a +inf entry of an overflow family: NaN either way
        EXPECT_TRUE(std::isnan(y[i]));
        continue;
      }
      ASSERT_TRUE(same_bits(y[i], round_to_format(y32[i], Format::e4m3))) << i << ": " << y[i] << " from " << y32[i];
      ++outputs;
    }
    // Rounding is monotone: x_i <= x_j gives p_i <= p_j (ties may merge).
    for (std::size_t b = 0; b < y.size(); b += n)
      for (std::size_t i = b; i < b + n; ++i)
        for (std::size_t j = b; j < b + n && n <= 100; ++j) {
          if (r.x[i] <= r.x[j] && !std::isnan(y[i]) && !std::isnan(y[j])) {
            ASSERT_LE(y[i], y[j]) << i << " " << j;
          }
        }
  }
  EXPECT_GT(outputs, 100000u);
}

TEST(QuantisedSoftmax, HoldsItsContractInE4m3UlpsAndTheTruncatingCastIsCaught) {
  const Kernel& k = quantised("softmax_pe4m3_f32");
  const Kernel& x256 = quantised("softmax_pe4m3_x256_f32");
  const Kernel& mutant = quantised("mutant_pe4m3_truncated_f32");
  double max_ulp = 0, max_ratio = 0, mutant_max = 0, x256_max = 0;
  std::size_t rows = 0, mutant_violations = 0;
  std::string worst;
  for (const FamilyRows& r : family_rows()) {
    const std::vector<double> y = softmax_f32(k, r.x, r.rows, r.t), ym = softmax_f32(mutant, r.x, r.rows, r.t);
    const std::vector<double> y256 = softmax_f32(x256, r.x, r.rows, r.t);
    const std::size_t n = r.x.size() / static_cast<std::size_t>(r.rows);
    oracle::RowJudge judge(Format::e4m3), judge256(Format::e4m3_div256);
    for (std::int64_t row = 0; row < r.rows; ++row) {
      const std::size_t at = static_cast<std::size_t>(row) * n;
      judge.set_row({r.x.data() + at, n}, r.t);
      const oracle::RowVerdict v = judge.judge(*k.find(Op::softmax), k.masked_policy, {y.data() + at, n});
      if (v.status != oracle::RowStatus::ok) continue;  // NaN/+inf entries, fully masked rows
      ++rows;
      EXPECT_TRUE(v.within) << r.where << " row " << row << ": " << v.error.max_ulp << " ulp, bound " << v.bound;
      if (v.error.max_ulp > max_ulp) {
        max_ulp = v.error.max_ulp;
        worst = r.where;
      }
      max_ratio = std::max(max_ratio, v.error.max_ulp / v.bound);
      const oracle::RowVerdict vm = judge.judge(*mutant.find(Op::softmax), mutant.masked_policy, {ym.data() + at, n});
      mutant_max = std::max(mutant_max, vm.error.max_ulp);
      mutant_violations += vm.within ? 0 : 1;
      judge256.set_row({r.x.data() + at, n}, r.t);
      const oracle::RowVerdict v256 = judge256.judge(*x256.find(Op::softmax), x256.masked_policy, {y256.data() + at, n});
      EXPECT_TRUE(v256.within) << r.where << " row " << row << ": " << v256.error.max_ulp << " ulp of E4M3 / 2^8";
      x256_max = std::max(x256_max, v256.error.max_ulp);
    }
  }
  std::printf("softmax_pe4m3_f32 on %zu family rows: max %.4f E4M3 ulp (ratio to the bound %.4f, worst %s); "
              "the truncating cast: max %.4f ulp, %zu rows violated; softmax_pe4m3_x256_f32: max %.4f ulp of "
              "E4M3 / 2^8\n",
              rows, max_ulp, max_ratio, worst.c_str(), mutant_max, mutant_violations, x256_max);
  EXPECT_LE(x256_max, 0.5 + 1e-3);
  EXPECT_GT(rows, 1000u);
  EXPECT_GT(max_ulp, 0.45);  // the floor is 0.5: the families reach it
  EXPECT_LE(max_ulp, 0.5 + 1e-3);
  EXPECT_GT(mutant_violations, 100u);
  EXPECT_GT(mutant_max, 0.9);
}

// A sink s above n - 1 keys at 0: p_key = 1 / (e^s + n - 1). Below half of
// E4M3's smallest subnormal (2^-10) every key rounds to 0 and the row loses
// (n - 1) p_key of its mass, each key's error still within its 0.5 ulp
// (of 2^-9): the contract holds and the mass is gone. With the sink 4
// above, p_key >= 2^-10 up to n = 970, and the keys keep a rounded share;
// at n = 1000 they all round to 0: 95 % of the mass is gone.
TEST(QuantisedSoftmax, LosesTheMassOfTheKeysThatRoundToZero) {
  const Kernel& k = quantised("softmax_pe4m3_f32");
  const Kernel& x256 = quantised("softmax_pe4m3_x256_f32");
  std::printf("%6s %6s %12s %12s %12s %14s\n", "n", "sink", "p_key", "sum P - 1", "keys' mass", "x256: sum - 1");
  for (std::int64_t n : {128, 1000, 4096})
    for (double s : {4.0, 8.0, 12.0}) {
      std::vector<double> x(static_cast<std::size_t>(n), 0.0);
      x[0] = s;
      const std::vector<double> y = softmax_f32(k, x, 1, 1.0);
      double sum = 0;
      for (double p : y) sum += p;  // exact: at most 4096 E4M3 values <= 1
      const double p_key = 1 / (std::exp(s) + static_cast<double>(n - 1)), keys = static_cast<double>(n - 1) * p_key;
      const std::vector<double> y256 = softmax_f32(x256, x, 1, 1.0);
      double sum256 = 0;
      for (double p : y256) sum256 += p;
      std::printf("%6lld %6.0f %12.4g %12.4g %12.4g %14.4g\n", static_cast<long long>(n), s, p_key, sum - 1, keys,
                  sum256 - 1);
      // The pre-scale keeps every key above 2^-18 (all of these): its row
      // moves by the keys' roundings, at most (n - 1) times half their ULP
      // (2^-17 below 2^-14), and the sink's half ULP.
      if (p_key > 0x1p-18) {
        EXPECT_GT(y256[1], 0.0) << n << " " << s;
        EXPECT_LE(std::fabs(sum256 - 1), static_cast<double>(n - 1) * std::max(0x1p-18, p_key / 16) + 0x1p-5)
            << n << " " << s;
      }
      oracle::RowJudge judge(x, 1.0, Format::e4m3);
      EXPECT_TRUE(judge.judge(*k.find(Op::softmax), k.masked_policy, y).within) << n << " " << s;
      if (p_key < 0x1p-10 * (1 - 1e-6)) {
        for (std::size_t i = 1; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0) << n << " " << s;
        // What is left is the sink's own P, rounded to E4M3: the loss is the
        // keys' mass, within the sink's half ulp (2^-5 below 1; its rounding
        // up to 1 hides a loss under 2^-5, as at n = 128 with the sink 12 above).
        EXPECT_NEAR(sum - 1, -keys, 0x1p-5) << n << " " << s;
      }
    }
}

// The MX-input kernels (mx_input_softmax.cpp), one per element format: on
// rows of MX blocks (mx_row, masks kept) each is shifted_log1p_f32 bit for
// bit, both ops, every input family; the mutant decoding the scale with
// bias 128 is not; each is registered with its MX inputs, f32 storage, and
// no quantised outputs.
TEST(MxInputSoftmax, IsShiftedLog1pOnRowsOfMxBlocks) {
  const Kernel& low = quantised("mutant_mxfp8_scale_low_f32");
  const Kernel* f32 = find_kernel("shifted_log1p_f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_TRUE(low.test_only);
  ASSERT_TRUE(low.mx_inputs.has_value());
  EXPECT_EQ(low.mx_inputs->name, "e4m3");
  for (const MiniFloat& element : mini_formats) {
    const std::string format = mx_format_name(element);
    const Kernel& mx = quantised("softmax_" + format + "_f32");
    ASSERT_TRUE(mx.mx_inputs.has_value());
    EXPECT_EQ(mx.mx_inputs->name, element.name);
    EXPECT_EQ(mx.format, Format::f32);
    EXPECT_FALSE(mx.quantised_outputs.has_value());
    EXPECT_EQ(mx.format_label(), format + "->f32");
    EXPECT_FALSE(mx.test_only);
    std::size_t rows_seen = 0, low_differs = 0, not_f32 = 0;
    for (const InputFamily& fam : input_families()) {
      const std::int64_t n = fam.fixed_cols > 0 ? fam.fixed_cols : 77;
      const std::vector<double> f32_row = fill_rows(fam, Format::f32, 1, n, 5);
      const std::vector<double> x = mx_row(f32_row, element);
      for (double v : x) ASSERT_TRUE(v == -INFINITY || static_cast<double>(static_cast<float>(v)) == v) << fam.name;
      for (std::size_t j = 0; j < x.size(); ++j) not_f32 += x[j] != f32_row[j] ? 1 : 0;
      for (Op op : {Op::softmax, Op::log_softmax}) {
        std::vector<float> xf(x.begin(), x.end()), want(x.size()), got(x.size()), bad(x.size());
        f32->run(op, xf.data(), want.data(), 1, n, 1.5);
        mx.run(op, xf.data(), got.data(), 1, n, 1.5);
        for (std::size_t j = 0; j < x.size(); ++j)
          ASSERT_TRUE(same_bits(got[j], want[j]) || (std::isnan(got[j]) && std::isnan(want[j])))
              << format << " " << fam.name << " " << name(op) << " " << j;
        if (element.name == fp8_e4m3.name) {
          low.run(op, xf.data(), bad.data(), 1, n, 1.5);
          bool differs = false;
          for (std::size_t j = 0; j < x.size(); ++j) differs = differs || !same_bits(bad[j], want[j]);
          low_differs += differs ? 1 : 0;
        }
        ++rows_seen;
      }
    }
    EXPECT_GT(rows_seen, 10u) << format;
    EXPECT_GT(not_f32, rows_seen) << format << ": the MX rows should differ from the f32 rows they came from";
    if (element.name == fp8_e4m3.name) {
      EXPECT_GT(low_differs, rows_seen / 2);
    }
  }
}

// mx_row: each block of 32 converted as mx_quantize / mx_dequantize do,
// -inf masks kept (standing as 0 in their block, outside its maximum), and
// a converted row converts to itself.
TEST(MxInputSoftmax, MxRowKeepsMasksAndIsItsOwnConversion) {
  std::vector<double> x(40);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(1.0 + 0.37 * static_cast<double>(i), -3);
  x[3] = -INFINITY;
  x[35] = -INFINITY;
  const std::vector<double> y = mx_row(x, fp8_e4m3);
  for (std::size_t start : {std::size_t{0}, std::size_t{32}}) {
    std::vector<double> block(x.begin() + static_cast<std::ptrdiff_t>(start),
                              x.begin() + static_cast<std::ptrdiff_t>(std::min(start + 32, x.size())));
    for (double& v : block)
      if (v == -INFINITY) v = 0;
    const std::vector<double> want = mx_dequantize(mx_quantize(block, fp8_e4m3), fp8_e4m3);
    for (std::size_t i = 0; i < block.size(); ++i)
      if (x[start + i] == -INFINITY)
        EXPECT_EQ(y[start + i], -INFINITY) << start + i;
      else
        EXPECT_EQ(y[start + i], want[i]) << start + i;
  }
  EXPECT_EQ(mx_row(y, fp8_e4m3), y);
  EXPECT_NE(y, x);  // 0.37 steps are not all E4M3 values
}

}  // namespace
}  // namespace softcheck
