// The regression gate (docs/gate.md): a report compared with a stored
// baseline, kernel by kernel (matched by kernel name and op). A check fails on
//   nonfinite   NaN/inf results where the baseline had none
//   contract    the kernel's status is "violated" (max ULP above its contract,
//               NaN/inf on finite input, or its masked-row policy broken)
//   margin      max ULP above baseline * (1 + margin) + slack_ulp
//   property:P  property P passed in the baseline and fails now (or fails
//               with no baseline verdict)
//   reference:R max ULP above k * (max ULP of reference kernel R in the same
//               format and op) + slack_ulp (FlashAttention's rule), optional
//   present     a kernel of the baseline is missing from the report
#pragma once

#include <string>
#include <vector>

#include "softcheck/report.hpp"

namespace softcheck::gate {

struct ReferenceRule {
  std::string kernel;  // e.g. "shifted_f32": applies to every kernel of its format and op
  double k = 2;
};

// "KERNEL:K" (K finite, >= 1). Throws std::invalid_argument with the reason.
ReferenceRule parse_reference_rule(const std::string& text);

struct Options {
  double margin = 0.10;    // relative growth of max ULP tolerated
  double slack_ulp = 0.5;  // plus this many ULP (absorbs growth from ~0)
  std::vector<ReferenceRule> reference_rules;
};

enum class Outcome { pass, fail, skip };

struct Check {
  std::string kernel, op;  // op: KernelSummary::label() ("op" or "op:output")
  std::string name;  // nonfinite | contract | margin | property:P | reference:R | present
  Outcome outcome = Outcome::pass;
  std::string message;  // what was compared, with the numbers
};

// One line of the diff table: a (kernel, op) in the report, the baseline or both.
struct DiffRow {
  std::string kernel, op, format;  // op: KernelSummary::label()
  bool in_baseline = false, in_report = false;
  double base_max_ulp = 0, new_max_ulp = 0;
  std::uint64_t base_nonfinite = 0, new_nonfinite = 0;
  std::string base_status, new_status;
};

struct Result {
  std::vector<Check> checks;     // in report order, then kernels missing from it
  std::vector<DiffRow> rows;
  std::vector<std::string> notes;  // e.g. the runs used different settings
  bool passed() const;
  std::size_t count(Outcome o) const;
};

// Throws std::invalid_argument when a reference rule names a kernel that is
// not in the report (a harness error, not a regression).
Result compare(const Report& baseline, const Report& report, const Options& opt);

// Human output: the diff table, then every failed check with its numbers.
std::string diff_table(const Result& r);
// JUnit XML: one testcase per (kernel, op, check); deterministic (no times).
std::string junit_xml(const Result& r);

}  // namespace softcheck::gate
