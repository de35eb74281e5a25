// The oracle's fast tier (issue 10): softmax and log-softmax of one row in
// x87 extended precision (long double, 64-bit significand) with a rigorous
// running error bound per element, and the metrics of a kernel's result
// decided from those enclosures. The MPFR oracle (oracle.hpp) stays the
// reference: a caller falls back to exact_row + compare_row for a row whose
// metrics the enclosures cannot decide (docs/oracle.md, "Tiered oracle").
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::oracle {

// Whether MPFR's exact value of a softmax entry is 0. exact_row computes
// exp(d_i) in MPFR's widest exponent range, so exp(d_i) below about
// 2^(emin_min - 2) (d_i < -3.19e18) is 0 there; the fast tier knows on which
// side of that edge d_i lies, unless it is too close.
enum class ZeroState : unsigned char { positive, zero, unknown };

// One row's enclosures: the exact value lies in [value - err, value + err].
// Masked entries are exact (softmax 0, log-softmax -inf, err 0).
struct FastRow {
  RowStatus status = RowStatus::ok;
  bool usable = false;  // false: some value is outside the tier's domain, use exact_row
  std::vector<long double> softmax, softmax_err;
  std::vector<long double> log_softmax, log_softmax_err;
  // A tighter enclosure of log-softmax: the exact value lies in
  // [log_softmax + res - tight, log_softmax + res + tight], where res is the
  // exact rounding error of d_i - log1p(r) (Knuth's TwoSum). It decides the
  // rounding of values that sit a hair off a midpoint of the format (d_i a
  // midpoint, log1p(r) ~ 1e-80 on one-hot rows).
  std::vector<long double> log_softmax_res, log_softmax_tight;
  std::vector<ZeroState> softmax_zero;      // MPFR's softmax value 0, non-zero, or undecided
  std::vector<ZeroState> log_softmax_zero;  // the same for log-softmax (0 only where d_i = 0 and r = 0)
};

// The fast tier of exact_row (same row status rules, same argument checks).
FastRow fast_row(std::span<const double> x, double temperature = 1.0);

// Metrics of `result` (values of format f in doubles) against the fast
// enclosures, or nullopt when they cannot be decided to within `tolerance`
// ulp for every element (and the analogous rules for the other metrics, see
// fast_oracle.cpp). The figures are estimates within those tolerances of
// what compare_row against exact_row gives; counts and classes are exact.
struct FastRowError {
  RowError error;
  double max_ulp_err = 0;              // |max_ulp - exact max_ulp| <= max_ulp_err
  std::vector<double> ulp, ulp_err;    // per element (0/0 for classes other than finite)
  std::vector<unsigned char> finite;   // 1 where the element's class is finite
};
// reference_bits: the precision of the exact_row the run would fall back to;
// its values are within 4 units of 2^-bits of the exact ones, and decisions
// (round_T(v) for Herbie's bits) are made for every value that close.
std::optional<FastRowError> compare_row_fast(std::span<const double> result, const FastRow& exact, Format f,
                                             Op op, double tolerance = 1e-3, unsigned reference_bits = default_bits);

}  // namespace softcheck::oracle
