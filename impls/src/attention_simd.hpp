// The two inner loops of attention_flash_simd_f32 (attention.cpp) on 16-lane
// vectors, compiled per ISA level like the SIMD softmax kernels
// (simd_exp.hpp) and giving the same bits on every one:
//   dot:           *out = q . k, lane l summing the products q_i k_i (i = l
//                  mod 16) in order, then fold_sum's 4-level tree;
//   add_products:  acc_i <- acc_i + p v_i for i < d: elementwise, so the
//                  same bits as the scalar loop (nothing is contracted).
#pragma once

#include <cstddef>

#include "simd_softmax.hpp"

namespace softcheck::kernels {

struct LaneLoops {
  void (*dot)(const float* q, const float* k, std::size_t d, float* out) = nullptr;
  void (*add_products)(float* acc, float p, const float* v, std::size_t d) = nullptr;
  bool active() const { return dot != nullptr; }
};

// The loops compiled for `isa`; std::invalid_argument when this CPU lacks it.
LaneLoops lane_loops(SimdIsa isa);

}  // namespace softcheck::kernels
