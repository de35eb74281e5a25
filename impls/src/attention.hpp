// Attention kernels (impls/src/attention.cpp): one query row of
// softmax(q K^T / (T sqrt(d)) + bias) V and its lse per call row (op.hpp,
// Op::attention; REFERENCE.md "Attention rows" and "FlashAttention tiling").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

// attention_naive_f32 / _f64 (three passes: scores, softmax, P.V; masked
// policy nan), attention_flash_bc64 / _bc16 in f32 and f64
// (FlashAttention-2's online loop over tiles of 64 or 16 keys),
// attention_split4_bc64_f32 / _f64 (flash-decoding: four splits of keys
// through the flash loop, then the split-KV combine of their (O_s, lse_s)),
// attention_flash_pbf16_f32, attention_flash_pf16_f32 and
// attention_flash_pbf16_sumrounded_f32 (P rounded before P.V, l summing the
// unrounded or the rounded P), attention_flash_pe4m3_f32,
// attention_flash_pe4m3_sumrounded_f32 and their _x256 twins (P in FP8
// E4M3, with FlashAttention-4's 2^8 pre-scale), bf16_ / f16_attention_flash_bc64_f32acc
// (16-bit storage around the f32 flash loop), attention_flash_bc64_softcap30
// f32 / f64 (scores capped at 30 tanh(y / 30)), and with a sink logit of 2
// (OpParams::sink) attention_flash_bc64_sink2_f32 / _f64 and
// attention_split4_bc64_sink2_f32; the flash-based ones masked policy zeros. Each declares its O and lse contracts, except
// the O of attention_flash_pf16_f32 and of the E4M3 kernels: no finite
// bound exists (their Contract::why).
std::vector<Kernel> make_attention_kernels();

// The flash loop at any tile size Bc >= 1 (splits = 0), or flash-decoding
// with `splits` >= 1 contiguous splits of tiles of Bc keys, in f32 or f64,
// with the contracts derived for those Bc and S (attention.cpp): the tile
// size and the split count are parameters of the algorithm (FlashAttention-2
// tunes them per head dimension and device), and every choice must keep its
// contract. The registry lists Bc = 16, 64 and S = 4; the tests sweep others.
Kernel make_flash_attention_kernel(Format f, std::size_t block_keys, std::size_t splits = 0);

// The relative errors, in units of u (k ulp <= 2k u), of the exponential
// and the logarithm a flash kernel calls, and what they are.
struct ExpLogErrors {
  double exp = 0, log = 0;
  std::string what;
};

// The flash loop's O and lse contracts at tile size Bc (derived in
// attention.cpp) for an exp2 and a log2 of errors `e`: the host twin of the
// CUDA kernel runs the same loop with the portable exp2 / log2.
Contract flash_attention_output_contract(std::size_t block_keys, const ExpLogErrors& e);
Contract flash_attention_lse_contract(std::size_t block_keys, const ExpLogErrors& e);

// Deliberately broken flash kernels (Kernel::test_only), each claiming the
// contracts of the kernel it breaks: attention_flash_no_rescale_f32 (O is
// not rescaled when the running max grows) and attention_flash_p_bf16_f32 (P
// rounded to bf16 before P.V while l sums the unrounded P), both as
// attention_flash_bc64_f32; attention_split4_bc64_sink2_every_split_f32 (the
// sink logit added to every split's l instead of once in the combine) as
// attention_split4_bc64_sink2_f32.
std::vector<Kernel> make_attention_mutants();

}  // namespace softcheck::kernels
