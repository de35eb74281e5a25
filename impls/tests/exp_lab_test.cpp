// The exp lab (softcheck/exp_lab.hpp, docs/exp-lab.md): each primitive at
// known values, the thresholds and constants derived with MPFR, the fit
// behind exp2_poly's stored coefficients, and the sweep on every 65,537th
// input of the z domain with the lab's expectations, the planted coefficient
// among them.
#include "softcheck/exp_lab.hpp"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>

#include "exp_lab_fit.hpp"
#include "exp_lab_sweep.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::exp_lab {
namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float denorm_min = std::numeric_limits<float>::denorm_min();

// A plain mpfr_t of `bits` bits for one test.
struct Mp {
  mpfr_t v;
  explicit Mp(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  ~Mp() { mpfr_clear(v); }
};

// e^z exactly (128 bits) and the error of r in f32 ulps of it (oracle metrics).
oracle::Real exact_exp(double z) {
  oracle::Real v;
  mpfr_set_prec(v.backend().data(), 128);
  Mp arg(64);
  mpfr_set_d(arg.v, z, MPFR_RNDN);
  mpfr_exp(v.backend().data(), arg.v, MPFR_RNDN);
  return v;
}
double ulp_error(float r, double z) { return compare_element(r, exact_exp(z), Format::f32).ulp; }
float correctly_rounded_exp(double z) { return static_cast<float>(oracle::round_to(exact_exp(z), Format::f32)); }

// The bound of the fold at s = 1, m = 0 and of the CUDA model (normal
// results): their argument t = fl(z log2e_f32) is off z log2 e by
// |z| |log2e_f32 - log2 e| (|log2 e - log2e_f32| < 0x1.4ae0dp-26) plus half an
// ulp of t; a unit of t is 2^24 ln 2 ulp of e^z (e^z / ulp < 2^24); and
// exp2f's 0.502 ulp of 2^t, 1.004 ulp of e^z where the two straddle a power of 2.
double argument_rounding_bound(double z) {
  const double t = std::fabs(z) * std::numbers::log2e;
  const double half_ulp_t = t > 0 ? std::ldexp(1.0, std::ilogb(t) - 24) : 0;
  return 1.004 + 0x1p24 * std::numbers::ln2 * (half_ulp_t + std::fabs(z) * 0x1.4ae0dp-26);
}

using Fn = float (*)(float);
struct Named {
  const char* name;
  Fn f;
};
const Named all_primitives[] = {
    {"expf_glibc", expf_glibc},
    {"exp_fold_fma", [](float z) { return exp_fold_fma(z); }},
    {"exp2_poly2", exp2_poly<2>},
    {"exp2_poly3", exp2_poly<3>},
    {"exp2_poly4", exp2_poly<4>},
    {"exp2_poly5", exp2_poly<5>},
    {"expf_cuda_model", expf_cuda_model},
};

// ---------------------------------------------------------------- constants

// The header's thresholds and the split of log2 e, derived here with MPFR.
TEST(ExpLab, ThresholdsAreDerived) {
  Mp t(256);
  for (auto [k, threshold] : {std::pair{150, underflow_threshold}, std::pair{126, subnormal_threshold}}) {
    mpfr_const_log2(t.v, MPFR_RNDN);
    mpfr_mul_si(t.v, t.v, -k, MPFR_RNDN);
    EXPECT_EQ(mpfr_get_flt(t.v, MPFR_RNDU), threshold) << "-" << k << " ln 2 rounded up";
    // e^threshold >= 2^-k > e^(the f32 below it)
    EXPECT_GE(mpfr_cmp_d(exact_exp(threshold).backend().data(), std::ldexp(1.0, -k)), 0);
    EXPECT_LT(mpfr_cmp_d(exact_exp(std::nextafter(threshold, -inf)).backend().data(), std::ldexp(1.0, -k)), 0);
  }
  mpfr_const_log2(t.v, MPFR_RNDN);
  mpfr_ui_div(t.v, 1, t.v, MPFR_RNDN);  // log2 e
  EXPECT_EQ(mpfr_get_flt(t.v, MPFR_RNDN), log2e_f32);
  EXPECT_EQ(log2e_f32, static_cast<float>(std::numbers::log2e));
  mpfr_sub_d(t.v, t.v, log2e_f32, MPFR_RNDN);  // exact at 256 bits
  EXPECT_EQ(mpfr_get_flt(t.v, MPFR_RNDN), log2e_lo_f32);
  mpfr_sub_d(t.v, t.v, log2e_lo_f32, MPFR_RNDN);
  EXPECT_LT(std::fabs(mpfr_get_d(t.v, MPFR_RNDN)), 0x1p-51);
}

// The fit reproduces the stored table: the coefficients bit for bit, the
// accuracy figures as exp_lab_fit prints them (3 digits, rounded up).
TEST(ExpLabFit, StoredCoefficientsAreTheFit) {
  for (int d = 2; d <= 5; ++d) {
    const Exp2Fit fit = fit_exp2_minimax(d);
    const std::span<const float> stored = exp2_poly_coefficients(d);
    ASSERT_EQ(stored.size(), fit.coefficients.size());
    for (std::size_t k = 0; k < stored.size(); ++k)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(stored[k]), std::bit_cast<std::uint32_t>(fit.coefficients[k]))
          << "degree " << d << " c_" << k << ": stored " << std::hexfloat << stored[k] << ", fit "
          << fit.coefficients[k] << " (rerun exp_lab_fit)";
    const Exp2PolyErrorBudget b = exp2_poly_error_budget(fit.coefficients, fit.rounded_error);
    EXPECT_EQ(exp2_poly_accuracy(d).poly_rel_error, round_up_3_digits(static_cast<double>(fit.rounded_error)));
    EXPECT_EQ(exp2_poly_accuracy(d).ulp_bound, round_up_3_digits(b.ulp_bound));
    // A minimax fit: levelled below the Taylor polynomial's error (ln 2 / 2)^(d+1) / (d+1)! 2^(1/2)...
    double taylor = std::sqrt(2.0);
    for (int k = 1; k <= d + 1; ++k) taylor *= std::numbers::ln2 / 2 / k;
    EXPECT_LT(static_cast<double>(fit.minimax_error), taylor) << "degree " << d;
    // ... and rounding the coefficients to f32 costs something, not much.
    EXPECT_GE(fit.rounded_error, fit.minimax_error);
    EXPECT_LT(fit.rounded_error, 1.25L * fit.minimax_error) << "degree " << d;
  }
  EXPECT_THROW(exp2_poly_coefficients(6), std::invalid_argument);
  EXPECT_THROW(fit_exp2_minimax(1), std::invalid_argument);
}

// ------------------------------------------------------------ known values

TEST(ExpLab, SpecialArguments) {
  for (const Named& p : all_primitives) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.f(0.0f), 1.0f);
    EXPECT_EQ(p.f(-0.0f), 1.0f);
    EXPECT_EQ(p.f(-inf), 0.0f);
    EXPECT_FALSE(std::signbit(p.f(-inf)));
    EXPECT_TRUE(std::isnan(p.f(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(p.f(-1000.0f), 0.0f);
    EXPECT_EQ(p.f(denorm_min), 1.0f);  // e^tiny rounds to 1
    EXPECT_EQ(p.f(-denorm_min), 1.0f);
    EXPECT_EQ(p.f(100.0f), inf);
  }
  for (float t : {0.0f, -0.0f}) {
    EXPECT_EQ(exp2_poly_pow2<2>(t), 1.0f);
    EXPECT_EQ(exp2_poly_pow2<5>(t), 1.0f);
  }
  EXPECT_EQ(exp2_poly_pow2<5>(-inf), 0.0f);
  EXPECT_EQ(exp2_poly_pow2<5>(inf), inf);
}

// At the underflow threshold the exact e^z is just above 2^-150: it rounds
// to the smallest subnormal, and one f32 lower every primitive gives 0. The
// CUDA model flushes the subnormal to 0; the fold loses it too: z log2e_f32
// rounds to exactly -150 there, and 2^-150 is the tie that rounds to 0.
TEST(ExpLab, UnderflowThreshold) {
  const float z = underflow_threshold, below = std::nextafter(z, -inf);
  EXPECT_EQ(correctly_rounded_exp(z), denorm_min);
  EXPECT_EQ(correctly_rounded_exp(below), 0.0f);
  EXPECT_EQ(z * log2e_f32, -150.0f);
  for (const Named& p : all_primitives) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.f(below), 0.0f);
    const std::string name = p.name;
    EXPECT_EQ(p.f(z), name == "expf_cuda_model" || name == "exp_fold_fma" ? 0.0f : denorm_min);
  }
  EXPECT_EQ(exp_fold_fma(std::nextafter(z, 0.0f)), denorm_min);
}

// Subnormal results: within each primitive's bound of the exact value (the
// ulp is 2^-149 there), and 0 from the CUDA model; at the subnormal threshold
// every primitive is normal again.
TEST(ExpLab, SubnormalResults) {
  for (float z : {-88.0f, -90.5f, -95.0f, -100.0f, -103.0f, -103.9f}) {
    SCOPED_TRACE(z);
    const float rn = correctly_rounded_exp(z);
    ASSERT_GT(rn, 0.0f);
    ASSERT_LT(rn, std::numeric_limits<float>::min());
    EXPECT_LE(ulp_error(expf_glibc(z), z), 0.502);
    EXPECT_LE(ulp_error(exp_fold_fma(z), z), argument_rounding_bound(z));
    EXPECT_EQ(expf_cuda_model(z), 0.0f);
    for (int d = 2; d <= 5; ++d) {
      const float r = d == 2 ? exp2_poly<2>(z) : d == 3 ? exp2_poly<3>(z) : d == 4 ? exp2_poly<4>(z) : exp2_poly<5>(z);
      EXPECT_LE(ulp_error(r, z), exp2_poly_accuracy(d).ulp_bound) << "degree " << d;
    }
  }
  EXPECT_GE(expf_cuda_model(subnormal_threshold), std::numeric_limits<float>::min());
  EXPECT_GE(exp2_poly<5>(subnormal_threshold), std::numeric_limits<float>::min());
}

// z near -k ln 2: e^z is near 2^-k, where the binade changes. Every
// primitive within its bound (expf_glibc within 0.502; the fold and the
// model within argument_rounding_bound, the model for normal results);
// 2^t of an integer t is exact.
TEST(ExpLab, Ln2Multiples) {
  for (int k = 1; k <= 149; ++k) {
    const float z = static_cast<float>(-k * std::numbers::ln2);
    SCOPED_TRACE(k);
    EXPECT_LE(ulp_error(expf_glibc(z), z), 0.502);
    EXPECT_LE(ulp_error(exp2_poly<5>(z), z), exp2_poly_accuracy(5).ulp_bound);
    EXPECT_LE(ulp_error(exp2_poly<4>(z), z), exp2_poly_accuracy(4).ulp_bound);
    EXPECT_LE(ulp_error(exp_fold_fma(z), z), argument_rounding_bound(z));
    if (k <= 125) {
      EXPECT_LE(ulp_error(expf_cuda_model(z), z), argument_rounding_bound(z));
    }
    EXPECT_EQ(exp2_poly_pow2<5>(static_cast<float>(-k)), std::ldexp(1.0f, -k));
    EXPECT_EQ(exp2_poly_pow2<2>(static_cast<float>(-k)), std::ldexp(1.0f, -k));
  }
  EXPECT_EQ(exp2_poly_pow2<5>(-150.0f), 0.0f);  // 2^-150 is the tie: to even, 0
  EXPECT_EQ(exp2_poly_pow2<5>(std::nextafter(-150.0f, 0.0f)), denorm_min);
}

// The fold as FlashAttention computes it: the products rounded where FA
// rounds them, m = -inf taken as 0, and x = m not exactly 1 when m s log2 e
// is inexact in f32.
TEST(ExpLab, FoldIsFlashAttentionsArithmetic) {
  const float s = 0.088388346f;  // 1/sqrt(128) in f32
  const float scale_log2 = static_cast<float>(static_cast<double>(s) * std::numbers::log2e);
  for (float m : {0.0f, 1.0f, 10.0f, -3.5f, 37.25f})
    for (float x : {m, m - 1.0f, m - 100.0f, m - 1000.0f}) {
      const float max_scaled = m * scale_log2;
      EXPECT_EQ(exp_fold_fma(x, m, s), std::exp2(std::fma(x, scale_log2, -max_scaled))) << x << " " << m;
    }
  EXPECT_EQ(exp_fold_fma(-2.0f, -inf, s), std::exp2(-2.0f * scale_log2));
  EXPECT_EQ(exp_fold_fma(-inf, -inf, s), 0.0f);
  // x = m = 10, s = 1: 10 fl(log2 e) needs 27 bits; its rounding error is left
  // in the fma: 2^(rounding error) instead of 1.
  const float ms = 10.0f * log2e_f32;
  EXPECT_NE(std::fma(10.0f, log2e_f32, -ms), 0.0f);
  EXPECT_NE(exp_fold_fma(10.0f, 10.0f, 1.0f), 1.0f);
  EXPECT_EQ(exp_fold_fma(0.0f, 0.0f, s), 1.0f);
}

// The CUDA model: the argument rounded to f32 and subnormals flushed.
TEST(ExpLab, CudaModelIsTheRoundedArgumentFlushed) {
  for (float z : {-0.5f, -1.0f, -10.0f, -50.0f, -87.0f}) EXPECT_EQ(expf_cuda_model(z), std::exp2(z * log2e_f32)) << z;
  // Its error grows with |z| the way fl(z log2 e) does: tens of ulps near -87
  // (on 2000 consecutive f32 from -87 down), about 1 near -0.5.
  double worst = 0;
  float z = -87.0f;
  for (int i = 0; i < 2000; ++i, z = std::nextafter(z, -inf)) worst = std::max(worst, ulp_error(expf_cuda_model(z), z));
  EXPECT_GT(worst, 16.0);
  EXPECT_LE(worst, argument_rounding_bound(z));
  EXPECT_LE(ulp_error(expf_cuda_model(-0.5f), -0.5f), argument_rounding_bound(-0.5));
}

// -------------------------------------------------------------------- sweep

// Every 65,537th f32 of the z domain (17,105 inputs), the planted coefficient
// included: the lab's expectations, and the figures behind them.
class ExpLabSweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<SweepPrimitive> p = z_domain_primitives();
    p.push_back(planted_coefficient_primitive());
    result_ = new SweepResult(run_sweep(z_domain(65537), p, 2));
  }
  static void TearDownTestSuite() { delete result_; }
  static const PrimitiveResult& primitive(const std::string& name) {
    for (const PrimitiveResult& p : result_->primitives)
      if (p.name == name) return p;
    throw std::logic_error("no primitive " + name);
  }
  static SweepResult* result_;
};
SweepResult* ExpLabSweep::result_ = nullptr;

TEST_F(ExpLabSweep, Expectations) {
  std::printf("%s", text_table(*result_).c_str());
  EXPECT_EQ(result_->inputs, (static_cast<std::uint64_t>(std::bit_cast<std::uint32_t>(-underflow_threshold))) / 65537 + 1);
  const std::vector<std::string> failed = check_expectations(*result_);
  // The planted coefficient is the one expectation that must be about it:
  // its check passes because its max is above the bound.
  for (const std::string& f : failed) ADD_FAILURE() << f;
}

TEST_F(ExpLabSweep, GlibcExpfIsNearlyCorrectlyRounded) {
  const PrimitiveResult& p = primitive("expf_glibc");
  EXPECT_LT(p.all.max.ulp, 1.0);
  EXPECT_LE(p.all.max.ulp, 0.502);
  EXPECT_GT(p.all.max.ulp, 0.49);  // the sample reaches near-midpoint cases
  EXPECT_LT(p.all.not_correctly_rounded, p.all.inputs / 1000);
  EXPECT_EQ(p.all.flushes_to_zero, 0u);
}

// The polynomials: each within its derived bound, the error falling with the
// degree, degree 2 thousands of ulps, the planted coefficient above degree 5's bound.
TEST_F(ExpLabSweep, PolynomialsMeetTheirBounds) {
  double previous = std::numeric_limits<double>::infinity();
  for (int d = 2; d <= 5; ++d) {
    const PrimitiveResult& p = primitive("exp2_poly" + std::to_string(d));
    EXPECT_LE(p.all.max.ulp, exp2_poly_accuracy(d).ulp_bound) << d;
    // The bound is not loose by orders of magnitude: the polynomial's own
    // error shows (2^24 times the relative error, at least a fifth of it).
    EXPECT_GE(p.all.max.ulp, 0x1p24 * exp2_poly_accuracy(d).poly_rel_error / 5) << d;
    EXPECT_LT(p.all.max.ulp, previous) << d;
    previous = p.all.max.ulp;
    EXPECT_EQ(p.all.flushes_to_zero, 0u) << d;
  }
  EXPECT_GT(primitive("exp2_poly2").all.max.ulp, 1000.0);
  EXPECT_GT(primitive("exp2_poly2").all.max.ulp, 1000 * primitive("exp2_poly5").all.max.ulp);
  const PrimitiveResult& planted = primitive("exp2_poly5_planted");
  EXPECT_GT(planted.all.max.ulp, exp2_poly_accuracy(5).ulp_bound);
  // ... and the expectation check says so when its name is the real one's.
  SweepResult swapped = *result_;
  for (PrimitiveResult& p : swapped.primitives)
    if (p.name == "exp2_poly5_planted") p.name = "exp2_poly5";
    else if (p.name == "exp2_poly5") p.name = "exp2_poly5_original";
  EXPECT_FALSE(check_expectations(swapped).empty());
}

// The CUDA model: growing with |z| band by band as the rounding of
// fl(z log2 e) predicts (argument_rounding_bound at the band's largest |z|),
// within that prediction and not far below it, and every subnormal result
// flushed. The fold at s = 1, m = 0 has the same argument: the same figures
// on normal results, and its subnormals kept but the one at the threshold.
TEST_F(ExpLabSweep, CudaModelGrowsWithZ) {
  const PrimitiveResult& p = primitive("expf_cuda_model");
  const PrimitiveResult& fold = primitive("exp_fold_fma");
  for (int b = 0; b < band_count - 1; ++b) {
    ASSERT_GT(p.bands[b].inputs, 0u);
    if (b > 0) {
      EXPECT_GE(p.bands[b].max.ulp, p.bands[b - 1].max.ulp) << band_name(b);
    }
    const double z_max = b == band_count - 2 ? 126 * std::numbers::ln2 : std::ldexp(1.0, b);
    const double predicted = argument_rounding_bound(z_max);
    EXPECT_LE(p.bands[b].max.ulp, predicted) << band_name(b);
    EXPECT_GE(p.bands[b].max.ulp, (predicted - 1.004) / 4) << band_name(b);
    EXPECT_EQ(p.bands[b].max.ulp, fold.bands[b].max.ulp) << band_name(b);
    EXPECT_EQ(p.bands[b].flushes_to_zero, 0u);
  }
  EXPECT_GT(p.bands[band_count - 2].max.ulp, 16 * p.bands[1].max.ulp);
  const ErrorStats& sub = p.bands[band_count - 1];
  EXPECT_EQ(sub.flushes_to_zero, sub.inputs);
  EXPECT_EQ(fold.bands[band_count - 1].flushes_to_zero, 1u);  // z = underflow_threshold, the sample's first input
}

// The maxima are MPFR's: recomputed here at the reported input.
TEST_F(ExpLabSweep, MaximaAreCertified) {
  for (const PrimitiveResult& p : result_->primitives) {
    if (p.name == "exp2_poly5_planted") continue;
    const Named* f = nullptr;
    for (const Named& n : all_primitives)
      if (p.name == n.name) f = &n;
    ASSERT_NE(f, nullptr) << p.name;
    EXPECT_EQ(p.all.max.result, f->f(p.all.max.at)) << p.name;
    EXPECT_EQ(p.all.max.ulp, ulp_error(p.all.max.result, p.all.max.at)) << p.name;
  }
}

// The same JSON whatever the thread count.
TEST(ExpLabSweepDeterminism, ThreadCountDoesNotMatter) {
  const SweepDomain d = z_domain(523);  // 2,143,260 inputs: three chunks of 2^20
  const std::string one = to_json(run_sweep(d, z_domain_primitives(), 1)).dump();
  const std::string three = to_json(run_sweep(d, z_domain_primitives(), 3)).dump();
  EXPECT_EQ(one, three);
}

// The fold's domain: x from the smallest f32 with s (x - m) >= -150 ln 2 to
// m, swept on a sample with FA's rounding of m s log2 e.
TEST(ExpLabSweepFold, DomainAndFold) {
  const float m = 10.0f, s = 0.088388346f;
  const SweepDomain d = fold_domain(m, s, 1000003);
  Mp t(256);
  for (auto [x, above] : {std::pair{d.x_lo, true}, std::pair{std::nextafter(d.x_lo, -inf), false}}) {
    mpfr_set_flt(t.v, x, MPFR_RNDN);
    mpfr_sub_d(t.v, t.v, m, MPFR_RNDN);
    mpfr_mul_d(t.v, t.v, s, MPFR_RNDN);
    Mp limit(256);
    mpfr_const_log2(limit.v, MPFR_RNDN);
    mpfr_mul_si(limit.v, limit.v, -150, MPFR_RNDN);
    EXPECT_EQ(mpfr_cmp(t.v, limit.v) >= 0, above) << x;
  }
  const SweepResult r = run_sweep(d, fold_domain_primitives(m, s), 2);
  ASSERT_EQ(r.primitives.size(), 1u);
  const PrimitiveResult& p = r.primitives[0];
  EXPECT_GT(p.all.inputs, 2000u);
  EXPECT_EQ(p.all.flushes_to_zero, 0u);
  // 150 ln 2 / s spans |x - m| < 1177: the fold's argument error stays below
  // 1/2 + 2^24 ln 2 (|t| 2^-24 (1 + 2^-29) + ulp(m s log2 e)/2 + ulp(t)/2) ulp, |t| <= 150.
  EXPECT_LE(p.all.max.ulp, 1.004 + 0x1p24 * std::numbers::ln2 * (150 * 0x1p-24 * (1 + 0x1p-29) + 0x1p-20 + 0x1p-17));
}

}  // namespace
}  // namespace softcheck::exp_lab
