#include "peer_util.hpp"

#include <cstring>
#include <stdexcept>

#include "softcheck/storage.hpp"

namespace softcheck::peers {

namespace {

template <class T>
T load(const void* x, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(x) + i * sizeof(T), sizeof v);
  return v;
}

template <class T>
void store(unsigned char* out, std::size_t i, T v) {
  std::memcpy(out + i * sizeof(T), &v, sizeof v);
}

}  // namespace

std::vector<unsigned char> scaled_copy(Format f, const void* x, std::size_t count, double temperature,
                                       std::size_t pad_bytes) {
  std::vector<unsigned char> out(count * element_size(f) + pad_bytes, 0);
  if (temperature == 1) {
    std::memcpy(out.data(), x, count * element_size(f));
    return out;
  }
  if (f == Format::f64) throw std::logic_error("scaled_copy: no f64 peer");
  const auto t = static_cast<float>(temperature);
  for (std::size_t i = 0; i < count; ++i) {
    if (f == Format::f32) {
      store(out.data(), i, load<float>(x, i) / t);
    } else {
      const auto z = static_cast<float>(decode16(load<std::uint16_t>(x, i), f)) / t;
      store(out.data(), i, encode16(z, f));
    }
  }
  return out;
}

void mark_unavailable(Kernel& k, std::string reason) {
  k.available = false;
  k.unavailable_reason = std::move(reason);
  k.compute = single_operand([name = k.name, why = k.unavailable_reason](Op, const void*, void*, std::int64_t, std::int64_t, double) {
    throw std::logic_error(name + " is unavailable: " + why);
  });
}

}  // namespace softcheck::peers
