// Private helpers shared by the peer adapters (peer_onednn.cpp,
// peer_xnnpack.cpp, peer_torch.cpp): the temperature the libraries do not have, and the
// shape of a peer kernel whether or not its library was built in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::peers {

// The peers' kernels (registry.cpp appends them, in this order, to peer_kernels()).
std::vector<Kernel> onednn_kernels();
std::vector<Kernel> xnnpack_kernels();
std::vector<Kernel> torch_kernels();

// The libraries have no temperature: the adapters pass z = x / T computed
// like softcheck's own kernels (T rounded to f32, one f32 division; for f16
// and bf16 the f32 quotient is rounded once to the format) in a temporary
// buffer of `count` elements of `f`, followed by `pad_bytes` zero bytes (some
// libraries read past the end). With T = 1 the values are copied unchanged.
std::vector<unsigned char> scaled_copy(Format f, const void* x, std::size_t count, double temperature,
                                       std::size_t pad_bytes = 0);

// What the PyTorch peer module (peer_torch_module.cpp) and the softcheck that
// loads it must agree on: the op table's order and OpCall's layout. An
// installed softcheck finding a rebuilt module of another version refuses it.
inline std::string torch_module_abi() {
  return op_names(",") + ";" + std::to_string(sizeof(OpCall)) + ";" + std::to_string(sizeof(Format)) +
         ";call(format,label_smoothing,call,error,size)";
}

// Sentence for the kernels' descriptions.
inline constexpr const char* temperature_note =
    "temperature: the library has none, the adapter divides x by T in f32 into a temporary buffer";

// A kernel that cannot run here: listed and reported with the reason; its
// run throws std::logic_error if a driver calls it anyway.
void mark_unavailable(Kernel& k, std::string reason);

}  // namespace softcheck::peers
