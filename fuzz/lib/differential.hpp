// fuzz_differential's check: a kernel's outputs against the exact (MPFR)
// softmax within its declared contract, |y_j - g_j| <= B ulp_T(g_j) with
// B = Contract::bound_ulps(row_shape(x, T, f), f) (core/include/softcheck/kernel.hpp,
// REFERENCE.md "Error metrics in use"); a NaN/inf where the exact value is finite
// fails whatever B is.
//
// The MPFR oracle costs about 1 us per element (REFERENCE.md "MPFR through
// Boost.Multiprecision"), far too slow for every fuzz input, so each row goes
// through these stages:
//   1. a long double reference (64-bit significand: 11 bits beyond f64) with a
//      generous error bound; a row whose every output is within B ulps of the
//      whole interval [ref - err, ref + err] passes;
//   2. otherwise the oracle's fast tiers (double, long double, double-double
//      for f64 results; compare_row_fast): a row they prove within B passes;
//   3. otherwise the MPFR oracle: exact_row + compare_row against B;
//   4. a row over its bound there is confirmed by the property suite's
//      `accuracy` check (what `softcheck repro --property accuracy` runs).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "fuzz_case.hpp"
#include "violation.hpp"

namespace softcheck::fuzz {

// Softmax or log-softmax of x/T in long double with |ref_j - exact_j| <= err_j
// (err_j = +inf where the analysis cannot bound it) and exact_j <= at_most_j,
// for a kernel of format f (entries that cannot matter in f are bounded
// coarsely). Requires a row with a finite entry and no +inf/NaN, T finite and > 0.
struct Reference {
  std::vector<long double> value;
  std::vector<long double> error;
  std::vector<long double> at_most;
};
Reference reference_row(std::span<const double> x, double temperature, Op op, Format f);
// The same into `out`, whose vectors keep their capacity (the per-row form).
void reference_row(std::span<const double> x, double temperature, Op op, Format f, Reference& out);

// Stage 1: true when every y_j is provably within `bound` ulps of the exact
// value (false: undecided, not necessarily wrong). Masked entries (x_j = -inf)
// must be exactly 0 / -inf.
bool clearly_within(std::span<const double> x, std::span<const double> y, const Reference& ref, double bound,
                    Format f);

// Stage 2: the oracle's fast tiers (oracle/include/softcheck/fast_oracle.hpp:
// rigorous enclosures in double / long double / double-double, and
// compare_row_fast): true when one proves every y_j within the contract even
// at the top of its uncertainty; false when none can decide or the row fails.
bool within_contract_fast(std::span<const double> y, std::span<const double> x, double temperature,
                          const Kernel& k, Op op);

// Stage 3: the contract check against the MPFR oracle; true when the row is within.
bool within_contract_exact(std::span<const double> y, std::span<const double> x, double temperature,
                           const Kernel& k, Op op);

// Every row of the batch in contract scope (finite entries and -inf masks,
// in_property_scope), for the kernel and, when set, for
// c.partner on the same rows (each against its own bound). The ops with more
// inputs than the logits go to check_gradient_differential (gradient_checks.hpp).
std::optional<Violation> check_differential(const FuzzCase& c, std::span<const double> y,
                                            std::span<const double> y_partner);

}  // namespace softcheck::fuzz
