// cuda_attention_flash_f32: FlashAttention-2's forward loop for one query
// row per block (docs/attention.md, "The CUDA kernel and its host twin";
// REFERENCE.md "FlashAttention tiling", "Online softmax", "Attention rows").
//
// The op gives every call row its own query q (d values), keys K and values
// V (n x d, key-major) and bias row x (op.hpp, Op::attention): one query
// against its own keys, the decoding shape. One block of Bc = 64 threads
// (cuda::attention_block_keys) per query row walks the keys in tiles of Bc:
//
//   1. thread v owns key first + v of the tile: its mask (x_j = -inf), and
//      its score z'_j = fma(q . K_j, s log2 e, x_j log2 e). K is staged
//      through shared memory 32 columns at a time with coalesced loads (a
//      warp reads one key's 128 bytes); the thread adds its key's products
//      in the order i = 0, 1, ..., d - 1, as the twin's flash::dot. The K and
//      V of a masked key are never loaded;
//   2. every thread reads the tile's max in key order (online::tile_max);
//      a tile whose max is -inf is skipped whole, leaving (m, l) and O as
//      they are (no -inf - -inf, FlashAttention's masked-tile rule);
//   3. thread v writes P_v = exp2(z'_v - m'); every thread then folds the
//      tile into its copy of (m, l) (the same values in every thread:
//      l' = l exp2(m - m') + (((0 + P_0) + P_1) + ...), key order);
//   4. thread t owns O_i for i = t, t + Bc, ...: O_i <- alpha O_i + the
//      tile's P.V over its keys in order (V read coalesced across threads);
//   5. O_i / l and lse = (m + log2 l) ln 2, or O = 0 and lse = -inf when no
//      key was visible (policy zeros).
//
// Every arithmetic step is a function of softcheck/attention_steps.hpp (and
// through it online_state.hpp and portable_math.hpp's exp2 / log2); the host
// twin attention_flash_twin_f32 (impls/src/attention_twin.cpp) calls the same
// functions in the same order, so O and lse are its bits (cuda_twin_compare).
// Compiled with --fmad=false --prec-div=true --prec-sqrt=true --ftz=false
// (impls/cuda/CMakeLists.txt): no a*b + c is contracted, division and square
// root are IEEE, subnormals are kept.
#include <cstdint>

#include "launch.cuh"
#include "softcheck/attention_steps.hpp"

namespace softcheck::cuda {

namespace {

constexpr int Bc = attention_block_keys;
constexpr int chunk = 32;  // K columns staged per pass: one warp reads one key's 128 bytes
static_assert(Bc % online::warp_width == 0 && Bc <= 1024, "Bc: whole warps per block");

// One tile in shared memory: its keys' K columns [c0, c0 + chunk) (a row
// padded to chunk + 1 floats, so that thread v reading K_s[v][col] hits a
// bank of its own), scores, probabilities and masks.
struct TileShared {
  float K[Bc][chunk + 1];
  float z2[Bc];
  float P[Bc];
  bool hidden[Bc];
};

// Stages columns [c0, c0 + width) of the tile's visible keys: element e of
// the Bc x chunk block is key e / chunk, column e % chunk; thread t loads e =
// t, t + Bc, ... (consecutive threads, consecutive columns of one key).
__device__ inline void stage_keys(const float* __restrict__ K, std::int64_t first, int count, std::int64_t d,
                                  std::int64_t c0, int width, TileShared& s) {
  for (int e = static_cast<int>(threadIdx.x); e < Bc * chunk; e += Bc) {
    const int v = e / chunk, col = e % chunk;
    if (v < count && col < width && !s.hidden[v]) s.K[v][col] = __ldg(K + (first + v) * d + c0 + col);
  }
}

__global__ void __launch_bounds__(Bc)
    attention_flash(const float* __restrict__ x, const float* __restrict__ q, const float* __restrict__ K,
                    const float* __restrict__ V, float* __restrict__ O, float* __restrict__ lse, std::int64_t n,
                    std::int64_t d, float s2) {
  __shared__ TileShared s;
  extern __shared__ float dynamic[];  // q_s[d], then O_s[d]
  float* q_s = dynamic;
  float* O_s = dynamic + d;
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t row = blockIdx.x;
  x += row * n;
  q += row * d;
  K += row * n * d;
  V += row * n * d;
  for (std::int64_t i = t; i < d; i += Bc) {
    q_s[i] = q[i];
    O_s[i] = 0.0f;
  }
  flash::State state = flash::empty_state();  // every thread holds the same (m, l)
  for (std::int64_t first = 0; first < n; first += Bc) {
    const int count = static_cast<int>(n - first < Bc ? n - first : Bc);
    __syncthreads();  // the previous tile's readers are done with s; q_s is written
    s.hidden[t] = t < count ? flash::masked(x[first + t]) : true;
    __syncthreads();
    // 1. scores: q . K_j in column order, chunk by chunk.
    float qk = 0.0f;
    for (std::int64_t c0 = 0; c0 < d; c0 += chunk) {
      const int width = static_cast<int>(d - c0 < chunk ? d - c0 : chunk);
      stage_keys(K, first, count, d, c0, width, s);
      __syncthreads();
      if (!s.hidden[t])
        for (int col = 0; col < width; ++col) qk = flash::dot_step(qk, q_s[c0 + col], s.K[t][col]);
      __syncthreads();
    }
    if (t < count) s.z2[t] = s.hidden[t] ? online::minus_inf : flash::score_log2(qk, s2, x[first + t]);
    __syncthreads();
    // 2. the tile's max; a fully masked tile is skipped by every thread alike.
    const float a = online::tile_max(s.z2, count);
    if (a == online::minus_inf) continue;
    // 3. probabilities and the state.
    const float m = flash::new_max(state.m, a);
    if (t < count) s.P[t] = flash::probability(s.z2[t], m);
    __syncthreads();
    const float alpha = flash::rescale_factor(state.m, m);
    state = flash::absorb(state, m, flash::tile_sum(s.P, count));
    // 4. O <- alpha O + P.V, the tile's keys in order, masked ones unread.
    for (std::int64_t i = t; i < d; i += Bc) {
      float pv = 0.0f;
      const float* Vi = V + first * d + i;
#pragma unroll 8
      for (int v = 0; v < count; ++v)
        if (!s.hidden[v]) pv = flash::pv_step(pv, s.P[v], __ldg(Vi + v * d));
      O_s[i] = flash::add_tile(flash::rescale_output(O_s[i], alpha), pv);
    }
  }
  // 5. normalise (each thread its own O_i: no barrier needed).
  const bool none = flash::no_visible_key(state);
  O += row * d;
  for (std::int64_t i = t; i < d; i += Bc) O[i] = none ? 0.0f : flash::normalised(O_s[i], state);
  if (t == 0) lse[row] = flash::lse(state);
}

}  // namespace

cudaError_t launch_attention(const float* x, const float* q, const float* K, const float* V, float* O, float* lse,
                             std::int64_t rows, std::int64_t n, std::int64_t d, float temperature,
                             cudaStream_t stream) {
  if (rows < 1 || n < 1 || d < 1 || d > attention_max_head_dim || rows > 0x7fffffff) return cudaErrorInvalidValue;
  // The scales on the host, with the same function the twin calls.
  const flash::Scales scales = flash::scales(temperature, d);
  const auto dynamic_bytes = static_cast<std::size_t>(2 * d) * sizeof(float);
  attention_flash<<<static_cast<unsigned>(rows), Bc, dynamic_bytes, stream>>>(x, q, K, V, O, lse, n, d, scales.s2);
  return cudaGetLastError();
}

}  // namespace softcheck::cuda
