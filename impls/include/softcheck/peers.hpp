// Peer kernels: other libraries' softmax, run through the same harness
// (adapters in impls/src/peer_*.cpp). Each adapter is built when its library
// is found at configure time; otherwise its kernels are still listed, as
// unavailable with the reason, so that reports and baselines keep their names.
//
//   onednn_f32, onednn_bf16, onednn_f16   oneDNN softmax_v2 (accurate and log)
//   xnnpack_f32, xnnpack_f16              XNNPACK softmax_nc
//   torch_f32, torch_f64, torch_bf16      PyTorch (libtorch, CPU): softmax, log-softmax,
//                                         cross-entropy with autograd, softmax / log-softmax backward
#pragma once

#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck {

// In registration order: oneDNN, XNNPACK, PyTorch. Probed once, on first use.
const std::vector<Kernel>& peer_kernels();

}  // namespace softcheck
