#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "softcheck/fnv1a.hpp"
#include "softcheck/fast_oracle.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "suite_state.hpp"

namespace softcheck::suite_state {

namespace {

void add_bin(ErrorBin& into, const ErrorBin& from) {
  into.rows += from.rows;
  into.measured += from.measured;
  into.nonfinite += from.nonfinite;
  into.max_ulp = std::max(into.max_ulp, from.max_ulp);
  into.mean_ulp += from.mean_ulp;
}

void finish_means(std::vector<ErrorBin>& bins) {
  for (ErrorBin& b : bins)
    if (b.measured > 0) b.mean_ulp /= static_cast<double>(b.measured);
}

// The plots' sweeps of one case; `histogram` is the full-width one of the kernel.
void merge_sweeps(KernelSummary& s, UlpHistogram& histogram, const PlannedItem& c, const Accum& a) {
  add_bin(bin_at(s.by_size, static_cast<double>(c.cols)), a.measured_rows);
  add_bin(bin_at(s.by_temperature, c.temperature), a.measured_rows);
  for (const ErrorBin& b : a.by_magnitude) add_bin(bin_at(s.by_magnitude, b.key), b);
  for (std::size_t i = 0; i < histogram.size(); ++i) histogram[i] += a.histogram[i];
}

void finish_sweeps(KernelSummary& s, const UlpHistogram& histogram) {
  finish_means(s.by_size);
  finish_means(s.by_temperature);
  finish_means(s.by_magnitude);
  std::size_t used = histogram.size();
  while (used > 0 && histogram[used - 1] == 0) --used;  // trailing empty bins dropped
  s.ulp_histogram.assign(histogram.begin(), histogram.begin() + static_cast<std::ptrdiff_t>(used));
}

// Sums of an ErrorDistribution before finish_distribution divides them.
void add_distribution(ErrorDistribution& d, const Accum& a) {
  d.measured += a.measured;
  d.mean_signed_ulp += a.sum_signed_ulp;
  d.mean_signed_rel += a.sum_signed_rel;
  d.above += a.above;
  d.below += a.below;
  d.rows_above += a.rows_above;
  d.rows_below += a.rows_below;
}

// The mean signed relative error divides by the outputs with v != 0 (rel_measured).
void finish_distribution(ErrorDistribution& d, std::uint64_t rel_measured, const detail::QuantileSketch& ulps,
                         const detail::QuantileSketch& ratios, double max_ulp, double max_ratio) {
  if (d.measured > 0) d.mean_signed_ulp /= static_cast<double>(d.measured);
  if (rel_measured > 0) d.mean_signed_rel /= static_cast<double>(rel_measured);
  d.p50_ulp = ulps.quantile(0.5);
  d.p99_ulp = ulps.quantile(0.99);
  d.max_ulp = max_ulp;
  d.p50_ratio = ratios.quantile(0.5);
  d.p99_ratio = ratios.quantile(0.99);
  d.max_ratio = max_ratio;
}

// The case's (family, cols) cell, appended in case order when new.
CellSummary& cell_at(std::vector<CellSummary>& cells, const PlannedItem& c) {
  for (CellSummary& cell : cells)
    if (cell.family == c.family && cell.cols == c.cols) return cell;
  CellSummary fresh;
  fresh.family = c.family;
  fresh.cols = c.cols;
  return cells.emplace_back(std::move(fresh));
}

// mean_ulp and mean_signed_ulp hold sums until finish_cells.
void add_cell(CellSummary& cell, const Accum& a) {
  cell.rows += a.rows;
  cell.measured += a.measured;
  cell.nonfinite += a.nonfinite;
  cell.violations += a.violated_rows;
  cell.max_ulp = std::max(cell.max_ulp, a.max_ulp);
  cell.mean_ulp += a.sum_ulp;
  cell.max_ratio = std::max(cell.max_ratio, a.max_bound_ratio);
  cell.mean_signed_ulp += a.sum_signed_ulp;
  cell.rows_above += a.rows_above;
  cell.rows_below += a.rows_below;
  cell.bound = std::min(cell.bound, a.min_bound);
}

double max_cell_ratio(const std::vector<CellSummary>& cells, const std::string& family) {
  double m = 0;
  for (const CellSummary& cell : cells)
    if (cell.family == family) m = std::max(m, cell.max_ratio);
  return m;
}

void finish_cells(std::vector<CellSummary>& cells) {
  for (CellSummary& cell : cells)
    if (cell.measured > 0) {
      cell.mean_ulp /= static_cast<double>(cell.measured);
      cell.mean_signed_ulp /= static_cast<double>(cell.measured);
    }
}

void merge(KernelSummary& s, FamilySummary& fam, const Accum& a) {
  s.cases++;
  s.rows += a.rows;
  s.elements += a.elements;
  s.measured += a.measured;
  s.max_ulp = std::max(s.max_ulp, a.max_ulp);
  s.mean_ulp += a.sum_ulp;   // divided by measured at the end
  s.max_bits = std::max(s.max_bits, a.max_bits);
  s.mean_bits += a.sum_bits;
  s.max_rel = std::max(s.max_rel, a.max_rel);
  s.max_normwise = std::max(s.max_normwise, a.max_normwise);
  s.max_bound_ratio = std::max(s.max_bound_ratio, a.max_bound_ratio);
  s.unbounded_rows += a.unbounded_rows;
  s.nonfinite += a.nonfinite;
  s.special_mismatch += a.special_mismatch;
  s.false_zeros += a.false_zeros;
  s.false_nonzeros += a.false_nonzeros;
  s.contract_violations += a.contract_violations;
  s.policy_rows += a.policy_rows;
  s.policy_violations += a.policy_violations;
  s.floor_violations += a.floor_violations;
  s.reference.rows += a.reference_rows;
  s.reference.violations += a.reference_violations;
  s.reference.max_ratio = std::max(s.reference.max_ratio, a.reference_max_ratio);
  s.conditional.rows += a.conditional_rows;
  s.conditional.broken += a.conditional_broken;
  s.conditional.max_error = std::max(s.conditional.max_error, a.conditional_max);
  s.mass.rows += a.mass_rows;
  s.mass.mean_error += a.mass_sum;  // a sum until finish_report divides it
  s.mass.max_lost = std::max(s.mass.max_lost, a.mass_max_lost);
  s.mass.max_gained = std::max(s.mass.max_gained, a.mass_max_gained);
  fam.rows += a.rows;
  fam.max_ulp = std::max(fam.max_ulp, a.max_ulp);
  fam.nonfinite += a.nonfinite;
  fam.violations += a.violated_rows;
  add_distribution(s.distribution, a);
  add_distribution(fam.distribution, a);
}

// The status of an entry that ran (an unavailable one keeps its own).
std::string status_of(const KernelSummary& s) {
  if (s.contract_violations > 0 || s.policy_violations > 0 || s.floor_violations > 0 || s.reference.violations > 0)
    return "violated";
  return s.contract_declared ? "held" : "no_contract";
}

}  // namespace

const Accum* worst_accum(const SuiteState& state, std::size_t target) {
  double worst_key = -1;
  const Accum* worst = nullptr;
  for (std::size_t i = 0; i < state.items.size(); ++i) {
    if (!state.ran[i]) continue;
    const auto& tis = state.items[i].targets;
    const auto pos = std::find(tis.begin(), tis.end(), target);
    if (pos == tis.end()) continue;
    const Accum& a = state.results[i].acc[static_cast<std::size_t>(pos - tis.begin())];
    if (a.worst.present && a.worst_key > worst_key) {  // strictly larger: the first worst wins (determinism)
      worst_key = a.worst_key;
      worst = &a;
    }
  }
  return worst;
}

void resolve_worst_texts(SuiteState& state, const std::vector<KernelSummary>& entries, unsigned oracle_bits) {
  // The double-double tier of the last worst row: entries next to each other
  // often share one (a kernel's softmax and log-softmax).
  oracle::DDFastRow tier;
  const std::vector<double>* tier_row = nullptr;
  double tier_temperature = 0;
  for (std::size_t ti = 0; ti < entries.size(); ++ti)
    if (const Accum* w = worst_accum(state, ti); w && w->worst_text_pending) {
      Accum& a = const_cast<Accum&>(*w);  // state is ours to change
      const OutputKind kind = output_operand(entries[ti].op, entries[ti].output)->kind;
      const auto element = static_cast<std::size_t>(a.worst.element);
      if (tier_row != a.worst_row.get() || tier_temperature != a.worst.temperature) {
        oracle::dd_fast_row(*a.worst_row, a.worst.temperature, tier);
        tier_row = a.worst_row.get();
        tier_temperature = a.worst.temperature;
      }
      // The same text as MPFR's where the double-double tier decides every
      // digit (exact_text_fast): this loop runs on one thread after the
      // suite's, and MPFR on the quick suite's 65,536-entry rows was most of it.
      if (std::optional<std::string> text = oracle::exact_text_fast(tier, kind, element, 21, oracle_bits)) {
        a.worst.exact = std::move(*text);
      } else {
        const oracle::ExactRow exact = oracle::exact_row(*a.worst_row, a.worst.temperature, oracle_bits);
        a.worst.exact = oracle::to_string(oracle::exact_values(exact, kind)[element], 21);
      }
      a.worst_text_pending = false;
    }
  for (CaseResult& r : state.results)
    for (Accum& a : r.acc) {
      a.worst_text_pending = false;  // no longer any entry's worst case
      a.worst_row.reset();
    }
}

void finish_report(Report& report, const SuiteState& state, std::vector<double>* entry_seconds) {
  const std::vector<PlannedItem>& items = state.items;
  std::uint64_t inputs = fnv1a64_start;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (state.ran[i]) {
      report.oracle.rows += state.results[i].oracle_rows;
      report.oracle.mpfr_rows += state.results[i].mpfr_rows;
      // In item order, whichever thread or shard ran the item: the item's
      // index and its case's hash, each as 8 little-endian bytes.
      unsigned char bytes[16];
      for (int b = 0; b < 8; ++b) {
        bytes[b] = static_cast<unsigned char>(static_cast<std::uint64_t>(i) >> (8 * b));
        bytes[8 + b] = static_cast<unsigned char>(state.results[i].inputs_fnv >> (8 * b));
      }
      inputs = fnv1a64_add(inputs, bytes);
    }
  report.inputs_digest = fnv1a64_text(inputs);
  if (entry_seconds != nullptr) entry_seconds->assign(report.kernels.size(), 0);
  for (std::size_t ti = 0; ti < report.kernels.size(); ++ti) {
    KernelSummary& s = report.kernels[ti];
    UlpHistogram histogram{};
    std::map<std::string, std::size_t> family_slot;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!state.ran[i]) continue;
      const auto& tis = items[i].targets;
      const auto pos = std::find(tis.begin(), tis.end(), ti);
      if (pos == tis.end()) continue;
      const Accum& a = state.results[i].acc[static_cast<std::size_t>(pos - tis.begin())];
      const std::string& fam = items[i].family;
      auto [it, fresh] = family_slot.try_emplace(fam, s.by_family.size());
      if (fresh) s.by_family.emplace_back().family = fam;
      merge(s, s.by_family[it->second], a);
      if (entry_seconds != nullptr) (*entry_seconds)[ti] += a.seconds;
      add_cell(cell_at(s.cells, items[i]), a);
      merge_sweeps(s, histogram, items[i], a);
    }
    if (const Accum* w = worst_accum(state, ti)) {
      if (w->worst_text_pending) throw std::logic_error("finish_report: the worst case's exact text was not resolved");
      s.worst = w->worst;
    }
    if (s.mass.rows > 0) s.mass.mean_error /= static_cast<double>(s.mass.rows);
    if (s.measured > 0) {
      s.mean_ulp /= static_cast<double>(s.measured);
      s.mean_bits /= static_cast<double>(s.measured);
    }
    finish_sweeps(s, histogram);
    finish_cells(s.cells);
    Sketches all;
    for (FamilySummary& fam : s.by_family) {
      static const Sketches none;
      const auto found = state.sketches[ti].find(fam.family);
      const Sketches& f = found == state.sketches[ti].end() ? none : found->second;
      finish_distribution(fam.distribution, f.rel_measured, f.ulp, f.ratio, fam.max_ulp,
                          max_cell_ratio(s.cells, fam.family));
      all.ulp.merge(f.ulp);
      all.ratio.merge(f.ratio);
      all.rel_measured += f.rel_measured;
    }
    finish_distribution(s.distribution, all.rel_measured, all.ulp, all.ratio, s.max_ulp, s.max_bound_ratio);
    if (s.status != "unavailable") s.status = status_of(s);
  }
}

}  // namespace softcheck::suite_state
