// The sparse properties (docs/properties.md, "Sparse ops"; docs/sparse.md).
// Notation: x the row, z = x / T, p the oracle's exact output (sparse_oracle.hpp),
// y the kernel's, B = sparse_abs_bound (the kernel's absolute error bound,
// derived next to each kernel): |y_i - p_i| <= B for every i.
#include <algorithm>
#include <cmath>
#include <string>

#include "checks.hpp"
#include "softcheck/sparse_bounds.hpp"
#include "softcheck/sparse_oracle.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

namespace {

const OpDecl& decl_of(const Kernel& k, Op op) { return *k.find(op); }

double bound_of(const Kernel& k, Op op, const std::vector<double>& row, double t) {
  return sparse_abs_bound(k, decl_of(k, op), row, t);
}

constexpr unsigned oracle_bits = 128;  // > 2 x 53: ample for absolute errors of order u

std::optional<CaseResult> oracle_out_of_reach(const Kernel& k, Op op, const Case& c) {
  const OpDecl& d = decl_of(k, op);
  // The certified-bisection oracle is too slow for longer rows (sparse_oracle.hpp).
  if (oracle::needs_bisection(d.op, d.params) && c.row.size() > oracle::bisection_max_cols)
    return not_applicable("row longer than " + std::to_string(oracle::bisection_max_cols) +
                          ": the certified bisection oracle is too slow");
  return std::nullopt;
}

std::optional<oracle::SparseRow> exact(const Kernel& k, Op op, const Case& c, std::optional<CaseResult>& na) {
  if ((na = oracle_out_of_reach(k, op, c))) return std::nullopt;
  oracle::SparseRow e = oracle::exact_sparse(op, decl_of(k, op).params, c.row, c.temperature, oracle_bits);
  if (e.status != oracle::RowStatus::ok) {
    na = not_applicable("oracle: row is " + std::string(oracle::name(e.status)));
    return std::nullopt;
  }
  return e;
}

std::string where(std::size_t i, double y, double p) {
  return " at index " + std::to_string(i) + " (result " + hex(y) + ", exact ~" + num(p) + ")";
}

// max_i |a_i - b_map(i)| with the positions of the largest.
struct Gap {
  double d = 0;
  std::size_t i = 0;
};
Gap max_gap(const std::vector<double>& a, const std::vector<double>& b, const std::vector<std::size_t>& map) {
  Gap g;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::isnan(a[i]) || std::isnan(b[map[i]]) ? INFINITY : std::fabs(a[i] - b[map[i]]);
    if (d > g.d) g = {d, i};
  }
  return g;
}

}  // namespace

// ---- sparse_accuracy -------------------------------------------------------------
// |y_i - p_i| <= B for every i; a support mismatch (y_i = 0 < p_i: false zero,
// y_i > 0 = p_i: false non-zero) is excused only within B of the threshold,
// i.e. when max(y_i, p_i) <= B, which the first condition already implies; the
// message counts both kinds separately.
CaseResult check_sparse_accuracy(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  std::optional<CaseResult> na;
  const auto e = exact(k, op, c, na);
  if (!e) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const double B = bound_of(k, op, c.row, c.temperature);
  double worst = 0;
  std::size_t wi = 0, false_zeros = 0, false_nonzeros = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double p = static_cast<double>(e->p[i]);
    const double d = std::isfinite(y[i]) ? std::fabs(y[i] - p) : INFINITY;
    if (d > worst) worst = d, wi = i;
    if (e->support[i] && y[i] == 0 && oracle::round_to(e->p[i], k.format) != 0) ++false_zeros;
    if (!e->support[i] && y[i] != 0) ++false_nonzeros;
  }
  return judge(worst, B, "abs",
               "max |y - p|" + where(wi, y[wi], static_cast<double>(e->p[wi])) + "; " +
                   std::to_string(false_zeros) + " false zeros, " + std::to_string(false_nonzeros) +
                   " false non-zeros (each within B of the threshold when this passes)");
}

// ---- sparse_sum_to_one ---------------------------------------------------------------
// |sum y - 1| <= sum |y_i - p_i| <= n B; the sum is formed in long double
// (n roundings of 2^-64 relative, far below u).
CaseResult check_sparse_sum_to_one(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  long double s = 0;
  for (double v : y) s += v;
  const double n = static_cast<double>(y.size());
  return judge(static_cast<double>(std::fabs(s - 1.0L)), n * bound_of(k, op, c.row, c.temperature), "abs",
               "sum of the outputs = " + num(static_cast<double>(s)));
}

// ---- sparse_range --------------------------------------------------------------------
// Exact: every output finite, in [0, 1] (a probability; the kernels clamp at 0).
CaseResult check_sparse_range(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!(y[i] >= 0 && y[i] <= 1))
      return fail(1, 0, "entries", "output " + hex(y[i]) + " at index " + std::to_string(i) + " outside [0, 1]");
  return pass(0, 0, "entries", "every output in [0, 1]");
}

// ---- tau_consistency -----------------------------------------------------------------
// The outputs have the entmax form p_i = [(alpha-1) z_i - tau]_+^(1/(alpha-1))
// with one tau: tau_hat = (alpha-1) z_m - y_m^(alpha-1) from the largest output
// (y_m >= 1/n - B), then |sum_i [(alpha-1) z_i - tau_hat]_+^(1/(alpha-1)) - 1|
// must be small. First order, for 1 < alpha <= 2 (a = alpha - 1 in (0, 1]):
//   |d tau_hat| <= a y_m^(a-1) B + a |z_m| 2u <= a (n/(1 - nB))^(1-a) B + 2a u M
//   (d/dy y^a = a y^(a-1); z computed here in long double, z's own rounding in
//   the kernel is in B's temperature term, and fl(x/T) adds 2uM when T != 1);
//   d/dtau of the sum <= n / a (bases <= 1, exponent 1/a - 1 >= 0);
// allowed = (n / a) |d tau_hat| + n 2^-60 (long double evaluation).
CaseResult check_tau_consistency(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const OpDecl& d = decl_of(k, op);
  const double alpha = entmax_alpha(op, d.params);
  const long double a = static_cast<long double>(alpha) - 1;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::size_t m = static_cast<std::size_t>(std::max_element(y.begin(), y.end()) - y.begin());
  if (!std::isfinite(y[m])) return fail(INFINITY, 0, "abs", "non-finite output at index " + std::to_string(m));
  const double n = static_cast<double>(y.size());
  const double B = bound_of(k, op, c.row, c.temperature);
  const double u = unit_roundoff(k.format);
  if (!(n * B < 0.5)) return not_applicable("bound too loose for a tau estimate (n B >= 1/2)");
  double M = 0;
  for (double v : c.row)
    if (std::isfinite(v)) M = std::max(M, std::fabs(v / c.temperature));
  const auto z = [&](std::size_t i) { return static_cast<long double>(c.row[i]) / c.temperature; };
  const long double tau = a * z(m) - std::pow(static_cast<long double>(y[m]), a);
  long double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(c.row[i])) continue;
    const long double b = a * z(i) - tau;
    if (b > 0) s += std::pow(b, 1 / a);
  }
  const double ad = static_cast<double>(a);
  const double dtau = ad * std::pow(n / (1 - n * B), 1 - ad) * B + 2 * ad * u * M;
  const double allowed = n / ad * dtau + n * 0x1p-60;
  return judge(static_cast<double>(std::fabs(s - 1)), allowed, "abs",
               "sum [(alpha-1) z - tau]_+^(1/(alpha-1)) = " + num(static_cast<double>(s)) +
                   " with tau from index " + std::to_string(m));
}

// ---- entmax_identities ---------------------------------------------------------------
// alpha = 2 is sparsemax and alpha = 1.5 is entmax15 (REFERENCE.md): the
// bisection kernel and the sort-based kernel of the same format agree within
// the sum of their bounds.
CaseResult check_entmax_identities(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const double alpha = decl_of(k, op).params.alpha;
  const Op want = alpha == 2 ? Op::sparsemax : Op::entmax15;
  // The sort-based kernel of the same format (first registered).
  const Kernel* ref = nullptr;
  for (const Kernel& s : sparse_kernels())
    if (s.format == k.format && s.find(want) != nullptr) {
      ref = &s;
      break;
    }
  const std::string other = ref != nullptr ? ref->name : std::string(name(want)) + " in " + std::string(name(k.format));
  if (ref == nullptr) return not_applicable("no " + other + " kernel to compare with");
  const Op ref_op = ref->ops.at(0).op;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::vector<double> r = run_row(*ref, ref_op, c.row, c.temperature);
  const double allowed = bound_of(k, op, c.row, c.temperature) + bound_of(*ref, ref_op, c.row, c.temperature);
  const Gap g = max_gap(y, r, identity(y.size()));
  return judge(g.d, allowed, "abs",
               "alpha = " + num(alpha) + " against " + other + " at index " + std::to_string(g.i) + ": " +
                   hex(y[g.i]) + " vs " + hex(r[g.i]));
}

// ---- sparse_shift_invariance ---------------------------------------------------------
// Every sparse op is shift-invariant exactly; with c exact in the format,
// |y(x)_i - y(x+c)_i| <= B(x) + B(x+c).
CaseResult check_sparse_shift_invariance(const Kernel& k, Op op, const Case& c) {
  const ShiftedCase sc = shifted_case(c, k.format);
  if (sc.not_applicable) return *sc.not_applicable;
  const Case& shifted = sc.shifted;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::vector<double> ys = run_row(k, op, shifted.row, c.temperature);
  const double allowed = bound_of(k, op, c.row, c.temperature) + bound_of(k, op, shifted.row, c.temperature);
  const Gap g = max_gap(ys, y, identity(y.size()));
  return judge(g.d, allowed, "abs",
               "shift c = " + hex(sc.shift) + " at index " + std::to_string(g.i) + ": " + hex(y[g.i]) + " vs " +
                   hex(ys[g.i]));
}

// ---- sparse_permutation --------------------------------------------------------------
// |y(Px)_i - y(x)_pi(i)| <= B(x) + B(Px) (the sums run in another order).
// The permutation: reversal followed by a rotation derived from the row.
CaseResult check_sparse_permutation(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::size_t n = c.row.size();
  std::vector<std::size_t> pi(n);
  const std::size_t rot = static_cast<std::size_t>(case_hash(c) % n);
  for (std::size_t i = 0; i < n; ++i) pi[i] = (n - 1 - (i + rot) % n);
  Case permuted = c;
  for (std::size_t i = 0; i < n; ++i) permuted.row[i] = c.row[pi[i]];
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::vector<double> yp = run_row(k, op, permuted.row, c.temperature);
  const double allowed = 2 * bound_of(k, op, c.row, c.temperature);
  const Gap g = max_gap(yp, y, pi);
  return judge(g.d, allowed, "abs",
               "y(Px)[" + std::to_string(g.i) + "] = " + hex(yp[g.i]) + " vs y(x)[" + std::to_string(pi[g.i]) +
                   "] = " + hex(y[pi[g.i]]));
}

// ---- sparse_ordering -------------------------------------------------------------------
// Exact: x_i < x_j implies y_i <= y_j, ties give equal outputs (every step of
// these kernels is monotone in z_i with the others fixed: the sort-based
// thresholds are common to all entries, max(. - tau, 0), squaring and pow of
// non-negative values, exp, the kept-set tests and the final division).
CaseResult check_sparse_ordering(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  std::vector<std::size_t> idx = identity(y.size());
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return c.row[a] < c.row[b]; });
  for (std::size_t s = 0; s + 1 < idx.size(); ++s) {
    const std::size_t i = idx[s], j = idx[s + 1];
    const bool tie = c.row[i] == c.row[j];
    if (std::isnan(y[i]) || std::isnan(y[j]) || (tie ? y[i] != y[j] : y[i] > y[j]))
      return fail(1, 0, "entries",
                  "x[" + std::to_string(i) + "] = " + hex(c.row[i]) + (tie ? " == " : " < ") + "x[" +
                      std::to_string(j) + "] = " + hex(c.row[j]) + " but y = " + hex(y[i]) + ", " + hex(y[j]));
  }
  return pass(0, 0, "entries", "outputs ordered like inputs");
}

// ---- sparse_masked_entries -------------------------------------------------------------
// Exact: -inf entries give exactly 0 and the other outputs are bitwise those
// of the row without them (the kernels skip -inf entries in the sorts, and
// their exp / pow terms add exactly 0 to every sum).
CaseResult check_sparse_masked_entries(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::masked)) return *na;
  std::vector<double> kept;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < c.row.size(); ++i)
    if (c.row[i] != -INFINITY) kept.push_back(c.row[i]), at.push_back(i);
  if (kept.empty()) return not_applicable("every entry masked (fully_masked's case)");
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::vector<double> yk = run_row(k, op, kept, c.temperature);
  for (std::size_t i = 0; i < c.row.size(); ++i)
    if (c.row[i] == -INFINITY && y[i] != 0)
      return fail(1, 0, "entries", "masked index " + std::to_string(i) + " gives " + hex(y[i]));
  for (std::size_t j = 0; j < kept.size(); ++j)
    if (!same_bits_or_both_nan(y[at[j]], yk[j]))
      return fail(1, 0, "entries",
                  "index " + std::to_string(at[j]) + ": " + hex(y[at[j]]) + " with the masks, " + hex(yk[j]) +
                      " without");
  return pass(0, 0, "entries", "masks give 0 and the rest equals the compacted row's result");
}

// ---- sparse_fully_masked -----------------------------------------------------------------
// Exact: an all -inf row follows the declared policy (zeros for every sparse kernel here).
CaseResult check_sparse_fully_masked(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::fully_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const double n = static_cast<double>(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const bool ok = k.masked_policy == MaskedRowPolicy::nan    ? std::isnan(y[i])
                    : k.masked_policy == MaskedRowPolicy::zeros ? y[i] == 0
                                                                : std::fabs(y[i] * n - 1) <= 4 * unit_roundoff(k.format);
    if (!ok)
      return fail(1, 0, "entries", "index " + std::to_string(i) + " = " + hex(y[i]) + " breaks policy " +
                                       std::string(name(k.masked_policy)));
  }
  return pass(0, 0, "entries", "policy " + std::string(name(k.masked_policy)) + " followed");
}

}  // namespace softcheck::props::detail
