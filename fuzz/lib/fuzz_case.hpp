// The structure-aware input of the numeric fuzz targets: bytes -> one batched
// kernel call (kernel from the registry, op, rows x cols values exact in the
// kernel's format, temperature), and back (encode, for seed corpora and tests).
//
// Layout (every field optional: missing bytes read as 0, so any byte string
// decodes, and a short input still gives a full batch by filling the rest):
//
//   kernel(2)  op  rows  cols [cols2]  temperature [8 bytes]  fill  value...  [other inputs]
//
//   kernel       16-bit little-endian point on a circle where each kernel of
//                the pool sits at 8 hashes of its name: the kernel of the first
//                point at or after it (consistent hashing: a registry change does
//                not remap the other kernels, so the committed corpus keeps its meaning)
//   op           low bits: index into the kernel's ops; high bits: the partner
//                kernel of fuzz_differential (index into the same-format pool)
//   rows         1 + b % max_rows
//   cols         b < 0xC0: 1 + b % 32 (short rows, the common case);
//                else 1 + (((b - 0xC0) << 8) | cols2) % max_cols
//   temperature  b < 0xA0: 1; b = 0xFF: the next 8 bytes are the double's bits
//                (anything, NaN and negative included); else a listed value
//   fill         how values past the end of the input are made (FillMode)
//   value        one tag byte, then 0, 1, 4 or 8 bytes (see ValueTag in
//                fuzz_case.cpp): a special value (REFERENCE.md's edges: +-0,
//                subnormals, max finite, lowest, +-inf, NaN, -1e9, ln(max) =
//                88.72 in f32, ln(denorm_min/2) = -103.97 in f32, 65504, ...),
//                a special moved by a few ulps, a small integer, a repeat of
//                the previous value, an entry near the underflow edge below the
//                row's running max, or the raw bits of the format.
//   other inputs only for an op that takes more than the logits (docs/gradients.md),
//                after the rows * cols values (an input that ends before them
//                has none: every field below takes its default):
//                cross_entropy: one target tag byte b per row:
//                  b % 4 = 0  the row's largest entry (the first of ties): a
//                             confident correct prediction, where p_t - 1 and
//                             the loss cancel; also what a missing byte gives
//                  b % 4 = 1  ignore_index
//                  b % 4 = 2  the smallest finite entry (a confident wrong
//                             prediction; entry 0 when none is finite)
//                  b % 4 = 3  entry ((b >> 2) | next byte << 6) % cols (any,
//                             masked ones included: the loss is then +inf)
//                softmax_backward, log_softmax_backward: rows * cols values of
//                the upstream gradient g, each one tag byte then 0 or
//                element_size bytes (the upstream tags in fuzz_case.cpp): k/16
//                for k in [-64, 63], a special value (0, +-1, +-4, +-4096,
//                subnormals, 1 +- ulp, ...), the previous g moved by a few ulps
//                (nearly constant g, where g_i - <y, g> cancels), or raw bits
//                of the format. Past the end of the input g repeats the
//                decoded g values (all 1 when none: a constant g, whose exact
//                softmax gradient is 0).
//
// Every decoded value is exact in the kernel's format (rounded once on decode).
// Every target is one the kernels' contract takes (OpCall: in [0, cols) or
// ignore_index), and every g is finite with |g| <= max_upstream, the range of
// the property suite's g (docs/properties.md, "Gradient ops"): loss-scaled
// gradients included, whose sums over a row stay far inside f32's range (an
// f16 dx may overflow, where its exact value does too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::fuzz {

struct Limits {
  std::int64_t max_rows = 4;
  std::int64_t max_cols = 256;
};

// What values past the end of the input become.
enum class FillMode : std::uint8_t {
  cycle = 0,   // repeat the decoded values (all 0 if none)
  masked,      // -inf
  mask_1e9,    // -1e9 rounded to the format (REFERENCE.md: the classic finite mask)
  lowest,      // the format's lowest value (benchdnn's fill)
  zero,        // +0
  count
};

struct FuzzCase {
  const Kernel* kernel = nullptr;
  Op op = Op::softmax;
  const Kernel* partner = nullptr;  // same format and op, or nullptr (decode_with_partner)
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  double temperature = 1.0;
  std::vector<double> values;  // rows * cols, row-major, exact in kernel->format
  // The other inputs of the op (spec(op).in), empty when it takes none:
  std::vector<std::int64_t> targets;  // class_index: one per row, in [0, cols) or ignore_index
  std::vector<double> upstream;       // upstream_gradient: rows * cols, finite, |g| <= max_upstream, exact

  std::span<const double> row(std::int64_t r) const;
  std::span<const double> upstream_row(std::int64_t r) const;
};

// The largest |g| the decoder gives (the layout above: why bounded).
inline constexpr double max_upstream = 4096;

// Whether op takes an input of kind k (op table).
bool takes(Op op, InputKind k);

// Sets c's other inputs as decode does when the input ends right after the
// values: every target the row's largest entry, g = 1 everywhere (empty for
// an op that takes neither). For tests and tools that build a FuzzCase by hand.
void default_other_inputs(FuzzCase& c);

// The kernels a target may pick, in a fixed order (the byte stream indexes it).
using Pool = std::vector<const Kernel*>;

// Which ops of a kernel the decoder may pick.
enum class OpChoice { any, contract_only };

// Whether the decoder may pick op declaration d under `choice` (ops with one
// output, and the ops with more inputs than the logits, whose every output
// the checks read; with contract_only, a declared contract).
bool eligible(const OpDecl& d, OpChoice choice);

// Decodes `data` against `pool` (non-empty). With OpChoice::contract_only only
// kernels with a declared contract sit on the circle and only ops with a
// declared contract are picked; returns false when no kernel in the pool has one.
bool decode(std::span<const std::uint8_t> data, const Pool& pool, const Limits& limits,
            OpChoice choice, FuzzCase& out);

// The partner for fuzz_differential: a different kernel of the pool with the
// same format that declares a contract for the same op, picked by the op
// byte's high bits; nullptr when there is none.
const Kernel* pick_partner(const FuzzCase& c, const Pool& pool, std::uint8_t selector);

// Bytes that decode (with the same pool and choice, and limits that admit
// c.rows and c.cols) to exactly `c`, values compared bitwise (NaN as NaN).
// c.kernel must be in the pool (with a contract for c.op under contract_only),
// c.values exact in its format, and c's other inputs as FuzzCase says (targets
// below 2^14, g exact in the format). partner_selector: see pick_partner. (A
// kernel whose first point coincides with another kernel's point and sorts
// after it by name cannot be encoded; kernel_collisions() lists such pairs.)
std::vector<std::uint8_t> encode(const FuzzCase& c, const Pool& pool, OpChoice choice,
                                 std::uint8_t partner_selector = 0);

// Pairs of pool kernels sharing an encoding point of the kernel circle (normally none).
std::vector<std::pair<const Kernel*, const Kernel*>> kernel_collisions(const Pool& pool);

// The special values the decoder favours, for format f (rounded to f).
std::vector<double> special_values(Format f);

// One-line summary for messages: "shifted_f32 softmax 2x17 T=0x1p+0".
std::string describe(const FuzzCase& c);

}  // namespace softcheck::fuzz
