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
//   cell:F/n    one (family F, row length n) cell against the baseline's: max
//               ULP, error/bound and mean ULP beyond the margin and slack, new
//               NaN/inf, or rows one-sided where they were not (the bias check)
//   bias:F      family F's errors became one-sided (sign test over its rows)
//   reference   the reference rule broke on some row (an entry it judges)
#pragma once

#include <map>
#include <string>
#include <utility>
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
  double margin = 0.10;    // relative growth of max ULP tolerated (overall and per cell)
  double slack_ulp = 0.5;  // plus this many ULP (absorbs growth from ~0)
  // Per cell, error / bound may grow by the margin plus this fraction of the
  // bound, and max and mean ULP by it times the cell's bound: a change of
  // rounding (another summation order) moves a cell's worst error by several
  // times when the error is far below its bound (docs/gate.md, measured).
  double slack_ratio = 0.1;
  // The bias check fails where |z| >= bias_z_threshold now and exceeds the
  // baseline's |z| by bias_z_growth or more (report.hpp ErrorDistribution).
  double bias_z_growth = 3;
  std::vector<ReferenceRule> reference_rules;
};

enum class Outcome { pass, fail, skip };

struct Check {
  std::string kernel, op;  // op: KernelSummary::label() ("op" or "op:output")
  std::string name;  // nonfinite | contract | margin | property:P | reference:R | present | cell:F/n | bias:F | ...
  Outcome outcome = Outcome::pass;
  std::string message;  // what was compared, with the numbers
  std::string repro;    // the command that reruns what failed (cell checks), else empty
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
// Measured wall seconds of the gate's own rerun (`gate --junit-times`): the
// whole rerun, and per (kernel, op label) its kernel calls and comparisons.
struct Timings {
  double total_seconds = 0;
  std::map<std::pair<std::string, std::string>, double> entry_seconds;
};

// JUnit XML: one testcase per (kernel, op, check), a failure's numbers and
// repro line in its body. Without timings it is deterministic (the same
// inputs give the same file byte for byte); with them the testsuites carry
// time="total" and each (kernel, op)'s `contract` testcase, the one that
// stands for running it against the oracle, time="its seconds".
std::string junit_xml(const Result& r, const Timings* timings = nullptr);

}  // namespace softcheck::gate
