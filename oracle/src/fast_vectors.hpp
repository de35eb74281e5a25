// The fast tiers' 4-lane vectors and their run-time dispatch.
//
// The double tier's hot loops are also written on 4-lane GCC vectors of
// doubles (fast_row_in's max scan, exp pass and last pass in fast_rows.cpp,
// compare_row_fast's f32 element rule in fast_compare.cpp): compiled for
// AVX-512 and AVX2, used where the CPU has them (softcheck/isa_dispatch.hpp),
// and for baseline x86-64 (the same code split into SSE2 halves), chosen at
// run time. Each lane does exactly the scalar code's
// IEEE operations in the same order (the expressions are spelled the same,
// -ffp-contract=off, no FMA is enabled; the integer steps are exact), so the
// vectors give the scalar code's bits and need no error analysis of their
// own: the bounds are those written at the scalar code. Whatever the vectors
// do not take (a row's tail, rare cases) goes through the scalar code, and
// every sum whose rounding depends on the order stays in index order.
// detail::fast_tier_vectors() selects the path (the tests compare them bit
// for bit).
//
// This header holds the lane primitives and the dispatch; the loops
// themselves sit beside the scalar code they mirror. Private to oracle/,
// internal linkage as fast_arith.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fast_arith.hpp"
#include "softcheck/format.hpp"
#include "softcheck/isa_dispatch.hpp"

// 32-byte vectors (vec:: below) pass only between always-inlined helpers:
// GCC warns that their ABI differs without AVX; nothing here crosses an ABI.
// (The pragma stays in force for the including .cpp, whose vector loops
// need it too.)
#pragma GCC diagnostic ignored "-Wpsabi"

namespace softcheck::oracle {

namespace detail {
// Which code the double tier and its f32 decision run (this thread): 0 the
// best vectors the CPU has, 1 baseline x86-64 vectors, 2 the scalar code
// alone, 3 AVX2 vectors at most. For the tests, which compare the paths bit
// for bit; not in any public header.
int& fast_tier_vectors();  // fast_rows.cpp
// Whether compare_row_fast keeps a DD row's per-element preparations for
// the next result judged against it (this thread; default true). For the
// tests, which compare both ways bit for bit.
bool& fast_tier_keeps_preparations();  // fast_compare.cpp
}  // namespace detail

namespace {
namespace vec {

#define SOFTCHECK_VINLINE inline __attribute__((always_inline))
constexpr std::size_t L = 4;
using vd = double __attribute__((vector_size(32)));
using vl = std::int64_t __attribute__((vector_size(32)));
using vu = std::uint64_t __attribute__((vector_size(32)));
using vf = float __attribute__((vector_size(16)));
using vi = std::int32_t __attribute__((vector_size(16)));

SOFTCHECK_VINLINE vd splat(double x) { return vd{x, x, x, x}; }
SOFTCHECK_VINLINE vd load(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SOFTCHECK_VINLINE void store(double* p, vd v) { std::memcpy(p, &v, sizeof v); }
SOFTCHECK_VINLINE vd vabs(vd x) { return reinterpret_cast<vd>(reinterpret_cast<vu>(x) & 0x7fffffffffffffffULL); }
// std::max(a, b) and std::min(a, b) lane by lane, the same selections.
SOFTCHECK_VINLINE vd vmax(vd a, vd b) { return a < b ? b : a; }
SOFTCHECK_VINLINE vd vmin(vd a, vd b) { return b < a ? b : a; }
// pow2d lane by lane (m + 1023 in [1, 2046]).
SOFTCHECK_VINLINE vd pow2v(vl m) { return reinterpret_cast<vd>(reinterpret_cast<vu>(m + 1023) << 52); }
SOFTCHECK_VINLINE vd gap_up(vd x) { return reinterpret_cast<vd>(reinterpret_cast<vl>(x) + 1) - x; }
SOFTCHECK_VINLINE vl widen(vi m) { return __builtin_convertvector(m, vl); }
SOFTCHECK_VINLINE bool any_lane(vl m) { return (m[0] | m[1] | m[2] | m[3]) != 0; }
SOFTCHECK_VINLINE bool all_lanes(vl m) { return (m[0] & m[1] & m[2] & m[3]) != 0; }
// ulp_exp for a > 0 and a format with emin > -1001: binade's -1001 below
// 2^-1000 and the exponent field there both clamp to emin.
SOFTCHECK_VINLINE vl ulp_exp(vd a, const FormatInfo& fi) {
  vl e = reinterpret_cast<vl>((reinterpret_cast<vu>(a) >> 52) & 0x7ff) - 1023;
  e = e < fi.emin ? vl{} + fi.emin : e;
  e = e > fi.emax ? vl{} + fi.emax : e;
  return e - (fi.precision - 1);
}
// f32_ordinal lane by lane; `xf` is x converted to float.
SOFTCHECK_VINLINE vd f32_ordinal(vd x, vf xf) {
  const vd m = __builtin_convertvector(reinterpret_cast<vi>(xf) & 0x7fffffff, vd);
  return reinterpret_cast<vl>(x) < 0 ? -m : m;
}

// What the vectors' code needs of the CPU at each level: the levels' own
// features, which are all it is compiled for (SOFTCHECK_TARGET_AVX2 and
// SOFTCHECK_TARGET_AVX512 below; no FMA, see above).
inline constexpr IsaNeeds kVectorNeeds = isa_features;

// The instruction set of the vectors: the best the CPU has unless a test
// asked for another (detail::fast_tier_vectors()).
inline Isa isa() {
  static const Isa best = best_isa(kVectorNeeds);
  switch (detail::fast_tier_vectors()) {
    case 1: return Isa::baseline;
    case 3: return std::min(best, Isa::avx2);
    default: return best;
  }
}
// fn_isa(args): fn_baseline, fn_avx2 or fn_avx512, all three the same code.
#define SOFTCHECK_DISPATCH(ret, fn, params, args)                                                     \
  __attribute__((target(SOFTCHECK_TARGET_AVX512))) ret fn##_avx512 params { return fn##_body args; } \
  __attribute__((target(SOFTCHECK_TARGET_AVX2))) ret fn##_avx2 params { return fn##_body args; }     \
  ret fn##_baseline params { return fn##_body args; }                                               \
  ret fn params {                                                                                    \
    switch (isa()) {                                                                                 \
      case Isa::avx512: return fn##_avx512 args;                                                     \
      case Isa::avx2: return fn##_avx2 args;                                                         \
      default: return fn##_baseline args;                                                            \
    }                                                                                                \
  }

}  // namespace vec
}  // namespace
}  // namespace softcheck::oracle
