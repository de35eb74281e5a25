// The online softmax state (m, d) of Milakov & Gimelshein 2018 and the steps a
// tiled kernel is made of, as __host__ __device__ functions: the CUDA kernels
// (impls/cuda/) and their host twin (impls/src/tiled_online.cpp) both call
// exactly these, so the twin reproduces the kernel's roundings operation for
// operation (docs/cuda.md). REFERENCE.md, "Online softmax" and "FlashAttention
// tiling":
//
//   state        (m, d): m = max of the entries seen, d = sum exp(z_i - m); empty (-inf, 0)
//   absorb_tile  m' = max(m, max_tile z); d' = d exp(m - m') + sum_tile exp(z - m')
//   merge (⊕)    (m1, d1) ⊕ (m2, d2) = (M, d1 exp(m1 - M) + d2 exp(m2 - M)), M = max(m1, m2)
//   outputs      y = exp(z - m) / d,   log-softmax (z - m) - log d
//
// The operation order inside each function is part of the contract with the
// device: change it here and both sides change together.
#pragma once

#include <cmath>
#include <cstdint>

#include "softcheck/portable_math.hpp"

namespace softcheck::online {

// The exponential and logarithm the state is built with: the portable ones by
// default (bit-identical on host and device). The CUDA side also instantiates
// the steps with CUDA's expf and __expf (impls/cuda/).
struct PortableExp {
  SOFTCHECK_HD float operator()(float x) const { return portable::exp(x); }
};
struct PortableLog {
  SOFTCHECK_HD float operator()(float x) const { return portable::log(x); }
};

inline constexpr float minus_inf = -INFINITY;

struct State {
  float m;  // running max (-inf: nothing seen)
  float d;  // sum of exp(z_i - m) over the entries seen (0: nothing seen)
};

SOFTCHECK_HD inline State empty_state() { return {minus_inf, 0.0f}; }

// max(a, b) written out, so that host and device agree even on NaN and on the
// sign of a zero (the first operand wins a tie).
SOFTCHECK_HD inline float max_of(float a, float b) { return a < b ? b : a; }

// d re-expressed relative to a new max: d exp(m_old - m_new). Exact when the
// max did not move (no exp(0) evaluated); an empty sum stays 0 without
// evaluating -inf - -inf.
template <class Exp>
SOFTCHECK_HD inline float rescale(float d, float m_old, float m_new, Exp exp) {
  if (d == 0.0f) return 0.0f;
  if (m_old == m_new) return d;
  return d * exp(m_old - m_new);
}

// exp(z - m): one entry's term relative to the max m (0 for a masked z = -inf).
template <class Exp>
SOFTCHECK_HD inline float term(float z, float m, Exp exp) {
  return exp(z - m);
}

// max over z[0..count), -inf when every entry is masked.
SOFTCHECK_HD inline float tile_max(const float* z, int count) {
  float a = minus_inf;
  for (int v = 0; v < count; ++v) a = max_of(a, z[v]);
  return a;
}

// FlashAttention's per-tile update of one thread's state with its `count`
// entries of a tile (padding past the row's end is -inf):
//   m' = max(m, max_v z_v);  d' = d exp(m - m') + (((0 + t_0) + t_1) + ...),
//   t_v = exp(z_v - m'). A fully masked tile leaves the state unchanged.
template <class Exp>
SOFTCHECK_HD inline State absorb_tile(State s, const float* z, int count, Exp exp) {
  const float a = tile_max(z, count);
  if (a == minus_inf) return s;
  const float m = max_of(s.m, a);
  float sum = 0.0f;
  for (int v = 0; v < count; ++v) sum = sum + term(z[v], m, exp);
  return {m, rescale(s.d, s.m, m, exp) + sum};
}

// The ⊕ of REFERENCE.md. Merging with an empty state returns the other state
// bit for bit (its rescale is exact, the empty side adds exactly 0).
template <class Exp>
SOFTCHECK_HD inline State merge(State a, State b, Exp exp) {
  const float m = max_of(a.m, b.m);
  return {m, rescale(a.d, a.m, m, exp) + rescale(b.d, b.m, m, exp)};
}

// ---------------------------------------------------------------- merge orders

enum class MergeOrder {
  tree,        // pairwise tree: per warp s[i] ⊕ s[i + o] for o = 16, 8, 4, 2, 1, then the same over warps
  sequential,  // left fold in thread order: ((s_0 ⊕ s_1) ⊕ s_2) ⊕ ...
};

inline constexpr int warp_width = 32;

// One level of the pairwise tree over `width` states: s[i] = s[i] ⊕ s[i + offset]
// for i < offset. A warp's __shfl_down_sync(offset) reduction computes exactly
// this in lane i (lane 0 only ever reads lanes that did the same).
template <class Exp>
SOFTCHECK_HD inline void tree_level(State* s, int offset, Exp exp) {
  for (int i = 0; i < offset; ++i) s[i] = merge(s[i], s[i + offset], exp);
}

// The full tree over warp_width states (offsets 16, 8, 4, 2, 1); result in s[0].
template <class Exp>
SOFTCHECK_HD inline State tree_fold(State* s, Exp exp) {
  for (int offset = warp_width / 2; offset > 0; offset /= 2) tree_level(s, offset, exp);
  return s[0];
}

// ((s[0] ⊕ s[1]) ⊕ s[2]) ⊕ ... ⊕ s[count - 1]; count >= 1.
template <class Exp>
SOFTCHECK_HD inline State sequential_fold(const State* s, int count, Exp exp) {
  State acc = s[0];
  for (int i = 1; i < count; ++i) acc = merge(acc, s[i], exp);
  return acc;
}

// ------------------------------------------------------------------- outputs

// What the second pass needs. FlashAttention's masked-row rule ("zeros"
// policy): when the row max is -inf the shift is 0 (no -inf - -inf); d = 0
// (nothing but masks) gives softmax 0 and log-softmax -inf.
struct Normaliser {
  float shift;
  float d;
};

SOFTCHECK_HD inline Normaliser normaliser(State s) {
  return {s.m == minus_inf ? 0.0f : s.m, s.d};
}

// y = exp(z - m) / d: one exp, one true division.
template <class Exp>
SOFTCHECK_HD inline float softmax_of(float z, Normaliser n, Exp exp) {
  if (n.d == 0.0f) return 0.0f;
  return term(z, n.shift, exp) / n.d;
}

// log d, evaluated once per row (-inf for a fully masked row).
template <class Log>
SOFTCHECK_HD inline float log_of_sum(Normaliser n, Log log) {
  return log(n.d);
}

// (z - m) - log d: two roundings. -inf for masked entries and masked rows.
SOFTCHECK_HD inline float log_softmax_of(float z, Normaliser n, float log_d) {
  if (n.d == 0.0f) return minus_inf;
  return (z - n.shift) - log_d;
}

// --------------------------------------------------------------- geometry

// Which entries a thread owns: a block of `threads` threads walks its range
// in tiles of threads * per_thread entries; thread t owns the per_thread
// consecutive entries starting at tile_start + t * per_thread.
struct TileShape {
  int threads;     // a multiple of warp_width, at most warp_width^2
  int per_thread;  // entries per thread per tile
  SOFTCHECK_HD constexpr std::int64_t tile() const {
    return static_cast<std::int64_t>(threads) * per_thread;
  }
};

// Split-row variant: the row is cut into `splits` segments of equal length,
// a whole number of tiles each (the last ones may be short or empty).
SOFTCHECK_HD inline std::int64_t segment_length(std::int64_t cols, int splits, std::int64_t tile) {
  const std::int64_t per_split = (cols + splits - 1) / splits;
  return (per_split + tile - 1) / tile * tile;
}

}  // namespace softcheck::online
