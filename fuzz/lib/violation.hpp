// A confirmed violation of a kernel's declared invariants, and how the fuzz
// targets report it: kernel, op, property, the row as hex floats and the
// `softcheck repro` line, then abort() so that libFuzzer saves the input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::fuzz {

// What the report of a gradient op (docs/gradients.md) adds: the outputs the
// kernel gave on the row in its batch (its target or g are in Violation::c).
struct GradientRow {
  std::string output;  // the output that failed ("" when the row as a whole did)
  std::vector<std::pair<std::string, std::vector<double>>> outputs;  // every output, by name
};

struct Violation {
  const Kernel* kernel = nullptr;
  Op op = Op::softmax;
  std::string property;   // a property of the suite (properties.hpp), so the repro line replays it,
                          // or for a GradientRow the check's own name (gradient_checks.hpp)
  props::Case c;          // the offending row and temperature (and the target or g of a gradient op)
  props::CaseResult result;
  std::string context;    // the fuzz case it came from (describe()) and the row index
  std::optional<GradientRow> gradient;  // set for the ops with more inputs than the logits
};

// The `softcheck oracle` line that prints the exact outputs of a gradient
// op's row (--target / --upstream, the row as hex floats), to compare with
// the outputs the report shows; "" for another op or a row the oracle does
// not take (every entry -inf). --dtype f32 for an f32 kernel, else f64: f16
// and bf16 values are exact in f64, whose rounded column it then prints.
std::string oracle_command(const Violation& v);

// Checks `property` on the single row `c` with the property suite, the code
// `softcheck repro` runs: a Violation when the suite agrees that it fails.
std::optional<Violation> confirm(const Kernel& k, Op op, std::string_view property, props::Case c,
                                 std::string context);

// The report printed before aborting (the repro line, then for a gradient
// op the oracle line).
std::string report_text(const Violation& v);

// Prints report_text to stderr and aborts.
[[noreturn]] void report_and_abort(const Violation& v);

}  // namespace softcheck::fuzz
