// The exact attention row (attention_oracle.hpp): values the math fixes (one
// key, equal scores, scores exactly representable, V = 1), masking and the
// statuses, the scale 1 / (T sqrt(d)), agreement of 256 with 1024 bits on
// Gaussian and extreme rows, argument errors and exact_values. Reference
// values come from MPFR computations written out here or from exact_row,
// never from exact_attention itself.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "softcheck/attention_oracle.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/test_values.hpp"
#include "mpfr_scratch.hpp"

namespace softcheck::oracle {
namespace {

using softcheck::test_values::inf;
using softcheck::test_values::nan;

using testing::Mp;
using testing::raw;
using testing::relatively_within;
using testing::within;

// |a - b| <= 2^e max(1, |b|): the lse's yardstick.
bool lse_within(mpfr_srcptr a, mpfr_srcptr b, long e) {
  Mp scale(mpfr_get_prec(b));
  mpfr_abs(scale.v, b, MPFR_RNDN);
  mpfr_max(scale.v, scale.v, Mp(8, 1.0).v, MPFR_RNDN);
  return within(a, b, scale.v, e);
}

// z_j = (q . K_j) / (T sqrt(d)) + x_j into z (at z's precision), the dot
// product summed exactly (the products here span fewer than 4200 bits).
void hand_score(mpfr_ptr z, std::span<const double> q, std::span<const double> k_row, double temperature,
                double bias) {
  Mp dot(4200), product(106), root(mpfr_get_prec(z) + 64);
  mpfr_set_zero(dot.v, 1);
  for (std::size_t i = 0; i < q.size(); ++i) {
    mpfr_set_d(product.v, q[i], MPFR_RNDN);
    mpfr_mul_d(product.v, product.v, k_row[i], MPFR_RNDN);
    mpfr_add(dot.v, dot.v, product.v, MPFR_RNDN);
  }
  mpfr_sqrt_ui(root.v, q.size(), MPFR_RNDN);
  mpfr_mul_d(root.v, root.v, temperature, MPFR_RNDN);
  mpfr_div(z, dot.v, root.v, MPFR_RNDN);
  mpfr_add_d(z, z, bias, MPFR_RNDN);
}

struct AttentionRow {
  std::vector<double> x, q, K, V;
  std::int64_t d;
  double temperature = 1.0;
};

ExactAttention attend(const AttentionRow& r, unsigned bits = default_bits) {
  return exact_attention(r.x, r.q, r.K, r.V, r.d, r.temperature, bits);
}

// ------------------------------------------------------------------ known values

// One key: p = (1), so O = V_0 and s = |V_0| exactly, and lse = z_0.
TEST(ExactAttention, OneKeyGivesItsValueAndScore) {
  const AttentionRow r{{0.125}, {0.75, -2, 1e-3}, {1.5, 0.25, -7}, {3.5, -0x1p-1074, 1e300}, 3, 0.7};
  const ExactAttention a = attend(r);
  ASSERT_EQ(a.status, RowStatus::ok);
  ASSERT_EQ(a.output.size(), 3u);
  ASSERT_EQ(a.scale.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(mpfr_cmp_d(raw(a.output[i]), r.V[i]), 0) << i;
    EXPECT_EQ(mpfr_cmp_d(raw(a.scale[i]), std::fabs(r.V[i])), 0) << i;
  }
  Mp z(1100);
  hand_score(z.v, r.q, r.K, r.temperature, r.x[0]);
  EXPECT_TRUE(lse_within(raw(a.lse), z.v, -250));
}

// Keys whose K rows are permutations of each other against q = (1, 1, 1),
// with equal biases: equal scores z, so p = 1/n, O is the mean of V, s the
// mean of |V| and lse = z + log n.
TEST(ExactAttention, EqualScoresAverageTheValues) {
  const AttentionRow r{{0.25, 0.25, 0.25, 0.25},
                       {1, 1, 1},
                       {0.5, 2, -1, 2, -1, 0.5, -1, 0.5, 2, 2, 0.5, -1},
                       {1, -2, 0.1, 3, 2.5, -0.3, -4, 0.5, 0.7, 0.25, -1, 1e-5},
                       3,
                       1.3};
  const ExactAttention a = attend(r);
  ASSERT_EQ(a.status, RowStatus::ok);
  for (std::size_t i = 0; i < 3; ++i) {
    Mp mean(1100), mean_abs(1100);
    mpfr_set_zero(mean.v, 1);
    mpfr_set_zero(mean_abs.v, 1);
    for (std::size_t j = 0; j < 4; ++j) {
      mpfr_add_d(mean.v, mean.v, r.V[j * 3 + i], MPFR_RNDN);
      mpfr_add_d(mean_abs.v, mean_abs.v, std::fabs(r.V[j * 3 + i]), MPFR_RNDN);
    }
    mpfr_div_ui(mean.v, mean.v, 4, MPFR_RNDN);
    mpfr_div_ui(mean_abs.v, mean_abs.v, 4, MPFR_RNDN);
    EXPECT_TRUE(within(raw(a.output[i]), mean.v, mean_abs.v, -250)) << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), mean_abs.v, -250)) << i;
  }
  Mp lse(1100), log_n(1100);
  hand_score(lse.v, r.q, std::span(r.K).first(3), r.temperature, r.x[0]);
  mpfr_log_ui(log_n.v, 4, MPFR_RNDN);
  mpfr_add(lse.v, lse.v, log_n.v, MPFR_RNDN);
  EXPECT_TRUE(lse_within(raw(a.lse), lse.v, -240));
}

// d = 4, T = 2: the scale 1 / (T sqrt(d)) is 1/4 and integer q, K give
// scores exactly representable in double, so p and lse are exact_row's of
// those scores (1.0 as temperature). V = I reads p off O; another V checks
// O = sum_j p_j V_j against p from exact_row.
TEST(ExactAttention, RepresentableScoresMatchExactRow) {
  const std::vector<double> x = {0.5, -1, -inf, 2.25};
  const std::vector<double> q = {1, -2, 3, 1};
  const std::vector<double> K = {2, 0, 1, -1, -3, 1, 4, 2, 0, 0, 0, 0, 5, -1, -2, 3};
  std::vector<double> scores;
  for (std::size_t j = 0; j < 4; ++j) {
    double dot = 0;  // small integers: exact in double
    for (std::size_t i = 0; i < 4; ++i) dot += q[i] * K[j * 4 + i];
    scores.push_back(dot / 4 + x[j]);
  }
  const ExactRow row = exact_row(scores, 1.0);
  ASSERT_EQ(row.status, RowStatus::ok);

  const std::vector<double> identity = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const ExactAttention p = exact_attention(x, q, K, identity, 4, 2.0);
  ASSERT_EQ(p.status, RowStatus::ok);
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_TRUE(relatively_within(raw(p.output[j]), raw(row.softmax[j]), -250)) << j;
    EXPECT_TRUE(relatively_within(raw(p.scale[j]), raw(row.softmax[j]), -250)) << j;
  }
  EXPECT_TRUE(lse_within(raw(p.lse), raw(row.lse), -250));

  const std::vector<double> V = {1.5, -2, 0, 1e-3, -0.25, 3, 7, -1e3, nan, nan, nan, nan, 2, 2, -5, 0.125};
  const ExactAttention a = exact_attention(x, q, K, V, 4, 2.0);
  ASSERT_EQ(a.status, RowStatus::ok);
  for (std::size_t i = 0; i < 4; ++i) {
    Mp want(1100), scale(1100), term(1100);
    mpfr_set_zero(want.v, 1);
    mpfr_set_zero(scale.v, 1);
    for (std::size_t j = 0; j < 4; ++j) {
      if (x[j] == -inf) continue;
      mpfr_mul_d(term.v, raw(row.softmax[j]), V[j * 4 + i], MPFR_RNDN);
      mpfr_add(want.v, want.v, term.v, MPFR_RNDN);
      mpfr_abs(term.v, term.v, MPFR_RNDN);
      mpfr_add(scale.v, scale.v, term.v, MPFR_RNDN);
    }
    EXPECT_TRUE(within(raw(a.output[i]), want.v, scale.v, -250)) << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), scale.v, -250)) << i;
  }
  EXPECT_TRUE(lse_within(raw(a.lse), raw(row.lse), -250));
}

// V = 1: O = sum_j p_j = 1 and s = 1 (mass conservation, REFERENCE.md,
// "Attention rows"), whatever the scores.
TEST(ExactAttention, ValuesAllOnesConserveMass) {
  std::mt19937_64 gen(2024);
  std::normal_distribution<double> normal(0.0, 3.0);
  const std::int64_t d = 16;
  const std::size_t n = 50;
  AttentionRow r{{}, {}, {}, std::vector<double>(n * d, 1.0), d, 0.6};
  for (std::size_t j = 0; j < n; ++j) r.x.push_back(j % 9 == 4 ? -inf : normal(gen));
  for (std::int64_t i = 0; i < d; ++i) r.q.push_back(normal(gen));
  for (std::size_t k = 0; k < n * d; ++k) r.K.push_back(normal(gen));
  const ExactAttention a = attend(r);
  ASSERT_EQ(a.status, RowStatus::ok);
  const Mp one(8, 1.0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(d); ++i) {
    EXPECT_TRUE(relatively_within(raw(a.output[i]), one.v, -250)) << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), one.v, -250)) << i;
  }
}

// The scale at a resolution rho: s_i = sum_j (max(p_j, rho) |V_ji| + rho)
// over the unmasked keys. Two visible keys with p = (1 - e^-1000, e^-1000),
// V = (1, -2), one masked key: s = p_0 + 2 rho + 2 rho = 1 + 4 rho (to
// 2^-1400), O unchanged (p_0 - 2 p_1).
TEST(ExactAttention, ResolutionFloorsTheScale) {
  const double rho = 0x1p-20;
  const std::vector<double> x = {0, -1000, -inf}, q = {0}, K = {0, 0, 0}, V = {1, -2, 5};
  const ExactAttention plain = exact_attention(x, q, K, V, 1);
  const ExactAttention floored = exact_attention(x, q, K, V, 1, 1.0, default_bits, rho);
  ASSERT_EQ(floored.status, RowStatus::ok);
  Mp expected(300, 1.0);
  mpfr_add_d(expected.v, expected.v, 4 * rho, MPFR_RNDN);
  EXPECT_TRUE(relatively_within(raw(floored.scale[0]), expected.v, -250));
  EXPECT_TRUE(relatively_within(raw(plain.scale[0]), Mp(8, 1.0).v, -250));
  EXPECT_EQ(mpfr_cmp(raw(floored.output[0]), raw(plain.output[0])), 0);
  EXPECT_THROW(exact_attention(x, q, K, V, 1, 1.0, default_bits, -1.0), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, q, K, V, 1, 1.0, default_bits, NAN), std::invalid_argument);
}

// The softcap acts before the bias and the mask: d = 1, q = 1, K = (3, 0,
// 7), c = 2, the third key masked: z = (2 tanh(1.5), 0), lse =
// log(e^(2 tanh 1.5) + 1), p_0 read off O with V = (1, 0, 9). Without the
// cap the masked key stays out too.
TEST(ExactAttention, SoftcapActsBeforeTheMask) {
  const std::vector<double> x = {0, 0, -inf}, q = {1}, K = {3, 0, 7}, V = {1, 0, 9};
  const ExactAttention a = exact_attention(x, q, K, V, 1, 1.0, default_bits, 0, 2.0);
  ASSERT_EQ(a.status, RowStatus::ok);
  Mp z(1200), e(1200), denom(1200), p0(1200), lse(1200);
  mpfr_set_d(z.v, 1.5, MPFR_RNDN);
  mpfr_tanh(z.v, z.v, MPFR_RNDN);
  mpfr_mul_ui(z.v, z.v, 2, MPFR_RNDN);
  mpfr_exp(e.v, z.v, MPFR_RNDN);
  mpfr_add_ui(denom.v, e.v, 1, MPFR_RNDN);
  mpfr_div(p0.v, e.v, denom.v, MPFR_RNDN);
  mpfr_log(lse.v, denom.v, MPFR_RNDN);
  EXPECT_TRUE(relatively_within(raw(a.output[0]), p0.v, -250));
  EXPECT_TRUE(lse_within(raw(a.lse), lse.v, -250));
  EXPECT_THROW(exact_attention(x, q, K, V, 1, 1.0, default_bits, 0, -1.0), std::invalid_argument);
  // No cap: z = (3, 0), p_0 = e^3 / (e^3 + 1).
  const ExactAttention plain = exact_attention(x, q, K, V, 1);
  mpfr_set_d(z.v, 3, MPFR_RNDN);
  mpfr_exp(e.v, z.v, MPFR_RNDN);
  mpfr_add_ui(denom.v, e.v, 1, MPFR_RNDN);
  mpfr_div(p0.v, e.v, denom.v, MPFR_RNDN);
  EXPECT_TRUE(relatively_within(raw(plain.output[0]), p0.v, -250));
}

// A sink logit s is exp(s) in the denominator and nothing else: d = 1,
// q = 1, K = (3, 0), V = (1, 0), s = 2 give p_0 = e^3 / (e^3 + 1 + e^2)
// (O_0, computed by hand), lse = log(e^3 + 1 + e^2); the same row with the
// sink written as one more key of score 2 and V = 0 (bias 2, K = 0) gives
// the same O, scale and lse; every key masked leaves O = 0 (scale 0) and
// lse = s with status ok; -inf is no sink; +inf and NaN are refused.
TEST(ExactAttention, SinkLogitJoinsTheDenominatorOnly) {
  const std::vector<double> x = {0, 0}, q = {1}, K = {3, 0}, V = {1, 0};
  const ExactAttention a = exact_attention(x, q, K, V, 1, 1.0, default_bits, 0, 0, 2.0);
  ASSERT_EQ(a.status, RowStatus::ok);
  Mp e3(1200), e2(1200), denom(1200), p0(1200), lse(1200);
  mpfr_set_ui(e3.v, 3, MPFR_RNDN);
  mpfr_exp(e3.v, e3.v, MPFR_RNDN);
  mpfr_set_ui(e2.v, 2, MPFR_RNDN);
  mpfr_exp(e2.v, e2.v, MPFR_RNDN);
  mpfr_add_ui(denom.v, e3.v, 1, MPFR_RNDN);
  mpfr_add(denom.v, denom.v, e2.v, MPFR_RNDN);
  mpfr_div(p0.v, e3.v, denom.v, MPFR_RNDN);
  mpfr_log(lse.v, denom.v, MPFR_RNDN);
  EXPECT_TRUE(relatively_within(raw(a.output[0]), p0.v, -250));
  EXPECT_TRUE(relatively_within(raw(a.scale[0]), p0.v, -250));
  EXPECT_TRUE(lse_within(raw(a.lse), lse.v, -250));

  const ExactAttention as_key = exact_attention(std::vector<double>{0, 0, 2}, q, std::vector<double>{3, 0, 0},
                                                std::vector<double>{1, 0, 0}, 1);
  EXPECT_TRUE(relatively_within(raw(a.output[0]), raw(as_key.output[0]), -250));
  EXPECT_TRUE(relatively_within(raw(a.scale[0]), raw(as_key.scale[0]), -250));
  EXPECT_TRUE(lse_within(raw(a.lse), raw(as_key.lse), -250));

  const std::vector<double> masked = {-inf, -inf};
  const ExactAttention none = exact_attention(masked, q, std::vector<double>{nan, inf}, V, 1, 1.0, default_bits, 0,
                                              0, -1.5);
  ASSERT_EQ(none.status, RowStatus::ok);
  EXPECT_EQ(mpfr_zero_p(raw(none.output[0])), 1);
  EXPECT_EQ(mpfr_zero_p(raw(none.scale[0])), 1);
  EXPECT_EQ(mpfr_cmp_d(raw(none.lse), -1.5), 0);
  EXPECT_EQ(exact_attention(masked, q, K, V, 1).status, RowStatus::all_masked);

  const ExactAttention no_sink = exact_attention(x, q, K, V, 1, 1.0, default_bits, 0, 0, -inf);
  const ExactAttention plain = exact_attention(x, q, K, V, 1);
  EXPECT_EQ(mpfr_cmp(raw(no_sink.output[0]), raw(plain.output[0])), 0);
  EXPECT_EQ(mpfr_cmp(raw(no_sink.lse), raw(plain.lse)), 0);
  for (double bad : {inf, nan})
    EXPECT_THROW(exact_attention(x, q, K, V, 1, 1.0, default_bits, 0, 0, bad), std::invalid_argument) << bad;
  // A sink of 1e300 takes all the mass (the keys' e^(3 - 1e300) is below
  // MPFR's exponent range): lse = 1e300 to 2^-250 relative.
  const ExactAttention huge = exact_attention(x, q, K, V, 1, 1.0, default_bits, 0, 0, 1e300);
  ASSERT_EQ(huge.status, RowStatus::ok);
  EXPECT_TRUE(lse_within(raw(huge.lse), Mp(1200, 1e300).v, -250));
}

// d = 2: the scores carry 1 / (T sqrt(2)). q = (1, 0), K_0 = (1, 0), K_1 = 0
// give z = (1 / (T sqrt 2), 0); V = I reads off p = (1, e^-a) / (1 + e^-a)
// with a = 1 / (T sqrt 2), and lse = log(1 + e^a).
TEST(ExactAttention, TemperatureAndSqrtDScaleTheScores) {
  for (double temperature : {1.0, 0.5, 3.0}) {
    const ExactAttention a = exact_attention(std::vector<double>{0, 0}, std::vector<double>{1, 0},
                                             std::vector<double>{1, 0, 0, 0}, std::vector<double>{1, 0, 0, 1}, 2,
                                             temperature);
    ASSERT_EQ(a.status, RowStatus::ok);
    Mp z(1200), e(1200), denom(1200), p0(1200), p1(1200), lse(1200);
    mpfr_sqrt_ui(z.v, 2, MPFR_RNDN);
    mpfr_mul_d(z.v, z.v, temperature, MPFR_RNDN);
    mpfr_ui_div(z.v, 1, z.v, MPFR_RNDN);  // a
    mpfr_neg(e.v, z.v, MPFR_RNDN);
    mpfr_exp(e.v, e.v, MPFR_RNDN);  // e^-a
    mpfr_add_ui(denom.v, e.v, 1, MPFR_RNDN);
    mpfr_ui_div(p0.v, 1, denom.v, MPFR_RNDN);
    mpfr_div(p1.v, e.v, denom.v, MPFR_RNDN);
    mpfr_log(lse.v, denom.v, MPFR_RNDN);  // log(1 + e^-a) + a
    mpfr_add(lse.v, lse.v, z.v, MPFR_RNDN);
    EXPECT_TRUE(relatively_within(raw(a.output[0]), p0.v, -250)) << temperature;
    EXPECT_TRUE(relatively_within(raw(a.output[1]), p1.v, -250)) << temperature;
    EXPECT_TRUE(lse_within(raw(a.lse), lse.v, -250)) << temperature;
  }
}

// ------------------------------------------------------------------ masking and statuses

// Masked keys (x_j = -inf) with NaN in their K and V rows change nothing:
// the result is that of the row without them.
TEST(ExactAttention, MaskedKeysAreNeverRead) {
  const AttentionRow full{{0.3, -inf, 1.2, -inf, -0.7},
                          {0.5, -1.5},
                          {1, 2, nan, nan, -0.5, 0.25, nan, nan, 3, -1},
                          {2, -1, nan, nan, 0.5, 4, nan, nan, -3, 1e-3},
                          2,
                          0.8};
  const AttentionRow kept{{0.3, 1.2, -0.7}, {0.5, -1.5}, {1, 2, -0.5, 0.25, 3, -1}, {2, -1, 0.5, 4, -3, 1e-3}, 2, 0.8};
  const ExactAttention a = attend(full), b = attend(kept);
  ASSERT_EQ(a.status, RowStatus::ok);
  ASSERT_EQ(b.status, RowStatus::ok);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(within(raw(a.output[i]), raw(b.output[i]), raw(b.scale[i]), -250)) << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), raw(b.scale[i]), -250)) << i;
  }
  EXPECT_TRUE(lse_within(raw(a.lse), raw(b.lse), -250));
}

void expect_no_values(const ExactAttention& a, RowStatus status, unsigned bits, const std::string& what) {
  EXPECT_EQ(a.status, status) << what;
  EXPECT_TRUE(a.output.empty()) << what;
  EXPECT_TRUE(a.scale.empty()) << what;
  EXPECT_EQ(mpfr_get_prec(raw(a.lse)), static_cast<mpfr_prec_t>(bits)) << what;
  if (status == RowStatus::all_masked)
    EXPECT_TRUE(mpfr_inf_p(raw(a.lse)) && mpfr_signbit(raw(a.lse))) << what;  // log of an empty sum
  else
    EXPECT_TRUE(mpfr_nan_p(raw(a.lse))) << what;
}

TEST(ExactAttention, EveryKeyMaskedIsAllMasked) {
  const AttentionRow r{{-inf, -inf}, {1, 2}, {nan, nan, 1, inf}, {nan, 3, -inf, nan}, 2};
  expect_no_values(attend(r, 100), RowStatus::all_masked, 100, "all masked");
}

// +inf or NaN in x, a non-finite q (also with every key masked) or a
// non-finite entry in an unmasked key's K or V row: no exact value exists.
TEST(ExactAttention, NonFiniteInputsAreUndefined) {
  const AttentionRow base{{0.5, -inf, 1}, {1, -1}, {1, 2, nan, nan, 3, 4}, {5, 6, nan, nan, 7, 8}, 2};
  ASSERT_EQ(attend(base).status, RowStatus::ok);
  const auto with = [&](auto change) {
    AttentionRow r = base;
    change(r);
    return attend(r);
  };
  expect_no_values(with([](AttentionRow& r) { r.x[0] = inf; }), RowStatus::undefined, default_bits, "x +inf");
  expect_no_values(with([](AttentionRow& r) { r.x[2] = nan; }), RowStatus::undefined, default_bits, "x NaN");
  expect_no_values(with([](AttentionRow& r) { r.q[1] = nan; }), RowStatus::undefined, default_bits, "q NaN");
  expect_no_values(with([](AttentionRow& r) { r.q[0] = -inf; }), RowStatus::undefined, default_bits, "q -inf");
  expect_no_values(with([](AttentionRow& r) { r.K[4] = nan; }), RowStatus::undefined, default_bits, "K NaN");
  expect_no_values(with([](AttentionRow& r) { r.K[1] = inf; }), RowStatus::undefined, default_bits, "K inf");
  expect_no_values(with([](AttentionRow& r) { r.V[5] = nan; }), RowStatus::undefined, default_bits, "V NaN");
  expect_no_values(with([](AttentionRow& r) { r.V[0] = -inf; }), RowStatus::undefined, default_bits, "V -inf");
  expect_no_values(with([](AttentionRow& r) {
                     r.x = {-inf, -inf, -inf};
                     r.q[0] = nan;
                   }),
                   RowStatus::undefined, default_bits, "q NaN, every key masked");
}

// ------------------------------------------------------------------ precision

// 256-bit results within 4 units of 2^-256 of the 1024-bit ones: O_i of
// s_i, s_i of itself, lse of max(1, |lse|); every Real with exactly `bits`.
void expect_precisions_agree(const AttentionRow& r, const std::string& what) {
  const ExactAttention lo = attend(r, 256), hi = attend(r, 1024);
  ASSERT_EQ(lo.status, RowStatus::ok) << what;
  ASSERT_EQ(hi.status, RowStatus::ok) << what;
  ASSERT_EQ(lo.output.size(), static_cast<std::size_t>(r.d)) << what;
  for (std::size_t i = 0; i < lo.output.size(); ++i) {
    EXPECT_TRUE(within(raw(lo.output[i]), raw(hi.output[i]), raw(hi.scale[i]), -254)) << what << " O_" << i;
    EXPECT_TRUE(relatively_within(raw(lo.scale[i]), raw(hi.scale[i]), -254)) << what << " s_" << i;
    EXPECT_EQ(mpfr_get_prec(raw(lo.output[i])), 256) << what;
    EXPECT_EQ(mpfr_get_prec(raw(lo.scale[i])), 256) << what;
    EXPECT_EQ(mpfr_get_prec(raw(hi.output[i])), 1024) << what;
  }
  EXPECT_TRUE(lse_within(raw(lo.lse), raw(hi.lse), -254)) << what << " lse";
  EXPECT_EQ(mpfr_get_prec(raw(lo.lse)), 256) << what;
}

AttentionRow gaussian_row(std::uint64_t seed, std::int64_t d, std::size_t n, double temperature) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  AttentionRow r{{}, {}, {}, {}, d, temperature};
  for (std::size_t j = 0; j < n; ++j) r.x.push_back(j % 7 == 3 ? -inf : 2 * normal(gen));
  for (std::int64_t i = 0; i < d; ++i) r.q.push_back(normal(gen));
  for (std::size_t k = 0; k < n * static_cast<std::size_t>(d); ++k) {
    r.K.push_back(normal(gen));
    r.V.push_back(normal(gen));
  }
  return r;
}

TEST(ExactAttention, PrecisionsAgreeOnGaussianRows) {
  expect_precisions_agree(gaussian_row(1, 64, 100, 1.0), "gaussian T = 1");
  expect_precisions_agree(gaussian_row(2, 64, 100, 0.37), "gaussian T = 0.37");
}

// Rows that defeat a fixed working precision: biases of +-1e300 next to 0,
// dot products of 1e300 whose differences are O(1), subnormal entries,
// temperatures at both ends of the double range, and O components that
// cancel.
TEST(ExactAttention, PrecisionsAgreeOnExtremeRows) {
  expect_precisions_agree({{1e300, 0, -1e300, 1e300, 0, 1e300},
                           {0.3, -1.7},
                           {1, 2, -1, 0.5, 3, 3, 0.25, -0.75, 1e-3, 1e3, -2, 1},
                           {1, -1, 2, 0.5, -3, 3, 0.25, -0.75, 1e-3, 1e3, -2, 1},
                           2},
                          "biases +-1e300");
  expect_precisions_agree({{0, 0.25, 0},
                           {1e150, 1, 0, 0},
                           {1e150, 0.5, 0, 0, 1e150, -0.5, 0, 0, -1e150, 3, 0, 0},
                           {1, -1, 2, 0, -1, 1, 3, 1e-300, 1e300, 1, 1, 1},
                           4},
                          "dot products 1e300");
  expect_precisions_agree({{0x1p-1074, -0x1p-1074, 0, 1e-310},
                           {0x1p-1074, 0x1p-1060, 1, 0},
                           {0x1p-1070, 3e-320, 0x1p-1074, 1, -0x1p-1074, 0, 0x1p-1022, -2,  //
                            1e-310, 1e-310, 0, 0, 5, 0, 0, 0},
                           {0x1p-1074, -0x1p-1074, 1, -1, 0x1p-1073, 0, -1, 1,  //
                            0, 1e-320, 2, -2, -0x1p-1074, 0, 0, 0},
                           4},
                          "subnormals");
  // Dot products 0.5 + {1, 0, -1} 2^-1074 over T = 2^-1074: scores about
  // 2^1072.5 apart from the origin, O(1) apart from each other.
  expect_precisions_agree({{0, 1e-3, -1e-3}, {1, 0x1p-1074}, {0.5, 1, 0.5, 0, 0.5, -1}, {1, -2, 0.5, 4, -3, 1}, 2,
                           0x1p-1074},
                          "T = 2^-1074");
  // Dot products 0, 1e300 and about -1 over T = 1e300.
  expect_precisions_agree({{0.5, -0.5, 2}, {1e300, -1e300}, {1e300, 1e300, 1, 0, 0, 1e-300}, {1, -2, 0.5, 4, -3, 1}, 2,
                           1e300},
                          "T = 1e300");
  // Keys 0 and 1 score alike with V_1 = -V_0 and key 2 scores 3 + 1/sqrt(2)
  // lower: O = p_2 V_2, of size 2^-1074 e^-3.7 and 1e-20 e^-3.7, while s_0
  // is about 1 and s_1 about 1e-20.
  expect_precisions_agree({{0, 0, -3}, {1, 0}, {1, 0, 1, 0, 0, 0}, {1, 1e-20, -1, -1e-20, 0x1p-1074, 1e-20}, 2},
                          "cancelling O");
}

// The extreme rows' values, not only their agreement: with d = 4 and T = 1
// the scale is 1/2, so scores differing by exact small amounts on top of
// 1e300 (a bias, or a dot product) give p = exact_row of those differences.
TEST(ExactAttention, HugeScoresKeepTheirSmallDifferences) {
  // Biases 1e300 on keys 0, 2 and 3, dot products 2, -1 and 0.5: p over
  // those keys is softmax(1, -0.5, 0.25); key 1 (bias 0) and key 4
  // (-1e300) get exp(-1e300) relative weight.
  const AttentionRow biased{{1e300, 0, 1e300, 1e300, -1e300},
                            {1, 1, 0, 0},
                            {2, 0, 0, 0, 1, 1, 0, 0, -1, 0, 0, 0, 0.5, 0, 0, 0, 3, 0, 0, 0},
                            {1, 0, 0, 2, 5, 5, 5, 5, 0, 1, 0, -1, 0, 0, 1, 0.5, 7, 7, 7, 7},
                            4};
  const ExactRow kept = exact_row(std::vector<double>{1, -0.5, 0.25});
  const std::size_t kept_keys[] = {0, 2, 3};
  // Dot products A + 0.5, A - 0.5 and 3 - A with A = 1e150^2 (both the
  // double 1e150): with the biases, scores A/2 + 0.25 and A/2, 0.25 apart;
  // the third key gets exp(-A) relative weight.
  const AttentionRow dotted{{0, 0.25, 0},
                            {1e150, 1, 0, 0},
                            {1e150, 0.5, 0, 0, 1e150, -0.5, 0, 0, -1e150, 3, 0, 0},
                            {1, -1, 2, 0, -1, 1, 3, 1e-300, 1e300, 1, 1, 1},
                            4};
  const ExactRow pair = exact_row(std::vector<double>{0.25, 0});
  const std::size_t pair_keys[] = {0, 1};

  const auto check = [](const AttentionRow& r, const ExactRow& p, std::span<const std::size_t> keys,
                        const std::string& what) {
    const ExactAttention a = attend(r);
    ASSERT_EQ(a.status, RowStatus::ok) << what;
    for (std::size_t i = 0; i < 4; ++i) {
      Mp want(1100), scale(1100), term(1100);
      mpfr_set_zero(want.v, 1);
      mpfr_set_zero(scale.v, 1);
      for (std::size_t t = 0; t < keys.size(); ++t) {
        mpfr_mul_d(term.v, raw(p.softmax[t]), r.V[keys[t] * 4 + i], MPFR_RNDN);
        mpfr_add(want.v, want.v, term.v, MPFR_RNDN);
        mpfr_abs(term.v, term.v, MPFR_RNDN);
        mpfr_add(scale.v, scale.v, term.v, MPFR_RNDN);
      }
      EXPECT_TRUE(within(raw(a.output[i]), want.v, scale.v, -250)) << what << " O_" << i;
      EXPECT_TRUE(relatively_within(raw(a.scale[i]), scale.v, -250)) << what << " s_" << i;
    }
  };
  check(biased, kept, kept_keys, "biases 1e300");
  check(dotted, pair, pair_keys, "dot products 1e300");
}

// ------------------------------------------------------------------ interface

TEST(ExactAttention, ArgumentErrorsThrow) {
  const std::vector<double> x = {0, 1}, q = {1, 2}, kv = {1, 2, 3, 4};
  const std::vector<double> short_kv = {1, 2, 3}, empty;
  EXPECT_THROW(exact_attention(x, q, kv, kv, 0), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, q, kv, kv, -2), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, std::vector<double>{1}, kv, kv, 2), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, q, short_kv, kv, 2), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, q, kv, short_kv, 2), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, q, kv, std::vector<double>{1, 2, 3, 4, 5, 6}, 2), std::invalid_argument);
  EXPECT_THROW(exact_attention(empty, q, empty, empty, 2), std::invalid_argument);
  for (double t : {0.0, -1.0, inf, nan}) EXPECT_THROW(exact_attention(x, q, kv, kv, 2, t), std::invalid_argument) << t;
  EXPECT_THROW(exact_attention(x, q, kv, kv, 2, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(exact_attention(x, q, kv, kv, 2, 1.0, (1u << 24) + 1), std::invalid_argument);
}

TEST(ExactAttention, ExactValuesGivesOutputOrLse) {
  const ExactAttention a = exact_attention(std::vector<double>{0, 1}, std::vector<double>{1, 2},
                                           std::vector<double>{1, 2, 3, 4}, std::vector<double>{1, 2, 3, 4}, 2);
  const std::span<const Real> o = exact_values(a, OutputKind::attention_output);
  EXPECT_EQ(o.data(), a.output.data());
  EXPECT_EQ(o.size(), 2u);
  const std::span<const Real> lse = exact_values(a, OutputKind::log_sum_exp);
  EXPECT_EQ(lse.data(), &a.lse);
  EXPECT_EQ(lse.size(), 1u);
  for (OutputKind k : {OutputKind::probabilities, OutputKind::log_probabilities, OutputKind::entropy,
                       OutputKind::cross_entropy_loss, OutputKind::none})
    EXPECT_THROW(exact_values(a, k), std::invalid_argument);
}

// Several threads at once (each new thread with MPFR's default state) give
// the serial results bit for bit.
TEST(ExactAttention, ThreadsGiveTheSerialResults) {
  const AttentionRow r = gaussian_row(3, 32, 40, 0.9);
  const ExactAttention serial = attend(r, 300);
  std::vector<ExactAttention> parallel(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < parallel.size(); ++k) threads.emplace_back([&, k] { parallel[k] = attend(r, 300); });
  for (auto& t : threads) t.join();
  for (const ExactAttention& a : parallel) {
    ASSERT_EQ(a.status, RowStatus::ok);
    for (std::size_t i = 0; i < serial.output.size(); ++i) {
      EXPECT_TRUE(mpfr_equal_p(raw(a.output[i]), raw(serial.output[i]))) << i;
      EXPECT_TRUE(mpfr_equal_p(raw(a.scale[i]), raw(serial.scale[i]))) << i;
    }
    EXPECT_TRUE(mpfr_equal_p(raw(a.lse), raw(serial.lse)));
  }
}

}  // namespace
}  // namespace softcheck::oracle
