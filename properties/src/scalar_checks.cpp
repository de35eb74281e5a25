// Properties of the ops with one output per row, lse and entropy (docs/ops.md).
// Their metric is the absolute error in units of u (the op table), so every
// allowance below is in units of u: B(x) is the kernel's contract bound on
// row x, the same form as the ULP contracts. Each property has a fake kernel
// in properties/tests/fake_kernels.cpp that breaks it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "checks.hpp"
#include "softcheck/input_families.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

namespace {

using Long = long double;

double value_of(const Kernel& k, Op op, std::span<const double> row, double t) {
  return run_row(k, op, row, t).at(0);
}

double u_of(const Kernel& k) { return unit_roundoff(k.format); }

// z_max = max_i x_i / T over the finite entries, in long double.
Long max_scaled(std::span<const double> x, double t) {
  Long a = -std::numeric_limits<Long>::infinity();
  for (double v : x)
    if (std::isfinite(v)) a = std::max(a, static_cast<Long>(v) / static_cast<Long>(t));
  return a;
}

std::string row_text(const Case& c) { return "n = " + std::to_string(c.row.size()) + ", T = " + num(c.temperature); }

}  // namespace

// ---- scalar_shift ------------------------------------------------------------------------
// lse(x + c) = lse(x) + c / T and H(x + c) = H(x) exactly (c an exact shift of
// the finite entries), so |v(x + c) - v(x) - d| / u <= B(x) + B(x + c) + 1, d
// the exact change (c / T for lse, 0 for entropy) formed in long double (its
// 2^-64 relative error, and the difference's, inside the extra 1).
CaseResult check_scalar_shift(const Kernel& k, Op op, const Case& c) {
  const ShiftedCase sc = shifted_case(c, k.format);
  if (sc.not_applicable) return *sc.not_applicable;
  const double v0 = value_of(k, op, c.row, c.temperature);
  const double v1 = value_of(k, op, sc.shifted.row, c.temperature);
  const Long expected_change = spec(op).out[0].kind == OutputKind::log_sum_exp
                                   ? static_cast<Long>(sc.shift) / static_cast<Long>(c.temperature)
                                   : Long{0};
  const double measured =
      static_cast<double>(std::fabs(static_cast<Long>(v1) - static_cast<Long>(v0) - expected_change)) / u_of(k);
  const double allowed =
      bound_ulps(k, op, c.row, c.temperature) + bound_ulps(k, op, sc.shifted.row, c.temperature) + 1;
  return judge(measured, allowed, "u",
               "v(x) = " + hex(v0) + ", v(x + " + hex(sc.shift) + ") = " + hex(v1) + " (" + row_text(c) + ")");
}

// ---- scalar_permutation --------------------------------------------------------------------
// lse and H are symmetric functions: |v(Px) - v(x)| / u <= B(x) + B(Px) (the
// summation order may change the rounding). P from the row's hash.
CaseResult check_scalar_permutation(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  std::vector<double> px = c.row;
  Rng rng(case_hash(c));
  for (std::size_t i = px.size(); i > 1; --i) std::swap(px[i - 1], px[static_cast<std::size_t>(rng.below(i))]);
  const double v0 = value_of(k, op, c.row, c.temperature);
  const double v1 = value_of(k, op, px, c.temperature);
  const double measured = std::fabs(v1 - v0) / u_of(k);
  const double allowed = bound_ulps(k, op, c.row, c.temperature) + bound_ulps(k, op, px, c.temperature);
  return judge(measured, allowed, "u", "v(x) = " + hex(v0) + ", v(Px) = " + hex(v1) + " (" + row_text(c) + ")");
}

// ---- scalar_masked_entries -----------------------------------------------------------------
// -inf entries add exp(-inf) = 0 to the sum and 0 log 0 = 0 to the entropy:
// the value is the one of the row without them, |v(x) - v(x_unmasked)| / u
// <= B(x) + B(x_unmasked).
CaseResult check_scalar_masked_entries(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::masked)) return *na;
  std::vector<double> compact;
  for (double v : c.row)
    if (v != -INFINITY) compact.push_back(v);
  const double v0 = value_of(k, op, c.row, c.temperature);
  const double v1 = value_of(k, op, compact, c.temperature);
  const double measured = std::fabs(v1 - v0) / u_of(k);
  const double allowed = bound_ulps(k, op, c.row, c.temperature) + bound_ulps(k, op, compact, c.temperature);
  return judge(measured, allowed, "u",
               "with masks " + hex(v0) + ", without " + hex(v1) + " (" + std::to_string(c.row.size() - compact.size()) +
                   " of " + std::to_string(c.row.size()) + " entries masked)");
}

// ---- scalar_fully_masked -------------------------------------------------------------------
// An all -inf row gives the declared policy's value (op.hpp, masked_row_value:
// lse -inf, NaN also accepted under nan; entropy NaN / 0 / log n).
CaseResult check_scalar_fully_masked(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::fully_masked)) return *na;
  const double v = value_of(k, op, c.row, c.temperature);
  const double n = static_cast<double>(c.row.size());
  if (is_masked_row_value(v, spec(op).out[0].kind, k.masked_policy, n, u_of(k)))
    return pass(0, 0, "u", "policy " + std::string(name(k.masked_policy)));
  return fail(INFINITY, 0, "u",
              "got " + hex(v) + ", policy " + std::string(name(k.masked_policy)) + " gives " +
                  hex(masked_row_value(spec(op).out[0].kind, k.masked_policy, n)) + " (n = " + num(n) + ")");
}

// ---- lse_bounds ----------------------------------------------------------------------------
// max z <= lse(z) <= max z + log n exactly (the sum has its largest term
// e^max and at most n of them); the computed value may leave the interval by
// its error: excess / u <= B + 1 (the 1 for the interval's ends, formed in
// long double).
CaseResult check_lse_bounds(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const double v = value_of(k, op, c.row, c.temperature);
  const Long lo = max_scaled(c.row, c.temperature);
  const Long hi = lo + std::log(static_cast<Long>(c.row.size()));
  const Long lv = static_cast<Long>(v);
  const double excess = std::isnan(v) ? INFINITY : static_cast<double>(std::max({lo - lv, lv - hi, Long{0}})) / u_of(k);
  return judge(excess, bound_ulps(k, op, c.row, c.temperature) + 1, "u",
               "lse " + hex(v) + " against [max z, max z + log n] = [" + num(static_cast<double>(lo)) + ", " +
                   num(static_cast<double>(hi)) + "] (" + row_text(c) + ")");
}

// ---- entropy_range -------------------------------------------------------------------------
// 0 <= H <= log n exactly (n the row length; masked entries only lower it);
// excess / u <= B + 1.
CaseResult check_entropy_range(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const double h = value_of(k, op, c.row, c.temperature);
  const Long hi = std::log(static_cast<Long>(c.row.size()));
  const Long lh = static_cast<Long>(h);
  const double excess = std::isnan(h) ? INFINITY : static_cast<double>(std::max({-lh, lh - hi, Long{0}})) / u_of(k);
  return judge(excess, bound_ulps(k, op, c.row, c.temperature) + 1, "u",
               "H " + hex(h) + " against [0, log n = " + num(static_cast<double>(hi)) + "] (" + row_text(c) + ")");
}

// ---- entropy_uniform -----------------------------------------------------------------------
// A row of n equal entries (the case's first finite value repeated) has
// p = 1/n and H = log n exactly: |H - log n| / u <= B + 1.
CaseResult check_entropy_uniform(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const auto first = std::find_if(c.row.begin(), c.row.end(), [](double v) { return std::isfinite(v); });
  const std::vector<double> equal(c.row.size(), *first);
  const double h = value_of(k, op, equal, c.temperature);
  const Long log_n = std::log(static_cast<Long>(equal.size()));
  const double measured = std::isnan(h) ? INFINITY : static_cast<double>(std::fabs(static_cast<Long>(h) - log_n)) / u_of(k);
  return judge(measured, bound_ulps(k, op, equal, c.temperature) + 1, "u",
               "H of " + std::to_string(equal.size()) + " entries equal to " + hex(*first) + ": " + hex(h) +
                   ", log n = " + num(static_cast<double>(log_n)));
}

// ---- entropy_cold --------------------------------------------------------------------------
// H -> 0 as T -> 0 on a row with a unique maximum: at T0 = g / (log n + 60),
// g the gap between the two largest entries, every other entry is d_i >=
// log n + 60 below the max, so p_i <= e^-60 / n, and H = sum p_i d_i + log(1 +
// s) <= e^-60 (log n + 61) < 1e-24, far below u (d e^-d decreases past d = 1); so H(T0) / u <= B(T0) + 1. Not applicable where T0 is not a normal
// value of the format or x / T0 leaves it.
CaseResult check_entropy_cold(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  double top = -INFINITY, second = -INFINITY;
  for (double v : c.row) {
    if (!std::isfinite(v)) continue;
    if (v > top) {
      second = top;
      top = v;
    } else if (v > second || v == top) {
      second = v;
    }
  }
  if (second == top) return not_applicable("no unique maximum");
  const double n = static_cast<double>(c.row.size());
  const double gap = std::isfinite(second) ? top - second : 1.0;  // one finite entry: H = 0 at any T
  const double t0 = round_to_format(gap / (std::log(n) + 60), k.format);
  const Case cold{c.row, t0};
  if (auto na = out_of_scope(cold, k.format, Scope::finite_or_masked)) return *na;
  const double h = value_of(k, op, c.row, t0);
  const double measured = std::isnan(h) ? INFINITY : std::fabs(h) / u_of(k);
  return judge(measured, bound_ulps(k, op, c.row, t0) + 1, "u",
               "H at T0 = " + hex(t0) + " (gap " + num(gap) + "): " + hex(h) + " (" + row_text(c) + ")");
}

}  // namespace softcheck::props::detail
