// FpEnvScope (fp_env.hpp): each environment changes what it says on this
// thread, for the scope's life only.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cfloat>
#include <string>

#include "softcheck/fp_env.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck {
namespace {

// Computed at run time, out of the optimiser's reach: the environment
// applies to the arithmetic the program executes.
volatile float tiny = FLT_MIN;  // 2^-126
volatile float half = 0.5f;
volatile float subnormal = FLT_MIN / 4;  // 2^-128
volatile float one = 1.0f, three = 3.0f;

float tiny_halved() { return tiny * half; }            // 2^-127: subnormal
float subnormal_quadrupled() { return subnormal * 4.0f; }  // 2^-126, normal, from a subnormal operand
float third() { return one / three; }

TEST(FpEnv, NamesParseBack) {
  for (const std::string& n : fp_env_names()) {
    const auto e = parse_fp_env(n);
    ASSERT_TRUE(e.has_value()) << n;
    EXPECT_EQ(name(*e), n);
    EXPECT_FALSE(description(*e).empty());
  }
  EXPECT_FALSE(parse_fp_env("fast").has_value());
  EXPECT_EQ(name(FpEnv::standard), "default");
}

TEST(FpEnv, EachEnvironmentChangesWhatItSaysAndIsRestored) {
  const float sub = std::ldexp(1.0f, -127);
  const float nearest_third = third();
  ASSERT_EQ(tiny_halved(), sub);
  if (fp_env_unsupported(FpEnv::ftz).empty()) {
    {
      const FpEnvScope env(FpEnv::ftz);
      EXPECT_EQ(tiny_halved(), 0.0f);                // the subnormal result flushed
      EXPECT_EQ(subnormal_quadrupled(), FLT_MIN);    // a subnormal operand still read
    }
    {
      const FpEnvScope env(FpEnv::daz);
      EXPECT_EQ(tiny_halved(), sub);                 // results kept
      EXPECT_EQ(subnormal_quadrupled(), 0.0f);       // the operand read as 0
    }
    {
      const FpEnvScope env(FpEnv::ftz_daz);
      EXPECT_EQ(tiny_halved(), 0.0f);
      EXPECT_EQ(subnormal_quadrupled(), 0.0f);
    }
  } else {
    EXPECT_THROW(FpEnvScope(FpEnv::ftz), std::invalid_argument);
  }
  {
    const FpEnvScope env(FpEnv::upward);
    EXPECT_EQ(std::fegetround(), FE_UPWARD);
    EXPECT_EQ(third(), nearest_third);  // 1/3 rounds up to nearest in f32 (0x1.555556p-2)
  }
  {
    const FpEnvScope env(FpEnv::downward);
    EXPECT_LT(third(), nearest_third);
  }
  {
    const FpEnvScope env(FpEnv::toward_zero);
    EXPECT_EQ(std::fegetround(), FE_TOWARDZERO);
  }
  // Every scope restored the default.
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
  EXPECT_EQ(tiny_halved(), sub);
  EXPECT_EQ(subnormal_quadrupled(), FLT_MIN);
  EXPECT_EQ(third(), nearest_third);
}

// in_fp_env: the kernel's call, and only the call, runs in the environment;
// its repro options name it; a kernel that requires the default environment
// comes back unavailable with the reason run gives; the default changes nothing.
// round_to_format under DAZ: a subnormal operand, which every operation
// there reads as 0 (its v == 0 test included), rounds to the sign's zero in
// every narrower format. Returning v there, it once handed the subnormal
// back: softmax_pe4m3_f32 stored a value off the E4M3 grid.
volatile double subnormal_double = 0x1p-1070;

TEST(FpEnv, RoundToFormatUnderDazGivesZeroForASubnormal) {
  if (!fp_env_unsupported(FpEnv::daz).empty()) GTEST_SKIP() << fp_env_unsupported(FpEnv::daz);
  for (Format f : {Format::f32, Format::f16, Format::bf16, Format::e4m3, Format::e4m3_div256}) {
    EXPECT_EQ(round_to_format(subnormal_double, f), 0.0) << name(f);  // far below every quantum
    double up = 1, down = 1;
    {
      const FpEnvScope env(FpEnv::daz);
      up = round_to_format(subnormal_double, f);
      down = round_to_format(-subnormal_double, f);
    }
    EXPECT_EQ(up, 0.0) << name(f);
    EXPECT_FALSE(std::signbit(up)) << name(f);
    EXPECT_EQ(down, 0.0) << name(f);
    EXPECT_TRUE(std::signbit(down)) << name(f);
  }
}

TEST(FpEnv, KernelInAnEnvironmentRunsOnlyItsCallsThere) {
  if (!fp_env_unsupported(FpEnv::ftz).empty()) GTEST_SKIP() << fp_env_unsupported(FpEnv::ftz);
  float seen = -1;
  Kernel k;
  k.name = "probe";
  k.load_options = "--plugin /x.so";
  k.compute = [&seen](const OpCall&) { seen = tiny_halved(); };
  const OpCall call{Op::softmax, {}, {}, 1, 1, 1.0};

  const Kernel ftz = in_fp_env(k, FpEnv::ftz);
  EXPECT_TRUE(ftz.available);
  EXPECT_EQ(ftz.load_options, "--plugin /x.so --fp-env ftz");
  ftz.compute(call);
  EXPECT_EQ(seen, 0.0f);                              // flushed inside the call
  EXPECT_EQ(tiny_halved(), std::ldexp(1.0f, -127));  // and not after it
  k.compute(call);
  EXPECT_EQ(seen, std::ldexp(1.0f, -127));  // the original is untouched

  const Kernel same = in_fp_env(k, FpEnv::standard);
  EXPECT_EQ(same.load_options, k.load_options);
  same.compute(call);
  EXPECT_EQ(seen, std::ldexp(1.0f, -127));

  k.requires_default_fp_env = "needs subnormals";
  EXPECT_EQ(not_run_in_fp_env(k, FpEnv::standard), "");
  const Kernel off = in_fp_env(k, FpEnv::daz);
  EXPECT_FALSE(off.available);
  EXPECT_EQ(off.unavailable_reason, not_run_in_fp_env(k, FpEnv::daz));
  EXPECT_EQ(off.unavailable_reason,
            "not run in the daz environment: it requires the default one (needs subnormals)");
}

}  // namespace
}  // namespace softcheck
