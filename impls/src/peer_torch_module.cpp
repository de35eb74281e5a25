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
  }
  return at::kFloat;
}

// A rows x cols tensor of format f holding a copy of `data` (16-bit formats:
// the bit patterns, which are PyTorch's too).
at::Tensor tensor_of(const void* data, Format f, std::int64_t rows, std::int64_t cols) {
  at::Tensor t = at::empty({rows, cols}, at::TensorOptions().dtype(dtype_of(f)));
  std::memcpy(t.data_ptr(), data, static_cast<std::size_t>(rows * cols) * element_size(f));
  return t;
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
  if (c.temperature != 1) z = z.div(c.temperature);
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
