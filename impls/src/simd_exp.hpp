// The 16-lane f32 arithmetic shared by the SIMD kernels (simd_softmax.cpp,
// cross_entropy_simd.cpp): vectors and their helpers, the monotone
// compensated exp16 with its proven bound (< 1.5u), and the entry points of
// one body compiled per ISA level (softcheck/isa_dispatch.hpp). One copy, so
// that every kernel that claims exp16's bound runs the code the exhaustive
// exp test checks (impls/tests/simd_softmax_test.cpp).
//
// Written once on 16-lane vectors (GCC/Clang vector extensions), compiled
// three times with target attributes: AVX-512 (one zmm), AVX2 (two ymm) and
// baseline x86-64 (four xmm). Every lane does the same IEEE operations in the
// same order on every ISA: nothing is contracted (-ffp-contract=off), and the
// fused multiply-adds are fma lane by lane (vfmadd with FMA, glibc's
// correctly rounded fma without), so the three give the same bits.
//
// Private to impls/src: include it only from .cpp files, which then hold the
// bodies (each a struct with `template <SimdIsa I> static void run(...)`).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "simd_softmax.hpp"
#include "softcheck/isa_dispatch.hpp"

// 64-byte vectors passed between the (always inlined) helpers: GCC and Clang
// warn that their ABI differs without AVX-512; nothing here crosses an ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace softcheck::kernels::simd {

inline constexpr std::size_t lanes = 16;
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

// max_i x_i over a row of n, read backwards (the first of the kernels'
// zig-zag passes: it ends on the row's start, which the forward pass after
// it then finds in cache). Four running maxima: vmax's latency, not the
// loads, would bound one chain; the max is exact, so the order does not
// matter (NaN aside). -inf for an all -inf row.
SOFTCHECK_INLINE float row_max_backwards(const float* x, std::size_t n) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const std::size_t full = n - n % lanes;
  vf m0 = splat(minus_inf), m1 = splat(minus_inf), m2 = splat(minus_inf), m3 = splat(minus_inf);
  if (full < n) m1 = load_part(x + full, n - full, minus_inf);
  std::size_t at = full;
  for (; at >= 4 * lanes; at -= 4 * lanes) {
    m0 = vmax(m0, load(x + at - lanes));
    m1 = vmax(m1, load(x + at - 2 * lanes));
    m2 = vmax(m2, load(x + at - 3 * lanes));
    m3 = vmax(m3, load(x + at - 4 * lanes));
  }
  for (; at > 0; at -= lanes) m0 = vmax(m0, load(x + at - lanes));
  return fold_max(vmax(vmax(m0, m1), vmax(m2, m3)));
}

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

// a = fl(max_i x_i / T) (= max_i fl(x_i / T): rounding is monotonic), the
// kernels' first pass; -inf for a fully masked row.
SOFTCHECK_INLINE float scaled_row_max(const float* x, std::size_t n, float t) {
  const float a = row_max_backwards(x, n);
  return t != 1.0f ? a / t : a;
}

// The row after row r of a batch whose rows end at `end`, for the exp pass to
// prefetch (simd_softmax.cpp's prefetch_next_row), or null: for the last row,
// and for rows over 2^16 floats (256 KiB), two of which with their outputs
// would not stay inside a 2 MiB L2.
inline const float* next_row_to_prefetch(const float* x, std::int64_t r, std::int64_t end, std::int64_t cols) {
  return r + 1 < end && cols <= (std::int64_t{1} << 16) ? x + (r + 1) * cols : nullptr;
}

// z = x / T, the division only when Scaled (T != 1): the same IEEE
// operation everywhere, so a pass that forms z again gets the same z.
template <bool Scaled>
SOFTCHECK_INLINE vf z_of(vf x, vf vt) {
  if constexpr (Scaled) return x / vt;
  return x;
}

// ------------------------------------------ one max term out of the sum
// Blanchard, Higham & Higham's final form (REFERENCE.md): the normaliser is
// D = 1 + rest with one max term kept out of the sum, so that log D =
// log1p(rest) keeps its relative accuracy when rest is tiny. The pass that
// forms rest, shared by the kernels that use it (cross_entropy_simd.cpp,
// backward_simd.cpp, shifted_log1p_simd.cpp):
//   e_i  = exp16(d_i), d_i = fl(z_i - a), z_i = fl(x_i / T) when Scaled;
//   rest = the sum of e_i over the entries below the max (d_i < 0): lane l
//          sums its entries in order, then fold_sum's 4-level tree, plus
//          c - 1 when c > 1 entries equal a (each is exactly exp16(0) = 1,
//          and which one is kept out does not matter).
// Every e_i (and d_i) goes, in order, to keep(at, count, e, d), count = lanes
// except for a ragged tail, whose padding lanes hold x = -inf (e = 0, no max
// entry). A NaN lane is no max entry: its NaN reaches rest. next: the next
// row, prefetched meanwhile (null for none).
template <SimdIsa I, bool Scaled>
SOFTCHECK_INLINE vf exp_below_max(vf x, vf va, vf vt, vf& s, vi& ties, vf& d) {
  d = z_of<Scaled>(x, vt) - va;
  const vf e = exp16<I>(d);
  const vi at_max = d == splat(0.0f);
  s = s + (at_max ? splat(0.0f) : e);
  ties = ties - at_max;  // a compare gives -1 per true lane
  return e;
}

template <SimdIsa I, bool Scaled, class Keep>
SOFTCHECK_INLINE float rest_below_max(const float* x, std::size_t n, float a, float t, const float* next,
                                      Keep& keep) {
  const std::size_t full = n - n % lanes;
  const vf va = splat(a);
  const vf vt = splat(t);
  vf s = splat(0.0f);
  vi ties = vi{};
  vf d;
  for (std::size_t i = 0; i < full; i += lanes) {
    if (next != nullptr) __builtin_prefetch(next + i, 0 /* read */, 3 /* into L1 */);
    const vf e = exp_below_max<I, Scaled>(load(x + i), va, vt, s, ties, d);
    keep(i, lanes, e, d);
  }
  if (full < n) {
    const vf padded = load_part(x + full, n - full, -std::numeric_limits<float>::infinity());
    const vf e = exp_below_max<I, Scaled>(padded, va, vt, s, ties, d);
    keep(full, n - full, e, d);
  }
  std::int64_t c = 0;  // the count of max entries
  for (std::size_t l = 0; l < lanes; ++l) c += ties[l];
  const float rest = fold_sum(s);
  return c > 1 ? rest + static_cast<float>(c - 1) : rest;
}

// y_i = y_i * r over a row of n, backwards: the pass after a forward exp
// pass starts on the row's end, still in cache. Elementwise, so the order
// does not change the bits.
SOFTCHECK_INLINE void scale_backwards(float* y, std::size_t n, vf r) {
  const std::size_t full = n - n % lanes;
  if (full < n) store_part(y + full, load_part(y + full, n - full, 0.0f) * r, n - full);
  for (std::size_t i = full; i > 0; i -= lanes) store(y + i - lanes, load(y + i - lanes) * r);
}

// keep for rest_below_max: e_i stored to out (the kernels keep the exps in
// an output buffer for their next pass).
struct StoreExps {
  float* out;
  SOFTCHECK_INLINE void operator()(std::size_t at, std::size_t count, vf e, vf /*d*/) const {
    if (count == lanes)
      store(out + at, e);
    else
      store_part(out + at, e, count);
  }
};

// Below this rest a row whose max is unique takes rest from rest_in_double:
// exp16's subnormal results carry up to denorm_min/2 absolute each, which a
// value about rest (a confident row's loss, its max entry's log-softmax)
// would feel in its last bits (cross_entropy_simd.cpp, "Subnormal terms").
inline constexpr float rest_recomputed_below = 0x1p-64f;

// sum of exp(fl(z_j - a)) over the entries below the max, in double, rounded
// once to f32: the same f32 arguments as the vector pass (IEEE operations,
// the same bits), their exp and a recursive sum in double (relative (n + 1)
// 2^-53). For rows with one max entry (c = 1; c > 1 gives rest >= 1). Not
// inlined into the per-ISA bodies: scalar code, one copy.
__attribute__((noinline)) inline float rest_in_double(const float* x, std::size_t n, float t, float a) {
  double s = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const float z = t != 1.0f ? x[j] / t : x[j];
    if (z - a < 0.0f) s += std::exp(static_cast<double>(z - a));
  }
  return static_cast<float>(s);
}

// rest as L = log1p(rest) needs it: rest_in_double's below
// rest_recomputed_below (a row whose max is unique), else rest itself.
SOFTCHECK_INLINE float accurate_rest(float rest, const float* x, std::size_t n, float t, float a) {
  return rest < rest_recomputed_below ? rest_in_double(x, n, t, a) : rest;
}

// L = log1p(rest) in double, rounded once to f32: within u of log1p(rest),
// relative.
SOFTCHECK_INLINE float log1p_to_f32(float rest) { return static_cast<float>(std::log1p(static_cast<double>(rest))); }

// What the kernels' code for each level needs of the CPU: the levels' own
// features (isa_features) and FMA, which both levels' code is compiled with
// (the ",fma" of on_avx512's and on_avx2's targets: exp16's fma becomes
// vfmadd). A CPU or VM that exposes AVX2 without FMA3 gets the baseline code
// instead of an illegal instruction.
inline constexpr IsaNeeds kKernelNeeds{isa_features.avx2 | cpu_feature::fma, isa_features.avx512 | cpu_feature::fma};

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

}  // namespace softcheck::kernels::simd
