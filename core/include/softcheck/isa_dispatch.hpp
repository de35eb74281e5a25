// The run-time choice of vector instruction set for code compiled once per
// level with target attributes: the oracle's double tier
// (oracle/src/fast_vectors.hpp) and the SIMD kernels
// (impls/src/simd_softmax.cpp). One copy of the CPU detection, its cache and
// the levels' names, so that the two cannot drift apart.
//
// Each caller states what its code for a level needs of the CPU (IsaNeeds):
// the helper takes a level only where the CPU has all of it. A level's code
// must not use more than its caller tests for, or it faults on a CPU that
// lacks the rest. The target attribute strings below name the same features
// as isa_features, and a caller whose code is compiled with more (the
// kernels add FMA) says so beside its IsaNeeds.
//
// Header-only, no dependency beyond the standard library: core/ sits below
// every layer that dispatches.
#pragma once

#include <cstdint>
#include <string_view>

namespace softcheck {

// The levels, in increasing order of what they need of the CPU (a level
// compares above the ones it supersedes).
enum class Isa : unsigned char { baseline, avx2, avx512 };

// The level's name as the kernel list prints it ("here: avx2").
constexpr std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::baseline:
      return "baseline";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

// CPU features a level's code can be compiled for, as bits of cpu_features().
namespace cpu_feature {
inline constexpr std::uint32_t avx2 = 1u << 0;
inline constexpr std::uint32_t fma = 1u << 1;
inline constexpr std::uint32_t avx512f = 1u << 2;
inline constexpr std::uint32_t avx512dq = 1u << 3;
inline constexpr std::uint32_t avx512bw = 1u << 4;
inline constexpr std::uint32_t avx512vl = 1u << 5;
}  // namespace cpu_feature

// The features this CPU has, as the compiler's runtime reports them
// (__builtin_cpu_supports, which also asks the OS whether it saves the
// registers). Read once per process, on first use: the answer cannot change
// while the process runs, and the dispatchers ask per row or per call. Off
// x86-64 none, so only the baseline level is taken.
inline std::uint32_t cpu_features() {
  static const std::uint32_t features = [] {
    std::uint32_t f = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= cpu_feature::avx2;
    if (__builtin_cpu_supports("fma")) f |= cpu_feature::fma;
    if (__builtin_cpu_supports("avx512f")) f |= cpu_feature::avx512f;
    if (__builtin_cpu_supports("avx512dq")) f |= cpu_feature::avx512dq;
    if (__builtin_cpu_supports("avx512bw")) f |= cpu_feature::avx512bw;
    if (__builtin_cpu_supports("avx512vl")) f |= cpu_feature::avx512vl;
#endif
    return f;
  }();
  return features;
}

// What a caller's code for each level needs of the CPU (baseline x86-64
// needs nothing beyond x86-64 itself).
struct IsaNeeds {
  std::uint32_t avx2 = 0;
  std::uint32_t avx512 = 0;
};

// Each level's defining features: AVX2; AVX-512 F, DQ, BW and VL, the set
// the AVX-512 CPUs since Skylake-SP share (VL gives 128- and 256-bit vectors,
// such as the oracle's 4 lanes of doubles, the AVX-512 instructions). Both
// callers test exactly these.
inline constexpr IsaNeeds isa_features{cpu_feature::avx2, cpu_feature::avx512f | cpu_feature::avx512dq |
                                                              cpu_feature::avx512bw | cpu_feature::avx512vl};

// The same features as target attribute strings, for
// __attribute__((target(...))) (which needs a string literal; a caller
// adds features by concatenation: SOFTCHECK_TARGET_AVX2 ",fma").
#define SOFTCHECK_TARGET_AVX2 "avx2"
#define SOFTCHECK_TARGET_AVX512 "avx512f,avx512dq,avx512bw,avx512vl"

// Whether a CPU with `features` can run the level's code.
constexpr bool isa_supported(Isa isa, IsaNeeds needs, std::uint32_t features) {
  switch (isa) {
    case Isa::baseline:
      return true;
    case Isa::avx2:
      return (features & needs.avx2) == needs.avx2;
    case Isa::avx512:
      return (features & needs.avx512) == needs.avx512;
  }
  return false;
}
inline bool isa_supported(Isa isa, IsaNeeds needs) {
#if defined(__x86_64__)
  return isa_supported(isa, needs, cpu_features());
#else
  (void)needs;
  return isa == Isa::baseline;  // the other levels' code is x86-64 code
#endif
}

// The highest level this CPU can run.
constexpr Isa best_isa(IsaNeeds needs, std::uint32_t features) {
  if (isa_supported(Isa::avx512, needs, features)) return Isa::avx512;
  if (isa_supported(Isa::avx2, needs, features)) return Isa::avx2;
  return Isa::baseline;
}
inline Isa best_isa(IsaNeeds needs) {
  if (isa_supported(Isa::avx512, needs)) return Isa::avx512;
  if (isa_supported(Isa::avx2, needs)) return Isa::avx2;
  return Isa::baseline;
}

}  // namespace softcheck
