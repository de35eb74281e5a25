// The exp lab (issue #25): the exponentials fast softmax kernels use instead
// of a library expf, as small f32 functions a kernel can call, each computing
// e^z (or 2^t) for f32 arguments. docs/exp-lab.md says what each computes,
// how the exhaustive sweep (impls/tools/exp_lab_sweep) measures it against
// MPFR, and the bounds; docs/measurements.md has the measured table.
//
//   expf_glibc          the baseline: glibc's expf (0.502 ulp, REFERENCE.md
//                       "exp accuracy of the libraries under test")
//   exp_fold_fma        FlashAttention-2's exponential of a raw score x with
//                       row max m and softmax scale s: exp2f(fma(x, s log2 e,
//                       -(m s log2 e))), the products rounded where FA rounds them
//   exp2_poly<deg>      e^z by a Cody-Waite reduction z log2 e = n + f,
//                       f in [-1/2, 1/2], a minimax polynomial of degree 2-5
//                       for 2^f (Horner, fmaf) and 2^n by exponent construction
//   expf_cuda_model     CUDA's __expf under --use_fast_math: ex2.approx.ftz of
//                       fl(z * fl(log2 e)); the argument rounding and the
//                       flush to zero reproduced, ex2.approx's own bits not
//
// Every function is plain IEEE f32 arithmetic: + - * with the project's
// -ffp-contract=off, fused multiply-adds written as std::fma (one rounding by
// definition), exact bit manipulation, and glibc's expf / exp2f where named.
#pragma once

#include <span>

namespace softcheck::exp_lab {

// log2(e) rounded to f32 (0x1.715476p0 = 1.44269502162933349609375): the
// constant nvcc's __expf multiplies by and the f32 FMA operand FlashAttention's
// scale_softmax_log2 becomes when s = 1.
inline constexpr float log2e_f32 = 0x1.715476p0f;

// log2 e - log2e_f32 rounded to f32 (1.9259630e-8): log2 e = log2e_f32 +
// log2e_lo_f32 within 2^-51, the Cody-Waite split exp2_poly reduces with.
inline constexpr float log2e_lo_f32 = 0x1.4ae0cp-26f;

// The smallest f32 z with e^z >= 2^-150 (half the smallest subnormal), i.e.
// -150 ln 2 = -103.9720770839918 rounded up to f32. Every z below it has
// e^z rounding to 0; every z in [underflow_threshold, 0] has a nonzero
// correctly rounded e^z. Derived with MPFR by impls.ExpLab.ThresholdsAreDerived
// (glibc's expf uses the same boundary, x < -0x1.9fe368p6f underflows).
inline constexpr float underflow_threshold = -0x1.9fe368p6f;

// The smallest f32 z with e^z >= 2^-126 (the smallest normal), -126 ln 2
// rounded up: below it the exact e^z is subnormal (the band a flush-to-zero
// exponential loses). Derived by the same test.
inline constexpr float subnormal_threshold = -0x1.5d589ep6f;

// ------------------------------------------------------------------ baseline

// glibc's expf (std::exp of a float).
float expf_glibc(float z);

// ------------------------------------------------------- FlashAttention's fold

// FlashAttention-2's P = exp(s (x - m)) for a raw score x, row max m and
// softmax scale s, computed as FA2 computes it (csrc/flash_attn/src/softmax.h,
// scale_apply_exp2; flash_api.cpp sets params.scale_softmax_log2 =
// softmax_scale * M_LOG2E):
//   scale_log2 = fl32(s * log2 e)              the product in double, stored as float
//   max_scaled = fl32(m * scale_log2)          0 when m = -inf (FA's fully masked rule)
//   P          = exp2f(fma(x, scale_log2, -max_scaled))   nvcc contracts x*scale - max_scaled
// The exp2 is glibc's exp2f here (0.502 ulp, within 1 ulp of the correctly
// rounded 2^t): the fold's own error, the roundings of scale_log2, max_scaled
// and the fma, is what this function isolates. FA builds with --use_fast_math,
// so on the device exp2f is ex2.approx.ftz.f32 (see expf_cuda_model for what
// that adds). Note that x = m does not give exactly 1 unless m * scale_log2 is
// exact: fma(m, scale_log2, -fl(m scale_log2)) is that product's rounding error.
float exp_fold_fma(float x, float m, float s);

// The fold at s = 1, m = 0: exp2f(fl(z * log2e_f32)), a function of z alone.
float exp_fold_fma(float z);

// ----------------------------------------------------- polynomial exp2

// 2^t for an f32 t already in log2 units (what FlashAttention-4's polynomial
// exp2 receives from the folded FMA): n = rint(t), f = t - n exactly, 2^f by
// the degree-`Degree` polynomial, times 2^n. Degree in 2..5.
template <int Degree>
float exp2_poly_pow2(float t);

// e^z: the Cody-Waite reduction in base 2 with log2 e split into two f32
// constants, log2 e = L_hi + L_lo (L_hi = log2e_f32), and the product z L_hi
// kept exactly by an FMA:
//   t_hi = fl(z L_hi),  t_lo = fma(z, L_hi, -t_hi) (exact),  n = rint(t_hi),
//   f = fl((t_hi - n) + fma(z, L_lo, t_lo))     (t_hi - n exact),
// so f = z log2 e - n within 2^-25 + 2^-40 (docs/exp-lab.md), f in
// [-1/2 - 2^-17, 1/2 + 2^-17]; then 2^f by the polynomial and 2^n by exponent
// construction (two steps below 2^-126, so a subnormal result is rounded
// once). z = -inf and every z < underflow_threshold give +0, z = 0 gives 1
// exactly (the polynomial's constant term is 1), NaN gives NaN, z past
// ln(FLT_MAX) gives +inf. Degree in 2..5.
template <int Degree>
float exp2_poly(float z);

// The polynomial's coefficients c_0 = 1, c_1 .. c_Degree (2^f ~ sum c_k f^k
// on [-1/2, 1/2]): the relative-error minimax polynomial with c_0 pinned to 1,
// fitted by Lawson's algorithm and a Remez polish, rounded to nearest f32
// (impls/tools/exp_lab_fit.cpp; `exp_lab_fit` prints this table and
// impls.ExpLabFit.StoredCoefficientsAreTheFit checks they still agree).
std::span<const float> exp2_poly_coefficients(int degree);

// e^z (as exp2_poly) with any coefficient table c_0 .. c_d: the same code
// path, for the lab's planted-coefficient test.
float exp2_poly_with(std::span<const float> coefficients, float z);

// What the fit guarantees for degree `degree` (docs/exp-lab.md, "Error bounds"):
// poly_rel_error bounds |p(f) / 2^f - 1| for the f32 coefficients on the
// reduced interval (evaluated exactly); ulp_bound bounds the error of
// exp2_poly<degree>(z) in f32 ulps of e^z for every f32 z <= 0 (reduction,
// Horner roundings, the final rounding and the subnormal scaling included).
// Both rounded up to 3 significant digits, as exp_lab_fit prints them.
struct Exp2PolyAccuracy {
  double poly_rel_error;
  double ulp_bound;
};
Exp2PolyAccuracy exp2_poly_accuracy(int degree);

// -------------------------------------------------------------- CUDA __expf

// A model of CUDA's __expf as --use_fast_math compiles it (libdevice
// __nv_fast_expf: mul.ftz.f32 by fl(log2 e), then ex2.approx.ftz.f32):
//   t = fl(z * log2e_f32), subnormal t flushed to 0;
//   r = exp2f(t) (glibc, within 1 ulp of the correctly rounded 2^t);
//   a subnormal r flushed to +0.
// It reproduces the argument rounding (the error that grows with |z|: the
// CUDA guide's 2 + floor(|1.173 z|) ulp) and the flush to zero of every
// subnormal result, not ex2.approx's own bits, which differ from the
// correctly rounded 2^t by up to 2 ulp (docs/exp-lab.md, "CUDA __expf").
float expf_cuda_model(float z);

}  // namespace softcheck::exp_lab
