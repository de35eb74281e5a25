// shifted_log1p_simd_f32 (shifted_log1p_simd.cpp): the registry's entry and
// the per-ISA entry point its tests compare bitwise.
#pragma once

#include <cstdint>

#include "simd_softmax.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// shifted_log1p_simd_f32: softmax, log_softmax, lse and entropy in
// shifted_log1p's forms on 16-lane vectors with exp16, one thread, the best
// ISA this CPU runs.
Kernel shifted_log1p_simd_kernel();

// Its contract for softmax, log_softmax, lse or entropy (derived in
// shifted_log1p_simd.cpp); the SIMD backward kernels' y is this forward.
Contract shifted_log1p_simd_contract(Op op);

// rows x cols op (softmax, log_softmax: rows x cols values into y, which may
// be x; lse, entropy: one value per row) of x / temperature with the given
// ISA's code. Throws std::invalid_argument for another op and when this CPU
// lacks the ISA.
void shifted_log1p_simd(Op op, SimdIsa isa, const float* x, float* y, std::int64_t rows, std::int64_t cols,
                        float temperature);

}  // namespace softcheck::kernels
