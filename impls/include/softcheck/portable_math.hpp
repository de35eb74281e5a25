// exp and log of a float that give the same bits on the host (g++) and on a
// CUDA device (nvcc): the math the tiled online softmax and its host twin
// share (docs/cuda.md). exp2 and log2, below, the same for the attention
// kernel and its twin (attention_steps.hpp, docs/attention.md).
//
// Why not expf/logf: glibc's expf (0.502 ulp) and CUDA's expf (<= 2 ulp,
// REFERENCE.md "exp accuracy") are different functions, so a host twin calling
// one cannot reproduce the bits of a kernel calling the other. These are
// evaluated in double with only IEEE operations that round identically
// everywhere: +, -, *, /, fma (correctly rounded by definition: std::fma on
// the host, __fma_rn on the device), conversion double -> float (round to
// nearest even, subnormals kept) and exact bit manipulation. Nothing else
// (no library call, no table) enters the result. The separate multiplies and
// adds must not be contracted into FMAs: the project compiles C++ with
// -ffp-contract=off and CUDA with --fmad=false (cmake/SoftcheckOptions.cmake).
//
// Accuracy: the double result is within ~2^-50 (relative) of the exact value,
// then rounded once to float, so the float result is within 0.5 ulp + 2^-20 ulp
// of exact: correctly rounded except within 2^-50 of a rounding midpoint
// (impls/tests/tiled_online_test.cpp measures both against long double).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// __host__ __device__ under nvcc, nothing under g++.
#if defined(__CUDACC__)
#define SOFTCHECK_HD __host__ __device__
#else
#define SOFTCHECK_HD
#endif

namespace softcheck::portable {

// ----------------------------------------------------- exact building blocks

SOFTCHECK_HD inline std::uint64_t bits_of(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(v));
#else
  std::uint64_t b;  // std::bit_cast is C++20; this header is also C++17 (nvcc, CMake 3.25)
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}

SOFTCHECK_HD inline double double_from_bits(std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

// a*b + c with one rounding (IEEE fusedMultiplyAdd).
SOFTCHECK_HD inline double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// 2^k as a double, exact for -1022 <= k <= 1023.
SOFTCHECK_HD inline double pow2(int k) {
  return double_from_bits(static_cast<std::uint64_t>(k + 1023) << 52);
}

// The integer nearest to t (ties to even), for |t| < 2^51: adding and removing
// 1.5 * 2^52 rounds away the fraction in one IEEE addition.
SOFTCHECK_HD inline double nearest_integer(double t) {
  constexpr double shifter = 0x1.8p52;
  return (t + shifter) - shifter;
}

// ------------------------------------------------------------------ exp

inline constexpr double log2_e = 0x1.71547652b82fep+0;
// ln 2 = ln2_hi + ln2_lo; ln2_hi has 32 significant bits, so k * ln2_hi is
// exact for |k| < 2^21 (Cody-Waite).
inline constexpr double ln2_hi = 0x1.62e42fee00000p-1;
inline constexpr double ln2_lo = 0x1.a39ef35793c76p-33;

// exp(r) for |r| <= ln(2)/2 + 2^-30: Taylor polynomial of degree 12 by Horner
// with fma; truncation r^13/13! <= 2^-52 relative.
SOFTCHECK_HD inline double exp_reduced(double r) {
  double p = 0x1.1eed8eff8d898p-29;   // 1/12!
  p = fma_rn(p, r, 0x1.ae64567f544e4p-26);  // 1/11!
  p = fma_rn(p, r, 0x1.27e4fb7789f5cp-22);  // 1/10!
  p = fma_rn(p, r, 0x1.71de3a556c734p-19);  // 1/9!
  p = fma_rn(p, r, 0x1.a01a01a01a01ap-16);  // 1/8!
  p = fma_rn(p, r, 0x1.a01a01a01a01ap-13);  // 1/7!
  p = fma_rn(p, r, 0x1.6c16c16c16c17p-10);  // 1/6!
  p = fma_rn(p, r, 0x1.1111111111111p-7);   // 1/5!
  p = fma_rn(p, r, 0x1.5555555555555p-5);   // 1/4!
  p = fma_rn(p, r, 0x1.5555555555555p-3);   // 1/3!
  p = fma_rn(p, r, 0.5);
  p = fma_rn(p, r, 1.0);
  return fma_rn(p, r, 1.0);
}

// exp(x) rounded to float. x = k ln2 + r, exp(x) = 2^k exp(r); 2^k exp(r) is
// formed exactly in double (k in [-151, 129]) and rounded to float once, which
// also produces subnormals and overflows to +inf correctly.
SOFTCHECK_HD inline float exp(float x) {
  if (x != x) return x;                  // NaN
  if (x > 89.0f) return INFINITY;        // exp(89) > FLT_MAX (+inf included)
  if (x < -104.0f) return 0.0f;          // exp(-104) < denorm_min / 2 (-inf included)
  const double xd = x;
  const double k = nearest_integer(xd * log2_e);
  const double r = fma_rn(-k, ln2_lo, xd - k * ln2_hi);  // xd - k * ln2_hi is exact
  return static_cast<float>(exp_reduced(r) * pow2(static_cast<int>(k)));
}

// ------------------------------------------------------------------ log

// log(f) for f in [sqrt(1/2), sqrt(2)]: 2 atanh(s), s = (f - 1)/(f + 1),
// |s| <= 0.1716, series in s^2 to s^20 (truncation < 2^-60).
SOFTCHECK_HD inline double log_reduced(double f) {
  const double s = (f - 1.0) / (f + 1.0);  // f - 1 is exact (Sterbenz)
  const double s2 = s * s;
  double q = 0x1.8618618618618p-5;  // 1/21
  q = fma_rn(q, s2, 0x1.af286bca1af28p-5);  // 1/19
  q = fma_rn(q, s2, 0x1.e1e1e1e1e1e1ep-5);  // 1/17
  q = fma_rn(q, s2, 0x1.1111111111111p-4);  // 1/15
  q = fma_rn(q, s2, 0x1.3b13b13b13b14p-4);  // 1/13
  q = fma_rn(q, s2, 0x1.745d1745d1746p-4);  // 1/11
  q = fma_rn(q, s2, 0x1.c71c71c71c71cp-4);  // 1/9
  q = fma_rn(q, s2, 0x1.2492492492492p-3);  // 1/7
  q = fma_rn(q, s2, 0x1.999999999999ap-3);  // 1/5
  q = fma_rn(q, s2, 0x1.5555555555555p-2);  // 1/3
  q = fma_rn(q, s2, 1.0);
  return (2.0 * s) * q;
}

// log(v) rounded to float. v = 2^e f with f in [sqrt(1/2), sqrt(2)] (every
// float is a normal double, so the split is read off the double's bits).
SOFTCHECK_HD inline float log(float v) {
  if (v != v || v < 0.0f) return NAN;
  if (v == 0.0f) return -INFINITY;
  if (v == INFINITY) return INFINITY;
  const std::uint64_t b = bits_of(static_cast<double>(v));
  int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  double f = double_from_bits((b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  if (f > 0x1.6a09e667f3bcdp+0) {  // sqrt(2)
    f *= 0.5;
    e += 1;
  }
  const double de = e;
  return static_cast<float>(de * ln2_hi + fma_rn(de, ln2_lo, log_reduced(f)));  // de * ln2_hi exact
}

// ------------------------------------------------------------------ exp2

// ln 2 in double (rounded to nearest): the argument of exp_reduced below.
inline constexpr double ln2 = 0x1.62e42fefa39efp-1;

// 2^x rounded to float: FlashAttention's exponential (the scale folded with
// log2(e) by one fma, REFERENCE.md "FlashAttention tiling"), here evaluated
// as the attention kernel and its host twin need it, with the same bits on
// both sides (impls/cuda/attention.cu, impls/src/attention_twin.cpp).
// x = k + r with k the nearest integer (x - k is exact: both are floats of
// the same binade or k = 0), |r| <= 1/2; 2^r = exp(r ln 2) with
// |r ln 2| <= ln(2)/2, exp_reduced's range; the product r * ln2 rounds once
// (2^-53 relative of an argument <= 0.35: a relative error below 2^-54 in
// 2^r). 2^k exp(r ln 2) is formed exactly in double (k in [-151, 128]) and
// rounded to float once: within 0.5 ulp + 2^-20 ulp of exact, as exp
// (measured against long double by impls.PortableExp2.*, every float of
// [-1, 1) and a dense sweep of the whole range).
SOFTCHECK_HD inline float exp2(float x) {
  if (x != x) return x;              // NaN
  if (x >= 128.0f) return INFINITY;  // 2^128 > FLT_MAX (+inf included)
  if (x < -151.0f) return 0.0f;      // 2^-151 < denorm_min / 2 (-inf included)
  const double xd = x;
  const double k = nearest_integer(xd);
  const double r = xd - k;  // exact
  return static_cast<float>(exp_reduced(r * ln2) * pow2(static_cast<int>(k)));
}

// ------------------------------------------------------------------ log2

// log2(v) rounded to float: FlashAttention's lse = (m + log2 l) ln 2 in log2
// units. v = 2^e f, f in [sqrt(1/2), sqrt(2)] as in log; log2 v = e +
// log(f) log2(e), in double: log_reduced's error (~2^-52 relative) and two
// roundings (the product, the sum; |log2 f| <= 1/2 <= |e| when e != 0, so no
// cancellation) keep the double within ~2^-50 of exact, then one rounding to
// float: 0.5 ulp + 2^-20 ulp, as log (impls.PortableLog2.*). log2 of a power
// of two is exact (f = 1 gives log_reduced(1) = 0).
SOFTCHECK_HD inline float log2(float v) {
  if (v != v || v < 0.0f) return NAN;
  if (v == 0.0f) return -INFINITY;
  if (v == INFINITY) return INFINITY;
  const std::uint64_t b = bits_of(static_cast<double>(v));
  int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  double f = double_from_bits((b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  if (f > 0x1.6a09e667f3bcdp+0) {  // sqrt(2)
    f *= 0.5;
    e += 1;
  }
  return static_cast<float>(static_cast<double>(e) + log_reduced(f) * log2_e);
}

// ------------------------------------------------------------ float steps

// a*b + c in float with one rounding (fmaf on both sides: std::fma of floats
// on the host, __fmaf_rn on the device; --fmad=false and -ffp-contract=off
// only stop the compilers from fusing a*b + c written out, never this).
SOFTCHECK_HD inline float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

}  // namespace softcheck::portable
