// Tiled online softmax / log-softmax on a CUDA device (docs/cuda.md).
//
// One block of P = 256 threads per row (per segment for the split variant)
// walks the row in tiles of P * V = 1024 entries; thread t owns the V = 4
// consecutive entries at tile_start + t * V and folds them into its own online
// state (m, d) with online::absorb_tile. The P states are merged with ⊕:
// __shfl_down_sync trees inside each warp, then over the warps in warp 0
// (or, MergeOrder::sequential, by thread 0 in thread order). A second pass
// writes y = exp(z - m) / d or (z - m) - log d.
//
// Every arithmetic step is a function of softcheck/online_state.hpp; the host
// twin (impls/src/tiled_online.cpp) calls the same functions in the same
// order. Compiled with --fmad=false (no contraction of a*b + c), IEEE division
// and denormals (no --use_fast_math), so that with the portable exp/log the
// results are the twin's bit for bit. The expf and __expf variants change
// only the exp/log.
#include <cuda_fp16.h>

#include <cstdint>

#include "launch.cuh"
#include "softcheck/online_state.hpp"

namespace softcheck::cuda {

namespace {

using online::MergeOrder;
using online::State;

constexpr int P = block_shape.threads;
constexpr int V = block_shape.per_thread;
constexpr std::int64_t tile = block_shape.tile();
constexpr int warps = P / online::warp_width;
constexpr unsigned full_mask = 0xffffffffu;
static_assert(P % online::warp_width == 0 && warps <= online::warp_width, "block shape");
static_assert(V == 4, "the vector loads below move 4 entries");

// ------------------------------------------------------------ exp and log

struct CudaExpf {
  __device__ float operator()(float x) const { return expf(x); }
};
struct CudaLogf {
  __device__ float operator()(float x) const { return logf(x); }
};
struct FastExpf {
  __device__ float operator()(float x) const { return __expf(x); }
};
struct FastLogf {
  __device__ float operator()(float x) const { return __logf(x); }
};

struct PortableMath {
  using Exp = online::PortableExp;
  using Log = online::PortableLog;
};
struct LibdeviceMath {
  using Exp = CudaExpf;
  using Log = CudaLogf;
};
struct FastMath {
  using Exp = FastExpf;
  using Log = FastLogf;
};

// ---------------------------------------------------------- element access

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float half_bits_to_float(unsigned bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits & 0xffffu)));
}
__device__ inline unsigned half_bits(float v) { return __half_as_ushort(__float2half_rn(v)); }

template <int Bytes>
__device__ inline bool aligned(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % Bytes) == 0;
}

// Raw values of this thread's V entries starting at `first` (the whole
// vector lies inside the range): one 16-byte (f32) or 8-byte (f16) load
// when aligned. Loads do not change values.
__device__ inline void load_raw(const float* x, std::int64_t first, float (&v)[V]) {
  if (aligned<16>(x + first)) {
    const float4 q = *reinterpret_cast<const float4*>(x + first);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = x[first + i];
}

__device__ inline void load_raw(const __half* x, std::int64_t first, float (&v)[V]) {
  if (aligned<8>(x + first)) {
    const uint2 q = *reinterpret_cast<const uint2*>(x + first);
    v[0] = half_bits_to_float(q.x), v[1] = half_bits_to_float(q.x >> 16);
    v[2] = half_bits_to_float(q.y), v[3] = half_bits_to_float(q.y >> 16);
    return;
  }
#pragma unroll
  for (int i = 0; i < V; ++i) v[i] = to_float(x[first + i]);
}

// z_v = x_v / t for the thread's entries, -inf past `end` (host twin: gather).
template <class In>
__device__ void load_tile(const In* x, std::int64_t first, std::int64_t end, float t, float (&z)[V]) {
  if (first + V <= end) {
    load_raw(x, first, z);
#pragma unroll
    for (int i = 0; i < V; ++i) z[i] = z[i] / t;
    return;
  }
#pragma unroll
  for (int i = 0; i < V; ++i) z[i] = first + i < end ? to_float(x[first + i]) / t : online::minus_inf;
}

__device__ inline void store_tile(float* y, std::int64_t first, std::int64_t end, const float (&v)[V]) {
  if (first + V <= end && aligned<16>(y + first)) {
    *reinterpret_cast<float4*>(y + first) = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (first + i < end) y[first + i] = v[i];
}

__device__ inline void store_tile(__half* y, std::int64_t first, std::int64_t end, const float (&v)[V]) {
  if (first + V <= end && aligned<8>(y + first)) {
    *reinterpret_cast<uint2*>(y + first) =
        make_uint2(half_bits(v[0]) | (half_bits(v[1]) << 16), half_bits(v[2]) | (half_bits(v[3]) << 16));
    return;
  }
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (first + i < end) y[first + i] = __float2half_rn(v[i]);
}

__device__ inline std::int64_t first_entry(std::int64_t tile_start) {
  return tile_start + static_cast<std::int64_t>(threadIdx.x) * V;
}

// ------------------------------------------------------------ first pass

// This thread's state over the tiles of [begin, end).
template <class In, class Exp>
__device__ State thread_state(const In* x, std::int64_t begin, std::int64_t end, float t) {
  State s = online::empty_state();
  for (std::int64_t tile_start = begin; tile_start < end; tile_start += tile) {
    float z[V];
    load_tile(x, first_entry(tile_start), end, t, z);
    s = online::absorb_tile(s, z, V, Exp{});
  }
  return s;
}

// Lane 0 ends with online::tree_fold of the warp's 32 states: at offset o lane
// i merges its state with lane i + o's, and lane 0 only reads lanes that did
// the same (lanes past 31 - o merge garbage nobody reads).
template <class Exp>
__device__ State warp_tree(State s) {
  for (int offset = online::warp_width / 2; offset > 0; offset /= 2) {
    const State other{__shfl_down_sync(full_mask, s.m, offset), __shfl_down_sync(full_mask, s.d, offset)};
    s = online::merge(s, other, Exp{});
  }
  return s;
}

// Tree: per-warp trees, then a tree over the warp results (padded to 32 with
// empty states) in warp 0. The row's state is returned to every thread.
template <class Exp>
__device__ State block_tree(State mine) {
  __shared__ State warp_states[warps];
  __shared__ State row_state;
  const int lane = static_cast<int>(threadIdx.x) % online::warp_width;
  const int warp = static_cast<int>(threadIdx.x) / online::warp_width;
  const State w = warp_tree<Exp>(mine);
  if (lane == 0) warp_states[warp] = w;
  __syncthreads();
  if (warp == 0) {
    const State r = warp_tree<Exp>(lane < warps ? warp_states[lane] : online::empty_state());
    if (lane == 0) row_state = r;
  }
  __syncthreads();
  return row_state;
}

// Sequential: thread 0 folds the P states in thread order.
template <class Exp>
__device__ State block_sequential(State mine) {
  __shared__ State states[P];
  __shared__ State row_state;
  states[threadIdx.x] = mine;
  __syncthreads();
  if (threadIdx.x == 0) row_state = online::sequential_fold(states, P, Exp{});
  __syncthreads();
  return row_state;
}

template <MergeOrder M, class Exp>
__device__ State block_state(State mine) {
  if constexpr (M == MergeOrder::tree)
    return block_tree<Exp>(mine);
  else
    return block_sequential<Exp>(mine);
}

// ----------------------------------------------------------- second pass

template <class Math, class In, class Out>
__device__ void write_outputs(const In* x, Out* y, std::int64_t begin, std::int64_t end, float t,
                              Op op, State row) {
  using Exp = typename Math::Exp;
  const online::Normaliser n = online::normaliser(row);
  const float log_d = op == Op::log_softmax ? online::log_of_sum(n, typename Math::Log{}) : 0.0f;
  for (std::int64_t tile_start = begin; tile_start < end; tile_start += tile) {
    const std::int64_t first = first_entry(tile_start);
    float z[V];
    load_tile(x, first, end, t, z);
    float out[V];
#pragma unroll
    for (int i = 0; i < V; ++i)
      out[i] = op == Op::softmax ? online::softmax_of(z[i], n, Exp{}) : online::log_softmax_of(z[i], n, log_d);
    store_tile(y, first, end, out);
  }
}

// ---------------------------------------------------------------- kernels

template <MergeOrder M, class Math, class In, class Out>
__global__ void __launch_bounds__(P) tiled_online(const In* x, Out* y, std::int64_t cols, float t, Op op) {
  const std::int64_t offset = static_cast<std::int64_t>(blockIdx.x) * cols;
  const State mine = thread_state<In, typename Math::Exp>(x + offset, 0, cols, t);
  const State row = block_state<M, typename Math::Exp>(mine);
  write_outputs<Math>(x + offset, y + offset, 0, cols, t, op, row);
}

// Split-row: block b handles segment b % split_blocks of row b / split_blocks.
struct Segment {
  std::int64_t row, begin, end;  // begin >= end: an empty segment (short row)
};

__device__ inline Segment segment_of_block(std::int64_t cols) {
  const std::int64_t row = blockIdx.x / split_blocks;
  const std::int64_t seg = online::segment_length(cols, split_blocks, tile);
  const std::int64_t begin = (blockIdx.x % split_blocks) * seg;
  return {row, begin, begin + seg < cols ? begin + seg : cols};
}

template <class Math, class In>
__global__ void __launch_bounds__(P) split_states(const In* x, State* partial, std::int64_t cols, float t) {
  const Segment g = segment_of_block(cols);
  const State mine = thread_state<In, typename Math::Exp>(x + g.row * cols, g.begin, g.end, t);
  const State s = block_tree<typename Math::Exp>(mine);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// Every block of a row folds the row's segment states in segment order (the
// split-KV combine), then writes its own segment.
template <class Math, class In, class Out>
__global__ void __launch_bounds__(P) split_outputs(const In* x, Out* y, const State* partial,
                                                   std::int64_t cols, float t, Op op) {
  __shared__ State row_state;
  const Segment g = segment_of_block(cols);
  if (threadIdx.x == 0)
    row_state = online::sequential_fold(partial + g.row * split_blocks, split_blocks, typename Math::Exp{});
  __syncthreads();
  write_outputs<Math>(x + g.row * cols, y + g.row * cols, g.begin, g.end, t, op, row_state);
}

// ----------------------------------------------------------------- launches

template <MergeOrder M, class Math, class In, class Out>
cudaError_t launch_tiled(const void* x, void* y, std::int64_t rows, std::int64_t cols, float t, Op op,
                         cudaStream_t stream) {
  tiled_online<M, Math><<<static_cast<unsigned>(rows), P, 0, stream>>>(static_cast<const In*>(x),
                                                                         static_cast<Out*>(y), cols, t, op);
  return cudaGetLastError();
}

template <class Math, class In, class Out>
cudaError_t launch_split(const void* x, void* y, std::int64_t rows, std::int64_t cols, float t, Op op,
                         void* workspace, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(rows * split_blocks);
  auto* partial = static_cast<State*>(workspace);
  split_states<Math><<<blocks, P, 0, stream>>>(static_cast<const In*>(x), partial, cols, t);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  split_outputs<Math><<<blocks, P, 0, stream>>>(static_cast<const In*>(x), static_cast<Out*>(y), partial,
                                                cols, t, op);
  return cudaGetLastError();
}

}  // namespace

std::size_t element_bytes(Variant v) { return v == Variant::tiled_f16 ? sizeof(__half) : sizeof(float); }

std::size_t workspace_bytes(Variant v, std::int64_t rows) {
  return v == Variant::split_f32 ? static_cast<std::size_t>(rows) * split_blocks * sizeof(State) : 0;
}

const char* kernel_name(Variant v) {
  switch (v) {
    case Variant::tiled_f32: return "cuda_tiled_online_f32";
    case Variant::tiled_seq_f32: return "cuda_tiled_online_seq_f32";
    case Variant::tiled_f16: return "cuda_tiled_online_f16";
    case Variant::split_f32: return "cuda_split_online_f32";
    case Variant::tiled_expf_f32: return "cuda_tiled_online_expf_f32";
    case Variant::tiled_fastexp_f32: return "cuda_tiled_online_fastexp_f32";
  }
  return "?";
}

cudaError_t launch(Variant v, Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols,
                   float temperature, void* workspace, cudaStream_t stream) {
  if (rows < 1 || cols < 1 || rows * split_blocks > 0x7fffffff) return cudaErrorInvalidValue;
  const float t = temperature;
  switch (v) {
    case Variant::tiled_f32:
      return launch_tiled<MergeOrder::tree, PortableMath, float, float>(x, y, rows, cols, t, op, stream);
    case Variant::tiled_seq_f32:
      return launch_tiled<MergeOrder::sequential, PortableMath, float, float>(x, y, rows, cols, t, op, stream);
    case Variant::tiled_f16:
      return launch_tiled<MergeOrder::tree, PortableMath, __half, __half>(x, y, rows, cols, t, op, stream);
    case Variant::split_f32:
      return launch_split<PortableMath, float, float>(x, y, rows, cols, t, op, workspace, stream);
    case Variant::tiled_expf_f32:
      return launch_tiled<MergeOrder::tree, LibdeviceMath, float, float>(x, y, rows, cols, t, op, stream);
    case Variant::tiled_fastexp_f32:
      return launch_tiled<MergeOrder::tree, FastMath, float, float>(x, y, rows, cols, t, op, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t probe_kernels() {
  cudaFuncAttributes a{};
  return cudaFuncGetAttributes(&a, tiled_online<MergeOrder::tree, PortableMath, float, float>);
}

}  // namespace softcheck::cuda
