// Softmax and log-softmax of rows stored as OCP MX blocks: what a kernel
// reads when the activations were cast to MXFP8, MXFP6 or MXFP4 (E4M3, E5M2,
// E2M3, E3M2 or E2M1 elements, blocks of 32 sharing an E8M0 scale;
// REFERENCE.md, "Low-precision formats"; the OCP MX v1.0 specification,
// sections 5.1 and 6.3), with the arithmetic in f32.
//
// The row arrives as the f32 values its blocks hold (Kernel::mx_inputs: `run`
// converts every row with mx_row, masks kept beside the blocks). The kernel
// packs each block (mx_quantize: lossless on such a row, since the block's
// largest value keeps its binade and so the scale, and every element is a
// value of the element format under it), then decodes the elements through
// a table of the format's values times the scale 2^(code - 127), masks
// restored as -inf, and runs shifted_log1p_f32 on the decoded row. Decoding
// is exact: at most 4 significant bits, and for rows of f32 values between
// 2^-143 (E5M2's smallest subnormal 2^-16 under the smallest scale 2^-127)
// and 2^128. So the contract is shifted_log1p_f32's.
#include <array>
#include <cctype>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "kernel_util.hpp"
#include "lowp.hpp"
#include "softcheck/minifloat.hpp"

namespace softcheck::kernels {

namespace {

// The values of an element format's bit patterns (NaN where the format has
// NaN, +-inf where it has them), indexed by pattern.
using ElementValues = std::array<float, 256>;
ElementValues element_values(const MiniFloat& element) {
  ElementValues t{};
  for (unsigned b = 0; b < element.patterns(); ++b) t[b] = static_cast<float>(decode(element, static_cast<std::uint8_t>(b)));
  return t;
}

// `row` (n values of MX blocks, -inf masks) packed into blocks of `element`
// and decoded into `out` with the scale exponent code - bias.
void decode_row(std::span<const float> row, std::span<float> out, const MiniFloat& element, const ElementValues& values,
                int bias) {
  std::array<double, mx_block_size> block{};
  for (std::size_t start = 0; start < row.size(); start += mx_block_size) {
    const std::size_t len = std::min(mx_block_size, row.size() - start);
    for (std::size_t i = 0; i < len; ++i) block[i] = row[start + i] == -INFINITY ? 0.0 : row[start + i];
    const MxBlock packed = mx_quantize({block.data(), len}, element);
    const int e = static_cast<int>(packed.scale) - bias;
    for (std::size_t i = 0; i < len; ++i)
      out[start + i] = row[start + i] == -INFINITY
                           ? -INFINITY
                           : (packed.scale == e8m0_nan ? NAN : std::ldexp(values[packed.elements[i]], e));
  }
}

Kernel mx_kernel(const MiniFloat& element, std::string kernel_name, std::string description, int bias, bool test_only) {
  static const Kernel f32 = make_kernel<float>(shifted_log1p_family());
  std::vector<OpDecl> ops;
  for (const OpDecl& d : f32.ops)
    if (d.op == Op::softmax || d.op == Op::log_softmax) ops.push_back(d);
  Kernel k = f32;
  k.name = std::move(kernel_name);
  k.algorithm = "shifted_log1p_" + mx_format_name(element);
  k.description = std::move(description);
  k.ops = std::move(ops);
  k.mx_inputs = element;
  k.test_only = test_only;
  k.compute = [element, values = element_values(element), bias](const OpCall& c) {
    if (c.op != Op::softmax && c.op != Op::log_softmax)
      throw std::invalid_argument("the MX-input kernels provide softmax and log_softmax only");
    const auto n = static_cast<std::size_t>(c.cols);
    const auto* x = static_cast<const float*>(c.in[0]);
    std::vector<float> decoded(static_cast<std::size_t>(c.rows) * n);
    for (std::int64_t r = 0; r < c.rows; ++r)
      decode_row({x + r * c.cols, n}, {decoded.data() + r * c.cols, n}, element, values, bias);
    const void* const in[] = {decoded.data()};
    f32.call(OpCall{c.op, in, c.out, c.rows, c.cols, c.temperature});
  };
  return k;
}

}  // namespace

std::vector<Kernel> mx_input_softmax_kernels() {
  std::vector<Kernel> out;
  for (const MiniFloat& element : mini_formats) {
    const std::string format = mx_format_name(element);
    std::string shown = format;  // "MXFP8 E4M3"
    for (char& ch : shown) ch = ch == '_' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out.push_back(mx_kernel(element, "softmax_" + format + "_f32",
                            "rows read as " + shown +
                                " blocks (32 elements, an E8M0 scale each, -inf masks beside them), decoded exactly "
                                "to f32 by a table; softmax and log-softmax as shifted_log1p_f32",
                            e8m0_bias, false));
  }
  out.push_back(mx_kernel(fp8_e4m3, "mutant_mxfp8_scale_low_f32",
                          "test only: as softmax_mxfp8_e4m3_f32 with the E8M0 scale decoded with bias 128 instead of "
                          "127 (every value halved); claims its contract",
                          e8m0_bias + 1, true));
  return out;
}

}  // namespace softcheck::kernels
