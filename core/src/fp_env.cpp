#include "softcheck/fp_env.hpp"

#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define SOFTCHECK_HAS_MXCSR 1
#endif

namespace softcheck {

namespace {

constexpr FpEnv all_envs[] = {FpEnv::standard, FpEnv::ftz,      FpEnv::daz,        FpEnv::ftz_daz,
                              FpEnv::upward,   FpEnv::downward, FpEnv::toward_zero};

#ifdef SOFTCHECK_HAS_MXCSR
constexpr unsigned mxcsr_ftz = 0x8000;  // flush to zero (bit 15)
constexpr unsigned mxcsr_daz = 0x0040;  // denormals are zero (bit 6)
#endif

}  // namespace

std::optional<FpEnv> parse_fp_env(std::string_view s) {
  for (FpEnv e : all_envs)
    if (name(e) == s) return e;
  return std::nullopt;
}

std::vector<std::string> fp_env_names() {
  std::vector<std::string> names;
  for (FpEnv e : all_envs) names.emplace_back(name(e));
  return names;
}

std::string fp_env_unsupported(FpEnv e) {
  switch (e) {
    case FpEnv::standard: return {};
    case FpEnv::ftz:
    case FpEnv::daz:
    case FpEnv::ftz_daz:
#ifdef SOFTCHECK_HAS_MXCSR
      return {};
#else
      return std::string(name(e)) + " needs x86's MXCSR, which this machine does not have";
#endif
    case FpEnv::upward:
#ifdef FE_UPWARD
      return {};
#else
      return "this C library has no FE_UPWARD";
#endif
    case FpEnv::downward:
#ifdef FE_DOWNWARD
      return {};
#else
      return "this C library has no FE_DOWNWARD";
#endif
    case FpEnv::toward_zero:
#ifdef FE_TOWARDZERO
      return {};
#else
      return "this C library has no FE_TOWARDZERO";
#endif
  }
  return "unknown environment";
}

FpEnvScope::FpEnvScope(FpEnv e) {
  if (const std::string why = fp_env_unsupported(e); !why.empty()) throw std::invalid_argument(why);
  if (std::fegetenv(&saved_) != 0) throw std::runtime_error("fegetenv failed");
  switch (e) {
    case FpEnv::standard: break;
#ifdef SOFTCHECK_HAS_MXCSR
    case FpEnv::ftz: _mm_setcsr(_mm_getcsr() | mxcsr_ftz); break;
    case FpEnv::daz: _mm_setcsr(_mm_getcsr() | mxcsr_daz); break;
    case FpEnv::ftz_daz: _mm_setcsr(_mm_getcsr() | mxcsr_ftz | mxcsr_daz); break;
#endif
#ifdef FE_UPWARD
    case FpEnv::upward: std::fesetround(FE_UPWARD); break;
#endif
#ifdef FE_DOWNWARD
    case FpEnv::downward: std::fesetround(FE_DOWNWARD); break;
#endif
#ifdef FE_TOWARDZERO
    case FpEnv::toward_zero: std::fesetround(FE_TOWARDZERO); break;
#endif
    default: break;
  }
}

FpEnvScope::~FpEnvScope() { std::fesetenv(&saved_); }

}  // namespace softcheck
