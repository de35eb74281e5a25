// shifted_simd_f32 and online_simd_f32: the max-shifted softmax of shifted.cpp
// and the online softmax of online.cpp, vectorised.
//
// The arithmetic is written once, on 16-lane vectors (GCC/Clang vector
// extensions), and compiled three times with target attributes: AVX-512 (one
// zmm), AVX2 (two ymm) and baseline x86-64 (four xmm); the kernels pick the
// best the CPU has at first use (softcheck/isa_dispatch.hpp). Every lane does
// the same IEEE operations in the same order on every ISA: nothing is contracted
// (-ffp-contract=off), and the fused multiply-adds, in exp16, are fma lane
// by lane (vfmadd with FMA, glibc's correctly rounded fma without), so the
// three give the same bits (tested) and the contracts below do not depend on
// the machine. "The same bits" is for rows without NaN: a row with a NaN
// gives NaN everywhere, but which NaN (payload, sign) is not specified; it
// depends on operand order, which the compiler may pick per ISA.
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
#include "parallel_blocks.hpp"

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

using vu = std::uint32_t __attribute__((vector_size(lanes * sizeof(std::uint32_t))));
SOFTCHECK_INLINE vf from_bits(vu v) {
  vf f;
  std::memcpy(&f, &v, sizeof f);
  return f;
}
SOFTCHECK_INLINE vu to_bits(vf v) {
  vu b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// a * b + c rounded once, lane by lane: vfmadd where the target has FMA,
// glibc's correctly rounded fmaf otherwise (the same bits either way).
SOFTCHECK_INLINE vf fma16(vf a, vf b, vf c) {
  vf r;
  for (std::size_t i = 0; i < lanes; ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
  return r;
}

// Horizontal max and sum of the 16 lanes in one fixed order: halves folded
// 8 + 8, 4 + 4, 2 + 2, 1 + 1 (a 4-level tree), lane i with lane i + half. In
// registers: each level pairs the vector with itself rotated by `half` lanes
// (the upper lanes of the result are not used).
SOFTCHECK_INLINE vf vadd(vf a, vf b) { return a + b; }
template <vf (*op)(vf, vf)>
SOFTCHECK_INLINE float fold(vf v) {
  v = op(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
  v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3));
  v = op(v, __builtin_shufflevector(v, v, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1));
  v = op(v, __builtin_shufflevector(v, v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0));
  return v[0];
}
SOFTCHECK_INLINE float fold_max(vf v) { return fold<vmax>(v); }
SOFTCHECK_INLINE float fold_sum(vf v) { return fold<vadd>(v); }

// v 2^k for v in [0.7, 1.5) and integral k in [-150, 1] (k_magic = 1.5 2^23 + k),
// rounded once (to nearest, whatever the result: normal, subnormal or 0).
//  - AVX-512: vscalefps, v 2^k in one rounding (as MXCSR has it: the kernels'
//    callers leave it at round to nearest without FTZ/DAZ).
//  - Others: 2^(k+64) from k's bits (k + 64 + 127 in [40, 192]: a normal f32),
//    v 2^(k+64) exact (normal), times 2^-64 rounded once: 2^k alone is not a
//    float below k = -149. The same single rounding of v 2^k, so the same bits
//    as vscalefps (tested on every ISA).
#if defined(__x86_64__) && !defined(__clang__)
#define SOFTCHECK_HAVE_AVX512_BUILTINS 1
// GCC declares its AVX-512 builtins once a target option enables them; this
// (empty) region does, so that times_pow2<avx512> and any_greater<avx512>
// can name vscalefps' and vcmpps' builtins. They are expanded only inside
// on_avx512, whose target has AVX-512. Clang
// checks a builtin's target against every function that names it, so a
// Clang build (the fuzzers') takes the other path: the same bits.
#pragma GCC push_options
#pragma GCC target("avx512f")
#pragma GCC pop_options
#endif
template <SimdIsa I>
SOFTCHECK_INLINE vf times_pow2(vf v, vf k, vf k_magic) {
#if SOFTCHECK_HAVE_AVX512_BUILTINS
  if constexpr (I == SimdIsa::avx512) {
    (void)k_magic;
    return __builtin_ia32_scalefps512_mask(v, k, v, static_cast<unsigned short>(0xffff), 4 /* current rounding */);
  }
#endif
  (void)k;
  const vf scale = from_bits((to_bits(k_magic) << 23) + ((64u + 127u) << 23));
  return (v * scale) * splat(0x1p-64f);
}

// Whether a > b in some lane. AVX-512: one compare into a mask register and
// a test of it; the others OR the 16 lane masks together (GCC turns that into
// a chain of shuffles, not a mask test).
template <SimdIsa I>
SOFTCHECK_INLINE bool any_greater(vf a, vf b) {
#if SOFTCHECK_HAVE_AVX512_BUILTINS
  if constexpr (I == SimdIsa::avx512)
    return __builtin_ia32_cmpps512_mask(a, b, 0x1e /* _CMP_GT_OQ: a > b */, static_cast<unsigned short>(0xffff),
                                        4 /* current rounding */) != 0;
#endif
  const vi mask = a > b;
  std::int32_t any = 0;
  for (std::size_t i = 0; i < lanes; ++i) any |= mask[i];
  return any != 0;
}

// exp(d) for every lane, d <= 0 (a -inf lane, a masked entry, gives 0), in
// f32 with the rounding errors kept below the last rounding: within 1.5u of
// exp(d) and monotone on every f32 argument, which is what the kernels need:
// every kernel with a contract claims the exact ordering property (x_i <= x_j
// implies y_i <= y_j), and a plain f32 polynomial exp is not monotone (a
// degree-7 Horner in f32 gave 2,878 one-ulp inversions over [-104, 0]). The
// earlier versions evaluated in double (degree 8, then a 16-entry table and
// degree 4: monotone by a margin argument, 1.01u / 1.001u); this one costs
// about 0.7 of the table version.
//  - x = max(d, -104) (NaN stays NaN, -inf becomes -104): exp(-104) =
//    6.8e-46 is below denorm_min/2 = 7.0e-46 by 3%, far more than the error
//    below, so it rounds to exactly 0, the correctly rounded value for every
//    d <= -104 (a masked entry gets exactly 0 like shifted_f32's exp(-inf)).
//  - k = nearest integer to x * fl(log2 e) (by adding 1.5 * 2^23), so
//    |x - k ln2| <= ln2 (1/2 + 2^-16.7) < 0.3467.
//  - r = fma(-k, H, x), H = fl(ln 2), is exact: for k = 0 it is x; otherwise
//    |x| > 0.34 so x is a multiple of 2^-25, k H one of 2^-24, and |r| <=
//    0.3467 + 150 |H - ln2| < 0.5 fits in 24 bits. So x = k H + r exactly,
//    and exp(x) = 2^k e^r e^rho, rho = k (H - ln2), |rho| <= 2^-21.7;
//    r_lo = fl(k fl(H - ln2)) is rho within 2^-23 |rho|.
//  - e^r = 1 + r + r^2 P(r), P the Taylor polynomial of (e^r - 1 - r)/r^2 to
//    r^6 (1/2 ... 1/8!), Horner with fma: truncation |r|^9/9! e^|r| <=
//    0.005u; P's evaluation (coefficients rounded, 6 fmas) <= 1.2u |r|^2,
//    q2 = fl(fl(r r) P) <= 0.28u off r^2 P (u = 2^-24).
//  - s = fl(1 + r), err = (1 - s) + r: s + err = 1 + r exactly (Fast2Sum,
//    |r| < 1), so 1 + r is never rounded; w = fma(r_lo, s + q2, q2) adds
//    rho e^r (second order: rho^2 < 2^-43); t = fl(err + w), each rounding
//    <= 0.07u; v = fl(s + t): the one rounding that matters.
//  - y = fl(v 2^(k+64)) 2^-64: the first product is exact (normal), the
//    second too unless y is subnormal, where it rounds once more (<=
//    denorm_min/2).
// Before v's rounding the error is <= 0.35u (r <= 0) / 0.42u (r > 0)
// absolute on a value >= 0.707 / >= 1, i.e. <= 0.494u relative, so
// |exp16(d) - exp(d)| <= u (1 + 0.494u) exp(d) + 0.494u exp(d) < 1.5u exp(d)
// (+ denorm_min/2 for subnormal results). Measured on every f32 in
// [-104, 0]: 0.764 ulp.
// Monotone: within one k, r steps by exactly ulp(x) with x, 1 + r is never
// rounded, and the roundings inside w and t (each <= ulp/2 of a value
// <= 0.07, i.e. <= 2^-28) are far below a step wherever |r| is small; they
// are not provably below ulp(x) >= 2^-25 near |r| = ln2/2 nor at the 150
// switches of k, so there, as everywhere, the proof is the exhaustive test:
// impls/tests/simd_softmax_test.cpp checks every f32 in [-104, 0] (0
// inversions over 1.12e9 arguments) and the bound on every 16th (all with
// SOFTCHECK_EXHAUSTIVE=1). Every ISA computes the same bits (the same IEEE
// operations lane by lane), so the check covers all three.
template <SimdIsa I>
SOFTCHECK_INLINE vf exp16(vf d) {
  const vf x = vmax(splat(-104.0f), d);  // -inf -> -104 (then exactly 0); NaN stays NaN
  const vf magic = splat(0x1.8p23f);
  const vf k_magic = fma16(x, splat(0x1.715476p+0f), magic);  // 1.5 * 2^23 + k
  const vf k = k_magic - magic;
  const vf r = fma16(-k, splat(0x1.62e43p-1f), x);  // exact
  const vf r_lo = k * splat(0x1.05c610p-29f);      // k (H - ln2), H = 0x1.62e43p-1
  vf p = fma16(splat(1.0f / 40320), r, splat(1.0f / 5040));
  p = fma16(p, r, splat(1.0f / 720));
  p = fma16(p, r, splat(1.0f / 120));
  p = fma16(p, r, splat(1.0f / 24));
  p = fma16(p, r, splat(1.0f / 6));
  p = fma16(p, r, splat(0.5f));
  const vf q2 = (r * r) * p;
  const vf s = splat(1.0f) + r;
  const vf err = (splat(1.0f) - s) + r;
  const vf w = fma16(r_lo, s + q2, q2);
  const vf v = s + (err + w);
  const vf y = times_pow2<I>(v, k, k_magic);
  return x == x ? y : x;  // NaN in, the same NaN out
}

// The cache line of the next row at `at` (its offset in the row), fetched
// while this row computes its exps. In a batch such as 1024 x 4096 each row
// fits in L1/L2, so passes 2 and 3 run from cache, but the first pass (the
// max: a load and a compare per vector, nothing to hide a miss behind) waits
// for the row to come from L3; the exps leave the load ports idle enough to
// fetch the next row meanwhile. Measured with the code before and after
// timed in alternation (docs/kernels.md): shifted_simd 1.15-1.25x on
// 1024 x 4096, 1.15x on 64 x 16384, 1.18x on 16 x 65536, 1.02-1.03x on
// 4096 x 128. online_simd reads the row first in its exp pass, whose misses
// the exps already hide: no gain there, so it does not prefetch. next: null
// for a block's last row, or where rows are too long to keep two in L2.
SOFTCHECK_INLINE void prefetch_next_row(const float* next, std::size_t at) {
  if (next != nullptr) __builtin_prefetch(next + at, 0 /* read */, 3 /* into L1 */);
}

// Pass 2 of a row: e_i = exp16(z_i - a) stored in y, their 16 lane sums
// returned. z_i = x_i / T, the division only when T != 1 (a template
// parameter: a runtime select would divide every element).
template <SimdIsa I, bool Scaled>
SOFTCHECK_INLINE vf exp_and_lane_sums(const float* x, float* y, std::size_t n, vf va, vf vt, const float* next) {
  const std::size_t full = n - n % lanes;
  vf s = splat(0.0f);
  for (std::size_t i = 0; i < full; i += lanes) {
    prefetch_next_row(next, i);
    vf z = load(x + i);
    if constexpr (Scaled) z = z / vt;
    const vf e = exp16<I>(z - va);
    store(y + i, e);
    s = s + e;
  }
  if (full < n) {
    const std::size_t rest = n - full;
    vf z = load_part(x + full, rest, 0.0f);
    if constexpr (Scaled) z = z / vt;
    vf e = exp16<I>(z - va);
    alignas(64) float keep[lanes];
    for (std::size_t i = 0; i < lanes; ++i) keep[i] = i < rest ? 1.0f : 0.0f;
    e = load(keep) == splat(1.0f) ? e : splat(0.0f);  // padding lanes add exactly 0
    store_part(y + full, e, rest);
    s = s + e;
  }
  return s;
}

// One row, x -> y (y == x allowed; no other overlap), op softmax. A fully masked row (max -inf) gives
// NaN everywhere: the declared nan policy, like shifted_f32 (-inf - -inf).
template <SimdIsa I>
SOFTCHECK_INLINE void shifted_row(const float* x, float* y, std::size_t n, float t, const float* next) {
  const std::size_t full = n - n % lanes;
  // Four running maxima: vmax's latency, not the loads, would bound one chain
  // (the max is exact, so the order does not matter, NaN aside).
  //
  // The three passes zig-zag: the max backwards, the exps forwards (the order
  // the sum's contract names), the scaling backwards. Each pass starts where
  // the one before ended, on the part of the row still in cache: a row larger
  // than L2 (2^19 or 2^20 floats in and out) then reads part of x and y from
  // L2 instead of L3: 1.02-1.07x there, measured as prefetch_next_row's
  // figures. The bits do not change (NaN-free rows: see the top): the max is
  // exact and the scaling is elementwise.
  const vf minus_inf = splat(-std::numeric_limits<float>::infinity());
  vf m0 = minus_inf, m1 = minus_inf, m2 = minus_inf, m3 = minus_inf;
  if (full < n) m1 = load_part(x + full, n - full, -std::numeric_limits<float>::infinity());
  std::size_t at = full;
  for (; at >= 4 * lanes; at -= 4 * lanes) {
    m0 = vmax(m0, load(x + at - lanes));
    m1 = vmax(m1, load(x + at - 2 * lanes));
    m2 = vmax(m2, load(x + at - 3 * lanes));
    m3 = vmax(m3, load(x + at - 4 * lanes));
  }
  for (; at > 0; at -= lanes) m0 = vmax(m0, load(x + at - lanes));
  const vf m = vmax(vmax(m0, m1), vmax(m2, m3));
  float a = fold_max(m);
  if (t != 1.0f) a = a / t;
  if (a == -std::numeric_limits<float>::infinity()) {
    for (std::size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const vf lane_sums = t != 1.0f ? exp_and_lane_sums<I, true>(x, y, n, splat(a), splat(t), next)
                                 : exp_and_lane_sums<I, false>(x, y, n, splat(a), splat(t), next);
  // y_j = e_j * fl(1 / S): a multiply per element instead of a divide (a
  // vector divide costs about 16 times as much), one more rounding.
  const vf r = splat(1.0f / fold_sum(lane_sums));
  if (full < n) store_part(y + full, load_part(y + full, n - full, 1.0f) * r, n - full);
  for (std::size_t i = full; i > 0; i -= lanes) store(y + i - lanes, load(y + i - lanes) * r);
}

// ------------------------------------------------------------ online_simd
// Milakov & Gimelshein's online normaliser with one running maximum for the
// row, a block of 4 vectors (64 elements) at a time: one rescale per block in
// which the maximum grew, instead of one per element.
//   per block b: m' = max(m, max_k z_k) (the row's running maximum);
//     t_k = exp16(z_k - m') (stored in y); d = d exp16(m - m') + sum_k t_k
//     per lane, in order (no exp when m' = m); m = m'
//   M = m;  D = sum of the 16 lanes of d (the 4-level tree)
//   y_j = exp16(z_j - M) * fl(1 / D)
// In the last pass, the blocks from the one where the maximum last grew on
// were shifted by M itself: their stored t_j are exp16(z_j - M), and only a
// multiply is left; the blocks before it compute exp16(z_j - M) again from x.
// Either way every y_j is fl(exp16(fl(z_j - M)) * fl(1/D)): the same bits,
// monotone in z_j. Two passes over x at most (one when the maximum is in the
// first block), one exp per element plus one per element before the last
// growth of the maximum. In place (y == x) nothing is stored and every block
// is computed again from x (the same bits).

constexpr std::size_t block_vectors = 4;
constexpr std::size_t block_elements = block_vectors * lanes;

// z of 16 elements at p (count < 16: the other lanes -inf, i.e. masked).
template <bool Scaled>
SOFTCHECK_INLINE vf z_at(const float* p, std::size_t count, vf vt) {
  vf z = count >= lanes ? load(p) : load_part(p, count, -std::numeric_limits<float>::infinity());
  if constexpr (Scaled) z = z / vt;
  return z;
}

SOFTCHECK_INLINE float max_of(float p, float q) { return p > q ? p : q; }

struct OnlineStats {
  float m;             // the row's maximum M (-inf: every entry masked)
  vf d;                // per lane sums of exp16(z_i - M)
  std::size_t settled;  // first element of the block where the maximum last grew
};

// One block of online_stats: the elements [i, i + 64) of the row, or the
// rest of it when fewer (Full: 64 are there, so the four vectors are loaded
// and kept in registers without a bound check each; the same operations).
template <SimdIsa I, bool Scaled, bool Store, bool Full>
SOFTCHECK_INLINE void online_block(const float* x, float* t_out, std::size_t n, std::size_t i, vf vt,
                                   OnlineStats& st, vf& vshift) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  vf z[block_vectors];
  const std::size_t count = Full ? block_vectors : (n - i + lanes - 1) / lanes;
  vf block_max = splat(minus_inf);
  for (std::size_t k = 0; k < count; ++k) {
    z[k] = z_at<Scaled>(x + i + k * lanes, Full ? lanes : n - i - k * lanes, vt);
    block_max = vmax(block_max, z[k]);
  }
  // Whether the maximum grew is a lane-wise compare; the horizontal maximum
  // (a chain of dependent steps) is needed only when it did, so the exps of
  // the usual block do not wait for it. When it did not, the rescale factor
  // would be exp16(m - m) = exp16(0) = 1 (or d = 0, still all -inf):
  // d * factor = d, the same bits without the exp. (A NaN lane never
  // compares greater; a NaN in the row makes D, so every y_j, NaN anyway.)
  if (any_greater<I>(block_max, splat(st.m))) {
    const float m_new = max_of(st.m, fold_max(block_max));  // > st.m >= -inf
    // Until now every entry was -inf and d is exactly 0: no factor needed.
    if (st.m != minus_inf) st.d = st.d * exp16<I>(splat(st.m) - splat(m_new));
    st.m = m_new;
    st.settled = i;
    vshift = splat(m_new);
  }
  vf acc = st.d;
  for (std::size_t k = 0; k < count; ++k) {
    const vf t = exp16<I>(z[k] - vshift);
    if constexpr (Store) {
      const std::size_t at = i + k * lanes;
      if (Full || n - at >= lanes)
        store(t_out + at, t);
      else
        store_part(t_out + at, t, n - at);
    }
    acc = acc + t;
  }
  st.d = acc;
}

template <SimdIsa I, bool Scaled, bool Store>
SOFTCHECK_INLINE OnlineStats online_stats(const float* x, float* t_out, std::size_t n, vf vt) {
  OnlineStats st{-std::numeric_limits<float>::infinity(), splat(0.0f), 0};
  // While every entry so far is -inf the row keeps (-inf, 0) and shifts by
  // 0: every exp16(-inf - 0) is an exact 0, never NaN.
  vf vshift = splat(0.0f);
  std::size_t i = 0;
  for (; i + block_elements <= n; i += block_elements) online_block<I, Scaled, Store, true>(x, t_out, n, i, vt, st, vshift);
  if (i < n) online_block<I, Scaled, Store, false>(x, t_out, n, i, vt, st, vshift);
  return st;
}

template <SimdIsa I, bool Scaled, bool Stored>
SOFTCHECK_INLINE void online_row_with(const float* x, float* y, std::size_t n, float t) {
  const vf vt = splat(t);
  const OnlineStats st = online_stats<I, Scaled, Stored>(x, y, n, vt);
  if (st.m == -std::numeric_limits<float>::infinity()) {  // fully masked: the nan policy
    for (std::size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const vf vm = splat(st.m);
  const vf r = splat(1.0f / fold_sum(st.d));
  const std::size_t full = n - n % lanes;
  const std::size_t recompute_until = Stored ? st.settled : n;  // a multiple of 16 when stored
  // Backwards, from where the first pass ended (the end of the row, still in
  // cache), as shifted_row's scaling: elementwise, so the same bits.
  if (full < n) {
    const vf e = full < recompute_until ? exp16<I>(z_at<Scaled>(x + full, n - full, vt) - vm)
                                        : load_part(y + full, n - full, 0.0f);
    store_part(y + full, e * r, n - full);
  }
  const std::size_t stored_from = std::min(full, recompute_until);
  std::size_t i = full;
  for (; i > stored_from; i -= lanes) store(y + i - lanes, load(y + i - lanes) * r);
  for (; i > 0; i -= lanes) store(y + i - lanes, exp16<I>(z_at<Scaled>(x + i - lanes, lanes, vt) - vm) * r);
}

template <SimdIsa I>
SOFTCHECK_INLINE void online_row(const float* x, float* y, std::size_t n, float t) {
  // Stored exps need y apart from x (an in-place call, y == x, would
  // overwrite x before the blocks that are computed again read it). Other
  // overlaps are outside the kernel ABI (docs/plugin-abi.md).
  const auto at = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const bool apart = at(y + n) <= at(x) || at(x + n) <= at(y);
  if (t != 1.0f)
    apart ? online_row_with<I, true, true>(x, y, n, t) : online_row_with<I, true, false>(x, y, n, t);
  else
    apart ? online_row_with<I, false, true>(x, y, n, t) : online_row_with<I, false, false>(x, y, n, t);
}

// ------------------------------------------------- one body, three ISAs

// The bodies take the ISA they are compiled for as a template parameter: the
// code is the same for all three except exp16's last scaling (see there).
template <SimdAlgorithm A>
struct RowBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* x, float* y, std::size_t n, float t, const float* next) {
    if constexpr (A == SimdAlgorithm::shifted)
      shifted_row<I>(x, y, n, t, next);
    else
      online_row<I>(x, y, n, t);  // no prefetch: see prefetch_next_row
  }
};

// exp16 over an array (its tests: monotone on every f32 argument).
struct ExpBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* d, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) store(out + i, exp16<I>(load(d + i)));
    if (i < n) store_part(out + i, exp16<I>(load_part(d + i, n - i, 0.0f)), n - i);
  }
};

// What the kernels' code for each level needs of the CPU: the levels' own
// features (isa_features) and FMA, which both levels' code is compiled with
// (the ",fma" of on_avx512's and on_avx2's targets: exp16's fma becomes
// vfmadd). A CPU or VM that exposes AVX2 without FMA3 gets the baseline code
// instead of an illegal instruction.
constexpr IsaNeeds kKernelNeeds{isa_features.avx2 | cpu_feature::fma, isa_features.avx512 | cpu_feature::fma};

// Body::run compiled for each ISA, and the entry point of one.
#if defined(__x86_64__)
template <class Body, class... Args>
__attribute__((target(SOFTCHECK_TARGET_AVX512 ",fma"))) void on_avx512(Args... args) {
  Body::template run<SimdIsa::avx512>(args...);
}
template <class Body, class... Args>
__attribute__((target(SOFTCHECK_TARGET_AVX2 ",fma"))) void on_avx2(Args... args) {
  Body::template run<SimdIsa::avx2>(args...);
}
#endif
template <class Body, class... Args>
void on_baseline(Args... args) {
  Body::template run<SimdIsa::baseline>(args...);
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

using RowFn = void (*)(const float*, float*, std::size_t, float, const float*);
template <SimdAlgorithm A>
RowFn row_for(SimdIsa isa) {
  return entry_for<RowBody<A>, const float*, float*, std::size_t, float, const float*>(isa);
}

// First order in u = 2^-24, the derivation of shifted.cpp with this kernel's
// exp and summation order:
//  - d_j = fl(z_j - a): an absolute argument error u|z_j - a| <= uR, a
//    relative error uR of exp; exp16 adds 1.494u (above, "< 1.5u"): e_j
//    carries (1.494 + R)u;
//  - S: lane sums of ceil(n/16) terms then 4 tree levels, so every term
//    passes through at most ceil(n/16) - 1 + 4 <= n/16 + 4 additions:
//    (n/16 + 4)u plus the terms' (1.494 + R)u;
//  - y_j = e_j * fl(1/S): two roundings, 2u.
//  Total: (1.494 + R) + (n/16 + 4 + 1.494 + R) + 2 = 8.988 + n/16 + 2R <= 9 + n/16 + 2R.
//  - temperature as shifted.cpp: t = 4 (a = fl(max x / T) equals
//    max fl(x_i / T)).
//  - subnormal outputs: exp16's denorm_min/2 plus the product's rounding,
//    fl(1/S) <= 1: within 1 ulp of denorm_min, covered since a >= 1.
Contract shifted_contract() {
  return declared_contract(9, 0.0625, 2, 0, 4,
                           "shifted softmax with a monotone compensated f32 exp (1.494u derived) and 16-lane "
                           "summation (n/16 + 4 additions deep): e_j (1.494 + R)u, S (n/16 + 4 + 1.494 + R)u, "
                           "times fl(1/S) 2u: 8.988 + n/16 + 2R; temperature as "
                           "shifted: 4M");
}

// online_simd, first order in u = 2^-24. A term exp(z_i - M) of D is computed
// as a chain: t_i = exp16(fl(z_i - m_b)) (m_b: the row's running maximum after
// its block), times one factor exp16(fl(m_old - m_new)) per later growth of
// the maximum (each factor then multiplied in: +u). The arguments' rounding
// errors u|argument| telescope: (m_b - z_i) + sum (m_new - m_old) = M - z_i
// <= R. The exp16 errors: 1.494u each, one for t_i and one per rescale (at
// most one per later block: n/64 + 1 bounds them). Additions: within the lane
// at most ceil(n/16) - 1 <= n/16 after t_i, then the 4-level tree; every lane
// already shares the shift M, so no merge factor. So D carries
//   R + 1.494 + 2.494 (n/64 + 1) + n/16 + 4 = 7.988 + 0.1015n + R,
// y_j = exp16(fl(z_j - M)) (1.494 + R) times fl(1/D) (u) rounded (u) -- a stored
// t_j of a block shifted by M is that same exp16 value:
//   total 11.482 + 0.1015n + 2R <= 12 + n/8 + 2R (14 while each lane kept its
//   own maximum and the merge added 2.494u).
// Temperature: z_i = fl(x_i / T) everywhere, as shifted: t = 4. Subnormal
// outputs as shifted_simd. Entries that do not contribute (below L_T) add
// less than denorm_min each to D >= 1 (the lane holding M has d >= 1: its
// exp16(0) = 1 is exact, as are the factors exp16(0) = 1).
Contract online_contract() {
  return declared_contract(12, 0.125, 2, 0, 4,
                           "online softmax in blocks of 64 with one running maximum (Milakov-Gimelshein), "
                           "monotone exp16 (1.494u): D's chain of exps telescopes to R, 2.494u per rescale "
                           "(<= n/64 + 1), n/16 additions, tree 4u: 7.988 + 0.102n + R; "
                           "y = exp16 (1.494 + R) * fl(1/D) 2u: 11.482 + 0.102n + 2R; temperature 4M");
}

}  // namespace

std::string_view name(SimdIsa isa) { return isa_name(isa); }

bool simd_isa_supported(SimdIsa isa) { return isa_supported(isa, kKernelNeeds); }

SimdIsa best_simd_isa() { return best_isa(kKernelNeeds); }

unsigned simd_threads_used(std::int64_t rows, std::int64_t cols, unsigned threads) {
  // Waking a pool thread and waiting for it costs some microseconds, about
  // what a single thread needs for min_elements_per_thread elements; below
  // that a block would not pay for it.
  constexpr std::int64_t min_elements_per_thread = std::int64_t{1} << 13;
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
  // Rows up to 2^16 floats (256 KiB) prefetch the next one (prefetch_next_row):
  // two of them and their outputs stay well inside a 2 MiB L2.
  constexpr std::size_t prefetch_max = std::size_t{1} << 16;
  const auto run_rows = [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) {
      const float* next = r + 1 < last && n <= prefetch_max ? x + (r + 1) * cols : nullptr;
      row(x + r * cols, y + r * cols, n, temperature, next);
    }
  };
  // Rows are independent and each is computed by the same code whichever
  // thread runs it, so any split gives the single-threaded bits (tested).
  // Contiguous blocks of rows on the persistent pool (parallel_blocks.hpp).
  const unsigned used = simd_threads_used(rows, cols, threads);
  if (used == 1) return run_rows(0, rows);
  run_blocks(used, [&](unsigned b) { run_rows(rows * b / used, rows * (b + 1) / used); });
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
                             : std::string("online softmax in blocks of 64, one running maximum, "
                                           "exps stored and reused from the block where it last grew")) +
                    ", on 16-lane vectors (AVX-512, AVX2 or baseline x86-64, "
                    "picked at first use; the same bits), "
                    "polynomial exp, temperature fused into the passes" +
                    (row_parallel ? ", rows split over " + std::to_string(threads) +
                                        " threads (the same bits as one)"
                                  : std::string()) +
                    here;
    k.compute = single_operand([kname = k.name, algorithm = a, threads, isa = best_simd_isa()](
                Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols, double temperature) {
      if (op != Op::softmax)
        throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
      simd_softmax(algorithm, isa, static_cast<const float*>(xv), static_cast<float*>(yv), rows, cols,
                   static_cast<float>(temperature), threads);
    });
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
