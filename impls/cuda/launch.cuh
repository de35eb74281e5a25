// Device-buffer launches of the CUDA kernels (tiled_online.cu), for the
// backend (backend.cu) and the benchmark (bench_main.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda_backend.hpp"

namespace softcheck::cuda {

// Bytes of one element of the variant's storage format (4: f32, 2: f16).
std::size_t element_bytes(Variant v);
// Device workspace the variant needs for `rows` rows (the split variant's
// per-segment states; 0 for the others).
std::size_t workspace_bytes(Variant v, std::int64_t rows);
// Name of the registered kernel, e.g. "cuda_tiled_online_f32".
const char* kernel_name(Variant v);

// Launches the variant on device buffers x, y (rows x cols, row-major),
// asynchronously on `stream`; returns the launch error (cudaGetLastError).
cudaError_t launch(Variant v, Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols,
                   float temperature, void* workspace, cudaStream_t stream);

// Launches the attention kernel (attention.cu) on device buffers: x (rows x
// n), q (rows x d), K and V (rows x n x d), O (rows x d), lse (rows), one
// block per query row, asynchronously on `stream`. cudaErrorInvalidValue for
// an empty call or d > attention_max_head_dim; otherwise the launch error.
cudaError_t launch_attention(const float* x, const float* q, const float* K, const float* V, float* O, float* lse,
                             std::int64_t rows, std::int64_t n, std::int64_t d, float temperature,
                             cudaStream_t stream);

// cudaSuccess when this device has an image of the kernels (sm_90 SASS or a
// PTX it can JIT), otherwise the error cudaFuncGetAttributes reports.
cudaError_t probe_kernels();

}  // namespace softcheck::cuda
