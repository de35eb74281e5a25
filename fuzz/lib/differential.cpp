#include "differential.hpp"

#include <algorithm>
#include <cmath>

#include "invariants.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::fuzz {

namespace {

using Long = long double;

// Unit roundoff of long double: 2^-64 with x87's 64-bit significand (2^-53
// where long double is double; the bound below then just decides less often).
constexpr Long u_long = std::numeric_limits<Long>::epsilon() / 2;

// Entries more than this below the max contribute exp(-800) < 1e-347 to the
// softmax: under 1e-23 of f64's smallest subnormal, negligible in every format.
constexpr Long contributing_gap = 800;

// Safety factor over the first-order error analysis below (long double exp,
// log1p are within a few ulps in glibc, but no bound is documented).
constexpr Long safety = 16;

struct Scaled {
  std::vector<Long> z;  // x/T in long double (exact when T = 1), -inf kept
  Long a = 0;           // max z (finite)
  std::size_t k = 0;    // its first index
  Long R = 0, M = 0;    // range and max |z| of the contributing entries
};

Scaled scale(std::span<const double> x, double temperature) {
  Scaled s;
  s.z.resize(x.size());
  s.a = -INFINITY;
  for (std::size_t i = 0; i < x.size(); ++i) {
    s.z[i] = static_cast<Long>(x[i]) / static_cast<Long>(temperature);
    if (s.z[i] > s.a) s.a = s.z[i], s.k = i;
  }
  Long lo = s.a;
  for (Long v : s.z)
    if (std::isfinite(v) && s.a - v <= contributing_gap) lo = std::min(lo, v), s.M = std::max(s.M, std::fabs(v));
  s.R = s.a - lo;
  return s;
}

// s' = sum_{i != k} exp(z_i - a) (Blanchard, Higham & Higham's final form:
// the max term, exactly 1, is left out of the sum).
Long sum_except_max(const Scaled& s) {
  Long sum = 0;
  for (std::size_t i = 0; i < s.z.size(); ++i)
    if (i != s.k) sum += std::exp(s.z[i] - s.a);
  return sum;
}

// ulp_T(v) for v >= 0 (REFERENCE.md "Error metrics in use"): 2^(max(e, emin) - p + 1),
// the smallest subnormal below 2^emin, the ulp of max_finite past the top binade.
Long ulp_in(Long v, Format f) {
  const FormatInfo fi = info(f);
  if (!(v >= std::ldexp(Long{1}, fi.emin))) return std::ldexp(Long{1}, fi.emin - fi.precision + 1);
  const int e = std::min(std::ilogb(v), fi.emax);
  return std::ldexp(Long{1}, e - fi.precision + 1);
}

}  // namespace

// First-order errors in units of u_long (REFERENCE.md "shifted softmax" and
// docs/kernels.md's derivations, redone for this evaluation):
//   z_j - a:       u|z_j - a| <= uR from the subtraction, plus |dz_j| + |da| <=
//                  2uM from x/T when T != 1;
//   exp:           a relative error of the argument's absolute error, plus 2u;
//   s':            the terms' (R + 2M + 2) plus n - 1 additions;
//   softmax:       exp term + s' + (1 + s') + division: n + 2R + 4M + 10;
//   log-softmax:   (z_j - a) - log1p(s') adds two non-positive numbers, so the
//                  relative error is the operands' worst plus u: with log1p's 4u,
//                  n + R + 2M + 12 relative, plus u(|z_j| + |a|) absolute from
//                  x/T when T != 1.
// Every term times `safety`. Entries more than contributing_gap below the max
// have softmax below tiny = 1e-347 (absolute error at most that) and move s' by
// less than n tiny: a relative n tiny on softmax, an absolute n tiny on
// log-softmax (log1p(s') when s' itself is that small).
Reference reference_row(std::span<const double> x, double temperature, Op op) {
  const Scaled s = scale(x, temperature);
  const Long sp = sum_except_max(s);
  const Long log1p_sp = std::log1p(sp);
  const Long n = static_cast<Long>(x.size());
  const Long m = temperature == 1.0 ? Long{0} : s.M;
  const Long tiny = 1e-347L;
  Reference ref;
  ref.value.resize(x.size());
  ref.error.resize(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) {
    if (s.z[j] == -INFINITY) {
      ref.value[j] = op == Op::softmax ? Long{0} : -INFINITY;
      ref.error[j] = 0;
      continue;
    }
    const Long d = s.z[j] - s.a;
    if (op == Op::softmax) {
      ref.value[j] = std::exp(d) / (1 + sp);
      const Long rel = (n + 2 * s.R + 4 * m + 10) * u_long + n * tiny;
      ref.error[j] = safety * (rel * ref.value[j] + (s.a - s.z[j] > contributing_gap ? tiny : Long{0}));
    } else {
      ref.value[j] = d - log1p_sp;
      const Long rel = (n + s.R + 2 * m + 12) * u_long;
      const Long from_t = temperature == 1.0 ? Long{0} : (std::fabs(s.z[j]) + std::fabs(s.a)) * u_long;
      ref.error[j] = safety * (rel * std::fabs(ref.value[j]) + from_t + n * tiny);
    }
  }
  return ref;
}

bool clearly_within(std::span<const double> y, const Reference& ref, double bound, Format f) {
  for (std::size_t j = 0; j < y.size(); ++j) {
    const Long r = ref.value[j];
    if (!std::isfinite(r) || r == 0) {  // a masked entry: exactly -inf / 0 expected
      if (!(static_cast<Long>(y[j]) == r)) return false;
      continue;
    }
    if (!std::isfinite(y[j])) return false;  // the oracle decides (e.g. a correct -inf below lowest)
    if (std::isinf(bound)) continue;
    const Long lo = std::max(Long{0}, std::fabs(r) - ref.error[j]);  // ulp_T is non-decreasing in |v|
    const Long distance = std::fabs(static_cast<Long>(y[j]) - r) + ref.error[j];
    if (!(distance <= static_cast<Long>(bound) * ulp_in(lo, f) * (1 - Long{0x1p-40L}))) return false;
  }
  return true;
}

bool within_contract_exact(std::span<const double> y, std::span<const double> x, double temperature,
                           const Kernel& k, Op op) {
  const oracle::ExactRow ex = oracle::exact_row(x, temperature);
  if (ex.status != oracle::RowStatus::ok) return true;  // no exact value: out of the contract's scope
  const RowError e = compare_row(y, op == Op::softmax ? ex.softmax : ex.log_softmax, k.format, op);
  if (e.nonfinite > 0 || e.special_mismatch > 0) return false;
  return e.max_ulp <= k.find(op)->contract.bound_ulps(row_shape(x, temperature, k.format), k.format);
}

namespace {

std::optional<Violation> check_kernel_row(const FuzzCase& c, const Kernel& k, std::int64_t r,
                                          std::span<const double> y_row, const Reference& ref) {
  const std::span<const double> x = c.row(r);
  const Format f = k.format;
  const double bound = k.find(c.op)->contract.bound_ulps(row_shape(x, c.temperature, f), f);
  if (clearly_within(y_row, ref, bound, f)) return std::nullopt;
  if (within_contract_exact(y_row, x, c.temperature, k, c.op)) return std::nullopt;
  return confirm_row(c, k, c.op, r, "accuracy", y_row);
}

}  // namespace

std::optional<Violation> check_differential(const FuzzCase& c, std::span<const double> y,
                                            std::span<const double> y_partner) {
  const auto cols = static_cast<std::size_t>(c.cols);
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const RowKind kind = classify(c.row(r));
    if (kind != RowKind::finite && kind != RowKind::masked) continue;
    if (!in_property_scope(c.row(r), c.temperature, c.kernel->format)) continue;
    const Reference ref = reference_row(c.row(r), c.temperature, c.op);
    const std::size_t at = static_cast<std::size_t>(r) * cols;
    if (auto v = check_kernel_row(c, *c.kernel, r, y.subspan(at, cols), ref)) return v;
    if (c.partner != nullptr)
      if (auto v = check_kernel_row(c, *c.partner, r, y_partner.subspan(at, cols), ref)) return v;
  }
  return std::nullopt;
}

}  // namespace softcheck::fuzz
