// shifted_simd_f32 (shifted_simd.cpp): the registry's entry, and the per-ISA
// entry points its tests compare bitwise.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

enum class SimdIsa { avx512, avx2, baseline };
std::string_view name(SimdIsa isa);
bool simd_isa_supported(SimdIsa isa);
SimdIsa best_simd_isa();

Kernel shifted_simd_f32_kernel();

// rows x cols softmax of x / temperature with the given ISA's code (throws
// std::invalid_argument when this CPU lacks it).
void shifted_simd_softmax(SimdIsa isa, const float* x, float* y, std::int64_t rows, std::int64_t cols,
                          float temperature);

// The kernel's polynomial exp on each element (for its exhaustive test).
std::vector<float> exp16_for_test(std::span<const float> d);

}  // namespace softcheck::kernels
