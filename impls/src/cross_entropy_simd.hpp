// cross_entropy_simd_f32 (cross_entropy_simd.cpp): the registry's entry and
// the per-ISA entry point its tests compare bitwise.
#pragma once

#include <cstdint>

#include "simd_softmax.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// cross_entropy_simd_f32: the fused loss and gradient of Op::cross_entropy on
// 16-lane vectors with exp16, one thread, the best ISA this CPU runs.
Kernel cross_entropy_simd_kernel();

// rows x cols cross-entropy of x / temperature against one target per row
// (ignore_index: loss 0, dx 0) with the given ISA's code: loss[r] per row,
// dx the gradient p - onehot(t), rows x cols. dx must not overlap x. Throws
// std::invalid_argument when this CPU lacks the ISA, for overlapping buffers
// and for a target outside [0, cols) other than ignore_index.
void cross_entropy_simd(SimdIsa isa, const float* x, const std::int64_t* target, float* loss, float* dx,
                        std::int64_t rows, std::int64_t cols, float temperature);

}  // namespace softcheck::kernels
