// The op table is the one place ops are described: every lookup goes through
// it, so these tests pin the lookups (the table's own consistency is checked
// at compile time in op.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "softcheck/kernel.hpp"
#include "softcheck/op.hpp"

namespace softcheck {
namespace {

TEST(OpTable, NamesRoundTrip) {
  std::set<std::string> seen;
  for (const OpSpec& o : op_table) {
    ASSERT_EQ(parse_op(o.name), o.op);
    EXPECT_EQ(name(o.op), o.name);
    EXPECT_TRUE(seen.insert(std::string(o.name)).second);
  }
  EXPECT_FALSE(parse_op("Softmax"));
  EXPECT_FALSE(parse_op(""));
}

TEST(OpTable, PluginCodesRoundTrip) {
  for (const OpSpec& o : op_table) {
    if (o.plugin_code != 0) {
      EXPECT_EQ(op_of_plugin_code(o.plugin_code), o.op);
    }
  }
  EXPECT_FALSE(op_of_plugin_code(0));
  EXPECT_FALSE(op_of_plugin_code(99));
}

TEST(OpTable, MaskedRowValues) {
  const double u = std::ldexp(1.0, -24);
  EXPECT_TRUE(std::isnan(masked_row_value(OutputKind::probabilities, MaskedRowPolicy::nan, 4)));
  EXPECT_EQ(masked_row_value(OutputKind::probabilities, MaskedRowPolicy::zeros, 4), 0.0);
  EXPECT_EQ(masked_row_value(OutputKind::log_probabilities, MaskedRowPolicy::zeros, 4), -INFINITY);
  EXPECT_EQ(masked_row_value(OutputKind::log_sum_exp, MaskedRowPolicy::zeros, 4), -INFINITY);
  EXPECT_EQ(masked_row_value(OutputKind::log_sum_exp, MaskedRowPolicy::uniform, 4), -INFINITY);
  EXPECT_EQ(masked_row_value(OutputKind::entropy, MaskedRowPolicy::zeros, 4), 0.0);
  EXPECT_DOUBLE_EQ(masked_row_value(OutputKind::entropy, MaskedRowPolicy::uniform, 4), std::log(4.0));
  EXPECT_TRUE(is_masked_row_value(0.25f, OutputKind::probabilities, MaskedRowPolicy::uniform, 4, u));
  EXPECT_FALSE(is_masked_row_value(0.25 * (1 + 8 * u), OutputKind::probabilities, MaskedRowPolicy::uniform, 4, u));
  EXPECT_TRUE(is_masked_row_value(static_cast<float>(std::log(3.0)), OutputKind::entropy, MaskedRowPolicy::uniform,
                                  3, u));
  EXPECT_FALSE(is_masked_row_value(0.0, OutputKind::entropy, MaskedRowPolicy::uniform, 3, u));
  EXPECT_FALSE(is_masked_row_value(NAN, OutputKind::entropy, MaskedRowPolicy::zeros, 3, u));
  EXPECT_TRUE(is_masked_row_value(NAN, OutputKind::log_sum_exp, MaskedRowPolicy::nan, 3, u));
  EXPECT_TRUE(is_masked_row_value(-INFINITY, OutputKind::log_sum_exp, MaskedRowPolicy::nan, 3, u));
  EXPECT_FALSE(is_masked_row_value(0.0, OutputKind::log_sum_exp, MaskedRowPolicy::zeros, 3, u));
}

TEST(OpTable, RunPassesOneOperandEachWay) {
  Kernel k;
  k.compute = [](const OpCall& c) {
    ASSERT_EQ(c.in.size(), 1u);
    ASSERT_EQ(c.out.size(), 1u);
    const auto* x = static_cast<const double*>(c.in[0]);
    auto* out = static_cast<double*>(c.out[0]);
    for (std::int64_t r = 0; r < c.rows; ++r) out[r] = x[r * c.cols] + (c.op == Op::lse ? 1 : 0);
  };
  const double x[] = {1, 2, 3, 4};
  double out[2] = {};
  k.run(Op::lse, x, out, 2, 2, 1.0);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 4);
}

// An op's outputs each say what they are and how they are measured; an op
// with several is named output by output.
TEST(OpTable, OutputsCarryTheirKindAndMetric) {
  const OpSpec& both = spec(Op::softmax_lse);
  ASSERT_EQ(both.out.size(), 2u);
  EXPECT_EQ(both.out[0].kind, spec(Op::softmax).out[0].kind);
  EXPECT_EQ(both.out[0].metric, Metric::ulp);
  EXPECT_TRUE(both.out[0].normwise);
  EXPECT_EQ(both.out[1].kind, OutputKind::log_sum_exp);
  EXPECT_EQ(both.out[1].metric, spec(Op::lse).out[0].metric);
  EXPECT_EQ(output_cols(both.out[0], 7), 7);
  EXPECT_EQ(output_cols(both.out[1], 7), 1);
  EXPECT_EQ(output_label(Op::softmax_lse, 1), "softmax_lse:lse");
  EXPECT_EQ(output_label(Op::softmax, 0), "softmax");
  for (const OpSpec& o : op_table)
    for (const Operand& in : o.in) EXPECT_EQ(in.kind, OutputKind::none) << o.name;
}

// A declaration that forgot an output's contract promises nothing for it;
// an opt-out without a reason does not count.
TEST(OpDecl, MissingContractsAndReasonlessOptOuts) {
  OpDecl d{Op::softmax_lse, {}};
  d.contract.declared = true;
  EXPECT_TRUE(d.contract_of(0).declared);
  EXPECT_FALSE(d.contract_of(1).declared);
  EXPECT_FALSE(d.contract_of(1).why.empty());
  d.opt_outs = {{std::string(floor_range), ""}, {std::string(floor_ordering), "why"}};
  EXPECT_EQ(d.opted_out(floor_range), nullptr);
  ASSERT_NE(d.opted_out(floor_ordering), nullptr);
  EXPECT_EQ(d.opted_out(floor_ordering)->reason, "why");
  EXPECT_EQ(d.opted_out(floor_no_nonfinite), nullptr);
}

TEST(OpTable, EntmaxAlphaComesFromTheOpOrTheKernel) {
  OpParams p;
  p.alpha = 1.25;
  EXPECT_EQ(entmax_alpha(Op::sparsemax, p), 2.0);
  EXPECT_EQ(entmax_alpha(Op::entmax15, p), 1.5);
  EXPECT_EQ(entmax_alpha(Op::entmax, p), 1.25);
  EXPECT_EQ(entmax_alpha(Op::topk_softmax, p), 0.0);
  EXPECT_EQ(entmax_alpha(Op::softmax, p), 0.0);
}

TEST(OpTable, RunPassesEveryOutputOfAnOpWithSeveral) {
  Kernel k;
  k.compute = [](const OpCall& c) {
    ASSERT_EQ(c.out.size(), 2u);
    const auto* x = static_cast<const double*>(c.in[0]);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      for (std::int64_t j = 0; j < c.cols; ++j) static_cast<double*>(c.out[0])[r * c.cols + j] = -x[r * c.cols + j];
      static_cast<double*>(c.out[1])[r] = 10.0 * static_cast<double>(r);
    }
  };
  const double x[] = {1, 2, 3, 4};
  double y[4] = {}, lse[2] = {};
  void* const outs[] = {y, lse};
  k.run(Op::softmax_lse, x, outs, 2, 2, 1.0);
  EXPECT_EQ(y[3], -4);
  EXPECT_EQ(lse[1], 10);
  // The one-output form and a wrong number of outputs are refused, not half-run.
  EXPECT_THROW(k.run(Op::softmax_lse, x, y, 2, 2, 1.0), std::invalid_argument);
  void* const one[] = {y};
  EXPECT_THROW(k.run(Op::softmax_lse, x, one, 2, 2, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace softcheck
