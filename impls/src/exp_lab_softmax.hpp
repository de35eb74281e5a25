// Softmax kernels built on the exp lab's primitives (exp_lab_softmax.cpp,
// softcheck/exp_lab.hpp, docs/exp-lab.md "Softmax kernels on the primitives"):
// the shifted softmax of shifted.cpp with FlashAttention-2's folded exp2,
// the Cody-Waite polynomial exp2 of degree 2-5, or the model of CUDA's
// __expf in place of glibc's expf. f32 only, like the primitives.
#pragma once

#include <span>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// In registration order: shifted_expfold_f32, shifted_exp2poly2_f32 ..
// shifted_exp2poly5_f32, shifted_expf_cuda_model_f32.
std::vector<Kernel> exp_lab_softmax_kernels();

// True for the kernels above (the generic kernel tests' known-value
// tolerances assume an exp within a few u; these are judged by their own
// contracts in exp_lab_softmax_test.cpp).
bool is_exp_lab_softmax(const Kernel& k);

// The shifted softmax of one row with the degree-`degree` polynomial
// exponential (zy holds z in, y out): shifted_exp2poly<degree>_f32's core,
// for the test that composes a kernel with the wrong contract.
void shifted_exp2poly_softmax_row(int degree, std::span<float> zy);

}  // namespace softcheck::kernels
