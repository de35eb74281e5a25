// The exp lab's primitives (softcheck/exp_lab.hpp, docs/exp-lab.md).
#include "softcheck/exp_lab.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>

namespace softcheck::exp_lab {

namespace {

// ------------------------------------------------------ fitted polynomials

// exp_lab_fit (impls/tools/exp_lab_fit.cpp): relative minimax of 2^f on [-1/2, 1/2],
// c_0 = 1, Lawson then a Remez polish in long double, coefficients rounded to nearest f32.
// degree 2: minimax 1.963394e-03 (2 polishing exchanges); f32 coefficients 1.964009e-03; reduction 2.066e-08, Horner 3.468e-08; R 1.9641e-03
constexpr float exp2_poly2_coefficients[] = {0x1p+0f, 0x1.67e7fcp-1f, 0x1.eb3dd4p-3f};
// degree 3: minimax 1.012878e-04 (2 polishing exchanges); f32 coefficients 1.013341e-04; reduction 2.066e-08, Horner 4.059e-08; R 1.0140e-04
constexpr float exp2_poly3_coefficients[] = {0x1p+0f, 0x1.62f5fap-1f, 0x1.f00c4cp-3f, 0x1.c2a218p-5f};
// degree 4: minimax 2.819763e-06 (2 polishing exchanges); f32 coefficients 2.836569e-06; reduction 2.066e-08, Horner 4.126e-08; R 2.8985e-06
constexpr float exp2_poly4_coefficients[] = {0x1p+0f, 0x1.62e12cp-1f, 0x1.ec0378p-3f, 0x1.c9fc46p-5f, 0x1.3a02ccp-7f};
// degree 5: minimax 9.147737e-08 (2 polishing exchanges); f32 coefficients 1.084784e-07; reduction 2.066e-08, Horner 4.131e-08; R 1.7045e-07
constexpr float exp2_poly5_coefficients[] = {0x1p+0f, 0x1.62e42ap-1f, 0x1.ebf9bcp-3f, 0x1.c6b752p-5f, 0x1.3cea88p-7f, 0x1.5bba14p-10f};
constexpr Exp2PolyAccuracy exp2_poly_accuracy_table[] = {
    {1.97e-03, 3.30e+04},  // degree 2
    {1.02e-04, 1.71e+03},  // degree 3
    {2.84e-06, 4.97e+01},  // degree 4
    {1.09e-07, 3.86e+00},  // degree 5
};

// The largest f32 z with e^z < 2^128: 128 ln 2 rounded down. Past it e^z
// rounds to +inf in f32 (glibc's expf uses the same boundary).
constexpr float overflow_threshold = 0x1.62e42ep6f;

// The integer nearest to t, ties to even, for |t| < 2^22: adding and removing
// 1.5 * 2^23 rounds the fraction away in one IEEE addition (no library rint,
// the same bits on any IEEE machine).
float nearest_integer(float t) {
  constexpr float shifter = 0x1.8p23f;
  return (t + shifter) - shifter;
}

// 2^n as an f32, exact for -126 <= n <= 127 (the exponent field set directly).
float pow2(int n) { return std::bit_cast<float>(static_cast<std::uint32_t>(n + 127) << 23); }

// p 2^n rounded once, for p in [2^-1, 2] and -151 <= n <= 128: one exact
// product in the normal range; below 2^-126 an exact product first and one
// rounding into the subnormals after it (two roundings through a normal
// 2^-126 would not be correct rounding); above 2^127 two products, the last
// one overflowing to +inf where p 2^n does.
float scale_by_pow2(float p, int n) {
  if (n < -126) return (p * pow2(n + 64)) * 0x1p-64f;
  if (n > 127) return (p * pow2(n - 64)) * 0x1p64f;
  return p * pow2(n);
}

// c_0 + c_1 f + ... + c_d f^d by Horner, each step one fmaf.
float horner(std::span<const float> c, float f) {
  float p = c.back();
  for (std::size_t k = c.size() - 1; k-- > 0;) p = std::fma(p, f, c[k]);
  return p;
}

template <int Degree>
std::span<const float> coefficients_of() {
  static_assert(Degree >= 2 && Degree <= 5, "exp2_poly: degree 2..5");
  if constexpr (Degree == 2) return exp2_poly2_coefficients;
  if constexpr (Degree == 3) return exp2_poly3_coefficients;
  if constexpr (Degree == 4) return exp2_poly4_coefficients;
  if constexpr (Degree == 5) return exp2_poly5_coefficients;
}

void check_degree(int degree, const char* who) {
  if (degree < 2 || degree > 5) throw std::invalid_argument(std::string(who) + ": degree must be in 2..5");
}

}  // namespace

float expf_glibc(float z) { return std::exp(z); }

float exp_fold_fma(float x, float m, float s) {
  // flash_api.cpp: params.scale_softmax_log2 = softmax_scale * M_LOG2E, a
  // float times a double stored in a float field: rounded twice, as here.
  const float scale_log2 = static_cast<float>(static_cast<double>(s) * std::numbers::log2e);
  const float max_scaled = m == -std::numeric_limits<float>::infinity() ? 0.0f : m * scale_log2;
  return std::exp2(std::fma(x, scale_log2, -max_scaled));
}

float exp_fold_fma(float z) { return exp_fold_fma(z, 0.0f, 1.0f); }

template <int Degree>
float exp2_poly_pow2(float t) {
  if (t != t) return t;
  if (t <= -150.0f) return 0.0f;  // 2^t <= 2^-150 rounds to 0 (-inf included)
  if (t >= 128.0f) return std::numeric_limits<float>::infinity();
  const float n = nearest_integer(t);
  const float f = t - n;  // exact: n is t's nearest integer, |f| <= 1/2
  return scale_by_pow2(horner(coefficients_of<Degree>(), f), static_cast<int>(n));
}

float exp2_poly_with(std::span<const float> coefficients, float z) {
  if (z != z) return z;
  if (z < underflow_threshold) return 0.0f;  // e^z < 2^-150 (-inf included)
  if (z > overflow_threshold) return std::numeric_limits<float>::infinity();
  // Cody-Waite in base 2: z log2 e = n + f with f kept to 2^-25 (exp_lab.hpp).
  const float t_hi = z * log2e_f32;
  const float t_lo = std::fma(z, log2e_f32, -t_hi);  // the product's rounding error, exact
  const float n = nearest_integer(t_hi);
  const float f = (t_hi - n) + std::fma(z, log2e_lo_f32, t_lo);  // t_hi - n exact
  return scale_by_pow2(horner(coefficients, f), static_cast<int>(n));
}

template <int Degree>
float exp2_poly(float z) {
  return exp2_poly_with(coefficients_of<Degree>(), z);
}

template float exp2_poly_pow2<2>(float);
template float exp2_poly_pow2<3>(float);
template float exp2_poly_pow2<4>(float);
template float exp2_poly_pow2<5>(float);
template float exp2_poly<2>(float);
template float exp2_poly<3>(float);
template float exp2_poly<4>(float);
template float exp2_poly<5>(float);

std::span<const float> exp2_poly_coefficients(int degree) {
  check_degree(degree, "exp2_poly_coefficients");
  switch (degree) {
    case 2: return coefficients_of<2>();
    case 3: return coefficients_of<3>();
    case 4: return coefficients_of<4>();
    default: return coefficients_of<5>();
  }
}

Exp2PolyAccuracy exp2_poly_accuracy(int degree) {
  check_degree(degree, "exp2_poly_accuracy");
  return exp2_poly_accuracy_table[degree - 2];
}

float expf_cuda_model(float z) {
  constexpr float smallest_normal = std::numeric_limits<float>::min();
  float t = z * log2e_f32;  // mul.ftz.f32: a subnormal z or product is 0
  if (std::fabs(t) < smallest_normal) t = 0.0f;
  const float r = std::exp2(t);  // ex2.approx.ftz.f32, modelled by glibc's exp2f
  return r < smallest_normal ? 0.0f : r;  // .ftz: a subnormal result is +0
}

}  // namespace softcheck::exp_lab
