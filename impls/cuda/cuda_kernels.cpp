// The CUDA kernels' registry entries: declarations (contracts, policy,
// description) are the same in every build; `available` and `run` come from
// the backend (backend.cu with CUDA, backend_absent.cpp without).
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention_twin.hpp"
#include "cuda_backend.hpp"
#include "tiled_online.hpp"

namespace softcheck::kernels {

namespace {

struct CudaSpec {
  cuda::Variant variant;
  std::string algorithm;
  Format format;
  TiledConfig config;
  ExpError exp;
  bool portable_exp;  // same exp/log as the host twin: bit-exact expected
};

TiledConfig block(online::MergeOrder merge = online::MergeOrder::tree, int splits = 1) {
  TiledConfig c;
  c.shape = cuda::block_shape;
  c.merge = merge;
  c.splits = splits;
  return c;
}

std::vector<CudaSpec> specs() {
  using cuda::Variant;
  using online::MergeOrder;
  return {
      {Variant::tiled_f32, "cuda_tiled_online", Format::f32, block(), portable_exp_error(), true},
      {Variant::tiled_seq_f32, "cuda_tiled_online_seq", Format::f32, block(MergeOrder::sequential),
       portable_exp_error(), true},
      {Variant::tiled_f16, "cuda_tiled_online", Format::f16, block(), portable_exp_error(), true},
      {Variant::split_f32, "cuda_split_online", Format::f32,
       block(MergeOrder::tree, cuda::split_blocks), portable_exp_error(), true},
      {Variant::tiled_expf_f32, "cuda_tiled_online_expf", Format::f32, block(), cuda_expf_error(),
       false},
      {Variant::tiled_fastexp_f32, "cuda_tiled_online_fastexp", Format::f32, block(),
       cuda_fast_expf_error(), false},
  };
}

std::string kernel_name(const std::string& algorithm, Format f) {
  return algorithm + "_" + std::string(name(f));
}

Kernel cuda_kernel(const CudaSpec& s, const std::string& reason) {
  Kernel k;
  k.name = kernel_name(s.algorithm, s.format);
  k.algorithm = s.algorithm;
  k.format = s.format;
  k.ops = {{Op::softmax, tiled_softmax_contract(s.config, s.exp, s.format)},
           {Op::log_softmax, tiled_log_softmax_contract()}};
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = "CUDA, one block per row: " + s.config.describe() + ", f32 statistics, " +
                  s.exp.what + "; host twin " + kernel_name(s.config.algorithm(), s.format) +
                  (s.portable_exp ? " (bit-exact)" : " (same order, different exp)");
  k.available = reason.empty();
  k.unavailable_reason = reason;
  k.compute = single_operand([variant = s.variant](Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols,
                                double temperature) {
    cuda::run(variant, op, x, y, rows, cols, temperature);
  });
  return k;
}

}  // namespace

std::vector<Kernel> cuda_kernels() {
  const std::string reason = cuda::unavailable_reason();
  std::vector<Kernel> out;
  for (const CudaSpec& s : specs()) out.push_back(cuda_kernel(s, reason));
  return out;
}

std::vector<CudaTwinPair> cuda_twin_pairs() {
  std::vector<CudaTwinPair> out;
  for (const CudaSpec& s : specs())
    out.push_back({kernel_name(s.algorithm, s.format), kernel_name(s.config.algorithm(), s.format),
                   s.portable_exp});
  return out;
}

// cuda_attention_flash_f32 (attention.cu): the contracts of its twin, whose
// bits it computes (the same steps, the same order, the same exp2 and log2).
std::vector<Kernel> cuda_attention_kernels() {
  const std::string reason = cuda::unavailable_reason();
  Kernel k;
  k.name = cuda::attention_kernel_name;
  k.algorithm = "cuda_attention_flash";
  k.format = Format::f32;
  k.ops = {OpDecl{.op = Op::attention,
                  .contract = attention_flash_twin_output_contract(),
                  .further_contracts = {attention_flash_twin_lse_contract()}}};
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = "CUDA, one query row per block of " + std::to_string(cuda::attention_block_keys) +
                  " threads: FlashAttention-2's online loop over tiles of " +
                  std::to_string(cuda::attention_block_keys) +
                  " keys (K staged in shared memory, P.V per component), portable exp2 and log2, head "
                  "dimension up to " + std::to_string(cuda::attention_max_head_dim) +
                  "; host twin attention_flash_twin_f32 (bit-exact)";
  k.available = reason.empty();
  k.unavailable_reason = reason;
  k.compute = [name = k.name](const OpCall& c) {
    if (c.op != Op::attention) throw std::invalid_argument(name + " does not provide " + std::string(softcheck::name(c.op)));
    if (c.head_dim < 1) throw std::invalid_argument(name + ": attention needs a head dimension >= 1");
    const std::vector<float> bias =
        bias_with_windows(static_cast<const float*>(c.in[0]), static_cast<const KeyWindow*>(c.in[4]), c.rows, c.cols);
    cuda::run_attention(bias.data(), static_cast<const float*>(c.in[1]),
                        static_cast<const float*>(c.in[2]), static_cast<const float*>(c.in[3]),
                        static_cast<float*>(c.out[0]), static_cast<float*>(c.out[1]), c.rows, c.cols, c.head_dim,
                        c.temperature);
  };
  return {std::move(k)};
}

std::vector<CudaTwinPair> cuda_attention_twin_pairs() {
  return {{cuda::attention_kernel_name, "attention_flash_twin_f32", true}};
}

}  // namespace softcheck::kernels
