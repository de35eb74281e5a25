// Attention kernels (impls/src/attention.cpp): one query row of
// softmax(q K^T / (T sqrt(d)) + bias) V and its lse per call row (op.hpp,
// Op::attention; REFERENCE.md "Attention rows" and "FlashAttention tiling").
#pragma once

#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// attention_naive_f32 / _f64 (three passes: scores, softmax, P.V; masked
// policy nan) and attention_flash_bc64 / _bc16 in f32 and f64
// (FlashAttention-2's online loop over tiles of 64 or 16 keys; masked policy
// zeros), each declaring its O and lse contracts.
std::vector<Kernel> make_attention_kernels();

// Deliberately broken flash kernels (Kernel::test_only), each claiming the
// contracts of attention_flash_bc64_f32: attention_flash_no_rescale_f32 (O
// is not rescaled when the running max grows) and attention_flash_p_bf16_f32
// (P rounded to bf16 before P.V while l sums the unrounded P).
std::vector<Kernel> make_attention_mutants();

}  // namespace softcheck::kernels
