#include "gradient_checks.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <utility>

#include "invariants.hpp"
#include "softcheck/judge.hpp"

namespace softcheck::fuzz {

namespace {

bool in_scope(const FuzzCase& c, const Kernel& k, std::int64_t r) {
  return classify(c.row(r)) != RowKind::nonfinite && in_property_scope(c.row(r), c.temperature, k.format);
}

bool ignored(const FuzzCase& c, std::int64_t r) {
  return !c.targets.empty() && c.targets[static_cast<std::size_t>(r)] == ignore_index;
}

// "dx[3] = nan, expected 0x0p+0 (a masked entry)": the first bad entry.
std::string entry_text(std::string_view output, std::size_t j, double got, const std::string& expected) {
  return std::string(output) + "[" + std::to_string(j) + "] = " + props::format_value(got) + ", expected " + expected;
}

// The first output value of row r for which `bad(output, j, value)` holds.
template <class Bad>
std::optional<std::string> first_bad(const FuzzCase& c, Op op, std::span<const double> y, std::int64_t r, Bad bad) {
  for (std::size_t i = 0; i < spec(op).out.size(); ++i) {
    const std::span<const double> out = output_row(c, op, y, i, r);
    for (std::size_t j = 0; j < out.size(); ++j)
      if (auto expected = bad(spec(op).out[i], j, out[j])) return entry_text(spec(op).out[i].name, j, out[j], *expected);
  }
  return std::nullopt;
}

using Expected = std::optional<std::string>;

std::optional<std::string> ignored_row(const FuzzCase& c, Op op, std::span<const double> y, std::int64_t r) {
  return first_bad(c, op, y, r, [](const Operand&, std::size_t, double v) -> Expected {
    if (v == 0) return std::nullopt;
    return "0 (an ignored row)";
  });
}

std::optional<std::string> fully_masked(const FuzzCase& c, const Kernel& k, Op op, std::span<const double> y,
                                        std::int64_t r) {
  const auto n = static_cast<double>(c.cols);
  return first_bad(c, op, y, r, [&](const Operand& o, std::size_t, double v) -> Expected {
    if (is_masked_row_value(v, o.kind, k.masked_policy, n, unit_roundoff(k.format))) return std::nullopt;
    return props::format_value(masked_row_value(o.kind, k.masked_policy, n)) + " (policy " +
           std::string(name(k.masked_policy)) + ")";
  });
}

// Label smoothing moves a masked entry's cross-entropy gradient to -eps / n,
// a rounded value: left to the differential check's gradient_accuracy.
std::optional<std::string> masked_entries(const FuzzCase& c, const Kernel& k, Op op, std::span<const double> y,
                                          std::int64_t r) {
  const std::span<const double> x = c.row(r);
  const bool smoothed = k.find(op)->params.label_smoothing > 0;
  return first_bad(c, op, y, r, [&](const Operand& o, std::size_t j, double v) -> Expected {
    if (x[j] != -INFINITY || o.shape != OperandShape::row) return std::nullopt;
    if (op == Op::cross_entropy &&
        (smoothed || static_cast<std::int64_t>(j) == c.targets[static_cast<std::size_t>(r)]))
      return std::nullopt;
    // y: masked_entry_value (0, -inf); dx: 0, or g_j for log-softmax.
    const double expected = !is_gradient(o.kind)                       ? masked_entry_value(o.kind)
                            : o.kind == OutputKind::log_softmax_gradient ? c.upstream_row(r)[j]
                                                                         : 0.0;
    if (v == expected) return std::nullopt;
    return props::format_value(expected) + " (a masked entry)";
  });
}

std::optional<std::string> no_nan(const FuzzCase& c, Op op, std::span<const double> y, std::int64_t r) {
  return first_bad(c, op, y, r, [](const Operand&, std::size_t, double v) -> Expected {
    if (!std::isnan(v)) return std::nullopt;
    return "a number (a row with a finite entry)";
  });
}

}  // namespace

props::Case gradient_case(const FuzzCase& c, std::int64_t r) {
  const std::span<const double> x = c.row(r);
  props::Case one(std::vector<double>(x.begin(), x.end()), c.temperature);
  if (!c.targets.empty()) one.target = c.targets[static_cast<std::size_t>(r)];
  if (!c.upstream.empty()) {
    const std::span<const double> g = c.upstream_row(r);
    one.upstream.assign(g.begin(), g.end());
  }
  return one;
}

std::optional<Violation> confirm_gradient_row(const FuzzCase& c, const Kernel& k, std::int64_t r,
                                              std::string_view property, std::span<const double> y,
                                              std::string output) {
  GradientRow got;
  got.output = std::move(output);
  for (std::size_t i = 0; i < spec(c.op).out.size(); ++i) {
    const std::span<const double> out = output_row(c, c.op, y, i, r);
    got.outputs.emplace_back(std::string(spec(c.op).out[i].name), std::vector<double>(out.begin(), out.end()));
  }
  props::Case one = gradient_case(c, r);
  if (auto v = confirm(k, c.op, property, one, context_of(c, r))) {
    v->gradient = std::move(got);
    return v;
  }
  // Not confirmed on the row alone: does the row depend on its neighbours?
  FuzzCase alone = c;
  alone.rows = 1;
  alone.values = one.row;
  alone.targets = one.target ? std::vector<std::int64_t>{*one.target} : std::vector<std::int64_t>{};
  alone.upstream = one.upstream;
  const std::vector<double> y_alone = run_batch(k, c.op, alone);
  bool same = true;
  for (std::size_t i = 0; i < spec(c.op).out.size(); ++i)
    same = same && same_bits(output_row(alone, c.op, y_alone, i, 0), output_row(c, c.op, y, i, r));
  if (same) return std::nullopt;
  props::CaseResult res{props::CaseStatus::fail, 1, 0, "rows",
                        "row " + std::to_string(r) + " of a " + std::to_string(c.rows) +
                            "-row batch differs bitwise from the same row run alone (the replay line runs it "
                            "with the suite's own neighbours)"};
  return Violation{&k, c.op, "batch_independence", std::move(one), std::move(res), context_of(c, r), std::move(got)};
}

std::optional<GradientSuspect> gradient_suspect(const FuzzCase& c, const Kernel& k, Op op, std::span<const double> y,
                                                std::int64_t r) {
  if (!in_scope(c, k, r)) return std::nullopt;  // only run: the sanitizers watch
  const bool all_masked = classify(c.row(r)) == RowKind::fully_masked;
  if (op == Op::cross_entropy && ignored(c, r)) {
    if (auto m = ignored_row(c, op, y, r)) return GradientSuspect{all_masked ? "gradient_fully_masked" : "ce_signs", *m};
    return std::nullopt;
  }
  if (all_masked) {
    if (auto m = fully_masked(c, k, op, y, r)) return GradientSuspect{"gradient_fully_masked", *m};
    return std::nullopt;
  }
  if (auto m = masked_entries(c, k, op, y, r)) return GradientSuspect{"gradient_masked_entries", *m};
  if (auto m = no_nan(c, op, y, r)) return GradientSuspect{"gradient_accuracy", *m};
  return std::nullopt;
}

std::optional<Violation> check_gradient_invariants(const FuzzCase& c, const Kernel& k, Op op,
                                                   std::span<const double> y) {
  for (std::int64_t r = 0; r < c.rows; ++r)
    if (const auto s = gradient_suspect(c, k, op, y, r))
      if (auto v = confirm_gradient_row(c, k, r, s->property, y, "")) return v;
  return std::nullopt;
}

std::optional<Violation> check_gradient_differential(const FuzzCase& c, std::span<const double> y,
                                                     std::span<const double> y_partner) {
  // One judge per format, its storage reused input to input.
  thread_local std::map<Format, oracle::RowJudge> judges;
  const Format f = c.kernel->format;
  auto it = judges.find(f);
  if (it == judges.end()) it = judges.emplace(f, oracle::RowJudge(f, oracle::JudgeOptions::exact_only())).first;
  oracle::RowJudge& judge = it->second;
  const OperandList outputs = spec(c.op).out;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    if (!in_scope(c, *c.kernel, r)) continue;
    judge.set_row(c.row(r), c.temperature);
    if (!c.targets.empty()) judge.set_target(c.targets[static_cast<std::size_t>(r)]);
    if (!c.upstream.empty()) judge.set_upstream(c.upstream_row(r));
    for (const auto& [k, ys] : {std::pair{c.kernel, y}, std::pair{c.partner, y_partner}}) {
      if (k == nullptr) continue;
      const OpDecl& d = *k->find(c.op);
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        const std::span<const double> out = output_row(c, c.op, ys, i, r);
        const oracle::RowVerdict v = judge.judge(d, k->masked_policy, out, i);
        // broken too: holds() alone passes a NaN/inf of a kernel without a
        // contract (nothing to be within), which the floor forbids.
        if (v.holds() && !v.broken) continue;
        // An all -inf row is gradient_fully_masked's (gradient_accuracy's scope
        // leaves it out).
        const char* property =
            v.status == oracle::RowStatus::all_masked ? "gradient_fully_masked" : "gradient_accuracy";
        if (auto violation = confirm_gradient_row(c, *k, r, property, ys, std::string(outputs[i].name)))
          return violation;
      }
    }
  }
  return std::nullopt;
}

}  // namespace softcheck::fuzz
