// The torch_* peers' calls into libtorch (PyTorch 1.13's C++ API), built as a
// module of its own (libsoftcheck_torch_peer.so) that peer_torch.cpp loads
// with dlopen on the first call of a torch_* kernel: libtorch takes about a
// second to load, which every process linking it would pay at start-up
// (every test binary, every `softcheck` call). See peer_torch.cpp for what
// each op calls.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdio>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <span>
#include <string>

#include "peer_util.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::peers {
namespace {

at::ScalarType dtype_of(Format f) {
  switch (f) {
    case Format::f32: return at::kFloat;
    case Format::f64: return at::kDouble;
    case Format::bf16: return at::kBFloat16;
    case Format::f16: return at::kHalf;
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  return at::kFloat;
}

// The caller's rows x cols values of format f as a tensor (16-bit formats:
// the bit patterns, which are PyTorch's too), without a copy: a PyTorch user
// holds its tensors already, and copying them per call (with the page
// faults of a fresh allocation) was most of the peer's time on large
// operands (docs/measurements.md). Only read: every op below makes new
// tensors.
at::Tensor tensor_of(const void* data, Format f, std::int64_t rows, std::int64_t cols) {
  return at::from_blob(const_cast<void*>(data), {rows, cols}, at::TensorOptions().dtype(dtype_of(f)));
}

void copy_out(const at::Tensor& t, Format f, void* out) {
  const at::Tensor c = t.contiguous();
  if (c.scalar_type() != dtype_of(f)) throw std::runtime_error("torch returned another dtype");
  std::memcpy(out, c.data_ptr(), static_cast<std::size_t>(c.numel()) * element_size(f));
}

void one_thread() {
  static std::once_flag once;
  std::call_once(once, [] { at::set_num_threads(1); });
}

void torch_compute(Format f, double label_smoothing, const OpCall& c) {
  one_thread();
  at::Tensor z = tensor_of(c.in[0], f, c.rows, c.cols);
  if (c.temperature != 1 && c.op != Op::attention) z = z.div(c.temperature);
  switch (c.op) {
    case Op::softmax: copy_out(at::softmax(z, 1), f, c.out[0]); return;
    case Op::log_softmax: copy_out(at::log_softmax(z, 1), f, c.out[0]); return;
    case Op::lse: copy_out(at::logsumexp(z, {1}), f, c.out[0]); return;
    case Op::entropy: {
      // torch.distributions.Categorical(logits=z).entropy(): the logits
      // normalised by logsumexp, clamped at the dtype's lowest finite value
      // (so that a masked entry's -inf * 0 gives 0, not NaN), times the
      // probabilities, summed and negated.
      const at::Tensor logits = z - at::logsumexp(z, {1}, /*keepdim=*/true);
      const at::Tensor p = at::softmax(logits, 1);
      const double lowest = f == Format::f64 ? std::numeric_limits<double>::lowest()
                                             : f == Format::bf16 ? -0x1.fep127 : std::numeric_limits<float>::lowest();
      copy_out(-(at::clamp_min(logits, lowest) * p).sum(1), f, c.out[0]);
      return;
    }
    case Op::cross_entropy: {
      at::Tensor logits = z.detach().requires_grad_(true);
      at::Tensor target = at::empty({c.rows}, at::TensorOptions().dtype(at::kLong));
      std::memcpy(target.data_ptr(), c.in[1], static_cast<std::size_t>(c.rows) * sizeof(std::int64_t));
      at::Tensor loss = at::cross_entropy_loss(logits, target, {}, at::Reduction::None, ignore_index,
                                                 label_smoothing);
      torch::autograd::backward({loss}, {at::ones_like(loss)});
      copy_out(loss.detach(), f, c.out[0]);
      copy_out(logits.grad(), f, c.out[1]);
      return;
    }
    case Op::softmax_backward:
    case Op::log_softmax_backward: {
      const at::Tensor g = tensor_of(c.in[1], f, c.rows, c.cols);
      const bool softmax = c.op == Op::softmax_backward;
      const at::Tensor y = softmax ? at::softmax(z, 1) : at::log_softmax(z, 1);
      const at::Tensor dx = softmax ? at::_softmax_backward_data(g, y, 1, dtype_of(f))
                                    : at::_log_softmax_backward_data(g, y, 1, dtype_of(f));
      copy_out(y, f, c.out[0]);
      copy_out(dx, f, c.out[1]);
      return;
    }
    case Op::attention: {
      // Attention as PyTorch's math composition (what
      // scaled_dot_product_attention's reference path computes): scores
      // K q s + x with s = 1 / (T sqrt d) in the dtype, the keys outside the
      // query's window masked to -inf, softmax, P V; lse = logsumexp of the
      // scores. z above is the bias x (divided by T: the scale below would
      // divide it again, so the bias is read undivided here).
      const std::int64_t n = c.cols, d = c.head_dim;
      const at::Tensor x = tensor_of(c.in[0], f, c.rows, n);
      const at::Tensor q = tensor_of(c.in[1], f, c.rows, d).unsqueeze(2);
      const at::Tensor K = tensor_of(c.in[2], f, c.rows * n, d).view({c.rows, n, d});
      const at::Tensor V = tensor_of(c.in[3], f, c.rows * n, d).view({c.rows, n, d});
      const auto* window = static_cast<const KeyWindow*>(c.in[4]);
      at::Tensor outside = at::zeros({c.rows, n}, at::TensorOptions().dtype(at::kBool));
      auto flags = outside.accessor<bool, 2>();
      for (std::int64_t r = 0; r < c.rows; ++r)
        for (std::int64_t j = 0; j < n; ++j) flags[r][j] = j < window[r].first(n) || j >= window[r].end(n);
      // A -inf bias masks its key as attn_mask does: the score is -inf
      // whatever q . K_j is (K_j and V_j are still read, as PyTorch's math
      // path reads them).
      outside = outside.logical_or(at::isneginf(x));
      const double scale = 1.0 / (c.temperature * std::sqrt(static_cast<double>(d)));
      const at::Tensor scores = (at::bmm(K, q).squeeze(2) * scale + x).masked_fill(outside, -INFINITY);
      copy_out(at::bmm(at::softmax(scores, 1).unsqueeze(1), V).squeeze(1), f, c.out[0]);
      copy_out(at::logsumexp(scores, {1}), f, c.out[1]);
      return;
    }
    default: break;
  }
  throw std::invalid_argument("torch peer: no " + std::string(name(c.op)));
}

}  // namespace
}  // namespace softcheck::peers

// The layout this module was built with (peer_util.hpp torch_module_abi).
extern "C" __attribute__((visibility("default"))) const char* softcheck_torch_abi() {
  static const std::string abi = softcheck::peers::torch_module_abi();
  return abi.c_str();
}

// The module's one entry point (peer_torch.cpp): the call `c` of a torch_*
// kernel of format `format` (softcheck::Format's value) declaring label
// smoothing `label_smoothing` (cross_entropy; 0 otherwise). 0 on success; else
// 1 and the error's first line in `error` (NUL-terminated, truncated to
// error_size).
extern "C" __attribute__((visibility("default"))) int softcheck_torch_call(int format, double label_smoothing,
                                                                           const softcheck::OpCall* c, char* error,
                                                                           std::size_t error_size) {
  try {
    softcheck::peers::torch_compute(static_cast<softcheck::Format>(format), label_smoothing, *c);
    return 0;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    std::snprintf(error, error_size, "%s", what.substr(0, what.find('\n')).c_str());
    return 1;
  }
}
