#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "softcheck/report.hpp"
#include "perf_grid.hpp"
#include "text.hpp"

namespace softcheck {

namespace {

using text::num;

bool ascii_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Line breaks and other control characters as spaces (a newline would end a
// table row or start a new block); CR LF as one space.
std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  }
  return out;
}

// Text that comes from a plugin, the user or a report file (names,
// descriptions, reasons, "why" texts), as literal inline Markdown, the way
// the HTML report escapes it for HTML: no markup, links, raw HTML or table
// cells of its own, on one line (one_line). '_' between two letters or digits
// cannot open or close emphasis, so `shifted_f32` stays as it reads; '>' is
// markup only at the start of a block (md_paragraph escapes it there) or
// closing an HTML tag or autolink, which '<' escaped cannot open, so
// `mxfp8_e4m3->f32` stays as it reads too.
std::string md(std::string_view text) {
  const std::string s = one_line(text);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '_') {
      const bool intraword = i > 0 && i + 1 < s.size() && ascii_alnum(s[i - 1]) && ascii_alnum(s[i + 1]);
      out += intraword ? "_" : "\\_";
    } else if (std::string_view("\\`*[]|~$").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

// md() for text that starts a line (a paragraph of its own): also no heading,
// list, quote, thematic break or indented code block from its first characters.
std::string md_paragraph(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  std::string out = md(s);
  std::size_t digits = 0;
  while (digits < out.size() && out[digits] >= '0' && out[digits] <= '9') ++digits;
  if (digits > 0 && digits < out.size() && (out[digits] == '.' || out[digits] == ')'))
    out.insert(digits, "\\");  // "1. " would start an ordered list
  else if (!out.empty() && std::string_view("#-+=>").find(out.front()) != std::string_view::npos)
    out.insert(0, "\\");
  return out;
}

// A code span whose content is shown verbatim whatever backticks it holds:
// the fence is one backtick longer than the longest run inside. In a table
// cell '|' still ends the cell inside a code span (GFM), so it is escaped there.
std::string md_code(std::string_view text, bool in_table) {
  std::string body;
  std::size_t run = 0, longest = 0;
  for (const char c : one_line(text)) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|' && in_table) {
      body += "\\|";
    } else {
      body += c;
    }
  }
  if (body.empty()) return "";
  const std::string fence(longest + 1, '`');
  const bool pad = body.front() == '`' || body.back() == '`' || body.front() == ' ' || body.back() == ' ';
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

// One short word a reader can scan for; NaN/inf is called out even for a
// kernel without a contract (that is how `naive` gets flagged).
std::string verdict(const KernelSummary& k) {
  if (k.status == "unavailable") return "UNAVAILABLE: " + md(k.unavailable_reason);
  std::string v = k.status == "held" ? "held" : k.status == "violated" ? "**VIOLATED**" : "no contract";
  if (k.nonfinite > 0) v += fmt::format(" (FLAGGED: {} NaN/inf)", k.nonfinite);
  return v;
}

void summary_table(std::string& out, const Report& r) {
  out += "| kernel | op | format | cases | max ULP | mean ULP | max bits | max normwise | NaN/inf | "
         "contract | verdict |\n";
  out += "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  for (const KernelSummary& k : r.kernels)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md(k.kernel), md(k.label()),
                       md(k.format_label()), k.cases, num(k.max_ulp), num(k.mean_ulp), num(k.max_bits),
                       has_normwise(k.op, k.output) ? num(k.max_normwise) : std::string("n/a"), k.nonfinite,
                       md_code(k.contract_formula, true), verdict(k));
  const auto any_in = [&](Metric m) {
    return std::any_of(r.kernels.begin(), r.kernels.end(), [m](const KernelSummary& k) { return has_metric(m, k.op, k.output); });
  };
  if (any_in(Metric::absolute))
    out += "\nFor " + metric_outputs(Metric::absolute) + " the ULP columns and the contract hold the absolute error in units of u "
           "(2^-24 for f32, 2^-53 for f64): |got - exact| / u (the op table's metric; docs/ops.md).\n";
  if (any_in(Metric::scaled))
    out += "\nFor " + scaled_metric_outputs() + " the ULP columns and the contract hold the scaled error "
           "|got - exact| / max(u s, denorm_min) (docs/gradients.md).\n";
}

// The bias and distribution table (report.hpp ErrorDistribution): one line
// per entry, for the summary.
std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? std::string("n/a") : fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string bias_text(const ErrorDistribution& d) {
  return fmt::format("{:.1f}{}", d.bias_z(), d.biased() ? " **BIASED**" : "");
}

void distribution_table(std::string& out, const Report& r) {
  out += "\n## Bias and distribution\n\nSigned error (r - exact) / ulp averaged over the measured outputs; "
         "above / below: outputs at least 1/2 ulp above / below the exact value (not correctly rounded); "
         "percentiles of |error| and of |error| / bound (each within 3.1 % above the true percentile, "
         "docs/report-schema.md); z: the sign test over rows, flagged BIASED at |z| >= " +
         num(bias_z_threshold) + ".\n\n";
  out += "| kernel | op | mean signed ULP | mean signed rel | above | below | p50 ULP | p99 ULP | max ULP | "
         "p99 err/bound | bias z |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const KernelSummary& k : r.kernels) {
    if (k.status == "unavailable") continue;
    const ErrorDistribution& d = k.distribution;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md(k.kernel), md(k.label()),
                       num(d.mean_signed_ulp), num(d.mean_signed_rel), percent(d.above, d.measured),
                       percent(d.below, d.measured), num(d.p50_ulp), num(d.p99_ulp), num(d.max_ulp),
                       k.contract_declared ? num(d.p99_ratio) : std::string("n/a"), bias_text(d));
  }
}

// Probability outputs: sum(y) - 1 per row (report.hpp MassSummary).
void mass_table(std::string& out, const Report& r) {
  if (std::none_of(r.kernels.begin(), r.kernels.end(), [](const KernelSummary& k) { return k.mass.rows > 0; }))
    return;
  out += "\n## Probability mass\n\nPer row of a probability output with every value finite, sum(y) - 1 (the "
         "exact row sums to 1); measured, never gated: every output can be within its bound while the row loses "
         "mass (P cast to E4M3 drops each probability below 2^-10).\n\n"
         "| kernel | op | format | rows | max lost | max gained | mean sum(y) - 1 |\n"
         "|---|---|---|---:|---:|---:|---:|\n";
  for (const KernelSummary& k : r.kernels)
    if (k.mass.rows > 0)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", md(k.kernel), md(k.label()), md(k.format_label()),
                         k.mass.rows, num(k.mass.max_lost), num(k.mass.max_gained), num(k.mass.mean_error));
}

void kernel_section(std::string& out, const KernelSummary& k) {
  out += fmt::format("\n### {} ({})\n\n{}\n\n", md(k.kernel), md(k.label()), md_paragraph(k.description));
  out += fmt::format("- masked-row policy: {} ({} fully masked rows, {} policy violations)\n",
                     md_code(k.masked_policy, false), k.policy_rows, k.policy_violations);
  out += fmt::format("- contract: {} — {}\n", md_code(k.contract_formula, false), md(k.contract_why));
  if (k.status == "unavailable") {
    out += fmt::format("- **not run**: {}\n", md(k.unavailable_reason));
    return;
  }
  out += fmt::format("- rows {}, elements {} ({} measured), contract violations {}, largest error/bound {}\n",
                     k.rows, k.elements, k.measured, k.contract_violations, num(k.max_bound_ratio));
  if (k.unbounded_rows > 0)
    out += fmt::format("- **{}**; their errors count in the figures above, the verdict covers the other rows\n",
                       k.unchecked_rows());
  if (k.floor_checked)
    out += k.floor_opt_out.empty()
               ? fmt::format("- floor (no contract): {} rows the format holds with NaN/inf where the exact value "
                             "is finite\n",
                             k.floor_violations)
               : fmt::format("- floor (no contract): no_nonfinite opted out: {}\n", md(k.floor_opt_out));
  if (k.reference.present())
    out += k.reference.kernel.empty()
               ? fmt::format("- reference rule: not applied: {}\n", md(k.reference.not_applied))
               : fmt::format("- reference rule against {}: {} of {} rows above the allowed error, largest "
                             "error / allowed {}\n",
                             md_code(k.reference.kernel, false), k.reference.violations, k.reference.rows,
                             num(k.reference.max_ratio));
  if (k.conditional.present)
    out += fmt::format("- conditional mode (dx against the exact backward of the kernel's own y, the forward's "
                       "error taken as given): max error {} on {} rows, {} rows with NaN/inf or a wrong special "
                       "value; end to end: max error {}\n",
                       num(k.conditional.max_error), k.conditional.rows, k.conditional.broken, num(k.max_ulp));
  if (is_sparse_op_name(k.op))
    out += fmt::format("- support against the oracle's: {} false zeros, {} false non-zeros (not in the ULP "
                       "figures, which cover entries both put on the support)\n",
                       k.false_zeros, k.false_nonzeros);
  if (k.worst.present) {
    const WorstCase& w = k.worst;
    out += fmt::format("- worst: family {}, n = {}, T = {}, row {}, element {}: got {}, exact {}, {} ULP (bound {})\n",
                       md_code(w.family, false), w.cols, num(w.temperature), w.row, w.element, num(w.got),
                       md(w.exact), num(w.ulp), num(w.bound));
    if (!w.input.empty()) out += fmt::format("  - input: {}\n", md_code(w.input, false));
    out += fmt::format("  - repro: {}\n", md_code(w.repro, false));
  }
  out += "\n| family | rows | max ULP | p99 ULP | mean signed ULP | p99 err/bound | bias z | NaN/inf | violations |\n"
         "|---|---:|---:|---:|---:|---:|---|---:|---:|\n";
  for (const FamilySummary& f : k.by_family)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md(f.family), f.rows, num(f.max_ulp),
                       num(f.distribution.p99_ulp), num(f.distribution.mean_signed_ulp),
                       k.contract_declared ? num(f.distribution.p99_ratio) : std::string("n/a"),
                       bias_text(f.distribution), f.nonfinite, f.violations);
}

void performance_table(std::string& out, const Performance& p) {
  out += fmt::format("\n## Performance\n\nGoogle Benchmark on {} ({} CPUs, {} MHz), {} s per benchmark. "
                     "Bytes count input and output, per wall-clock second; the percentage is the fraction of "
                     "memcpy's bandwidth for as many bytes, measured in the same run.\n\n",
                     md(p.host), p.cpus, num(p.mhz_per_cpu), num(p.min_time));
  const PerfGrid g = perf_grid(p);
  out += "GB/s (fraction of copy) per shape, rows x cols:\n\n| kernel | op | format |";
  std::string rule = "|---|---|---|";
  for (const auto& [rows, cols] : g.shapes) out += fmt::format(" {} x {} |", rows, cols), rule += "---:|";
  out += "\n" + rule + "\n";
  for (const PerfGrid::Row& row : g.rows) {
    out += fmt::format("| {} | {} | {} |", md(row.kernel), md(row.op), md(row.format));
    for (const BenchResult* b : row.cells)
      out += b ? fmt::format(" {:.2f} ({:.0f}%) |", b->bytes_per_second / 1e9, 100 * b->copy_fraction()) : " |";
    out += "\n";
  }
}

}  // namespace

std::string to_markdown(const Report& r) { return to_markdown(r, report_digest(to_json(r))); }

std::string to_markdown(const Report& r, std::string_view json_digest) {
  std::string out = "# softcheck report\n\n";
  out += fmt::format("softcheck {}, suite {}, seed {}, oracle MPFR {} bits. Verdict: **{}**.\n\n",
                     md(r.tool_version), md_code(r.suite, false), r.seed, r.oracle_bits,
                     r.all_held() ? "every declared contract held" : "a declared contract was violated");
  // Which report.json this was rendered from (docs/report-schema.md).
  out += fmt::format("Rendered from report.json {}.\n\n", md_code(json_digest, false));
  if (r.shard.present())
    out += fmt::format("**Shard {} of {}** (0-based): this report holds that shard's cases only. "
                       "`softcheck report --merge` joins the {} shards' report.json into the whole run's "
                       "(docs/scaling.md).\n\n",
                       r.shard.index, r.shard.count, r.shard.count);
  if (r.budget.present()) {
    out += fmt::format("**Budget {} s**: this run kept {} of its {} cases, the cheapest by softcheck's cost model "
                       "(modelled {:.2f} s of the cases' {:.2f} s; docs/scaling.md). Skipped:",
                       r.budget.seconds, r.budget.cases_run, r.budget.cases, r.budget.modelled_seconds,
                       r.budget.suite_seconds);
    if (r.budget.skipped.empty()) out += " none";
    for (std::size_t i = 0; i < r.budget.skipped.size(); ++i) {
      const SkippedCase& c = r.budget.skipped[i];
      out += fmt::format("{} {} {} n={} T={}", i ? "," : "", md_code(c.family, false), c.format, c.cols, c.temperature);
    }
    out += ".\n\n";
  }
  if (r.fp_env != "default")
    out += fmt::format("The kernels ran in the floating-point environment {} (docs/fp-env.md); the oracle in the "
                       "default one.\n\n",
                       md_code(r.fp_env, false));
  if (!r.oracle.mode.empty())
    out += fmt::format("Oracle: {}; {} of {} compared rows used MPFR{}.\n\n", md(r.oracle.mode), r.oracle.mpfr_rows,
                       r.oracle.rows, r.oracle.mode == "tiered" ? " (fast-tier fallbacks, f64 rows and rows of sparse ops included)" : "");
  out += "ULP errors are componentwise, in the kernel's output format, against the correctly "
         "computed value (docs/oracle.md). NaN/inf outputs where the exact value is finite are "
         "counted separately and never averaged.\n\n## Summary\n\n";
  summary_table(out, r);
  distribution_table(out, r);
  mass_table(out, r);
  if (!r.reference_rule.scope.empty() && r.reference_rule.scope != "off")
    out += fmt::format("\nReference rule ({} outputs): on every row, max |got - exact| <= {} x that of softcheck's "
                       "stable kernel of the same format + {} u max(1, max |output|) (docs/gating-your-kernel.md).\n",
                       r.reference_rule.scope == "all" ? "all" : "no-contract", num(r.reference_rule.k),
                       num(r.reference_rule.slack));
  out += "\n## Kernels\n";
  for (const KernelSummary& k : r.kernels) kernel_section(out, k);
  if (r.performance.present) performance_table(out, r.performance);
  return out;
}

}  // namespace softcheck
