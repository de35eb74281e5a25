#include "softcheck/generators.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <memory>
#include <tuple>
#include <utility>

#include "recipes.hpp"
#include "softcheck/input_families.hpp"
#include "support.hpp"

namespace softcheck::gen {

using props::detail::complexity;
using props::detail::round_to_bits;

std::string_view name(RowDomain d) {
  switch (d) {
    case RowDomain::any: return "any";
    case RowDomain::finite: return "finite";
    case RowDomain::finite_or_masked: return "finite_or_masked";
    case RowDomain::masked: return "masked";
    case RowDomain::fully_masked: return "fully_masked";
    case RowDomain::nonfinite: return "nonfinite";
    case RowDomain::no_nan_or_pos_inf: return "no_nan_or_pos_inf";
  }
  return "?";
}

bool in_domain(std::span<const double> row, RowDomain d) {
  if (row.empty()) return false;
  std::size_t finite = 0, neg_inf = 0, bad = 0;  // bad: +inf or NaN
  for (double v : row) {
    if (std::isfinite(v)) ++finite;
    else if (v == -INFINITY) ++neg_inf;
    else ++bad;
  }
  switch (d) {
    case RowDomain::any: return true;
    case RowDomain::finite: return finite == row.size();
    case RowDomain::finite_or_masked: return bad == 0 && finite > 0;
    case RowDomain::masked: return bad == 0 && finite > 0 && neg_inf > 0;
    case RowDomain::fully_masked: return neg_inf == row.size();
    case RowDomain::nonfinite: return bad > 0;
    case RowDomain::no_nan_or_pos_inf: return bad == 0;
  }
  return false;
}

// ---- shrinking of one value -------------------------------------------------
namespace {


bool exact_in(double c, Format f) { return std::isnan(c) || round_to_format(c, f) == c; }

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

std::vector<double> raw_candidates(double v) {
  std::vector<double> c = {0.0, 1.0, -1.0};
  if (std::isnan(v)) {
    c.push_back(INFINITY);
    return c;
  }
  if (!std::isfinite(v) || v == 0) return c;
  c.push_back(std::fabs(v));
  c.push_back(std::trunc(v));
  for (int k : {1, 2, 3, 4, 8, 12, 16}) c.push_back(round_to_bits(v, k));
  const int e = std::ilogb(v);
  c.push_back(std::ldexp(v, -e));      // into the binade of 1
  c.push_back(std::ldexp(v, -e / 2));  // half way there
  c.push_back(std::ldexp(v, e > 0 ? -1 : 1));
  return c;
}

}  // namespace

std::vector<double> shrink_value(double v, Format f) {
  std::vector<double> out;
  const auto cv = complexity(v);
  for (double c : raw_candidates(v)) {
    if (std::isfinite(v) && !std::isfinite(c)) continue;
    if (!exact_in(c, f) || !(complexity(c) < cv)) continue;
    if (std::any_of(out.begin(), out.end(), [&](double o) { return same_bits(o, c); })) continue;
    out.push_back(c);
  }
  return out;
}

// ---- shrinking of a row --------------------------------------------------------
namespace {

bool same_row(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_bits);
}

// The whole row at once: every entry truncated, or rounded to 1 / 4 bits, where
// that is a valid shrink of the entry. Cuts long shrink sequences short.
std::vector<std::vector<double>> whole_row_simplifications(const std::vector<double>& row, Format f) {
  std::vector<std::vector<double>> out;
  const std::function<double(double)> transforms[] = {
      [](double v) { return std::trunc(v); },
      [](double v) { return round_to_bits(v, 1); },
      [](double v) { return round_to_bits(v, 4); },
  };
  for (const auto& t : transforms) {
    std::vector<double> r = row;
    for (double& v : r) {
      if (!std::isfinite(v) || v == 0) continue;
      const double c = t(v);
      if (std::isfinite(c) && exact_in(c, f) && complexity(c) < complexity(v)) v = c;
    }
    if (!same_row(r, row) && std::none_of(out.begin(), out.end(), [&](const auto& o) { return same_row(o, r); }))
      out.push_back(std::move(r));
  }
  return out;
}

// Removes contiguous chunks of halving length: n/2 (both halves), n/4, ..., 1,
// about 2n candidates, generated lazily. (rc::shrink::removeChunks enumerates
// every contiguous chunk, O(n^2) candidates, and stalls on long rows: a single
// culprit in a 1000-entry row is isolated here in ~log2(n) accepted steps.)
rc::Seq<std::vector<double>> remove_chunks(const std::vector<double>& row) {
  const std::size_t n = row.size();
  std::vector<std::pair<std::size_t, std::size_t>> cuts;  // (start, length)
  for (std::size_t len = (n + 1) / 2; len >= 1; len = len == 1 ? 0 : (len + 1) / 2)
    for (std::size_t start = 0; start < n; start += len) cuts.emplace_back(start, std::min(len, n - start));
  auto shared = std::make_shared<const std::vector<double>>(row);
  return rc::seq::map(rc::seq::fromContainer(std::move(cuts)), [shared](std::pair<std::size_t, std::size_t> cut) {
    const std::vector<double>& r = *shared;
    std::vector<double> out;
    out.reserve(r.size() - cut.second);
    out.insert(out.end(), r.begin(), r.begin() + static_cast<std::ptrdiff_t>(cut.first));
    out.insert(out.end(), r.begin() + static_cast<std::ptrdiff_t>(cut.first + cut.second), r.end());
    return out;
  });
}

rc::Seq<std::vector<double>> shrink_row(const std::vector<double>& row, Format f, RowDomain d) {
  auto chunks = remove_chunks(row);
  auto whole = rc::seq::fromContainer(whole_row_simplifications(row, f));
  auto each = rc::shrink::eachElement(row, [f](double v) { return rc::seq::fromContainer(shrink_value(v, f)); });
  return rc::seq::filter(rc::seq::concat(std::move(chunks), std::move(whole), std::move(each)),
                         [d](const std::vector<double>& r) { return in_domain(r, d); });
}

}  // namespace

rc::Shrinkable<std::vector<double>> shrinkable_row(std::vector<double> row, Format f, RowDomain domain) {
  return rc::shrinkable::shrinkRecur(std::move(row),
                                     [f, domain](const std::vector<double>& r) { return shrink_row(r, f, domain); });
}

// ---- generators -------------------------------------------------------------------
namespace {

using Recipe = std::function<std::vector<double>(Rng&, std::size_t)>;

// A RapidCheck generator from a recipe: the row is drawn with the deterministic
// Rng seeded from RapidCheck's random stream, then shrunk by shrinkable_row.
class RowGen {
 public:
  RowGen(Format f, RowDomain d, RowOptions opt, std::size_t min_len, Recipe recipe)
      : f_(f), d_(d), opt_(opt), min_len_(min_len), recipe_(std::move(recipe)) {}

  rc::Shrinkable<std::vector<double>> operator()(const rc::Random& random, int size) const {
    rc::Random r(random);
    Rng rng(r.next());
    const std::size_t n = std::max(detail::pick_length(rng, opt_, size), min_len_);
    return shrinkable_row(recipe_(rng, n), f_, d_);
  }

 private:
  Format f_;
  RowDomain d_;
  RowOptions opt_;
  std::size_t min_len_;
  Recipe recipe_;
};

rc::Gen<std::vector<double>> make(Format f, RowDomain d, RowOptions opt, std::size_t min_len,
                                  std::vector<double> (*recipe)(Rng&, Format, std::size_t)) {
  return rc::Gen<std::vector<double>>(
      RowGen(f, d, opt, min_len, [f, recipe](Rng& rng, std::size_t n) { return recipe(rng, f, n); }));
}

class ValueGen {
 public:
  explicit ValueGen(Format f) : f_(f) {}
  rc::Shrinkable<double> operator()(const rc::Random& random, int) const {
    rc::Random r(random);
    Rng rng(r.next());
    const double v = detail::any_row(rng, f_, 1)[0];
    const Format f = f_;
    return rc::shrinkable::shrinkRecur(v, [f](double x) { return rc::seq::fromContainer(shrink_value(x, f)); });
  }

 private:
  Format f_;
};

// Temperatures the bugs hide behind: 1 (most kernels special-case it), simple
// powers of two, decimal values that are not exact in binary, extremes.
class TemperatureGen {
 public:
  rc::Shrinkable<double> operator()(const rc::Random& random, int) const {
    rc::Random r(random);
    Rng rng(r.next());
    static constexpr double kListed[] = {0.5, 2.0, 0.25, 4.0, 0.1, 10.0, 0.7, 1.5, 3.0, 0.01, 100.0};
    const double u = rng.uniform();
    double t = 1.0;
    if (u >= 0.55 && u < 0.8) t = kListed[rng.below(std::size(kListed))];
    else if (u >= 0.8) t = std::exp(rng.uniform(std::log(1e-2), std::log(1e2)));
    return rc::shrinkable::shrinkRecur(t, [](double x) {
      std::vector<double> c = shrink_value(x, Format::f64);
      std::erase_if(c, [](double v) { return !(v > 0); });
      return rc::seq::fromContainer(std::move(c));
    });
  }
};

}  // namespace

rc::Gen<double> value(Format f) { return rc::Gen<double>(ValueGen(f)); }
rc::Gen<double> temperature() { return rc::Gen<double>(TemperatureGen()); }

rc::Gen<std::vector<double>> finite_row(Format f, RowOptions opt) {
  return make(f, RowDomain::finite, opt, 1, detail::finite_row);
}
rc::Gen<std::vector<double>> masked_row(Format f, RowOptions opt) {
  opt.max_cols = std::max<std::size_t>(opt.max_cols, 2);
  return make(f, RowDomain::masked, opt, 2, detail::masked_row);
}
rc::Gen<std::vector<double>> contract_row(Format f, RowOptions opt) {
  return rc::gen::weightedOneOf<std::vector<double>>(
      {{7, finite_row(f, opt)}, {2, masked_row(f, opt)}, {1, family_row(f, RowDomain::finite_or_masked, opt)}});
}
rc::Gen<std::vector<double>> fully_masked_row(Format f, RowOptions opt) {
  return rc::Gen<std::vector<double>>(RowGen(f, RowDomain::fully_masked, opt, 1, [](Rng&, std::size_t n) {
    return std::vector<double>(n, -INFINITY);
  }));
}
rc::Gen<std::vector<double>> nonfinite_row(Format f, RowOptions opt) {
  return make(f, RowDomain::nonfinite, opt, 1, detail::nonfinite_row);
}
rc::Gen<std::vector<double>> mask_1e9_row(Format f, RowOptions opt) {
  return make(f, RowDomain::no_nan_or_pos_inf, opt, 1, detail::mask_1e9_row);
}
rc::Gen<std::vector<double>> underflow_row(Format f, RowOptions opt) {
  return make(f, RowDomain::finite_or_masked, opt, 1, detail::underflow_row);
}
rc::Gen<std::vector<double>> lattice_row(Format f, RowOptions opt) {
  return make(f, RowDomain::finite_or_masked, opt, 1, detail::lattice_row);
}
rc::Gen<std::vector<double>> family_row(Format f, RowDomain domain, RowOptions opt) {
  const RowDomain shrink_domain = domain == RowDomain::masked ? RowDomain::finite_or_masked : domain;
  return rc::Gen<std::vector<double>>(RowGen(f, shrink_domain, opt, 1, [f, domain](Rng& rng, std::size_t n) {
    return detail::family_row(rng, f, n, domain);
  }));
}
rc::Gen<std::vector<double>> any_row(Format f, RowOptions opt) {
  return make(f, RowDomain::any, opt, 1, detail::any_row);
}

}  // namespace softcheck::gen
