// Tiled online softmax: the host twin of the CUDA kernels (impls/cuda/), its
// configurations, contracts and registration (docs/cuda.md).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/online_state.hpp"

namespace softcheck::kernels {

// How a row is cut up and merged: one block of shape.threads threads walks
// the row (or, with splits > 1, each of `splits` segments of it, one block
// per segment, merged afterwards in segment order as FlashAttention's
// split-KV combine does).
struct TiledConfig {
  online::TileShape shape{256, 4};
  online::MergeOrder merge = online::MergeOrder::tree;
  int splits = 1;

  // "tiled_online_t1024_tree", "tiled_online_t1024_seq", "split_online_t1024_s8".
  std::string algorithm() const;
  std::string describe() const;  // one line, for descriptions
};

// The host twin on one row: z = x / T in, softmax or log-softmax out (in
// place), with the kernel's tiles, per-thread states, merge order and
// operation order, and the portable exp/log of portable_math.hpp.
void tiled_online_row(const TiledConfig& c, Op op, std::span<float> zy);

// The relative error of one exp evaluation, in units of u of f32:
// e0 + e1 |x|. An error of k ulp is at most 2k u (ulp(v) <= 2u|v|).
struct ExpError {
  double e0 = 1;  // portable::exp: 0.5 ulp + 2^-20 ulp -> u (the spare u of the
                  // derivation absorbs the 2^-20)
  double e1 = 0;
  std::string what = "portable exp (0.5 ulp + 2^-20)";
};
ExpError portable_exp_error();
ExpError cuda_expf_error();       // REFERENCE.md: CUDA expf <= 2 ulp
ExpError cuda_fast_expf_error();  // REFERENCE.md: __expf <= 2 + floor(|1.173 x|) ulp

// Softmax contract of a tiled configuration with a given exp, in f32 or in
// f16 (f16 in/out with f32 statistics: one more rounding, f32 terms scaled by
// u_f32 / u_f16 = 2^-13). Derivation in tiled_online.cpp and docs/cuda.md.
Contract tiled_softmax_contract(const TiledConfig& c, const ExpError& e, Format f);
// Log-softmax has none: (z - m) - log d loses the dominant entry's value.
Contract tiled_log_softmax_contract();

// A row function on f32 values (z in, result out, in place).
using F32Row = std::function<void(Op, std::span<float>)>;

// A kernel storing `format` (f32, or f16 bit patterns) that computes in f32:
// each row is loaded, z_i = x_i / float(T) (one division in f32), run through
// `row`, and rounded to the format (round to nearest even) on the way out.
Kernel f32_statistics_kernel(std::string algorithm, Format format, std::string description,
                             std::vector<OpDecl> ops, F32Row row);

// The registered twin configurations (f32, plus f16 for the configuration of
// cuda_tiled_online_f16), in registry order.
std::vector<Kernel> tiled_online_kernels();

// The CUDA kernels (impls/cuda/cuda_kernels.cpp): always listed; available
// only when built with CUDA and a device is present.
std::vector<Kernel> cuda_kernels();

// Each CUDA kernel and the host twin that runs its merge order; bit_exact when
// both use the portable exp/log (scripts/gpu-check.sh compares them).
struct CudaTwinPair {
  std::string cuda;
  std::string twin;
  bool bit_exact;
};
std::vector<CudaTwinPair> cuda_twin_pairs();

}  // namespace softcheck::kernels
