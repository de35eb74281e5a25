// The run report: one data model, written as report.json (the single source,
// schema documented in docs/report-schema.md) and report.md. Files are written
// atomically: all of a report or none of it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace softcheck {

inline constexpr int report_schema_version = 1;

// The row that gave a kernel its largest error relative to its bound.
struct WorstCase {
  bool present = false;
  std::string family;
  std::int64_t cols = 0;
  double temperature = 1;
  std::int64_t row = 0;      // row index within the case
  std::int64_t element = 0;  // element index within the row
  double got = 0;            // kernel's output (NaN/inf allowed)
  std::string exact;         // oracle value, decimal, 21 digits
  double ulp = 0;
  double bound = 0;          // +inf: bound vacuous or no contract
  std::string input;         // the row as hex floats (only rows of <= 64 entries)
  std::string repro;         // command line that reruns exactly that case
};

struct FamilySummary {
  std::string family;
  std::uint64_t rows = 0;
  double max_ulp = 0;
  std::uint64_t nonfinite = 0;
  std::uint64_t violations = 0;  // rows breaking the contract or the masked-row policy
};

// Verdict of one property (properties/, issue 3) for one (kernel, op).
struct PropertySummary {
  std::string property;
  std::string verdict;  // passed | failed | not_claimed
  std::string detail;   // why not claimed, or the failure (measured vs allowed)
  std::string repro;    // for failures: the command that replays the shrunk case
  std::uint64_t tests = 0;
};

struct KernelSummary {
  std::string kernel, algorithm, format, op, masked_policy, description;
  bool contract_declared = false;
  std::string contract_formula;  // "none" when not declared
  std::string contract_why;
  std::string status;  // held | violated | no_contract | unavailable
  std::string unavailable_reason;
  std::uint64_t cases = 0, rows = 0, elements = 0, measured = 0;
  double max_ulp = 0, mean_ulp = 0, max_bits = 0, mean_bits = 0, max_rel = 0, max_normwise = 0;
  double max_bound_ratio = 0;  // max over rows of max_ulp / bound (contract kernels)
  std::uint64_t nonfinite = 0, special_mismatch = 0;
  std::uint64_t contract_violations = 0, policy_violations = 0, policy_rows = 0;
  WorstCase worst;
  std::vector<FamilySummary> by_family;
  std::vector<PropertySummary> properties;  // empty when properties were not run
};

struct Report {
  std::string tool_version;
  std::string suite;
  std::uint64_t seed = 0;
  unsigned oracle_bits = 0;
  std::vector<std::string> families;
  std::vector<std::int64_t> sizes;
  std::vector<double> temperatures;
  std::vector<KernelSummary> kernels;
  // Overall verdict: every kernel with a contract held it and every policy held.
  bool all_held() const;
};

std::string to_json(const Report& r);      // pretty, deterministic, newline-terminated
std::string to_markdown(const Report& r);  // human summary

// Throws std::runtime_error with a clear message when the directory cannot be
// created or written. Call before a long run to fail early.
void ensure_writable_dir(const std::filesystem::path& dir);

// Writes every (path, content) pair or none: each goes to a temporary file in
// the same directory first, then all are renamed into place. On any error the
// temporaries are removed and std::runtime_error is thrown.
void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

}  // namespace softcheck
