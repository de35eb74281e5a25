// The oracle's rounding to the small OCP formats (softcheck/minifloat.hpp):
// MPFR at the format's precision (man_bits + 1 bits) with its subnormals
// (mpfr_subnormalize over the format's exponent range) and an unbounded
// exponent above, then the overflow rule of minifloat.hpp. The independent
// reference for the storage layer's bit-level encode (tested exhaustively
// against it: oracle/tests/minifloat_test.cpp).
//
// Also the references for the block formats built on them (MX, NVFP4):
// the same rules as minifloat.hpp's mx_quantize and nvfp4_quantize, every
// scale and element computed in MPFR and rounded once with round_to.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <span>
#include <vector>

#include "softcheck/minifloat.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::oracle {

// v correctly rounded to f (nearest, ties to even), as a double (exact):
// +-max_finite, +-inf (E5M2) or NaN (E4M3) past the largest finite value
// per `overflow`; NaN for a NaN v (std::domain_error for a format without NaN).
double round_to(const Real& v, const MiniFloat& f, Overflow overflow);

// The number a decimal (or hex-float) text stands for, correctly rounded to
// f in one step from the text (as oracle.hpp's parse_rounded), then the
// overflow rule above; "inf" and "-inf" read as +-inf whatever f holds
// (a caller decides what an infinite input means). std::nullopt when the
// text is not entirely a number.
std::optional<double> parse_rounded(std::string_view text, const MiniFloat& f, Overflow overflow);

// An MX block (OCP MX v1.0, section 6.3, and the cases minifloat.hpp's
// mx_quantize decides): the E8M0 code of the scale X and each element's value
// P_i (not its pattern; NaN-scale blocks give 0). The exponent of max |V_i| is
// MPFR's, V_i / X is exact in MPFR (a power of two), P_i = round_to(V_i / X,
// element, saturate). 1..32 values (std::invalid_argument otherwise).
struct MxReference {
  std::uint8_t scale = e8m0_nan;
  std::vector<double> elements;
};
MxReference mx_reference(std::span<const double> block, const MiniFloat& element);

// NVFP4 per minifloat.hpp's recipe, in MPFR: s_t = round_to(amax / 2688, f32);
// per block s_b = round_to(amax_b / (6 s_t), E4M3, saturate); then
// P_i = round_to(V_i / (s_t s_b), E2M1, saturate); zero scales give +-0
// elements. Each quotient is computed with 256 bits before its one rounding,
// which decides it: a / b, for a of 53 bits and b of at most 28, is either a
// rounding boundary m (at most 25 bits) or at least about 2^-56 of itself
// away from it (a - m b is a nonzero multiple of a's or m b's last place), far
// more than 256 bits resolve. The same domain as nvfp4_quantize.
struct Nvfp4Reference {
  double tensor_scale = 0;          // s_t (an f32 value)
  std::vector<double> block_scales;  // s_b, one per block of 16
  std::vector<double> elements;      // P_i
};
Nvfp4Reference nvfp4_reference(std::span<const double> values);

// v rounded to a double by rounding to odd: toward zero, then, when that was
// inexact, to the neighbour whose last bit is 1 (oracle.cpp's round_to_odd,
// at the double's own precision, subnormals included). It keeps v's side of
// every double with fewer than 53 significant bits, and a double v itself.
// Every boundary an MX or NVFP4 conversion decides against is such a double
// (a power of two for the scale's binade; a rounding boundary of at most 5
// bits times a power of two; 2688 times an f32 midpoint; an E4M3 or E2M1
// boundary times f32 and E4M3 scales: at most 31 bits), so the conversions
// of these doubles are those of the exact values.
double to_double_odd(const Real& v);
// The number a decimal (or hex-float) text stands for, rounded to odd as a
// double the same way, from the text (no rounding to nearest first); "inf"
// and "-inf" read as +-inf. std::nullopt unless the whole text is a number.
std::optional<double> parse_to_odd(std::string_view text);

// The values v quantised as one tensor in a block format and dequantised
// (each element's value in the tensor), v rounded to odd first:
//   mx_round: MX blocks of 32 consecutive values from the first (the last
//     one partial), each X P_i (mx_reference); every value of a block whose
//     scale is NaN (an infinity or NaN in it, or its maximum past the
//     scale's range) is NaN;
//   nvfp4_round: the NVFP4 recipe over the whole span, s_t s_b P_i
//     (nvfp4_reference; std::domain_error where it refuses: a value that is
//     not finite or beyond f32's range).
std::vector<double> mx_round(std::span<const Real> v, const MiniFloat& element);
std::vector<double> nvfp4_round(std::span<const Real> v);

}  // namespace softcheck::oracle
