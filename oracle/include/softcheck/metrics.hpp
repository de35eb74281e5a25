// Error metrics of a computed result against the oracle's exact value.
// Definitions follow REFERENCE.md ("Error metrics in use", and Blanchard,
// Higham & Higham for the normwise softmax error).
#pragma once

#include <cstddef>
#include <span>

#include "softcheck/format.hpp"
#include "softcheck/op.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck {

enum class ElementClass {
  finite,            // both finite (or both the same infinity): errors measured
  nonfinite,         // exact value finite, result NaN or +-inf: its own category
  special_mismatch,  // exact value is +-inf (a masked log-softmax entry) and the result differs
};
// An infinite result for a finite exact value is class `finite` with all errors
// 0 when it is the correctly rounded value (the format overflows there, e.g. an
// f32 log-softmax below -max_finite). For `nonfinite` and `special_mismatch`
// ulp, rel and abs are +inf and bits is the format's width.

struct ElementError {
  ElementClass cls = ElementClass::finite;
  double ulp = 0;   // |r - v| / ulp_T(v)
  double rel = 0;   // |r - v| / |v|  (+inf when v = 0 and r != 0)
  double abs = 0;   // |r - v|
  double bits = 0;  // log2(1 + |ord(r) - ord(round_T(v))|); width of T when nonfinite
};

// `result` is a value of format `f` held in a double (throws
// std::invalid_argument if it is not, or if `exact` is NaN). The errors are
// computed in MPFR and rounded to double (a few units of 2^-53 relative).
// Thread-safe; allocates nothing after its first call in a thread.
ElementError compare_element(double result, const oracle::Real& exact, Format f);
// The same in the metric of an op's output operand (op table): for
// Metric::absolute, `ulp` holds the absolute error in units of u,
// |r - v| / unit_roundoff(f).
ElementError compare_element(double result, const oracle::Real& exact, Format f, const Operand& output);
// ... for Metric::scaled, with the element's exact scale s (oracle): `ulp`
// holds |r - v| / max(u s, denorm_min(f)); where s = 0 the result must be
// exactly 0 (else class special_mismatch).
ElementError compare_element(double result, const oracle::Real& exact, Format f, const Operand& output,
                             const oracle::Real& scale);
// ... of the op's first output.
ElementError compare_element(double result, const oracle::Real& exact, Format f, Op op);

// Herbie's ordinal: the index of x among the values of format f, with +-0 both 0
// (x must be a value of f, finite or infinite; throws std::invalid_argument
// otherwise; NaN gives NaN). For f32 and f64 it is the IEEE bit pattern of |x|,
// negated for negative x. Exact for f32, f16 and bf16; for f64 the ordinals reach
// 2^63 and the double is the rounded integer (compare_element uses the exact
// integers internally).
double ordinal(double x, Format f);

// Per-row aggregate. Only elements of class `finite` enter the sums and maxima
// (ulp, bits, rel, abs, and the numerator of normwise); nonfinite and
// special_mismatch elements are only counted. Throws std::invalid_argument when
// the spans differ in length.
struct RowError {
  std::size_t elements = 0;
  std::size_t measured = 0;          // elements of class `finite`
  std::size_t nonfinite = 0;
  std::size_t special_mismatch = 0;
  double max_ulp = 0, sum_ulp = 0;
  double max_bits = 0, sum_bits = 0;
  double max_rel = 0, max_abs = 0;
  double normwise = 0;  // max_j |r_j - g_j| / (u * max_j g_j); outputs with Operand::normwise, else 0
  // The first element of class nonfinite or special_mismatch if there is one;
  // else the first element with the largest ulp error; 0 for an empty row.
  std::size_t worst_index = 0;
};

// The output operand's metric (op table) decides what the `ulp` figures
// hold: ULPs of f, or for Metric::absolute the absolute error in units of
// u = unit_roundoff(f), |r - v| / u (the scale the contract is written in).
// A Metric::scaled output passes each element's exact scale (one per
// element; none for the other metrics, else std::invalid_argument).
RowError compare_row(std::span<const double> result, std::span<const oracle::Real> exact, Format f,
                     const Operand& output, std::span<const oracle::Real> scale = {});
// ... of the op's first output.
RowError compare_row(std::span<const double> result, std::span<const oracle::Real> exact, Format f, Op op);

}  // namespace softcheck
