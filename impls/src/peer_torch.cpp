// PyTorch (libtorch, the C++ API of Debian's 1.13) as a peer, on the CPU, one
// thread: the reference most kernel authors compare with today
// (docs/peers.md, docs/gradients.md).
//
//   softmax, log_softmax      at::softmax / at::log_softmax over dim 1
//   cross_entropy            at::cross_entropy_loss (reduction none,
//                            ignore_index -100), and its gradient by autograd
//                            (backward of the loss with ones)
//   softmax_backward         y = at::softmax, dx = at::_softmax_backward_data(g, y)
//   log_softmax_backward     y = at::log_softmax, dx = at::_log_softmax_backward_data(g, y)
//
// in f32, f64 and bf16 (what each op supports is probed once: an op that
// throws on a 2 x 3 probe is left out, with the reason in the description).
// The temperature: x.div(T) in the tensor's dtype (PyTorch rounds T to the
// compute type, as softcheck's kernels do).
//
// Declared contracts: none, with the reason: PyTorch's tests compare with
// assert_close (rtol, atol) = f32 (1.3e-6, 1e-5), bf16 (1.6e-2, 1e-5), f64
// (1e-7, 1e-7) and gradcheck (finite differences in double; REFERENCE.md,
// "How the peers test softmax"): an absolute part with no componentwise form.
// Masked rows: every output NaN for an all -inf row (softmax's -inf - -inf);
// declared nan.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>
#include <mutex>
#include <string>

#include "peer_util.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/storage.hpp"

#if SOFTCHECK_HAVE_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#endif

namespace softcheck::peers {

namespace {

constexpr Format torch_formats[] = {Format::f32, Format::f64, Format::bf16};
constexpr Op torch_ops[] = {Op::softmax, Op::log_softmax, Op::cross_entropy, Op::softmax_backward,
                            Op::log_softmax_backward};

std::string torch_promise(Format f) {
  const char* tol = f == Format::f32 ? "rtol 1.3e-6, atol 1e-5" : f == Format::bf16 ? "rtol 1.6e-2, atol 1e-5" : "rtol 1e-7, atol 1e-7";
  return std::string("PyTorch's tests use assert_close (") + tol +
         ") against a float64 computation, and gradcheck (finite differences in double) for gradients: the "
         "absolute part admits any ULP error on small outputs, so the promise has no componentwise form; "
         "reported, judged by the floor and the reference rule where softcheck has a stable kernel";
}

Kernel describe_torch(Format f) {
  Kernel k;
  k.name = "torch_" + std::string(name(f));
  k.algorithm = "torch";
  k.format = f;
  k.masked_policy = MaskedRowPolicy::nan;  // softmax of an all -inf row is NaN
  k.description = "PyTorch (libtorch 1.13, CPU, 1 thread): at::softmax / log_softmax, cross_entropy_loss with "
                  "autograd, _softmax_backward_data / _log_softmax_backward_data; temperature x.div(T) in the dtype";
  return k;
}

#if SOFTCHECK_HAVE_TORCH

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
  if (c.scalar_type() != dtype_of(f)) throw KernelFailure("torch returned another dtype");
  std::memcpy(out, c.data_ptr(), static_cast<std::size_t>(c.numel()) * element_size(f));
}

void one_thread() {
  static std::once_flag once;
  std::call_once(once, [] { at::set_num_threads(1); });
}

void torch_compute(Format f, const OpCall& c) {
  one_thread();
  at::Tensor z = tensor_of(c.in[0], f, c.rows, c.cols);
  if (c.temperature != 1) z = z.div(c.temperature);
  switch (c.op) {
    case Op::softmax: copy_out(at::softmax(z, 1), f, c.out[0]); return;
    case Op::log_softmax: copy_out(at::log_softmax(z, 1), f, c.out[0]); return;
    case Op::cross_entropy: {
      at::Tensor logits = z.detach().requires_grad_(true);
      at::Tensor target = at::empty({c.rows}, at::TensorOptions().dtype(at::kLong));
      std::memcpy(target.data_ptr(), c.in[1], static_cast<std::size_t>(c.rows) * sizeof(std::int64_t));
      at::Tensor loss = at::cross_entropy_loss(logits, target, {}, at::Reduction::None, ignore_index, 0.0);
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

// Whether the op runs in format f (a 2 x 3 probe with a target, a masked
// entry and T != 1); the reason when it does not.
std::string probe(Format f, Op op) {
  const std::vector<double> x = {0.5, -1, 2, 1, -INFINITY, 0.25}, g = {1, 0, -1, 0.5, 0.5, 2};
  const std::vector<unsigned char> xin = pack(x, f), gin = pack(g, f);
  const std::int64_t targets[] = {2, 0};
  const void* in_x_target[] = {xin.data(), targets};
  const void* in_x_g[] = {xin.data(), gin.data()};
  std::vector<std::vector<unsigned char>> outs;
  std::vector<void*> out_ptr;
  for (const Operand& o : spec(op).out) {
    outs.emplace_back(static_cast<std::size_t>(2 * output_cols(o, 3)) * element_size(f));
    out_ptr.push_back(outs.back().data());
  }
  const bool target = op == Op::cross_entropy;
  const bool upstream = op == Op::softmax_backward || op == Op::log_softmax_backward;
  std::span<const void* const> in = target ? std::span<const void* const>(in_x_target)
                                    : upstream ? std::span<const void* const>(in_x_g)
                                               : std::span<const void* const>(in_x_g, 1);
  try {
    torch_compute(f, {op, in, out_ptr, 2, 3, 0.7});
  } catch (const std::exception& e) {
    std::string what = e.what();
    return what.substr(0, what.find('\n'));
  }
  return "";
}

#endif

}  // namespace

std::vector<Kernel> torch_kernels() {
  std::vector<Kernel> out;
  for (Format f : torch_formats) {
    Kernel k = describe_torch(f);
#if SOFTCHECK_HAVE_TORCH
    std::string missing;
    for (Op op : torch_ops) {
      const std::string why = probe(f, op);
      if (why.empty()) {
        Contract none;
        none.why = torch_promise(f);
        OpDecl d{op, none};
        for (std::size_t i = 1; i < spec(op).out.size(); ++i) d.further_contracts.push_back(none);
        k.ops.push_back(std::move(d));
      } else {
        missing += (missing.empty() ? "" : "; ") + std::string(name(op)) + ": " + why;
      }
    }
    if (!missing.empty()) k.description += "; not in " + std::string(name(f)) + " here: " + missing;
    k.compute = [f](const OpCall& c) { torch_compute(f, c); };
#else
    for (Op op : torch_ops) k.ops.push_back({op, {}});
    mark_unavailable(k, "softcheck was built without libtorch (install libtorch-dev and reconfigure)");
#endif
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace softcheck::peers
