#include "softcheck/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "softcheck/judge.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"
#include "softcheck/version.hpp"

namespace softcheck {

bool compare_takes(Op op) {
  const OpSpec& s = spec(op);
  return s.in.size() == 1 && s.out.size() == 1 && s.param == OpParam::none && !s.sparse() && !has_head_dim(op) &&
         (s.out[0].shape == OperandShape::row || s.out[0].shape == OperandShape::scalar);
}

std::vector<Op> compare_ops() {
  std::vector<Op> ops;
  for (const OpSpec& o : op_table)
    if (compare_takes(o.op)) ops.push_back(o.op);
  return ops;
}

std::string compare_op_names() {
  std::string s;
  for (Op op : compare_ops()) s += (s.empty() ? "" : ", ") + std::string(name(op));
  return s;
}

Contract ulp_contract(double ulps) {
  if (!std::isfinite(ulps) || !(ulps > 0))
    throw std::invalid_argument(fmt::format("a bound in ulps must be finite and > 0, got {}", ulps));
  Contract c;
  c.declared = true;
  c.a = ulps;
  c.why = fmt::format("the bound given: {} in the output's metric (as every contract: K / (1 - K u), K = {})", ulps,
                      ulps);
  return c;
}

Contract kernel_contract(std::string_view kernel, Op op, Format f) {
  const Kernel* k = find_kernel(kernel);
  if (k == nullptr)
    throw std::invalid_argument(fmt::format("no built-in kernel '{}' (see `softcheck list --wide`)", kernel));
  if (k->format != f)
    throw std::invalid_argument(fmt::format("kernel {} computes in {}, the outputs are {}: its contract is in ULPs "
                                            "of {}",
                                            kernel, name(k->format), name(f), name(k->format)));
  if (const std::string why = quantised_refusal(*k, "`softcheck compare`"); !why.empty())
    throw std::invalid_argument(why);
  const OpDecl* d = k->find(op);
  if (d == nullptr) throw std::invalid_argument(fmt::format("kernel {} does not compute {}", kernel, name(op)));
  if (!d->contract.declared)
    throw std::invalid_argument(fmt::format("kernel {} declares no contract for {}: {}", kernel, name(op),
                                            d->contract.why));
  return d->contract;
}

std::string format_value_text(double v, Format f) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = f == Format::f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                                  : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string oracle_repro_line(Op op, Format f, double temperature, std::span<const double> x) {
  std::string s = fmt::format("softcheck oracle --op {} --dtype {}", name(op), name(f));
  if (temperature != 1) s += fmt::format(" --temperature {}", temperature);
  s += " --";
  for (double v : x) s += " " + format_value_text(v, f);
  return s;
}

void check_format_values(std::span<const double> v, std::int64_t cols, Format f, std::string_view what) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double e = v[i];
    if (std::isnan(e) || std::isinf(e) || round_to_format(e, f) == e) continue;
    const auto c = static_cast<std::size_t>(std::max<std::int64_t>(cols, 1));
    throw std::invalid_argument(fmt::format("{}[{}, {}] = {} is not a value of {}", what, i / c, i % c,
                                            format_value_text(e, Format::f64), name(f)));
  }
}

namespace {

std::string hex_text(std::span<const double> x) {
  std::string s;
  for (double v : x) {
    if (!s.empty()) s += ',';
    s += std::isinf(v) ? (v > 0 ? "inf" : "-inf") : fmt::format("{:a}", v);
  }
  return s;
}

double max_abs_scaled(std::span<const double> x, double temperature) {
  double m = 0;
  for (double v : x)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v / temperature));
  return m;
}

void add_row(ErrorBin& b, const RowError& e) {
  b.rows++;
  b.measured += e.measured;
  b.nonfinite += e.nonfinite;
  b.max_ulp = std::max(b.max_ulp, e.max_ulp);
  b.mean_ulp += e.sum_ulp;  // a sum until finish
}

void finish_bin(ErrorBin& b) {
  if (b.measured > 0) b.mean_ulp /= static_cast<double>(b.measured);
}

// Nearest-rank percentile of sorted values (0 when there are none).
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
}

// The worst row's sort key, as run's: NaN/inf outputs and broken policies
// first, then error / bound with a contract, the reference rule's ratio
// where it judges, else the error.
double row_key(const oracle::RowVerdict& v, bool contract, bool reference, double ratio) {
  if (v.status == oracle::RowStatus::all_masked) return v.follows_policy ? -1 : INFINITY;
  if (v.broken) return INFINITY;
  if (contract) return std::isinf(v.bound) ? 0 : v.error.max_ulp / v.bound;
  if (reference) return std::max(ratio, 0.0);
  return v.error.max_ulp;
}

}  // namespace

std::vector<double> exact_rows(std::span<const double> x, std::int64_t rows, std::int64_t cols, Op op, Format f,
                               double temperature, MaskedRowPolicy policy, unsigned bits) {
  if (!compare_takes(op))
    throw std::invalid_argument(fmt::format("op {} is not one of {}", name(op), compare_op_names()));
  if (rows < 1 || cols < 1 || x.size() != static_cast<std::size_t>(rows * cols))
    throw std::invalid_argument(fmt::format("x holds {} values, not {} rows of {}", x.size(), rows, cols));
  if (!std::isfinite(temperature) || !(temperature > 0))
    throw std::invalid_argument(fmt::format("the temperature must be finite and > 0, got {}", temperature));
  const Operand& out = spec(op).out[0];
  const auto per_row = static_cast<std::size_t>(output_cols(out, cols));
  std::vector<double> y;
  y.reserve(static_cast<std::size_t>(rows) * per_row);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const double> row = x.subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
    const oracle::ExactRow e = oracle::exact_row(row, temperature, bits);
    if (e.status == oracle::RowStatus::ok) {
      for (const oracle::Real& v : oracle::exact_values(e, out.kind)) y.push_back(oracle::round_to(v, f));
    } else {
      const double fill = e.status == oracle::RowStatus::all_masked
                              ? round_to_format(masked_row_value(out.kind, policy, static_cast<double>(cols)), f)
                              : NAN;
      y.insert(y.end(), per_row, fill);
    }
  }
  return y;
}

CompareResult judge_rows(std::span<const double> x, std::span<const double> y, std::int64_t rows, std::int64_t cols,
                         const CompareSpec& spec_in) {
  const CompareSpec& s = spec_in;
  if (!compare_takes(s.op))
    throw std::invalid_argument(fmt::format("op {} is not one of {}", name(s.op), compare_op_names()));
  if (rows < 1 || cols < 1) throw std::invalid_argument(fmt::format("no rows to judge ({} x {})", rows, cols));
  const Operand& operand = spec(s.op).out[0];
  const std::int64_t ycols = output_cols(operand, cols);
  if (x.size() != static_cast<std::size_t>(rows * cols))
    throw std::invalid_argument(fmt::format("x holds {} values, not {} rows of {}", x.size(), rows, cols));
  if (y.size() != static_cast<std::size_t>(rows * ycols))
    throw std::invalid_argument(fmt::format("y holds {} values; {} of {} rows of {} needs {} per row", y.size(),
                                            name(s.op), rows, cols, ycols));
  if (!temperature_fits_format(s.temperature, s.format))
    throw std::invalid_argument(fmt::format("temperature {} is not a normal {} value (contracts hold for normal "
                                            "temperatures only)",
                                            s.temperature, name(s.format)));
  if (s.reference_rule.scope != "no_contract" && s.reference_rule.scope != "all" && s.reference_rule.scope != "off")
    throw std::invalid_argument("reference rule scope '" + s.reference_rule.scope +
                                "' (expected no_contract, all or off)");
  if (!std::isfinite(s.reference_rule.k) || s.reference_rule.k < 1)
    throw std::invalid_argument(fmt::format("reference rule k = {} must be finite and >= 1", s.reference_rule.k));
  if (!std::isfinite(s.reference_rule.slack) || s.reference_rule.slack < 0)
    throw std::invalid_argument(
        fmt::format("reference rule slack = {} must be finite and >= 0", s.reference_rule.slack));
  check_format_values(x, cols, s.format, "x");
  check_format_values(y, ycols, s.format, "y");

  const Format f = s.format;
  const OpDecl decl{s.op, s.contract};
  const bool contract = s.contract.declared;
  // The reference rule: as run's choose_reference (suite/src/run_suite.cpp).
  StableReference ref;
  std::string reference_not_applied;
  const bool wants_reference =
      s.reference_rule.scope == "all" || (s.reference_rule.scope == "no_contract" && !contract);
  if (wants_reference) {
    ref = stable_reference_kernel(f, operand.kind, decl.params);
    if (ref.kernel == nullptr)
      reference_not_applied = fmt::format("softcheck has no stable kernel for this output in {}", name(f));
  }
  const bool reference = ref.kernel != nullptr;
  std::vector<double> yr;
  std::int64_t yr_cols = 0;
  if (reference) {
    const OperandList outs = spec(ref.decl->op).out;
    std::vector<std::vector<unsigned char>> buffers(outs.size());
    std::vector<void*> out_ptr;
    for (std::size_t o = 0; o < outs.size(); ++o) {
      buffers[o].resize(static_cast<std::size_t>(rows * output_cols(outs[o], cols)) * element_size(f));
      out_ptr.push_back(buffers[o].data());
    }
    const std::vector<unsigned char> xin = pack(std::vector<double>(x.begin(), x.end()), f);
    const std::vector<const void*> in(spec(ref.decl->op).in.size(), xin.data());
    ref.kernel->call({ref.decl->op, in, out_ptr, rows, cols, s.temperature, 0});
    yr_cols = output_cols(outs[ref.output], cols);
    yr = unpack(buffers[ref.output], f, static_cast<std::size_t>(rows * yr_cols));
  }

  CompareResult res;
  res.rows.resize(static_cast<std::size_t>(rows));
  if (contract)
    res.rule = fmt::format("contract {} ({}){}", s.contract.formula(),
                           s.contract_source.empty() ? s.contract.why : s.contract_source,
                           reference ? fmt::format(", and the reference rule: error <= {} x {}'s + {} u", s.reference_rule.k,
                                                   ref.kernel->name, s.reference_rule.slack)
                                     : "");
  else if (reference)
    res.rule = fmt::format("no contract: the reference rule, max |error| <= {} x that of {} (softcheck's stable "
                           "kernel in {}) + {} u max(1, max |output|), and the floor (no NaN/inf where the exact "
                           "value is finite)",
                           s.reference_rule.k, ref.kernel->name, name(f), s.reference_rule.slack);
  else
    res.rule = "no contract and no reference rule: the floor only (no NaN/inf where the exact value is finite)" +
               (reference_not_applied.empty() ? std::string() : "; " + reference_not_applied);

  // The report entry, summed as run sums a kernel's (suite/src/run_suite.cpp).
  KernelSummary k;
  k.kernel = s.kernel_name;
  k.algorithm = "external";
  k.format = std::string(name(f));
  k.op = std::string(name(s.op));
  k.masked_policy = std::string(name(s.masked_policy));
  k.description = s.description;
  k.contract_declared = contract;
  k.contract_formula = contract ? s.contract.formula() : "none";
  k.contract_why = contract ? (s.contract_source.empty() ? s.contract.why : s.contract_source + ": " + s.contract.why)
                            : "none given";
  k.floor_checked = !contract;
  if (reference) k.reference.kernel = ref.kernel->name;
  k.reference.not_applied = reference_not_applied;
  k.cases = 1;
  std::vector<double> ulps, ratios;
  std::array<std::uint64_t, ulp_histogram_bins> histogram{};
  double sum_signed_rel = 0;
  std::uint64_t rel_measured = 0;
  ErrorBin all_rows;
  std::vector<ErrorBin> by_magnitude;
  double min_bound = INFINITY;
  double worst_key = -1;
  std::int64_t worst_row = -1;
  std::uint64_t oracle_rows = 0, mpfr_rows = 0;
  std::size_t explained = 0;

  oracle::JudgeOptions options;
  options.bits = s.oracle_bits;
  options.tiered = s.tiered;
  options.element_bin = ulp_histogram_bin;
  options.signed_errors = true;
  oracle::RowJudge judge(f, options);
  const auto repro_of = [&](std::int64_t r, std::span<const double> xr) {
    return s.repro ? s.repro(r, xr) : oracle_repro_line(s.op, f, s.temperature, xr);
  };
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const double> xr = x.subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
    const std::span<const double> yrow =
        y.subspan(static_cast<std::size_t>(r * ycols), static_cast<std::size_t>(ycols));
    CompareRow& out = res.rows[static_cast<std::size_t>(r)];
    judge.set_row(xr, s.temperature);
    const oracle::RowVerdict v = judge.judge(decl, s.masked_policy, yrow);
    out.tier = std::string(oracle::name(v.tier));
    if (v.status == oracle::RowStatus::undefined) {
      out.verdict = "undefined";
      res.undefined_rows++;
      continue;
    }
    k.rows++;
    k.elements += static_cast<std::uint64_t>(ycols);
    bool violated = false, reference_violated = false;
    double ratio = -1;
    if (v.status == oracle::RowStatus::all_masked) {
      res.masked_rows++;
      k.policy_rows++;
      out.verdict = v.follows_policy ? "policy_held" : "policy_violated";
      if (!v.follows_policy) {
        k.policy_violations++;
        violated = true;
      }
    } else {
      oracle_rows++;
      if (judge.used_mpfr()) mpfr_rows++;
      const RowError& e = v.error;
      out.max_error = v.broken ? INFINITY : e.max_ulp;
      out.element = static_cast<std::int64_t>(e.worst_index);
      out.got = yrow[e.worst_index];
      out.bound = v.bound;
      out.R = v.shape.R;
      out.M = v.shape.M;
      if (reference) {
        const std::span<const double> yref(yr.data() + r * yr_cols, static_cast<std::size_t>(yr_cols));
        const oracle::RowVerdict vr = judge.judge(*ref.decl, ref.kernel->masked_policy, yref, ref.output);
        const oracle::ReferenceRuleVerdict rr =
            oracle::reference_rule(judge, decl, 0, xr, s.temperature, f, yrow, v, yref, vr, s.reference_rule.k,
                                   s.reference_rule.slack);
        if (rr.judged) {
          ratio = rr.ratio;
          out.reference_ratio = rr.ratio;
          k.reference.rows++;
          k.reference.max_ratio = std::max(k.reference.max_ratio, rr.ratio);
          if (rr.violated) {
            reference_violated = true;
            k.reference.violations++;
            violated = true;
          }
        }
      }
      if (contract) {
        min_bound = std::min(min_bound, v.bound);
        k.max_bound_ratio = std::max(k.max_bound_ratio, std::isinf(v.bound) ? 0 : e.max_ulp / v.bound);
        if (std::isinf(v.bound)) k.unbounded_rows++;
        if (!v.within) {
          k.contract_violations++;
          violated = true;
        }
      } else if (oracle::breaks_floor_no_nonfinite(e, decl, xr, s.temperature, f)) {
        k.floor_violations++;
        violated = true;
      }
      out.verdict = v.broken                   ? "broken"
                    : contract && !v.within    ? "violated"
                    : reference_violated       ? "reference_violated"
                    : contract                 ? "held"
                    : ratio >= 0               ? "reference_held"
                                               : "no_contract";
      // The summary's figures (run_suite.cpp record_measured_row / record_verdict).
      k.measured += e.measured;
      k.nonfinite += e.nonfinite;
      k.special_mismatch += e.special_mismatch;
      k.mean_ulp += e.sum_ulp;
      k.mean_bits += e.sum_bits;
      k.max_ulp = std::max(k.max_ulp, e.max_ulp);
      k.max_bits = std::max(k.max_bits, e.max_bits);
      k.max_rel = std::max(k.max_rel, e.max_rel);
      k.max_normwise = std::max(k.max_normwise, e.normwise);
      res.max_error = std::max(res.max_error, e.max_ulp);
      add_row(all_rows, e);
      const double decade = magnitude_decade(max_abs_scaled(xr, s.temperature));
      auto bin = std::find_if(by_magnitude.begin(), by_magnitude.end(), [&](const ErrorBin& b) { return b.key == decade; });
      if (bin == by_magnitude.end()) {
        ErrorBin fresh;
        fresh.key = decade;
        by_magnitude.push_back(fresh);
        bin = by_magnitude.end() - 1;
      }
      add_row(*bin, e);
      for (double el : v.element_error) {
        if (std::isnan(el)) continue;
        histogram[ulp_histogram_bin(el)]++;
        ulps.push_back(el);
        if (contract) ratios.push_back(std::isinf(v.bound) ? 0 : el / v.bound);
      }
      std::uint64_t above = 0, below = 0;
      for (double el : v.element_signed) {
        if (std::isnan(el)) continue;
        k.distribution.mean_signed_ulp += el;
        above += el >= 0.5 ? 1 : 0;
        below += el <= -0.5 ? 1 : 0;
      }
      for (double rel : v.element_signed_rel)
        if (!std::isnan(rel)) {
          sum_signed_rel += rel;
          rel_measured++;
        }
      k.distribution.above += above;
      k.distribution.below += below;
      k.distribution.rows_above += above > below ? 1 : 0;
      k.distribution.rows_below += below > above ? 1 : 0;
    }
    out.holds = !violated;
    if (violated) res.violated_rows++;
    const double key = row_key(v, contract, reference, ratio);
    if (key > worst_key) {  // strictly larger: the first worst row wins
      worst_key = key;
      worst_row = r;
    }
    out.repro = repro_of(r, xr);
    if (violated && explained < s.explain_limit) {
      out.explain = oracle::explain(v, decl, yrow, judge);
      if (ratio >= 0)
        out.explain += fmt::format("; reference rule ({}, k {}, slack {} u): error / allowed = {:.3g}",
                                   ref.kernel->name, s.reference_rule.k, s.reference_rule.slack, ratio);
      explained++;
    }
  }
  res.held = res.violated_rows == 0;

  // The worst row: its explain line and the exact value of its worst element (MPFR).
  WorstCase& w = k.worst;
  if (worst_row >= 0) {
    const std::span<const double> xr =
        x.subspan(static_cast<std::size_t>(worst_row * cols), static_cast<std::size_t>(cols));
    const std::span<const double> yrow =
        y.subspan(static_cast<std::size_t>(worst_row * ycols), static_cast<std::size_t>(ycols));
    CompareRow& row = res.rows[static_cast<std::size_t>(worst_row)];
    oracle::RowJudge again(f, options);
    again.set_row(xr, s.temperature);
    const oracle::RowVerdict v = again.judge(decl, s.masked_policy, yrow);
    if (row.explain.empty()) {
      row.explain = oracle::explain(v, decl, yrow, again);
      if (!std::isnan(row.reference_ratio))
        row.explain += fmt::format("; reference rule ({}, k {}, slack {} u): error / allowed = {:.3g}",
                                   ref.kernel->name, s.reference_rule.k, s.reference_rule.slack,
                                   row.reference_ratio);
    }
    CompareWorst& cw = res.worst;
    cw.present = true;
    cw.row = worst_row;
    cw.explain = row.explain;
    cw.repro = row.repro;
    cw.reference_ratio = row.reference_ratio;
    w.present = true;
    w.family = "compare";
    w.cols = cols;
    w.temperature = s.temperature;
    w.row = worst_row;
    if (cols <= 64) w.input = hex_text(xr);
    w.repro = row.repro;
    if (v.status == oracle::RowStatus::all_masked) {
      cw.element = 0;
      cw.got = yrow[0];
      cw.exact = "undefined (fully masked row, policy " + std::string(name(s.masked_policy)) + ")";
      cw.exact_rounded = NAN;
      cw.error = INFINITY;
      w.got = cw.got;
      w.exact = cw.exact;
      w.ulp = 0;
      w.bound = INFINITY;
    } else {
      const oracle::Real& exact = again.exact_output(decl, 0)[v.error.worst_index];
      cw.element = static_cast<std::int64_t>(v.error.worst_index);
      cw.got = yrow[v.error.worst_index];
      cw.exact = oracle::to_string(exact, 21);
      cw.exact_rounded = oracle::round_to(exact, f);
      cw.error = v.broken ? INFINITY : v.error.max_ulp;
      cw.bound = v.bound;
      w.element = cw.element;
      w.got = cw.got;
      w.exact = cw.exact;
      w.ulp = cw.error;
      w.bound = v.bound;
    }
  }

  // Means, percentiles, bins (run_suite.cpp finish_*).
  if (k.measured > 0) {
    k.mean_ulp /= static_cast<double>(k.measured);
    k.mean_bits /= static_cast<double>(k.measured);
  }
  ErrorDistribution& d = k.distribution;
  d.measured = k.measured;
  if (d.measured > 0) d.mean_signed_ulp /= static_cast<double>(d.measured);
  if (rel_measured > 0) d.mean_signed_rel = sum_signed_rel / static_cast<double>(rel_measured);
  std::sort(ulps.begin(), ulps.end());
  std::sort(ratios.begin(), ratios.end());
  d.p50_ulp = percentile(ulps, 0.5);
  d.p99_ulp = percentile(ulps, 0.99);
  d.max_ulp = k.max_ulp;
  d.p50_ratio = percentile(ratios, 0.5);
  d.p99_ratio = percentile(ratios, 0.99);
  d.max_ratio = k.max_bound_ratio;
  FamilySummary fam;
  fam.family = "compare";
  fam.rows = k.rows;
  fam.max_ulp = k.max_ulp;
  fam.nonfinite = k.nonfinite;
  fam.violations = res.violated_rows;
  fam.distribution = d;
  k.by_family.push_back(fam);
  CellSummary cell;
  cell.family = "compare";
  cell.cols = cols;
  cell.rows = k.rows;
  cell.measured = k.measured;
  cell.nonfinite = k.nonfinite;
  cell.violations = res.violated_rows;
  cell.max_ulp = k.max_ulp;
  cell.mean_ulp = k.mean_ulp;
  cell.max_ratio = k.max_bound_ratio;
  cell.mean_signed_ulp = d.mean_signed_ulp;
  cell.rows_above = d.rows_above;
  cell.rows_below = d.rows_below;
  cell.bound = min_bound;
  k.cells.push_back(cell);
  std::size_t used = histogram.size();
  while (used > 0 && histogram[used - 1] == 0) --used;
  k.ulp_histogram.assign(histogram.begin(), histogram.begin() + static_cast<std::ptrdiff_t>(used));
  finish_bin(all_rows);
  if (all_rows.rows > 0) {
    ErrorBin size_bin = all_rows, temperature_bin = all_rows;
    size_bin.key = static_cast<double>(cols);
    temperature_bin.key = s.temperature;
    k.by_size.push_back(size_bin);
    k.by_temperature.push_back(temperature_bin);
  }
  for (ErrorBin& b : by_magnitude) finish_bin(b);
  std::sort(by_magnitude.begin(), by_magnitude.end(), [](const ErrorBin& a, const ErrorBin& b) { return a.key < b.key; });
  k.by_magnitude = std::move(by_magnitude);
  k.status = res.violated_rows > 0 ? "violated" : contract ? "held" : "no_contract";

  Report& rep = res.report;
  rep.tool_version = softcheck_version;
  rep.suite = "compare";
  rep.seed = 0;
  rep.oracle_bits = s.oracle_bits;
  rep.oracle.mode = s.tiered ? "tiered" : "mpfr";
  rep.oracle.rows = oracle_rows;
  rep.oracle.mpfr_rows = mpfr_rows;
  rep.families = {"compare"};
  rep.sizes = {cols};
  rep.temperatures = {s.temperature};
  rep.reference_rule = s.reference_rule;
  rep.kernels.push_back(std::move(k));
  return res;
}

}  // namespace softcheck
