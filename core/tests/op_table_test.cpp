// The op table is the one place ops are described: every lookup goes through
// it, so these tests pin the lookups (the table's own consistency is checked
// at compile time in op.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
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

}  // namespace
}  // namespace softcheck
