// report.html: one self-contained page (inline CSS and SVG, no scripts, no
// fonts or images from anywhere) rendered from the report model alone, so
// `softcheck report` can redraw any saved report.json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "softcheck/report.hpp"
#include "perf_grid.hpp"
#include "svg.hpp"
#include "text.hpp"

namespace softcheck {

namespace {

using svg::escape;
using text::num;

constexpr const char* style = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px auto;max-width:1560px;padding:0 16px;color:#1b1f24;background:#fff;line-height:1.4}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}p.intro{color:#444;max-width:1100px}
nav a{margin-right:14px;color:#0b5cad;text-decoration:none}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 8px;vertical-align:top}
th{background:#f3f5f7;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font-family:"DejaVu Sans Mono",monospace;font-size:12px;background:#f3f5f7;padding:1px 3px;word-break:break-all}
.held{color:#116329;font-weight:600}.violated{color:#b3261e;font-weight:700}.no_contract{color:#57606a}.unavailable{color:#8a6d00}
.flag{color:#b3261e;font-weight:600}.badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:600}
.badge.held{background:#1a7f37}.badge.violated{background:#cf222e}
.grid-plots{display:flex;flex-wrap:wrap;gap:10px}.grid-plots figure{margin:0}.twin{width:660px}.twin table{width:100%}
figure{margin:8px 0}svg.plot{background:#fff;border:1px solid #e5e8eb}
svg text{font-family:inherit;fill:#1b1f24}svg text.title{font-size:13px;font-weight:600}svg text.tick{font-size:10px;fill:#57606a}
svg text.axis{font-size:11px}svg text.legend{font-size:11px}svg line.grid{stroke:#eceff1}svg rect.frame{fill:none;stroke:#8c959f}
.note{color:#57606a;font-size:13px}
)";

// ------------------------------------------------------------------ styling

// One color per algorithm (the order it first appears in), one dash per format,
// so a kernel looks the same in every plot and twins share a color.
class Palette {
 public:
  explicit Palette(const Report& r) {
    for (const KernelSummary& k : r.kernels) algorithms_.try_emplace(k.algorithm, algorithms_.size());
  }
  // Tableau 10, then hues a golden angle apart: distinct however many algorithms.
  std::string color(const std::string& algorithm) const {
    static const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759",
                                   "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
    const auto it = algorithms_.find(algorithm);
    const std::size_t i = it == algorithms_.end() ? 0 : it->second;
    if (i < std::size(colors)) return colors[i];
    const auto hue = static_cast<int>(std::fmod(static_cast<double>(i) * 137.508, 360.0));
    return fmt::format("hsl({},{}%,{}%)", hue, i % 2 ? 55 : 70, i % 3 ? 42 : 32);
  }
  static std::string dash(const std::string& format) {
    if (format == "f32") return "6 3";
    if (format == "f16") return "2 3";
    if (format == "bf16") return "8 3 2 3";
    return "";  // f64 and anything else: solid
  }
  static std::string format_color(const std::string& format) {
    if (format == "f64") return "#4e79a7";
    if (format == "f32") return "#f28e2b";
    if (format == "f16") return "#59a14f";
    if (format == "bf16") return "#e15759";
    return "#9c755f";
  }

 private:
  std::map<std::string, std::size_t> algorithms_;
};

std::string figure(const std::string& svg_text) { return "<figure>\n" + svg_text + "</figure>\n"; }

std::string status_cell(const KernelSummary& k) {
  if (k.status == "unavailable") return "<span class=\"unavailable\">unavailable: " + escape(k.unavailable_reason) + "</span>";
  const char* word = k.status == "held" ? "held" : k.status == "violated" ? "VIOLATED" : "no contract";
  std::string s = fmt::format("<span class=\"{}\">{}</span>", k.status, word);
  if (k.nonfinite > 0) s += fmt::format(" <span class=\"flag\">FLAGGED: {} NaN/inf</span>", k.nonfinite);
  if (k.policy_violations > 0)
    s += fmt::format(" <span class=\"flag\">masked-row policy broken in {} rows</span>", k.policy_violations);
  if (k.unbounded_rows > 0)
    s += " <span class=\"flag\">UNCHECKED: " + escape(k.unchecked_rows()) + "</span>";
  if (k.floor_violations > 0)
    s += fmt::format(" <span class=\"flag\">floor: NaN/inf on {} rows the format holds</span>", k.floor_violations);
  if (k.reference.violations > 0)
    s += fmt::format(" <span class=\"flag\">reference rule broken on {} of {} rows</span>", k.reference.violations,
                     k.reference.rows);
  if (k.distribution.biased())
    s += fmt::format(" <span class=\"flag\">BIASED (z = {:.1f})</span>", k.distribution.bias_z());
  if (k.conditional.present && k.conditional.rows > 0)
    s += fmt::format(" <span class=\"note\">given its own y: max error {} ({} rows broken)</span>",
                     num(k.conditional.max_error), k.conditional.broken);
  return s;
}

std::string td_num(double v) { return "<td class=\"n\">" + num(v) + "</td>"; }
std::string td_count(std::uint64_t v) { return fmt::format("<td class=\"n\">{}</td>", v); }
std::string td(const std::string& escaped) { return "<td>" + escaped + "</td>"; }

// The distinct key(k) of the report's entries, in report order.
template <class Key>
std::vector<std::string> distinct(const Report& r, Key key) {
  std::vector<std::string> out;
  for (const KernelSummary& k : r.kernels)
    if (std::string v = key(k); std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
  return out;
}

bool measured(const KernelSummary& k) { return k.status != "unavailable" && k.rows > 0; }

// ------------------------------------------------------------------ sections

std::string header(const Report& r) {
  const bool held = r.all_held();
  std::string s = "<h1>softcheck report</h1>\n";
  s += fmt::format(
      "<p>softcheck {}, suite <code>{}</code>, seed {}, oracle MPFR {} bits; {} families, row lengths {}, "
      "temperatures {}. Verdict: <span class=\"badge {}\">{}</span></p>\n",
      escape(r.tool_version), escape(r.suite), r.seed, r.oracle_bits, r.families.size(),
      escape(fmt::format("{}", fmt::join(r.sizes, ", "))), escape(fmt::format("{}", fmt::join(r.temperatures, ", "))),
      held ? "held" : "violated", held ? "every declared contract held" : "a declared contract was violated");
  if (r.shard.present())
    s += fmt::format("<p><strong>Shard {} of {}</strong> (0-based): this report holds that shard's cases only. "
                     "<code>softcheck report --merge</code> joins the {} shards' report.json into the whole run's "
                     "(docs/scaling.md).</p>\n",
                     r.shard.index, r.shard.count, r.shard.count);
  if (r.budget.present()) {
    std::string skipped;
    for (const SkippedCase& c : r.budget.skipped)
      skipped += fmt::format("{}<code>{}</code> {} n={} T={}", skipped.empty() ? "" : ", ", escape(c.family),
                             escape(c.format), c.cols, c.temperature);
    s += fmt::format("<p><strong>Budget {} s</strong>: this run kept {} of its {} cases, the cheapest by softcheck's "
                     "cost model (modelled {:.2f} s of the cases' {:.2f} s; docs/scaling.md). Skipped: {}.</p>\n",
                     r.budget.seconds, r.budget.cases_run, r.budget.cases, r.budget.modelled_seconds,
                     r.budget.suite_seconds, skipped.empty() ? "none" : skipped);
  }
  if (r.fp_env != "default")
    s += fmt::format("<p>The kernels ran in the floating-point environment <code>{}</code> (docs/fp-env.md); the "
                     "oracle in the default one.</p>\n",
                     escape(r.fp_env));
  s += "<nav><a href=\"#summary\">Summary</a><a href=\"#distribution\">Bias</a><a href=\"#histograms\">Histograms</a><a href=\"#by-size\">Row "
       "length</a><a href=\"#by-magnitude\">Magnitude</a><a href=\"#by-temperature\">Temperature</a><a "
       "href=\"#formats\">Formats</a><a href=\"#worst\">Worst inputs</a>";
  if (std::any_of(r.kernels.begin(), r.kernels.end(), [](const KernelSummary& k) { return !k.properties.empty(); }))
    s += "<a href=\"#properties\">Properties</a>";
  if (r.performance.present) s += "<a href=\"#performance\">Performance</a>";
  return s + "</nav>\n";
}

std::string summary_section(const Report& r) {
  std::string s =
      "<section id=\"summary\"><h2>Summary</h2>\n<p class=\"intro\">ULP errors are componentwise, in the kernel's "
      "output format, against the correctly computed value. NaN/inf outputs where the exact value is finite are "
      "counted separately and never averaged.</p>\n<table><tr><th>kernel</th><th>op</th><th>format</th><th>cases</th>"
      "<th>max ULP</th><th>mean ULP</th><th>max bits</th><th>max normwise</th><th>NaN/inf</th><th>contract (ULP)</th>"
      "<th>verdict</th></tr>\n";
  for (const KernelSummary& k : r.kernels)
    s += "<tr>" + td(escape(k.kernel)) + td(escape(k.label())) + td(escape(k.format_label())) + td_count(k.cases) +
         td_num(k.max_ulp) + td_num(k.mean_ulp) + td_num(k.max_bits) +
         (has_normwise(k.op, k.output) ? td_num(k.max_normwise) : td("n/a")) + td_count(k.nonfinite) +
         td("<code>" + escape(k.contract_formula) + "</code>") + td(status_cell(k)) + "</tr>\n";
  s += "</table>";
  const auto any_in = [&](Metric m) {
    return std::any_of(r.kernels.begin(), r.kernels.end(), [m](const KernelSummary& k) { return has_metric(m, k.op, k.output); });
  };
  if (any_in(Metric::absolute))
    s += "<p class=\"intro\">For " + metric_outputs(Metric::absolute) + " the ULP columns and the contract hold the absolute error in units "
         "of u (2^-24 for f32, 2^-53 for f64): |got - exact| / u (the op table's metric; docs/ops.md).</p>";
  if (any_in(Metric::scaled))
    s += "<p class=\"intro\">For " + escape(scaled_metric_outputs()) + " the ULP columns and the contract hold the scaled error "
         "|got - exact| / max(u s, denorm_min) (docs/gradients.md).</p>";
  return s + "</section>\n";
}

// A bin's lower edge: <.5 for bin 0, then .5, 1, 2 ... 512, then 2^10, 2^11 ...
std::string edge_text(std::size_t bin) {
  const double lo = ulp_histogram_lower_edge(bin);
  if (lo < 1024) return lo == 0.5 ? ".5" : svg::short_number(lo);
  return fmt::format("2^{}", static_cast<int>(bin) - 2);
}

std::string histogram_label(std::size_t bin) { return bin == 0 ? "<.5" : edge_text(bin); }

std::string bin_range(std::size_t bin) {
  if (bin == 0) return "[0, .5)";
  if (bin + 1 == ulp_histogram_bins) return ">= " + edge_text(bin);
  return "[" + edge_text(bin) + ", " + edge_text(bin + 1) + ")";
}

std::string kernel_histogram(const KernelSummary& k, const Palette& pal) {
  if (k.ulp_histogram.empty() && k.measured > 0) return "";  // a report written before histograms
  svg::BarChart ch;
  ch.title = k.kernel + " · " + k.label();
  ch.x_label = "ULP error (bin lower edge, log2 bins)";
  ch.y_label = "elements";
  ch.y_log = true;
  for (std::size_t i = 0; i < k.ulp_histogram.size(); ++i) {
    ch.bars.push_back({histogram_label(i), static_cast<double>(k.ulp_histogram[i]), pal.color(k.algorithm),
                       fmt::format("{} ULP: {} elements", bin_range(i), k.ulp_histogram[i])});
  }
  const std::uint64_t broken = k.nonfinite + k.special_mismatch;
  if (broken > 0)
    ch.bars.push_back({"NaN/inf", static_cast<double>(broken), "#b3261e", fmt::format("NaN/inf: {} elements", broken)});
  // Sparse ops (docs/sparse.md): support mismatches, never in the ULP bins.
  if (k.false_zeros > 0)
    ch.bars.push_back({"false 0", static_cast<double>(k.false_zeros), "#8a5a00",
                       fmt::format("false zeros (kernel 0, exact > 0): {} elements", k.false_zeros)});
  if (k.false_nonzeros > 0)
    ch.bars.push_back({"false nz", static_cast<double>(k.false_nonzeros), "#8a5a00",
                       fmt::format("false non-zeros (kernel > 0, exact 0): {} elements", k.false_nonzeros)});
  return svg::render(ch);
}

// Bias and distribution (report.hpp ErrorDistribution): the table of every
// entry, then per op a plot of error / bound per family (p99 as the line,
// hover for p50 and max) for the entries with a contract.
std::string distribution_section(const Report& r, const Palette& pal) {
  std::string s =
      "<section id=\"distribution\"><h2>Bias and distribution</h2>\n<p class=\"intro\">Mean signed error (r - exact) "
      "in ulp and relative; above / below: outputs at least 1/2 ulp above / below the exact value; percentiles of "
      "|error| (each within 3.1 % above the true one); z: the sign test over rows, BIASED at |z| &gt;= " +
      num(bias_z_threshold) + ".</p>\n<table><tr><th>kernel</th><th>op</th><th>mean signed ULP</th><th>mean signed "
      "rel</th><th>above</th><th>below</th><th>p50 ULP</th><th>p99 ULP</th><th>max ULP</th><th>p99 err/bound</th>"
      "<th>bias z</th></tr>\n";
  for (const KernelSummary& k : r.kernels) {
    if (!measured(k)) continue;
    const ErrorDistribution& d = k.distribution;
    s += "<tr>" + td(escape(k.kernel)) + td(escape(k.label())) + td_num(d.mean_signed_ulp) + td_num(d.mean_signed_rel) +
         td_count(d.above) + td_count(d.below) + td_num(d.p50_ulp) + td_num(d.p99_ulp) + td_num(d.max_ulp) +
         (k.contract_declared ? td_num(d.p99_ratio) : td("n/a")) +
         td(fmt::format("{:.1f}{}", d.bias_z(), d.biased() ? " <span class=\"flag\">BIASED</span>" : "")) + "</tr>\n";
  }
  s += "</table>\n";
  std::string plots;
  for (const std::string& op : distinct(r, [](const KernelSummary& k) { return k.label(); })) {
    svg::LineChart ch;
    ch.width = 1160;
    ch.title = "p99 error / bound per family — " + op;
    ch.y_label = "p99 |error| / bound";
    ch.y_log = true;
    ch.y_floor = 1e-4;
    std::vector<std::string> families;
    for (const KernelSummary& k : r.kernels)
      if (k.label() == op && measured(k) && k.contract_declared)
        for (const FamilySummary& f : k.by_family)
          if (std::find(families.begin(), families.end(), f.family) == families.end()) families.push_back(f.family);
    for (const KernelSummary& k : r.kernels) {
      if (k.label() != op || !measured(k) || !k.contract_declared) continue;
      svg::Series series{k.kernel, pal.color(k.algorithm), Palette::dash(k.format), {}};
      for (std::size_t i = 0; i < families.size(); ++i)
        for (const FamilySummary& f : k.by_family)
          if (f.family == families[i] && f.distribution.measured > 0)
            series.points.push_back({static_cast<double>(i + 1), f.distribution.p99_ratio, f.violations > 0,
                                     fmt::format("{}, family {}: error/bound p50 {}, p99 {}, max {}; bias z {:.1f}",
                                                 k.kernel, f.family, num(f.distribution.p50_ratio),
                                                 num(f.distribution.p99_ratio), num(f.distribution.max_ratio),
                                                 f.distribution.bias_z())});
      if (!series.points.empty()) ch.series.push_back(std::move(series));
    }
    std::string key;
    for (std::size_t i = 0; i < families.size(); ++i) key += fmt::format("{}{} {}", i ? ", " : "", i + 1, families[i]);
    ch.x_label = "family (numbered below)";
    const std::string plot = svg::render(ch);
    if (!plot.empty()) plots += figure(plot) + "<p class=\"note\">Families: " + escape(key) + ".</p>\n";
  }
  s += plots.empty() ? "<p class=\"note\">No entry with a contract has a distribution in this report (none "
                       "declares one, or the report was written before distributions existed): no error / bound "
                       "to plot.</p>\n"
                     : plots;
  return s + "</section>\n";
}

std::string histogram_section(const Report& r, const Palette& pal) {
  std::string s =
      "<section id=\"histograms\"><h2>ULP error histograms</h2>\n<p class=\"intro\">Every measured element of every "
      "row, per kernel and op, in log2 bins of its ULP error (bin <code>&lt;.5</code>: correctly rounded). The red bar "
      "counts NaN/inf results where the exact value is finite; for the sparse ops (docs/sparse.md) the brown bars "
      "count support mismatches (false zeros, false non-zeros), measured only on the support otherwise. Counts on a "
      "log axis.</p>\n<div class=\"grid-plots\">\n";
  std::string unavailable, missing;
  for (const KernelSummary& k : r.kernels) {
    const std::string plot = measured(k) ? kernel_histogram(k, pal) : "";
    std::string& list = k.status == "unavailable" ? unavailable : missing;
    if (plot.empty())
      list += (list.empty() ? "" : ", ") + escape(k.kernel + " " + k.label());
    else
      s += figure(plot);
  }
  s += "</div>\n";
  if (!unavailable.empty()) s += "<p class=\"note\">Unavailable, not run: " + unavailable + ".</p>\n";
  if (!missing.empty()) s += "<p class=\"note\">No histogram recorded: " + missing + ".</p>\n";
  return s + "</section>\n";
}

// A sweep (by_size, by_temperature, by_magnitude) drawn as max ULP per bin.
struct Sweep {
  std::vector<ErrorBin> KernelSummary::*bins;
  std::string key_text;  // how a tooltip names the key: "n", "T", "decade"
};

std::string bin_tip(const std::string& kernel, const Sweep& sw, const ErrorBin& b) {
  return fmt::format("{}, {} {}: max {} ULP, mean {} ULP over {} elements of {} rows; {} NaN/inf", kernel, sw.key_text,
                     svg::short_number(b.key), num(b.max_ulp), num(b.mean_ulp), b.measured, b.rows, b.nonfinite);
}

svg::Series sweep_series(const KernelSummary& k, const Sweep& sw, std::string name, std::string color, std::string dash) {
  svg::Series s{std::move(name), std::move(color), std::move(dash), {}};
  for (const ErrorBin& b : k.*sw.bins)
    if (b.measured > 0 || b.nonfinite > 0)
      s.points.push_back({b.key, b.max_ulp, b.nonfinite > 0, bin_tip(k.kernel, sw, b)});
  return s;
}

svg::LineChart ulp_chart(std::string title, std::string x_label, bool x_log, double width) {
  svg::LineChart ch;
  ch.width = width;
  ch.title = std::move(title);
  ch.x_label = std::move(x_label);
  ch.y_label = "max ULP error";
  ch.x_log = x_log;
  ch.y_log = true;
  ch.y_floor = 0.01;
  return ch;
}

std::string sweep_section(const Report& r, const Palette& pal, const Sweep& sw, const std::string& id,
                          const std::string& heading, const std::string& intro, const std::string& x_label,
                          bool x_log) {
  std::string s = fmt::format("<section id=\"{}\"><h2>{}</h2>\n<p class=\"intro\">{} Max ULP on a log axis; values "
                              "below 0.01 ULP (0 included) are drawn at 0.01. Hover a point for its numbers.</p>\n",
                              id, heading, intro);
  std::string plots;
  for (const std::string& op : distinct(r, [](const KernelSummary& k) { return k.label(); })) {
    svg::LineChart ch = ulp_chart(heading + " — " + op, x_label, x_log, 1160);
    for (const KernelSummary& k : r.kernels)
      if (k.label() == op && measured(k)) {
        svg::Series series = sweep_series(k, sw, k.kernel, pal.color(k.algorithm), Palette::dash(k.format));
        if (!series.points.empty()) ch.series.push_back(std::move(series));
      }
    const std::string plot = svg::render(ch);
    if (!plot.empty()) plots += figure(plot);
  }
  s += plots.empty() ? "<p class=\"note\">No data: this report was written without per-bin errors.</p>\n" : plots;
  return s + "</section>\n";
}

// (algorithm, op) groups that exist in more than one format.
std::vector<std::vector<const KernelSummary*>> format_twins(const Report& r) {
  std::vector<std::vector<const KernelSummary*>> groups;
  for (const KernelSummary& k : r.kernels) {
    if (!measured(k)) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.front()->algorithm == k.algorithm && g.front()->label() == k.label();
    });
    if (it == groups.end())
      groups.push_back({&k});
    else
      it->push_back(&k);
  }
  std::erase_if(groups, [](const auto& g) {
    return std::all_of(g.begin(), g.end(), [&](const KernelSummary* k) { return k->format == g.front()->format; });
  });
  return groups;
}

std::string twins_table(const std::vector<const KernelSummary*>& group) {
  std::string s = "<table><tr><th>kernel</th><th>format</th><th>max ULP</th><th>mean ULP</th><th>max bits</th>"
                  "<th>max rel</th><th>NaN/inf</th><th>verdict</th></tr>\n";
  for (const KernelSummary* k : group)
    s += "<tr>" + td(escape(k->kernel)) + td(escape(k->format)) + td_num(k->max_ulp) + td_num(k->mean_ulp) +
         td_num(k->max_bits) + td_num(k->max_rel) + td_count(k->nonfinite) + td(status_cell(*k)) + "</tr>\n";
  return s + "</table>\n";
}

std::string formats_section(const Report& r) {
  const bool low_precision = std::any_of(r.kernels.begin(), r.kernels.end(), [](const KernelSummary& k) {
    return k.format == "f16" || k.format == "bf16";
  });
  std::string s =
      "<section id=\"formats\"><h2>Formats side by side</h2>\n<p class=\"intro\">Kernels that declare the same "
      "algorithm in several formats, one plot per algorithm and op: max ULP error (in each kernel's own format, so "
      "compare shapes and max rel rather than raw ULPs) by row length. ";
  s += low_precision ? "Low-precision (f16/bf16) kernels appear beside their f32 twins.</p>\n"
                     : "No low-precision (f16/bf16) kernel is in this report, so this compares the f32 and f64 twins; "
                       "low-precision kernels will appear here beside their f32 twins.</p>\n";
  const Sweep sw{&KernelSummary::by_size, "n"};
  const auto groups = format_twins(r);
  if (groups.empty()) return s + "<p class=\"note\">No algorithm is present in more than one format.</p></section>\n";
  s += "<div class=\"grid-plots\">\n";
  for (const auto& group : groups) {
    svg::LineChart ch = ulp_chart(group.front()->algorithm + " · " + group.front()->op, "row length n", true, 640);
    for (const KernelSummary* k : group) {
      svg::Series series = sweep_series(*k, sw, k->kernel, Palette::format_color(k->format), Palette::dash(k->format));
      if (!series.points.empty()) ch.series.push_back(std::move(series));
    }
    const std::string plot = svg::render(ch);
    s += "<div class=\"twin\">" + (plot.empty() ? std::string() : figure(plot)) + twins_table(group) + "</div>\n";
  }
  return s + "</div></section>\n";
}

std::string worst_rows(const KernelSummary& k) {
  const WorstCase& w = k.worst;
  std::string s = "<tr>" + td(escape(k.kernel)) + td(escape(k.label())) + td(escape(w.family)) +
                  td_count(static_cast<std::uint64_t>(w.cols)) + td_num(w.temperature) +
                  td(fmt::format("{} / {}", w.row, w.element)) + td_num(w.got) + td("<code>" + escape(w.exact) + "</code>") +
                  td_num(w.ulp) + td_num(w.bound) + "</tr>\n";
  if (!w.input.empty()) s += "<tr><td></td><td colspan=\"9\">input: <code>" + escape(w.input) + "</code></td></tr>\n";
  return s + "<tr><td></td><td colspan=\"9\">repro: <code>" + escape(w.repro) + "</code></td></tr>\n";
}

std::string worst_section(const Report& r) {
  std::string s =
      "<section id=\"worst\"><h2>Worst input per kernel</h2>\n<p class=\"intro\">The row with the largest error "
      "relative to the kernel's bound (for kernels without a contract: the largest ULP error; a NaN/inf result "
      "or a broken masked-row policy outranks any finite error), and the command that replays it.</p>\n"
      "<table><tr><th>kernel</th><th>op</th><th>family</th><th>n</th><th>T</th><th>row / element</th><th>got</th>"
      "<th>exact</th><th>ULP</th><th>bound</th></tr>\n";
  for (const KernelSummary& k : r.kernels)
    if (k.worst.present) s += worst_rows(k);
  return s + "</table></section>\n";
}

std::string properties_section(const Report& r) {
  std::string rows;
  for (const KernelSummary& k : r.kernels)
    for (const PropertySummary& p : k.properties) {
      const char* cls = p.verdict == "passed" ? "held" : p.verdict == "failed" ? "violated" : "no_contract";
      rows += "<tr>" + td(escape(k.kernel)) + td(escape(k.label())) + td(escape(p.property)) +
              td(fmt::format("<span class=\"{}\">{}</span>", cls, escape(p.verdict))) + td_count(p.tests) +
              td(escape(p.detail)) + td(p.repro.empty() ? "" : "<code>" + escape(p.repro) + "</code>") + "</tr>\n";
    }
  if (rows.empty()) return "";
  return "<section id=\"properties\"><h2>Property verdicts</h2>\n<table><tr><th>kernel</th><th>op</th>"
         "<th>property</th><th>verdict</th><th>tests</th><th>detail</th><th>repro</th></tr>\n" +
         rows + "</table></section>\n";
}

std::string throughput_chart(const Performance& p, const Report& r, const Palette& pal, const std::string& op) {
  svg::LineChart ch;
  ch.width = 1160;
  ch.title = "Throughput vs size, one row — " + op;
  ch.x_label = "input bytes of the row";
  ch.y_label = "GB/s (input + output)";
  ch.x_log = true;
  ch.y_log = true;
  std::map<double, double> copy;  // input bytes -> copy GB/s
  std::vector<std::string> kernels;
  for (const BenchResult& b : p.results)
    if (b.op == op && b.rows == 1 && std::find(kernels.begin(), kernels.end(), b.kernel) == kernels.end())
      kernels.push_back(b.kernel);
  for (const std::string& name : kernels) {
    const auto k = std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelSummary& s) { return s.kernel == name; });
    svg::Series s{name, k == r.kernels.end() ? "#555" : pal.color(k->algorithm), "", {}};
    for (const BenchResult& b : p.results)
      if (b.op == op && b.rows == 1 && b.kernel == name) {
        const auto bytes = static_cast<double>(b.input_bytes());
        s.dash = Palette::dash(b.format);
        s.points.push_back({bytes, b.bytes_per_second / 1e9, false,
                            fmt::format("{} n = {}: {:.2f} GB/s, {:.0f}% of copy", name, b.cols,
                                        b.bytes_per_second / 1e9, 100 * b.copy_fraction())});
        copy[bytes] = b.copy_bytes_per_second / 1e9;
      }
    ch.series.push_back(std::move(s));
  }
  svg::Series c{"memcpy (same bytes)", "#222", "1 2", {}};
  for (const auto& [bytes, gbs] : copy)
    c.points.push_back({bytes, gbs, false, fmt::format("memcpy {} bytes: {:.2f} GB/s", bytes, gbs)});
  if (!c.points.empty()) ch.series.push_back(std::move(c));
  return svg::render(ch);
}

// GB/s (and the fraction of copy bandwidth) per (kernel, op) and shape.
std::string perf_table(const Performance& p) {
  const PerfGrid g = perf_grid(p);
  std::string s = "<table><tr><th>kernel</th><th>op</th><th>format</th>";
  for (const auto& [rows, cols] : g.shapes) s += fmt::format("<th>{} x {}</th>", rows, cols);
  s += "</tr>\n";
  for (const PerfGrid::Row& row : g.rows) {
    s += "<tr>" + td(escape(row.kernel)) + td(escape(row.op)) + td(escape(row.format));
    for (const BenchResult* b : row.cells)
      s += b ? fmt::format("<td class=\"n\" title=\"{} elements/s; copy {:.2f} GB/s\">{:.2f} ({:.0f}%)</td>",
                           text::si(b->items_per_second), b->copy_bytes_per_second / 1e9, b->bytes_per_second / 1e9,
                           100 * b->copy_fraction())
             : std::string("<td></td>");
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

std::string performance_section(const Report& r, const Palette& pal) {
  const Performance& p = r.performance;
  if (!p.present) return "";
  std::string s = fmt::format(
      "<section id=\"performance\"><h2>Performance</h2>\n<p class=\"intro\">Google Benchmark on {} ({} CPUs, {} MHz), "
      "at least {} s per benchmark (Google Benchmark built as {}). Bytes count input plus output; <i>of copy</i> is "
      "the kernel's bandwidth over memcpy's for as many bytes, measured in the same run; the table gives GB/s "
      "(of copy) per shape, rows x cols. Rates are per wall-clock second. Timings vary from run to run: they are the "
      "only part of a report that is not reproducible.</p>\n",
      escape(p.host), p.cpus, num(p.mhz_per_cpu), num(p.min_time), escape(p.library_build_type));
  // Throughput is per op (a kernel call fills every output of an op).
  for (const std::string& op : distinct(r, [](const KernelSummary& k) { return k.op; })) {
    const std::string plot = throughput_chart(p, r, pal, op);
    if (!plot.empty()) s += figure(plot);
  }
  s += perf_table(p);
  return s + "</table></section>\n";
}

}  // namespace

std::string to_html(const Report& r) { return to_html(r, report_digest(to_json(r))); }

std::string to_html(const Report& r, std::string_view json_digest) {
  const Palette pal(r);
  // The digest of the report.json this page shows (docs/report-schema.md).
  const std::string digest = escape(std::string(json_digest));
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<meta name=\"softcheck-report-digest\" content=\"" + digest + "\">\n"
                     "<title>softcheck report</title>\n<style>" +
                     std::string(style) + "</style>\n</head>\n<body>\n";
  page += header(r);
  page += summary_section(r);
  page += distribution_section(r, pal);
  page += histogram_section(r, pal);
  page += sweep_section(r, pal, {&KernelSummary::by_size, "n"}, "by-size", "Max error vs row length",
                        "Largest ULP error over all rows of each length (every family and temperature).",
                        "row length n", true);
  page += sweep_section(r, pal, {&KernelSummary::by_magnitude, "decade"}, "by-magnitude",
                        "Max error vs input magnitude",
                        "Rows binned by the decade of their largest scaled input max |x/T| (finite entries); the "
                        "lowest bin also holds every row below it, the highest every row above it.",
                        "decade d of max |x/T| (10^d <= max |x/T| < 10^(d+1); the last bin holds all above)", false);
  page += sweep_section(r, pal, {&KernelSummary::by_temperature, "T"}, "by-temperature",
                        "Max error vs temperature",
                        "Largest ULP error over all rows run at each temperature T (inputs scaled as x/T).",
                        "temperature T", true);
  page += formats_section(r);
  page += worst_section(r);
  page += properties_section(r);
  page += performance_section(r, pal);
  page += "<footer><p class=\"note\">Rendered by softcheck from report.json (schema softcheck-report, version " +
          std::to_string(report_schema_version) + ") " + digest +
          "; docs/report-schema.md describes every field.</p></footer>\n";
  return page + "</body>\n</html>\n";
}

}  // namespace softcheck
