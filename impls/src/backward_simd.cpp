// softmax_backward_simd_f32 and log_softmax_backward_simd_f32: the backward
// passes of softmax_backward.cpp (the forward output y and dx given the
// upstream gradient g, end to end from the logits; docs/gradients.md) on
// 16-lane vectors with the monotone exp16 of simd_exp.hpp (< 1.5u),
// compiled per ISA level like shifted_simd_f32 and giving the same bits on
// every one (tested). One thread.
//
// Both start from the forward in Blanchard, Higham & Higham's final form
// (REFERENCE.md), as softmax_backward.cpp's: simd_exp.hpp's rest_below_max
// gives a = max z, e_i = exp16(fl(z_i - a)) and rest, the sum of the terms
// below the max, so D = 1 + rest. Then, in named steps:
//
//   softmax:      y_i = e_i * fl(1 / D);  s = <y, g>;  dx_i = y_i (g_i - s)
//   log-softmax:  G = sum_j g_j;  L = log1p(rest);
//                 dx_i = g_i - p_i G, p_i = e_i * fl(1 / D);
//                 y_i = (z_i - a) - L
//
// The sums (rest, s, G) are 16 lane sums (lane l takes the entries l, l + 16,
// ... in order) folded by fold_sum's 4-level tree. The passes zig-zag as
// shifted_simd's do (the max backwards, the exps forwards, the next pass
// backwards, ...), each starting on the part of the row the one before left
// in cache. L is log1p of rest in double, rounded once to f32; a row whose
// max is unique and whose rest is below 2^-64 takes rest from
// rest_in_double, as cross_entropy_simd's confident rows do (L ~ rest there:
// exp16's subnormal terms would show in its last bits).
//
// Masked-row policy zeros, as the scalar backward kernels: a fully masked
// row gives y = 0 (softmax) or -inf (log-softmax) and dx = 0, the exact
// gradient of a constant. A row with a NaN gives NaN (which NaN is not
// specified, as in simd_softmax.cpp).
#include "backward_simd.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernel_util.hpp"
#include "shifted_log1p_simd.hpp"
#include "simd_exp.hpp"

namespace softcheck::kernels {
namespace {

// The vectors, exp16, rest_below_max and the per-ISA entry points.
using namespace simd;

// keep for rest_below_max in the log-softmax backward: e_i stored in dx and
// the lane sums of g accumulated in the same pass (padding lanes add 0).
struct StoreExpsSumG {
  float* out;
  const float* g;
  vf g_sums = splat(0.0f);
  SOFTCHECK_INLINE void operator()(std::size_t at, std::size_t count, vf e, vf /*d*/) {
    if (count == lanes) {
      store(out + at, e);
      g_sums = g_sums + load(g + at);
    } else {
      store_part(out + at, e, count);
      g_sums = g_sums + load_part(g + at, count, 0.0f);
    }
  }
};

template <SimdIsa I, bool Scaled>
SOFTCHECK_INLINE void softmax_backward_row(const float* x, const float* g, float* y, float* dx, std::size_t n, float t,
                                           const float* next) {
  const std::size_t full = n - n % lanes;
  const std::size_t tail = n - full;
  // Pass 1, backwards: a.
  const float a = scaled_row_max(x, n, t);
  if (a == -std::numeric_limits<float>::infinity()) {  // fully masked: policy zeros
    for (std::size_t i = 0; i < n; ++i) y[i] = dx[i] = 0.0f;
    return;
  }
  // Pass 2, forwards: e_i into y, rest.
  StoreExps keep{y};
  const float rest = rest_below_max<I, Scaled>(x, n, a, t, next, keep);
  // Pass 3, backwards: y_i = e_i * fl(1 / D) and the lane sums of y_i g_i.
  const vf r = splat(1.0f / (1.0f + rest));
  vf dot = splat(0.0f);
  if (tail > 0) {
    const vf yv = load_part(y + full, tail, 0.0f) * r;
    store_part(y + full, yv, tail);
    dot = dot + yv * load_part(g + full, tail, 0.0f);
  }
  for (std::size_t i = full; i > 0; i -= lanes) {
    const vf yv = load(y + i - lanes) * r;
    store(y + i - lanes, yv);
    dot = dot + yv * load(g + i - lanes);
  }
  // Pass 4, forwards: dx_i = y_i (g_i - s).
  const vf s = splat(fold_sum(dot));
  for (std::size_t i = 0; i < full; i += lanes) store(dx + i, load(y + i) * (load(g + i) - s));
  if (tail > 0) store_part(dx + full, load_part(y + full, tail, 0.0f) * (load_part(g + full, tail, 0.0f) - s), tail);
}

template <SimdIsa I, bool Scaled>
SOFTCHECK_INLINE void log_softmax_backward_row(const float* x, const float* g, float* y, float* dx, std::size_t n,
                                               float t, const float* next) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const std::size_t full = n - n % lanes;
  const std::size_t tail = n - full;
  // Pass 1, backwards: a.
  const float a = scaled_row_max(x, n, t);
  if (a == minus_inf) {  // fully masked: policy zeros
    for (std::size_t i = 0; i < n; ++i) {
      y[i] = minus_inf;
      dx[i] = 0.0f;
    }
    return;
  }
  // Pass 2, forwards: e_i into dx, rest, the lane sums of g.
  StoreExpsSumG keep{dx, g};
  float rest = rest_below_max<I, Scaled>(x, n, a, t, next, keep);
  rest = accurate_rest(rest, x, n, t, a);
  const float log_d = log1p_to_f32(rest);
  // Pass 3, backwards: dx_i = g_i - (e_i * fl(1 / D)) G, y_i = (z_i - a) - L.
  const vf r = splat(1.0f / (1.0f + rest));
  const vf total = splat(fold_sum(keep.g_sums));
  const vf va = splat(a), vt = splat(t), vl = splat(log_d);
  if (tail > 0) {
    const vf p = load_part(dx + full, tail, 0.0f) * r;
    store_part(dx + full, load_part(g + full, tail, 0.0f) - p * total, tail);
    store_part(y + full, (z_of<Scaled>(load_part(x + full, tail, 0.0f), vt) - va) - vl, tail);
  }
  for (std::size_t i = full; i > 0; i -= lanes) {
    const vf p = load(dx + i - lanes) * r;
    store(dx + i - lanes, load(g + i - lanes) - p * total);
    store(y + i - lanes, (z_of<Scaled>(load(x + i - lanes), vt) - va) - vl);
  }
}

// One row, compiled per ISA by simd_exp.hpp's entry_for.
template <Op O>
struct RowBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* x, const float* g, float* y, float* dx, std::size_t n, float t,
                                   const float* next) {
    if constexpr (O == Op::softmax_backward)
      t != 1.0f ? softmax_backward_row<I, true>(x, g, y, dx, n, t, next)
                : softmax_backward_row<I, false>(x, g, y, dx, n, t, next);
    else
      t != 1.0f ? log_softmax_backward_row<I, true>(x, g, y, dx, n, t, next)
                : log_softmax_backward_row<I, false>(x, g, y, dx, n, t, next);
  }
};

using RowFn = void (*)(const float*, const float*, float*, float*, std::size_t, float, const float*);

RowFn row_for(Op op, SimdIsa isa) {
  return op == Op::softmax_backward
             ? entry_for<RowBody<Op::softmax_backward>, const float*, const float*, float*, float*, std::size_t, float,
                         const float*>(isa)
             : entry_for<RowBody<Op::log_softmax_backward>, const float*, const float*, float*, float*, std::size_t,
                         float, const float*>(isa);
}

// ---------------------------------------------------------------- contracts
//
// First order in u = 2^-24, on rows with finite entries (-inf masks
// allowed), R and M as in RowShape (kernel.hpp), scaled metric for dx
// (docs/gradients.md). softmax_backward.cpp's derivations with this
// kernel's forward and sums. y is shifted_log1p_simd_f32's softmax or
// log-softmax, the same steps (derived in shifted_log1p_simd.cpp): softmax
// F = n/16 + 10.988 + 2R relative, and p_i = e_i * fl(1/D) the same.
//
// softmax dx_i = y_i (g_i - s):
//  - s = sum y_j g_j: the y_j errors F u sum y|g|, the products u, the lane
//    sums and tree n/16 + 4: (F + n/16 + 5)u sum y|g|;
//  - g_i - s rounds once: u (|g_i| + sum y|g|); the product with y_i (F + 1);
//  - |dx_i - dx*_i| <= u y_i ((F + n/16 + 5) sum y|g| + (F + 2)(|g_i| + sum
//    y|g|)) <= (2F + n/16 + 7) u s_i, s_i = y_i (|g_i| + sum y|g|);
//  - subnormal y: up to denorm_min absolute in y_i (times |g_i - s|) and in
//    each y_j of s (times |g_j|); the scale counts a probability at least
//    denorm_min / u (oracle.hpp, exact_backward's resolution), so each adds
//    at most u s_i: +2.
//   K = 2(n/16 + 10.988 + 2R) + n/16 + 9 = 30.976 + 3n/16 + 4R; temperature
//   twice the forward's: 8uM.
// log-softmax dx_i = g_i - p_i G:
//  - p_i: P = F = n/16 + 10.988 + 2R;
//  - G = sum g: (n/16 + 4)u sum |g|;
//  - p_i G rounds once: |p_i G - p*_i G*| <= u p_i sum|g| (P + 1 + n/16 + 4);
//  - the subtraction: u |dx_i| <= u s_i, s_i = |g_i| + p_i sum|g|;
//  - a subnormal p_i: up to denorm_min absolute times |G| <= sum|g|, at most
//    u s_i by the scale's resolution: +1.
//   K = n/8 + 17.988 + 2R <= 18 + n/8 + 2R; temperature: dp_j / p_j = dz_j -
//   sum p_i dz_i, at most 4uM: 4uM s_j.
//
// y's contract: shifted_log1p_simd_f32's for the forward op (the same
// forward steps; derived in shifted_log1p_simd.cpp).

Contract softmax_dx_contract() {
  return declared_contract(31, 0.1875, 4, 0, 8,
                           "2F + n/16 + 9, F = n/16 + 10.988 + 2R the forward's: <y, g> (F + n/16 + 5)u sum "
                           "y|g| (16 lanes, tree), g - s u, the product with y F + 1, subnormal y 2 "
                           "(backward_simd.cpp); temperature 8uM");
}
Contract log_softmax_dx_contract() {
  return declared_contract(18, 0.125, 2, 0, 4,
                           "g - p G: p = e * fl(1/D) n/16 + 10.988 + 2R, G (n/16 + 4)u sum|g| (16 lanes, "
                           "tree), the product and difference 2u, subnormal p 1: n/8 + 17.988 + 2R; "
                           "temperature 4uM");
}

Kernel backward_simd_kernel(Op op) {
  const bool softmax = op == Op::softmax_backward;
  Kernel k;
  k.algorithm = std::string(softmax ? "softmax_backward" : "log_softmax_backward") + "_simd";
  k.name = k.algorithm + "_f32";
  k.format = Format::f32;
  k.ops = {{.op = op,
            .contract = shifted_log1p_simd_contract(softmax ? Op::softmax : Op::log_softmax),
            .further_contracts = {softmax ? softmax_dx_contract() : log_softmax_dx_contract()}}};
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = std::string("forward exp16(z - a) / (1 + rest) with the max term kept out of the sum, then ") +
                  (softmax ? "dx = y (g - <y, g>)" : "dx = g - p sum g, y = (z - a) - log1p(rest)") +
                  ", on 16-lane vectors (AVX-512, AVX2 or baseline x86-64, picked at first use; the same bits), "
                  "one thread (here: " +
                  std::string(name(best_simd_isa())) + ")";
  k.compute = [kname = k.name, op, isa = best_simd_isa()](const OpCall& c) {
    if (c.op != op) throw std::invalid_argument(kname + " does not provide " + std::string(name(c.op)));
    backward_simd(op, isa, static_cast<const float*>(c.in[0]), static_cast<const float*>(c.in[1]),
                  static_cast<float*>(c.out[0]), static_cast<float*>(c.out[1]), c.rows, c.cols,
                  static_cast<float>(c.temperature));
  };
  return k;
}

}  // namespace

void backward_simd(Op op, SimdIsa isa, const float* x, const float* g, float* y, float* dx, std::int64_t rows,
                   std::int64_t cols, float temperature) {
  if (op != Op::softmax_backward && op != Op::log_softmax_backward)
    throw std::invalid_argument("backward_simd: " + std::string(name(op)) + " is not a backward op");
  if (!simd_isa_supported(isa))
    throw std::invalid_argument("backward_simd: this CPU lacks " + std::string(name(isa)));
  const auto n = static_cast<std::size_t>(cols);
  const auto total = static_cast<std::size_t>(rows) * n;
  // Pass 2 writes y (or dx) while later passes read x and g again: the
  // outputs must not overlap the inputs (nor each other).
  const auto overlap = [total](const float* p, const float* q) { return buffers_overlap(p, q, total); };
  if (overlap(y, x) || overlap(y, g) || overlap(dx, x) || overlap(dx, g) || overlap(y, dx))
    throw std::invalid_argument("backward_simd: y and dx must not overlap x, g or each other");
  const RowFn row = row_for(op, isa);
  for (std::int64_t r = 0; r < rows; ++r) {
    row(x + r * cols, g + r * cols, y + r * cols, dx + r * cols, n, temperature,
        next_row_to_prefetch(x, r, rows, cols));
  }
}

std::vector<Kernel> backward_simd_kernels() {
  return {backward_simd_kernel(Op::softmax_backward), backward_simd_kernel(Op::log_softmax_backward)};
}

}  // namespace softcheck::kernels
