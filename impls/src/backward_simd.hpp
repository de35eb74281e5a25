// softmax_backward_simd_f32 and log_softmax_backward_simd_f32
// (backward_simd.cpp): the registry's entries and the per-ISA entry point
// their tests compare bitwise.
#pragma once

#include <cstdint>
#include <vector>

#include "simd_softmax.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// The two backward kernels on 16-lane vectors with exp16, one thread, the
// best ISA this CPU runs.
std::vector<Kernel> backward_simd_kernels();

// rows x cols backward pass `op` (softmax_backward or log_softmax_backward)
// of x / temperature given the upstream gradient g, with the given ISA's
// code: the forward y and dx, each rows x cols. y and dx must not overlap x,
// g or each other. Throws std::invalid_argument for another op, when this
// CPU lacks the ISA, and for overlapping buffers.
void backward_simd(Op op, SimdIsa isa, const float* x, const float* g, float* y, float* dx, std::int64_t rows,
                   std::int64_t cols, float temperature);

}  // namespace softcheck::kernels
