// The row judge (judge.hpp): the one place a row's verdict is decided. Its
// tiers must agree with MPFR alone, its verdicts must flip exactly where the
// bound is crossed, masked rows follow the policy, and sparse rows count
// support mismatches apart from the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "softcheck/judge.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::oracle {
namespace {

OpDecl with_contract(Op op, double a) {
  OpDecl d{op, {}};
  d.contract.declared = true;
  d.contract.a = a;
  d.contract.why = "test";
  return d;
}

// The correctly rounded f32 values of the op's exact row.
std::vector<double> rounded(const std::vector<double>& x, Op op) {
  const ExactRow e = exact_row(x);
  std::vector<double> y;
  for (const Real& v : exact_values(e, spec(op).out[0].kind)) y.push_back(round_to(v, Format::f32));
  return y;
}

TEST(RowJudge, CorrectlyRoundedRowsHoldInEveryTierOrder) {
  const std::vector<double> x = {1, 2, 3, -INFINITY, 0.5};
  for (Op op : {Op::softmax, Op::log_softmax, Op::lse, Op::entropy}) {
    const OpDecl d = with_contract(op, 1);
    const std::vector<double> y = rounded(x, op);
    RowJudge tiered(x, 1.0, Format::f32);
    RowJudge mpfr(x, 1.0, Format::f32, JudgeOptions::exact_only());
    const RowVerdict a = tiered.judge(d, MaskedRowPolicy::zeros, y);
    const RowVerdict b = mpfr.judge(d, MaskedRowPolicy::zeros, y);
    EXPECT_TRUE(a.holds()) << name(op) << ": " << explain(a, d, y, tiered);
    EXPECT_TRUE(b.holds()) << name(op);
    EXPECT_EQ(b.tier, Tier::mpfr);
    EXPECT_EQ(a.tier == Tier::mpfr, !spec(op).fast_tier) << name(op);  // the fast tiers decide what they know
    EXPECT_NEAR(a.error.max_ulp, b.error.max_ulp, 1e-3) << name(op);
    EXPECT_TRUE(mpfr.used_mpfr());
  }
}

// A judge reused row to row (as the suite does) keeps a row's shape for that
// row's verdicts only: each verdict's shape and bound are those of the row
// it was given, in whatever order rows and temperatures come.
TEST(RowJudge, ReusedJudgeTakesEachRowsOwnShape) {
  const std::vector<std::vector<double>> rows = {{1, 2, 3}, {-40, 0, 7.5, -INFINITY}, {1, 2, 3}};
  const OpDecl d = with_contract(Op::softmax, 1);
  RowJudge judge(Format::f32);
  for (const double t : {1.0, 0.25})
    for (const auto& x : rows) {
      judge.set_row(x, t);
      const RowVerdict v = judge.judge(d, MaskedRowPolicy::zeros, rounded(x, Op::softmax));
      const RowShape want = row_shape(x, t, Format::f32);
      EXPECT_EQ(v.shape.n, want.n);
      EXPECT_EQ(v.shape.R, want.R) << x[0] << " T=" << t;
      EXPECT_EQ(v.shape.M, want.M) << x[0] << " T=" << t;
      EXPECT_EQ(v.bound, d.contract.bound_ulps(want, Format::f32));
    }
}

// Signed errors (JudgeOptions::signed_errors, the report's bias figures):
// outputs moved up and down by whole ulps carry those signs in every tier,
// the fast tier's figures within its tolerance of MPFR's.
TEST(RowJudge, SignedErrorsCarryTheSideInEveryTier) {
  const std::vector<double> x = {0.25, -1.5, 2, -INFINITY, 0.75};
  for (Op op : {Op::softmax, Op::log_softmax, Op::lse}) {
    std::vector<double> y = rounded(x, op);
    const std::size_t up = 0, down = y.size() > 1 ? 2 : 0;
    y[up] = std::nextafter(std::nextafter(static_cast<float>(y[up]), INFINITY), INFINITY);  // 1.5 to 2.5 ulp high
    if (down != up) y[down] = std::nextafter(static_cast<float>(y[down]), -INFINITY);  // 0.5 to 1.5 ulp low
    JudgeOptions fast, exact = JudgeOptions::exact_only();
    fast.signed_errors = exact.signed_errors = true;
    RowJudge tiered(x, 1.0, Format::f32, fast), mpfr(x, 1.0, Format::f32, exact);
    const OpDecl d = with_contract(op, 4);
    const RowVerdict a = tiered.judge(d, MaskedRowPolicy::zeros, y), b = mpfr.judge(d, MaskedRowPolicy::zeros, y);
    // The fast tier itself decides the ops it knows (else its sign logic would go untested).
    EXPECT_EQ(a.tier == Tier::mpfr, !spec(op).fast_tier) << name(op);
    ASSERT_EQ(a.element_signed.size(), y.size()) << name(op);
    ASSERT_EQ(b.element_signed.size(), y.size()) << name(op);
    EXPECT_GE(b.element_signed[up], 1.5) << name(op);
    EXPECT_GT(b.element_signed_rel[up], 0) << name(op);
    if (down != up) {
      EXPECT_LE(b.element_signed[down], -0.5) << name(op);
      EXPECT_LT(b.element_signed_rel[down], 0) << name(op);
    }
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(b.element_signed[i])) {
        EXPECT_TRUE(std::isnan(a.element_signed[i])) << name(op) << " " << i;
        continue;
      }
      EXPECT_NEAR(a.element_signed[i], b.element_signed[i], 1e-3) << name(op) << " " << i;
      EXPECT_LE(std::fabs(b.element_signed[i]), b.error.max_ulp) << name(op) << " " << i;
    }
    // Without the option nothing is filled (the other checkers pay nothing).
    RowJudge plain(x, 1.0, Format::f32);
    EXPECT_TRUE(plain.judge(d, MaskedRowPolicy::zeros, y).element_signed.empty());
  }
}

// The relative signed errors (the report's mean_signed_rel) as MPFR gives
// them, including where a fast tier encloses the value as 0: e^-800 (a
// softmax entry far below f32, rounded to 0: -1), the maximum's log-softmax
// -log1p(e^-800) (rounded to 0: +1), a masked entry's -inf (0).
TEST(RowJudge, SignedRelativeErrorsAreMpfrsInEveryTier) {
  const std::vector<double> x = {0, -800, -INFINITY};
  for (Op op : {Op::softmax, Op::log_softmax, Op::entropy}) {
    const std::vector<double> y = rounded(x, op);
    JudgeOptions fast, exact = JudgeOptions::exact_only();
    fast.signed_errors = exact.signed_errors = true;
    RowJudge tiered(x, 1.0, Format::f32, fast), mpfr(x, 1.0, Format::f32, exact);
    const OpDecl d = with_contract(op, 4);
    const RowVerdict a = tiered.judge(d, MaskedRowPolicy::zeros, y), b = mpfr.judge(d, MaskedRowPolicy::zeros, y);
    ASSERT_NE(a.tier, Tier::mpfr) << name(op);
    ASSERT_EQ(a.element_signed_rel.size(), b.element_signed_rel.size()) << name(op);
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(b.element_signed_rel[i])) {
        EXPECT_TRUE(std::isnan(a.element_signed_rel[i])) << name(op) << " " << i;
        continue;
      }
      EXPECT_NEAR(a.element_signed_rel[i], b.element_signed_rel[i], 1e-9) << name(op) << " " << i;
      EXPECT_NEAR(a.element_signed[i], b.element_signed[i], 1e-3) << name(op) << " " << i;
    }
    if (op == Op::softmax) {
      EXPECT_EQ(b.element_signed_rel[1], -1.0);
    } else if (op == Op::log_softmax) {
      EXPECT_EQ(b.element_signed_rel[0], 1.0);
      EXPECT_EQ(b.element_signed_rel[2], 0.0);
    }
  }
}

TEST(RowJudge, TheVerdictFlipsWhereTheBoundIsCrossed) {
  const std::vector<double> x = {0.25, -1.5, 2};
  std::vector<double> y = rounded(x, Op::softmax);
  y[1] = std::nextafter(std::nextafter(static_cast<float>(y[1]), 1.0f), 1.0f);  // 2 ulps up: 1.5 to 2.5 ulps off
  RowJudge judge(x, 1.0, Format::f32);
  const RowVerdict loose = judge.judge(with_contract(Op::softmax, 3), MaskedRowPolicy::nan, y);
  const RowVerdict tight = judge.judge(with_contract(Op::softmax, 1), MaskedRowPolicy::nan, y);
  EXPECT_TRUE(loose.within);
  EXPECT_FALSE(tight.within);
  EXPECT_GT(tight.error.max_ulp, 1.4);
  EXPECT_EQ(tight.error.worst_index, 1u);
  const std::string why = explain(tight, with_contract(Op::softmax, 1), y, judge);
  EXPECT_NE(why.find("> bound"), std::string::npos) << why;
  EXPECT_NE(why.find("at [1]"), std::string::npos) << why;
  // A NaN output where the exact value is finite is broken whatever the bound.
  y[0] = NAN;
  const RowVerdict broken = judge.judge(with_contract(Op::softmax, 1e9), MaskedRowPolicy::nan, y);
  EXPECT_TRUE(broken.broken);
  EXPECT_FALSE(broken.holds());
  EXPECT_NE(explain(broken, with_contract(Op::softmax, 1e9), y, judge).find("NaN/inf"), std::string::npos);
}

// A judge takes the figures it decided for a result row again when the same
// row, bit for bit, comes for an output of the same kind on the same input
// row (kernels that share code hand it identical rows), and only then: every
// verdict equals a fresh judge's, after a different kind, a nudged element
// and a new input row of the same length.
std::size_t three_bins(double e) { return e < 0.5 ? 0 : e < 4 ? 1 : 2; }

void expect_same_verdict(const RowVerdict& a, const RowVerdict& b, const std::string& what) {
  const auto same_bits = [](const std::vector<double>& p, const std::vector<double>& q) {
    return p.size() == q.size() && (p.empty() || std::memcmp(p.data(), q.data(), p.size() * sizeof(double)) == 0);
  };
  EXPECT_EQ(a.tier, b.tier) << what;
  EXPECT_EQ(a.within, b.within) << what;
  EXPECT_EQ(a.broken, b.broken) << what;
  EXPECT_EQ(a.bound, b.bound) << what;
  EXPECT_EQ(a.uncertainty, b.uncertainty) << what;
  EXPECT_EQ(a.error.max_ulp, b.error.max_ulp) << what;
  EXPECT_EQ(a.error.sum_ulp, b.error.sum_ulp) << what;
  EXPECT_EQ(a.error.worst_index, b.error.worst_index) << what;
  EXPECT_EQ(a.error.nonfinite, b.error.nonfinite) << what;
  EXPECT_TRUE(same_bits(a.element_error, b.element_error)) << what;
  EXPECT_TRUE(same_bits(a.element_signed, b.element_signed)) << what;
  EXPECT_TRUE(same_bits(a.element_signed_rel, b.element_signed_rel)) << what;
}

TEST(RowJudge, AResultRowJudgedAgainTakesItsFiguresOnlyWhenAllMatches) {
  JudgeOptions opt;
  opt.element_bin = three_bins;
  opt.signed_errors = true;
  const std::vector<double> x1 = {0.25, -1.5, 2, 7, -3}, x2 = {1, 2, 3, 4, 5.5};
  for (Format f : {Format::f32, Format::f64}) {
    std::vector<double> sm, ls;
    const ExactRow e = exact_row(x1);
    for (const Real& v : e.softmax) sm.push_back(round_to(v, f));
    for (const Real& v : e.log_softmax) ls.push_back(round_to(v, f));
    std::vector<double> nudged = sm;
    nudged[2] = f == Format::f32 ? std::nextafter(static_cast<float>(nudged[2]), 1.0f) : std::nextafter(nudged[2], 1.0);
    const OpDecl softmax = with_contract(Op::softmax, 1), loose = with_contract(Op::softmax, 50),
                 log_softmax = with_contract(Op::log_softmax, 1);
    RowJudge judge(f, opt);
    const auto check = [&](const std::vector<double>& x, const OpDecl& d, const std::vector<double>& y,
                           const std::string& what) {
      RowJudge fresh(x, 1.0, f, opt);
      expect_same_verdict(judge.judge(d, MaskedRowPolicy::zeros, y), fresh.judge(d, MaskedRowPolicy::zeros, y),
                          std::string(name(f)) + ": " + what);
    };
    judge.set_row(x1, 1.0);
    check(x1, softmax, sm, "softmax");
    check(x1, loose, sm, "the same row, another contract");
    check(x1, log_softmax, sm, "the same numbers as log-softmax outputs");
    check(x1, log_softmax, ls, "log-softmax");
    check(x1, softmax, nudged, "one element a step up");
    check(x1, softmax, sm, "softmax again");
    judge.set_row(x2, 1.0);
    check(x2, softmax, sm, "the first row's softmax on another row");
    check(x2, log_softmax, ls, "the first row's log-softmax on another row");
  }
  // Rows beyond 65,536 values keep fewer (here 7): 9 different result rows,
  // then the first again, each as a fresh judge has it.
  std::vector<double> x(131073);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 11) * 0.5;
  const DoubleFastRow tier = double_fast_row(x, 1.0);
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(tier.softmax[i]);
  const OpDecl softmax = with_contract(Op::softmax, 2);
  RowJudge judge(x, 1.0, Format::f32, opt);
  for (std::size_t k = 0; k <= 9; ++k) {
    std::vector<double> yk = y;
    const std::size_t at = (k % 9) * 1000;  // the 10th row is the first again
    yk[at] = std::nextafter(static_cast<float>(yk[at]), 1.0f);
    RowJudge fresh(x, 1.0, Format::f32, opt);
    expect_same_verdict(judge.judge(softmax, MaskedRowPolicy::zeros, yk),
                        fresh.judge(softmax, MaskedRowPolicy::zeros, yk), "long row " + std::to_string(k));
  }
}

TEST(RowJudge, FullyMaskedRowsFollowThePolicy) {
  const std::vector<double> x(3, -INFINITY);
  RowJudge judge(x, 1.0, Format::f32);
  EXPECT_EQ(judge.status(), RowStatus::all_masked);
  const OpDecl sm = with_contract(Op::softmax, 1), lse = with_contract(Op::lse, 1), h = with_contract(Op::entropy, 1);
  EXPECT_TRUE(judge.judge(sm, MaskedRowPolicy::zeros, std::vector<double>(3, 0.0)).holds());
  EXPECT_FALSE(judge.judge(sm, MaskedRowPolicy::zeros, std::vector<double>(3, NAN)).holds());
  EXPECT_TRUE(judge.judge(sm, MaskedRowPolicy::uniform, std::vector<double>(3, static_cast<float>(1.0 / 3))).holds());
  EXPECT_TRUE(judge.judge(lse, MaskedRowPolicy::zeros, std::vector<double>{-INFINITY}).holds());
  EXPECT_TRUE(judge.judge(lse, MaskedRowPolicy::nan, std::vector<double>{NAN}).holds());
  EXPECT_FALSE(judge.judge(lse, MaskedRowPolicy::zeros, std::vector<double>{0.0}).holds());
  EXPECT_TRUE(judge.judge(h, MaskedRowPolicy::zeros, std::vector<double>{0.0}).holds());
  EXPECT_FALSE(judge.judge(h, MaskedRowPolicy::uniform, std::vector<double>{0.0}).holds());
  EXPECT_FALSE(judge.used_mpfr());  // no exact value is needed to judge a policy
}

TEST(RowJudge, SparseRowsCountSupportMismatchesApart) {
  // sparsemax([1, 0.5, -3]) = (0.75, 0.25, 0): a kernel giving (1, 0, 0) has
  // one false zero (0.25 does not round to 0) and an error on the first entry only.
  const std::vector<double> x = {1, 0.5, -3};
  const OpDecl d = with_contract(Op::sparsemax, 1);
  RowJudge judge(x, 1.0, Format::f32);
  const std::vector<double> y = {1, 0, 0};
  const RowVerdict v = judge.judge(d, MaskedRowPolicy::zeros, y);
  EXPECT_EQ(v.false_zeros, 1u);
  EXPECT_EQ(v.false_nonzeros, 0u);
  ASSERT_EQ(v.measured_index.size(), 1u);
  EXPECT_EQ(v.measured_index[0], 0u);
  EXPECT_FALSE(v.within);
  EXPECT_TRUE(judge.used_mpfr());
  // A non-zero where the exact value is 0 is a false non-zero.
  const RowVerdict w = judge.judge(d, MaskedRowPolicy::zeros, std::vector<double>{0.75, 0.25, 0.125});
  EXPECT_EQ(w.false_nonzeros, 1u);
  EXPECT_TRUE(w.within);  // the measured entries are exact
}

// An op with several outputs (softmax_lse: the row y and its lse) is judged
// output by output, each in its own metric against its own contract: a wrong
// lse next to a right row fails the lse only, and the row's verdict comes
// from the fast tiers as softmax's does.
TEST(RowJudge, EachOutputOfAnOpWithSeveralIsJudgedOnItsOwn) {
  const std::vector<double> x = {1, 2, 3, -INFINITY, 0.5};
  OpDecl d = with_contract(Op::softmax_lse, 1);
  Contract lse_contract;
  lse_contract.declared = true;
  lse_contract.a = 2;  // 2u absolute
  d.further_contracts = {lse_contract};
  const std::vector<double> y = rounded(x, Op::softmax);
  std::vector<double> lse = rounded(x, Op::lse);
  RowJudge judge(x, 1.0, Format::f32);
  const RowVerdict row = judge.judge(d, MaskedRowPolicy::nan, y, 0);
  EXPECT_TRUE(row.holds());
  EXPECT_NE(row.tier, Tier::mpfr);  // the row output has the softmax fast tier
  EXPECT_TRUE(judge.judge(d, MaskedRowPolicy::nan, lse, 1).holds());
  // 8 ulps of f32 at lse ~ 3.47 (ulp 2^-22 = 4u) are 32u absolute: over 2u.
  lse[0] = std::nextafter(static_cast<float>(lse[0]), 10.0f);
  for (int i = 0; i < 7; ++i) lse[0] = std::nextafter(static_cast<float>(lse[0]), 10.0f);
  const RowVerdict bad = judge.judge(d, MaskedRowPolicy::nan, lse, 1);
  EXPECT_FALSE(bad.holds());
  EXPECT_EQ(bad.tier, Tier::fast_double);  // the lse has its fast tier too (scalar_enclosure)
  EXPECT_NEAR(bad.error.max_ulp, 32, 1);  // units of u: the lse output's metric is absolute
  const std::string why = explain(bad, d, lse, judge, 1);
  EXPECT_NE(why.find("u (absolute)"), std::string::npos) << why;
  EXPECT_NE(why.find("bound 2"), std::string::npos) << why;
  EXPECT_TRUE(judge.judge(d, MaskedRowPolicy::nan, y, 0).holds());  // the row is unaffected
  EXPECT_THROW(judge.judge(d, MaskedRowPolicy::nan, lse, 2), std::invalid_argument);
  // A fully masked row: y follows the policy, lse = -inf is its exact value.
  const std::vector<double> masked(3, -INFINITY);
  RowJudge on_masked(masked, 1.0, Format::f32);
  EXPECT_TRUE(on_masked.judge(d, MaskedRowPolicy::zeros, std::vector<double>(3, 0.0), 0).holds());
  EXPECT_TRUE(on_masked.judge(d, MaskedRowPolicy::zeros, std::vector<double>{-INFINITY}, 1).holds());
  EXPECT_FALSE(on_masked.judge(d, MaskedRowPolicy::zeros, std::vector<double>{0.0}, 1).holds());
}

// A query's window (KeyWindow) makes the judge's row the bias with the keys
// outside the window masked: causal at position 1 of three keys hides key 2
// (score 20 above the others, V = 100), so O is V_0 and V_1's mean exactly;
// the unbounded window sees key 2 and O is near 100. A window the row cannot
// take is refused.
TEST(RowJudge, AQueryWindowMasksTheKeysOutsideIt) {
  const std::vector<double> x = {0, 0, 20}, q = {1}, K = {1, 1, 1}, V = {2, 4, 100};
  OpDecl d = with_contract(Op::attention, 1);
  d.further_contracts = {d.contract};
  RowJudge j(x, 1.0, Format::f32, JudgeOptions::exact_only());
  j.set_attention(q, K, V, 1, KeyWindow{1, -1, 0});
  const std::span<const Real> causal = j.exact_output(d, 0);
  ASSERT_EQ(causal.size(), 1u);
  EXPECT_EQ(causal[0], Real(3));
  const std::vector<double> O = {3};
  EXPECT_TRUE(j.judge(d, MaskedRowPolicy::zeros, O, 0).holds());
  j.set_attention(q, K, V, 1, KeyWindow{});  // the given row again: key 2 dominates
  EXPECT_GT(j.exact_output(d, 0)[0], Real(99));
  EXPECT_FALSE(j.judge(d, MaskedRowPolicy::zeros, O, 0).holds());
  // Key 0 alone: (0, 0) at position 0.
  j.set_attention(q, K, V, 1, KeyWindow{0, 0, 0});
  EXPECT_EQ(j.exact_output(d, 0)[0], Real(2));
  EXPECT_THROW(j.set_attention(q, K, V, 1, KeyWindow{3, -1, 0}), std::invalid_argument);
  EXPECT_THROW(j.set_attention(q, K, V, 1, KeyWindow{0, -2, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace softcheck::oracle
