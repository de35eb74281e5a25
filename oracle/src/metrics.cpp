// Error metrics against the oracle (REFERENCE.md, "Error metrics in use").
// compare_element is the harness's hot path after the oracle itself: it works
// on thread-local MPFR temporaries and allocates nothing.
#include "softcheck/metrics.hpp"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace softcheck::oracle::detail {
// Defined in oracle.cpp (shared MPFR plumbing, not public API).
void prepare_mpfr_thread();
double round_to_format(mpfr_srcptr v, Format f);
long ulp_exponent(mpfr_srcptr v, Format f);
}  // namespace softcheck::oracle::detail

namespace softcheck {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------- ordinals

// Values per binade, 2^(p-1): the step in ordinal from one binade to the next.
std::int64_t binade_size(const FormatInfo& fi) { return std::int64_t{1} << (fi.precision - 1); }

// Exponent E with 2^E <= a < 2^(E+1), for finite a > 0.
int binade_of(double a) {
  int e = 0;
  std::frexp(a, &e);
  return e - 1;
}

// Exponent of the format's quantum (ulp) at a finite a > 0.
int quantum_exponent(double a, const FormatInfo& fi) {
  return std::max(binade_of(a), fi.emin) - fi.precision + 1;
}

// True when x is a value of the format: NaN and +-inf are (every format here
// has them); a finite x must be an integer multiple of its quantum and no
// larger than max_finite.
bool is_value_of(double x, Format f) {
  if (!std::isfinite(x) || x == 0) return true;
  const double a = std::fabs(x);
  if (a > max_finite(f)) return false;
  const double m = std::ldexp(a, -quantum_exponent(a, info(f)));  // exact: a power-of-two scaling
  return m == std::trunc(m);
}

// Index of |x| among the non-negative values of f: 0 for 0, k for the k-th
// subnormal k * denorm_min, (E - emin) 2^(p-1) + m for the normal m 2^(E-p+1)
// (m in [2^(p-1), 2^p)), one past max_finite for inf. For f32 and f64 this is
// the IEEE bit pattern of |x|; int64 holds f64's (up to 0x7FF0000000000000).
std::int64_t magnitude_ordinal(double a, const FormatInfo& fi) {
  if (std::isinf(a)) return (fi.emax - fi.emin + 2) * binade_size(fi);
  if (a == 0) return 0;
  const int E = binade_of(a);
  const auto m = static_cast<std::int64_t>(std::ldexp(a, -quantum_exponent(a, fi)));
  if (E < fi.emin) return m;  // subnormal: m multiples of denorm_min
  return (E - fi.emin) * binade_size(fi) + m;
}

std::int64_t exact_ordinal(double x, Format f) {
  const std::int64_t m = magnitude_ordinal(std::fabs(x), info(f));
  return std::signbit(x) ? -m : m;
}

void require_value_of(double x, Format f, const char* who) {
  if (!is_value_of(x, f))
    throw std::invalid_argument(std::string(who) + ": the result is not a value of format " +
                                std::string(name(f)));
}

// |a - b| without overflow: f64 ordinals of opposite signs are up to 2^64 apart.
double ordinal_distance(std::int64_t a, std::int64_t b) {
  const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  return static_cast<double>(a >= b ? ua - ub : ub - ua);
}

// ---------------------------------------------------------------- element errors

// Reused by every compare_element call of this thread. 64 bits: the metrics
// are reported as doubles, so they only need a few bits beyond 53.
struct Temporaries {
  mpfr_t diff, ratio;
  Temporaries() { mpfr_inits2(64, diff, ratio, static_cast<mpfr_ptr>(nullptr)); }
  ~Temporaries() { mpfr_clears(diff, ratio, static_cast<mpfr_ptr>(nullptr)); }
  Temporaries(const Temporaries&) = delete;
  Temporaries& operator=(const Temporaries&) = delete;
};

Temporaries& temporaries() {
  thread_local Temporaries t;
  return t;
}

ElementError worst_possible(ElementClass cls, Format f) {
  ElementError e;
  e.cls = cls;
  e.ulp = e.rel = e.abs = inf;
  e.bits = info(f).width;  // Herbie: NaN or inf where the exact value is finite
  return e;
}

// Herbie's bits of error, log2(1 + |ord(r) - ord(round_T(v))|), with the
// ordinals as exact integers (as doubles they would not be for f64).
double bits_of_error(double r, mpfr_srcptr v, Format f) {
  const double rounded = oracle::detail::round_to_format(v, f);
  return std::log2(1.0 + ordinal_distance(exact_ordinal(r, f), exact_ordinal(rounded, f)));
}

// Both finite: |r - v| correctly rounded to 64 bits, then scaled or divided.
ElementError finite_errors(double r, mpfr_srcptr v, Format f) {
  Temporaries& t = temporaries();
  mpfr_d_sub(t.diff, r, v, MPFR_RNDN);
  mpfr_abs(t.diff, t.diff, MPFR_RNDN);
  ElementError e;
  e.abs = mpfr_get_d(t.diff, MPFR_RNDN);
  // ulp_T(v) is a power of two 2^q: dividing by it is an exact scaling.
  mpfr_mul_2si(t.ratio, t.diff, -oracle::detail::ulp_exponent(v, f), MPFR_RNDN);
  e.ulp = mpfr_get_d(t.ratio, MPFR_RNDN);
  if (mpfr_zero_p(v)) {
    e.rel = mpfr_zero_p(t.diff) ? 0 : inf;
  } else {
    mpfr_div(t.ratio, t.diff, v, MPFR_RNDN);
    e.rel = std::fabs(mpfr_get_d(t.ratio, MPFR_RNDN));
  }
  e.bits = bits_of_error(r, v, f);
  return e;
}

// The exact value is +-inf (a masked log-softmax entry): right or wrong, no scale.
ElementError against_infinity(double r, mpfr_srcptr v, Format f) {
  const bool same = std::isinf(r) && std::signbit(r) == (mpfr_signbit(v) != 0);
  return same ? ElementError{} : worst_possible(ElementClass::special_mismatch, f);
}

// A finite exact value and an infinite result: right only when the format
// itself overflows there (e.g. an f32 log-softmax below -max_finite), i.e. the
// result is the correctly rounded value; otherwise the result overflowed.
ElementError against_overflow(double r, mpfr_srcptr v, Format f) {
  const bool correctly_rounded = oracle::detail::round_to_format(v, f) == r;
  return correctly_rounded ? ElementError{} : worst_possible(ElementClass::nonfinite, f);
}

// ---------------------------------------------------------------- row

struct WorstTracker {
  std::size_t first_broken = std::numeric_limits<std::size_t>::max();
  std::size_t largest_ulp_index = 0;
  double largest_ulp = -1;

  void broken(std::size_t i) { first_broken = std::min(first_broken, i); }
  void measured(std::size_t i, double u) {
    if (u > largest_ulp) largest_ulp = u, largest_ulp_index = i;  // strict: first of equals
  }
  std::size_t index() const {
    return first_broken != std::numeric_limits<std::size_t>::max() ? first_broken : largest_ulp_index;
  }
};

void accumulate(RowError& row, const ElementError& e) {
  ++row.measured;
  row.sum_ulp += e.ulp;
  row.sum_bits += e.bits;
  row.max_ulp = std::max(row.max_ulp, e.ulp);
  row.max_bits = std::max(row.max_bits, e.bits);
  row.max_rel = std::max(row.max_rel, e.rel);
  row.max_abs = std::max(row.max_abs, e.abs);
}

// max_j g_j, rounded to double (a softmax row has max_j g_j >= 1/n).
double largest_exact(std::span<const oracle::Real> exact) {
  mpfr_srcptr best = nullptr;
  for (const oracle::Real& g : exact)
    if (best == nullptr || mpfr_greater_p(g.backend().data(), best)) best = g.backend().data();
  return best == nullptr ? 0 : mpfr_get_d(best, MPFR_RNDN);
}

// Blanchard, Higham & Higham's softmax error (REFERENCE.md, "Softmax
// algorithms"): max_j |r_j - g_j| / (u max_j g_j), numerator over measured
// elements only, like every other maximum of the row.
double normwise(double max_abs, std::span<const oracle::Real> exact, Format f) {
  const double scale = unit_roundoff(f) * largest_exact(exact);
  if (scale == 0) return max_abs == 0 ? 0 : inf;
  return max_abs / scale;
}

}  // namespace

double ordinal(double x, Format f) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  require_value_of(x, f, "ordinal");
  return static_cast<double>(exact_ordinal(x, f));
}

ElementError compare_element(double result, const oracle::Real& exact, Format f) {
  oracle::detail::prepare_mpfr_thread();
  mpfr_srcptr v = exact.backend().data();
  if (mpfr_nan_p(v)) throw std::invalid_argument("compare_element: the exact value is NaN");
  require_value_of(result, f, "compare_element");
  if (mpfr_inf_p(v)) return against_infinity(result, v, f);
  if (std::isnan(result)) return worst_possible(ElementClass::nonfinite, f);
  if (std::isinf(result)) return against_overflow(result, v, f);
  return finite_errors(result, v, f);
}

ElementError compare_element(double result, const oracle::Real& exact, Format f, const Operand& output) {
  ElementError e = compare_element(result, exact, f);
  if (output.metric == Metric::absolute && e.cls == ElementClass::finite) e.ulp = e.abs / unit_roundoff(f);
  return e;
}

ElementError compare_element(double result, const oracle::Real& exact, Format f, const Operand& output,
                             const oracle::Real& scale) {
  if (output.metric != Metric::scaled) return compare_element(result, exact, f, output);
  if (mpfr_zero_p(scale.backend().data())) {  // a structural zero: exactly 0 or wrong
    ElementError e;
    if (result == 0 && mpfr_zero_p(exact.backend().data())) return e;
    e = compare_element(result, exact, f);
    if (e.cls == ElementClass::finite) {
      e.cls = ElementClass::special_mismatch;
      e.ulp = e.rel = e.abs = std::numeric_limits<double>::infinity();
      e.bits = info(f).width;
    }
    return e;
  }
  ElementError e = compare_element(result, exact, f);
  if (e.cls == ElementClass::finite)
    e.ulp = e.abs / std::max(unit_roundoff(f) * mpfr_get_d(scale.backend().data(), MPFR_RNDU), denorm_min(f));
  return e;
}

ElementError compare_element(double result, const oracle::Real& exact, Format f, Op op) {
  return compare_element(result, exact, f, spec(op).out[0]);
}

RowError compare_row(std::span<const double> result, std::span<const oracle::Real> exact, Format f, Op op) {
  return compare_row(result, exact, f, spec(op).out[0]);
}

RowError compare_row(std::span<const double> result, std::span<const oracle::Real> exact, Format f,
                     const Operand& output, std::span<const oracle::Real> scale) {
  if (result.size() != exact.size())
    throw std::invalid_argument("compare_row: result and exact rows differ in length");
  if ((output.metric == Metric::scaled) != !scale.empty() || (!scale.empty() && scale.size() != exact.size()))
    throw std::invalid_argument("compare_row: a scaled output needs one scale per element, any other none");
  RowError row;
  row.elements = result.size();
  WorstTracker worst;
  for (std::size_t i = 0; i < result.size(); ++i) {
    const ElementError e =
        scale.empty() ? compare_element(result[i], exact[i], f, output) : compare_element(result[i], exact[i], f, output, scale[i]);
    switch (e.cls) {
      case ElementClass::finite:
        accumulate(row, e);
        worst.measured(i, e.ulp);
        break;
      case ElementClass::nonfinite:
        ++row.nonfinite;
        worst.broken(i);
        break;
      case ElementClass::special_mismatch:
        ++row.special_mismatch;
        worst.broken(i);
        break;
    }
  }
  row.worst_index = worst.index();
  if (output.normwise) row.normwise = normwise(row.max_abs, exact, f);
  return row;
}

}  // namespace softcheck
