// `softcheck sweep` (cli/src/cmd_sweep.cpp): the patterns it covers, the full
// f16 sweep of the built-in f16 kernels, a bf16 subset, a planted one-pattern
// bug found exactly, repro of the worst row, JSON, and errors; plus the input
// families expressed in f16/bf16 (core/src/input_families.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "softcheck/input_families.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"
#include "sweep.hpp"

namespace softcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

const Kernel& kernel(const char* name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::logic_error(std::string("no kernel ") + name);
  return *k;
}

const SweepResult& result_of(const SweepReport& r, const std::string& kernel, Op op) {
  for (const SweepResult& s : r.results)
    if (s.kernel == kernel && s.op == op) return s;
  throw std::logic_error("no result for " + kernel);
}

TEST(Sweep, CoversEveryFinitePatternOnce) {
  // f16: 2 signs x 31 exponent fields x 1024 significands; bf16: 2 x 255 x 128.
  const auto f16 = finite_patterns(Format::f16);
  const auto bf16 = finite_patterns(Format::bf16);
  EXPECT_EQ(f16.size(), 2u * 31 * 1024);
  EXPECT_EQ(bf16.size(), 2u * 255 * 128);
  EXPECT_TRUE(std::is_sorted(f16.begin(), f16.end()));
  EXPECT_TRUE(std::adjacent_find(f16.begin(), f16.end()) == f16.end());
  for (std::uint16_t p : {0x0000, 0x8000, 0x0001, 0x7BFF, 0xFBFF})
    EXPECT_TRUE(std::binary_search(f16.begin(), f16.end(), static_cast<std::uint16_t>(p))) << p;
  for (std::uint16_t p : {0x7C00, 0xFC00, 0x7E00})  // +-inf, NaN
    EXPECT_FALSE(std::binary_search(f16.begin(), f16.end(), static_cast<std::uint16_t>(p))) << p;
  EXPECT_THROW(finite_patterns(Format::f32), std::invalid_argument);
}

TEST(Sweep, ContextIsExactInBothFormats) {
  EXPECT_EQ(sweep_context().size(), 7u);
  for (double v : sweep_context()) {
    EXPECT_EQ(round_to_format(v, Format::f16), v);
    EXPECT_EQ(round_to_format(v, Format::bf16), v);
  }
}

// The whole f16 sweep of both built-in f16 kernels, computed once.
const SweepReport& f16_sweep() {
  static const SweepReport r = [] {
    SweepOptions opt;
    opt.format = Format::f16;
    return run_sweep({&kernel("f16_shifted_f32acc"), &kernel("f16_shifted_f16acc")}, opt);
  }();
  return r;
}

TEST(Sweep, FullF16Sweep) {
  const SweepReport& r = f16_sweep();
  EXPECT_EQ(r.rows, 2u * 31 * 1024);
  ASSERT_EQ(r.results.size(), 4u);  // 2 kernels x 2 ops
  for (const SweepResult& s : r.results) {
    SCOPED_TRACE(s.kernel + " " + std::string(name(s.op)));
    EXPECT_EQ(s.rows, r.rows);
    EXPECT_EQ(s.elements, 8 * r.rows);
    EXPECT_TRUE(s.worst.present);
  }
  for (Op op : {Op::softmax, Op::log_softmax}) {
    const SweepResult& f32acc = result_of(r, "f16_shifted_f32acc", op);
    const SweepResult& f16acc = result_of(r, "f16_shifted_f16acc", op);
    EXPECT_EQ(f32acc.status(), "held");
    EXPECT_EQ(f32acc.violations, 0u);
    EXPECT_EQ(f32acc.nonfinite + f32acc.special_mismatch, 0u);
    EXPECT_EQ(f32acc.measured, f32acc.elements);
    EXPECT_LE(f32acc.max_ulp, f32acc.max_bound);
    EXPECT_EQ(f16acc.status(), "no_contract");
    EXPECT_EQ(f16acc.violations, 0u);  // never gated
    EXPECT_GT(f16acc.max_ulp, f32acc.max_ulp);
  }
  EXPECT_TRUE(r.all_held());
  std::printf("%s", sweep_table(r).c_str());
}

TEST(Sweep, WorstRowIsReproducedAndIndependentlyMeasured) {
  for (const SweepResult& s : f16_sweep().results) {
    SCOPED_TRACE(s.kernel + " " + std::string(name(s.op)));
    // The repro's single pattern gives the same row, element and error.
    SweepOptions one;
    one.format = Format::f16;
    one.ops = {s.op};
    one.patterns = {s.worst.patterns.at(0)};
    const SweepReport again = run_sweep({&kernel(s.kernel.c_str())}, one);
    ASSERT_EQ(again.results.size(), 1u);
    EXPECT_EQ(again.results[0].max_ulp, s.max_ulp);
    EXPECT_EQ(again.results[0].worst.element, s.worst.element);
    EXPECT_EQ(again.results[0].worst.got, s.worst.got);
    // Measured again from scratch: the row, the oracle, the metric.
    std::vector<double> row = {decode16(s.worst.patterns.at(0), Format::f16)};
    for (double v : sweep_context()) row.push_back(v);
    const oracle::ExactRow exact = oracle::exact_row(row);
    const auto& ref = s.op == Op::softmax ? exact.softmax : exact.log_softmax;
    const ElementError e = compare_element(s.worst.got, ref[s.worst.element], Format::f16);
    EXPECT_EQ(e.ulp, s.worst.ulp);
    EXPECT_NE(s.worst.repro.find("--value 0x"), std::string::npos);
  }
}

TEST(Sweep, Bf16SubsetHolds) {
  SweepOptions opt;
  opt.format = Format::bf16;
  const auto all = finite_patterns(Format::bf16);
  for (std::size_t i = 0; i < all.size(); i += 61) opt.patterns.push_back(all[i]);
  const SweepReport r = run_sweep({&kernel("bf16_shifted_f32acc")}, opt);
  ASSERT_EQ(r.results.size(), 2u);
  for (const SweepResult& s : r.results) {
    EXPECT_EQ(s.rows, opt.patterns.size());
    EXPECT_EQ(s.status(), "held") << name(s.op);
    EXPECT_EQ(s.nonfinite, 0u);
  }
}

// f16_shifted_f32acc, except that the row whose first entry is `needle` gets
// its first output moved up by 4 ulps (a planted bug at one input value).
Kernel planted_bug(std::uint16_t needle) {
  Kernel k = kernel("f16_shifted_f32acc");
  k.name = "test_planted_bug";
  k.compute = single_operand([inner = k, needle](Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols,
                                   double t) {
    inner.run(op, xv, yv, rows, cols, t);
    const auto* x = static_cast<const std::uint16_t*>(xv);
    auto* y = static_cast<std::uint16_t*>(yv);
    for (std::int64_t r = 0; r < rows; ++r)
      if (x[r * cols] == needle && op == Op::softmax) y[r * cols] = static_cast<std::uint16_t>(y[r * cols] + 4);
  });
  return k;
}

TEST(Sweep, FindsABugAtOneInputValue) {
  const std::uint16_t needle = encode16(1.5, Format::f16);  // x = 1.5: softmax ~0.25, not a binade edge
  const Kernel bug = planted_bug(needle);
  SweepOptions opt;
  opt.format = Format::f16;
  opt.ops = {Op::softmax};
  const SweepReport r = run_sweep({&bug}, opt);
  ASSERT_EQ(r.results.size(), 1u);
  const SweepResult& s = r.results[0];
  EXPECT_EQ(s.status(), "violated");
  EXPECT_EQ(s.violations, 1u);
  EXPECT_EQ(s.worst.patterns, std::vector<std::uint16_t>{needle});
  EXPECT_EQ(s.worst.element, 0u);
  EXPECT_GT(s.worst.ulp, 3.0);
  EXPECT_FALSE(r.all_held());
}

TEST(Sweep, JsonCarriesTheResults) {
  const SweepReport& r = f16_sweep();
  const nlohmann::json j = nlohmann::json::parse(sweep_json(r));
  EXPECT_EQ(j["format"], "f16");
  EXPECT_EQ(j["rows"], r.rows);
  EXPECT_EQ(j["row"]["context"].size(), 7u);
  EXPECT_GT(j["oracle"]["us_per_row"].get<double>(), 0);
  ASSERT_EQ(j["kernels"].size(), r.results.size());
  EXPECT_EQ(j["kernels"][0]["kernel"], r.results[0].kernel);
  EXPECT_EQ(j["kernels"][0]["max_ulp"].get<double>(), r.results[0].max_ulp);
  EXPECT_TRUE(j["kernels"][0]["worst"]["repro"].get<std::string>().starts_with("softcheck sweep"));
}

TEST(Sweep, RejectsWhatItCannotSweep) {
  SweepOptions opt;
  opt.format = Format::f16;
  EXPECT_THROW(run_sweep({&kernel("bf16_shifted_f32acc")}, opt), std::invalid_argument);  // other format
  EXPECT_THROW(run_sweep({&kernel("shifted_f32")}, opt), std::invalid_argument);
  opt.format = Format::f32;
  EXPECT_THROW(run_sweep({&kernel("shifted_f32")}, opt), std::invalid_argument);
  opt.format = Format::f16;
  opt.patterns = {0x7C00};  // +inf
  EXPECT_THROW(run_sweep({&kernel("f16_shifted_f32acc")}, opt), std::invalid_argument);
  Kernel softmax_only = kernel("f16_shifted_f32acc");
  softmax_only.ops.resize(1);
  opt.patterns = {0x3C00};
  opt.ops = {Op::log_softmax};
  EXPECT_THROW(run_sweep({&softmax_only}, opt), std::invalid_argument);
}

// ------------------------------------------------ families in f16 and bf16

TEST(LowPrecisionFamilies, MasksLowestAndXnnpackRangePerFormat) {
  const InputFamily* masks = find_input_family("mask_neg_1e9");
  const InputFamily* benchdnn = find_input_family("benchdnn");
  const InputFamily* xnn16 = find_input_family("xnnpack_f16_u15_20");
  ASSERT_TRUE(masks && benchdnn && xnn16);
  // -1e9 overflows f16 (past -65520) to -inf; in bf16 it is -998244352
  // (1e9 / 2^22 = 238.4 -> 238 * 2^22).
  const auto m16 = fill_rows(*masks, Format::f16, 8, 64, 1);
  EXPECT_GT(std::count(m16.begin(), m16.end(), -inf), 0);
  EXPECT_TRUE(std::all_of(m16.begin(), m16.end(), [](double v) { return v == -inf || std::fabs(v) < 100; }));
  const auto m_bf16 = fill_rows(*masks, Format::bf16, 8, 64, 1);
  EXPECT_GT(std::count(m_bf16.begin(), m_bf16.end(), -998244352.0), 0);
  EXPECT_EQ(std::count(m_bf16.begin(), m_bf16.end(), -inf), 0);
  // benchdnn's "lowest" is the format's: -65504 in f16, -(2 - 2^-7) 2^127 in bf16.
  const auto b16 = fill_rows(*benchdnn, Format::f16, 2, 128, 1);
  EXPECT_GT(std::count(b16.begin(), b16.end(), -65504.0), 0);
  const auto b_bf16 = fill_rows(*benchdnn, Format::bf16, 2, 128, 1);
  EXPECT_GT(std::count(b_bf16.begin(), b_bf16.end(), -std::ldexp(2 - 0x1p-7, 127)), 0);
  // XNNPACK's f16 range, exact f16 values.
  const auto x16 = fill_rows(*xnn16, Format::f16, 4, 256, 1);
  for (double v : x16) {
    EXPECT_GE(v, 15.0);
    EXPECT_LE(v, 20.0);
    EXPECT_EQ(round_to_format(v, Format::f16), v);
  }
}

}  // namespace
}  // namespace softcheck
