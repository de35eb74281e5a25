// The exact gradients (oracle.hpp exact_cross_entropy, exact_backward) and
// the scaled metric they are measured in (metrics.hpp): known values, the
// identities the gradients obey, agreement across precisions, and the judge
// deciding with the target or the upstream gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "softcheck/judge.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::oracle {
namespace {

double d(const Real& v) { return static_cast<double>(v); }

const Operand& loss_operand() { return spec(Op::cross_entropy).out[0]; }
const Operand& gradient_operand() { return spec(Op::cross_entropy).out[1]; }

TEST(ExactCrossEntropy, KnownValues) {
  // x = [0, 0]: p = [1/2, 1/2], loss log 2, gradient [-1/2, 1/2] for t = 0.
  const ExactRow row = exact_row(std::vector<double>{0, 0});
  const ExactCrossEntropy ce = exact_cross_entropy(row, 0);
  EXPECT_DOUBLE_EQ(d(ce.loss), std::log(2.0));
  EXPECT_EQ(d(ce.gradient[0]), -0.5);
  EXPECT_EQ(d(ce.gradient[1]), 0.5);
  EXPECT_EQ(d(ce.scale[0]), 1.5);
  EXPECT_EQ(d(ce.scale[1]), 0.5);
  // x = [1, 2, 3], t = 2: loss = log(1 + e^-1 + e^-2) (libm in double, 1e-15).
  const ExactCrossEntropy c3 = exact_cross_entropy(exact_row(std::vector<double>{1, 2, 3}), 2);
  EXPECT_NEAR(d(c3.loss), std::log1p(std::exp(-1.0) + std::exp(-2.0)), 1e-15);
}

// A confident correct prediction: p_t = 1 / (1 + e^-60), so loss ~ e^-60
// and p_t - 1 ~ -e^-60, far below what 1 - p_t in double could hold.
TEST(ExactCrossEntropy, ConfidentTargetKeepsItsRelativeAccuracy) {
  const ExactCrossEntropy ce = exact_cross_entropy(exact_row(std::vector<double>{60, 0}), 0);
  const double e = std::exp(-60.0);
  EXPECT_NEAR(d(ce.loss) / e, 1.0, 1e-15);
  EXPECT_NEAR(-d(ce.gradient[0]) / e, 1.0, 1e-15);
  EXPECT_NEAR(d(ce.gradient[1]) / e, 1.0, 1e-15);
}

// The gradient sums to 0 (exactly in MPFR up to 2^-bits of its terms), and
// the loss is -log_softmax_t, for every target of a row with masked entries.
TEST(ExactCrossEntropy, GradientSumsToZeroAndLossIsMinusLogSoftmax) {
  const std::vector<double> x = {0.25, -3, -INFINITY, 7.5, 7.5, -1e3};
  const ExactRow row = exact_row(x, 0.7, 512);
  for (std::int64_t t = 0; t < static_cast<std::int64_t>(x.size()); ++t) {
    const ExactCrossEntropy ce = exact_cross_entropy(row, t, 512);
    const PrecisionScope scope(1100);  // the sums below: exact for these terms
    Real total = 0, abs_total = 0;
    for (const Real& g : ce.gradient) {
      total += g;
      abs_total += abs(g);
    }
    EXPECT_LE(std::fabs(d(total)), 1e-150 * d(abs_total)) << "t = " << t;
    if (std::isinf(x[static_cast<std::size_t>(t)])) {
      EXPECT_EQ(d(ce.loss), INFINITY);  // a masked target: p_t = 0
    } else {
      EXPECT_EQ(d(ce.loss), -d(row.log_softmax[static_cast<std::size_t>(t)]));
    }
    EXPECT_EQ(d(ce.gradient[2]), t == 2 ? -1.0 : 0.0);  // the masked entry: p = 0
    EXPECT_EQ(d(ce.scale[2]), t == 2 ? 1.0 : 0.0);
  }
}

// 256 and 1024 bits agree to 2^-250 relative (the loss and every gradient entry).
TEST(ExactCrossEntropy, AgreesAcrossPrecisions) {
  const std::vector<double> x = {1e-3, 30, -17.25, 29.999, 0x1p-60};
  const ExactCrossEntropy lo = exact_cross_entropy(exact_row(x, 1.3, 256), 3, 256);
  const ExactCrossEntropy hi = exact_cross_entropy(exact_row(x, 1.3, 1024), 3, 1024);
  const auto close = [](const Real& a, const Real& b) {
    const PrecisionScope scope(1100);
    const Real diff = a - b;
    return std::fabs(d(diff)) <= std::ldexp(std::fabs(d(b)), -250);
  };
  EXPECT_TRUE(close(lo.loss, hi.loss));
  for (std::size_t j = 0; j < x.size(); ++j) EXPECT_TRUE(close(lo.gradient[j], hi.gradient[j])) << j;
}

TEST(ExactCrossEntropy, IgnoredRowIsExactlyZeroAndBadTargetsThrow) {
  const ExactRow row = exact_row(std::vector<double>{1, 2});
  const ExactCrossEntropy ce = exact_cross_entropy(row, ignore_index);
  EXPECT_EQ(d(ce.loss), 0.0);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_EQ(d(ce.gradient[j]), 0.0);
    EXPECT_EQ(d(ce.scale[j]), 0.0);
  }
  EXPECT_THROW(exact_cross_entropy(row, 2), std::invalid_argument);
  EXPECT_THROW(exact_cross_entropy(row, -1), std::invalid_argument);
  EXPECT_THROW(exact_cross_entropy(exact_row(std::vector<double>{-INFINITY}), 0), std::invalid_argument);
}

// Label smoothing eps: q = (1 - eps) onehot(t) + eps / n. x = [0, 0], t = 0,
// eps = 0.1: p = [1/2, 1/2], q = [0.95, 0.05]: loss log 2 whatever q,
// gradient p - q = [-0.45, 0.45], scale p + q = [1.45, 0.55]. x = [1, 2, 3],
// t = 2, eps = 0.2: loss = lse - sum q_j x_j (libm in double).
TEST(ExactCrossEntropy, LabelSmoothingKnownValues) {
  const ExactCrossEntropy ce = exact_cross_entropy(exact_row(std::vector<double>{0, 0}), 0, default_bits, 0.1);
  EXPECT_DOUBLE_EQ(d(ce.loss), std::log(2.0));
  EXPECT_DOUBLE_EQ(d(ce.gradient[0]), -0.45);
  EXPECT_DOUBLE_EQ(d(ce.gradient[1]), 0.45);
  EXPECT_DOUBLE_EQ(d(ce.scale[0]), 1.45);
  EXPECT_DOUBLE_EQ(d(ce.scale[1]), 0.55);
  const ExactCrossEntropy c3 = exact_cross_entropy(exact_row(std::vector<double>{1, 2, 3}), 2, default_bits, 0.2);
  const double lse = 3 + std::log1p(std::exp(-1.0) + std::exp(-2.0));
  const double q_off = 0.2 / 3, q_t = 1 - 0.2 + 0.2 / 3;
  EXPECT_NEAR(d(c3.loss), lse - (q_off * 1 + q_off * 2 + q_t * 3), 1e-15);
  EXPECT_NEAR(d(c3.gradient[0]), std::exp(1 - lse) - q_off, 1e-16);
  EXPECT_NEAR(d(c3.gradient[2]), std::exp(3 - lse) - q_t, 1e-16);
  // eps = 1: the uniform target; x uniform too: loss log n, gradient 0 up to
  // 2^-250 of the scale (p_j = 1/3 is rounded to `bits` before q_j = 1/3 is
  // subtracted: accuracy relative to s_j, as exact_backward's).
  const ExactCrossEntropy uniform = exact_cross_entropy(exact_row(std::vector<double>{5, 5, 5}), 1, default_bits, 1);
  EXPECT_DOUBLE_EQ(d(uniform.loss), std::log(3.0));
  for (std::size_t j = 0; j < 3; ++j) EXPECT_LE(std::fabs(d(uniform.gradient[j])), std::ldexp(d(uniform.scale[j]), -250));
}

// The smoothed loss is (1 - eps) L_0 + eps L_u (L_0 = -log p_t, L_u the loss
// against the uniform target, lse - mean z), the gradient sums to 0; with a
// masked entry the loss is +inf and that entry's gradient -eps / n; eps = 0
// is the unsmoothed oracle bit for bit.
TEST(ExactCrossEntropy, LabelSmoothingIdentities) {
  const std::vector<double> x = {0.25, -3, 7.5, 7.5, -1e3, 0x1p-30};
  const ExactRow row = exact_row(x, 0.7, 512);
  const double eps = 0.3;
  for (std::int64_t t = 0; t < static_cast<std::int64_t>(x.size()); ++t) {
    const ExactCrossEntropy ce = exact_cross_entropy(row, t, 512, eps);
    const PrecisionScope scope(1100);
    Real total = 0, abs_total = 0, minus_log_sum = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      total += ce.gradient[j];
      abs_total += abs(ce.gradient[j]);
      minus_log_sum -= row.log_softmax[j];
    }
    EXPECT_LE(std::fabs(d(total)), 1e-150 * d(abs_total)) << "t = " << t;
    const Real mixed = (1 - Real(eps)) * -row.log_softmax[static_cast<std::size_t>(t)] +
                       Real(eps) * minus_log_sum / Real(static_cast<double>(x.size()));
    EXPECT_LE(std::fabs(d((ce.loss - mixed) / mixed)), 1e-150) << "t = " << t;
    // eps -> 0: the smoothed formulas tend to the unsmoothed oracle's values.
    const ExactCrossEntropy plain = exact_cross_entropy(row, t, 512);
    const ExactCrossEntropy faint = exact_cross_entropy(row, t, 512, 1e-60);
    EXPECT_LE(std::fabs(d((faint.loss - plain.loss) / plain.loss)), 1e-55) << "t = " << t;
    for (std::size_t j = 0; j < x.size(); ++j)
      EXPECT_LE(std::fabs(d(faint.gradient[j] - plain.gradient[j])), 2e-60) << t << " " << j;  // |q - onehot| <= eps
  }
  const std::vector<double> masked = {1, -INFINITY, 2};
  const ExactCrossEntropy ce = exact_cross_entropy(exact_row(masked), 0, default_bits, 0.3);
  EXPECT_EQ(d(ce.loss), INFINITY);
  EXPECT_DOUBLE_EQ(d(ce.gradient[1]), -0.1);
  EXPECT_DOUBLE_EQ(d(ce.scale[1]), 0.1);
  EXPECT_THROW(exact_cross_entropy(exact_row(masked), 0, default_bits, -0.1), std::invalid_argument);
  EXPECT_THROW(exact_cross_entropy(exact_row(masked), 0, default_bits, 1.5), std::invalid_argument);
  EXPECT_THROW(exact_cross_entropy(exact_row(masked), 0, default_bits, NAN), std::invalid_argument);
}

// 256 and 1024 bits agree with smoothing too, on a row where p_1 is within
// 1e-16 of q_1 = eps / n (dx_1 cancels): the loss to 2^-250 of itself, the
// gradient to 2^-250 of its scale (p_j rounded to `bits` before q_j is
// subtracted).
TEST(ExactCrossEntropy, LabelSmoothingAgreesAcrossPrecisions) {
  const double eps = 0.3;  // n = 3: q_off = 0.1; p_1 = 0.1 where e^x1 = (1 + e^-50) / 9
  const std::vector<double> x = {0, std::log((1 + std::exp(-50.0)) / 9), -50};
  for (std::int64_t t : {0, 2}) {
    const ExactCrossEntropy lo = exact_cross_entropy(exact_row(x, 1, 256), t, 256, eps);
    const ExactCrossEntropy hi = exact_cross_entropy(exact_row(x, 1, 1024), t, 1024, eps);
    EXPECT_LE(std::fabs(d(hi.gradient[1])), 1e-16 * d(hi.scale[1])) << "no cancellation to test";
    const auto close = [](const Real& a, const Real& b, const Real& unit) {
      const PrecisionScope scope(1100);
      const Real diff = a - b;
      return std::fabs(d(diff)) <= std::ldexp(std::fabs(d(unit)), -250);
    };
    EXPECT_TRUE(close(lo.loss, hi.loss, hi.loss)) << t;
    for (std::size_t j = 0; j < x.size(); ++j)
      EXPECT_TRUE(close(lo.gradient[j], hi.gradient[j], hi.scale[j])) << t << " " << j;
  }
}

// The scaled metric: |r - v| / max(u s, denorm_min); a structural zero
// (s = 0) must be exactly 0.
TEST(ScaledMetric, ErrorInUnitsOfUTimesScale) {
  const ExactCrossEntropy ce = exact_cross_entropy(exact_row(std::vector<double>{0, 0}), 0);
  const double u = unit_roundoff(Format::f32);
  // dx_0 = -1/2 exactly, s_0 = 3/2: an output off by 3u is 2 units.
  const ElementError e = compare_element(-0.5 - 3 * u, ce.gradient[0], Format::f32, gradient_operand(), ce.scale[0]);
  EXPECT_EQ(e.cls, ElementClass::finite);
  EXPECT_DOUBLE_EQ(e.ulp, 2.0);
  const ExactCrossEntropy ignored = exact_cross_entropy(exact_row(std::vector<double>{0, 0}), ignore_index);
  EXPECT_EQ(compare_element(0.0, ignored.gradient[0], Format::f32, gradient_operand(), ignored.scale[0]).ulp, 0.0);
  EXPECT_EQ(compare_element(0x1p-149, ignored.gradient[0], Format::f32, gradient_operand(), ignored.scale[0]).cls,
            ElementClass::special_mismatch);
  // A row needs one scale per element for the gradient, none for the loss.
  const std::vector<double> y = {-0.5, 0.5};
  EXPECT_THROW(compare_row(y, ce.gradient, Format::f32, gradient_operand()), std::invalid_argument);
  EXPECT_EQ(compare_row(y, ce.gradient, Format::f32, gradient_operand(), ce.scale).max_ulp, 0.0);
  const std::vector<double> loss = {static_cast<float>(std::log(2.0))};
  EXPECT_THROW(compare_row(loss, std::span<const Real>(&ce.loss, 1), Format::f32, loss_operand(), ce.scale),
               std::invalid_argument);
}

// The judge needs the target for a cross-entropy output, decides with MPFR,
// and its verdict flips where the scaled error crosses the bound.
TEST(ScaledMetric, JudgeDecidesWithTheTarget) {
  const std::vector<double> x = {2, -1, 0.5};
  OpDecl decl{Op::cross_entropy, {}};
  decl.contract.declared = true;
  decl.contract.a = 2;
  decl.further_contracts = {decl.contract};
  RowJudge judge(x, 1.0, Format::f32);
  const std::vector<double> dx_exact = {0, 0, 0};
  EXPECT_THROW(judge.judge(decl, MaskedRowPolicy::zeros, dx_exact, 1), std::logic_error);
  judge.set_target(0);
  const ExactCrossEntropy ce = exact_cross_entropy(exact_row(x), 0);
  std::vector<double> dx;
  for (const Real& g : ce.gradient) dx.push_back(round_to(g, Format::f32));
  const RowVerdict ok = judge.judge(decl, MaskedRowPolicy::zeros, dx, 1);
  EXPECT_TRUE(ok.holds());
  EXPECT_EQ(ok.tier, Tier::mpfr);
  EXPECT_LE(ok.error.max_ulp, 1.0);
  // Off by about 5 u s_1 at entry 1: beyond the bound 2.
  const double u = unit_roundoff(Format::f32);
  std::vector<double> off = dx;
  off[1] = static_cast<float>(dx[1] + 5 * u * d(ce.scale[1]));
  EXPECT_FALSE(judge.judge(decl, MaskedRowPolicy::zeros, off, 1).holds());
}


// An ignored row's loss and gradient are 0 whatever x holds, a fully masked
// row's too: the judge measures them (status ok) instead of applying the
// masked-row policy, so a NaN gradient there is broken.
TEST(ScaledMetric, IgnoredFullyMaskedRowIsMeasuredAgainstZeros) {
  const std::vector<double> x = {-INFINITY, -INFINITY, -INFINITY};
  OpDecl decl{Op::cross_entropy, {}};
  RowJudge judge(x, 1.0, Format::f32);
  judge.set_target(ignore_index);
  const std::vector<double> zeros = {0, 0, 0}, nans = {NAN, NAN, NAN}, loss = {0};
  const RowVerdict ok = judge.judge(decl, MaskedRowPolicy::nan, zeros, 1);
  EXPECT_EQ(ok.status, RowStatus::ok);
  EXPECT_TRUE(ok.holds());
  EXPECT_EQ(judge.judge(decl, MaskedRowPolicy::nan, loss, 0).error.max_ulp, 0.0);
  const RowVerdict bad = judge.judge(decl, MaskedRowPolicy::nan, nans, 1);
  EXPECT_EQ(bad.status, RowStatus::ok);
  EXPECT_TRUE(bad.broken);
  // Not ignored: the policy decides.
  judge.set_row(x, 1.0);
  judge.set_target(1);
  EXPECT_EQ(judge.judge(decl, MaskedRowPolicy::nan, nans, 1).status, RowStatus::all_masked);
  EXPECT_TRUE(judge.judge(decl, MaskedRowPolicy::nan, nans, 1).holds());
}

// ---------------------------------------------------------------- backward

Real sum_of(const std::vector<Real>& v) {
  const PrecisionScope scope(2000);
  Real s = 0;
  for (const Real& r : v) s += r;
  return s;
}

TEST(ExactBackward, KnownValues) {
  // x = [0, 0]: y = [1/2, 1/2]; g = [1, 0]: <y, g> = 1/2, dx = [1/4, -1/4];
  // log-softmax: sum g = 1, dx = g - p = [1/2, -1/2].
  const ExactRow row = exact_row(std::vector<double>{0, 0});
  const std::vector<double> g = {1, 0};
  const ExactGradient s = exact_backward(row, g, OutputKind::softmax_gradient);
  EXPECT_EQ(d(s.value[0]), 0.25);
  EXPECT_EQ(d(s.value[1]), -0.25);
  EXPECT_EQ(d(s.scale[0]), 0.75);  // y_0 (|g_0| + sum y|g|) = 1/2 (1 + 1/2)
  EXPECT_EQ(d(s.scale[1]), 0.25);
  const ExactGradient l = exact_backward(row, g, OutputKind::log_softmax_gradient);
  EXPECT_EQ(d(l.value[0]), 0.5);
  EXPECT_EQ(d(l.value[1]), -0.5);
  EXPECT_EQ(d(l.scale[0]), 1.5);  // |g_0| + p_0 sum|g|
  EXPECT_EQ(d(l.scale[1]), 0.5);
}

// The scale's resolution: a probability below it counts as it in the scale
// (only there: the values keep the exact p), and a masked entry keeps 0.
TEST(ExactBackward, ResolutionRaisesTinyProbabilitiesInTheScale) {
  // x = [0, -200, -inf]: p_1 = e^-200 / (1 + e^-200) ~ 1.4e-87, below 2^-125.
  const ExactRow row = exact_row(std::vector<double>{0, -200, -INFINITY});
  const std::vector<double> g = {3, -2, 5};
  const double r = 0x1p-125;  // denorm_min / u of f32
  for (OutputKind kind : {OutputKind::softmax_gradient, OutputKind::log_softmax_gradient}) {
    const ExactGradient exact = exact_backward(row, g, kind);
    const ExactGradient floored = exact_backward(row, g, kind, default_bits, r);
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(exact.value[j], floored.value[j]) << j;
    // p_0 ~ 1 is above the resolution (its scale moves only through sum p'|g|, by ~2^-124)
    EXPECT_NEAR(d(floored.scale[0]) / d(exact.scale[0]), 1.0, 1e-30);
    EXPECT_EQ(d(floored.scale[2]), kind == OutputKind::softmax_gradient ? 0.0 : 5.0);  // masked: p = 0 stays 0
    // p_1 replaced by r: softmax r (|g_1| + sum y|g|), log-softmax |g_1| + r sum|g|.
    const double sum_abs = d(exact.scale[0]) / d(row.softmax[0]) - 3;  // softmax: sum y|g|
    if (kind == OutputKind::softmax_gradient)
      EXPECT_NEAR(d(floored.scale[1]) / (r * (2 + sum_abs)), 1.0, 1e-12);
    else
      EXPECT_NEAR(d(floored.scale[1]), 2 + r * 10, 1e-12);
    EXPECT_GT(floored.scale[1], exact.scale[1]);
  }
}

// A probability below MPFR's exponent range (z_1 - z_0 = -1e300) reads 0, but
// its entry is not masked: the scales stay positive there (the metric's
// floor is then the unit); a masked entry's stay exactly 0.
TEST(ExactBackward, UnderflowedProbabilityIsNoStructuralZero) {
  const ExactRow row = exact_row(std::vector<double>{0, -1e300, -INFINITY});
  ASSERT_EQ(row.status, RowStatus::ok);
  ASSERT_TRUE(row.softmax[1] == 0);  // below MPFR's range
  const ExactCrossEntropy ce = exact_cross_entropy(row, 0);
  EXPECT_GT(ce.scale[1], 0);
  EXPECT_EQ(ce.scale[2], 0);
  const std::vector<double> g = {1, 1, 1};
  const ExactGradient sm = exact_backward(row, g, OutputKind::softmax_gradient);
  EXPECT_GT(sm.scale[1], 0);
  EXPECT_EQ(sm.scale[2], 0);
  EXPECT_EQ(sm.value[1], 0);
  // sum p'|g| counts the underflowed entry too: with g = 0 at the only
  // representable probability, the scale is still positive there.
  const ExactGradient sm0 = exact_backward(row, std::vector<double>{0, 1, 1}, OutputKind::softmax_gradient);
  EXPECT_GT(sm0.scale[0], 0);
}

// The conditional mode's backward from a given y: exactly exact_backward's
// when y is the exact softmax; p = exp(y) for a log-softmax y (-inf giving 0);
// an unusable y is refused.
TEST(ExactBackward, GivenForwardOutput) {
  const ExactRow row = exact_row(std::vector<double>{0, 0, -INFINITY});
  const std::vector<double> g = {1, 0, 2};
  const ExactGradient exact = exact_backward(row, g, OutputKind::softmax_gradient);
  const ExactGradient given = exact_backward_given(std::vector<double>{0.5, 0.5, 0}, g, OutputKind::softmax_gradient);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(exact.value[j], given.value[j]) << j;
    EXPECT_EQ(exact.scale[j], given.scale[j]) << j;
  }
  // log-softmax y = [-ln 2 rounded, same, -inf]: p = exp(y) ~ 1/2, dx = g - p sum g.
  const double l = std::log(0.5);
  const ExactGradient lg =
      exact_backward_given(std::vector<double>{l, l, -INFINITY}, g, OutputKind::log_softmax_gradient);
  EXPECT_NEAR(d(lg.value[0]), 1 - 1.5, 1e-15);
  EXPECT_NEAR(d(lg.value[1]), -1.5, 1e-15);
  EXPECT_EQ(d(lg.value[2]), 2.0);  // p = 0: dx = g exactly
  // With the logits: the masked entry's scale stays 0, an unmasked 0 counts
  // at the resolution.
  const ExactGradient masked = exact_backward_given(std::vector<double>{0.5, 0.5, 0}, g, OutputKind::softmax_gradient,
                                                    default_bits, 0x1p-125, std::vector<double>{0, 0, -INFINITY});
  EXPECT_EQ(d(masked.scale[2]), 0.0);
  const ExactGradient unmasked = exact_backward_given(std::vector<double>{0.5, 0.5, 0}, g, OutputKind::softmax_gradient,
                                                      default_bits, 0x1p-125, std::vector<double>{0, 0, -300});
  EXPECT_GT(unmasked.scale[2], 0);
  EXPECT_THROW(exact_backward_given(std::vector<double>{0.5, NAN, 0}, g, OutputKind::softmax_gradient),
               std::invalid_argument);
  EXPECT_THROW(exact_backward_given(std::vector<double>{0.5, -INFINITY, 0}, g, OutputKind::softmax_gradient),
               std::invalid_argument);
  EXPECT_THROW(exact_backward_given(std::vector<double>{-INFINITY, -INFINITY, -INFINITY}, g,
                                    OutputKind::log_softmax_gradient),
               std::invalid_argument);
  EXPECT_THROW(exact_backward_given(std::vector<double>{0.5, 0.5, 0}, g, OutputKind::cross_entropy_gradient),
               std::invalid_argument);
}

// Both gradients sum to 0 (softmax: sum y_i g_i - <y, g> sum y_i; log-softmax:
// sum g - sum p sum g), a constant g gives exactly 0 for softmax (shift
// invariance of the forward), masked entries get 0 (softmax) and g_i
// (log-softmax), and g -> g + c leaves the softmax gradient unchanged.
TEST(ExactBackward, Identities) {
  const std::vector<double> x = {0.25, -3, -INFINITY, 7.5, 7.5, -1e3};
  const std::vector<double> g = {0.5, -1.25, 3, 2, -0.125, 1e3};
  const ExactRow row = exact_row(x, 0.7, 512);
  for (OutputKind kind : {OutputKind::softmax_gradient, OutputKind::log_softmax_gradient}) {
    const ExactGradient e = exact_backward(row, g, kind, 512);
    EXPECT_LE(std::fabs(d(sum_of(e.value))), 1e-140) << static_cast<int>(kind);
    EXPECT_EQ(d(e.value[2]), kind == OutputKind::softmax_gradient ? 0.0 : 3.0);
    if (kind == OutputKind::log_softmax_gradient) continue;  // it moves by c (1 - n p_i)
    std::vector<double> shifted = g;
    for (double& v : shifted) v += 0.375;  // exact in double
    const ExactGradient f = exact_backward(row, shifted, kind, 512);
    for (std::size_t j = 0; j < x.size(); ++j) {
      const PrecisionScope scope(600);
      const Real diff = e.value[j] - f.value[j];
      EXPECT_LE(std::fabs(d(diff)), 1e-70 * std::max(1.0, std::fabs(d(e.value[j])))) << j;
    }
  }
  const std::vector<double> constant(x.size(), -2.5);
  const ExactGradient c = exact_backward(row, constant, OutputKind::softmax_gradient, 512);
  for (const Real& v : c.value) EXPECT_LE(std::fabs(d(v)), 1e-150);
}

TEST(ExactBackward, AgreesAcrossPrecisionsAndRejectsBadInput) {
  const std::vector<double> x = {1e-3, 30, -17.25, 29.999, 0x1p-60};
  const std::vector<double> g = {1, -1, 0.5, 0.25, -3};
  for (OutputKind kind : {OutputKind::softmax_gradient, OutputKind::log_softmax_gradient}) {
    const ExactGradient lo = exact_backward(exact_row(x, 1.3, 256), g, kind, 256);
    const ExactGradient hi = exact_backward(exact_row(x, 1.3, 1024), g, kind, 1024);
    for (std::size_t j = 0; j < x.size(); ++j) {
      const PrecisionScope scope(1100);
      const Real diff = lo.value[j] - hi.value[j];
      // The difference g_j - <y, g> may cancel: measured against the scale.
      EXPECT_LE(std::fabs(d(diff)), std::ldexp(d(hi.scale[j]), -240)) << j;
    }
  }
  const ExactRow row = exact_row(x);
  EXPECT_THROW(exact_backward(row, std::vector<double>{1, 2}, OutputKind::softmax_gradient), std::invalid_argument);
  EXPECT_THROW(exact_backward(row, std::vector<double>{1, 2, NAN, 0, 0}, OutputKind::softmax_gradient),
               std::invalid_argument);
  EXPECT_THROW(exact_backward(row, g, OutputKind::probabilities), std::invalid_argument);
}

TEST(ExactBackward, JudgeNeedsTheUpstreamGradient) {
  const std::vector<double> x = {2, -1, 0.5}, g = {1, 2, 3};
  OpDecl decl{Op::softmax_backward, {}};
  decl.contract.declared = true;
  decl.contract.a = 4;
  decl.further_contracts = {decl.contract};
  RowJudge judge(x, 1.0, Format::f64);
  const ExactGradient e = exact_backward(exact_row(x), g, OutputKind::softmax_gradient);
  std::vector<double> dx;
  for (const Real& v : e.value) dx.push_back(round_to(v, Format::f64));
  EXPECT_THROW(judge.judge(decl, MaskedRowPolicy::zeros, dx, 1), std::logic_error);
  judge.set_upstream(g);
  EXPECT_TRUE(judge.judge(decl, MaskedRowPolicy::zeros, dx, 1).holds());
  dx[2] += 64 * unit_roundoff(Format::f64) * d(e.scale[2]);
  EXPECT_FALSE(judge.judge(decl, MaskedRowPolicy::zeros, dx, 1).holds());
}

}  // namespace
}  // namespace softcheck::oracle
