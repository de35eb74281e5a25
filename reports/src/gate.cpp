#include "softcheck/gate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "svg.hpp"
#include "text.hpp"

namespace softcheck::gate {

namespace {

using text::num;

// The entry of `kernel` for the same op and output as `like`.
const KernelSummary* find(const Report& r, const std::string& kernel, const KernelSummary& like) {
  const auto it = std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelSummary& k) {
    return k.kernel == kernel && k.op == like.op && k.output == like.output;
  });
  return it == r.kernels.end() ? nullptr : &*it;
}
const KernelSummary* find(const Report& r, const KernelSummary& like) { return find(r, like.kernel, like); }

std::uint64_t broken_outputs(const KernelSummary& k) { return k.nonfinite + k.special_mismatch; }

// Collects the checks of one (kernel, op).
class Checker {
 public:
  Checker(Result& out, const KernelSummary& k) : out_(out), k_(k) {}
  void add(std::string name, Outcome o, std::string message, std::string repro = {}) {
    out_.checks.push_back({k_.kernel, k_.label(), std::move(name), o, std::move(message), std::move(repro)});
  }

 private:
  Result& out_;
  const KernelSummary& k_;
};

void check_nonfinite(Checker& c, const KernelSummary* base, const KernelSummary& k) {
  const std::uint64_t now = broken_outputs(k);
  if (!base) return c.add("nonfinite", Outcome::skip, fmt::format("no baseline; {} NaN/inf now", now));
  const std::uint64_t before = broken_outputs(*base);
  if (now > 0 && before == 0)
    return c.add("nonfinite", Outcome::fail, fmt::format("new NaN/inf: {} results on finite input (baseline 0)", now));
  c.add("nonfinite", Outcome::pass, fmt::format("NaN/inf {} (baseline {})", now, before));
}

void check_contract(Checker& c, const KernelSummary& k) {
  if (!k.contract_declared) {
    // Without a contract, contract_violations counts the rows of cases where
    // the kernel failed (a crash, a non-zero return: run_suite.hpp).
    if (k.policy_violations > 0 || k.contract_violations > 0)
      return c.add("contract", Outcome::fail,
                   fmt::format("no contract declared; {} rows where the kernel failed{}, masked-row policy broken "
                               "in {} rows",
                               k.contract_violations,
                               k.worst.exact.empty() ? "" : " (" + k.worst.exact + ")", k.policy_violations));
    return c.add("contract", Outcome::skip, "no contract declared (masked-row policy held)");
  }
  if (k.status == "unavailable") return c.add("contract", Outcome::skip, "kernel unavailable");
  // The contract's own counts: a status "violated" by the reference rule
  // alone (--reference-rule all) is the `reference` check's failure.
  if (k.contract_violations > 0 || k.policy_violations > 0)
    return c.add("contract", Outcome::fail,
                 fmt::format("contract violated: {} rows over the bound `{}` (largest error/bound {}, max ULP {}), "
                             "{} NaN/inf, {} masked-row policy violations",
                             k.contract_violations, k.contract_formula, num(k.max_bound_ratio), num(k.max_ulp),
                             broken_outputs(k), k.policy_violations));
  c.add("contract", Outcome::pass, "max ULP within `" + k.contract_formula + "`");
}

// The floor (docs/gating-your-kernel.md) of an entry without a contract.
void check_floor(Checker& c, const KernelSummary& k) {
  if (!k.floor_checked) return;
  if (!k.floor_opt_out.empty())
    return c.add("floor", Outcome::skip, "no_nonfinite opted out: " + k.floor_opt_out);
  if (k.floor_violations > 0)
    return c.add("floor", Outcome::fail,
                 fmt::format("NaN/inf where the exact value is finite on {} rows the format can hold "
                             "(no contract declared: the floor still applies)",
                             k.floor_violations));
  c.add("floor", Outcome::pass, "no NaN/inf on rows the format can hold");
}

void check_margin(Checker& c, const KernelSummary* base, const KernelSummary& k, const Options& opt) {
  if (!base) return c.add("margin", Outcome::skip, "no baseline");
  const double allowed = base->max_ulp * (1 + opt.margin) + opt.slack_ulp;
  const std::string msg = fmt::format("max ULP {} -> {} (allowed {} = {} x {} + {})", num(base->max_ulp),
                                      num(k.max_ulp), num(allowed), num(base->max_ulp), num(1 + opt.margin),
                                      num(opt.slack_ulp));
  c.add("margin", k.max_ulp > allowed ? Outcome::fail : Outcome::pass, msg);
}

// Sparse ops (docs/sparse.md): entries put off the exact support (false zeros)
// or on it wrongly (false non-zeros) are not in the ULP figures, so they are
// gated on their own: on the baseline's inputs, any more of them fails.
void check_support(Checker& c, const KernelSummary* base, const KernelSummary& k) {
  if (!is_sparse_op_name(k.op)) return;
  const std::uint64_t now = k.false_zeros + k.false_nonzeros;
  const std::string counts = fmt::format("{} false zeros, {} false non-zeros", k.false_zeros, k.false_nonzeros);
  if (!base) return c.add("support", Outcome::skip, "no baseline; " + counts + " now");
  const std::uint64_t before = base->false_zeros + base->false_nonzeros;
  const std::string msg = fmt::format("{} (baseline {} false zeros, {} false non-zeros)", counts, base->false_zeros,
                                      base->false_nonzeros);
  c.add("support", now > before ? Outcome::fail : Outcome::pass, msg);
}

const PropertySummary* find_property(const KernelSummary* k, const std::string& name) {
  if (!k) return nullptr;
  for (const PropertySummary& p : k->properties)
    if (p.property == name) return &p;
  return nullptr;
}

void check_properties(Checker& c, const KernelSummary* base, const KernelSummary& k) {
  for (const PropertySummary& p : k.properties) {
    const PropertySummary* before = find_property(base, p.property);
    const std::string name = "property:" + p.property;
    const std::string was = before ? before->verdict : "absent";
    if (p.verdict == "failed" && was == "failed")
      c.add(name, Outcome::skip, "failed in the baseline too: " + p.detail);
    else if (p.verdict == "failed")
      c.add(name, Outcome::fail,
            fmt::format("property {} now fails (baseline: {}): {}{}", p.property, was, p.detail,
                        p.repro.empty() ? "" : "; repro: " + p.repro));
    else if (p.verdict == "passed")
      c.add(name, Outcome::pass, fmt::format("passed {} tests (baseline: {})", p.tests, was));
    else
      c.add(name, Outcome::skip, (p.verdict == "not_claimed" ? "not claimed: " : "skipped: ") + p.detail);
  }
  // A property that passed in the baseline and was not run now is not evidence either way.
  if (base)
    for (const PropertySummary& p : base->properties)
      if (p.verdict == "passed" && !find_property(&k, p.property))
        c.add("property:" + p.property, Outcome::skip, "passed in the baseline, not run now");
}

void check_references(Checker& c, const Report& report, const KernelSummary& k, const Options& opt) {
  for (const ReferenceRule& rule : opt.reference_rules) {
    const KernelSummary* ref = find(report, rule.kernel, k);
    const auto any = std::find_if(report.kernels.begin(), report.kernels.end(),
                                  [&](const KernelSummary& s) { return s.kernel == rule.kernel; });
    // The rule applies to kernels of the reference's format and op that
    // declare a contract (baselines without one, like naive, never gate).
    if (!ref || k.kernel == rule.kernel || k.format != any->format || !k.contract_declared) continue;
    const std::string name = "reference:" + rule.kernel;
    if (ref->status == "unavailable") {
      c.add(name, Outcome::skip, "reference kernel unavailable: " + ref->unavailable_reason);
      continue;
    }
    const double allowed = rule.k * ref->max_ulp + opt.slack_ulp;
    c.add(name, k.max_ulp > allowed ? Outcome::fail : Outcome::pass,
          fmt::format("max ULP {} vs {} x {} ({}) + {} = {}", num(k.max_ulp), num(rule.k), num(ref->max_ulp),
                      rule.kernel, num(opt.slack_ulp), num(allowed)));
  }
}

// The reference rule (report.hpp ReferenceRuleSettings) of an entry it judged.
void check_reference_rule(Checker& c, const KernelSummary& k) {
  if (!k.reference.present()) return;
  if (k.reference.kernel.empty()) return c.add("reference", Outcome::skip, "not applied: " + k.reference.not_applied);
  c.add("reference", k.reference.violations > 0 ? Outcome::fail : Outcome::pass,
        fmt::format("{} of {} rows above the error the reference rule allows against {} (largest error / allowed {})",
                    k.reference.violations, k.reference.rows, k.reference.kernel, num(k.reference.max_ratio)));
}


// One-sided now where it was not: |z| at the threshold and grown by more than
// bias_z_growth (|z| only: a lean that changes side at the same strength passes).
bool bias_grew(double z_base, double z_now, const Options& opt) {
  return std::fabs(z_now) >= bias_z_threshold && std::fabs(z_now) > std::fabs(z_base) + opt.bias_z_growth;
}

// Per (family, row length) cell, against the baseline's cell (docs/gate.md):
// a cell fails on any of its measures and says which, with the numbers.
void check_cells(Checker& c, const Report& report, const KernelSummary* base, const KernelSummary& k,
                 const Options& opt) {
  if (!base) return;
  for (const CellSummary& now : k.cells) {
    const auto it = std::find_if(base->cells.begin(), base->cells.end(), [&](const CellSummary& b) {
      return b.family == now.family && b.cols == now.cols;
    });
    const std::string name = fmt::format("cell:{}/{}", now.family, now.cols);
    if (it == base->cells.end()) {
      c.add(name, Outcome::skip, "not in the baseline");
      continue;
    }
    const CellSummary& was = *it;
    std::vector<std::string> failed, held;
    const auto measure = [&](const char* what, double b, double n, double allowed) {
      (n > allowed ? failed : held)
          .push_back(fmt::format("{} {} -> {} (allowed {})", what, num(b), num(n), num(allowed)));
    };
    // With a contract, growth within slack_ratio of the cell's bound is tolerated too.
    const double bound = std::min(was.bound, now.bound);
    const double room = opt.slack_ulp + (std::isfinite(bound) ? opt.slack_ratio * bound : 0);
    measure("max ULP", was.max_ulp, now.max_ulp, was.max_ulp * (1 + opt.margin) + room);
    measure("mean ULP", was.mean_ulp, now.mean_ulp, was.mean_ulp * (1 + opt.margin) + room);
    if (k.contract_declared && std::isfinite(was.bound))  // a baseline without a contract has no ratio to grow from
      measure("error/bound", was.max_ratio, now.max_ratio, was.max_ratio * (1 + opt.margin) + opt.slack_ratio);
    const std::string nan = fmt::format("NaN/inf {} -> {}", was.nonfinite, now.nonfinite);
    (now.nonfinite > 0 && was.nonfinite == 0 ? failed : held).push_back(nan);
    const double zb = sign_test_z(was.rows_above, was.rows_below), zn = sign_test_z(now.rows_above, now.rows_below);
    const std::string bias = fmt::format("bias z {:.1f} -> {:.1f} (rows above/below {}/{} -> {}/{})", zb, zn,
                                         was.rows_above, was.rows_below, now.rows_above, now.rows_below);
    (bias_grew(zb, zn, opt) ? failed : held).push_back(bias);
    if (failed.empty()) {
      c.add(name, Outcome::pass, fmt::format("{}", fmt::join(held, "; ")));
      continue;
    }
    c.add(name, Outcome::fail,
          fmt::format("{} rows of n = {}: {}; held: {}", now.rows, now.cols, fmt::join(failed, "; "),
                      held.empty() ? std::string("none") : fmt::format("{}", fmt::join(held, "; "))),
          run_repro_command(k.load_options, k.kernel, report.suite, now.family, now.cols, report.temperatures,
                            report.seed, report.reference_rule));
  }
}

// The bias check per family: its rows' signs together (cells hold too few
// rows for the sign test to reach the threshold on short-row families).
void check_bias(Checker& c, const KernelSummary* base, const KernelSummary& k, const Options& opt) {
  if (!base) return;
  for (const FamilySummary& now : k.by_family) {
    const auto it = std::find_if(base->by_family.begin(), base->by_family.end(),
                                 [&](const FamilySummary& b) { return b.family == now.family; });
    if (it == base->by_family.end() || now.distribution.measured == 0) continue;
    if (it->distribution.measured == 0 && it->rows > 0) {  // a baseline written before distributions existed
      c.add("bias:" + now.family, Outcome::skip, "the baseline has no distribution to compare with");
      continue;
    }
    const ErrorDistribution &b = it->distribution, &n = now.distribution;
    c.add("bias:" + now.family, bias_grew(b.bias_z(), n.bias_z(), opt) ? Outcome::fail : Outcome::pass,
          fmt::format("sign test z {:.1f} -> {:.1f} (rows above/below {}/{} -> {}/{}; mean signed ULP {} -> {}; fails "
                      "at |z| >= {} and {} above the baseline's)",
                      b.bias_z(), n.bias_z(), b.rows_above, b.rows_below, n.rows_above, n.rows_below,
                      num(b.mean_signed_ulp), num(n.mean_signed_ulp), num(bias_z_threshold), num(opt.bias_z_growth)));
  }
}

void check_kernel(Result& out, const Report& report, const KernelSummary* base, const KernelSummary& k,
                  const Options& opt) {
  Checker c(out, k);
  if (k.status == "unavailable") return c.add("contract", Outcome::skip, "unavailable: " + k.unavailable_reason);
  if (base && base->status == "unavailable") base = nullptr;  // nothing measured to compare with
  check_nonfinite(c, base, k);
  check_contract(c, k);
  check_floor(c, k);
  check_reference_rule(c, k);
  check_margin(c, base, k, opt);
  check_cells(c, report, base, k, opt);
  check_bias(c, base, k, opt);
  check_support(c, base, k);
  check_properties(c, base, k);
  check_references(c, report, k, opt);
}

DiffRow diff_row(const KernelSummary* base, const KernelSummary* now) {
  const KernelSummary& any = now ? *now : *base;
  DiffRow d{any.kernel, any.label(), any.format, base != nullptr, now != nullptr, 0, 0, 0, 0, "", ""};
  if (base) d.base_max_ulp = base->max_ulp, d.base_nonfinite = broken_outputs(*base), d.base_status = base->status;
  if (now) d.new_max_ulp = now->max_ulp, d.new_nonfinite = broken_outputs(*now), d.new_status = now->status;
  return d;
}

std::string settings_difference(const Report& a, const Report& b) {
  std::vector<std::string> diffs;
  if (a.suite != b.suite) diffs.push_back(fmt::format("suite {} vs {}", a.suite, b.suite));
  if (a.seed != b.seed) diffs.push_back(fmt::format("seed {} vs {}", a.seed, b.seed));
  if (a.oracle_bits != b.oracle_bits) diffs.push_back(fmt::format("oracle bits {} vs {}", a.oracle_bits, b.oracle_bits));
  if (a.fp_env != b.fp_env) diffs.push_back(fmt::format("FP environment {} vs {}", a.fp_env, b.fp_env));
  if (a.families != b.families) diffs.push_back("families");
  if (a.sizes != b.sizes) diffs.push_back("sizes");
  if (a.temperatures != b.temperatures) diffs.push_back("temperatures");
  if (diffs.empty()) return "";
  return fmt::format("baseline and report ran different inputs ({}): the margin compares maxima over different rows",
                     fmt::join(diffs, ", "));
}


// The failed check names of one (kernel, op), or "ok".
std::string row_result(const Result& r, const DiffRow& d) {
  std::vector<std::string> failed;
  for (const Check& c : r.checks)
    if (c.kernel == d.kernel && c.op == d.op && c.outcome == Outcome::fail) failed.push_back(c.name);
  if (!d.in_report && d.new_status.empty() && failed.empty()) return "not in report";
  return failed.empty() ? "ok" : "FAIL: " + fmt::format("{}", fmt::join(failed, ", "));
}

std::string change(const DiffRow& d) {
  if (!d.in_baseline || !d.in_report) return "";
  if (d.base_max_ulp == d.new_max_ulp) return "=";
  if (d.base_max_ulp == 0 || !std::isfinite(d.base_max_ulp)) return d.new_max_ulp > d.base_max_ulp ? "up" : "down";
  const double ratio = d.new_max_ulp / d.base_max_ulp;
  if (ratio >= 10) return fmt::format("x{:.3g}", ratio);
  return fmt::format("{:+.1f}%", 100 * (ratio - 1));
}

std::string xml_attr(const std::string& s) {
  std::string out;
  for (char ch : svg::escape(s)) {
    if (ch == '\n') out += "&#10;";
    else out += ch;
  }
  return out;
}

}  // namespace

ReferenceRule parse_reference_rule(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("--reference-rule '" + text + "': expected KERNEL:K, e.g. shifted_f32:2");
  ReferenceRule rule{text.substr(0, colon), 0};
  std::size_t used = 0;
  try {
    rule.k = std::stod(text.substr(colon + 1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() - colon - 1 || !std::isfinite(rule.k) || rule.k < 1)
    throw std::invalid_argument("--reference-rule '" + text + "': K must be a number >= 1");
  return rule;
}

bool Result::passed() const { return count(Outcome::fail) == 0; }

std::size_t Result::count(Outcome o) const {
  return static_cast<std::size_t>(
      std::count_if(checks.begin(), checks.end(), [o](const Check& c) { return c.outcome == o; }));
}

Result compare(const Report& baseline, const Report& report, const Options& opt) {
  for (const ReferenceRule& rule : opt.reference_rules)
    if (std::none_of(report.kernels.begin(), report.kernels.end(),
                     [&](const KernelSummary& k) { return k.kernel == rule.kernel; }))
      throw std::invalid_argument("--reference-rule: kernel '" + rule.kernel + "' is not in the report");
  Result out;
  if (std::string note = settings_difference(baseline, report); !note.empty()) out.notes.push_back(note);
  // The same settings must give the same cases: a count that differs means
  // the two runs did not evaluate the same rows (the checks compare maxima
  // over different inputs).
  for (const KernelSummary& k : report.kernels)
    if (const KernelSummary* b = find(baseline, k); b && b->status != "unavailable" && k.status != "unavailable" &&
                                                    (b->cases != k.cases || b->rows != k.rows))
      out.notes.push_back(fmt::format("{} {}: the baseline evaluated {} cases ({} rows), the report {} ({} rows)",
                                      k.kernel, k.label(), b->cases, b->rows, k.cases, k.rows));
  // A contract that holds says nothing about rows where its bound is
  // infinite: the gate passes them, and says how many there are.
  for (const KernelSummary& k : report.kernels)
    if (k.unbounded_rows > 0)
      out.notes.push_back(fmt::format("{} {}: {}", k.kernel, k.label(), k.unchecked_rows()));
  for (const KernelSummary& k : report.kernels) {
    const KernelSummary* base = find(baseline, k);
    check_kernel(out, report, base, k, opt);
    out.rows.push_back(diff_row(base, &k));
  }
  for (const KernelSummary& b : baseline.kernels) {
    if (find(report, b)) continue;
    out.rows.push_back(diff_row(&b, nullptr));
    const bool measured = b.status != "unavailable";
    out.checks.push_back({b.kernel, b.label(), "present", measured ? Outcome::fail : Outcome::skip,
                          measured ? "in the baseline, missing from the report" : "unavailable in the baseline", ""});
  }
  return out;
}

std::string diff_table(const Result& r) {
  std::string s = fmt::format("{:<24} {:<11} {:<4} {:>10} {:>10} {:>8} {:>8} {:>8} {:<11} {}\n", "kernel", "op",
                              "fmt", "base ULP", "new ULP", "change", "base NaN", "new NaN", "status", "result");
  for (const DiffRow& d : r.rows)
    s += fmt::format("{:<24} {:<11} {:<4} {:>10} {:>10} {:>8} {:>8} {:>8} {:<11} {}\n", d.kernel, d.op, d.format,
                     d.in_baseline ? num(d.base_max_ulp) : "-", d.in_report ? num(d.new_max_ulp) : "-", change(d),
                     d.in_baseline ? std::to_string(d.base_nonfinite) : "-",
                     d.in_report ? std::to_string(d.new_nonfinite) : "-", d.in_report ? d.new_status : "-",
                     row_result(r, d));
  for (const std::string& n : r.notes) s += "\nnote: " + n + "\n";
  const std::size_t failed = r.count(Outcome::fail);
  if (failed > 0) {
    s += "\nRegressions:\n";
    for (const Check& c : r.checks)
      if (c.outcome == Outcome::fail)
        s += fmt::format("  {} {} [{}]: {}\n{}", c.kernel, c.op, c.name, c.message,
                         c.repro.empty() ? "" : "    repro: " + c.repro + "\n");
  }
  s += fmt::format("\ngate: {} ({} checks: {} passed, {} failed, {} skipped)\n", failed ? "FAILED" : "passed",
                   r.checks.size(), r.count(Outcome::pass), failed, r.count(Outcome::skip));
  return s;
}

std::string junit_xml(const Result& r, const Timings* timings) {
  std::string counts = fmt::format("tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\"", r.checks.size(),
                                   r.count(Outcome::fail), r.count(Outcome::skip));
  if (timings != nullptr) counts += fmt::format(" time=\"{:.6f}\"", timings->total_seconds);
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<testsuites name=\"softcheck gate\" " + counts + ">\n";
  s += "  <testsuite name=\"softcheck.gate\" " + counts + ">\n";
  for (const Check& c : r.checks) {
    s += fmt::format("    <testcase classname=\"softcheck.gate.{}.{}\" name=\"{}\"", xml_attr(c.kernel),
                     xml_attr(c.op), xml_attr(c.name));
    if (timings != nullptr && c.name == "contract")
      if (const auto it = timings->entry_seconds.find({c.kernel, c.op}); it != timings->entry_seconds.end())
        s += fmt::format(" time=\"{:.6f}\"", it->second);
    if (c.outcome == Outcome::pass) {
      s += "/>\n";
      continue;
    }
    if (c.outcome == Outcome::skip) {
      s += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_attr(c.message));
      continue;
    }
    // The failure's body: its numbers, and the command that reruns it.
    s += fmt::format(">\n      <failure message=\"{}\">{}{}</failure>\n    </testcase>\n", xml_attr(c.message),
                     svg::escape(c.message), c.repro.empty() ? "" : "&#10;repro: " + svg::escape(c.repro));
  }
  return s + "  </testsuite>\n</testsuites>\n";
}

}  // namespace softcheck::gate
