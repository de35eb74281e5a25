#include "differential.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "gradient_checks.hpp"
#include "invariants.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::fuzz {

namespace {

using Long = long double;

// Unit roundoff of long double: 2^-64 with x87's 64-bit significand (2^-53
// where long double is double; the bound below then just decides less often).
constexpr Long u_long = std::numeric_limits<Long>::epsilon() / 2;

// Safety factor over the error analysis below (glibc's long double exp and
// log1p are within a couple of ulps, but no bound is documented; the analysis
// also drops the (1 + u)^k factors of the rounding model).
constexpr Long safety = 8;

// An argument error beyond this leaves no useful bound (exp's relative error
// would exceed e - 1): the row goes to the oracle unless the entry is far
// below the max either way. Below it the bound holds whatever the error's
// size (expm1, not first order), so rows of huge, nearly equal entries
// (x ~ 1e13 beside one another, where rounding x/T alone moves d by 1e-6)
// are still decided against their equally wide contract.
constexpr Long max_arg_error = 1;

// Entries whose exact exp(z_i - a) is below e^-gap cannot matter: for softmax
// below denorm_min(f) 2^-24 = 2^-(p - emin + 23), so that such an entry's error
// bound (times `safety`) stays below 2^-20 ulp and a correctly rounded output
// is still decided against a contract of 0.5 ulp plus a hair (with 2^-4 here,
// bf16 outputs of 0 whose exact value was 2^-139 were not); for log-softmax
// below 1e-4907, still a normal long double (its smallest normal is 3.4e-4932).
Long gap_for(Op op, Format f) {
  const FormatInfo fi = info(f);
  return spec(op).out[0].kind == OutputKind::probabilities ? (fi.precision - fi.emin + 23) * std::log(Long{2}) : Long{11300};
}

// The error analysis of one row: z = x/T, a = max z (first index k),
// d_i = z_i - a, t_i = exp(d_i), s' = sum_{i != k} t_i (Blanchard, Higham &
// Higham's final form: the max term, exactly 1, stays out of the sum).
struct Analysis {
  std::vector<Long> z;    // x_i / T
  std::vector<Long> d;    // z_i - a (-inf for masked entries)
  std::vector<Long> arg;  // absolute error of d_i
  std::vector<Long> t;    // exp(d_i)
  std::vector<Long> t_err;  // absolute error of t_i
  Long s = 0, s_err = 0;    // s' and its absolute error
  bool reliable = true;
};

// The rounding error of s = fl(p + q) (Knuth's TwoSum: exact, any order of magnitude).
Long two_sum_error(Long p, Long q, Long s) {
  const Long q_virtual = s - p;
  return (p - (s - q_virtual)) + (q - q_virtual);
}

// arg_i: the subtraction's u|d_i| (none when it was exact: TwoSum's error is
// 0), plus u(|z_i| + |a|) from the roundings of x_i/T and x_k/T unless T is a
// power of two (exact: long double's range holds every double so scaled) or
// x_i = x_k (the same value).
// t_i: computed exp(d^_i)(1 + eta), |eta| <= 2u (glibc: ~1 ulp), exact
// exp(d^_i - delta), |delta| <= arg_i, so |t^_i - t_i| <= exp(d^_i)(2u + expm1(arg_i))
// <= t^_i (2u + expm1(arg_i)) / (1 - 2u); an entry that is below e^-gap even
// with its argument error has |error| <= e^-gap.
// s': the terms' errors plus (n - 1) u s' for the recursive sum.
// `an` is overwritten (its vectors keep their capacity: see reference_row).
void analyse(std::span<const double> x, double temperature, Long gap, Analysis& an) {
  const std::size_t n = x.size();
  an.s = an.s_err = 0;
  an.reliable = true;
  std::vector<Long>& z = an.z;
  z.resize(n);
  Long a = -INFINITY;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    z[i] = static_cast<Long>(x[i]) / static_cast<Long>(temperature);
    if (z[i] > a) a = z[i], k = i;
  }
  // Every entry is assigned below or, for a masked one, never read.
  an.d.resize(n);
  an.arg.resize(n);
  an.t.resize(n);
  an.t_err.resize(n);
  const Long far_error = std::exp(-gap);
  int exponent = 0;
  const bool exact_division = std::frexp(temperature, &exponent) == 0.5;
  for (std::size_t i = 0; i < n; ++i) {
    an.d[i] = z[i] - a;
    if (x[i] == -INFINITY) continue;  // t = 0 exactly, arg and t_err unused
    const bool same_as_max = x[i] == x[k];
    an.arg[i] = (two_sum_error(z[i], -a, an.d[i]) == 0 ? Long{0} : u_long * std::fabs(an.d[i])) +
                (exact_division || same_as_max ? Long{0} : u_long * (std::fabs(z[i]) + std::fabs(a)));
    an.t[i] = std::exp(an.d[i]);
    if (an.d[i] + an.arg[i] <= -gap) an.t_err[i] = far_error;  // exact and computed both below e^-gap
    else if (an.arg[i] <= max_arg_error) an.t_err[i] = an.t[i] * (std::expm1(an.arg[i]) + 2 * u_long) / (1 - 2 * u_long);
    else an.reliable = false;
    if (i == k) continue;
    an.s += an.t[i];
    an.s_err += an.t_err[i];
  }
  an.s_err += static_cast<Long>(n) * u_long * an.s;
}

// ulp_T(v) for v >= 0 (REFERENCE.md "Error metrics in use"): 2^(max(e, emin) - p + 1),
// the smallest subnormal below 2^emin, the ulp of max_finite past the top binade.
Long ulp_in(Long v, Format f) {
  const FormatInfo fi = info(f);
  if (!(v >= std::ldexp(Long{1}, fi.emin))) return std::ldexp(Long{1}, fi.emin - fi.precision + 1);
  const int e = std::min(std::ilogb(v), fi.emax);
  return std::ldexp(Long{1}, e - fi.precision + 1);
}

// Whether every value in [lo, hi] rounds (to nearest) to the infinity `inf`
// in f: at or beyond max_finite + ulp(max_finite)/2 = 2^(emax+1) - 2^(emax-p)
// (the tie rounds to the even 2^(emax+1), i.e. overflows: IEEE 754 7.4, and
// oracle.cpp's round_to_format).
bool rounds_to(double inf, Long lo, Long hi, Format f) {
  if (std::isnan(inf) || std::isnan(lo) || std::isnan(hi)) return false;
  const FormatInfo fi = info(f);
  const Long edge = std::ldexp(Long{1}, fi.emax + 1) - std::ldexp(Long{1}, fi.emax - fi.precision);
  return inf < 0 ? hi <= -edge : lo >= edge;
}

}  // namespace

// With S = 1 + s' exact and S^ = 1 + s'^ computed: S >= max(1, S^ - s_err) =: S_lo
// (s' >= 0), so
//   softmax_j = t_j / S:  |t^_j/S^ - t_j/S| <= (t_err_j + v^_j s_err) / S_lo, plus
//     2u v^_j for the sum 1 + s' and the division;
//   log-softmax_j = d_j - log1p(s'):  |log1p(s'^) - log1p(s')| <= s_err / S_lo
//     (mean value theorem, log1p' <= 1/S_lo), plus 4u log1p(s'^) (glibc log1p
//     ~2 ulp), arg_j, and u|l_j| for the final subtraction; and as log1p(s') >= 0,
//     log-softmax_j <= d^_j + arg_j (at_most: it decides an exact d_j at f's
//     overflow edge, where the exact value is a hair beyond it).
// Everything times `safety`; an unreliable analysis gives +inf.
Reference reference_row(std::span<const double> x, double temperature, Op op, Format f) {
  Reference ref;
  reference_row(x, temperature, op, f, ref);
  return ref;
}

void reference_row(std::span<const double> x, double temperature, Op op, Format f, Reference& ref) {
  const std::size_t n = x.size();
  // fuzz_differential runs this on every row: one analysis per thread, its
  // five vectors reused (an allocation under ASan costs more than the row).
  thread_local Analysis an;
  analyse(x, temperature, gap_for(op, f), an);
  const Long one_plus_s = 1 + an.s;
  const Long one_plus_s_lo = std::max(Long{1}, one_plus_s - an.s_err);
  const Long log1p_s = std::log1p(an.s);
  const Long log1p_err = an.s_err / one_plus_s_lo + 4 * u_long * log1p_s;
  ref.value.resize(n);
  ref.error.resize(n);
  ref.at_most.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    if (x[j] == -INFINITY) {
      ref.value[j] = ref.at_most[j] = static_cast<Long>(masked_entry_value(spec(op).out[0].kind));
      ref.error[j] = 0;
      continue;
    }
    if (spec(op).out[0].kind == OutputKind::probabilities) {
      ref.value[j] = an.t[j] / one_plus_s;
      ref.error[j] = (an.t_err[j] + ref.value[j] * an.s_err) / one_plus_s_lo + 2 * u_long * ref.value[j];
      ref.at_most[j] = 1;
    } else {
      ref.value[j] = an.d[j] - log1p_s;
      ref.error[j] = an.arg[j] + log1p_err + u_long * std::fabs(ref.value[j]);
      ref.at_most[j] = an.d[j] + safety * an.arg[j];
    }
    ref.error[j] = an.reliable ? safety * ref.error[j] : Long{INFINITY};
  }
}

bool clearly_within(std::span<const double> x, std::span<const double> y, const Reference& ref, double bound,
                    Format f) {
  for (std::size_t j = 0; j < y.size(); ++j) {
    const Long r = ref.value[j];
    if (x[j] == -INFINITY) {  // a masked entry: exactly 0 / -inf expected
      if (!(static_cast<Long>(y[j]) == r)) return false;
      continue;
    }
    if (!std::isfinite(y[j])) {  // right only where f itself overflows (metrics.cpp, against_overflow)
      if (!rounds_to(y[j], r - ref.error[j], std::min(r + ref.error[j], ref.at_most[j]), f)) return false;
      continue;
    }
    if (std::isinf(bound)) continue;         // any finite output is within an infinite bound
    if (!std::isfinite(ref.error[j])) return false;
    const Long lo = std::max(Long{0}, std::fabs(r) - ref.error[j]);  // ulp_T is non-decreasing in |v|
    const Long distance = std::fabs(static_cast<Long>(y[j]) - r) + ref.error[j];
    if (!(distance <= static_cast<Long>(bound) * ulp_in(lo, f) * (1 - Long{0x1p-40L}))) return false;
  }
  return true;
}

// Stages 2 and 3 are the row judge's tiers (oracle/judge.hpp): the fast
// tiers in the order softcheck run tries them, then MPFR.
bool within_contract_fast(std::span<const double> y, std::span<const double> x, double temperature,
                          const Kernel& k, Op op) {
  thread_local std::map<Format, oracle::RowJudge> judges;  // the tiers' storage reused input to input
  auto it = judges.find(k.format);
  if (it == judges.end()) it = judges.emplace(k.format, oracle::RowJudge(k.format, oracle::JudgeOptions::fast_only())).first;
  oracle::RowJudge& judge = it->second;
  judge.set_row(x, temperature);
  const oracle::RowVerdict v = judge.judge(*k.find(op), k.masked_policy, y);
  return v.status == oracle::RowStatus::ok && v.tier != oracle::Tier::none && !v.broken &&
         v.error.max_ulp <= v.bound;
}

bool within_contract_exact(std::span<const double> y, std::span<const double> x, double temperature,
                           const Kernel& k, Op op) {
  oracle::RowJudge judge(x, temperature, k.format, oracle::JudgeOptions::exact_only());
  const oracle::RowVerdict v = judge.judge(*k.find(op), k.masked_policy, y);
  if (v.status != oracle::RowStatus::ok) return true;  // no exact value: out of the contract's scope
  return !v.broken && v.error.max_ulp <= v.bound;
}

namespace {

// SOFTCHECK_FUZZ_VERBOSE=1 prints every row the prefilter leaves to the oracle
// (to tune the prefilter: each one costs about 1 us per element).
bool verbose() {
  static const bool v = [] {
    const char* e = std::getenv("SOFTCHECK_FUZZ_VERBOSE");
    return e != nullptr && *e != '\0' && *e != '0';
  }();
  return v;
}

// SOFTCHECK_FUZZ_CHECK_PREFILTER=1 runs the oracle on the rows the prefilter
// or the fast tier passes too and aborts if it rejects one (a self-test of
// their error bounds; slow).
bool check_prefilter() {
  static const bool v = [] {
    const char* e = std::getenv("SOFTCHECK_FUZZ_CHECK_PREFILTER");
    return e != nullptr && *e != '\0' && *e != '0';
  }();
  return v;
}

void print_undecided(const Kernel& k, Op op, std::span<const double> x, std::span<const double> y, double t,
                     double bound) {
  std::fprintf(stderr, "softcheck-fuzz: oracle stage for %s %s T=%s B=%g\n  x=%s\n  y=%s\n", k.name.c_str(),
               std::string(name(op)).c_str(), props::format_value(t).c_str(), bound, props::format_row(x).c_str(),
               props::format_row(y).c_str());
}

// With SOFTCHECK_FUZZ_CHECK_PREFILTER set: aborts unless the oracle agrees
// that a row `stage` passed is within the contract.
void self_check(const char* stage, const Kernel& k, Op op, std::span<const double> x, std::span<const double> y,
                double t, double bound) {
  if (!check_prefilter() || within_contract_exact(y, x, t, k, op)) return;
  print_undecided(k, op, x, y, t, bound);
  std::fprintf(stderr, "==softcheck-fuzz== %s UNSOUND: passed a row the oracle rejects\n", stage);
  std::abort();
}

std::optional<Violation> check_kernel_row(const FuzzCase& c, const Kernel& k, std::int64_t r,
                                          std::span<const double> y_row, const Reference& ref) {
  const std::span<const double> x = c.row(r);
  const Format f = k.format;
  const double bound = k.find(c.op)->contract.bound_ulps(row_shape(x, c.temperature, f), f);
  // The prefilter's enclosures are of softmax and log-softmax rows only.
  if (!spec(c.op).scalar_output() && clearly_within(x, y_row, ref, bound, f)) {
    self_check("PREFILTER", k, c.op, x, y_row, c.temperature, bound);
    return std::nullopt;
  }
  if (verbose()) print_undecided(k, c.op, x, y_row, c.temperature, bound);
  // The oracle's fast tier settles most rows the prefilter leaves (f16/bf16
  // results a hair from a rounding boundary against a ~0.5 ulp bound) at a
  // fraction of MPFR's cost; what it cannot decide goes to exact_row.
  if (within_contract_fast(y_row, x, c.temperature, k, c.op)) {
    self_check("FAST TIER", k, c.op, x, y_row, c.temperature, bound);
    return std::nullopt;
  }
  if (verbose()) std::fputs("softcheck-fuzz: fast tier undecided: exact_row\n", stderr);
  if (within_contract_exact(y_row, x, c.temperature, k, c.op)) return std::nullopt;
  return confirm_row(c, k, c.op, r, "accuracy", y_row);
}

}  // namespace

std::optional<Violation> check_differential(const FuzzCase& c, std::span<const double> y,
                                            std::span<const double> y_partner) {
  if (spec(c.op).several_inputs()) return check_gradient_differential(c, y, y_partner);
  const auto out_cols = static_cast<std::size_t>(output_cols(c.op, c.cols));
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const RowKind kind = classify(c.row(r));
    if (kind != RowKind::finite && kind != RowKind::masked) continue;
    if (!in_property_scope(c.row(r), c.temperature, c.kernel->format)) continue;
    thread_local Reference ref;  // reused: this runs on every row of every input
    if (!spec(c.op).scalar_output()) reference_row(c.row(r), c.temperature, c.op, c.kernel->format, ref);
    const std::size_t at = static_cast<std::size_t>(r) * out_cols;
    if (auto v = check_kernel_row(c, *c.kernel, r, y.subspan(at, out_cols), ref)) return v;
    if (c.partner != nullptr)
      if (auto v = check_kernel_row(c, *c.partner, r, y_partner.subspan(at, out_cols), ref)) return v;
  }
  return std::nullopt;
}

}  // namespace softcheck::fuzz
