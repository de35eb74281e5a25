// Coverage of the generated cases (properties.hpp, CaseClass): which kinds of
// input each property met, as RapidCheck's classify reports it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "recipes.hpp"
#include "registry.hpp"
#include "support.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props {

std::string_view name(CaseClass c) {
  switch (c) {
    case CaseClass::masks: return "masks";
    case CaseClass::ties: return "ties";
    case CaseClass::overflow_edge: return "overflow_edge";
    case CaseClass::subnormal_outputs: return "subnormal_outputs";
    case CaseClass::t_not_1: return "t_not_1";
    case CaseClass::long_rows: return "long_rows";
  }
  return "?";
}

namespace {

constexpr std::size_t long_row_length = 512;

bool has_ties(const std::vector<double>& row) {
  std::vector<double> finite;
  std::copy_if(row.begin(), row.end(), std::back_inserter(finite), [](double v) { return std::isfinite(v); });
  std::sort(finite.begin(), finite.end());
  return std::adjacent_find(finite.begin(), finite.end()) != finite.end();
}

// |x_i / T| in the band the generators draw around E = ln(max): the edge +- 2
// and XNNPACK's U(90, 100) scaled to the edge (recipes.cpp, overflow_edge_row).
bool has_overflow_edge(const Case& c, Format f) {
  const double edge = gen::detail::overflow_edge(f);
  const double lo = edge - 2, hi = std::max(edge + 2, 1.13 * edge);
  return std::any_of(c.row.begin(), c.row.end(), [&](double x) {
    const double z = std::fabs(x / c.temperature);
    return std::isfinite(x) && z >= lo && z <= hi;
  });
}

// An exact softmax weight g_j = e^(z_j - lse) in [eta/2, 2^emin): it rounds to
// a subnormal of f. lse in long double (64 bits, exponent range beyond any z):
// enough to place z_j - lse against the two edges.
bool has_subnormal_output(const Case& c, Format f) {
  using Wide = long double;
  Wide a = -INFINITY;
  for (double x : c.row) {
    if (std::isnan(x) || x == INFINITY) return false;  // no exact softmax
    if (std::isfinite(x)) a = std::max(a, static_cast<Wide>(x) / static_cast<Wide>(c.temperature));
  }
  if (!std::isfinite(a)) return false;  // fully masked
  // e^d for d < -11400 is below half of long double's least subnormal
  // (2^-16445 = e^-11398.8) and rounds to 0: skipped, the sum is the same.
  // glibc's underflow path (errno, fesetenv) made this a quarter of the
  // property checks' time on the lattice rows.
  Wide s = 0;
  for (double x : c.row) {
    const Wide d = static_cast<Wide>(x) / static_cast<Wide>(c.temperature) - a;
    if (std::isfinite(x) && d > -11400) s += std::exp(d);
  }
  const Wide lse = a + std::log(s);
  const Wide lo = std::log(static_cast<Wide>(denorm_min(f)) / 2);
  const Wide hi = static_cast<Wide>(info(f).emin) * std::log(Wide(2));
  return std::any_of(c.row.begin(), c.row.end(), [&](double x) {
    if (!std::isfinite(x)) return false;
    const Wide log_g = static_cast<Wide>(x) / static_cast<Wide>(c.temperature) - lse;
    return log_g >= lo && log_g < hi;
  });
}

std::array<bool, case_class_count> classify_row(const Case& c, Format f) {
  std::array<bool, case_class_count> in{};
  const auto set = [&](CaseClass k, bool v) { in[static_cast<std::size_t>(k)] = v; };
  set(CaseClass::masks, std::any_of(c.row.begin(), c.row.end(), [](double v) { return v == -INFINITY; }));
  set(CaseClass::ties, has_ties(c.row));
  set(CaseClass::overflow_edge, has_overflow_edge(c, f));
  set(CaseClass::subnormal_outputs, has_subnormal_output(c, f));
  set(CaseClass::t_not_1, c.temperature != 1.0);
  set(CaseClass::long_rows, c.row.size() > long_row_length);
  return in;
}

// An attention case's scores z_j = (q . K_j) / (T sqrt d) + x_j in long
// double (-inf for a masked key): the row its softmax sees, at T = 1. Ties,
// the overflow edge and subnormal weights are about the scores, not the
// bias row (whose zeros would always tie). A kernel's softcap is not the
// case's: the classes are those of the uncapped scores.
std::optional<Case> attention_scores(const Case& c) {
  if (c.head_dim < 1) return std::nullopt;
  const auto d = static_cast<std::size_t>(c.head_dim), n = c.row.size();
  if (c.query.size() != d || c.keys.size() != n * d) return std::nullopt;
  using Wide = long double;
  const Wide scale = 1 / (static_cast<Wide>(c.temperature) * std::sqrt(static_cast<Wide>(d)));
  Case z;
  z.row.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(c.row[j])) {
      z.row[j] = c.row[j];
      continue;
    }
    Wide dot = 0;
    for (std::size_t i = 0; i < d; ++i) dot += static_cast<Wide>(c.query[i]) * static_cast<Wide>(c.keys[j * d + i]);
    z.row[j] = static_cast<double>(dot * scale + static_cast<Wide>(c.row[j]));
  }
  return z;
}

// A long row's classes, kept per thread (LongRowMemo, support.hpp) by format
// and temperature: classifying one sorts a copy for ties and takes a long
// double exp per entry, which was 18 % of the quick suite's property checks.
std::array<bool, case_class_count> classify_long_row(const Case& c, Format f) {
  thread_local detail::LongRowMemo<std::pair<std::uint64_t, Format>, std::array<bool, case_class_count>> memo;
  return memo.get(c.row, {std::bit_cast<std::uint64_t>(c.temperature), f}, [&] { return classify_row(c, f); });
}

}  // namespace

std::array<bool, case_class_count> classify(const Case& c, Format f) {
  const std::optional<Case> z = attention_scores(c);
  if (!z) return classify_long_row(c, f);
  std::array<bool, case_class_count> in = classify_row(*z, f);
  in[static_cast<std::size_t>(CaseClass::t_not_1)] = c.temperature != 1.0;
  return in;
}

std::vector<CaseClass> never_met(const PropertyVerdict& v) {
  std::vector<CaseClass> out;
  const detail::PropertyDef* def = detail::find_def(v.property);
  if (v.verdict != Verdict::passed || !v.coverage || def == nullptr) return out;
  for (std::size_t i = 0; i < case_class_count; ++i) {
    const auto c = static_cast<CaseClass>(i);
    if ((def->expected & detail::class_bit(c)) != 0 && (*v.coverage)[c] == 0) out.push_back(c);
  }
  return out;
}

void print_coverage(std::ostream& os, std::span<const PropertyVerdict> verdicts) {
  std::size_t kw = 0, ow = 0, pw = 0;
  for (const PropertyVerdict& v : verdicts) {
    if (!v.coverage) continue;
    kw = std::max(kw, v.kernel.size() + 1);
    ow = std::max(ow, name(v.op).size() + 1);
    pw = std::max(pw, v.property.size() + 1);
  }
  if (kw == 0) return;
  os << "\nCoverage: passing cases per class (docs/properties.md, \"Coverage\")\n";
  for (const PropertyVerdict& v : verdicts) {
    if (!v.coverage) continue;
    os << "coverage " << std::left << std::setw(static_cast<int>(kw)) << v.kernel << std::setw(static_cast<int>(ow))
       << name(v.op) << std::setw(static_cast<int>(pw)) << v.property << "cases=" << v.coverage->cases;
    for (std::size_t i = 0; i < case_class_count; ++i)
      os << " " << name(static_cast<CaseClass>(i)) << "=" << v.coverage->counts[i];
    os << "\n";
  }
  for (const PropertyVerdict& v : verdicts) {
    const std::vector<CaseClass> missed = never_met(v);
    if (missed.empty()) continue;
    os << "never met: " << v.kernel << " " << name(v.op) << " " << v.property << ": none of its " << v.coverage->cases
       << " passing cases had ";
    for (std::size_t i = 0; i < missed.size(); ++i) os << (i ? ", " : "") << name(missed[i]);
    os << "\n";
  }
}

}  // namespace softcheck::props
