// Low-precision (f16 / bf16) kernels: the storage side and the arithmetic
// types they compute in (docs/low-precision.md).
//
//   make_kernel16<Acc>   a kernel whose rows are 16-bit patterns of f16 or
//                        bf16 (storage.hpp) and whose core runs in Acc: float
//                        ("f32 accumulation") or Rounded<F> (every operation
//                        rounded to F); each output is rounded once to the
//                        storage format on the way out.
//   Rounded<F>           a number of format F whose +, -, *, /, exp, log,
//                        log1p are each rounded to F: what a kernel computing
//                        entirely in f16 does, on any compiler (clang 14 has no
//                        _Float16 on x86).
#pragma once

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernel_util.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::kernels {

// The contract of a result computed by an f32 core with contract `f32` and
// rounded once to `out` (f16 or bf16): 0.5 + 1.5 K32 u32 / u_out in ULPs of
// `out` (the derivation is beside it, lowp_shifted.cpp).
Contract rounded_once_from_f32(const Contract& f32, Format out);

// ------------------------------------------------------------ Rounded<F>

// A value of format F (held exactly in a double) whose every operation is
// rounded to F. Each operation is computed in double and rounded once to F with
// round_to_format (ties to even, subnormals, overflow to inf at max + ulp/2):
//  - +, -, *, / of two F values: the double result is the exact one rounded to
//    53 bits, and rounding that to F (p = 11 or 8) gives the correctly rounded
//    F result, because 53 >= 2p + 2 makes the double rounding innocuous
//    (Figueroa, "When is double rounding innocuous?", SIGNUM 1995);
//  - exp, log, log1p: glibc's double functions (~0.51 ulp of double,
//    REFERENCE.md "exp accuracy") rounded to F: correctly rounded except within
//    ~2^-52 relative of an F rounding midpoint, i.e. an F function <= 0.5 ulp
//    + 2^-41 ulp.
// Conversion from double rounds (so T(1), T(temperature) are F values);
// conversion to double is exact.
template <Format F>
class Rounded {
 public:
  constexpr Rounded() = default;
  Rounded(double v) : v_(round_to_format(v, F)) {}  // NOLINT(google-explicit-constructor): like float
  explicit operator double() const { return v_; }
  // v, already a value of F, without rounding (constexpr: constants such as infinity).
  static constexpr Rounded exactly(double v) {
    Rounded r;
    r.v_ = v;
    return r;
  }

  friend Rounded operator+(Rounded a, Rounded b) { return Rounded(a.v_ + b.v_); }
  friend Rounded operator-(Rounded a, Rounded b) { return Rounded(a.v_ - b.v_); }
  friend Rounded operator*(Rounded a, Rounded b) { return Rounded(a.v_ * b.v_); }
  friend Rounded operator/(Rounded a, Rounded b) { return Rounded(a.v_ / b.v_); }
  constexpr Rounded operator-() const { return exactly(-v_); }  // exact
  Rounded& operator+=(Rounded b) { return *this = *this + b; }

  friend bool operator==(Rounded a, Rounded b) { return a.v_ == b.v_; }
  friend std::partial_ordering operator<=>(Rounded a, Rounded b) { return a.v_ <=> b.v_; }

  // Found by argument-dependent lookup from exp_of / log_of / log1p_of (kernel_util.hpp).
  friend Rounded exp(Rounded a) { return Rounded(std::exp(a.v_)); }
  friend Rounded log(Rounded a) { return Rounded(std::log(a.v_)); }
  friend Rounded log1p(Rounded a) { return Rounded(std::log1p(a.v_)); }

 private:
  double v_ = 0;
};

// ------------------------------------------------------------ 16-bit storage

// The kernel: rows x cols 16-bit patterns of `storage` (f16 or bf16) in x and
// y. For each row: decode (exact in Acc: f16 and bf16 values are float values),
// z_i = x_i / Acc(temperature) in Acc (the temperature rounded to Acc first,
// as make_kernel does), the core in Acc, and each output rounded once to the
// storage format (round to nearest even). The row is read whole before it is
// written, so x may alias y.
template <class Acc>
Kernel make_kernel16(std::string kernel_name, std::string algorithm, Format storage,
                     std::string description, MaskedRowPolicy policy, std::vector<OpDecl> ops,
                     Core<Acc> core) {
  if (storage != Format::f16 && storage != Format::bf16)
    throw std::invalid_argument("make_kernel16: f16 or bf16 storage only");
  Kernel k;
  k.name = std::move(kernel_name);
  k.algorithm = std::move(algorithm);
  k.format = storage;
  k.ops = std::move(ops);
  k.masked_policy = policy;
  k.description = std::move(description);
  std::vector<Op> provided;
  for (const OpDecl& d : k.ops) {
    if (spec(d.op).scalar_output() || spec(d.op).several_outputs())
      throw std::invalid_argument("make_kernel16: " + std::string(name(d.op)) + " is not one row output");
    provided.push_back(d.op);
  }
  k.compute = single_operand([core = std::move(core), storage, provided, kname = k.name](
              Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols,
              double temperature) {
    if (std::find(provided.begin(), provided.end(), op) == provided.end())
      throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
    const auto* x = static_cast<const std::uint16_t*>(xv);
    auto* y = static_cast<std::uint16_t*>(yv);
    const auto t = static_cast<Acc>(temperature);
    const auto n = static_cast<std::size_t>(cols);
    std::vector<Acc> zy(n);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::size_t base = static_cast<std::size_t>(r) * n;
      for (std::size_t i = 0; i < n; ++i) zy[i] = static_cast<Acc>(decode16(x[base + i], storage));
      scale_by_temperature<Acc>(zy, t, zy);
      core(op, zy);
      for (std::size_t i = 0; i < n; ++i) y[base + i] = encode16(static_cast<double>(zy[i]), storage);
    }
  });
  return k;
}

// The registered low-precision kernels (lowp_shifted.cpp), in registry order:
// f16_shifted_f32acc, bf16_shifted_f32acc, f16_shifted_f16acc.
std::vector<Kernel> lowp_kernels();
// Softmax with P cast to FP8 E4M3 (quantised_softmax.cpp): softmax_pe4m3_f32,
// softmax_pe4m3_x256_f32 (pre-scaled by 2^8) and the test-only
// mutant_pe4m3_truncated_f32.
std::vector<Kernel> quantised_softmax_kernels();
// Softmax and log-softmax of rows read as MX blocks (mx_input_softmax.cpp):
// softmax_<mx format>_f32 for each OCP element format (mxfp8_e4m3,
// mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4_e2m1) and the test-only
// mutant_mxfp8_scale_low_f32.
std::vector<Kernel> mx_input_softmax_kernels();

}  // namespace softcheck::kernels

// minus_inf<Rounded<F>> (kernel_util.hpp, a constexpr variable) needs a constexpr infinity().
template <softcheck::Format F>
struct std::numeric_limits<softcheck::kernels::Rounded<F>> {
  static constexpr bool is_specialized = true;
  static constexpr bool has_infinity = true;
  static constexpr softcheck::kernels::Rounded<F> infinity() {
    return softcheck::kernels::Rounded<F>::exactly(std::numeric_limits<double>::infinity());
  }
};
