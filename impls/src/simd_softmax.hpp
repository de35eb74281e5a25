// shifted_simd_f32 and online_simd_f32 (simd_softmax.cpp) and their
// row-parallel twins: the registry's entries, and the per-ISA entry points
// their tests compare bitwise.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "softcheck/isa_dispatch.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// The kernels' code paths are isa_dispatch.hpp's levels (baseline, avx2,
// avx512), named as it names them.
using SimdIsa = Isa;
std::string_view name(SimdIsa isa);
// Whether this CPU can run the kernels' code for `isa`, and the best it can
// (what the kernels run and the kernel list reports).
bool simd_isa_supported(SimdIsa isa);
SimdIsa best_simd_isa();

enum class SimdAlgorithm { shifted, online };

// shifted_simd_f32, online_simd_f32 and their row-parallel twins
// shifted_simd_mt_f32, online_simd_mt_f32.
std::vector<Kernel> simd_kernels();

// rows x cols softmax of x / temperature with the given algorithm and ISA's
// code (throws std::invalid_argument when this CPU lacks the ISA), rows split
// into contiguous blocks over up to `threads` threads (simd_threads_used);
// the output does not depend on `threads`.
void simd_softmax(SimdAlgorithm algorithm, SimdIsa isa, const float* x, float* y, std::int64_t rows,
                  std::int64_t cols, float temperature, unsigned threads = 1);

// How many of `threads` simd_softmax starts for a rows x cols batch: at most
// one per row and per 2^15 elements (smaller blocks do not pay for a thread).
unsigned simd_threads_used(std::int64_t rows, std::int64_t cols, unsigned threads);

// The kernels' exp on each element with the given ISA's code (for its
// exhaustive tests; throws std::invalid_argument when this CPU lacks the ISA).
std::vector<float> exp16_for_test(SimdIsa isa, std::span<const float> d);

}  // namespace softcheck::kernels
