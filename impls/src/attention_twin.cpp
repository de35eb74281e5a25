// attention_flash_twin_f32: the host twin of cuda_attention_flash_f32
// (impls/cuda/attention.cu). Per call row, one query q against its n keys K_j
// and values V_j with the bias row x (op.hpp, Op::attention), exactly what
// one CUDA block computes (docs/attention.md, "The CUDA kernel and its host
// twin"):
//
//   for each tile of Bc = 64 consecutive keys (FlashAttention-2, Algorithm 1):
//     scores     z'_j = fma(q . K_j, s log2 e, x_j log2 e), -inf for a masked key
//     skip       a tile whose max is -inf: (m, l) and O untouched
//     state      m' = max(m, max_tile z'), P_v = exp2(z'_v - m'),
//                l' = l exp2(m - m') + (((0 + P_0) + P_1) + ...)
//     output     O_i <- exp2(m - m') O_i + (((0 + P_0 V_0i) + P_1 V_1i) + ...)
//   finalize     O_i / l, lse = (m + log2 l) ln 2; l = 0: O = 0, lse = -inf (policy zeros)
//
// Every arithmetic step is a function of softcheck/attention_steps.hpp (which
// builds on online_state.hpp), the same ones the device code calls in the
// same order, with portable_math.hpp's exp2 and log2: the twin's O and lse
// are the kernel's bit for bit (cuda_twin_compare checks it on a GPU,
// scripts/gpu-check.sh). The arithmetic is attention.cpp's flash kernel
// (attention_flash_bc64_f32) with exp2f / log2f replaced by the portable
// functions; that file is the CPU reference and is not shared with the
// device. The contracts are derived below, next to the code that declares
// them.
#include "attention_twin.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cuda_backend.hpp"
#include "kernel_util.hpp"
#include "softcheck/attention_steps.hpp"

namespace softcheck::kernels {

// The steps' constants are the ones attention.cpp's flash kernel uses.
static_assert(flash::log2e == std::numbers::log2e_v<float>);
static_assert(flash::ln2 == std::numbers::ln2_v<float>);

namespace {

constexpr std::int64_t block_keys = cuda::attention_block_keys;

// One tile's scores, probabilities and masks (what the CUDA block keeps in
// shared memory).
struct Tile {
  float z2[block_keys];
  float P[block_keys];
  bool hidden[block_keys];
};

}  // namespace

void attention_flash_twin_row(const float* x, const float* q, const float* K, const float* V, std::int64_t n,
                              std::int64_t d, flash::Scales scales, float* O, float& lse) {
  Tile w;
  flash::State state = flash::empty_state();
  std::fill(O, O + d, 0.0f);  // the device's accumulator starts at 0 as well
  for (std::int64_t first = 0; first < n; first += block_keys) {
    const int count = static_cast<int>(std::min(block_keys, n - first));
    // Thread v of the block: key first + v's mask and score (its K unread when masked).
    for (int v = 0; v < count; ++v) {
      const std::int64_t j = first + v;
      w.hidden[v] = flash::masked(x[j]);
      w.z2[v] = w.hidden[v] ? online::minus_inf : flash::score_log2(flash::dot(q, K + j * d, d), scales.s2, x[j]);
    }
    const float a = online::tile_max(w.z2, count);
    if (a == online::minus_inf) continue;  // fully masked tile: (m, l) and O untouched, its V unread
    const float m = flash::new_max(state.m, a);
    for (int v = 0; v < count; ++v) w.P[v] = flash::probability(w.z2[v], m);
    const float alpha = flash::rescale_factor(state.m, m);
    state = flash::absorb(state, m, flash::tile_sum(w.P, count));
    // Thread i mod Bc: O_i, the tile's keys in order, masked ones skipped.
    for (std::int64_t i = 0; i < d; ++i) {
      float pv = 0.0f;
      for (int v = 0; v < count; ++v)
        if (!w.hidden[v]) pv = flash::pv_step(pv, w.P[v], V[(first + v) * d + i]);
      O[i] = flash::add_tile(flash::rescale_output(O[i], alpha), pv);
    }
  }
  const bool none = flash::no_visible_key(state);
  for (std::int64_t i = 0; i < d; ++i) O[i] = none ? 0.0f : flash::normalised(O[i], state);
  lse = flash::lse(state);
}

// ------------------------------------------------------ contracts (DERIVED)
//
// Terms and structure as attention.cpp's "contracts" block (read it first):
// first order in u = 2^-24, K in units of u, declared bound K / (1 - K u);
// n, R, M, h = d and D those of attention_row_shape (core/src/contract.cpp);
// O in the scaled metric |O^_i - O_i| / (u s_i), lse in the absolute one
// |lse^ - lse| / u; facts (a) (score errors: 2e on O, e on lse), (b) (a
// factor common to every exponent: R on O, M on lse) and (c) (a relative
// error both O's numerator and l carry: twice on O) as stated there.
//
// The twin's arithmetic is attention.cpp's flash kernel at Bc = 64 in f32,
// operation for operation (attention_steps.hpp lists the steps; the CUDA
// kernel stages K in shared memory 32 columns at a time, the order of q . K's
// additions stays i = 0, 1, ..., d - 1), except for its exponential and
// logarithm: portable::exp2 and portable::log2 are each within 0.5 ulp +
// 2^-20 ulp of exact (portable_math.hpp; measured by impls.PortableExp2.* and
// impls.PortableLog2.*), and k ulp is at most 2k u relative, so
//   e2 = e_log2 = 2 (0.5 + 2^-20) = 1 + 2^-19
// in place of glibc's exp2f 1.004 (0.502 ulp) and log2f 1.504 (0.752 ulp).
// The contracts are flash's derivation (attention.cpp, "flash") with these
// figures: flash_attention_output_contract / flash_attention_lse_contract.
// Outside these bounds, as for attention.cpp's kernels: a subnormal P_j or
// alpha carries an absolute error up to denorm_min/2 (the metric's floor
// rho), keys below the contributing cut-off are left out of R, M and D.

// portable::exp2 and portable::log2 in units of u.
ExpLogErrors portable_errors() {
  return {1 + 0x1p-19, 1 + 0x1p-19, "portable exp2 and log2, 0.5 + 2^-20 ulp each: e2 = e_log2 = 1 + 2^-19"};
}

Contract attention_flash_twin_output_contract() {
  return flash_attention_output_contract(static_cast<std::size_t>(block_keys), portable_errors());
}

Contract attention_flash_twin_lse_contract() {
  return flash_attention_lse_contract(static_cast<std::size_t>(block_keys), portable_errors());
}

std::vector<float> bias_with_windows(const float* x, const KeyWindow* window, std::int64_t rows, std::int64_t n) {
  std::vector<float> out(x, x + rows * n);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t first = window[r].first(n), end = window[r].end(n);
    for (std::int64_t j = 0; j < n; ++j)
      if (j < first || j >= end) out[static_cast<std::size_t>(r * n + j)] = online::minus_inf;
  }
  return out;
}

namespace {

ComputeFn twin_compute(std::string kernel_name) {
  return [kernel_name](const OpCall& c) {
    if (c.op != Op::attention)
      throw std::invalid_argument(kernel_name + " does not provide " + std::string(name(c.op)));
    if (c.head_dim < 1) throw std::invalid_argument(kernel_name + ": attention needs a head dimension >= 1");
    const std::int64_t n = c.cols, d = c.head_dim;
    const flash::Scales scales = flash::scales(static_cast<float>(c.temperature), d);
    const std::vector<float> bias =
        bias_with_windows(static_cast<const float*>(c.in[0]), static_cast<const KeyWindow*>(c.in[4]), c.rows, n);
    const float* x = bias.data();
    const auto* q = static_cast<const float*>(c.in[1]);
    const auto* K = static_cast<const float*>(c.in[2]);
    const auto* V = static_cast<const float*>(c.in[3]);
    auto* O = static_cast<float*>(c.out[0]);
    auto* lse = static_cast<float*>(c.out[1]);
    for (std::int64_t r = 0; r < c.rows; ++r)
      attention_flash_twin_row(x + r * n, q + r * d, K + r * n * d, V + r * n * d, n, d, scales, O + r * d, lse[r]);
  };
}

}  // namespace

std::vector<Kernel> attention_twin_kernels() {
  Kernel k;
  k.algorithm = "attention_flash_twin";
  k.name = k.algorithm + "_f32";
  k.format = Format::f32;
  k.ops = {OpDecl{.op = Op::attention,
                  .contract = attention_flash_twin_output_contract(),
                  .further_contracts = {attention_flash_twin_lse_contract()}}};
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description =
      "host twin of cuda_attention_flash_f32 (bit-exact): FlashAttention-2's online loop over tiles of " +
      std::to_string(block_keys) +
      " keys as one CUDA block runs it, the steps of attention_steps.hpp with the portable exp2 and log2; "
      "attention_flash_bc64_f32's arithmetic otherwise";
  k.compute = twin_compute(k.name);
  return {std::move(k)};
}

}  // namespace softcheck::kernels
