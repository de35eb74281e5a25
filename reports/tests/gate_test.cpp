// The regression gate's checks, diff table and JUnit output.
#include "softcheck/gate.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sample.hpp"

namespace gate = softcheck::gate;
using softcheck::Report;

namespace {

// The failed checks, as "kernel op name".
std::vector<std::string> failures(const gate::Result& r) {
  std::vector<std::string> f;
  for (const gate::Check& c : r.checks)
    if (c.outcome == gate::Outcome::fail) f.push_back(c.kernel + " " + c.op + " " + c.name);
  return f;
}

const gate::Check* find_check(const gate::Result& r, const std::string& kernel, const std::string& name) {
  for (const gate::Check& c : r.checks)
    if (c.kernel == kernel && c.name == name) return &c;
  return nullptr;
}

}  // namespace

TEST(Gate, SameReportPasses) {
  const Report r = softcheck::testing::sample();
  const gate::Result res = gate::compare(r, r, {});
  EXPECT_TRUE(res.passed()) << gate::diff_table(res);
  EXPECT_TRUE(res.notes.empty());
  EXPECT_NE(gate::diff_table(res).find("gate: passed"), std::string::npos);
}

// The sample report with a sparsemax kernel that has 2 false zeros.
Report with_sparse_kernel() {
  Report r = softcheck::testing::sample();
  softcheck::KernelSummary s = r.kernels[0];
  s.kernel = "sparsemax_f32";
  s.op = "sparsemax";
  s.false_zeros = 2;
  r.kernels.push_back(s);
  return r;
}

TEST(Gate, AcceptsSparseKernels) {
  const Report r = with_sparse_kernel();
  const gate::Result res = gate::compare(r, r, {});
  EXPECT_TRUE(res.passed()) << gate::diff_table(res);
}

TEST(Gate, MoreSupportMismatchesFail) {
  const Report base = with_sparse_kernel();
  Report now = base;
  now.kernels.back().false_nonzeros = 1;  // one entry newly off the exact support
  const gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"sparsemax_f32 sparsemax support"}));
  EXPECT_NE(find_check(res, "sparsemax_f32", "support")->message.find("2 false zeros, 1 false non-zeros"),
            std::string::npos);
  now.kernels.back().false_nonzeros = 0;
  now.kernels.back().false_zeros = 1;  // fewer: passes
  EXPECT_TRUE(gate::compare(base, now, {}).passed());
  // Softmax ops have no support check.
  EXPECT_EQ(find_check(res, "shifted_f32", "support"), nullptr);
}

TEST(Gate, NewNaNFails) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[0].nonfinite = 3;
  EXPECT_EQ(failures(gate::compare(base, now, {})), (std::vector<std::string>{"shifted_f32 softmax nonfinite"}));
  // naive had NaN/inf in the baseline already: not new.
  now = base;
  now.kernels[2].nonfinite = 50;
  EXPECT_TRUE(gate::compare(base, now, {}).passed());
}

TEST(Gate, ContractViolationFails) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[1].status = "violated";
  now.kernels[1].contract_violations = 2;
  const gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"shifted_f64 softmax contract"}));
  EXPECT_NE(find_check(res, "shifted_f64", "contract")->message.find("2 rows over the bound"), std::string::npos);
}

TEST(Gate, MarginIsRelativePlusSlack) {
  const Report base = softcheck::testing::sample();  // shifted_f32: 3.25 ULP
  Report now = base;
  now.kernels[0].max_ulp = 3.25 * 1.1 + 0.5;  // exactly the allowance
  EXPECT_TRUE(gate::compare(base, now, {}).passed());
  now.kernels[0].max_ulp = 4.5;
  const gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"shifted_f32 softmax margin"}));
  EXPECT_NE(find_check(res, "shifted_f32", "margin")->message.find("max ULP 3.25 -> 4.5"), std::string::npos);
  gate::Options loose;
  loose.margin = 0.5;
  EXPECT_TRUE(gate::compare(base, now, loose).passed());
}

TEST(Gate, PropertyThatHeldAndNowFails) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[3].properties[0].verdict = "failed";
  now.kernels[3].properties[0].detail = "measured 9 > allowed 4";
  now.kernels[3].status = "held";
  const gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"online_f32 softmax property:shift_invariance"}));
  // Failing in the baseline too: not a regression.
  EXPECT_TRUE(gate::compare(now, now, {}).passed());
}

TEST(Gate, MissingKernelFails) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels.erase(now.kernels.begin() + 1);
  EXPECT_EQ(failures(gate::compare(base, now, {})), (std::vector<std::string>{"shifted_f64 softmax present"}));
  // A kernel new in the report is compared with nothing but its contract.
  EXPECT_TRUE(gate::compare(now, base, {}).passed());
}

// Each output of an op with several is its own gate entry: a violated lse
// fails "softmax_lse:lse" and nothing else, and a missing one is named.
TEST(Gate, OutputsOfAnOpWithSeveralAreSeparateEntries) {
  const Report base = softcheck::testing::sample_with_two_outputs();
  EXPECT_TRUE(gate::compare(base, base, {}).passed());
  Report now = base;
  now.kernels.back().status = "violated";
  now.kernels.back().contract_violations = 1;
  EXPECT_EQ(failures(gate::compare(base, now, {})),
            (std::vector<std::string>{"online_f32 softmax_lse:lse contract"}));
  now = base;
  now.kernels.pop_back();
  EXPECT_EQ(failures(gate::compare(base, now, {})),
            (std::vector<std::string>{"online_f32 softmax_lse:lse present"}));
}

// The floor of an entry without a contract: violations fail "floor", an
// opt-out skips it with its reason, and contract entries have no floor check.
TEST(Gate, FloorCheckOfKernelsWithoutAContract) {
  Report r = softcheck::testing::sample();
  softcheck::KernelSummary s = r.kernels[0];
  s.kernel = "nc_f32";
  s.contract_declared = false;
  s.status = "violated";
  s.floor_checked = true;
  s.floor_violations = 2;
  r.kernels.push_back(s);
  const gate::Result res = gate::compare(r, r, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"nc_f32 softmax floor"}));
  EXPECT_EQ(find_check(res, r.kernels[0].kernel, "floor"), nullptr);
  r.kernels.back().floor_violations = 0;
  r.kernels.back().floor_opt_out = "by design";
  r.kernels.back().status = "no_contract";
  const gate::Result opted = gate::compare(r, r, {});
  EXPECT_TRUE(opted.passed());
  ASSERT_NE(find_check(opted, "nc_f32", "floor"), nullptr);
  EXPECT_EQ(find_check(opted, "nc_f32", "floor")->outcome, gate::Outcome::skip);
  // A kernel without a contract that failed (crashed, returned non-zero:
  // its rows count as contract violations) fails the contract check.
  r.kernels.back().floor_opt_out.clear();
  r.kernels.back().status = "violated";
  r.kernels.back().contract_violations = 16;
  r.kernels.back().worst.exact = "kernel failed: plugin kernel 'nc_f32' (softmax): run returned 7";
  EXPECT_EQ(failures(gate::compare(r, r, {})), (std::vector<std::string>{"nc_f32 softmax contract"}));
}

TEST(Gate, ReferenceRule) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[3].max_ulp = 3.25 * 1.1 + 0.5;  // online_f32 within the margin of its baseline (4)
  gate::Options opt;
  opt.reference_rules = {gate::parse_reference_rule("shifted_f32:1")};
  // online_f32 (f32 softmax) 4.075 > 1 x 3.25 + 0.5; naive_f32 has no contract; shifted_f64 is f64.
  EXPECT_EQ(failures(gate::compare(base, now, opt)), (std::vector<std::string>{"online_f32 softmax reference:shifted_f32"}));
  opt.reference_rules = {gate::parse_reference_rule("shifted_f32:2")};
  EXPECT_TRUE(gate::compare(base, now, opt).passed());
  opt.reference_rules = {gate::parse_reference_rule("nosuch_f32:2")};
  EXPECT_THROW(gate::compare(base, now, opt), std::invalid_argument);
}

TEST(Gate, ParseReferenceRule) {
  const gate::ReferenceRule r = gate::parse_reference_rule("shifted_f32:2.5");
  EXPECT_EQ(r.kernel, "shifted_f32");
  EXPECT_EQ(r.k, 2.5);
  for (const char* bad : {"shifted_f32", ":2", "shifted_f32:", "shifted_f32:x", "shifted_f32:0.5", "a:2x", "a:inf"})
    EXPECT_THROW(gate::parse_reference_rule(bad), std::invalid_argument) << bad;
}

TEST(Gate, DifferentSettingsAreNoted) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.seed = 8;
  const gate::Result res = gate::compare(base, now, {});
  ASSERT_EQ(res.notes.size(), 1u);
  EXPECT_NE(res.notes[0].find("seed 7 vs 8"), std::string::npos);
}

// Rows whose bound is infinite are never checked: the gate passes the
// contract and says how many rows that verdict leaves out.
TEST(Gate, UncheckedRowsAreNoted) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[0].unbounded_rows = 3;
  const gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(res.count(gate::Outcome::fail), 0u);
  ASSERT_EQ(res.notes.size(), 1u);
  EXPECT_NE(res.notes[0].find(now.kernels[0].kernel), std::string::npos) << res.notes[0];
  EXPECT_NE(res.notes[0].find(fmt::format("3 of {} rows unchecked", now.kernels[0].rows)), std::string::npos)
      << res.notes[0];
}

TEST(Gate, JUnit) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[0].max_ulp = 100;
  const gate::Result res = gate::compare(base, now, {});
  const std::string xml = gate::junit_xml(res);
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 0), 0u);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"softcheck.gate.shifted_f32.softmax\" name=\"margin\">\n      <failure "
                     "message=\"max ULP 3.25 -&gt; 100"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"softcheck.gate.shifted_f64.softmax\" name=\"margin\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message="), std::string::npos);  // naive has no contract
  EXPECT_EQ(xml, gate::junit_xml(gate::compare(base, now, {})));  // deterministic: no times
}

// Per (family, row length) cell (docs/gate.md): a regression in one cell
// fails that cell and names the measure; growth within slack_ratio of the
// bound passes; a cell that became one-sided fails the bias part.
TEST(Gate, CellsCatchWhatTheMaximumHides) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  softcheck::CellSummary& cell = now.kernels[0].cells[0];  // shifted_f32, normal_s10, n = 8
  cell.max_ratio = 0.3;  // 0.1 -> 0.3 of the bound: beyond 0.1 x 1.1 + 0.1
  gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"shifted_f32 softmax cell:normal_s10/8"}));
  const gate::Check* c = find_check(res, "shifted_f32", "cell:normal_s10/8");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->message.find("error/bound 0.1 -> 0.3"), std::string::npos) << c->message;
  EXPECT_EQ(c->repro,
            "softcheck run --impl shifted_f32 --suite quick --family normal_s10 --size 8 --temperature 1 "
            "--temperature 0.7 --seed 7");
  EXPECT_NE(gate::junit_xml(res).find("&#10;repro: softcheck run --impl shifted_f32"), std::string::npos);
  // The overall maximum did not move: the margin check passed.
  EXPECT_EQ(find_check(res, "shifted_f32", "margin")->outcome, gate::Outcome::pass);

  // Max ULP growth of 2x on a cell far below its bound (32.5 ULP): within
  // 10 % of the bound, a reordered sum's noise, passes.
  now = base;
  now.kernels[0].cells[1].max_ulp = 2 * base.kernels[0].cells[1].max_ulp;
  EXPECT_TRUE(gate::compare(base, now, {}).passed());
  gate::Options strict;
  strict.slack_ratio = 0;
  EXPECT_EQ(failures(gate::compare(base, now, strict)),
            (std::vector<std::string>{"shifted_f32 softmax cell:normal_s10/128"}));

  // New NaN/inf in a cell.
  now = base;
  now.kernels[0].cells[1].nonfinite = 1;
  EXPECT_EQ(failures(gate::compare(base, now, {})),
            (std::vector<std::string>{"shifted_f32 softmax cell:normal_s10/128"}));

  // Bias: every row of a cell above (z = sqrt(40) = 6.3 >= 5, baseline 0).
  Report biased_base = base, biased = base;
  for (Report* r : {&biased_base, &biased}) {
    r->kernels[0].cells[0].rows = 40;
    r->kernels[0].rows = 46;
  }
  biased_base.kernels[0].cells[0].rows_above = 20;
  biased_base.kernels[0].cells[0].rows_below = 20;
  biased.kernels[0].cells[0].rows_above = 40;
  biased.kernels[0].cells[0].rows_below = 0;
  res = gate::compare(biased_base, biased, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"shifted_f32 softmax cell:normal_s10/8"}));
  EXPECT_NE(find_check(res, "shifted_f32", "cell:normal_s10/8")->message.find("bias z 0.0 -> 6.3"), std::string::npos);
  // Already as one-sided in the baseline: no growth, no failure.
  EXPECT_TRUE(gate::compare(biased, biased, {}).passed());
}

TEST(Gate, BiasCheckPerFamily) {
  const Report base = softcheck::testing::sample();
  Report now = base;
  softcheck::ErrorDistribution& d = now.kernels[1].by_family[0].distribution;  // shifted_f64
  d.rows_above = 11;
  d.rows_below = 0;  // z = 3.3: below the threshold
  EXPECT_TRUE(gate::compare(base, now, {}).passed());
  d.rows_above = 60;  // z = 7.7, baseline -0.3
  const gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"shifted_f64 softmax bias:normal_s10"}));
  gate::Options loose;
  loose.bias_z_growth = 10;
  EXPECT_TRUE(gate::compare(base, now, loose).passed());
}

TEST(Gate, ReferenceRuleOfRunAndCaseCounts) {
  Report base = softcheck::testing::sample();
  base.kernels[2].reference.kernel = "shifted_f32";  // naive_f32 (no contract)
  base.kernels[2].reference.rows = 12;
  Report now = base;
  now.kernels[2].reference.violations = 3;
  now.kernels[2].status = "violated";
  gate::Result res = gate::compare(base, now, {});
  EXPECT_EQ(failures(res), (std::vector<std::string>{"naive_f32 softmax reference"}));
  EXPECT_TRUE(res.notes.empty());
  now = base;
  now.kernels[0].cases = 4;
  res = gate::compare(base, now, {});
  ASSERT_EQ(res.notes.size(), 1u);
  EXPECT_NE(res.notes[0].find("the baseline evaluated 3 cases (12 rows), the report 4"), std::string::npos)
      << res.notes[0];
}

// Baselines from before distributions and contracts: nothing to grow from,
// so no failure; a growth of 0 still compares strictly.
TEST(Gate, BiasAndRatioNeedSomethingInTheBaseline) {
  Report base = softcheck::testing::sample();
  Report now = base;
  now.kernels[1].by_family[0].distribution.rows_above = 60;  // z 7.7
  now.kernels[1].by_family[0].distribution.rows_below = 0;
  for (softcheck::KernelSummary& k : base.kernels) {
    k.distribution = {};
    for (softcheck::FamilySummary& f : k.by_family) f.distribution = {};
  }
  gate::Result res = gate::compare(base, now, {});
  EXPECT_TRUE(res.passed());
  EXPECT_EQ(find_check(res, "shifted_f64", "bias:normal_s10")->outcome, gate::Outcome::skip);
  // A kernel that declares a contract now: its cells' error/bound has no baseline.
  base = softcheck::testing::sample();
  now = base;
  for (softcheck::CellSummary& c : base.kernels[0].cells) {
    c.bound = INFINITY;
    c.max_ratio = 0;
  }
  now.kernels[0].cells[0].max_ratio = 0.5;
  EXPECT_TRUE(gate::compare(base, now, {}).passed());
  gate::Options zero;
  zero.bias_z_growth = 0;
  Report biased = softcheck::testing::sample();
  biased.kernels[0].by_family[0].distribution.rows_above = 60;
  biased.kernels[0].by_family[0].distribution.rows_below = 0;
  EXPECT_TRUE(gate::compare(biased, biased, zero).passed());
}

// --junit-times: measured seconds on the suites and on each (kernel, op)'s
// contract testcase; without them, no time anywhere (deterministic).
TEST(Gate, JUnitTimesOnlyWhenGiven) {
  const Report r = softcheck::testing::sample();
  const gate::Result res = gate::compare(r, r, {});
  EXPECT_EQ(gate::junit_xml(res).find("time="), std::string::npos);
  gate::Timings t;
  t.total_seconds = 1.5;
  t.entry_seconds[{"shifted_f32", "softmax"}] = 0.25;
  const std::string xml = gate::junit_xml(res, &t);
  EXPECT_NE(xml.find("<testsuite name=\"softcheck.gate\" tests="), std::string::npos);
  EXPECT_NE(xml.find("time=\"1.500000\">"), std::string::npos) << xml.substr(0, 400);
  EXPECT_NE(xml.find("<testcase classname=\"softcheck.gate.shifted_f32.softmax\" name=\"contract\" time=\"0.250000\""),
            std::string::npos);
  EXPECT_EQ(xml.find("name=\"margin\" time="), std::string::npos);
}
