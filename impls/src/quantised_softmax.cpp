// Softmax with P cast to FP8 E4M3 after the softmax: what an FP8 attention
// kernel does with P before P.V (REFERENCE.md, "Low-precision formats"),
// here as a softmax kernel of its own so that P itself is judged, in E4M3
// ULPs (Kernel::quantised_outputs), against the exact softmax.
//
// The row is the shifted_log1p core in f32 (the same code as
// shifted_log1p_f32 and the f16/bf16 f32-accumulating kernels), the
// normaliser summed before the cast; each p_j is then rounded once to E4M3
// (to nearest, ties to even) and stored as the f32 value it is (every E4M3
// value is exact in f32). Nothing renormalises after the cast: below half of
// E4M3's smallest subnormal (2^-10) a probability becomes 0, so a row loses
// up to n 2^-10 of its mass although every output is within its bound (the
// user report of O = 0.64 for V = 1; docs/low-precision.md measures it).
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "lowp.hpp"
#include "shifted_log1p_core.hpp"

namespace softcheck::kernels {

namespace {

// Round to nearest, ties to even: one rounding of the f32 value (exact as a
// double), and the result is exact in f32.
float to_e4m3_nearest(float p) { return static_cast<float>(round_to_format(p, Format::e4m3)); }

// FlashAttention-4's pre-scale: P times 2^8 cast to E4M3 (nearest, ties to
// even) and the product divided back by 2^8 (the kernel compensates in its
// sum; here the output is P itself). Scaling by a power of two is exact in
// f32, so this is one rounding to E4M3 / 2^8 (Format::e4m3_div256), whose
// normal range reaches down to 2^-14 and its quantum to 2^-17.
float to_e4m3_prescaled(float p) {
  return static_cast<float>(round_to_format(static_cast<double>(p) * 256, Format::e4m3) / 256);
}

// The careless cast: the magnitude truncated to the E4M3 grid (toward zero),
// up to one whole ULP low. Test only: it declares the correctly rounded
// kernel's contract and must be caught.
float to_e4m3_truncated(float p) {
  if (!std::isfinite(p) || p == 0) return p;
  const FormatInfo fi = info(Format::e4m3);
  int e = 0;
  std::frexp(p, &e);  // |p| in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, std::max(e - 1, fi.emin) - fi.precision + 1);
  const double t = std::trunc(static_cast<double>(p) / quantum) * quantum;  // exact: a scaling and a truncation
  return static_cast<float>(std::fabs(t) > max_finite(Format::e4m3) ? std::copysign(max_finite(Format::e4m3), t) : t);
}

Kernel pe4m3_kernel(std::string kernel_name, std::string description, float (*quantise)(float), Format quantised,
                    bool test_only) {
  const OpDecl* f32 = nullptr;
  const KernelFamily family = shifted_log1p_family();
  for (const OpDecl& d : family.ops)
    if (d.op == Op::softmax) f32 = &d;
  // The f32 row is shifted_log1p_f32's, within its contract K32 ulp32; one
  // rounding to E4M3 gives 0.5 + 1.5 K32 u32/u_e4m3 E4M3 ULPs (lowp_shifted.cpp's
  // derivation; ulp32(v) <= 2^-20 ulp_e4m3(v) below E4M3's normal range too,
  // where its quantum is 2^-9 and ulp32(v) < 2^-29; for E4M3 / 2^8 the
  // quantum 2^-17 below 2^-14, where ulp32(v) < 2^-37).
  Core<float> core = [quantise](Op op, std::span<float> zy) {
    shifted_log1p_core<float>(op, zy);
    for (float& p : zy) p = quantise(p);
  };
  Kernel k = make_kernel<float>(std::move(kernel_name), "shifted_log1p_pe4m3", std::move(description),
                                MaskedRowPolicy::zeros, {{Op::softmax, rounded_once_from_f32(f32->contract, quantised)}},
                                std::move(core));
  k.quantised_outputs = quantised;
  k.test_only = test_only;
  return k;
}

}  // namespace

std::vector<Kernel> quantised_softmax_kernels() {
  return {pe4m3_kernel("softmax_pe4m3_f32",
                       "f32 in, the shifted_log1p core in f32 (normaliser summed before the cast), each p_j "
                       "rounded once to FP8 E4M3 (nearest, ties to even) and stored in f32; no renormalisation: "
                       "p below 2^-10 becomes 0",
                       to_e4m3_nearest, Format::e4m3, false),
          pe4m3_kernel("softmax_pe4m3_x256_f32",
                       "as softmax_pe4m3_f32 with FlashAttention-4's pre-scale: each p_j times 2^8 rounded once to "
                       "E4M3 and divided back by 2^8 (values of E4M3 / 2^8: p down to 2^-18 kept)",
                       to_e4m3_prescaled, Format::e4m3_div256, false),
          pe4m3_kernel("mutant_pe4m3_truncated_f32",
                       "test only: as softmax_pe4m3_f32 with each p_j truncated to the E4M3 grid (toward "
                       "zero) instead of rounded to nearest; claims the rounded kernel's contract",
                       to_e4m3_truncated, Format::e4m3, true)};
}

}  // namespace softcheck::kernels
