// The steps of one query's FlashAttention-2 forward loop (Dao 2023,
// arXiv:2307.08691, Algorithm 1; REFERENCE.md "FlashAttention tiling",
// "Online softmax", "Attention rows") as tiny __host__ __device__ functions
// that read like the math, in the style of FlashAttention's softmax.h. The
// CUDA kernel cuda_attention_flash_f32 (impls/cuda/attention.cu) and its host
// twin attention_flash_twin_f32 (impls/src/attention_twin.cpp) call exactly
// these, in the same order, with the portable exp2/log2 of portable_math.hpp,
// so that their O and lse agree bit for bit (docs/cuda.md, docs/attention.md).
//
// Per query (q, d values), keys K_j and values V_j (d values each), bias x_j
// (-inf masks key j, whose K_j and V_j are never read), in f32:
//
//   scales       s = 1 / (fl(T) fl(sqrt d)),  s2 = fl(s log2 e)
//   score        z'_j = fma(fl(q . K_j), s2, fl(x_j log2 e))   (log2 units; -inf if masked)
//   tile         Bc consecutive keys; a tile whose max is -inf is skipped whole
//   state        (m, l): m' = max(m, max_tile z'), P_v = exp2(z'_v - m'),
//                l' = l exp2(m - m') + (((0 + P_0) + P_1) + ...)      (online_state.hpp)
//   output       O_i <- alpha O_i + (((0 + P_0 V_0i) + P_1 V_1i) + ...), alpha = exp2(m - m')
//   finalize     O_i / l,  lse = (m + log2 l) ln 2;  l = 0 (no visible key): O = 0, lse = -inf
//
// The same operations as attention.cpp's flash kernels (attention_flash_bc64_f32),
// with the portable exp2 and log2 in place of exp2f and log2f. Compiled with
// -ffp-contract=off (C++) and --fmad=false (CUDA): the one fused multiply-add
// is the score's, written as portable::fma_rn.
#pragma once

#include <cmath>
#include <cstdint>

#include "softcheck/online_state.hpp"
#include "softcheck/portable_math.hpp"

namespace softcheck::flash {

// log2(e) and ln(2) rounded to float (std::numbers::log2e_v<float> and
// ln2_v<float>, spelled out: this header is also C++17 for nvcc).
inline constexpr float log2e = 0x1.715476p+0f;
inline constexpr float ln2 = 0x1.62e430p-1f;

// The exponential and logarithm of the loop, in log2 units: bit-identical
// on host and device (portable_math.hpp).
struct Exp2 {
  SOFTCHECK_HD float operator()(float x) const { return portable::exp2(x); }
};
struct Log2 {
  SOFTCHECK_HD float operator()(float x) const { return portable::log2(x); }
};

// ------------------------------------------------------------------ scores

struct Scales {
  float s;   // 1 / (T sqrt d)
  float s2;  // s log2(e): FlashAttention's softmax_scale_log2
};

// s = 1 / (fl(T) fl(sqrt d)) and s2 = fl(s log2 e), once per call: sqrt and
// the division are correctly rounded on both sides (--prec-sqrt=true
// --prec-div=true on the device).
SOFTCHECK_HD inline Scales scales(float temperature, std::int64_t d) {
  const float root = std::sqrt(static_cast<float>(d));
  const float s = 1.0f / (temperature * root);
  return {s, s * log2e};
}

// One more product of q . k, left to right: acc + q_i k_i (two roundings;
// 0 + the first product is exact).
SOFTCHECK_HD inline float dot_step(float acc, float q_i, float k_i) { return acc + q_i * k_i; }

// q . k over i = 0 .. d - 1, left to right.
SOFTCHECK_HD inline float dot(const float* q, const float* k, std::int64_t d) {
  float acc = 0.0f;
  for (std::int64_t i = 0; i < d; ++i) acc = dot_step(acc, q[i], k[i]);
  return acc;
}

// z'_j = fma(q . K_j, s2, x_j log2 e): the score in log2 units, log2(e)
// folded into the scale by one fma (REFERENCE.md "FlashAttention tiling").
SOFTCHECK_HD inline float score_log2(float qk, float s2, float x) { return portable::fma_rn(qk, s2, x * log2e); }

// A masked key (x_j = -inf): its score is -inf without reading K_j.
SOFTCHECK_HD inline bool masked(float x) { return x == online::minus_inf; }

// ------------------------------------------------------------ online state

// The running max over the tiles seen (-inf: none) and l = sum exp2(z' - m)
// over them (0: none): online_state.hpp's (m, d).
using State = online::State;

SOFTCHECK_HD inline State empty_state() { return online::empty_state(); }

// m' = max(m, a), a the tile's max (online_state.hpp's max_of, first operand
// wins a tie, so NaN and signed zeros go the same way on both sides).
SOFTCHECK_HD inline float new_max(float m, float tile_max) { return online::max_of(m, tile_max); }

// P_v = exp2(z'_v - m'): a key's probability relative to the running max
// (0 for a masked key: exp2(-inf) = 0).
SOFTCHECK_HD inline float probability(float z2, float m) { return online::term(z2, m, Exp2{}); }

// (((0 + P_0) + P_1) + ...) over the tile, in key order.
SOFTCHECK_HD inline float tile_sum(const float* P, int count) {
  float sum = 0.0f;
  for (int v = 0; v < count; ++v) sum = sum + P[v];
  return sum;
}

// alpha = exp2(m_old - m_new), the factor that re-expresses O (and l)
// relative to the new max: exactly 1 when the max did not move, 0 before
// the first visible tile (m_old = -inf; O is still 0). online::rescale of 1,
// so that l alpha and rescale(l) are the same product.
SOFTCHECK_HD inline float rescale_factor(float m_old, float m_new) {
  return online::rescale(1.0f, m_old, m_new, Exp2{});
}

// (m', l') after a tile with max m' and probability sum `sum`:
// l' = l exp2(m - m') + sum (online_state.hpp's absorb_tile, its tile sum
// formed from the same P the output uses). A fully masked tile never gets
// here: the loop skips it, leaving (m, l) and O untouched.
SOFTCHECK_HD inline State absorb(State s, float m_new, float sum) {
  return {m_new, online::rescale(s.d, s.m, m_new, Exp2{}) + sum};
}

// ------------------------------------------------------------------ output

// O_i <- alpha O_i (one rounding; exact for alpha = 1).
SOFTCHECK_HD inline float rescale_output(float O_i, float alpha) { return alpha * O_i; }

// One more key of the tile's P.V: acc + P_v V_vi.
SOFTCHECK_HD inline float pv_step(float acc, float P_v, float V_vi) { return acc + P_v * V_vi; }

// O_i + the tile's sum_v P_v V_vi (formed first, as l's tile sum).
SOFTCHECK_HD inline float add_tile(float O_i, float tile_pv) { return O_i + tile_pv; }

// Policy zeros (FlashAttention-4's rule, REFERENCE.md "Attention rows"):
// l = 0 means no visible key (with one, the max key's P is exp2(0) = 1).
SOFTCHECK_HD inline bool no_visible_key(State s) { return s.d == 0.0f; }

// O_i / l: one IEEE division.
SOFTCHECK_HD inline float normalised(float O_i, State s) { return O_i / s.d; }

// lse = (m + log2 l) ln 2, or -inf for a row with no visible key.
SOFTCHECK_HD inline float lse(State s) {
  if (no_visible_key(s)) return online::minus_inf;
  return (s.m + Log2{}(s.d)) * ln2;
}

}  // namespace softcheck::flash
