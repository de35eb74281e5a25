// A confirmed violation of a kernel's declared invariants, and how the fuzz
// targets report it: kernel, op, property, the row as hex floats and the
// `softcheck repro` line, then abort() so that libFuzzer saves the input.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::fuzz {

struct Violation {
  const Kernel* kernel = nullptr;
  Op op = Op::softmax;
  std::string property;   // a property of the suite (properties.hpp), so the repro line replays it
  props::Case c;          // the offending row and temperature
  props::CaseResult result;
  std::string context;    // the fuzz case it came from (describe()) and the row index
};

// Checks `property` on the single row `c` with the property suite, the code
// `softcheck repro` runs: a Violation when the suite agrees that it fails.
std::optional<Violation> confirm(const Kernel& k, Op op, std::string_view property, props::Case c,
                                 std::string context);

// The report printed before aborting (ends with the repro line).
std::string report_text(const Violation& v);

// Prints report_text to stderr and aborts.
[[noreturn]] void report_and_abort(const Violation& v);

}  // namespace softcheck::fuzz
