// attention_simd.hpp's loops, one body each compiled per ISA (simd_exp.hpp).
#include "attention_simd.hpp"

#include <stdexcept>
#include <string>

#include "simd_exp.hpp"

namespace softcheck::kernels {
namespace {

using namespace simd;

struct DotBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* q, const float* k, std::size_t d, float* out) {
    const std::size_t full = d - d % lanes;
    vf s = splat(0.0f);
    for (std::size_t i = 0; i < full; i += lanes) s = s + load(q + i) * load(k + i);
    if (full < d) s = s + load_part(q + full, d - full, 0.0f) * load_part(k + full, d - full, 0.0f);
    *out = fold_sum(s);
  }
};

struct AddProductsBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(float* acc, float p, const float* v, std::size_t d) {
    const std::size_t full = d - d % lanes;
    const vf vp = splat(p);
    for (std::size_t i = 0; i < full; i += lanes) store(acc + i, load(acc + i) + vp * load(v + i));
    if (full < d)
      store_part(acc + full, load_part(acc + full, d - full, 0.0f) + vp * load_part(v + full, d - full, 0.0f),
                 d - full);
  }
};

}  // namespace

LaneLoops lane_loops(SimdIsa isa) {
  if (!simd_isa_supported(isa)) throw std::invalid_argument("attention simd: this CPU lacks " + std::string(name(isa)));
  return {entry_for<DotBody, const float*, const float*, std::size_t, float*>(isa),
          entry_for<AddProductsBody, float*, float, const float*, std::size_t>(isa)};
}

}  // namespace softcheck::kernels
