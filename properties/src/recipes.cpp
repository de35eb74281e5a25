#include "recipes.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string_view>

namespace softcheck::gen::detail {

double overflow_edge(Format f) { return std::log(max_finite(f)); }
double underflow_edge(Format f) { return std::log(denorm_min(f) / 2); }

namespace {

// Index drawn with probability proportional to its weight.
template <std::size_t N>
std::size_t pick_weighted(Rng& rng, const std::array<unsigned, N>& weights) {
  unsigned total = 0;
  for (unsigned w : weights) total += w;
  std::uint64_t r = rng.below(total);
  for (std::size_t i = 0; i < N; ++i) {
    if (r < weights[i]) return i;
    r -= weights[i];
  }
  return N - 1;
}

double sign(Rng& rng) { return rng.below(2) == 0 ? 1.0 : -1.0; }
int below_int(Rng& rng, int n) { return static_cast<int>(rng.below(static_cast<std::uint64_t>(n))); }
std::size_t index_in(Rng& rng, std::size_t n) { return static_cast<std::size_t>(rng.below(n)); }

void round_all(std::vector<double>& row, Format f) {
  for (double& v : row) v = round_to_format(v, f);
}

// ---- element classes of the mixture ----------------------------------------
enum class Cls : std::size_t {
  normal, small_int, huge, tiny, subnormal, zero, overflow_near, far_beyond, underflow_near,
  neg_1e9, lowest, count
};
// Weights of the primary class of a row (index = Cls).
constexpr std::array<unsigned, static_cast<std::size_t>(Cls::count)> kClassWeights = {
    30, 8, 8, 5, 5, 3, 14, 8, 8, 6, 5};

struct Palette {
  Cls primary = Cls::normal;
  Cls secondary = Cls::normal;
  double secondary_rate = 0;  // fraction of entries drawn from `secondary`
  double sigma = 1;           // of the normal class
};

Palette pick_palette(Rng& rng) {
  static constexpr double kRates[] = {0.0, 0.05, 0.3};
  static constexpr double kSigmas[] = {1.0, 10.0, 100.0};
  Palette p;
  p.primary = static_cast<Cls>(pick_weighted(rng, kClassWeights));
  p.secondary = static_cast<Cls>(pick_weighted(rng, kClassWeights));
  p.secondary_rate = kRates[rng.below(3)];
  p.sigma = kSigmas[rng.below(3)];
  return p;
}

// Near an exp edge: within 1 or within 0.01 of it; the f32 edges are used for
// every format too (f16 kernels often compute in f32).
double near_edge(Rng& rng, double edge_f, double edge_f32) {
  const double edge = rng.below(3) == 0 ? edge_f32 : edge_f;
  const double width = rng.below(2) == 0 ? 1.0 : 0.01;
  return edge + rng.uniform(-width, width);
}

double draw(Cls c, const Palette& p, Rng& rng, Format f) {
  const FormatInfo fi = info(f);
  switch (c) {
    case Cls::normal: return rng.normal(0.0, p.sigma);
    case Cls::small_int: return static_cast<double>(below_int(rng, 17) - 8);
    case Cls::huge:
      if (rng.below(8) == 0) return sign(rng) * max_finite(f);
      return sign(rng) * std::ldexp(max_finite(f) * rng.uniform(0.5, 1.0), -below_int(rng, 9));
    case Cls::tiny: return sign(rng) * std::ldexp(rng.uniform(1.0, 2.0), fi.emin + below_int(rng, 8));
    case Cls::subnormal: {
      const int bits = std::min(fi.precision - 1, 20);
      const double k = static_cast<double>(1 + rng.below((std::uint64_t{1} << bits) - 1));
      return sign(rng) * denorm_min(f) * k;  // exact: k < 2^(p-1) quanta
    }
    case Cls::zero: return sign(rng) * 0.0;
    case Cls::overflow_near: return near_edge(rng, overflow_edge(f), overflow_edge(Format::f32));
    case Cls::far_beyond: {
      const double edge = overflow_edge(f);
      switch (rng.below(3)) {
        case 0: return edge * rng.uniform(1.1, 20.0);
        case 1: return std::min(1000.0 * rng.uniform(1.0, 100.0), max_finite(f));
        default: return std::ldexp(max_finite(f) * rng.uniform(0.5, 1.0), -below_int(rng, 20));
      }
    }
    case Cls::underflow_near: return near_edge(rng, underflow_edge(f), underflow_edge(Format::f32));
    case Cls::neg_1e9: return -1e9;
    case Cls::lowest: return lowest(f);
    case Cls::count: break;
  }
  return 0.0;
}

// One entry far above the others (Blanchard-Higham's case for log1p).
void overlay_dominant(std::vector<double>& row, Rng& rng, Format f) {
  double top = -INFINITY;
  for (double v : row)
    if (std::isfinite(v)) top = std::max(top, v);
  if (!std::isfinite(top)) top = 0;
  const double scale = f == Format::f64 && rng.below(2) == 0 ? 10.0 : 1.0;
  const double dominant = std::min(top + scale * rng.uniform(20.0, 60.0), max_finite(f));
  row[index_in(rng, row.size())] = dominant;
}

// Ties: some entries copied from others (exactly equal inputs).
void overlay_ties(std::vector<double>& row, Rng& rng) {
  const std::size_t copies = 1 + index_in(rng, row.size());
  for (std::size_t c = 0; c < copies; ++c)
    row[index_in(rng, row.size())] = row[index_in(rng, row.size())];
}

template <class Pred>
std::size_t count_if_row(const std::vector<double>& row, Pred pred) {
  return static_cast<std::size_t>(std::count_if(row.begin(), row.end(), pred));
}

}  // namespace

std::size_t pick_length(Rng& rng, const RowOptions& opt, int size) {
  const std::size_t cap = std::max<std::size_t>(1, opt.max_cols);
  std::size_t lo = 1, hi = 8;
  const double r = rng.uniform();
  if (size >= 50 && cap > 4096 && r < opt.long_row_probability) {
    lo = 4097;
    hi = cap;
  } else {
    const double s = rng.uniform();
    if (s < 0.45) {
      lo = 1, hi = 8;
    } else if (s < 0.80) {
      lo = 9, hi = 72;
    } else if (s < 0.95 || size < 20) {
      lo = 73, hi = 512;
    } else {
      lo = 513, hi = 4096;
    }
  }
  hi = std::min(hi, cap);
  lo = std::min(lo, hi);
  return lo + static_cast<std::size_t>(rng.below(hi - lo + 1));
}

void make_finite(std::vector<double>& row, Format f) {
  for (double& v : row) {
    if (std::isnan(v)) v = 0;
    else if (std::isinf(v)) v = v > 0 ? max_finite(f) : lowest(f);
  }
}

std::vector<double> mixture_row(Rng& rng, Format f, std::size_t n) {
  const Palette p = pick_palette(rng);
  std::vector<double> row(n);
  for (double& v : row) {
    const Cls c = rng.uniform() < p.secondary_rate ? p.secondary : p.primary;
    v = draw(c, p, rng, f);
  }
  if (rng.below(100) < 15) overlay_dominant(row, rng, f);
  if (rng.below(100) < 15) overlay_ties(row, rng);
  round_all(row, f);
  return row;
}

std::vector<double> underflow_row(Rng& rng, Format f, std::size_t n) {
  static constexpr double kLn2 = std::numbers::ln2;
  const double anchors[] = {0.0, rng.normal(0.0, 10.0), overflow_edge(f) - 1.0,
                            1000.0 * rng.uniform(0.1, 1.0)};
  const double a = round_to_format(std::min(anchors[rng.below(4)], max_finite(f)), f);
  // Exact softmax near denorm_min/2 (rounds to 0 or denorm_min) and near the
  // smallest normal 2^emin.
  const double edges[] = {underflow_edge(f), info(f).emin * kLn2};
  std::vector<double> row(n);
  for (double& v : row) {
    switch (rng.below(4)) {
      case 0: v = a + edges[rng.below(2)] * (1.0 + rng.uniform(-0.02, 0.02)); break;
      case 1: v = a + edges[rng.below(2)] + rng.uniform(-1.0, 1.0); break;
      case 2: v = a + edges[0] * rng.uniform(0.0, 1.2); break;
      default: v = rng.normal(a - 5.0, 2.0); break;
    }
  }
  row[index_in(rng, n)] = a;
  round_all(row, f);
  return row;
}

std::vector<double> overflow_edge_row(Rng& rng, Format f, std::size_t n) {
  const double edge = rng.below(3) == 0 ? overflow_edge(Format::f32) : overflow_edge(f);
  std::vector<double> row(n);
  const bool xnnpack = rng.below(2) == 0;  // XNNPACK's U(90, 100) shape, scaled to the edge
  for (double& v : row)
    v = xnnpack ? edge * rng.uniform(1.0, 1.13) : edge + rng.uniform(-2.0, 2.0);
  round_all(row, f);
  return row;
}

std::vector<double> family_row(Rng& rng, Format f, std::size_t n, RowDomain domain) {
  std::vector<const InputFamily*> allowed;
  for (const InputFamily& fam : input_families()) {
    const bool fully = fam.name == "fully_masked";
    const bool masks = fam.name == "mask_neg_inf";
    bool ok = true;
    switch (domain) {
      case RowDomain::finite: ok = !fully && !masks; break;
      case RowDomain::finite_or_masked:
      case RowDomain::masked: ok = !fully; break;
      case RowDomain::fully_masked: ok = fully; break;
      default: ok = true; break;
    }
    if (ok) allowed.push_back(&fam);
  }
  const InputFamily& fam = *allowed[index_in(rng, allowed.size())];
  const std::int64_t cols = fam.fixed_cols > 0 ? fam.fixed_cols : static_cast<std::int64_t>(n);
  std::vector<double> row = fill_rows(fam, f, 1, cols, rng.next());
  if (domain == RowDomain::finite) make_finite(row, f);
  return row;
}

std::vector<double> finite_row(Rng& rng, Format f, std::size_t n) {
  static constexpr std::array<unsigned, 4> kRecipes = {55, 20, 10, 15};
  std::vector<double> row;
  switch (pick_weighted(rng, kRecipes)) {
    case 0: row = mixture_row(rng, f, n); break;
    case 1: row = family_row(rng, f, n, RowDomain::finite); break;
    case 2: row = underflow_row(rng, f, n); break;
    default: row = overflow_edge_row(rng, f, n); break;
  }
  make_finite(row, f);
  return row;
}

namespace {
// Entries to mask: one, about a quarter, all but one, or (if allowed) all.
std::vector<bool> mask_pattern(Rng& rng, std::size_t n, bool allow_all) {
  std::vector<bool> m(n, false);
  switch (rng.below(allow_all ? 4 : 3)) {
    case 0: m[index_in(rng, n)] = true; break;
    case 1:
      for (std::size_t i = 0; i < n; ++i) m[i] = rng.below(4) == 0;
      break;
    case 2:
      std::fill(m.begin(), m.end(), true);
      m[index_in(rng, n)] = false;
      break;
    default: std::fill(m.begin(), m.end(), true); break;
  }
  return m;
}
}  // namespace

std::vector<double> masked_row(Rng& rng, Format f, std::size_t n) {
  std::vector<double> row = finite_row(rng, f, std::max<std::size_t>(n, 2));
  if (row.size() < 2) row.push_back(0.0);
  n = row.size();  // a fixed-length family keeps its own length
  const std::vector<bool> m = mask_pattern(rng, n, false);
  for (std::size_t i = 0; i < n; ++i)
    if (m[i]) row[i] = -INFINITY;
  // At least one -inf and at least one finite entry.
  if (count_if_row(row, [](double v) { return v == -INFINITY; }) == 0) row[index_in(rng, n)] = -INFINITY;
  if (count_if_row(row, [](double v) { return std::isfinite(v); }) == 0) row[index_in(rng, n)] = 0.0;
  return row;
}

std::vector<double> nonfinite_row(Rng& rng, Format f, std::size_t n) {
  std::vector<double> row = mixture_row(rng, f, n);
  static constexpr double kSpecials[] = {INFINITY, NAN, -INFINITY};
  const std::size_t count = 1 + index_in(rng, std::min<std::size_t>(n, 3));
  for (std::size_t c = 0; c < count; ++c) row[index_in(rng, n)] = kSpecials[rng.below(3)];
  if (count_if_row(row, [](double v) { return std::isnan(v) || v == INFINITY; }) == 0)
    row[index_in(rng, n)] = rng.below(2) == 0 ? INFINITY : NAN;
  return row;
}

std::vector<double> mask_1e9_row(Rng& rng, Format f, std::size_t n) {
  std::vector<double> row = finite_row(rng, f, n);
  n = row.size();  // a fixed-length family keeps its own length
  const double masks[] = {-1e9, lowest(f), -1e30, -max_finite(f) / 2, -1e4};
  const double mask = round_to_format(masks[rng.below(5)], f);  // -1e9 -> -inf in f16
  const std::vector<bool> m = mask_pattern(rng, n, true);
  for (std::size_t i = 0; i < n; ++i)
    if (m[i]) row[i] = mask;
  return row;
}

std::vector<double> lattice_row(Rng& rng, Format f, std::size_t n) {
  const int p = info(f).precision;
  const int mbits = std::clamp(p - 6, 2, 16);
  const int k = (f == Format::f16 || f == Format::bf16) ? -below_int(rng, 5) : 2 - below_int(rng, 11);
  const double quantum = std::ldexp(1.0, k);
  const double offsets[] = {0.0, 64.0, 80.0, -100.0, 1000.0, overflow_edge(f)};
  double b = std::nearbyint(offsets[rng.below(6)] / quantum) * quantum;
  if (std::fabs(b) / quantum + std::ldexp(1.0, mbits) >= std::ldexp(1.0, p)) b = 0;
  std::vector<double> row(n);
  const auto span = static_cast<std::uint64_t>(1) << (mbits + 1);
  for (double& v : row) v = b + (static_cast<double>(rng.below(span + 1)) - std::ldexp(1.0, mbits)) * quantum;
  round_all(row, f);  // already exact; keeps the invariant explicit
  make_finite(row, f);
  if (n >= 2 && rng.below(5) == 0) {
    const std::vector<bool> m = mask_pattern(rng, n, false);
    const std::size_t keep = index_in(rng, n);  // at least one finite entry
    for (std::size_t i = 0; i < n; ++i)
      if (m[i] && i != keep) row[i] = -INFINITY;
  }
  return row;
}

std::vector<double> any_row(Rng& rng, Format f, std::size_t n) {
  static constexpr std::array<unsigned, 6> kKinds = {40, 15, 20, 5, 10, 10};
  switch (pick_weighted(rng, kKinds)) {
    case 0: return finite_row(rng, f, n);
    case 1: return n >= 2 ? masked_row(rng, f, n) : finite_row(rng, f, n);
    case 2: return nonfinite_row(rng, f, n);
    case 3: return std::vector<double>(n, -INFINITY);
    case 4: return mask_1e9_row(rng, f, n);
    default: return family_row(rng, f, n, RowDomain::any);
  }
}

}  // namespace softcheck::gen::detail
