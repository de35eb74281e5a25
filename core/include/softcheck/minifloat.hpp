// The small element formats of the OCP 8-bit floating point and
// microscaling (MX) specifications (REFERENCE.md, "Low-precision formats"):
// FP8 E4M3 and E5M2, FP6 E2M3 and E3M2, FP4 E2M1. One sign bit, `exp_bits`
// of biased exponent, `man_bits` of fraction, subnormals at exponent field 0.
// They differ in their special values:
//   ieee      E5M2: the top exponent holds inf (fraction 0) and NaN, as in IEEE 754
//   nan_only  E4M3: no inf; S.1111.111 is the only NaN, the rest of the top
//             exponent is finite (max 448)
//   none      FP6, FP4: every pattern is a finite number
// Conversion from double rounds to nearest, ties to even, with an unbounded
// exponent above; a result beyond the largest finite value overflows, and
// the mode says to what: the largest finite value of the sign (saturate), or
// the format's special (inf for E5M2, NaN for E4M3; a format without
// specials always saturates). Infinite inputs follow the same rule; NaN
// becomes the canonical NaN (a format without NaN cannot hold it: throws).
// The oracle's MPFR rounding (oracle/include/softcheck/minifloat_oracle.hpp)
// is tested against this one exhaustively.
// Below them: the block formats built on them, the MX formats' E8M0 scale and
// block conversion, and NVFP4 (docs/low-precision.md, "Block scaling").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace softcheck {

enum class MiniSpecials : std::uint8_t { ieee, nan_only, none };

struct MiniFloat {
  std::string_view name;
  int exp_bits, man_bits, bias;
  MiniSpecials specials;

  constexpr int bits() const { return 1 + exp_bits + man_bits; }
  constexpr unsigned patterns() const { return 1u << bits(); }
  constexpr std::uint8_t sign_bit() const { return static_cast<std::uint8_t>(1u << (exp_bits + man_bits)); }
  // Unbiased exponent of the smallest normal binade, and of the largest
  // binade holding a finite value.
  constexpr int min_exponent() const { return 1 - bias; }
  constexpr int max_exponent() const {
    return ((1 << exp_bits) - (specials == MiniSpecials::ieee ? 2 : 1)) - bias;
  }
};

inline constexpr MiniFloat fp8_e4m3{"e4m3", 4, 3, 7, MiniSpecials::nan_only};
inline constexpr MiniFloat fp8_e5m2{"e5m2", 5, 2, 15, MiniSpecials::ieee};
inline constexpr MiniFloat fp6_e2m3{"e2m3", 2, 3, 1, MiniSpecials::none};
inline constexpr MiniFloat fp6_e3m2{"e3m2", 3, 2, 3, MiniSpecials::none};
inline constexpr MiniFloat fp4_e2m1{"e2m1", 2, 1, 1, MiniSpecials::none};
inline constexpr std::array<MiniFloat, 5> mini_formats = {fp8_e4m3, fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4_e2m1};

enum class Overflow : std::uint8_t { saturate, to_special };

// The largest finite value (448 for E4M3, 57344 for E5M2, 7.5, 28, 6) and
// the smallest positive one (2^(min_exponent - man_bits)).
double max_finite(const MiniFloat& f);
double min_subnormal(const MiniFloat& f);
// The value of a bit pattern (< f.patterns()), exactly; NaN for a NaN pattern.
double decode(const MiniFloat& f, std::uint8_t bits);
// v rounded to f (above); -0 keeps its sign.
std::uint8_t encode(const MiniFloat& f, double v, Overflow overflow);

// ---------------------------------------------------------------------------
// E8M0, the shared scale of the MX formats (OCP MX v1.0, section 5.4.1,
// Table 7): 8 bits of biased exponent, no sign, no fraction. Code e in 0..254
// is 2^(e - 127) (2^-127 .. 2^127); 0xFF is the only NaN; there is no zero
// and no infinity.
inline constexpr int e8m0_bias = 127;
inline constexpr int e8m0_min_exponent = -127;
inline constexpr int e8m0_max_exponent = 127;
inline constexpr std::uint8_t e8m0_nan = 0xFF;

// The value of a code, exactly; NaN for 0xFF.
double e8m0_decode(std::uint8_t bits);
// The scale 2^e of an MX block: e + 127 for e in [-127, 127]; below, the
// smallest scale 2^-127 (the clamp of the MX reference implementation: the
// spec leaves it open); above, NaN (no infinity to overflow to).
std::uint8_t e8m0_from_exponent(int e);
// The largest power of two <= v (section 6.3's rounding of a scale: "the
// largest power-of-two less than or equal to"), through e8m0_from_exponent:
// exact for a power of two in range, 2^-127 for 0 < v < 2^-126, NaN from
// 2^128 up. NaN for a NaN, an infinite, a zero or a negative v (E8M0 holds
// none of them).
std::uint8_t e8m0_encode(double v);

// ---------------------------------------------------------------------------
// MX blocks (OCP MX v1.0, section 5): k elements P_i of an element format
// share one E8M0 scale X; element i stands for X * P_i. Every concrete MX
// format has k = 32 (Table 1, section 5.2): MXFP8 (E4M3, E5M2), MXFP6 (E3M2,
// E2M3), MXFP4 (E2M1); MXINT8 is not covered here.
inline constexpr std::size_t mx_block_size = 32;

// The MX format of an element format by the OCP MX spec's names:
// "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4_e2m1".
inline std::string mx_format_name(const MiniFloat& element) {
  return "mxfp" + std::to_string(element.bits()) + "_" + std::string(element.name);
}

struct MxBlock {
  std::uint8_t scale = e8m0_nan;        // E8M0 code of X
  std::vector<std::uint8_t> elements;  // bit patterns of P_i in the element format
};

// Conversion of a block of 1..32 values (std::invalid_argument otherwise)
// per section 6.3: with emax = element.max_exponent() (the exponent of the
// element format's largest normal),
//   X   = 2^(floor(log2(max |V_i|)) - emax)          exactly, no floating log2
//   P_i = V_i / X rounded to nearest, ties to even, a value past the
//         element's largest normal clamped to it with its sign (saturation)
// V_i / X is exact (X is a power of two), so P_i is one correct rounding.
// Cases section 6.3 leaves open, decided as the reference implementation
// (microsoft/microxcaling, mx_ops.py _shared_exponents) does:
//   - a NaN or infinite V_i: X is NaN (0xFF), every P_i is 0; a NaN X makes
//     the whole block NaN (section 5.1);
//   - floor(log2(max)) - emax > 127: X is NaN, every P_i is 0;
//   - floor(log2(max)) - emax < -127, and an all-zero block (max = 0): X is
//     2^-127 (code 0), and P_i is V_i / 2^-127 rounded as above (+-0 for zeros).
MxBlock mx_quantize(std::span<const double> block, const MiniFloat& element);
// V_i' = X * P_i, exactly (section 5.1); every value NaN when X is NaN; an
// element's own NaN or infinity (FP8) stays one. std::invalid_argument for
// 0 or more than 32 elements or a pattern wider than the element format.
std::vector<double> mx_dequantize(const MxBlock& block, const MiniFloat& element);

// A row as a kernel with MX inputs holds it (Kernel::mx_inputs): blocks of
// 32 consecutive entries from the first (the last one partial), each
// converted by mx_quantize and dequantised, with -inf masks kept beside the
// blocks: a masked entry stays -inf and stands as 0 in its block (it takes
// no part in the block's maximum). A block with a NaN or +inf gives NaN, as
// mx_quantize's NaN scale does.
std::vector<double> mx_row(std::span<const double> row, const MiniFloat& element);

// ---------------------------------------------------------------------------
// NVFP4 (NVIDIA; docs/low-precision.md has the sources): E2M1 elements in
// blocks of 16 consecutive values, each block with an E4M3 scale s_b, the
// tensor with an f32 scale s_t; value i stands for s_t * s_b * P_i. The
// recipe (two-level scaling):
//   s_t = RN_f32(amax_tensor / (448 * 6))
//   s_b = RN_E4M3(amax_block / (6 * s_t)), saturating at 448
//   P_i = RN_E2M1(V_i / (s_t * s_b)), saturating at +-6
// each a single correct rounding (to nearest, ties to even) of the exact
// quotient. A zero s_t or s_b (an all-zero tensor or block, or one so small
// that its scale rounds to 0) gives zero block scales and elements, +-0 by the
// sign of V_i. The last block may be partial.
inline constexpr std::size_t nvfp4_block_size = 16;

struct Nvfp4Tensor {
  float tensor_scale = 0;                  // s_t
  std::vector<std::uint8_t> block_scales;  // E4M3 patterns of s_b, ceil(n / 16) of them
  std::vector<std::uint8_t> elements;      // E2M1 patterns of P_i, one per value
};

// s_t of a tensor whose largest magnitude is amax.
float nvfp4_tensor_scale(double amax);
// Every value must be finite with |V_i| <= FLT_MAX (the f32 and bf16 tensors
// NVFP4 quantises; std::domain_error otherwise): E2M1 holds no NaN or
// infinity, and the recipe's s_t would not exist.
Nvfp4Tensor nvfp4_quantize(std::span<const double> values);
// s_t * s_b * P_i for every value, exactly (a double holds the 30-bit product).
// std::invalid_argument when the block scales do not match the elements.
std::vector<double> nvfp4_dequantize(const Nvfp4Tensor& tensor);

}  // namespace softcheck
