// The property checks. Notation (REFERENCE.md "Notation"): x the row, z = x/T,
// g_j the exact softmax, l_j the exact log-softmax, u the unit roundoff of the
// kernel's output format, eta its smallest subnormal (the storage format, or
// the result format of quantised outputs, Kernel::output_format(), for the
// properties stated_in_output_format names; the inputs and their scopes
// stay in the storage format), B the kernel's declared
// componentwise bound in ULPs of the output format (Contract::bound_ulps of
// row_shape(x, T)): the contract promises |y_j - g_j| <= B * ulp_T(g_j) for every
// j on rows with finite entries and -inf masks.
//
// Two facts about ulp_T are used throughout (REFERENCE.md "Error metrics in use"):
//   (U1) ulp_T(v) <= 2u|v| for |v| >= 2^emin, and ulp_T(v) = eta below: so
//        ulp_T(v) <= 2u|v| + eta, and ulp_T(v) <= 2u for |v| <= 1;
//   (U2) ulp_T(v) >= u|v| for normal v, and ulp_T is non-decreasing in |v|.
#include "checks.hpp"

#include <algorithm>
#include <cmath>

#include "softcheck/input_families.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/oracle.hpp"
#include "recipes.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

using oracle::Real;

namespace {

std::span<const Real> exact_of(const oracle::ExactRow& e, Op op) { return oracle::exact_values(e, spec(op).out[0].kind); }

std::string at(std::size_t j, double y, const Real& exact, Format f) {
  return " at index " + std::to_string(j) + " (result " + hex(y) + ", exact " +
         oracle::to_string(exact, 10) + " ~ " + hex(oracle::round_to(exact, f)) + ")";
}

std::optional<CaseResult> status_or_na(oracle::RowStatus status) {
  if (status == oracle::RowStatus::ok) return std::nullopt;
  return not_applicable("oracle: row is " + std::string(oracle::name(status)));
}
std::optional<CaseResult> exact_or_na(const oracle::ExactRow& e) { return status_or_na(e.status); }

// The first index whose result is non-finite where the exact value is finite
// (or differs from an exact special value), or npos.
std::size_t first_bad_special(std::span<const double> y, std::span<const Real> exact, Format f) {
  for (std::size_t j = 0; j < y.size(); ++j)
    if (compare_element(y[j], exact[j], f).cls != ElementClass::finite) return j;
  return static_cast<std::size_t>(-1);
}

// Largest |a_j - b_j| in ULPs of the exact value, 2^exponent (ulp_scales: of
// max(|exact|, 1) when taken at_one, the floor's log-softmax tolerance);
// masked entries (exact -inf in log-softmax, exact 0 in softmax) must agree
// exactly.
struct Spread {
  double ulps = 0;
  std::size_t index = 0;
};
Spread max_spread(std::span<const double> a, std::span<const double> b, std::span<const std::size_t> map,
                  std::span<const long> exponent) {
  Spread s;
  for (std::size_t j = 0; j < a.size(); ++j) {
    const double bj = b[map[j]];
    const long k = exponent[map[j]];
    const double d = k == oracle::ulp_exponent_infinite
                         ? (same_bits_or_both_nan(a[j], bj) && !std::isnan(a[j]) ? 0.0 : INFINITY)
                         : ulps_apart(a[j], bj, k);
    if (d > s.ulps || std::isnan(d)) s = {std::isnan(d) ? INFINITY : d, map[j]};
  }
  return s;
}

double finite_max(std::span<const double> x) {
  double a = -INFINITY;
  for (double v : x)
    if (std::isfinite(v)) a = std::max(a, v);
  return a;
}

double finite_min(std::span<const double> x) {
  double m = INFINITY;
  for (double v : x)
    if (std::isfinite(v)) m = std::min(m, v);
  return m;
}

// Accuracy against the oracle within the contract: max_j |y_j - g_j| / ulp_T(g_j) <= B,
// for every output of the op against its own contract (softmax_lse: the row
// and its lse), the worst of them reported.
// A NaN/inf result where the exact value is finite fails whatever B is.
CaseResult accuracy_core(const Kernel& k, Op op, const Case& c) {
  const std::vector<std::vector<double>> outputs = run_outputs(k, op, c.row, 1, static_cast<std::int64_t>(c.row.size()), c.temperature);
  const Format of = k.output_format();
  oracle::RowJudge row_judge(c.row, c.temperature, of, oracle::JudgeOptions::exact_only());
  if (auto na = exact_or_na(row_judge.exact())) return *na;
  const OpDecl& d = *k.find(op);
  std::optional<CaseResult> result;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const std::vector<double>& y = outputs[o];
    const Operand& out = spec(op).out[o];
    const oracle::RowVerdict v = row_judge.judge(d, k.masked_policy, y, o);
    const std::span<const Real> exact = oracle::exact_values(row_judge.exact(), out.kind);
    const std::string unit = out.metric == Metric::absolute ? "u" : "ulp";
    const std::string which = outputs.size() > 1 ? std::string(out.name) + ": " : "";
    const Contract& contract = d.contract_of(o);
    CaseResult r;
    if (v.broken) {
      const std::size_t j = first_bad_special(y, exact, of);
      r = fail(INFINITY, v.bound, unit,
               which + std::to_string(v.error.nonfinite + v.error.special_mismatch) +
                   " entries non-finite or wrong special value" + at(j, y[j], exact[j], of));
    } else {
      const std::size_t w = v.error.worst_index;
      r = judge(v.error.max_ulp, v.bound, unit,
                which + "max componentwise error" + at(w, y[w], exact[w], of) + "; contract " +
                    (contract.declared ? contract.formula() : "none"));
    }
    result = result ? worst(std::move(*result), std::move(r)) : std::move(r);
  }
  return *result;
}

// Unit of a spread judged by tolerance_ulps.
std::string tolerance_unit(const Kernel& k, Op op) { return tolerance_at_one(k, op) ? "ulp of max(|l|,1)" : "ulp"; }

}  // namespace

// ---- sum_to_one -----------------------------------------------------------------
// |sum_j y_j - 1| <= sum_j |y_j - g_j| <= B sum_j ulp_T(g_j) <= B (2u + n eta)   (U1)
// B: the contract's bound, or the floor's generic tolerance without one.
// Measured and allowed in units of u. The sum of the outputs is formed exactly
// (MPFR with enough bits for any sum of n doubles in [0, 1]).
CaseResult check_sum_to_one(const Kernel& k, Op op, const Case& c) {
  if (op != Op::softmax) return not_applicable("sum_to_one is a softmax property");
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const double bound = tolerance_ulps(k, op, c.row, c.temperature);
  for (std::size_t j = 0; j < y.size(); ++j)
    if (!std::isfinite(y[j])) return fail(INFINITY, bound, "u", "non-finite output " + hex(y[j]) + " at index " + std::to_string(j));
  const auto n = static_cast<double>(y.size());
  // Quantised outputs: the mass a row keeps, in the result format's u and eta.
  const Format of = k.output_format();
  const double u = unit_roundoff(of);
  const std::string unit = k.quantised_outputs ? "u of " + std::string(name(of)) : "u";
  oracle::PrecisionScope exact_sum(1200 + 64);  // 2^-1074 .. 2^17: every partial sum exact
  Real s = 0;
  for (double v : y) s += Real(v);
  const double measured = (abs(s - Real(1)) / Real(u)).convert_to<double>();
  const double allowed = bound * (2.0 + n * denorm_min(of) / u);
  return judge(measured, allowed, unit,
               "sum of outputs - 1 = " + num(measured) + " " + unit + " (n = " + num(n) + ", B = " + num(bound) +
                   " ulp)");
}

// ---- accuracy ----------------------------------------------------------------------
CaseResult check_accuracy(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  return accuracy_core(k, op, c);
}

// ---- shift_invariance ----------------------------------------------------------------
namespace {

// The exact shift for this case (derived from the row alone): a nonzero c
// with every finite x_i + c exact in f, or none.
std::optional<double> choose_shift(const Case& c, Format f) { return exact_shift(c.row, f, case_hash(c)); }

}  // namespace

ShiftedCase shifted_case(const Case& c, Format f) {
  ShiftedCase r;
  if (auto na = out_of_scope(c, f, Scope::finite_or_masked)) {
    r.not_applicable = std::move(na);
    return r;
  }
  const std::optional<double> shift = choose_shift(c, f);
  if (!shift) {
    r.not_applicable = not_applicable("no exact nonzero shift for this row");
    return r;
  }
  r.shift = *shift;
  r.shifted = c;
  for (double& v : r.shifted.row) v += r.shift;
  r.not_applicable = out_of_scope(r.shifted, f, Scope::finite_or_masked);
  return r;
}

// softmax(x + c) = softmax(x) exactly, so with the contract (or the floor's
// tolerance) on both rows |y(x)_j - y(x+c)_j| <= (B(x) + B(x+c)) ulp_T(g_j).
CaseResult check_shift_invariance(const Kernel& k, Op op, const Case& c) {
  const ShiftedCase sc = shifted_case(c, k.format);
  if (sc.not_applicable) return *sc.not_applicable;
  const Case& shifted = sc.shifted;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::vector<double> ys = run_row(k, op, shifted.row, c.temperature);
  const auto scales = ulp_scales(c.row, c.temperature, op, k.output_format(), tolerance_at_one(k, op));
  if (auto na = status_or_na(scales->status)) return *na;
  const double allowed =
      tolerance_ulps(k, op, c.row, c.temperature) + tolerance_ulps(k, op, shifted.row, c.temperature);
  const std::vector<std::size_t> id = identity(y.size());
  const Spread s = max_spread(ys, y, id, scales->exponent);
  const std::size_t j = s.index;
  return judge(s.ulps, allowed, tolerance_unit(k, op),
               "shift c = " + hex(sc.shift) + ": y(x)[" + std::to_string(j) + "] = " + hex(y[j]) + ", y(x+c)[" +
                   std::to_string(j) + "] = " + hex(ys[j]));
}

// ---- ordering ------------------------------------------------------------------------
// Exact: x_i <= x_j implies y_i <= y_j and x_i == x_j implies y_i == y_j (fl is
// monotone, and every step of a max-shifted or online formula is monotone in x_i
// with the other entries fixed). Checked on neighbours in sorted order.
CaseResult check_ordering(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  std::vector<std::size_t> idx = identity(y.size());
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return c.row[a] < c.row[b]; });
  double worst_ulps = 0;
  std::string what = "outputs ordered like inputs";
  for (std::size_t s = 0; s + 1 < idx.size(); ++s) {
    const std::size_t i = idx[s], j = idx[s + 1];
    const bool tie = c.row[i] == c.row[j];
    const bool bad = std::isnan(y[i]) || std::isnan(y[j]) || (tie ? y[i] != y[j] : y[i] > y[j]);
    if (!bad) continue;
    const double big = std::max(std::fabs(y[i]), std::fabs(y[j]));
    const double d =
        std::isfinite(y[i] - y[j]) ? std::fabs(y[i] - y[j]) / ulp_of(big, k.output_format()) : INFINITY;
    if (d > worst_ulps) {
      worst_ulps = d;
      what = std::string(tie ? "tie x[" : "x[") + std::to_string(i) + "] = " + hex(c.row[i]) +
             (tie ? " == x[" : " < x[") + std::to_string(j) + "] = " + hex(c.row[j]) + " but y = " + hex(y[i]) +
             (tie ? " != " : " > ") + hex(y[j]);
    }
  }
  return judge(worst_ulps, 0, "ulp", what);
}

// ---- permutation ----------------------------------------------------------------------
// softmax(Px) = P softmax(x) exactly; summation order may change the rounding,
// so |y(Px)_i - y(x)_pi(i)| <= (B(x) + B(Px)) ulp_T(g_pi(i)), B the contract's
// bound or the floor's tolerance. The permutation is
// derived from the row's hash (a repro line needs only the row).
CaseResult check_permutation(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  std::vector<std::size_t> perm = identity(c.row.size());
  Rng rng(case_hash(c));
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[static_cast<std::size_t>(rng.below(i))]);
  std::vector<double> px(c.row.size());
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = c.row[perm[i]];
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const std::vector<double> yp = run_row(k, op, px, c.temperature);
  const auto scales = ulp_scales(c.row, c.temperature, op, k.output_format(), tolerance_at_one(k, op));
  if (auto na = status_or_na(scales->status)) return *na;
  const double allowed = tolerance_ulps(k, op, c.row, c.temperature) + tolerance_ulps(k, op, px, c.temperature);
  const Spread s = max_spread(yp, y, perm, scales->exponent);
  return judge(s.ulps, allowed, tolerance_unit(k, op),
               "entry " + std::to_string(s.index) + ": y(x) = " + hex(y[s.index]) + " vs permuted-row result");
}

// ---- no_nonfinite -------------------------------------------------------------------------
// Finite input (z = x/T finite in the format) gives finite output, whatever the
// magnitudes. The one exemption: a log-softmax entry whose exact value is below
// the format's lowest value rounds to -inf correctly; l_j <= z_j - z_max, and
// l_j >= z_j - z_max - ln n, so entries with z_j - z_max - ln n < lowest(f) are exempt.
CaseResult check_no_nonfinite(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const double zmax = finite_max(c.row) / c.temperature;
  const double log_n = std::log(static_cast<double>(y.size()));
  std::size_t bad = 0, first = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    if (std::isfinite(y[j])) continue;
    const double gap = c.row[j] / c.temperature - zmax - log_n;
    if (op == Op::log_softmax && y[j] == -INFINITY && !(gap >= lowest(k.format))) continue;
    if (bad++ == 0) first = j;
  }
  if (bad == 0) return pass(0, 0, "entries", "all outputs finite");
  return fail(static_cast<double>(bad), 0, "entries",
              "non-finite output " + hex(y[first]) + " at index " + std::to_string(first) + " for input " +
                  hex(c.row[first]));
}

// ---- range -------------------------------------------------------------------------------
// Exact: softmax outputs in [0, 1], log-softmax outputs <= 0 (the max-shifted
// forms give e^(z_j - a) <= 1 over a sum >= 1; NaN is out of range).
CaseResult check_range(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  double worst = 0;
  std::size_t at_j = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    double excess = 0;
    if (std::isnan(y[j])) excess = INFINITY;
    else if (spec(op).out[0].kind == OutputKind::probabilities) excess = std::max({y[j] - 1.0, -y[j], 0.0});
    else excess = std::max(y[j], 0.0);
    if (excess > worst) worst = excess, at_j = j;
  }
  const std::string range = spec(op).out[0].kind == OutputKind::probabilities ? "[0, 1]" : "(-inf, 0]";
  return judge(worst, 0, "abs",
               worst > 0 ? "output " + hex(y[at_j]) + " at index " + std::to_string(at_j) + " outside " + range
                         : "every output in " + range);
}

// ---- underflow ------------------------------------------------------------------------------
// An output may be 0 only where the exact value rounds to 0 (g_j <= eta/2, i.e.
// g_j / ulp_T(g_j) <= 1/2) or where the contract allows |0 - g_j| <= B ulp_T(g_j):
// measured max over zero outputs of g_j / ulp_T(g_j), allowed max(1/2, B).
// Log-softmax: -inf only where the exact value is -inf (a masked entry) or
// rounds to -inf; 0 only under the same rule as above applied to l_j.
CaseResult check_underflow(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const auto shared_ex = shared_exact_row(c.row, c.temperature);
  const oracle::ExactRow& ex = *shared_ex;
  if (auto na = exact_or_na(ex)) return *na;
  const std::span<const Real> exact = exact_of(ex, op);
  const double allowed = std::max(0.5, bound_ulps(k, op, c.row, c.temperature));
  double worst = 0;
  std::string what = "no spurious zero or -inf";
  for (std::size_t j = 0; j < y.size(); ++j) {
    const Real& e = exact[j];
    if (isinf(e) || e == 0) continue;  // masked entries; exact zeros (MPFR underflow)
    double d = 0;
    if (y[j] == -INFINITY && op == Op::log_softmax && std::isfinite(oracle::round_to(e, k.format))) d = INFINITY;
    else if (y[j] == 0) d = (abs(e) / oracle::ulp(e, k.format)).convert_to<double>();
    if (d > worst) worst = d, what = "spurious " + hex(y[j]) + at(j, y[j], e, k.format);
  }
  return judge(worst, allowed, "ulp", what);
}

// ---- masked_entries ----------------------------------------------------------------------------
// -inf entries give exactly 0 (softmax) / -inf (log-softmax); the other entries
// are the softmax of the unmasked entries: against the oracle within B(x), and
// against the kernel's own result on the compacted row within B(x) + B(x_unmasked).
CaseResult check_masked_entries(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const double masked_value = masked_entry_value(spec(op).out[0].kind);
  std::vector<double> compact;
  std::vector<std::size_t> where;
  for (std::size_t j = 0; j < y.size(); ++j) {
    if (c.row[j] != -INFINITY) {
      compact.push_back(c.row[j]);
      where.push_back(j);
    } else if (!(y[j] == masked_value)) {
      return fail(INFINITY, 0, "ulp",
                  "masked entry " + std::to_string(j) + " gave " + hex(y[j]) + " instead of " + hex(masked_value));
    }
  }
  CaseResult vs_oracle = accuracy_core(k, op, c);
  vs_oracle.message = "vs oracle: " + vs_oracle.message;
  const std::vector<double> yc = run_row(k, op, compact, c.temperature);
  const auto scales = ulp_scales(compact, c.temperature, op, k.format, false);
  if (auto na = status_or_na(scales->status)) return *na;
  std::vector<double> y_unmasked(compact.size());
  for (std::size_t i = 0; i < where.size(); ++i) y_unmasked[i] = y[where[i]];
  const double allowed = bound_ulps(k, op, c.row, c.temperature) + bound_ulps(k, op, compact, c.temperature);
  const std::vector<std::size_t> id = identity(compact.size());
  const Spread s = max_spread(y_unmasked, yc, id, scales->exponent);
  CaseResult vs_compact = judge(s.ulps, allowed, "ulp",
                                "vs the kernel on the unmasked entries: entry " + std::to_string(where[s.index]) +
                                    " gave " + hex(y_unmasked[s.index]) + ", compacted row " + hex(yc[s.index]));
  return worst(vs_oracle, vs_compact);
}

// ---- fully_masked -----------------------------------------------------------------------------
// The declared MaskedRowPolicy (format.hpp): nan -> every output NaN; zeros ->
// softmax +-0, log-softmax -inf; uniform -> 1/n and -ln n, within the contract's
// bound for an all-equal row of length n (same exact result), or 1 ulp
// (faithful rounding) for a kernel without a contract.
CaseResult check_fully_masked(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::fully_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const MaskedRowPolicy p = k.masked_policy;
  const std::string policy = "policy " + std::string(name(p));
  if (p == MaskedRowPolicy::nan || p == MaskedRowPolicy::zeros) {
    std::size_t bad = 0, first = 0;
    for (std::size_t j = 0; j < y.size(); ++j) {
      const bool ok = p == MaskedRowPolicy::nan ? std::isnan(y[j])
                                                : y[j] == masked_entry_value(spec(op).out[0].kind);
      if (!ok && bad++ == 0) first = j;
    }
    if (bad == 0) return pass(0, 0, "entries", policy + " followed");
    return fail(static_cast<double>(bad), 0, "entries",
                policy + " violated: output " + hex(y[first]) + " at index " + std::to_string(first));
  }
  const auto n = static_cast<double>(y.size());
  const Real target = spec(op).out[0].kind == OutputKind::probabilities ? Real(1) / Real(n) : -log(Real(n));
  const double allowed = has_contract(k, op) ? bound_ulps(k, op, std::vector<double>(y.size(), 0.0), 1.0) : 1.0;
  double worst = 0;
  std::size_t wj = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    const double d = std::isfinite(y[j])
                         ? (abs(Real(y[j]) - target) / oracle::ulp(target, k.output_format())).convert_to<double>()
                         : INFINITY;
    if (d > worst) worst = d, wj = j;
  }
  return judge(worst, allowed, "ulp", policy + ": output " + hex(y[wj]) + " at index " + std::to_string(wj) +
                                          ", exact " + oracle::to_string(target, 10));
}

// ---- mask_1e9 -----------------------------------------------------------------------------------
// Finite "masks" (-1e9, lowest, -1e30, -max/2) are ordinary finite inputs: the
// result must match the oracle within the contract (so a mask entry gives
// ~0 like -inf where its exact weight underflows, and an all-(-1e9) row gives
// 1/n, not the masked-row policy). Where the format turns the mask into -inf
// (f16: -1e9 -> -inf) the -inf rules apply, including the fully masked policy.
CaseResult check_mask_1e9(const Kernel& k, Op op, const Case& c) {
  if (!c.row.empty() && std::all_of(c.row.begin(), c.row.end(), [](double v) { return v == -INFINITY; }))
    return check_fully_masked(k, op, c);
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  CaseResult r = accuracy_core(k, op, c);
  r.message = "finite-mask row: " + r.message;
  return r;
}

// ---- temperature ------------------------------------------------------------------------------
namespace {

// Monotone: the exact max weight g_k(T) = 1 / sum_i e^((x_i - a)/T) does not
// increase with T. With the contract at T and 2T and (U1) ulp_T(g) <= 2u:
// y_k(2T) - y_k(T) <= (B(T) + B(2T)) 2u. Measured in units of u.
CaseResult temperature_monotone(const Kernel& k, const Case& c) {
  const double t1 = c.temperature, t2 = 2 * c.temperature;
  if (!temperature_ok(t2, k.format)) return not_applicable("monotone: 2T beyond the format");
  const std::vector<double> y1 = run_row(k, Op::softmax, c.row, t1);
  const std::vector<double> y2 = run_row(k, Op::softmax, c.row, t2);
  const auto top = static_cast<std::size_t>(std::max_element(c.row.begin(), c.row.end()) - c.row.begin());
  const double u = unit_roundoff(k.format);
  const double allowed = 2 * (bound_ulps(k, Op::softmax, c.row, t1) + bound_ulps(k, Op::softmax, c.row, t2));
  const double rise = std::isfinite(y1[top]) && std::isfinite(y2[top]) ? (y2[top] - y1[top]) / u : INFINITY;
  return judge(std::max(rise, 0.0), allowed, "u",
               "monotone: max weight (index " + std::to_string(top) + ") " + hex(y1[top]) + " at T = " + hex(t1) +
                   ", " + hex(y2[top]) + " at 2T");
}

// Cold limit: T0 = gap / (2 L), gap = a - (largest x_i < a), L = -ln(eta/2) (the
// underflow edge): every non-max exact weight is <= eps = e^(-gap/T0) = (eta/2)^2,
// and the m tied maxima get g in [1/m - n eps, 1/m]. So
//   |y_max - 1/m| <= B(T0) ulp_T(1/m) + n eps   and   y_other <= B(T0) eta + eps.
CaseResult temperature_cold(const Kernel& k, const Case& c) {
  const double a = finite_max(c.row);
  double second = -INFINITY;
  for (double v : c.row)
    if (v < a) second = std::max(second, v);
  if (!std::isfinite(second)) return not_applicable("cold limit: all entries equal");
  const double gap = a - second;
  const double t0 = gap / (2 * -gen::detail::underflow_edge(k.format));
  const double big = std::max(std::fabs(a), std::fabs(finite_min(c.row)));
  if (!temperature_ok(t0, k.format) || !std::isfinite(gap) || !(big / t0 * (1 + 4 * unit_roundoff(k.format)) <= max_finite(k.format)))
    return not_applicable("cold limit: x / T0 overflows");
  const std::vector<double> y = run_row(k, Op::softmax, c.row, t0);
  const double bound = bound_ulps(k, Op::softmax, c.row, t0);
  const double eps = std::exp(-(gap / t0) * (1 - 0x1p-50)) + std::numeric_limits<double>::denorm_min();
  double m = 0;
  for (double v : c.row) m += v == a ? 1 : 0;
  const auto n = static_cast<double>(c.row.size());
  const double eta = denorm_min(k.format), ulp_m = ulp_of(1 / m, k.format);
  CaseResult r = pass(0, bound, "ulp", "cold limit");
  for (std::size_t j = 0; j < y.size(); ++j) {
    const bool is_max = c.row[j] == a;
    const double scale = is_max ? ulp_m : eta;
    const double dev = is_max ? std::fabs(y[j] - 1 / m) : std::fabs(y[j]);
    const double measured = std::isnan(dev) ? INFINITY : dev / scale;
    const double allowed = bound + (is_max ? n * eps : eps) / scale;
    r = worst(r, judge(measured, allowed, "ulp",
                       "cold limit T0 = " + hex(t0) + ": index " + std::to_string(j) + " gave " + hex(y[j]) +
                           (is_max ? ", expected ~1/" + num(m) : ", expected ~0")));
  }
  return r;
}

// Hot limit: T_inf = 2^ceil(log2(R/u)), R = a - min x_i: every z_i lies within
// r = R/T_inf <= u of z_min, so g_i in [e^-r/n, e^r/n] and |g_i - 1/n| <= expm1(r)/n;
// with the contract |y_i - 1/n| <= B(T_inf) ulp_T(e^r/n) + expm1(r)/n   (U2: ulp monotone).
CaseResult temperature_hot(const Kernel& k, const Case& c) {
  const double range = finite_max(c.row) - finite_min(c.row);
  if (!(range > 0) || !std::isfinite(range)) return not_applicable("hot limit: all entries equal");
  const double u = unit_roundoff(k.format);
  const double t_inf = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(range / u))));
  if (!temperature_ok(t_inf, k.format)) return not_applicable("hot limit: T_inf beyond the format");
  const std::vector<double> y = run_row(k, Op::softmax, c.row, t_inf);
  const double bound = bound_ulps(k, Op::softmax, c.row, t_inf);
  const auto n = static_cast<double>(c.row.size());
  const double r = range / t_inf * (1 + 0x1p-50);
  const double ulp_n = ulp_of(1 / n, k.format);
  const double allowed_abs = bound * ulp_of(std::exp(r) / n * (1 + 0x1p-50), k.format) + std::expm1(r) / n;
  const Real inv_n = Real(1) / Real(n);
  double worst_abs = 0;
  std::size_t wj = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    const double d = std::isnan(y[j]) ? INFINITY : (abs(Real(y[j]) - inv_n)).convert_to<double>();
    if (d > worst_abs) worst_abs = d, wj = j;
  }
  return judge(worst_abs / ulp_n, allowed_abs / ulp_n, "ulp",
               "hot limit T_inf = " + hex(t_inf) + ": index " + std::to_string(wj) + " gave " + hex(y[wj]) +
                   ", expected ~1/" + num(n));
}

}  // namespace

CaseResult check_temperature(const Kernel& k, Op op, const Case& c) {
  if (op != Op::softmax) return not_applicable("temperature limits are stated for softmax");
  if (auto na = out_of_scope(c, k.format, Scope::finite)) return *na;
  CaseResult r = temperature_monotone(k, c);
  r = worst(r, temperature_cold(k, c));
  return worst(r, temperature_hot(k, c));
}

// ---- log_softmax ---------------------------------------------------------------------------
// (a) every output <= 0; (b) finite wherever the exact value rounds to a finite
// value (catches log(softmax(x)) underflowing to -inf); (c) consistent with the
// kernel's softmax: |l_hat - l| <= B_l ulp_T(l) =: d gives |e^l_hat - g| <= g expm1(d),
// and |s_hat - g| <= B_s ulp_T(g), so |e^l_hat - s_hat| <= g expm1(d) + B_s ulp_T(g)
// (e^l_hat evaluated in MPFR).
namespace {

CaseResult log_consistency(const Kernel& k, const Case& c, std::span<const double> y,
                           const oracle::ExactRow& ex) {
  if (!has_contract(k, Op::softmax)) return not_applicable("no softmax contract to compare with");
  const std::vector<double> s = run_row(k, Op::softmax, c.row, c.temperature);
  const double bl = bound_ulps(k, Op::log_softmax, c.row, c.temperature);
  const double bs = bound_ulps(k, Op::softmax, c.row, c.temperature);
  CaseResult r = pass(0, 0, "abs", "consistent with softmax");
  for (std::size_t j = 0; j < y.size(); ++j) {
    if (c.row[j] == -INFINITY) continue;  // masked: checked by masked_entries
    const double d = bl * ulp_of(ex.log_softmax[j], k.format);
    // g expm1(d) = e^(l + d) - e^l, evaluated that way so that an MPFR underflow of g
    // (l ~ -2^100) cannot meet an overflow of e^d.
    const double drift = std::isfinite(d) ? (exp(ex.log_softmax[j] + Real(d)) - ex.softmax[j]).convert_to<double>()
                                          : INFINITY;
    const double allowed = drift + bs * ulp_of(ex.softmax[j], k.format);
    const double diff = std::isnan(y[j]) || std::isnan(s[j]) ? INFINITY
                                                            : (abs(exp(Real(y[j])) - Real(s[j]))).convert_to<double>();
    r = worst(r, judge(diff, allowed, "abs",
                       "index " + std::to_string(j) + ": exp(log_softmax) = exp(" + hex(y[j]) + ") vs softmax " +
                           hex(s[j])));
  }
  return r;
}

}  // namespace

CaseResult check_log_softmax(const Kernel& k, Op op, const Case& c) {
  if (op != Op::log_softmax) return not_applicable("log_softmax property is for the log_softmax op");
  if (auto na = out_of_scope(c, k.format, Scope::finite_or_masked)) return *na;
  const std::vector<double> y = run_row(k, op, c.row, c.temperature);
  const auto shared_ex = shared_exact_row(c.row, c.temperature);
  const oracle::ExactRow& ex = *shared_ex;
  if (auto na = exact_or_na(ex)) return *na;
  for (std::size_t j = 0; j < y.size(); ++j) {
    if (std::isnan(y[j]) || y[j] > 0)
      return fail(std::isnan(y[j]) ? INFINITY : y[j], 0, "abs",
                  "log-softmax output " + hex(y[j]) + " > 0 or NaN at index " + std::to_string(j));
    const Real& l = ex.log_softmax[j];
    if (!isinf(l) && std::isfinite(oracle::round_to(l, k.format)) && !std::isfinite(y[j]))
      return fail(INFINITY, 0, "abs", "non-finite log-softmax where the exact value is finite" + at(j, y[j], l, k.format));
  }
  return worst(pass(0, 0, "abs", "log-softmax <= 0 and finite"), log_consistency(k, c, y, ex));
}

// ---- batch_independence ---------------------------------------------------------------------
// Exact: a row's outputs are bitwise the same alone (rows = 1) and at a position
// among 2..4 rows of other inputs (including NaN/inf rows). Neighbours and
// position are derived from the row's hash. NaN matches any NaN (payloads are not compared).
CaseResult check_batch_independence(const Kernel& k, Op op, const Case& c) {
  if (auto na = out_of_scope(c, k.format, Scope::any)) return *na;
  Rng rng(case_hash(c));
  const std::size_t n = c.row.size();
  const std::size_t rows = 2 + static_cast<std::size_t>(rng.below(3));
  const std::size_t pos = static_cast<std::size_t>(rng.below(rows));
  std::vector<double> batch;
  batch.reserve(rows * n);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> other = r == pos ? c.row : gen::detail::any_row(rng, k.format, n);
    for (std::size_t i = other.size(); i < n; ++i) other.push_back(other[i % other.size()]);  // fixed-length families
    other.resize(n);
    batch.insert(batch.end(), other.begin(), other.end());
  }
  const std::vector<double> alone = run_row(k, op, c.row, c.temperature);
  const std::vector<double> all = run_rows(k, op, batch, static_cast<std::int64_t>(rows),
                                           static_cast<std::int64_t>(n), c.temperature);
  std::size_t diff = 0, first = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (!same_bits_or_both_nan(alone[j], all[pos * n + j]) && diff++ == 0) first = j;
  if (diff == 0) return pass(0, 0, "entries", "identical alone and as row " + std::to_string(pos) + " of " + std::to_string(rows));
  return fail(static_cast<double>(diff), 0, "entries",
              "index " + std::to_string(first) + ": alone " + hex(alone[first]) + ", as row " + std::to_string(pos) +
                  " of " + std::to_string(rows) + " " + hex(all[pos * n + first]));
}

}  // namespace softcheck::props::detail
