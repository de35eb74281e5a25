// The op table is the one place ops are described: every lookup goes through
// it, so these tests pin the lookups (the table's own consistency is checked
// at compile time in op.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

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

// Attention: q a head vector, K and V n x d, O d values, lse one; the
// masked-row values; a call must carry the head dimension.
TEST(OpTable, AttentionOperandsHaveTheHeadDimension) {
  const OpSpec& a = spec(Op::attention);
  ASSERT_EQ(a.in.size(), 5u);
  EXPECT_TRUE(has_head_dim(Op::attention));
  EXPECT_FALSE(has_head_dim(Op::cross_entropy));
  EXPECT_EQ(output_cols(a.in[1], 10, 64), 64);   // q
  EXPECT_EQ(output_cols(a.in[2], 10, 64), 640);  // K
  EXPECT_EQ(output_cols(a.in[4], 10, 64), 1);    // one KeyWindow
  EXPECT_EQ(a.in[4].input, InputKind::key_window);
  EXPECT_EQ(output_cols(a.out[0], 10, 64), 64);  // O
  EXPECT_EQ(output_cols(a.out[1], 10, 64), 1);   // lse
  EXPECT_EQ(a.out[0].metric, Metric::scaled);
  EXPECT_EQ(masked_row_value(OutputKind::attention_output, MaskedRowPolicy::zeros, 5), 0.0);
  EXPECT_TRUE(std::isnan(masked_row_value(OutputKind::attention_output, MaskedRowPolicy::nan, 5)));
  // The uniform p's O is the mean of V, no constant: never accepted.
  EXPECT_FALSE(is_masked_row_value(0.2, OutputKind::attention_output, MaskedRowPolicy::uniform, 5, 1e-7));
  EXPECT_FALSE(is_masked_row_value(0.0, OutputKind::attention_output, MaskedRowPolicy::uniform, 5, 1e-7));

  Kernel k;
  k.name = "attention_probe";
  OpDecl decl;
  decl.op = Op::attention;
  k.ops = {decl};
  std::int64_t seen_head_dim = -1;
  k.compute = [&](const OpCall& c) { seen_head_dim = c.head_dim; };
  double x = 0, q = 0, K = 0, V = 0, O = 0, lse = 0;
  const KeyWindow window;
  const void* const in[] = {&x, &q, &K, &V, &window};
  void* const out[] = {&O, &lse};
  EXPECT_THROW(k.call({Op::attention, in, out, 1, 1, 1.0}), std::invalid_argument);  // no head dimension
  k.call({Op::attention, in, out, 1, 1, 1.0, 1});
  EXPECT_EQ(seen_head_dim, 1);
}

// Relu and linear attention: attention's operands, one head-shaped O in
// the scaled metric with a scale of its own; relu's fully masked O is its
// exact value 0 under every policy, linear's follows the policy (0/0) and
// never uniform (the mean of V is no constant).
TEST(OpTable, AttentionAlternativesShareTheOperands) {
  for (const Op op : {Op::relu_attention, Op::linear_attention}) {
    const OpSpec& a = spec(op);
    ASSERT_EQ(a.in.size(), 5u) << a.name;
    EXPECT_TRUE(has_head_dim(op));
    for (std::size_t i = 0; i < a.in.size(); ++i) {
      EXPECT_EQ(a.in[i].input, spec(Op::attention).in[i].input) << a.name;
      EXPECT_EQ(a.in[i].shape, spec(Op::attention).in[i].shape) << a.name;
    }
    ASSERT_EQ(a.out.size(), 1u);
    EXPECT_FALSE(a.several_outputs());
    EXPECT_EQ(output_cols(a.out[0], 10, 64), 64);  // O
    EXPECT_EQ(a.out[0].metric, Metric::scaled);
    EXPECT_TRUE(is_attention_output(a.out[0].kind));
    EXPECT_TRUE(has_scale(a.out[0].kind));
    EXPECT_FALSE(scale_formula(a.out[0].kind).empty());
    EXPECT_NE(scale_formula(a.out[0].kind), scale_formula(OutputKind::attention_output));
    EXPECT_FALSE(a.fast_tier);
    EXPECT_EQ(a.plugin_code, 0);
  }
  const OutputKind relu = spec(Op::relu_attention).out[0].kind, linear = spec(Op::linear_attention).out[0].kind;
  EXPECT_NE(relu, linear);
  for (const MaskedRowPolicy p : {MaskedRowPolicy::nan, MaskedRowPolicy::zeros, MaskedRowPolicy::uniform}) {
    EXPECT_EQ(masked_row_value(relu, p, 5), 0.0);
    EXPECT_TRUE(is_masked_row_value(0.0, relu, p, 5, 1e-7));
    EXPECT_FALSE(is_masked_row_value(NAN, relu, p, 5, 1e-7));
    EXPECT_FALSE(is_masked_row_value(0.2, relu, p, 5, 1e-7));
  }
  EXPECT_EQ(masked_row_value(linear, MaskedRowPolicy::zeros, 5), 0.0);
  EXPECT_TRUE(std::isnan(masked_row_value(linear, MaskedRowPolicy::nan, 5)));
  EXPECT_TRUE(is_masked_row_value(NAN, linear, MaskedRowPolicy::nan, 5, 1e-7));
  EXPECT_FALSE(is_masked_row_value(0.0, linear, MaskedRowPolicy::nan, 5, 1e-7));
  EXPECT_FALSE(is_masked_row_value(0.2, linear, MaskedRowPolicy::uniform, 5, 1e-7));
  EXPECT_FALSE(is_masked_row_value(0.0, linear, MaskedRowPolicy::uniform, 5, 1e-7));
}

// Their row shapes: relu n and h alone; linear n, h, R the range of the
// unmasked biases and M the largest -q_i / T; the contract's h term.
TEST(RowShape, AttentionAlternativesRowShapes) {
  const std::vector<double> q = {1, -3, 2, 0.5}, x = {0, -2.5, -INFINITY, 1};
  const std::vector<double> K(16, 1.0);
  const RowShape relu = attention_op_row_shape(Op::relu_attention, x, q, K, 4, 0.5, Format::f32);
  EXPECT_EQ(relu.n, 4);
  EXPECT_EQ(relu.h, 4);
  EXPECT_EQ(relu.R, 0);
  EXPECT_EQ(relu.M, 0);
  EXPECT_EQ(relu.D, 0);
  EXPECT_FALSE(relu.temperature_is_one);
  const RowShape linear = attention_op_row_shape(Op::linear_attention, x, q, K, 4, 0.5, Format::f32);
  EXPECT_EQ(linear.n, 4);
  EXPECT_EQ(linear.h, 4);
  EXPECT_NEAR(linear.R, 3.5, 1e-13);  // biases 1 down to -2.5
  EXPECT_GE(linear.R, 3.5);
  EXPECT_NEAR(linear.M, 6, 1e-13);  // -q_1 / T = 3 / 0.5
  EXPECT_GE(linear.M, 6);
  EXPECT_EQ(linear.D, 0);
  // attention's own shape for attention.
  const RowShape soft = attention_op_row_shape(Op::attention, x, q, K, 4, 0.5, Format::f32);
  EXPECT_GT(soft.D, 0);
  Contract c;
  c.declared = true;
  c.a = 8;
  c.b = 1;
  c.head = 1;
  EXPECT_EQ(c.formula(), "8 + 1*n + 1*h");
  EXPECT_NEAR(c.bound_ulps(relu, Format::f64), 8 + 4 + 4, 1e-9);
}

// The attention row's shape (kernel.hpp): scores z_j = q . K_j / (T sqrt d)
// + x_j stand for z; D = max_j sum_i |q_i K_ji| / (T sqrt d), h = d; each
// figure an upper bound within a few 2^-50 of the exact one.
TEST(RowShape, AttentionRowShapeFromTheScores) {
  // d = 4, T = 1: sqrt(d) = 2. q = [1, -1, 2, 0.5].
  const std::vector<double> q = {1, -1, 2, 0.5};
  const std::vector<double> K = {1, 1, 1, 1,     // dot 2.5,  mass 4.5
                                 -2, 0, 0, 0,    // dot -2,   mass 2
                                 100, 0, 0, 0};  // masked below
  const std::vector<double> x = {0, 3, -INFINITY};
  const RowShape s = attention_row_shape(x, q, K, 4, 1.0, Format::f64);
  // z = [1.25, -1 + 3 = 2]; R = 0.75, M = 2, D = 4.5 / 2 = 2.25.
  EXPECT_EQ(s.n, 3);
  EXPECT_EQ(s.h, 4);
  EXPECT_NEAR(s.R, 0.75, 1e-13);
  EXPECT_GE(s.R, 0.75);
  EXPECT_NEAR(s.M, 2, 1e-13);
  EXPECT_GE(s.M, 2);
  EXPECT_NEAR(s.D, 2.25, 1e-13);
  EXPECT_GE(s.D, 2.25);
  EXPECT_TRUE(s.temperature_is_one);
  // The contract's attention terms: hd h D + dot D.
  Contract c;
  c.declared = true;
  c.hd = 2;
  c.dot = 10;
  EXPECT_EQ(c.formula(), "2*h*D + 10*D");
  EXPECT_NEAR(c.bound_ulps(s, Format::f64), (2 * 4 + 10) * 2.25, 1e-9);
  // Fits f32; biases beyond half of f32's range do not (the exp2 fold doubles them).
  EXPECT_TRUE(attention_row_fits_format(x, q, K, 4, 1.0, Format::f32));
  const std::vector<double> wide = {0, 3e38, -INFINITY};
  EXPECT_FALSE(attention_row_fits_format(wide, q, K, 4, 1.0, Format::f32));
  EXPECT_TRUE(attention_row_fits_format(wide, q, K, 4, 1.0, Format::f64));
  EXPECT_THROW(attention_row_shape(x, q, K, 3, 1.0, Format::f64), std::invalid_argument);  // K is not n x d
}

// A key far below the max whose score an f32 kernel can lift to the top
// counts in f32's shape (its dot product cancels from 2^40: f32's error is
// 2^17), not in f64's, which computes it to within 2^-12: exact z = -800,
// below f64's cut-off of about 746 (kernel.hpp).
TEST(RowShape, KeysAKernelCanLiftCountInItsFormat) {
  const std::vector<double> q = {1, 1, 1, 1}, x = {0, 0};
  const std::vector<double> K = {0, 0, 0, 0, 0x1p40, 65537, -0x1p40, -67137};
  EXPECT_GE(attention_row_shape(x, q, K, 4, 1.0, Format::f32).D, 0x1p39);
  EXPECT_LE(attention_row_shape(x, q, K, 4, 1.0, Format::f64).D, 1e-300);
  // Products below the smallest normal count at 2^emin each: D >= d 2^-126 s in f32.
  const std::vector<double> tiny_q = {0x1p-75, 0x1p-75, 0x1p-75, 0x1p-75};
  const std::vector<double> tiny_k = {0x1p-75, 0x1p-75, 0x1p-75, 0x1p-75};
  const RowShape s = attention_row_shape(std::vector<double>{0}, tiny_q, tiny_k, 4, 0x1p-126, Format::f32);
  EXPECT_GE(s.D, 4 * 0x1p-126 * 0x1p126 / 2);
}

}  // namespace
}  // namespace softcheck
