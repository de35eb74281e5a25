// Error metrics of a computed result against the oracle's exact value.
// Definitions follow REFERENCE.md ("Error metrics in use", and Blanchard,
// Higham & Higham for the normwise softmax error).
#pragma once

#include <cstddef>
#include <span>

#include "softcheck/format.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck {

enum class ElementClass {
  finite,            // both finite (or both the same infinity): errors measured
  nonfinite,         // exact value finite, result NaN or +-inf: its own category
  special_mismatch,  // exact value is +-inf (a masked log-softmax entry) and the result differs
};

struct ElementError {
  ElementClass cls = ElementClass::finite;
  double ulp = 0;   // |r - v| / ulp_T(v)
  double rel = 0;   // |r - v| / |v|  (+inf when v = 0 and r != 0)
  double abs = 0;   // |r - v|
  double bits = 0;  // log2(1 + |ord(r) - ord(round_T(v))|); width of T when nonfinite
};

// `result` is a value of format `f` held in a double.
ElementError compare_element(double result, const oracle::Real& exact, Format f);

// Herbie's ordinal: the index of x among the values of format f, with +-0 both 0
// (x must be a value of f, finite or infinite).
double ordinal(double x, Format f);

// Per-row aggregate. NaN/inf results never enter the averages.
struct RowError {
  std::size_t elements = 0;
  std::size_t measured = 0;          // elements of class `finite`
  std::size_t nonfinite = 0;
  std::size_t special_mismatch = 0;
  double max_ulp = 0, sum_ulp = 0;
  double max_bits = 0, sum_bits = 0;
  double max_rel = 0, max_abs = 0;
  double normwise = 0;  // max_j |r_j - g_j| / (u * max_j g_j); softmax only, else 0
  std::size_t worst_index = 0;       // element with the largest ulp error (or first nonfinite)
};

RowError compare_row(std::span<const double> result, std::span<const oracle::Real> exact, Format f,
                     Op op);

}  // namespace softcheck
