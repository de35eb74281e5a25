#include "attention_cases.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <tuple>
#include <utility>

#include "softcheck/input_families.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

namespace {

std::size_t keys_of(const Case& c) { return c.row.size(); }

bool shapes_ok(const Case& c) {
  if (c.row.empty() || c.head_dim < 1) return false;
  const auto d = static_cast<std::size_t>(c.head_dim), n = keys_of(c);
  return c.query.size() == d && c.keys.size() == n * d && c.values.size() == n * d;
}

// a + b rounded to s is exact (TwoSum's error term is 0) and finite.
bool sum_exact(double a, double b, double s) {
  if (!std::isfinite(s)) return false;
  const double t = s - a;
  return (a - (s - t)) + (b - t) == 0;
}

// a * b rounded to p is exact: the fma residual is 0, and p is far enough
// above the subnormal range that a residual cannot underflow to 0.
bool product_exact(double a, double b, double p) {
  if (!std::isfinite(p)) return false;
  if (p == 0) return a == 0 || b == 0;
  return std::fabs(p) >= 0x1p-900 && std::fma(a, b, -p) == 0;
}

}  // namespace

std::vector<double> visible_bias(const Case& c) {
  if (!c.window.bounded()) return c.row;
  return window_masked_bias(c.row, c.window);
}

Case window_as_bias(Case c) {
  c.row = visible_bias(c);
  c.window = {};
  return c;
}

std::optional<std::vector<double>> exact_scores(const Case& c) {
  if (!shapes_ok(c) || !c.window.valid(static_cast<std::int64_t>(c.row.size()))) return std::nullopt;
  const std::vector<double> bias = visible_bias(c);
  const auto d = static_cast<std::size_t>(c.head_dim);
  // s = T sqrt(d): sqrt(d) exact for a perfect square, the product exact.
  const double root = std::sqrt(static_cast<double>(d));
  if (root * root != static_cast<double>(d)) return std::nullopt;
  const double s = c.temperature * root;
  if (!product_exact(c.temperature, root, s)) return std::nullopt;
  std::vector<double> z(keys_of(c));
  for (std::size_t j = 0; j < z.size(); ++j) {
    const double x = bias[j];
    if (x == -INFINITY) {
      z[j] = -INFINITY;
      continue;
    }
    if (!std::isfinite(x)) return std::nullopt;
    double acc = 0;
    for (std::size_t i = 0; i < d; ++i) {
      const double qi = c.query[i], ki = c.keys[j * d + i];
      const double p = qi * ki;
      if (!product_exact(qi, ki, p)) return std::nullopt;
      const double sum = acc + p;
      if (!sum_exact(acc, p, sum)) return std::nullopt;
      acc = sum;
    }
    // acc / s is exact when the quotient times s gives acc back exactly.
    const double q = acc / s;
    if (!std::isfinite(q) || (q != 0 && std::fabs(q) < 0x1p-900) || std::fma(q, s, -acc) != 0) return std::nullopt;
    z[j] = q + x;
    if (!sum_exact(q, x, z[j])) return std::nullopt;
  }
  return z;
}

bool in_attention_domain(const Case& c, AttentionDomain d) {
  if (!shapes_ok(c) || !c.window.valid(static_cast<std::int64_t>(c.row.size()))) return false;
  std::size_t masked = 0, visible = 0;
  for (double x : visible_bias(c)) {
    if (x == -INFINITY) ++masked;
    else if (std::isfinite(x)) ++visible;
    else return false;  // +inf or NaN: no exact attention
  }
  switch (d) {
    case AttentionDomain::visible: return visible > 0;
    case AttentionDomain::masked: return visible > 0 && masked > 0;
    case AttentionDomain::fully_masked: return visible == 0;
    case AttentionDomain::exact_scores: return visible > 0 && exact_scores(c).has_value();
    case AttentionDomain::unit_values:
      return visible > 0 && std::all_of(c.values.begin(), c.values.end(), [](double v) { return v == 1.0; });
  }
  return false;
}

// ---- shrinking ----------------------------------------------------------------------
namespace {

// Shrinking uses gen::shrink_value's complexity order (support.hpp); a
// whole-array simplification keeps only the entries it makes strictly
// simpler, so shrinking terminates.

// The case with head dimension d' <= d: each vector's first d' components.
Case with_head_dim(const Case& c, std::size_t to) {
  const auto d = static_cast<std::size_t>(c.head_dim), n = keys_of(c);
  Case out = c;
  out.head_dim = static_cast<std::int64_t>(to);
  out.query.assign(c.query.begin(), c.query.begin() + static_cast<std::ptrdiff_t>(to));
  out.keys.resize(n * to);
  out.values.resize(n * to);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < to; ++i) {
      out.keys[j * to + i] = c.keys[j * d + i];
      out.values[j * to + i] = c.values[j * d + i];
    }
  return out;
}

// The case without keys [start, start + length): their bias, K and V rows.
// The query keeps its own key: its position moves down by the keys removed
// before it (a chunk holding it leaves a position past the end or on
// another key; in_attention_domain's window check and the property decide).
Case without_keys(const Case& c, std::size_t start, std::size_t length) {
  const auto d = static_cast<std::size_t>(c.head_dim);
  Case out = c;
  const auto erase = [](std::vector<double>& v, std::size_t from, std::size_t count) {
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + count));
  };
  erase(out.row, start, length);
  erase(out.keys, start * d, length * d);
  erase(out.values, start * d, length * d);
  if (out.window.bounded() && static_cast<std::int64_t>(start + length) <= out.window.position)
    out.window.position -= static_cast<std::int64_t>(length);
  return out;
}

enum class Part { bias, query, keys, values };
enum class Simplify { zero, trunc, one_bit, four_bits };

std::vector<double>& part_of(Case& c, Part p) {
  switch (p) {
    case Part::query: return c.query;
    case Part::keys: return c.keys;
    case Part::values: return c.values;
    case Part::bias: break;
  }
  return c.row;
}

// One part of the case simplified as a whole: each finite entry replaced
// where that makes it strictly simpler and stays exact in f (the bias keeps
// its -inf masks). Returns false when nothing changed.
bool simplify(Case& c, Part p, Simplify how, Format f) {
  bool changed = false;
  for (double& v : part_of(c, p)) {
    if (!std::isfinite(v) || v == 0) continue;
    double s = 0;
    switch (how) {
      case Simplify::zero: s = 0; break;
      case Simplify::trunc: s = std::trunc(v); break;
      case Simplify::one_bit: s = round_to_bits(v, 1); break;
      case Simplify::four_bits: s = round_to_bits(v, 4); break;
    }
    if (std::isfinite(s) && round_to_format(s, f) == s && complexity(s) < complexity(v)) {
      v = s;
      changed = true;
    }
  }
  return changed;
}

rc::Seq<Case> shrink_case(const Case& c, Format f, AttentionDomain domain) {
  auto shared = std::make_shared<const Case>(c);
  const auto d = static_cast<std::size_t>(c.head_dim), n = keys_of(c);

  // Smaller head dimensions first: each evaluation costs n x d products.
  std::vector<std::size_t> dims;
  for (std::size_t to : {1, 2, 4, 8, 16, 32})
    if (to < d) dims.push_back(to);
  auto smaller_d = rc::seq::map(rc::seq::fromContainer(std::move(dims)),
                                [shared](std::size_t to) { return with_head_dim(*shared, to); });

  // Chunks of keys of halving length, as gen::shrinkable_row removes entries.
  std::vector<std::pair<std::size_t, std::size_t>> cuts;
  for (std::size_t len = (n + 1) / 2; len >= 1 && n > 1; len = len == 1 ? 0 : (len + 1) / 2)
    for (std::size_t start = 0; start < n; start += len) cuts.emplace_back(start, std::min(len, n - start));
  auto fewer_keys = rc::seq::map(rc::seq::fromContainer(std::move(cuts)),
                                 [shared](std::pair<std::size_t, std::size_t> cut) {
                                   return without_keys(*shared, cut.first, cut.second);
                                 });

  std::vector<Case> temperature;
  if (c.temperature != 1.0) {
    temperature.push_back(c);
    temperature.back().temperature = 1.0;
  }

  std::vector<std::pair<Part, Simplify>> wholes;
  for (Part p : {Part::query, Part::keys, Part::values, Part::bias})
    for (Simplify s : {Simplify::zero, Simplify::trunc, Simplify::one_bit, Simplify::four_bits})
      wholes.emplace_back(p, s);
  auto whole = rc::seq::filter(
      rc::seq::map(rc::seq::fromContainer(std::move(wholes)),
                   [shared, f](std::pair<Part, Simplify> w) -> std::optional<Case> {
                     Case out = *shared;
                     if (!simplify(out, w.first, w.second, f)) return std::nullopt;
                     return out;
                   }),
      [](const std::optional<Case>& o) { return o.has_value(); });
  auto whole_cases = rc::seq::map(std::move(whole), [](std::optional<Case> o) { return std::move(o).value(); });

  // Each bias entry (a mask may turn into a finite entry where the domain allows).
  std::vector<std::pair<std::size_t, double>> entries;
  for (std::size_t j = 0; j < n; ++j)
    for (double v : gen::shrink_value(c.row[j], f)) entries.emplace_back(j, v);
  auto each = rc::seq::map(rc::seq::fromContainer(std::move(entries)), [shared](std::pair<std::size_t, double> e) {
    Case out = *shared;
    out.row[e.first] = e.second;
    return out;
  });

  return rc::seq::filter(rc::seq::concat(std::move(smaller_d), std::move(fewer_keys),
                                         rc::seq::fromContainer(std::move(temperature)), std::move(whole_cases),
                                         std::move(each)),
                         [domain](const Case& s) { return in_attention_domain(s, domain); });
}

}  // namespace

rc::Shrinkable<Case> shrinkable_attention_case(Case c, Format f, AttentionDomain domain) {
  return rc::shrinkable::shrinkRecur(std::move(c),
                                     [f, domain](const Case& x) { return shrink_case(x, f, domain); });
}

// ---- generation -----------------------------------------------------------------------
namespace {

enum class Bias { zeros, random_mask, causal, tile_runs, sink, all_masked, causal_window, sliding_window, causal_masked };

struct Recipe {
  std::vector<std::pair<unsigned, Bias>> bias;  // weighted patterns
  AttentionDomain domain = AttentionDomain::visible;
  bool integer_qk = false;  // exactly representable scores
  bool v_ones = false;      // mass conservation
  std::size_t max_keys = 300;  // n <= min(300, RowOptions::max_cols)
};

template <class T>
T weighted(Rng& rng, const std::vector<std::pair<unsigned, T>>& choices) {
  unsigned total = 0;
  for (const auto& c : choices) total += c.first;
  auto pick = static_cast<unsigned>(rng.below(total));
  for (const auto& c : choices) {
    if (pick < c.first) return c.second;
    pick -= c.first;
  }
  return choices.back().second;
}

void fill_bias(std::vector<double>& x, Bias b, bool integer, Format f, Rng& rng) {
  const std::size_t n = x.size();
  std::fill(x.begin(), x.end(), 0.0);
  switch (b) {
    case Bias::zeros: break;
    case Bias::random_mask:
      for (double& v : x)
        if (rng.below(2) == 0) v = -INFINITY;
      break;
    case Bias::causal: {  // the query at position p sees keys 0 .. p
      const std::size_t p = rng.below(n);
      for (std::size_t j = p + 1; j < n; ++j) x[j] = -INFINITY;
      break;
    }
    case Bias::tile_runs: {  // whole tiles of a flash kernel's Bc masked (16 and 64: the kernels' tiles)
      const std::size_t tile = rng.below(2) == 0 ? 16 : 64;
      const std::size_t tiles = (n + tile - 1) / tile;
      for (std::size_t t = 0; t < tiles; ++t) {
        const bool edge = t == 0 || t + 1 == tiles;
        if (rng.below(edge ? 2 : 3) == 0)
          std::fill(x.begin() + static_cast<std::ptrdiff_t>(t * tile),
                    x.begin() + static_cast<std::ptrdiff_t>(std::min(n, (t + 1) * tile)), -INFINITY);
      }
      break;
    }
    case Bias::sink:  // one key every query attends to (an attention sink)
      x[0] = integer ? static_cast<double>(10 + rng.below(11)) : round_to_format(rng.uniform(10.0, 20.0), f);
      break;
    case Bias::all_masked: std::fill(x.begin(), x.end(), -INFINITY); break;
    case Bias::causal_masked:  // random -inf masks under a causal window
      for (double& v : x)
        if (rng.below(4) == 0) v = -INFINITY;
      break;
    case Bias::causal_window:
    case Bias::sliding_window: break;  // the window does the masking (window_of)
  }
}

// The query's window of a pattern (KeyWindow): causal (-1, 0), or a sliding
// window of w in [1, n] keys ending at the query (w - 1, 0); the position
// uniform, or at a 16-key tile edge (16 k - 1 or 16 k: the last key of a
// 16- or 64-key tile or the first of the next). Unbounded otherwise.
KeyWindow window_of(Bias b, std::size_t n, Rng& rng) {
  if (b != Bias::causal_window && b != Bias::sliding_window && b != Bias::causal_masked) return {};
  const auto keys = static_cast<std::int64_t>(n);
  std::int64_t p = static_cast<std::int64_t>(rng.below(n));
  if (rng.below(2) == 0) p = std::min<std::int64_t>(keys - 1, 16 * static_cast<std::int64_t>(1 + rng.below(n / 16 + 1)) - 1 +
                                                                  static_cast<std::int64_t>(rng.below(2)));
  if (b != Bias::sliding_window) return {p, -1, 0};
  return {p, static_cast<std::int64_t>(rng.below(n)), 0};
}

// Makes the bias row a member of the domain (the patterns may leave every
// key visible, or none).
void fit_domain(std::vector<double>& x, const KeyWindow& w, AttentionDomain d, Rng& rng) {
  const std::size_t n = x.size();
  if (d == AttentionDomain::fully_masked) {
    std::fill(x.begin(), x.end(), -INFINITY);
    return;
  }
  const auto visible = [&] {
    const std::vector<double> seen = w.bounded() ? window_masked_bias(x, w) : x;
    return std::count_if(seen.begin(), seen.end(), [](double v) { return v != -INFINITY; });
  };
  // The query's own key is inside every window.
  if (visible() == 0) x[w.bounded() ? static_cast<std::size_t>(w.position) : rng.below(n)] = 0;
  if (d == AttentionDomain::masked && visible() == static_cast<std::ptrdiff_t>(n)) {
    // n >= 2 here: mask one key other than a visible one we keep.
    x[1 + rng.below(n - 1)] = -INFINITY;
  }
}

class AttentionGen {
 public:
  AttentionGen(Format f, Recipe r) : f_(f), r_(std::move(r)) {}

  rc::Shrinkable<Case> operator()(const rc::Random& random, int size) const {
    rc::Random rr(random);
    Rng rng(rr.next());
    const Bias bias = weighted(rng, r_.bias);
    // n grows with RapidCheck's size (8 keys at size 0, 300 from size 98):
    // the early cases are cheap, later ones span several 64-key tiles.
    const std::size_t most = std::max<std::size_t>(r_.max_keys, 2);
    const std::size_t cap =
        std::min(most, std::clamp<std::size_t>(8 + 3 * static_cast<std::size_t>(std::max(size, 0)), 8, 300));
    std::size_t n = 1 + rng.below(cap);
    if (bias == Bias::tile_runs) n = std::min(most, 17 + rng.below(std::max<std::size_t>(cap, 64)));
    if (r_.domain == AttentionDomain::masked) n = std::max<std::size_t>(n, 2);
    const std::size_t d =
        r_.integer_qk ? weighted<std::size_t>(rng, {{1, 1}, {2, 4}, {2, 16}, {2, 64}})
                      : weighted<std::size_t>(rng, {{1, 1}, {1, 2}, {2, 4}, {2, 8}, {2, 16}, {2, 64}});
    const double temperature = r_.integer_qk ? weighted<double>(rng, {{2, 1.0}, {1, 2.0}, {1, 0.5}})
                                             : weighted<double>(rng, {{2, 1.0}, {1, 0.7}, {1, 2.0}});
    const double sigma = rng.below(2) == 0 ? 1.0 : 4.0;

    Case c;
    c.temperature = temperature;
    c.head_dim = static_cast<std::int64_t>(d);
    c.row.resize(n);
    fill_bias(c.row, bias, r_.integer_qk, f_, rng);
    c.window = window_of(bias, n, rng);
    fit_domain(c.row, c.window, r_.domain, rng);
    const auto draw = [&](std::vector<double>& v, std::size_t count, double s, bool integer) {
      v.resize(count);
      for (double& e : v) {
        const double g = rng.normal(0.0, s);
        e = round_to_format(integer ? std::nearbyint(g) : g, f_);
      }
    };
    draw(c.query, d, sigma, r_.integer_qk);
    draw(c.keys, n * d, sigma, r_.integer_qk);
    if (r_.v_ones) c.values.assign(n * d, 1.0);
    else draw(c.values, n * d, 1.0, false);
    return shrinkable_attention_case(std::move(c), f_, r_.domain);
  }

 private:
  Format f_;
  Recipe r_;
};

const std::vector<std::pair<unsigned, Bias>> visible_patterns = {
    {2, Bias::zeros},     {2, Bias::random_mask},   {2, Bias::causal},        {1, Bias::tile_runs},
    {1, Bias::sink},      {1, Bias::causal_window}, {1, Bias::sliding_window}};
const std::vector<std::pair<unsigned, Bias>> masked_patterns = {
    {2, Bias::random_mask}, {2, Bias::causal}, {2, Bias::tile_runs}, {1, Bias::causal_window},
    {1, Bias::sliding_window}};

rc::Gen<Case> make(Format f, const gen::RowOptions& o, Recipe r) {
  r.max_keys = std::min<std::size_t>(300, o.max_cols);
  return rc::Gen<Case>(AttentionGen(f, std::move(r)));
}

}  // namespace

rc::Gen<Case> attention_cases(Format f, const gen::RowOptions& o) {
  return make(f, o, Recipe{visible_patterns, AttentionDomain::visible});
}

rc::Gen<Case> attention_mass_cases(Format f, const gen::RowOptions& o) {
  return make(f, o, Recipe{visible_patterns, AttentionDomain::unit_values, false, true});
}

rc::Gen<Case> attention_masked_cases(Format f, const gen::RowOptions& o) {
  return make(f, o, Recipe{masked_patterns, AttentionDomain::masked});
}

rc::Gen<Case> attention_fully_masked_cases(Format f, const gen::RowOptions& o) {
  return make(f, o, Recipe{{{1, Bias::all_masked}}, AttentionDomain::fully_masked});
}

rc::Gen<Case> attention_exact_score_cases(Format f, const gen::RowOptions& o) {
  return make(f, o, Recipe{visible_patterns, AttentionDomain::exact_scores, true});
}

rc::Gen<Case> attention_causal_cases(Format f, const gen::RowOptions& o) {
  return make(f, o, Recipe{{{3, Bias::causal_window}, {1, Bias::causal_masked}}, AttentionDomain::visible});
}

}  // namespace softcheck::props::detail
