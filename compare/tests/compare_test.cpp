// judge_rows on rows whose verdicts are known: the oracle's own rounded
// values hold, a perturbed element breaks its row at that element, masked
// rows follow or break the policy, bad shapes and values are refused, and the
// report it builds passes the strict report reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "softcheck/compare.hpp"
#include "softcheck/storage.hpp"

namespace softcheck {
namespace {

// rows x cols values of f: a deterministic spread with a large range.
std::vector<double> rows_of(Format f, std::int64_t rows, std::int64_t cols) {
  std::vector<double> x;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      x.push_back(round_to_format(std::sin(static_cast<double>(r * cols + c) * 0.7) * static_cast<double>(r + 1), f));
  return x;
}

CompareSpec spec_of(Op op, Format f) {
  CompareSpec s;
  s.op = op;
  s.format = f;
  return s;
}

TEST(Compare, TakesTheOpsOfOneRowAndOneOutput) {
  const std::vector<Op> ops = compare_ops();
  EXPECT_NE(std::find(ops.begin(), ops.end(), Op::softmax), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), Op::log_softmax), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), Op::lse), ops.end());
  EXPECT_FALSE(compare_takes(Op::sparsemax));
  EXPECT_FALSE(compare_takes(Op::softmax_lse));
  EXPECT_FALSE(compare_takes(Op::cross_entropy));
  EXPECT_FALSE(compare_takes(Op::attention));
}

TEST(Compare, CorrectlyRoundedOutputsHoldEveryRule) {
  for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16})
    for (Op op : {Op::softmax, Op::log_softmax, Op::lse, Op::entropy}) {
      SCOPED_TRACE(std::string(name(f)) + " " + std::string(name(op)));
      const std::int64_t rows = 5, cols = 17;
      const std::vector<double> x = rows_of(f, rows, cols);
      const std::vector<double> y = exact_rows(x, rows, cols, op, f, 1.5);
      CompareSpec s = spec_of(op, f);
      s.temperature = 1.5;
      const CompareResult none = judge_rows(x, y, rows, cols, s);
      EXPECT_TRUE(none.held) << none.rule;
      // f16 / bf16 have no stable lse or entropy kernel: nothing but the floor judges those.
      const bool judged = !none.report.kernels.at(0).reference.kernel.empty();
      EXPECT_EQ(judged, f == Format::f32 || f == Format::f64 || spec(op).out[0].shape == OperandShape::row);
      for (const CompareRow& r : none.rows) EXPECT_EQ(r.verdict, judged ? "reference_held" : "no_contract") << r.explain;
      EXPECT_NO_THROW(from_json(to_json(none.report)));
      // Correctly rounded: at most 1/2 ulp (lse and entropy are in absolute units of u).
      if (spec(op).out[0].metric != Metric::ulp) continue;
      EXPECT_LE(none.max_error, 0.5);
      s.contract = ulp_contract(1);
      const CompareResult one = judge_rows(x, y, rows, cols, s);
      EXPECT_TRUE(one.held);
      for (const CompareRow& r : one.rows) EXPECT_EQ(r.verdict, "held");
      EXPECT_EQ(one.report.kernels.at(0).status, "held");
      EXPECT_NO_THROW(from_json(to_json(one.report)));
    }
}

TEST(Compare, APerturbedElementBreaksItsRowThere) {
  const Format f = Format::f32;
  const std::int64_t rows = 4, cols = 9;
  const std::vector<double> x = rows_of(f, rows, cols);
  std::vector<double> y = exact_rows(x, rows, cols, Op::softmax, f, 1);
  const std::size_t at = 2 * cols + 6;
  y[at] = static_cast<float>(y[at] * 1.01);  // about 1e5 ulp
  CompareSpec s = spec_of(Op::softmax, f);
  s.contract = kernel_contract("shifted_f32", Op::softmax, f);
  s.contract_source = "kernel shifted_f32";
  const CompareResult res = judge_rows(x, y, rows, cols, s);
  EXPECT_FALSE(res.held);
  EXPECT_EQ(res.violated_rows, 1u);
  EXPECT_EQ(res.rows[2].verdict, "violated");
  EXPECT_FALSE(res.rows[2].explain.empty());
  ASSERT_TRUE(res.worst.present);
  EXPECT_EQ(res.worst.row, 2);
  EXPECT_EQ(res.worst.element, 6);
  EXPECT_EQ(res.worst.got, y[at]);
  EXPECT_GT(res.worst.error, res.worst.bound);
  EXPECT_EQ(res.worst.exact_rounded, exact_rows(x, rows, cols, Op::softmax, f, 1)[at]);
  EXPECT_EQ(res.worst.repro.rfind("softcheck oracle --op softmax --dtype f32 --", 0), 0u) << res.worst.repro;
  const Report back = from_json(to_json(res.report));
  EXPECT_EQ(back.kernels.at(0).status, "violated");
  EXPECT_EQ(back.kernels.at(0).contract_violations, 1u);
  EXPECT_EQ(back.kernels.at(0).worst.row, 2);
  // Without a contract the reference rule catches it too.
  s.contract = {};
  const CompareResult ref = judge_rows(x, y, rows, cols, s);
  EXPECT_EQ(ref.rows[2].verdict, "reference_violated");
  EXPECT_GT(ref.rows[2].reference_ratio, 1);
  EXPECT_EQ(ref.worst.row, 2);
  EXPECT_EQ(from_json(to_json(ref.report)).kernels.at(0).reference.violations, 1u);
}

TEST(Compare, NaNWhereTheExactValueIsFiniteBreaksTheFloor) {
  const Format f = Format::f32;
  const std::vector<double> x = rows_of(f, 2, 5);
  std::vector<double> y = exact_rows(x, 2, 5, Op::softmax, f, 1);
  y[7] = NAN;
  CompareSpec s = spec_of(Op::softmax, f);
  s.reference_rule.scope = "off";
  const CompareResult res = judge_rows(x, y, 2, 5, s);
  EXPECT_EQ(res.rows[0].verdict, "no_contract");
  EXPECT_EQ(res.rows[1].verdict, "broken");
  EXPECT_FALSE(res.rows[1].holds);
  EXPECT_EQ(res.worst.row, 1);
  EXPECT_EQ(res.worst.element, 2);
  EXPECT_EQ(res.report.kernels.at(0).floor_violations, 1u);
  EXPECT_NO_THROW(from_json(to_json(res.report)));
}

TEST(Compare, MaskedRowsFollowThePolicyGiven) {
  const Format f = Format::f16;
  const std::vector<double> x = {-INFINITY, -INFINITY, -INFINITY, 1, -INFINITY, 2};
  std::vector<double> y = exact_rows(x, 2, 3, Op::softmax, f, 1, MaskedRowPolicy::zeros);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[4], 0);  // a masked entry of a live row: exactly 0
  CompareSpec s = spec_of(Op::softmax, f);
  s.masked_policy = MaskedRowPolicy::zeros;
  EXPECT_EQ(judge_rows(x, y, 2, 3, s).rows[0].verdict, "policy_held");
  s.masked_policy = MaskedRowPolicy::nan;
  const CompareResult res = judge_rows(x, y, 2, 3, s);
  EXPECT_EQ(res.rows[0].verdict, "policy_violated");
  EXPECT_FALSE(res.held);
  EXPECT_EQ(res.report.kernels.at(0).policy_violations, 1u);
  EXPECT_NO_THROW(from_json(to_json(res.report)));
}

TEST(Compare, RowsWithoutAnExactValueHaveNoVerdict) {
  const std::vector<double> x = {1, INFINITY, 0, 1};
  const std::vector<double> y = {NAN, NAN, 0.25, 0.75};
  const CompareResult res = judge_rows(x, y, 2, 2, spec_of(Op::softmax, Format::f64));
  EXPECT_EQ(res.rows[0].verdict, "undefined");
  EXPECT_EQ(res.undefined_rows, 1u);
}

TEST(Compare, RefusesWhatCannotBeJudged) {
  const std::vector<double> x = rows_of(Format::f32, 2, 4);
  const std::vector<double> y = exact_rows(x, 2, 4, Op::softmax, Format::f32, 1);
  CompareSpec s = spec_of(Op::softmax, Format::f32);
  EXPECT_THROW(judge_rows(x, std::span(y).first(7), 2, 4, s), std::invalid_argument);
  EXPECT_THROW(judge_rows(x, y, 2, 3, s), std::invalid_argument);
  std::vector<double> off = y;
  off[5] = 0.1;  // no f32 value
  try {
    judge_rows(x, off, 2, 4, s);
    ADD_FAILURE() << "0.1 taken as an f32 value";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("y[1, 1]"), std::string::npos) << e.what();
  }
  s.op = Op::sparsemax;
  EXPECT_THROW(judge_rows(x, y, 2, 4, s), std::invalid_argument);
  s.op = Op::softmax;
  s.temperature = 1e-300;  // not a normal f32 value
  EXPECT_THROW(judge_rows(x, y, 2, 4, s), std::invalid_argument);
  s.temperature = 1;
  s.reference_rule.k = 0.5;
  EXPECT_THROW(judge_rows(x, y, 2, 4, s), std::invalid_argument);
  EXPECT_THROW(ulp_contract(NAN), std::invalid_argument);
  EXPECT_THROW(ulp_contract(0), std::invalid_argument);
  EXPECT_THROW(kernel_contract("no_such_kernel", Op::softmax, Format::f32), std::invalid_argument);
  EXPECT_THROW(kernel_contract("shifted_f32", Op::softmax, Format::f16), std::invalid_argument);
  EXPECT_THROW(kernel_contract("shifted_f32", Op::log_softmax, Format::f32), std::invalid_argument);  // none declared
  EXPECT_TRUE(kernel_contract("shifted_log1p_f32", Op::log_softmax, Format::f32).declared);
}

TEST(Compare, OracleReproLineReadsBackToTheRow) {
  const std::vector<double> x = {0, 0.5, -INFINITY, 1.0 / 3};
  const std::vector<double> x16 = {0, 0.5, -INFINITY, round_to_format(1.0 / 3, Format::f16)};
  EXPECT_EQ(oracle_repro_line(Op::log_softmax, Format::f64, 2, x),
            "softcheck oracle --op log_softmax --dtype f64 --temperature 2 -- 0 0.5 -inf 0.3333333333333333");
  EXPECT_EQ(oracle_repro_line(Op::softmax, Format::f32, 1, std::vector<double>{static_cast<float>(0.1)}),
            "softcheck oracle --op softmax --dtype f32 -- 0.1");
  EXPECT_EQ(format_value_text(x16[3], Format::f16), "0.333251953125");
}

}  // namespace
}  // namespace softcheck
