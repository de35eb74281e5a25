// The CUDA kernels as the (plain C++) rest of softcheck sees them: which
// variants exist, their launch shape, whether they can run here, and a
// host-buffer run function. Implemented by backend.cu when built with CUDA,
// by backend_absent.cpp otherwise (docs/cuda.md).
#pragma once

#include <cstdint>
#include <string>

#include "softcheck/format.hpp"
#include "softcheck/op.hpp"
#include "softcheck/online_state.hpp"

namespace softcheck::cuda {

// One block per row (per segment for the split variant): 256 threads, 4
// consecutive entries per thread per tile (a tile is 1024 entries).
inline constexpr online::TileShape block_shape{256, 4};
// Segments of the split-row variant (one block each).
inline constexpr int split_blocks = 8;

enum class Variant {
  tiled_f32,          // tree merge, portable exp (bit-exact twin: tiled_online_t1024_tree_f32)
  tiled_seq_f32,      // sequential merge (twin: tiled_online_t1024_seq_f32)
  tiled_f16,          // f16 in/out, f32 statistics (twin: tiled_online_t1024_tree_f16)
  split_f32,          // split-row, segment states merged in order (twin: split_online_t1024_s8_f32)
  tiled_expf_f32,     // tree merge with CUDA's expf/logf (<= 2 ulp): not bit-exact to any twin
  tiled_fastexp_f32,  // tree merge with __expf/__logf (what --use_fast_math maps expf to)
};

inline constexpr Variant all_variants[] = {Variant::tiled_f32,      Variant::tiled_seq_f32,
                                           Variant::tiled_f16,      Variant::split_f32,
                                           Variant::tiled_expf_f32, Variant::tiled_fastexp_f32};

// The attention kernel (attention.cu, docs/attention.md): one query row per
// block of attention_block_keys threads, keys in tiles of that many (Bc = 64,
// attention.cpp's attention_flash_bc64_f32); the host twin
// (impls/src/attention_twin.cpp) runs the same tiles.
inline constexpr int attention_block_keys = 64;
// The largest head dimension the kernel takes: q and the O accumulator live
// in shared memory (2 d floats per block).
inline constexpr std::int64_t attention_max_head_dim = 4096;
inline constexpr const char* attention_kernel_name = "cuda_attention_flash_f32";

// "" when the kernels can run; otherwise why not: "built without CUDA", or
// "no CUDA device: " and what is missing (no NVIDIA GPU found, no NVIDIA
// driver (libcuda.so.1) found, NVIDIA driver too old for this CUDA runtime
// (driver: CUDA x.y, runtime: CUDA x.y), ...) when cudaGetDeviceCount fails or
// finds none, or "no kernel image for this CUDA device (...)". Evaluated once.
std::string unavailable_reason();

// Runs a variant on host buffers (cudaMalloc / cudaMemcpy round trip; x and y
// may alias). Throws KernelFailure (softcheck/kernel_failure.hpp) on a CUDA
// error, and when the kernels are unavailable.
void run(Variant v, Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols,
         double temperature);

// Runs the attention kernel on host buffers (f32): x (rows x n bias
// entries), q (rows x d), K and V (rows x n x d, key-major) in; O (rows x d)
// and lse (rows) out. Throws KernelFailure on a CUDA error, when the kernels
// are unavailable, and for d > attention_max_head_dim.
void run_attention(const float* x, const float* q, const float* K, const float* V, float* O, float* lse,
                   std::int64_t rows, std::int64_t n, std::int64_t d, double temperature);

}  // namespace softcheck::cuda
