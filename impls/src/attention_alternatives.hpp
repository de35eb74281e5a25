// Kernels of the two attention alternatives (impls/src/attention_alternatives.cpp;
// op.hpp, Op::relu_attention and Op::linear_attention; docs/attention.md).
#pragma once

#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// relu_attention_naive_f32 / _f64 (scores, relu, their sum with V, / n;
// no masked-row question: a fully masked query's O is exactly 0),
// linear_attention_naive_f32 / _f64 (the quadratic form: weights, their sum,
// then the weighted sum of V; masked policy nan) and linear_attention_rnn_f32
// / _f64 (the linear-time form of Katharopoulos et al.: S = sum_j phi(K_j)
// V_j^T and z = sum_j phi(K_j), then phi(q')^T S / phi(q')^T z; masked
// policy zeros). Each declares its O contract, derived beside its code.
std::vector<Kernel> make_attention_alternative_kernels();

// Deliberately broken kernels (Kernel::test_only), each claiming the
// contract of the naive kernel of its op: relu_attention_no_mean_f32 (the
// sum of relu(z_j) V_j without the 1/n) and linear_attention_mean_f32 (the
// weighted sum of V divided by n instead of the weights' sum).
std::vector<Kernel> make_attention_alternative_mutants();

}  // namespace softcheck::kernels
