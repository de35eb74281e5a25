// The host twin of the CUDA attention kernel (impls/cuda/attention.cu): one
// query row of FlashAttention-2's forward loop over tiles of 64 keys, with
// the steps of softcheck/attention_steps.hpp and the portable exp2 / log2,
// so that it reproduces cuda_attention_flash_f32's O and lse bit for bit
// (docs/attention.md, "The CUDA kernel and its host twin"; docs/cuda.md).
#pragma once

#include <cstdint>
#include <vector>

#include "softcheck/attention_steps.hpp"
#include "softcheck/kernel.hpp"
#include "tiled_online.hpp"

namespace softcheck::kernels {

// One query, what one CUDA block computes: x (n bias entries), q (d), K and
// V (n x d, key-major) in; O (d) and lse out. Keys in tiles of
// cuda::attention_block_keys; the K and V of a masked key (x_j = -inf) are
// never read.
void attention_flash_twin_row(const float* x, const float* q, const float* K, const float* V, std::int64_t n,
                              std::int64_t d, flash::Scales scales, float* O, float& lse);

// The bias rows (rows x n) of a call with each row's keys outside its
// window (KeyWindow) set to -inf: how the CUDA kernel and its twin take the
// window (the host folds it into the bias; the kernel then masks those keys
// like any other, processing every tile, with no tile skipping).
std::vector<float> bias_with_windows(const float* x, const KeyWindow* window, std::int64_t rows, std::int64_t n);

// The twin's contracts (derived in attention_twin.cpp), which the CUDA
// kernel declares too: its bits are the twin's.
Contract attention_flash_twin_output_contract();
Contract attention_flash_twin_lse_contract();

// attention_flash_twin_f32 (registered in attention_kernels(), registry.cpp).
std::vector<Kernel> attention_twin_kernels();

// cuda_attention_flash_f32 (impls/cuda/cuda_kernels.cpp): always listed in
// attention_kernels(); available only when built with CUDA and a device is
// present.
std::vector<Kernel> cuda_attention_kernels();

// The CUDA attention kernel and its twin (bit_exact: both use the portable
// exp2 / log2; cuda_twin_compare compares them, scripts/gpu-check.sh).
std::vector<CudaTwinPair> cuda_attention_twin_pairs();

}  // namespace softcheck::kernels
