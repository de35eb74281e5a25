// The floating-point environment a kernel runs in, as an axis of `run`
// (docs/fp-env.md): the default (round to nearest, subnormals kept), flush
// to zero and denormals are zero (x86's MXCSR FTZ and DAZ bits, what
// -ffast-math's crtfastmath.o and many GPU and DSP paths set), and the three
// directed rounding modes. Only the kernel's calls run in it: the oracle,
// the judge and the reference kernels always run in the default one (their
// error bounds assume round to nearest with subnormals).
#pragma once

#include <cfenv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace softcheck {

enum class FpEnv { standard, ftz, daz, ftz_daz, upward, downward, toward_zero };

constexpr std::string_view name(FpEnv e) {
  switch (e) {
    case FpEnv::standard: return "default";
    case FpEnv::ftz: return "ftz";
    case FpEnv::daz: return "daz";
    case FpEnv::ftz_daz: return "ftz_daz";
    case FpEnv::upward: return "upward";
    case FpEnv::downward: return "downward";
    case FpEnv::toward_zero: return "toward_zero";
  }
  return "?";
}

// What each setting changes, for --help and the docs.
constexpr std::string_view description(FpEnv e) {
  switch (e) {
    case FpEnv::standard: return "round to nearest, subnormals kept (IEEE 754's default)";
    case FpEnv::ftz: return "flush to zero: subnormal results become 0 (MXCSR FTZ)";
    case FpEnv::daz: return "denormals are zero: subnormal operands read as 0 (MXCSR DAZ)";
    case FpEnv::ftz_daz: return "both FTZ and DAZ (what -ffast-math sets at start-up)";
    case FpEnv::upward: return "round toward +inf (fesetround FE_UPWARD)";
    case FpEnv::downward: return "round toward -inf (fesetround FE_DOWNWARD)";
    case FpEnv::toward_zero: return "round toward zero (fesetround FE_TOWARDZERO)";
  }
  return "";
}

std::optional<FpEnv> parse_fp_env(std::string_view s);
std::vector<std::string> fp_env_names();

// Empty when this machine can set `e`, else why not (FTZ and DAZ need x86's
// MXCSR; a directed rounding mode needs <cfenv>'s macro).
std::string fp_env_unsupported(FpEnv e);

// Sets `e` on this thread for the scope's life and restores the previous
// environment (fegetenv / fesetenv) at its end. Throws std::invalid_argument
// when fp_env_unsupported(e) is not empty.
class FpEnvScope {
 public:
  explicit FpEnvScope(FpEnv e);
  ~FpEnvScope();
  FpEnvScope(const FpEnvScope&) = delete;
  FpEnvScope& operator=(const FpEnvScope&) = delete;

 private:
  std::fenv_t saved_;
};

}  // namespace softcheck
