// PyTorch (libtorch, the C++ API of Debian's 1.13) as a peer, on the CPU, one
// thread: the reference most kernel authors compare with today
// (docs/peers.md, docs/gradients.md).
//
//   softmax, log_softmax      at::softmax / at::log_softmax over dim 1
//   lse                      at::logsumexp over dim 1
//   entropy                  torch.distributions.Categorical's entropy():
//                            -(clamp_min(l, lowest) * softmax(l)).sum(1),
//                            l = z - logsumexp(z) (the logits it normalises)
//   cross_entropy            at::cross_entropy_loss (reduction none,
//                            ignore_index -100, label_smoothing 0), and its
//                            gradient by autograd (backward of the loss with
//                            ones); torch_ls0p1_<format>: cross_entropy alone
//                            with label_smoothing 0.1
//   attention                the math composition: scores K q / (T sqrt d) + x,
//                            keys outside the window or with bias -inf masked
//                            to -inf, softmax, P V (at::bmm); lse =
//                            logsumexp of the scores
//   softmax_backward         y = at::softmax, dx = at::_softmax_backward_data(g, y)
//   log_softmax_backward     y = at::log_softmax, dx = at::_log_softmax_backward_data(g, y)
//
// in f32, f64 and bf16. The calls live in peer_torch_module.cpp, a module
// loaded with dlopen on a torch_* kernel's first call (libtorch costs about a
// second to load: no process pays it unless it runs PyTorch). A call that
// PyTorch refuses fails its kernel (KernelFailure) with PyTorch's message.
// The temperature: x.div(T) in the tensor's dtype (PyTorch rounds T to the
// compute type, as softcheck's kernels do).
//
// Declared contracts: none, with the reason: PyTorch's tests compare with
// assert_close (rtol, atol) = f32 (1.3e-6, 1e-5), bf16 (1.6e-2, 1e-5), f64
// (1e-7, 1e-7) and gradcheck (finite differences in double; REFERENCE.md,
// "How the peers test softmax"): an absolute part with no componentwise form.
// Masked rows: every output NaN for an all -inf row (softmax's -inf - -inf),
// except logsumexp's -inf, the exact value, which every policy accepts
// (is_masked_row_value); declared nan.
#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "kernel_util.hpp"
#include "peer_util.hpp"
#include "softcheck/kernel_failure.hpp"

namespace softcheck::peers {

namespace {

constexpr Format torch_formats[] = {Format::f32, Format::f64, Format::bf16};
constexpr Op torch_ops[] = {Op::softmax, Op::log_softmax, Op::lse, Op::entropy, Op::cross_entropy,
                            Op::softmax_backward, Op::log_softmax_backward, Op::attention};

std::string torch_promise(Format f) {
  const char* tol = f == Format::f32 ? "rtol 1.3e-6, atol 1e-5" : f == Format::bf16 ? "rtol 1.6e-2, atol 1e-5" : "rtol 1e-7, atol 1e-7";
  return std::string("PyTorch's tests use assert_close (") + tol +
         ") against a float64 computation, and gradcheck (finite differences in double) for gradients: the "
         "absolute part admits any ULP error on small outputs, so the promise has no componentwise form; "
         "reported, judged by the floor and the reference rule where softcheck has a stable kernel";
}

// Label smoothing as softcheck's smoothed kernels declare it (cross_entropy.cpp).
constexpr double torch_smoothing = 0.1;

// The torch kernel of format f: every op of torch_ops (label_smoothing 0),
// or with label smoothing eps > 0 cross_entropy alone.
Kernel describe_torch(Format f, double eps) {
  Kernel k;
  k.name = "torch" + kernels::smoothing_label(eps) + "_" + std::string(name(f));
  k.algorithm = "torch";
  k.format = f;
  k.masked_policy = MaskedRowPolicy::nan;  // softmax of an all -inf row is NaN
  char eps_text[32];
  std::snprintf(eps_text, sizeof eps_text, "%g", eps);
  k.description = eps == 0 ? "PyTorch (libtorch 1.13, CPU, 1 thread): at::softmax / log_softmax, logsumexp, "
                             "Categorical's entropy, attention (softmax(K q s + x) V), cross_entropy_loss "
                             "with autograd, _softmax_backward_data / _log_softmax_backward_data; temperature "
                             "x.div(T) in the dtype"
                           : std::string("PyTorch (libtorch 1.13, CPU, 1 thread): cross_entropy_loss with label_smoothing ") +
                                 eps_text +
                                 " and autograd; temperature x.div(T) in the dtype";
  for (Op op : torch_ops) {
    if (eps != 0 && op != Op::cross_entropy) continue;
    Contract none;
    none.why = torch_promise(f);
    OpDecl d{op, none};
    for (std::size_t i = 1; i < spec(op).out.size(); ++i) d.further_contracts.push_back(none);
    d.params.label_smoothing = op == Op::cross_entropy ? eps : 0;
    k.ops.push_back(std::move(d));
  }
  return k;
}

#if SOFTCHECK_HAVE_TORCH

// libsoftcheck_torch_peer.so: the installed one relative to this executable
// (bin/../LIBDIR/softcheck/), else the build tree's (an absolute path fixed
// at build time). Empty when neither exists.
std::string module_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path() / SOFTCHECK_TORCH_MODULE_FROM_BIN;
    if (std::filesystem::exists(installed, ec)) return installed.string();
  }
  if (std::filesystem::exists(SOFTCHECK_TORCH_MODULE, ec)) return SOFTCHECK_TORCH_MODULE;
  return "";
}

using TorchCall = int (*)(int, double, const OpCall*, char*, std::size_t);

// The module's entry point, loaded on the first call (thread-safe).
TorchCall torch_call(const std::string& path) {
  static std::once_flag once;
  static TorchCall call = nullptr;
  static std::string why;
  std::call_once(once, [&] {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      why = dlerror();
      return;
    }
    const auto abi = reinterpret_cast<const char* (*)()>(dlsym(handle, "softcheck_torch_abi"));
    if (abi == nullptr || abi() != torch_module_abi()) {
      why = path + " was built for another softcheck (its op table or call layout differs)";
      return;
    }
    call = reinterpret_cast<TorchCall>(dlsym(handle, "softcheck_torch_call"));
    if (call == nullptr) why = path + " has no softcheck_torch_call";
  });
  if (call == nullptr) throw KernelFailure("cannot load the PyTorch peer module: " + why);
  return call;
}

#endif

}  // namespace

std::vector<Kernel> torch_kernels() {
  std::vector<Kernel> out;
#if SOFTCHECK_HAVE_TORCH
  const std::string path = module_path();
#endif
  for (double eps : {0.0, torch_smoothing}) {
    for (Format f : torch_formats) {
      Kernel k = describe_torch(f, eps);
#if SOFTCHECK_HAVE_TORCH
      if (path.empty()) {
        mark_unavailable(k, "the PyTorch peer module libsoftcheck_torch_peer.so is neither in the build tree nor "
                            "installed beside this softcheck");
      } else {
        k.compute = [f, eps, path](const OpCall& c) {
          char error[512] = "";
          if (torch_call(path)(static_cast<int>(f), eps, &c, error, sizeof error) != 0)
            throw KernelFailure(std::string("torch: ") + error);
        };
      }
#else
      mark_unavailable(k, "softcheck was built without libtorch (install libtorch-dev and reconfigure)");
#endif
      out.push_back(std::move(k));
    }
  }
  return out;
}

}  // namespace softcheck::peers
