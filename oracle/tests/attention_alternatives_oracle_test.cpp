// The exact relu and linear attention rows (attention_oracle.hpp): values
// the definitions fix (one key, equal keys, V = 1, a two-key row worked by
// hand), masking, the statuses, the scales, agreement of 256 with 1024 bits
// on Gaussian and extreme rows. Reference values are written out here or
// computed by a direct MPFR evaluation of the definitions in this file
// (no shift, no shared helper), never by the functions under test.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "mpfr_scratch.hpp"
#include "softcheck/attention_oracle.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/test_values.hpp"

namespace softcheck::oracle {
namespace {

using softcheck::test_values::inf;
using softcheck::test_values::nan;

using testing::Mp;
using testing::raw;
using testing::relatively_within;
using testing::within;

struct Row {
  std::vector<double> x, q, K, V;
  std::int64_t d;
  double temperature = 1.0;
};

ExactAttention relu(const Row& r, unsigned bits = default_bits, double resolution = 0) {
  return exact_relu_attention(r.x, r.q, r.K, r.V, r.d, r.temperature, bits, resolution);
}
ExactAttention linear(const Row& r, unsigned bits = default_bits, double resolution = 0) {
  return exact_linear_attention(r.x, r.q, r.K, r.V, r.d, r.temperature, bits, resolution);
}

void expect_values(const ExactAttention& a, const std::vector<double>& O, const std::vector<double>& s,
                   const std::string& what) {
  ASSERT_EQ(a.status, RowStatus::ok) << what;
  ASSERT_EQ(a.output.size(), O.size()) << what;
  ASSERT_EQ(a.scale.size(), s.size()) << what;
  for (std::size_t i = 0; i < O.size(); ++i) {
    EXPECT_EQ(mpfr_cmp_d(raw(a.output[i]), O[i]), 0) << what << " O_" << i << " " << to_string(a.output[i], 20);
    EXPECT_EQ(mpfr_cmp_d(raw(a.scale[i]), s[i]), 0) << what << " s_" << i << " " << to_string(a.scale[i], 20);
  }
}

// 256-bit results within 2^-254 of the 1024-bit ones: O_i of s_i, s_i of
// itself; every Real with exactly `bits`.
template <class F>
void expect_precisions_agree(F exact, const Row& r, const std::string& what) {
  const ExactAttention lo = exact(r, 256, 0.0), hi = exact(r, 1024, 0.0);
  ASSERT_EQ(lo.status, RowStatus::ok) << what;
  ASSERT_EQ(hi.status, RowStatus::ok) << what;
  ASSERT_EQ(lo.output.size(), static_cast<std::size_t>(r.d)) << what;
  for (std::size_t i = 0; i < lo.output.size(); ++i) {
    EXPECT_TRUE(within(raw(lo.output[i]), raw(hi.output[i]), raw(hi.scale[i]), -254)) << what << " O_" << i;
    EXPECT_TRUE(relatively_within(raw(lo.scale[i]), raw(hi.scale[i]), -254)) << what << " s_" << i;
    EXPECT_EQ(mpfr_get_prec(raw(lo.output[i])), 256) << what;
    EXPECT_EQ(mpfr_get_prec(raw(hi.output[i])), 1024) << what;
  }
}

Row gaussian_row(std::uint64_t seed, std::int64_t d, std::size_t n, double temperature) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Row r{{}, {}, {}, {}, d, temperature};
  for (std::size_t j = 0; j < n; ++j) r.x.push_back(j % 7 == 3 ? -inf : 2 * normal(gen));
  for (std::int64_t i = 0; i < d; ++i) r.q.push_back(normal(gen));
  for (std::size_t k = 0; k < n * static_cast<std::size_t>(d); ++k) {
    r.K.push_back(normal(gen));
    r.V.push_back(normal(gen));
  }
  return r;
}

// ------------------------------------------------------------- relu attention

// d = 4, T = 1 (sqrt(d) = 2), q = (1, -1, 2, 0.5):
//   K_0 = (1, 1, 1, 1):  dot 2.5, z_0 = 1.25 + 0,  D_0 = 4.5 / 2 = 2.25
//   K_1 = (-2, 0, 0, 0): dot -2,  z_1 = -1 + 3 = 2, D_1 = 2 / 2 = 1, |x_1| = 3
//   K_2 = (-4, 0, 0, 0): dot -4,  z_2 = -2 + 0: relu 0, D_2 = 2
// O = (1/3)(1.25 V_0 + 2 V_1), s = (1/3)(2.25 |V_0| + 4 |V_1| + 2 |V_2|).
Row relu_hand_row() {
  return {{0, 3, 0},
          {1, -1, 2, 0.5},
          {1, 1, 1, 1, -2, 0, 0, 0, -4, 0, 0, 0},
          {1, 2, -3, 0, 0.5, -1, 1, 4, 3, 3, 3, -3},
          4};
}

TEST(ExactReluAttention, HandComputedRow) {
  // 1.25 V_0 + 2 V_1 = (2.25, 0.5, -1.75, 8); the masses' sum 2.25 |V_0| + 4 |V_1| + 2 |V_2|
  // = (2.25 + 2 + 6, 4.5 + 4 + 6, 6.75 + 4 + 6, 0 + 16 + 6).
  const ExactAttention a = relu(relu_hand_row());
  ASSERT_EQ(a.status, RowStatus::ok);
  const double O[] = {2.25, 0.5, -1.75, 8}, s[] = {10.25, 14.5, 16.75, 22};
  for (std::size_t i = 0; i < 4; ++i) {
    Mp o(300, O[i]), sc(300, s[i]);
    mpfr_div_ui(o.v, o.v, 3, MPFR_RNDN);
    mpfr_div_ui(sc.v, sc.v, 3, MPFR_RNDN);
    EXPECT_TRUE(within(raw(a.output[i]), o.v, sc.v, -250)) << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), sc.v, -250)) << i;
  }
  EXPECT_TRUE(mpfr_nan_p(raw(a.lse)));  // relu attention has no lse
}

// One key: n = 1, O = relu(z_0) V_0 (exact here: z_0 = 1.25), s = (D_0 + |x_0|) |V_0|.
TEST(ExactReluAttention, OneKey) {
  Row r{{0}, {1, -1, 2, 0.5}, {1, 1, 1, 1}, {1, -2, 0.5, 0}, 4};
  expect_values(relu(r), {1.25, -2.5, 0.625, 0}, {2.25, 4.5, 1.125, 0}, "one key");
  r.x = {-1.5};  // z_0 = -0.25: relu 0, O = 0, the scale keeps the mass (2.25 + 1.5) |V|
  expect_values(relu(r), {0, 0, 0, 0}, {3.75, 7.5, 1.875, 0}, "one key below 0");
}

// Equal keys (same K and bias): O = relu(z) times the mean of V over n.
TEST(ExactReluAttention, EqualKeysAverageTheValues) {
  const Row r{{0.5, 0.5, 0.5, 0.5}, {2}, {1, 1, 1, 1}, {1, -3, 0.5, 0x1p-20}, 1};  // z = 2 + 0.5
  expect_values(relu(r), {2.5 * (1 - 3 + 0.5 + 0x1p-20) / 4}, {2.5 * (1 + 3 + 0.5 + 0x1p-20) / 4}, "equal keys");
}

// The temperature divides the dot part only: T = 2 halves it.
TEST(ExactReluAttention, TemperatureScalesTheDotPart) {
  Row r{{1}, {1, -1, 2, 0.5}, {1, 1, 1, 1}, {1, 1, 1, 1}, 4, 2.0};  // z = 2.5 / 4 + 1
  expect_values(relu(r), {1.625, 1.625, 1.625, 1.625}, {2.125, 2.125, 2.125, 2.125}, "T = 2");
}

// Masked keys count in n (the sequence length) and add nothing; their K and
// V are never read (NaN there changes nothing); every key masked gives the
// exact O = 0 with status ok (no policy question).
TEST(ExactReluAttention, MaskedKeysAreNeverReadAndCountInN) {
  Row r = relu_hand_row();
  r.x.push_back(-inf);
  for (int i = 0; i < 4; ++i) {
    r.K.push_back(nan);
    r.V.push_back(i % 2 ? inf : nan);
  }
  const ExactAttention a = relu(r);
  ASSERT_EQ(a.status, RowStatus::ok);
  const double O[] = {2.25, 0.5, -1.75, 8};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(mpfr_cmp_d(raw(a.output[i]), O[i] / 4), 0) << i;
  Row masked = relu_hand_row();
  masked.x = {-inf, -inf, -inf};
  masked.K[0] = nan;
  expect_values(relu(masked), {0, 0, 0, 0}, {0, 0, 0, 0}, "every key masked");
  Row bad = relu_hand_row();
  bad.V[5] = nan;  // an unmasked key's V
  EXPECT_EQ(relu(bad).status, RowStatus::undefined);
  bad = relu_hand_row();
  bad.x[1] = inf;
  EXPECT_EQ(relu(bad).status, RowStatus::undefined);
  bad = masked;
  bad.q[0] = nan;  // q, even with every key masked
  EXPECT_EQ(relu(bad).status, RowStatus::undefined);
}

// The resolution rho adds rho to every product's mass (d rho / (T sqrt d))
// and rho per unmasked key, over n.
TEST(ExactReluAttention, ResolutionFloorsTheScale) {
  const Row r{{0, -inf}, {1, -1, 2, 0.5}, {1, 1, 1, 1, 0, 0, 0, 0}, {1, 0, 0, 0, 5, 5, 5, 5}, 4};
  const double rho = 0x1p-10;
  // Key 0: D_0 = (4.5 + 4 rho) / 2; s_i = ((D_0 + 0) |V_0i| + rho) / 2.
  const double D0 = (4.5 + 4 * rho) / 2;
  expect_values(relu(r, default_bits, rho), {1.25 / 2, 0, 0, 0}, {(D0 + rho) / 2, rho / 2, rho / 2, rho / 2},
                "resolution");
}

TEST(ExactReluAttention, PrecisionsAgree) {
  expect_precisions_agree(relu, gaussian_row(1, 64, 100, 1.0), "gaussian T = 1");
  expect_precisions_agree(relu, gaussian_row(2, 16, 300, 0.37), "gaussian T = 0.37");
  // Scores near 0 from cancelling dot products (relu's kink), biases of
  // +-1e300 next to 0, dot products of 1e300, subnormals, T at both ends.
  expect_precisions_agree(relu,
                          {{1e300, 0, -1e300, 0, 0, -0.5},
                           {0.3, -1.7},
                           {1, 2, -1, 0.5, 3, 3, 0.25, -0.75, 1e-3, 1e3, 17, 3},
                           {1, -1, 2, 0.5, -3, 3, 0.25, -0.75, 1e-3, 1e3, -2, 1},
                           2},
                          "biases +-1e300");
  expect_precisions_agree(relu,
                          {{0, 0, 0},
                           {1e150, 1, 0, 0},
                           {1e150, 0.5, 0, 0, 1e150, -1e150, 0, 0, -1e150, 3, 0, 0},
                           {1, -1, 2, 0, -1, 1, 3, 1e-300, 1e300, 1, 1, 1},
                           4},
                          "dot products 1e300");
  expect_precisions_agree(relu,
                          {{0x1p-1074, -0x1p-1074, 0, 1e-310},
                           {0x1p-1074, 0x1p-1060, 1, 0},
                           {0x1p-1070, 3e-320, 0x1p-1074, 1, -0x1p-1074, 0, 0x1p-1022, -2,  //
                            1e-310, 1e-310, 0, 0, 5, 0, 0, 0},
                           {0x1p-1074, -0x1p-1074, 1, -1, 0x1p-1073, 0, -1, 1,  //
                            0, 1e-320, 2, -2, -0x1p-1074, 0, 0, 0},
                           4},
                          "subnormals");
  expect_precisions_agree(relu, {{0, 1e-3, -1e-3}, {1, 0x1p-1074}, {0.5, 1, 0.5, 0, 0.5, -1}, {1, -2, 0.5, 4, -3, 1}, 2,
                                 0x1p-1074},
                          "T = 2^-1074");
  expect_precisions_agree(relu, {{0.5, -0.5, 2}, {1e300, -1e300}, {1e300, 1e300, 1, 0, 0, 1e-300}, {1, -2, 0.5, 4, -3, 1},
                                 2, 1e300},
                          "T = 1e300");
}

// ----------------------------------------------------------- linear attention

// The definition evaluated directly at 3000 bits for rows with moderate
// biases: a_j = (sum_i phi(q_i / T) phi(K_ji)) exp(x_j), O_i = sum_j a_j
// V_ji / sum_j a_j, s_i = sum_j a_j |V_ji| / sum_j a_j (no shift, no resolution).
void hand_linear(const Row& r, const std::vector<Mp*>& O, const std::vector<Mp*>& s) {
  const auto d = static_cast<std::size_t>(r.d);
  const mpfr_prec_t p = 3000;
  const auto phi = [&](mpfr_ptr y, double t_num, double t_den) {
    Mp t(p, t_num);
    mpfr_div_d(t.v, t.v, t_den, MPFR_RNDN);
    if (mpfr_sgn(t.v) > 0)
      mpfr_add_ui(y, t.v, 1, MPFR_RNDN);
    else
      mpfr_exp(y, t.v, MPFR_RNDN);
  };
  Mp l(p), a(p), pq(p), pk(p), e(p), term(p);
  mpfr_set_zero(l.v, 1);
  for (std::size_t i = 0; i < d; ++i) {
    mpfr_set_zero(O[i]->v, 1);
    mpfr_set_zero(s[i]->v, 1);
  }
  for (std::size_t j = 0; j < r.x.size(); ++j) {
    if (r.x[j] == -inf) continue;
    mpfr_set_zero(a.v, 1);
    for (std::size_t i = 0; i < d; ++i) {
      phi(pq.v, r.q[i], r.temperature);
      phi(pk.v, r.K[j * d + i], 1.0);
      mpfr_mul(term.v, pq.v, pk.v, MPFR_RNDN);
      mpfr_add(a.v, a.v, term.v, MPFR_RNDN);
    }
    mpfr_set_d(e.v, r.x[j], MPFR_RNDN);
    mpfr_exp(e.v, e.v, MPFR_RNDN);
    mpfr_mul(a.v, a.v, e.v, MPFR_RNDN);
    mpfr_add(l.v, l.v, a.v, MPFR_RNDN);
    for (std::size_t i = 0; i < d; ++i) {
      mpfr_mul_d(term.v, a.v, r.V[j * d + i], MPFR_RNDN);
      mpfr_add(O[i]->v, O[i]->v, term.v, MPFR_RNDN);
      mpfr_mul_d(term.v, a.v, std::fabs(r.V[j * d + i]), MPFR_RNDN);
      mpfr_add(s[i]->v, s[i]->v, term.v, MPFR_RNDN);
    }
  }
  for (std::size_t i = 0; i < d; ++i) {
    mpfr_div(O[i]->v, O[i]->v, l.v, MPFR_RNDN);
    mpfr_div(s[i]->v, s[i]->v, l.v, MPFR_RNDN);
  }
}

void expect_matches_definition(const Row& r, const std::string& what) {
  const auto d = static_cast<std::size_t>(r.d);
  std::deque<Mp> store;  // Mp cannot move: a deque keeps them in place
  std::vector<Mp*> O, s;
  for (std::size_t i = 0; i < d; ++i) {
    O.push_back(&store.emplace_back(3000));
    s.push_back(&store.emplace_back(3000));
  }
  hand_linear(r, O, s);
  const ExactAttention a = linear(r);
  ASSERT_EQ(a.status, RowStatus::ok) << what;
  for (std::size_t i = 0; i < d; ++i) {
    EXPECT_TRUE(within(raw(a.output[i]), O[i]->v, s[i]->v, -250)) << what << " O_" << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), s[i]->v, -250)) << what << " s_" << i;
  }
}

// d = 2, T = 1, q = (1, 0): phi(q) = (2, 1). K_0 = (0, 0): phi (1, 1), a_0
// = 3; K_1 = (1, 3): phi (2, 4), a_1 = 8; no bias: w = (3/11, 8/11).
// V_0 = (1, -1), V_1 = (0.5, 2): O = (7/11, 13/11), s = (7/11, 19/11).
TEST(ExactLinearAttention, HandComputedRow) {
  const Row r{{0, 0}, {1, 0}, {0, 0, 1, 3}, {1, -1, 0.5, 2}, 2};
  const ExactAttention a = linear(r);
  ASSERT_EQ(a.status, RowStatus::ok);
  const double O[] = {7, 13}, s[] = {7, 19};
  for (std::size_t i = 0; i < 2; ++i) {
    Mp o(300, O[i]), sc(300, s[i]);
    mpfr_div_ui(o.v, o.v, 11, MPFR_RNDN);
    mpfr_div_ui(sc.v, sc.v, 11, MPFR_RNDN);
    EXPECT_TRUE(within(raw(a.output[i]), o.v, sc.v, -250)) << i;
    EXPECT_TRUE(relatively_within(raw(a.scale[i]), sc.v, -250)) << i;
  }
  EXPECT_TRUE(mpfr_nan_p(raw(a.lse)));  // linear attention has no lse
  // The same row through the definition, and with q's negative branch
  // (phi = exp), a bias and T != 1.
  expect_matches_definition(r, "hand row");
  expect_matches_definition({{0.5, -1.25}, {-1, 0.25}, {0, -2, 1, 3}, {1, -1, 0.5, 2}, 2, 0.7}, "exp branch, bias");
}

TEST(ExactLinearAttention, OneKeyEqualKeysAndUnitValues) {
  // One key: w = 1, O = V_0, s = |V_0| exactly.
  expect_values(linear({{0.3}, {-2, 5}, {7, -1e3}, {3.5, -0x1p-1074}, 2, 0.7}), {3.5, -0x1p-1074}, {3.5, 0x1p-1074},
                "one key");
  // Equal keys and biases: the mean of V.
  expect_values(linear({{-1, -1, -1, -1}, {0.5}, {2, 2, 2, 2}, {1, -3, 0.5, 0x1p-20}, 1}),
                {(1 - 3 + 0.5 + 0x1p-20) / 4}, {(1 + 3 + 0.5 + 0x1p-20) / 4}, "equal keys");
  // V = 1: O = sum_j w_j = 1 (mass conservation), s = 1.
  Row r = gaussian_row(3, 16, 50, 0.7);
  r.V.assign(r.V.size(), 1.0);
  const ExactAttention a = linear(r);
  ASSERT_EQ(a.status, RowStatus::ok);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_TRUE(within(raw(a.output[i]), Mp(64, 1.0).v, Mp(64, 1.0).v, -250)) << i;
    EXPECT_TRUE(within(raw(a.scale[i]), Mp(64, 1.0).v, Mp(64, 1.0).v, -250)) << i;
  }
}

// The bias is a log-weight: a key of bias x + c weighs e^c times one of bias
// x with the same K; a huge bias makes its key the only one; the
// temperature divides q (T = 0.5 differs from T = 1).
TEST(ExactLinearAttention, BiasIsALogWeightAndTemperatureActs) {
  expect_matches_definition({{0, 2.5, -3}, {0.25, -0.5}, {1, 1, 1, 1, -2, 0.5}, {1, 0, 0, 1, 5, -5}, 2}, "biases");
  const ExactAttention dominant = linear({{0, 1e300, -1e300}, {0.25, -0.5}, {1, 1, 1, 1, -2, 0.5}, {1, 0, 0, 1, 5, -5}, 2});
  expect_values(dominant, {0, 1}, {0, 1}, "bias 1e300");
  Row r = gaussian_row(4, 8, 20, 1.0);
  const ExactAttention one = linear(r);
  r.temperature = 0.5;
  const ExactAttention half = linear(r);
  expect_matches_definition(r, "T = 0.5");
  ASSERT_EQ(one.status, RowStatus::ok);
  ASSERT_EQ(half.status, RowStatus::ok);
  bool differs = false;
  for (std::size_t i = 0; i < 8; ++i) differs = differs || mpfr_cmp(raw(one.output[i]), raw(half.output[i])) != 0;
  EXPECT_TRUE(differs);
}

TEST(ExactLinearAttention, MaskedKeysAndStatuses) {
  const Row base{{0, 0}, {1, 0}, {0, 0, 1, 3}, {1, -1, 0.5, 2}, 2};
  Row r = base;
  r.x.push_back(-inf);
  r.K.insert(r.K.end(), {nan, inf});
  r.V.insert(r.V.end(), {-inf, nan});
  const ExactAttention a = linear(r), b = linear(base);
  ASSERT_EQ(a.status, RowStatus::ok);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(mpfr_cmp(raw(a.output[i]), raw(b.output[i])), 0) << i;
    EXPECT_EQ(mpfr_cmp(raw(a.scale[i]), raw(b.scale[i])), 0) << i;
  }
  Row masked = base;
  masked.x = {-inf, -inf};
  masked.V[0] = nan;
  EXPECT_EQ(linear(masked).status, RowStatus::all_masked);  // 0/0: the kernel's policy
  EXPECT_TRUE(linear(masked).output.empty());
  Row bad = base;
  bad.K[1] = -0x1p61;  // phi would leave MPFR's exponent range
  EXPECT_EQ(linear(bad).status, RowStatus::undefined);
  bad = base;
  bad.q[1] = -1;
  bad.temperature = 0x1p-62;  // q / T = -2^62
  EXPECT_EQ(linear(bad).status, RowStatus::undefined);
  bad = base;
  bad.V[3] = inf;
  EXPECT_EQ(linear(bad).status, RowStatus::undefined);
  EXPECT_THROW(exact_linear_attention(base.x, base.q, base.K, base.V, 3, 1.0), std::invalid_argument);
  EXPECT_THROW(exact_relu_attention(base.x, base.q, base.K, base.V, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(exact_linear_attention(base.x, base.q, base.K, base.V, 2, 1.0, default_bits, -1), std::invalid_argument);
}

TEST(ExactLinearAttention, PrecisionsAgree) {
  expect_precisions_agree(linear, gaussian_row(5, 64, 100, 1.0), "gaussian T = 1");
  expect_precisions_agree(linear, gaussian_row(6, 16, 300, 0.37), "gaussian T = 0.37");
  // Biases +-1e300 and K of +-1e300 (phi = K + 1 and exp(-1e300) = 0 in
  // any double, not in MPFR: below -2^60 is refused, so -1e15 here),
  // subnormals, T at both ends.
  expect_precisions_agree(linear,
                          {{1e300, 0, -1e300, 1e300, 0, 1e300},
                           {0.3, -1.7},
                           {1, 2, -1, 0.5, 3, 3, 0.25, -0.75, 1e-3, 1e3, -2, 1},
                           {1, -1, 2, 0.5, -3, 3, 0.25, -0.75, 1e-3, 1e3, -2, 1},
                           2},
                          "biases +-1e300");
  expect_precisions_agree(linear,
                          {{0, 0.25, 0},
                           {1e150, 1, -3, 0},
                           {1e300, 0.5, 0, -1e15, 1e150, -0.5, 0, 0, -1e15, 3, -1e15, 0},
                           {1, -1, 2, 0, -1, 1, 3, 1e-300, 1e300, 1, 1, 1},
                           4},
                          "K of 1e300 and -1e15");
  expect_precisions_agree(linear,
                          {{0x1p-1074, -0x1p-1074, 0, 1e-310},
                           {0x1p-1074, 0x1p-1060, 1, 0},
                           {0x1p-1070, 3e-320, 0x1p-1074, 1, -0x1p-1074, 0, 0x1p-1022, -2,  //
                            1e-310, 1e-310, 0, 0, 5, 0, 0, 0},
                           {0x1p-1074, -0x1p-1074, 1, -1, 0x1p-1073, 0, -1, 1,  //
                            0, 1e-320, 2, -2, -0x1p-1074, 0, 0, 0},
                           4},
                          "subnormals");
  expect_precisions_agree(linear, {{0, 1e-3, -1e-3}, {1, 0x1p-1074}, {0.5, 1, 0.5, 0, 0.5, -1}, {1, -2, 0.5, 4, -3, 1},
                                   2, 0x1p-1074},
                          "T = 2^-1074");
  expect_precisions_agree(linear, {{0.5, -0.5, 2}, {1e300, -1e300}, {1e300, 1e300, 1, 0, 0, 1e-300},
                                   {1, -2, 0.5, 4, -3, 1}, 2, 1e300},
                          "T = 1e300");
}

TEST(ExactAttentionAlternatives, ExactValuesGivesTheOutput) {
  const ExactAttention r = relu(relu_hand_row()), l = linear({{0, 0}, {1, 0}, {0, 0, 1, 3}, {1, -1, 0.5, 2}, 2});
  EXPECT_EQ(exact_values(r, OutputKind::relu_attention_output).data(), r.output.data());
  EXPECT_EQ(exact_values(l, OutputKind::linear_attention_output).data(), l.output.data());
}

}  // namespace
}  // namespace softcheck::oracle
