#include <fmt/format.h>

#include <cmath>

#include "softcheck/report.hpp"
#include "perf_grid.hpp"
#include "text.hpp"

namespace softcheck {

namespace {

using text::num;

// One short word a reader can scan for; NaN/inf is called out even for a
// kernel without a contract (that is how `naive` gets flagged).
std::string verdict(const KernelSummary& k) {
  if (k.status == "unavailable") return "UNAVAILABLE: " + k.unavailable_reason;
  std::string v = k.status == "held" ? "held" : k.status == "violated" ? "**VIOLATED**" : "no contract";
  if (k.nonfinite > 0) v += fmt::format(" (FLAGGED: {} NaN/inf)", k.nonfinite);
  return v;
}

void summary_table(std::string& out, const Report& r) {
  out += "| kernel | op | format | cases | max ULP | mean ULP | max bits | max normwise | NaN/inf | "
         "contract | verdict |\n";
  out += "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  for (const KernelSummary& k : r.kernels)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | `{}` | {} |\n", k.kernel, k.op,
                       k.format, k.cases, num(k.max_ulp), num(k.mean_ulp), num(k.max_bits),
                       k.op == "softmax" ? num(k.max_normwise) : std::string("n/a"), k.nonfinite, k.contract_formula, verdict(k));
}

void kernel_section(std::string& out, const KernelSummary& k) {
  out += fmt::format("\n### {} ({})\n\n{}\n\n", k.kernel, k.op, k.description);
  out += fmt::format("- masked-row policy: `{}` ({} fully masked rows, {} policy violations)\n",
                     k.masked_policy, k.policy_rows, k.policy_violations);
  out += fmt::format("- contract: `{}` — {}\n", k.contract_formula, k.contract_why);
  if (k.status == "unavailable") {
    out += fmt::format("- **not run**: {}\n", k.unavailable_reason);
    return;
  }
  out += fmt::format("- rows {}, elements {} ({} measured), contract violations {}, largest error/bound {}\n",
                     k.rows, k.elements, k.measured, k.contract_violations, num(k.max_bound_ratio));
  if (is_sparse_op_name(k.op))
    out += fmt::format("- support against the oracle's: {} false zeros, {} false non-zeros (not in the ULP "
                       "figures, which cover entries both put on the support)\n",
                       k.false_zeros, k.false_nonzeros);
  if (k.worst.present) {
    const WorstCase& w = k.worst;
    out += fmt::format("- worst: family `{}`, n = {}, T = {}, row {}, element {}: got {}, exact {}, {} ULP (bound {})\n",
                       w.family, w.cols, num(w.temperature), w.row, w.element, num(w.got), w.exact,
                       num(w.ulp), num(w.bound));
    if (!w.input.empty()) out += fmt::format("  - input: `{}`\n", w.input);
    out += fmt::format("  - repro: `{}`\n", w.repro);
  }
  out += "\n| family | rows | max ULP | NaN/inf | violations |\n|---|---:|---:|---:|---:|\n";
  for (const FamilySummary& f : k.by_family)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", f.family, f.rows, num(f.max_ulp), f.nonfinite,
                       f.violations);
}

void performance_table(std::string& out, const Performance& p) {
  out += fmt::format("\n## Performance\n\nGoogle Benchmark on {} ({} CPUs, {} MHz), {} s per benchmark. "
                     "Bytes count input and output, per wall-clock second; the percentage is the fraction of "
                     "memcpy's bandwidth for as many bytes, measured in the same run.\n\n",
                     p.host, p.cpus, num(p.mhz_per_cpu), num(p.min_time));
  const PerfGrid g = perf_grid(p);
  out += "GB/s (fraction of copy) per shape, rows x cols:\n\n| kernel | op | format |";
  std::string rule = "|---|---|---|";
  for (const auto& [rows, cols] : g.shapes) out += fmt::format(" {} x {} |", rows, cols), rule += "---:|";
  out += "\n" + rule + "\n";
  for (const PerfGrid::Row& row : g.rows) {
    out += fmt::format("| {} | {} | {} |", row.kernel, row.op, row.format);
    for (const BenchResult* b : row.cells)
      out += b ? fmt::format(" {:.2f} ({:.0f}%) |", b->bytes_per_second / 1e9, 100 * b->copy_fraction()) : " |";
    out += "\n";
  }
}

}  // namespace

std::string to_markdown(const Report& r) {
  std::string out = "# softcheck report\n\n";
  out += fmt::format("softcheck {}, suite `{}`, seed {}, oracle MPFR {} bits. Verdict: **{}**.\n\n",
                     r.tool_version, r.suite, r.seed, r.oracle_bits,
                     r.all_held() ? "every declared contract held" : "a declared contract was violated");
  if (!r.oracle.mode.empty())
    out += fmt::format("Oracle: {}; {} of {} compared rows used MPFR{}.\n\n", r.oracle.mode, r.oracle.mpfr_rows,
                       r.oracle.rows, r.oracle.mode == "tiered" ? " (fast-tier fallbacks, f64 rows and rows of sparse ops included)" : "");
  out += "ULP errors are componentwise, in the kernel's output format, against the correctly "
         "computed value (docs/oracle.md). NaN/inf outputs where the exact value is finite are "
         "counted separately and never averaged.\n\n## Summary\n\n";
  summary_table(out, r);
  out += "\n## Kernels\n";
  for (const KernelSummary& k : r.kernels) kernel_section(out, k);
  if (r.performance.present) performance_table(out, r.performance);
  return out;
}

}  // namespace softcheck
