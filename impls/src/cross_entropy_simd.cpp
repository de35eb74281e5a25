// cross_entropy_simd_f32: the fused cross-entropy of cross_entropy.cpp (loss
// -log softmax(z)_t and gradient softmax(z) - onehot(t) per row, z = x / T;
// docs/gradients.md) on 16-lane vectors with the monotone exp16 of
// simd_exp.hpp (< 1.5u), compiled per ISA level like shifted_simd_f32 and
// giving the same bits on every one (tested). One thread.
//
// Per row, three passes zig-zagging over it as shifted_simd's do (the max
// backwards, the exps forwards, the scaling backwards: each pass starts on
// the part of the row the one before left in cache):
//   a    = fl(max_i x_i / T)  (= max_i z_i, z_i = fl(x_i / T): rounding is
//          monotonic); a = -inf (fully masked) gives the policy's zeros;
//   e_i  = exp16(fl(z_i - a)), stored in dx;
//   rest = sum of e_i over the entries below the max: lane l sums its
//          entries in order, then the fixed 4-level tree over the 16 lanes
//          (simd_exp.hpp's fold), plus c - 1 when c > 1 entries equal a (each
//          of those is exactly exp16(0) = 1). The normaliser is D = 1 + rest
//          with one max term kept out of the sum (Blanchard-Higham-Higham's
//          final form, REFERENCE.md), so log D = log1p(rest) keeps its
//          relative accuracy when rest is tiny (a confident prediction), as
//          cross_entropy.cpp's. Which max entry is kept out does not matter:
//          the others add exactly 1 each;
//   loss = (a - z_t) + log1p(rest): two terms >= 0, no cancellation;
//   dx_j = e_j * fl(1 / D) (a multiply per element instead of a divide);
//          at the target p_t - 1, formed as -(rest / D) when z_t = a (the
//          target is a max entry: p_t - 1 would cancel), else as
//          fl(p_t - 1) (p_t <= 1/2 there: no cancellation).
// A confident correct row whose rest is below 2^-64 takes rest again from a
// scalar pass in double (rest_in_double, "Subnormal terms" below): exp16's
// subnormal results carry an absolute error of up to denorm_min/2 each, which
// the loss, about rest there, would feel in its last bits.
//
// Masked-row policy zeros, as cross_entropy_f32: a fully masked row, like an
// ignored one (target ignore_index), gets loss 0 and a gradient of 0. A
// target on a masked entry: loss +inf, dx_t = -1 (exact). A row with a NaN
// gives NaN loss and gradient (which NaN is not specified, as in
// simd_softmax.cpp).
#include "cross_entropy_simd.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernel_util.hpp"
#include "simd_exp.hpp"

namespace softcheck::kernels {
namespace {

// The vectors, exp16 and the per-ISA entry points (simd_exp.hpp).
using namespace simd;

// One row with a valid target (not ignore_index, in [0, n)): the gradient in
// dx, the loss returned. next: the next row of the batch (prefetched during
// the exp pass, as shifted_simd's prefetch_next_row), or null.
template <SimdIsa I, bool Scaled>
SOFTCHECK_INLINE float cross_entropy_row(const float* x, float* dx, std::size_t n, float t, std::size_t target,
                                         const float* next) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  // Pass 1, backwards: the max (simd_exp.hpp).
  const float a = scaled_row_max(x, n, t);
  if (a == minus_inf) {  // fully masked: policy zeros
    for (std::size_t i = 0; i < n; ++i) dx[i] = 0.0f;
    return 0.0f;
  }
  const float z_t = Scaled ? x[target] / t : x[target];

  // Pass 2, forwards: e_i stored in dx, rest (simd_exp.hpp's
  // rest_below_max).
  StoreExps keep{dx};
  float rest = rest_below_max<I, Scaled>(x, n, a, t, next, keep);
  if (z_t == a && rest < rest_recomputed_below) rest = rest_in_double(x, n, t, a);

  // Pass 3, backwards: dx_j = e_j * fl(1 / D), then the target's p_t - 1.
  const float d = 1.0f + rest;
  scale_backwards(dx, n, splat(1.0f / d));
  dx[target] = z_t == a ? -(rest / d) : dx[target] - 1.0f;
  return (a - z_t) + std::log1p(rest);
}

// One row (see cross_entropy_row), compiled per ISA by simd_exp.hpp's
// entry_for; the loss written to *loss.
struct RowBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* x, float* dx, std::size_t n, float t, std::size_t target,
                                   const float* next, float* loss) {
    *loss = t != 1.0f ? cross_entropy_row<I, true>(x, dx, n, t, target, next)
                      : cross_entropy_row<I, false>(x, dx, n, t, target, next);
  }
};

using RowFn = void (*)(const float*, float*, std::size_t, float, std::size_t, const float*, float*);

RowFn row_for(SimdIsa isa) {
  return entry_for<RowBody, const float*, float*, std::size_t, float, std::size_t, const float*, float*>(isa);
}

// ---------------------------------------------------------------- contracts
//
// First order in u = 2^-24, on rows with finite entries (-inf masks
// allowed), R and M as in RowShape (kernel.hpp): cross_entropy.cpp's
// derivation with exp16's 1.494u (simd_exp.hpp, "< 1.5u") in place of
// expf's 0.502u and this kernel's summation order.
//
// Terms: e_j = exp16(fl(z_j - a)): the subtraction's rounding moves exp's
// argument by u|z_j - a| <= uR, exp16 adds 1.494u: (1.494 + R)u relative.
// rest: a term passes through at most ceil(n/16) - 1 lane additions (the
// first addition to a lane's 0 is exact), the 4 tree levels and, when c > 1,
// the addition of c - 1 (exact terms, exactly 1 each): at most
// ceil(n/16) + 4 <= n/16 + 5 roundings. rest: (n/16 + 6.494 + R)u relative;
// D = 1 + rest one more rounding: (n/16 + 7.494 + R)u relative.
//
// Loss (ULP metric; ulp(v) > u|v| turns a relative bound into ULPs):
//  - a - z_t: one rounding (0 exactly when z_t = a);
//  - log1p(rest): rest's relative error e moves log1p(rest) by
//    rest e / (1 + rest) <= e log1p(rest), plus log1pf's own rounding
//    (< 1 ulp <= 2u): (n/16 + 8.494 + R)u relative;
//  - the sum of the two terms (both >= 0): the larger relative error plus u.
//  K = n/16 + 9.494 + R <= 10 + n/16 + R.
//  - temperature as cross_entropy.cpp: fl(T), fl(x / T) move z_i by
//    <= 2u|z_i|; when z_t = a the loss moves by <= 4uM (1 - p_t) <= 4uM
//    loss, otherwise p_t <= 1/2, loss >= log 2 and the change <= 5.78uM
//    loss: t = 6.
//  - Subnormal terms: an e_j below 2^-126 carries, besides its relative
//    error, up to denorm_min/2 absolute (exp16's bound), and rest up to
//    (n - 1) denorm_min/2 (sums of subnormals are exact; larger sums round
//    relatively). Where the loss is at least log 2 (z_t < a: p_t <= 1/2)
//    that is far below u loss. Where z_t = a and c > 1, rest >= 1: the same.
//    Where z_t = a, c = 1 and the computed rest >= 2^-64, the exact loss
//    exceeds 2^-66, its ulp 2^-89, and the absolute part is at most
//    n 2^-150 / 2^-89 = n 2^-61 ulp: below 0.5 for any n < 2^60, inside the
//    constant's slack (10 - 9.494). Below 2^-64 rest_in_double takes over:
//    the same f32 arguments (uR), exp and a recursive sum in double
//    (relative (n + 1) 2^-53 = (n + 1) 2^-29 u <= n/16 u), rounded once to
//    f32 (u, or denorm_min/2 = 0.5 ulp of a subnormal loss); log1pf of a
//    value below 2^-64 is that value. About 2 + R + n/16 + 0.5, well inside
//    K. (A 1 x 1000 row [0, -100, ..., -100] with t = 0 would otherwise have
//    lost 999 x 0.45 denorm_min, 450 ulp of a subnormal loss, against a
//    bound of 172.)
//
// Gradient (scaled metric: error / (u s_j), s_j = p_j + [j = t]):
//  - p_j = e_j * fl(1 / D): (1.494 + R) + (n/16 + 7.494 + R) + u (the
//    reciprocal) + u (the product) = n/16 + 10.988 + 2R relative, and
//    s_j = p_j off the target;
//  - at the target, z_t = a: -(rest / D): rest's error enters divided by
//    1 + rest, so (n/16 + 6.494 + R) + u (D's rounding) + u (the division)
//    = n/16 + 8.494 + R, relative to 1 - p_t <= s_t (rest_in_double's rest
//    is more accurate than that);
//  - at the target otherwise: |dp_t| + u |p_t - 1| <= ((n/16 + 10.988 + 2R)
//    p_t + 1)u <= (n/16 + 11.988 + 2R) u s_t.
//  K = n/16 + 11.988 + 2R <= 12 + n/16 + 2R.
//  - temperature: dp_j / p_j = dz_j - sum_i p_i dz_i, at most 4uM: 4uM s_j.
//  - subnormal p_j: exp16's denorm_min/2, times fl(1/D) <= 1, plus the
//    product's rounding (denorm_min/2): within one denorm_min, the metric's
//    floor (max(u s_j, denorm_min)), covered since a >= 1.
Contract loss_contract() {
  return declared_contract(10, 0.0625, 1, 0, 6,
                           "(a - z_t) + log1p(rest), both >= 0, exp16 (1.494u) and 16-lane summation: rest "
                           "(n/16 + 6.494 + R)u relative, log1p's rounding 2u, the sum u: n/16 + 9.494 + R; "
                           "subnormal terms: rest again in double below 2^-64; temperature 6uM");
}

Contract gradient_contract() {
  return declared_contract(12, 0.0625, 2, 0, 4,
                           "scaled by s_j = p_j + [j = t]: p_j = e_j * fl(1/D) n/16 + 10.988 + 2R, -rest / D "
                           "at a max target, p_t - 1 otherwise n/16 + 11.988 + 2R; temperature 4uM");
}

}  // namespace

void cross_entropy_simd(SimdIsa isa, const float* x, const std::int64_t* target, float* loss, float* dx,
                        std::int64_t rows, std::int64_t cols, float temperature) {
  if (!simd_isa_supported(isa))
    throw std::invalid_argument("cross_entropy_simd: this CPU lacks " + std::string(name(isa)));
  const auto n = static_cast<std::size_t>(cols);
  const auto total = static_cast<std::size_t>(rows) * n;
  // rest_in_double reads x after dx was written: dx must not overlap it.
  if (buffers_overlap(dx, x, total))
    throw std::invalid_argument("cross_entropy_simd: dx overlaps x");
  const RowFn row = row_for(isa);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x_row = x + r * cols;
    float* dx_row = dx + r * cols;
    if (target[r] == ignore_index) {
      for (std::size_t i = 0; i < n; ++i) dx_row[i] = 0.0f;
      loss[r] = 0.0f;
      continue;
    }
    if (target[r] < 0 || target[r] >= cols)
      throw std::invalid_argument("cross_entropy: target " + std::to_string(target[r]) + " outside [0, " +
                                  std::to_string(cols) + ")");
    row(x_row, dx_row, n, temperature, static_cast<std::size_t>(target[r]), next_row_to_prefetch(x, r, rows, cols),
        loss + r);
  }
}

Kernel cross_entropy_simd_kernel() {
  Kernel k;
  k.name = "cross_entropy_simd_f32";
  k.algorithm = "cross_entropy_simd";
  k.format = Format::f32;
  k.ops = {{.op = Op::cross_entropy, .contract = loss_contract(), .further_contracts = {gradient_contract()}}};
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = "three passes over the row (max; exp16 and the sum of the non-max terms; scaling) on 16-lane "
                  "vectors (AVX-512, AVX2 or baseline x86-64, picked at first use; the same bits), loss "
                  "(a - z_t) + log1p(rest), gradient exp(z - a) * fl(1 / (1 + rest)) with p_t - 1 formed "
                  "without cancellation (here: " +
                  std::string(name(best_simd_isa())) + ")";
  k.compute = [isa = best_simd_isa()](const OpCall& c) {
    if (c.op != Op::cross_entropy)
      throw std::invalid_argument("cross_entropy_simd_f32 does not provide " + std::string(name(c.op)));
    cross_entropy_simd(isa, static_cast<const float*>(c.in[0]), static_cast<const std::int64_t*>(c.in[1]),
                       static_cast<float*>(c.out[0]), static_cast<float*>(c.out[1]), c.rows, c.cols,
                       static_cast<float>(c.temperature));
  };
  return k;
}

}  // namespace softcheck::kernels
