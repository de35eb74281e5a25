// shifted_simd_f32 and online_simd_f32: the max-shifted softmax of shifted.cpp
// and the online softmax of online.cpp, vectorised.
//
// The arithmetic is written once, on 16-lane vectors (GCC/Clang vector
// extensions), and compiled three times with target attributes: AVX-512 (one
// zmm), AVX2 (two ymm) and baseline x86-64 (four xmm); the kernels pick the
// best the CPU has at first use (__builtin_cpu_supports). Every lane does the
// same IEEE operations in the same order on every ISA: nothing is contracted
// (-ffp-contract=off), and the fused multiply-adds, in exp16, are fma lane
// by lane (vfmadd with FMA, glibc's correctly rounded fma without), so the
// three give the same bits (tested) and the contracts below do not depend on
// the machine.
//
// shifted_simd:
//   a   = fl(max_i x_i / T)   (= max_i fl(x_i / T): rounding is monotonic)
//   d_i = fl(fl(x_i / T) - a)
//   e_i = exp16(d_i)          (below)
//   S   = sum of e_i: lane l sums e_l, e_{l+16}, ... in order, then a fixed
//         4-level tree over the 16 lanes
//   y_j = e_j * fl(1 / S)
// online_simd: see "online_simd" below.
#include "simd_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernel_util.hpp"

// 64-byte vectors passed between the (always inlined, file-local) helpers:
// GCC and Clang warn that their ABI differs without AVX-512; nothing here
// crosses an ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace softcheck::kernels {
namespace {

constexpr std::size_t lanes = 16;
using vf = float __attribute__((vector_size(lanes * sizeof(float))));
using vi = std::int32_t __attribute__((vector_size(lanes * sizeof(std::int32_t))));

#define SOFTCHECK_INLINE inline __attribute__((always_inline))

SOFTCHECK_INLINE vf splat(float v) { return vf{} + v; }

SOFTCHECK_INLINE vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SOFTCHECK_INLINE void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

// The first `count` (< 16) elements of p, the other lanes `fill`.
SOFTCHECK_INLINE vf load_part(const float* p, std::size_t count, float fill) {
  alignas(64) float buf[lanes];
  for (std::size_t i = 0; i < lanes; ++i) buf[i] = i < count ? p[i] : fill;
  return load(buf);
}
SOFTCHECK_INLINE void store_part(float* p, vf v, std::size_t count) {
  alignas(64) float buf[lanes];
  store(buf, v);
  for (std::size_t i = 0; i < count; ++i) p[i] = buf[i];
}

SOFTCHECK_INLINE vf vmax(vf a, vf b) { return a > b ? a : b; }

SOFTCHECK_INLINE bool any_lane(vi mask) {
  std::int32_t any = 0;
  for (std::size_t i = 0; i < lanes; ++i) any |= mask[i];
  return any != 0;
}

// Doubles in halves of 8 lanes (64 bytes, one zmm): GCC splits a 16-double
// vector into scalar moves around the per-lane fma, 8 lanes stay vectorised.
using vf8 = float __attribute__((vector_size(lanes / 2 * sizeof(float))));
using vd8 = double __attribute__((vector_size(lanes / 2 * sizeof(double))));
using vl8 = std::int64_t __attribute__((vector_size(lanes / 2 * sizeof(std::int64_t))));
using vd16 = double __attribute__((vector_size(lanes * sizeof(double))));  // only converted and split
SOFTCHECK_INLINE vd8 splat_d(double v) { return vd8{} + v; }
SOFTCHECK_INLINE vl8 splat_l(std::int64_t v) { return vl8{} + v; }
SOFTCHECK_INLINE vd8 from_bits_d(vl8 v) {
  vd8 f;
  std::memcpy(&f, &v, sizeof f);
  return f;
}
SOFTCHECK_INLINE vl8 to_bits_d(vd8 v) {
  vl8 b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// a * b + c rounded once, lane by lane: vfmadd where the target has FMA,
// glibc's correctly rounded fma otherwise (the same bits either way).
SOFTCHECK_INLINE vd8 fma8(vd8 a, vd8 b, vd8 c) {
  vd8 r;
  for (std::size_t i = 0; i < lanes / 2; ++i) r[i] = __builtin_fma(a[i], b[i], c[i]);
  return r;
}

// Horizontal max and sum of the 16 lanes in one fixed order: halves folded
// 8 + 8, 4 + 4, 2 + 2, 1 + 1 (a 4-level tree).
template <class F>
SOFTCHECK_INLINE float fold(vf v, F op) {
  alignas(64) float b[lanes];
  store(b, v);
  for (std::size_t half = lanes / 2; half >= 1; half /= 2)
    for (std::size_t i = 0; i < half; ++i) b[i] = op(b[i], b[i + half]);
  return b[0];
}

// exp(d) for every lane, d <= 0 (a -inf lane, a masked entry, gives 0),
// computed in double and rounded once to f32. Monotone and within 1.001u of
// exp(d), which is what the kernels need: every kernel with a contract claims
// the exact ordering property (x_i <= x_j implies y_i <= y_j), and an f32
// polynomial exp is not monotone (a degree-7 Horner in f32 gave 2,878 one-ulp
// inversions over [-104, 0]). Tang's table method with 16 entries keeps the
// double work small: a degree-4 polynomial instead of degree 8 (the earlier
// version, 0.9993u measured, about 1.5 times the cost).
//  - d < -104 is raised to -104 (NaN stays NaN, -inf becomes -104):
//    exp(-104) = 6.8e-46 is below denorm_min/2 = 7.0e-46 by 3%, far more
//    than the 2^-34 below, so it rounds to exactly 0, the correctly rounded
//    value for every d <= -104 (a masked entry, d = -inf, gets exactly 0 like
//    shifted_f32's exp(-inf)).
//  - In double (x = d is exact there): n = nearest integer to x * C, C =
//    fl(16 / ln 2), by fma(x, C, 1.5 * 2^52) (x * C exact, one rounding to an
//    integer); |x C - 16x / ln 2| < 2^-41, so |x - n ln2/16| <= (ln2/16)
//    (1/2 + 2^-41) =: rho = 0.021661. r = fma(-n, L, x), L = fl(ln2 / 16):
//    |n| <= 2401 puts n (L - ln2/16) below 2^-46.7, the rounding of r adds
//    2^-53 |r|: r = x - n ln2/16 + eta, |eta| < 2^-46.6.
//  - n = 16k + j: the low 4 bits of fma's result are j (table index), the
//    next 12 are k; 2^(j/16) (rounded to double, 2^-53) times 2^k by adding k
//    to its exponent (exact: 2^-151 <= the result < 2, a normal double).
//  - q = r (1 + r/2 + r^2/6 + r^3/24) ~ e^r - 1: Taylor truncation
//    |e^r - 1 - q| <= rho^5/5! e^rho relative to e^r, < 2^-34.48 (Lagrange
//    remainder); the Horner fmas add a few 2^-53 |q| <= 2^-58.
//  - y = fma(q, s, s), s = 2^(j/16) 2^k, one rounding (2^-53), then one
//    rounding to f32 (subnormals included).
// So before the last rounding the double value V is within eps = 2^-34.48 +
// 2^-46.6 + 3 * 2^-53 < 2^-34.4 of exp(d) relatively, and |exp16(d) - exp(d)|
// <= u |V| + eps exp(d) <= (1 + eps + eps/u) u exp(d) < 1.001u exp(d) (+
// denorm_min/2 for subnormal results), u = 2^-24: one rounding to nearest.
// Measured on every f32 in [-104, 0]: 0.9999u, 0.5006 ulp.
// Monotone, not just accurate:
//  - for a fixed n, r is a rounded (monotone) function of x, and the
//    neighbouring f32 arguments differ by ulp_f32(x) >= 2^-24 |x| (r = x
//    when n = 0), while the double roundings inside q move it by ~2^-52 |q|,
//    too little to undo a step of r (at n = 0: fl(t r) with t ~ 1 + r/2 moves
//    by |r| 2^-24 per step of r, by |r| 2^-52 per step of t); fma(q, s, s)
//    is monotone in q (s > 0) and rounding is monotone;
//  - n is non-decreasing in x (a rounded fma); where n steps up, |x| >= rho
//    (1 - 2^-40), so the next f32 argument is larger by >= 2^-24 * 0.02166 =
//    2^-29.5 and exp by a factor >= 1 + 2^-29.5, while both values are within
//    2^-34.4 of exp (margin 11x).
// impls/tests/simd_softmax_test.cpp checks monotonicity on every f32 in
// [-104, 0] and the bound on every 16th (all with SOFTCHECK_EXHAUSTIVE=1).

// 2^(j/16), j = 0..15, rounded to double (from 60-digit decimals).
constexpr vd8 exp2_sixteenths_low = {0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0,
                                     0x1.2387a6e756238p+0, 0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0,
                                     0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0};
constexpr vd8 exp2_sixteenths_high = {0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0,
                                      0x1.9c49182a3f090p+0, 0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0,
                                      0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

// 2^(j/16) for the low 4 bits j of every lane: one vpermi2pd with AVX-512
// (GCC's two-vector shuffle; it lowers it for the other targets), the same
// bits everywhere since it only selects.
SOFTCHECK_INLINE vd8 exp2_sixteenth(vl8 j) {
#if defined(__clang__)  // no variable-mask shuffle in Clang (the fuzz build)
  vd8 t;
  for (std::size_t i = 0; i < lanes / 2; ++i) {
    const auto k = static_cast<std::size_t>(j[i] & 15);
    t[i] = k < 8 ? exp2_sixteenths_low[k] : exp2_sixteenths_high[k - 8];
  }
  return t;
#else
  return __builtin_shuffle(exp2_sixteenths_low, exp2_sixteenths_high, j);
#endif
}

// exp of 8 arguments in [-104, 0] (or NaN; converted exactly from f32), in
// double, rounded to f32.
SOFTCHECK_INLINE vf8 exp8_in_double(vd8 x) {
  const vd8 magic = splat_d(0x1.8p52);
  const vd8 n_magic = fma8(x, splat_d(0x1.71547652b82fep+4), magic);  // 1.5 * 2^52 + n
  const vd8 n = n_magic - magic;
  const vd8 r = fma8(-n, splat_d(0x1.62e42fefa39efp-5), x);
  vd8 t = fma8(splat_d(1.0 / 24.0), r, splat_d(1.0 / 6.0));
  t = fma8(t, r, splat_d(0.5));
  t = fma8(t, r, splat_d(1.0));
  const vd8 q = t * r;
  // n's bits: j in 0..3, k in 4..15 (two's complement, as 1.5 * 2^52 + n);
  // << 48 moves k to the exponent field, the mask drops j. NaN lanes get
  // some scale, and fma(NaN, s, s) is NaN.
  const vl8 n_bits = to_bits_d(n_magic);
  const vl8 exponent_field = splat_l(static_cast<std::int64_t>(0xfff0000000000000u));
  const vd8 s = from_bits_d(to_bits_d(exp2_sixteenth(n_bits)) + ((n_bits << 48) & exponent_field));
  return __builtin_convertvector(fma8(q, s, s), vf8);
}

SOFTCHECK_INLINE vf exp16(vf d_in) {
  const vf d = vmax(splat(-104.0f), d_in);  // -inf -> -104 (then exactly 0); NaN stays NaN
  // All 16 lanes widened at once (GCC widens a half vector in quarters:
  // twice the instructions), then halves by shuffles, not through memory (a
  // 64-byte reload of two 32-byte stores misses store forwarding).
  const vd16 wide = __builtin_convertvector(d, vd16);
  const vf8 low = exp8_in_double(__builtin_shufflevector(wide, wide, 0, 1, 2, 3, 4, 5, 6, 7));
  const vf8 high = exp8_in_double(__builtin_shufflevector(wide, wide, 8, 9, 10, 11, 12, 13, 14, 15));
  const vf v = __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return d == d ? v : d;  // NaN in, the same NaN out
}

// Pass 2 of a row: e_i = exp16(z_i - a) stored in y, their 16 lane sums
// returned. z_i = x_i / T, the division only when T != 1 (a template
// parameter: a runtime select would divide every element).
template <bool Scaled>
SOFTCHECK_INLINE vf exp_and_lane_sums(const float* x, float* y, std::size_t n, vf va, vf vt) {
  const std::size_t full = n - n % lanes;
  vf s = splat(0.0f);
  for (std::size_t i = 0; i < full; i += lanes) {
    vf z = load(x + i);
    if constexpr (Scaled) z = z / vt;
    const vf e = exp16(z - va);
    store(y + i, e);
    s = s + e;
  }
  if (full < n) {
    const std::size_t rest = n - full;
    vf z = load_part(x + full, rest, 0.0f);
    if constexpr (Scaled) z = z / vt;
    vf e = exp16(z - va);
    alignas(64) float keep[lanes];
    for (std::size_t i = 0; i < lanes; ++i) keep[i] = i < rest ? 1.0f : 0.0f;
    e = load(keep) == splat(1.0f) ? e : splat(0.0f);  // padding lanes add exactly 0
    store_part(y + full, e, rest);
    s = s + e;
  }
  return s;
}

// One row, x -> y (may alias), op softmax. A fully masked row (max -inf) gives
// NaN everywhere: the declared nan policy, like shifted_f32 (-inf - -inf).
SOFTCHECK_INLINE void shifted_row(const float* x, float* y, std::size_t n, float t) {
  const std::size_t full = n - n % lanes;
  // Four running maxima: vmax's latency, not the loads, would bound one chain
  // (the max is exact, so the order does not matter).
  const vf minus_inf = splat(-std::numeric_limits<float>::infinity());
  vf m0 = minus_inf, m1 = minus_inf, m2 = minus_inf, m3 = minus_inf;
  std::size_t at = 0;
  for (; at + 4 * lanes <= full; at += 4 * lanes) {
    m0 = vmax(m0, load(x + at));
    m1 = vmax(m1, load(x + at + lanes));
    m2 = vmax(m2, load(x + at + 2 * lanes));
    m3 = vmax(m3, load(x + at + 3 * lanes));
  }
  for (; at < full; at += lanes) m0 = vmax(m0, load(x + at));
  if (full < n) m1 = vmax(m1, load_part(x + full, n - full, -std::numeric_limits<float>::infinity()));
  const vf m = vmax(vmax(m0, m1), vmax(m2, m3));
  float a = fold(m, [](float p, float q) { return p > q ? p : q; });
  if (t != 1.0f) a = a / t;
  if (a == -std::numeric_limits<float>::infinity()) {
    for (std::size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const vf lane_sums = t != 1.0f ? exp_and_lane_sums<true>(x, y, n, splat(a), splat(t))
                                 : exp_and_lane_sums<false>(x, y, n, splat(a), splat(t));
  // y_j = e_j * fl(1 / S): a multiply per element instead of a divide (a
  // vector divide costs about 16 times as much), one more rounding.
  const vf r = splat(1.0f / fold(lane_sums, [](float p, float q) { return p + q; }));
  for (std::size_t i = 0; i < full; i += lanes) store(y + i, load(y + i) * r);
  if (full < n) store_part(y + full, load_part(y + full, n - full, 1.0f) * r, n - full);
}

// ------------------------------------------------------------ online_simd
// Milakov & Gimelshein's online normaliser per lane, a block of 4 vectors at
// a time (one rescale per block instead of one per element), the 16 lanes
// merged at the end, then one more pass:
//   per lane l, per block b: m' = max(m, max_k z_k); d = d exp16(m - m') +
//     sum_k exp16(z_k - m') (in order); m = m'
//   M = max_l m_l;  D = sum_l d_l exp16(m_l - M) (the 4-level tree)
//   y_j = exp16(z_j - M) * fl(1 / D)
// Two passes over x (one write of y) instead of shifted's three.

constexpr std::size_t block_vectors = 4;

// z of 16 elements at p (count < 16: the other lanes -inf, i.e. masked).
template <bool Scaled>
SOFTCHECK_INLINE vf z_at(const float* p, std::size_t count, vf vt) {
  vf z = count >= lanes ? load(p) : load_part(p, count, -std::numeric_limits<float>::infinity());
  if constexpr (Scaled) z = z / vt;
  return z;
}

template <bool Scaled>
SOFTCHECK_INLINE void online_stats(const float* x, std::size_t n, vf vt, vf& m, vf& d) {
  const vf minus_inf = splat(-std::numeric_limits<float>::infinity());
  m = minus_inf;
  d = splat(0.0f);
  for (std::size_t i = 0; i < n; i += block_vectors * lanes) {
    vf z[block_vectors];
    std::size_t count = 0;
    vf block_max = minus_inf;
    for (; count < block_vectors && i + count * lanes < n; ++count) {
      z[count] = z_at<Scaled>(x + i + count * lanes, n - i - count * lanes, vt);
      block_max = vmax(block_max, z[count]);
    }
    const vf m_new = vmax(m, block_max);
    // A lane with nothing but -inf so far keeps (-inf, 0): shifting by 0
    // there turns every exp16(-inf - shift) into an exact 0, never NaN.
    const vf shift = m_new == minus_inf ? splat(0.0f) : m_new;
    // Once the lanes' maxima settle most blocks change none of them; then
    // every lane's factor is exp16(m - m) = exp16(0) = 1 or (still all -inf)
    // d = 0, so d * factor = d: the same bits without the exp (a NaN lane
    // always differs from itself and takes the full path).
    vf acc = any_lane(m_new != m) ? d * exp16(m - shift) : d;
    for (std::size_t k = 0; k < count; ++k) acc = acc + exp16(z[k] - shift);
    d = acc;
    m = m_new;
  }
}

template <bool Scaled>
SOFTCHECK_INLINE void online_row_scaled(const float* x, float* y, std::size_t n, float t) {
  const vf vt = splat(t);
  vf m, d;
  online_stats<Scaled>(x, n, vt, m, d);
  const float big_m = fold(m, [](float p, float q) { return p > q ? p : q; });
  if (big_m == -std::numeric_limits<float>::infinity()) {  // fully masked: the nan policy
    for (std::size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const vf vm = splat(big_m);
  const vf r = splat(1.0f / fold(d * exp16(m - vm), [](float p, float q) { return p + q; }));
  const std::size_t full = n - n % lanes;
  for (std::size_t i = 0; i < full; i += lanes) store(y + i, exp16(z_at<Scaled>(x + i, lanes, vt) - vm) * r);
  if (full < n) store_part(y + full, exp16(z_at<Scaled>(x + full, n - full, vt) - vm) * r, n - full);
}

SOFTCHECK_INLINE void online_row(const float* x, float* y, std::size_t n, float t) {
  if (t != 1.0f)
    online_row_scaled<true>(x, y, n, t);
  else
    online_row_scaled<false>(x, y, n, t);
}

// ------------------------------------------------- one body, three ISAs

template <SimdAlgorithm A>
SOFTCHECK_INLINE void row_body(const float* x, float* y, std::size_t n, float t) {
  if constexpr (A == SimdAlgorithm::shifted)
    shifted_row(x, y, n, t);
  else
    online_row(x, y, n, t);
}

template <SimdAlgorithm A>
struct RowBody {
  SOFTCHECK_INLINE static void run(const float* x, float* y, std::size_t n, float t) {
    row_body<A>(x, y, n, t);
  }
};

// exp16 over an array (its tests: monotone on every f32 argument).
struct ExpBody {
  SOFTCHECK_INLINE static void run(const float* d, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) store(out + i, exp16(load(d + i)));
    if (i < n) store_part(out + i, exp16(load_part(d + i, n - i, 0.0f)), n - i);
  }
};

// Body::run compiled for each ISA, and the entry point of one.
#if defined(__x86_64__)
template <class Body, class... Args>
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))) void on_avx512(Args... args) {
  Body::run(args...);
}
template <class Body, class... Args>
__attribute__((target("avx2,fma"))) void on_avx2(Args... args) {
  Body::run(args...);
}
#endif
template <class Body, class... Args>
void on_baseline(Args... args) {
  Body::run(args...);
}

template <class Body, class... Args>
auto entry_for(SimdIsa isa) -> void (*)(Args...) {
  switch (isa) {
#if defined(__x86_64__)
    case SimdIsa::avx512:
      return on_avx512<Body, Args...>;
    case SimdIsa::avx2:
      return on_avx2<Body, Args...>;
#else
    case SimdIsa::avx512:
    case SimdIsa::avx2:
      return nullptr;
#endif
    case SimdIsa::baseline:
      return on_baseline<Body, Args...>;
  }
  return nullptr;
}

using RowFn = void (*)(const float*, float*, std::size_t, float);
template <SimdAlgorithm A>
RowFn row_for(SimdIsa isa) {
  return entry_for<RowBody<A>, const float*, float*, std::size_t, float>(isa);
}

// First order in u = 2^-24, the derivation of shifted.cpp with this kernel's
// exp and summation order:
//  - d_j = fl(z_j - a): an absolute argument error u|z_j - a| <= uR, a
//    relative error uR of exp; exp16 adds 1.001u (above): e_j carries
//    (1.001 + R)u;
//  - S: lane sums of ceil(n/16) terms then 4 tree levels, so every term
//    passes through at most ceil(n/16) - 1 + 4 <= n/16 + 4 additions:
//    (n/16 + 4)u plus the terms' (1.001 + R)u;
//  - y_j = e_j * fl(1/S): two roundings, 2u.
//  Total: (1.001 + R) + (n/16 + 4 + 1.001 + R) + 2 = 8.002 + n/16 + 2R <= 9 + n/16 + 2R.
//  - temperature as shifted.cpp: t = 4 (a = fl(max x / T) equals
//    max fl(x_i / T)).
//  - subnormal outputs: exp16's denorm_min/2 plus the product's rounding,
//    fl(1/S) <= 1: within 1 ulp of denorm_min, covered since a >= 1.
Contract shifted_contract() {
  return declared_contract(9, 0.0625, 2, 0, 4,
                           "shifted softmax with a monotone table-and-polynomial exp in double rounded to f32 "
                           "(1.001u derived) and 16-lane summation (n/16 + 4 additions deep): e_j (1.001 + R)u, "
                           "S (n/16 + 4 + 1.001 + R)u, times fl(1/S) 2u: 8.002 + n/16 + 2R; temperature as "
                           "shifted: 4M");
}

// online_simd, first order in u = 2^-24. A term exp(z_i - M) of D is computed
// as a chain: t_i = exp16(fl(z_i - m_b)) (m_b: its lane's max after its
// block), times one factor exp16(fl(m_old - m_new)) per later change of the
// lane's max (each factor then multiplied in: +u), times exp16(fl(m_l - M)) at
// the merge (+u for the multiply). The arguments' rounding errors
// u|argument| telescope: (m_b - z_i) + sum (m_new - m_old) + (M - m_l) =
// M - z_i <= R. The exp16 errors: 1.001u each, one for t_i, one per rescale
// (at most one per block: ceil(n/64) <= n/64 + 1), one at the merge.
// Additions: within the lane at most ceil(n/16) - 1 <= n/16 after t_i, then
// the 4-level tree. So D carries
//   R + 1.001 + 2.001 (n/64 + 1) + n/16 + 2.001 + 4 = 9.003 + 0.0938n + R,
// y_j = exp16(fl(z_j - M)) (1.001 + R) times fl(1/D) (u) rounded (u):
//   total 12.004 + 0.0938n + 2R <= 13 + n/8 + 2R.
// Temperature: z_i = fl(x_i / T) everywhere, as shifted: t = 4. Subnormal
// outputs as shifted_simd. Entries that do not contribute (below L_T) add
// less than denorm_min each to D >= 1 (the lane holding M has d >= 1: its
// exp16(0) = 1 is exact, as are the factors exp16(0) = 1).
Contract online_contract() {
  return declared_contract(13, 0.125, 2, 0, 4,
                           "online softmax per lane in blocks of 64 (Milakov-Gimelshein), lanes merged, "
                           "monotone exp16 (1.001u): D's chain of exps telescopes to R, 2.001u per rescale "
                           "(<= n/64 + 1), n/16 additions, merge 2.001u + tree 4u: 9.003 + 0.094n + R; "
                           "y = exp16 (1.001 + R) * fl(1/D) 2u: 12.004 + 0.094n + 2R; temperature 4M");
}

}  // namespace

std::string_view name(SimdIsa isa) {
  switch (isa) {
    case SimdIsa::avx512:
      return "avx512";
    case SimdIsa::avx2:
      return "avx2";
    case SimdIsa::baseline:
      return "baseline";
  }
  return "?";
}

bool simd_isa_supported(SimdIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (isa) {
    case SimdIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    case SimdIsa::avx2:
      return __builtin_cpu_supports("avx2");
    case SimdIsa::baseline:
      return true;
  }
  return false;
#else
  return isa == SimdIsa::baseline;
#endif
}

SimdIsa best_simd_isa() {
  for (SimdIsa isa : {SimdIsa::avx512, SimdIsa::avx2})
    if (simd_isa_supported(isa)) return isa;
  return SimdIsa::baseline;
}

unsigned simd_threads_used(std::int64_t rows, std::int64_t cols, unsigned threads) {
  // Starting a thread costs tens of microseconds, about what a single thread
  // needs for min_elements_per_thread elements; below that it would not pay.
  constexpr std::int64_t min_elements_per_thread = std::int64_t{1} << 15;
  const std::int64_t by_work = rows * cols / min_elements_per_thread;
  const std::int64_t most = std::min<std::int64_t>({static_cast<std::int64_t>(threads), rows, by_work});
  return most > 1 ? static_cast<unsigned>(most) : 1u;
}

void simd_softmax(SimdAlgorithm algorithm, SimdIsa isa, const float* x, float* y, std::int64_t rows,
                  std::int64_t cols, float temperature, unsigned threads) {
  if (!simd_isa_supported(isa))
    throw std::invalid_argument("simd softmax: this CPU lacks " + std::string(name(isa)));
  const RowFn row = algorithm == SimdAlgorithm::shifted ? row_for<SimdAlgorithm::shifted>(isa)
                                                        : row_for<SimdAlgorithm::online>(isa);
  const auto n = static_cast<std::size_t>(cols);
  const auto run_rows = [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) row(x + r * cols, y + r * cols, n, temperature);
  };
  // Rows are independent and each is computed by the same code whichever
  // thread runs it, so any split gives the single-threaded bits (tested).
  // Contiguous blocks of rows, the first on this thread.
  const unsigned used = simd_threads_used(rows, cols, threads);
  if (used == 1) return run_rows(0, rows);
  const auto block_start = [&](unsigned b) { return rows * b / used; };
  std::vector<std::thread> workers;
  workers.reserve(used - 1);
  for (unsigned b = 1; b < used; ++b) workers.emplace_back(run_rows, block_start(b), block_start(b + 1));
  run_rows(0, block_start(1));
  for (std::thread& w : workers) w.join();
}

std::vector<Kernel> simd_kernels() {
  std::vector<Kernel> out;
  const std::string here = std::string(" (here: ") + std::string(name(best_simd_isa())) + ")";
  // The _mt variants (shifted_simd_mt_f32, online_simd_mt_f32): the same
  // kernels on row blocks over every core (issue
  // 10: oneDNN parallelises batches over rows), for callers with one big
  // batch. The harness runs the plain ones: it already spreads jobs over cores.
  for (const auto& [a, row_parallel] :
       {std::pair{SimdAlgorithm::shifted, false}, std::pair{SimdAlgorithm::online, false},
        std::pair{SimdAlgorithm::shifted, true}, std::pair{SimdAlgorithm::online, true}}) {
    const bool shifted = a == SimdAlgorithm::shifted;
    const unsigned threads = row_parallel ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
    Kernel k;
    k.algorithm = std::string(shifted ? "shifted_simd" : "online_simd") + (row_parallel ? "_mt" : "");
    k.name = k.algorithm + "_f32";
    k.format = Format::f32;
    k.ops = {{Op::softmax, shifted ? shifted_contract() : online_contract()}};
    k.masked_policy = MaskedRowPolicy::nan;
    k.description = (shifted ? std::string("max-shifted softmax, three passes")
                             : std::string("online softmax per lane in blocks "
                                           "of 64, lanes merged, two passes")) +
                    ", on 16-lane vectors (AVX-512, AVX2 or baseline x86-64, "
                    "picked at first use; the same bits), "
                    "polynomial exp, temperature fused into the passes" +
                    (row_parallel ? ", rows split over " + std::to_string(threads) +
                                        " threads (the same bits as one)"
                                  : std::string()) +
                    here;
    k.run = [kname = k.name, algorithm = a, threads, isa = best_simd_isa()](
                Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols, double temperature) {
      if (op != Op::softmax)
        throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
      simd_softmax(algorithm, isa, static_cast<const float*>(xv), static_cast<float*>(yv), rows, cols,
                   static_cast<float>(temperature), threads);
    };
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<float> exp16_for_test(SimdIsa isa, std::span<const float> d) {
  if (!simd_isa_supported(isa))
    throw std::invalid_argument("exp16: this CPU lacks " + std::string(name(isa)));
  std::vector<float> out(d.size());
  entry_for<ExpBody, const float*, float*, std::size_t>(isa)(d.data(), out.data(), d.size());
  return out;
}

}  // namespace softcheck::kernels
