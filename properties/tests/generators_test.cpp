// The generators: every row lies in its domain and in its format, lengths stay
// within the cap, and shrinking never leaves the domain or the format.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <functional>

#include "softcheck/generators.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::gen {
namespace {

bool exact_row(std::span<const double> row, Format f) {
  return std::all_of(row.begin(), row.end(), [f](double v) { return std::isnan(v) || round_to_format(v, f) == v; });
}

struct Named {
  const char* name;
  RowDomain domain;
  std::function<rc::Gen<std::vector<double>>(Format, RowOptions)> make;
};

const std::vector<Named>& generators() {
  static const std::vector<Named> all = {
      {"finite_row", RowDomain::finite, [](Format f, RowOptions o) { return finite_row(f, o); }},
      {"masked_row", RowDomain::masked, [](Format f, RowOptions o) { return masked_row(f, o); }},
      {"contract_row", RowDomain::finite_or_masked, [](Format f, RowOptions o) { return contract_row(f, o); }},
      {"fully_masked_row", RowDomain::fully_masked, [](Format f, RowOptions o) { return fully_masked_row(f, o); }},
      {"nonfinite_row", RowDomain::nonfinite, [](Format f, RowOptions o) { return nonfinite_row(f, o); }},
      {"mask_1e9_row", RowDomain::no_nan_or_pos_inf, [](Format f, RowOptions o) { return mask_1e9_row(f, o); }},
      {"underflow_row", RowDomain::finite_or_masked, [](Format f, RowOptions o) { return underflow_row(f, o); }},
      {"lattice_row", RowDomain::finite_or_masked, [](Format f, RowOptions o) { return lattice_row(f, o); }},
      {"family_row", RowDomain::finite_or_masked,
       [](Format f, RowOptions o) { return family_row(f, RowDomain::finite_or_masked, o); }},
      {"any_row", RowDomain::any, [](Format f, RowOptions o) { return any_row(f, o); }},
  };
  return all;
}

rc::Gen<Format> formats() { return rc::gen::element(Format::f64, Format::f32, Format::f16, Format::bf16); }

RC_GTEST_PROP(Generators, RowsLieInTheirDomainFormatAndLengthCap, ()) {
  const Named& g = *rc::gen::elementOf(generators());
  const Format f = *formats();
  const RowOptions opt{static_cast<std::size_t>(*rc::gen::inRange(2, 200)), 0.5};
  const std::vector<double> row = *g.make(f, opt);
  RC_TAG(g.name);
  RC_LOG() << g.name << " in " << name(f) << ", n = " << row.size() << ": " << props::format_row(row) << "\n";
  RC_ASSERT(in_domain(row, g.domain));
  RC_ASSERT(exact_row(row, f));
  RC_ASSERT(row.size() <= std::max<std::size_t>(opt.max_cols, 3));  // fixed families have 3 entries
}

RC_GTEST_PROP(Generators, ShrinksStayInDomainAndFormat, ()) {
  const Named& g = *rc::gen::elementOf(generators());
  const Format f = *formats();
  const std::vector<double> row = *rc::gen::noShrink(g.make(f, RowOptions{16, 0}));
  const rc::Shrinkable<std::vector<double>> s = shrinkable_row(row, f, g.domain);
  int seen = 0;
  rc::seq::forEach(rc::seq::take(200, s.shrinks()), [&](const rc::Shrinkable<std::vector<double>>& c) {
    const std::vector<double> r = c.value();
    RC_ASSERT(in_domain(r, g.domain));
    RC_ASSERT(exact_row(r, f));
    ++seen;
  });
  RC_ASSERT(seen >= 0);
}

RC_GTEST_PROP(Generators, ShrinkValueGivesSimplerExactValues, ()) {
  const Format f = *formats();
  const double v = *rc::gen::noShrink(value(f));
  for (double c : shrink_value(v, f)) {
    RC_ASSERT(round_to_format(c, f) == c);
    RC_ASSERT(!(std::isfinite(v) && !std::isfinite(c)));
    RC_ASSERT(!(c == v && std::signbit(c) == std::signbit(v)));
  }
}

RC_GTEST_PROP(Generators, TemperaturesArePositiveAndFinite, ()) {
  const double t = *temperature();
  RC_ASSERT(std::isfinite(t));
  RC_ASSERT(t > 0);
}

// Shrinking terminates: following the first shrink repeatedly reaches a row
// with no shrinks (the order of shrink_value is well founded).
RC_GTEST_PROP(Generators, ShrinkChainsTerminate, ()) {
  const Format f = *formats();
  const std::vector<double> row = *rc::gen::noShrink(any_row(f, RowOptions{8, 0}));
  rc::Shrinkable<std::vector<double>> s = shrinkable_row(row, f, RowDomain::any);
  int steps = 0;
  while (true) {
    const auto next = s.shrinks().next();
    if (!next) break;
    s = *next;
    RC_ASSERT(++steps < 100000);
  }
  RC_ASSERT(s.value().size() == 1u);  // removing chunks reaches a single entry ...
  RC_ASSERT(s.value()[0] == 0.0);     // ... shrunk to +0
  RC_ASSERT(!std::signbit(s.value()[0]));
}

// A single culprit in a long row is isolated quickly: greedy shrinking (as
// RapidCheck does it: take the first shrink that still fails) of a 4000-entry
// row with one entry >= 1e30 ends at that entry's simplest form, the power of
// two 2^ceil(log2 1e30), within a small number of evaluations.
TEST(Shrinking, IsolatesOneCulpritInALongRow) {
  std::vector<double> row(4000);
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = round_to_format(0.37 * static_cast<double>(i % 17) - 2.9, Format::f32);
  row[2718] = round_to_format(3.3e33, Format::f32);
  const auto fails = [](const std::vector<double>& r) {
    return std::any_of(r.begin(), r.end(), [](double v) { return v >= 1e30; });
  };
  rc::Shrinkable<std::vector<double>> s = shrinkable_row(row, Format::f32, RowDomain::finite);
  int evaluations = 0;
  for (bool progress = true; progress;) {
    progress = false;
    auto shrinks = s.shrinks();
    while (auto next = shrinks.next()) {
      ++evaluations;
      if (fails(next->value())) {
        s = *next;
        progress = true;
        break;
      }
    }
  }
  const double expected = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(1e30))));
  ASSERT_EQ(s.value().size(), 1u);
  EXPECT_EQ(s.value()[0], expected);
  EXPECT_LT(evaluations, 2000);  // CheckOptions::max_shrink_evals default
}

}  // namespace
}  // namespace softcheck::gen
