// The state of a suite run between running its cases and writing its report:
// per (case, target) accumulators and per (target, family) percentile
// sketches. run_suite fills it and finishes the report from it; a shard of a
// run (docs/scaling.md) writes it into its report.json, and merging the
// shards' states finishes the report the unsharded run would have written,
// byte for byte (finish_report adds the cases' sums in case order, whatever
// machine ran them).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quantile_sketch.hpp"
#include "softcheck/report.hpp"

namespace softcheck::suite_state {

// The bin with this key, inserted in ascending key order when new.
inline ErrorBin& bin_at(std::vector<ErrorBin>& bins, double key) {
  const auto it = std::lower_bound(bins.begin(), bins.end(), key,
                                   [](const ErrorBin& b, double k) { return b.key < k; });
  if (it != bins.end() && it->key == key) return *it;
  ErrorBin fresh;
  fresh.key = key;
  return *bins.insert(it, fresh);
}

using UlpHistogram = std::array<std::uint64_t, ulp_histogram_bins>;

// Per (case, target) accumulation; merged into KernelSummary in case order.
struct Accum {
  std::uint64_t rows = 0, elements = 0, measured = 0;
  double max_ulp = 0, sum_ulp = 0, max_bits = 0, sum_bits = 0, max_rel = 0, max_normwise = 0;
  double max_bound_ratio = 0;
  // Rows whose contract bound is infinite (K u >= 1: the bound's formula
  // gives no finite figure there): measured, never checked against a bound.
  std::uint64_t unbounded_rows = 0;
  std::uint64_t nonfinite = 0, special_mismatch = 0, contract_violations = 0;
  std::uint64_t false_zeros = 0, false_nonzeros = 0;
  std::uint64_t policy_rows = 0, policy_violations = 0;
  std::uint64_t floor_violations = 0;
  double worst_key = -1;
  WorstCase worst;
  // The fast tiers cannot print the exact value to 21 digits (long double
  // holds about 19, double 17): the worst row is kept and its text computed with MPFR
  // once, for the kernel's final worst case (run_suite). The targets of a
  // case whose worst case is the same row share one copy of it (run_case).
  bool worst_text_pending = false;
  std::shared_ptr<const std::vector<double>> worst_row;
  // Bias and distribution (report.hpp ErrorDistribution); the sketches are
  // moved into the run's per-family ones as soon as the case is done.
  double sum_signed_ulp = 0, sum_signed_rel = 0;
  std::uint64_t rel_measured = 0, above = 0, below = 0, rows_above = 0, rows_below = 0;
  detail::QuantileSketch ulp_sketch, ratio_sketch;
  // The reference rule: rows it judged, rows that broke it, max error / allowed.
  std::uint64_t reference_rows = 0, reference_violations = 0;
  double reference_max_ratio = 0;
  // The probability mass of a probability row (report.hpp MassSummary):
  // rows with every output finite, the sum of their sum(y) - 1, the largest
  // loss and gain.
  std::uint64_t mass_rows = 0;
  double mass_sum = 0, mass_max_lost = 0, mass_max_gained = 0;
  // The conditional mode (report.hpp ConditionalError).
  std::uint64_t conditional_rows = 0, conditional_broken = 0;
  double conditional_max = 0;
  double min_bound = INFINITY;  // over the measured rows (contract outputs)
  double seconds = 0;  // wall time of its kernel calls and comparisons (RunOptions::entry_seconds only)
  // Rows that broke anything (contract, policy, floor, reference rule): each once.
  std::uint64_t violated_rows = 0;
  std::uint64_t violations() const { return contract_violations + policy_violations + floor_violations + reference_violations; }
  ErrorBin measured_rows;              // rows with a finite entry (the case's size and temperature bin)
  std::vector<ErrorBin> by_magnitude;  // by decade of max |x/T|
  UlpHistogram histogram{};
};

struct CaseResult {
  std::vector<Accum> acc;  // one per target
  std::uint64_t oracle_rows = 0, mpfr_rows = 0;
  // FNV-1a 64 of the case's input operands as the kernels got them (the
  // packed rows, targets, upstream gradients, q, K, V, windows): the report's
  // inputs digest folds these in item order (finish_report).
  std::uint64_t inputs_fnv = 0;
  std::string rows_csv;  // RunOptions::rows_csv's lines of this case
};

// Per target and family: the sketches of the percentiles (merging commutes:
// the same for any --jobs and any split into shards).
struct Sketches {
  detail::QuantileSketch ulp, ratio;
  std::uint64_t rel_measured = 0;
};

// A work item of the run: one case of one format, and the targets (report
// entries, by index) judged on it.
struct PlannedItem {
  std::string family;
  std::int64_t cols = 0;
  double temperature = 1;
  std::vector<std::size_t> targets;
};

struct SuiteState {
  std::vector<PlannedItem> items;
  std::vector<CaseResult> results;  // one per item
  std::vector<char> ran;            // per item: its result is here (a shard runs some)
  std::vector<std::map<std::string, Sketches>> sketches;  // per target, by family
};

// The accumulator holding target's worst case: the first, in item order, of
// the largest key; nullptr when no item of the target has one.
const Accum* worst_accum(const SuiteState& state, std::size_t target);

// The fast tiers keep a worst row rather than its exact text (they cannot
// print 21 digits): MPFR at oracle_bits gives the text of each entry's worst
// case (entries: report.kernels, for each target's output), and every kept
// row is dropped. A shard does this before writing its state: its worst
// case is the only one of its items the merged report can show.
void resolve_worst_texts(SuiteState& state, const std::vector<KernelSummary>& entries, unsigned oracle_bits);

// report.kernels holds one entry per target, as described before the run
// (its status "unavailable" for a kernel that was not run, else empty);
// finish_report adds every item that ran, in item order, and sets the
// oracle's row counts and each entry's status. Call resolve_worst_texts first.
// entry_seconds (may be null): per entry, the seconds of its items.
void finish_report(Report& report, const SuiteState& state, std::vector<double>* entry_seconds);

// The state as compact JSON text (every double exact, as a hex float), and
// back. state_from_json throws ReportFormatError naming what is wrong.
std::string state_to_json(const SuiteState& state);
SuiteState state_from_json(std::string_view text);

}  // namespace softcheck::suite_state
