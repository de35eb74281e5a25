// The oracle's fast tiers: softmax and log-softmax of one row with
// a rigorous running error bound per element, and the metrics of a kernel's
// result decided from those enclosures. One algorithm, three arithmetics:
//   - the double tier (DoubleFastRow, u = 2^-53): cheap, enough for
//     f32/f16/bf16 results of ordinary rows;
//   - the extended tier (FastRow, x87 long double, u = 2^-64): a wider
//     exponent range (no overflow of x_i - x_max, exp down to e^-11000) and
//     tighter enclosures, for the rows the double tier cannot decide;
//   - the double-double tier (DDFastRow, every operation within 2^-96): for
//     f64 results, whose 1/1000 ulp is 2^-63 relative.
// The MPFR oracle (oracle.hpp) stays the reference: a caller falls back to
// exact_row + compare_row for a row whose metrics neither tier can decide
// (docs/oracle.md, "Tiered oracle").
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/op.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::oracle {

// Whether MPFR's exact value of a softmax entry is 0. exact_row computes
// exp(d_i) in MPFR's widest exponent range, so exp(d_i) below about
// 2^(emin_min - 2) (d_i < -3.19e18) is 0 there; the fast tier knows on which
// side of that edge d_i lies, unless it is too close.
enum class ZeroState : unsigned char { positive, zero, unknown };

// A double-word number hi + lo (|lo| <= ulp(hi)/2, the exact sum is the
// value): the DD tier's arithmetic (oracle/src/double_double.hpp).
struct DD {
  double hi = 0, lo = 0;
  constexpr DD() = default;
  constexpr DD(double h) : hi(h) {}  // NOLINT(google-explicit-constructor): like double -> long double
  constexpr DD(int h) : hi(h) {}     // NOLINT(google-explicit-constructor)
  constexpr DD(double h, double l) : hi(h), lo(l) {}
  explicit constexpr operator double() const { return hi + lo; }  // the exact sum, rounded to nearest
  explicit constexpr operator long() const { return static_cast<long>(hi); }
};

// One row's enclosures: the exact value lies in [value - err, value + err].
// Masked entries are exact (softmax 0, log-softmax -inf, err 0). R is the
// tier's arithmetic: double or long double.
template <class R>
struct BasicFastRow {
  RowStatus status = RowStatus::ok;
  bool usable = false;  // false: some value is outside the tier's domain, use exact_row
  std::vector<R> softmax, softmax_err;
  std::vector<R> log_softmax, log_softmax_err;
  // A tighter enclosure of log-softmax: the exact value lies in
  // [log_softmax + res - tight, log_softmax + res + tight], where res is the
  // exact rounding error of d_i - log1p(r) (Knuth's TwoSum). It decides the
  // rounding of values that sit a hair off a midpoint of the format (d_i a
  // midpoint, log1p(r) ~ 1e-80 on one-hot rows).
  std::vector<R> log_softmax_res, log_softmax_tight;
  std::vector<ZeroState> softmax_zero;      // MPFR's softmax value 0, non-zero, or undecided
  std::vector<ZeroState> log_softmax_zero;  // the same for log-softmax (0 only where d_i = 0 and r = 0)
  // The row's lse = z_k + log1p(r) (z_k = x_k / T, k the first maximum) lies
  // in [lse - lse_err, lse + lse_err]; lse_usable is false when the tier
  // could not form it. lse_zero: MPFR's lse is 0 (z_k = 0 and r = 0),
  // non-zero, or undecided. entropy_zero: MPFR's entropy is 0 (r = 0: the
  // maximum holds all the mass), non-zero, or undecided. The entropy itself
  // is enclosed on demand from the softmax and log-softmax enclosures
  // (scalar_enclosure).
  R lse = 0, lse_err = 0;
  bool lse_usable = false;
  ZeroState lse_zero = ZeroState::unknown, entropy_zero = ZeroState::unknown;
  // Every d_i = x_i - x_k exact and of at most 64 bits (T = 1, no rounding
  // in the tier: none in MPFR's working precision either), and log1p(r) <=
  // log1p_r_hi. MPFR's
  // log-softmax is then d_i - log1p(r) to a few units of 2^-bits of log1p(r),
  // not of the value (round_to_odd keeps it so), which is what decides a
  // d_i on a midpoint of the format with a log1p(r) far below it.
  bool d_exact = false;
  R log1p_r_hi = 0;
  // Which filling of the object this is: fast_row_in numbers each one (from
  // 1, across threads), and compare_row_fast keeps what it derives from a
  // DD row for the next result judged against the same filling. 0, a row
  // built or changed by hand, is never kept.
  std::uint64_t serial = 0;
};

using FastRow = BasicFastRow<long double>;  // the extended tier
using DoubleFastRow = BasicFastRow<double>;  // the double tier
using DDFastRow = BasicFastRow<DD>;          // the double-double tier (f64 results)

// The fast tiers of exact_row (same row status rules, same argument checks).
// `out` overloads reuse the vectors' storage from one row to the next.
FastRow fast_row(std::span<const double> x, double temperature = 1.0);
DoubleFastRow double_fast_row(std::span<const double> x, double temperature = 1.0);
void fast_row(std::span<const double> x, double temperature, FastRow& out);
void double_fast_row(std::span<const double> x, double temperature, DoubleFastRow& out);
DDFastRow dd_fast_row(std::span<const double> x, double temperature = 1.0);
void dd_fast_row(std::span<const double> x, double temperature, DDFastRow& out);

// The exponent k of ulp_f(v) = 2^k (oracle.hpp, ulp_exponent) of each exact
// value v of `kind` (probabilities or log_probabilities) that the row (of
// the double or the double-double tier) encloses, or of max(1, |v|) with
// `at_one`; ulp_exponent_infinite where v is -inf (a masked log-softmax
// entry). The exponents of exact_row's values at
// `bits` bits, which round v: a softmax entry within 2^-(bits+3) of 1 is 1
// there, and it decides so; elsewhere the enclosure stays 2^-50 (relative)
// inside one binade, far beyond that rounding. False, `out` unspecified, for
// a row not usable or not ok, another kind, or an enclosure that reaches
// across the edge of a binade (or of the subnormal range): ask MPFR then.
inline constexpr long ulp_exponent_infinite = std::numeric_limits<long>::max();
template <class R>
bool ulp_exponents(const BasicFastRow<R>& row, OutputKind kind, Format f, bool at_one, std::vector<long>& out,
                   unsigned bits = default_bits);
extern template bool ulp_exponents(const DoubleFastRow&, OutputKind, Format, bool, std::vector<long>&, unsigned);
extern template bool ulp_exponents(const DDFastRow&, OutputKind, Format, bool, std::vector<long>&, unsigned);

// The text to_string(v, digits) (oracle.hpp) gives for the value v of
// `kind` (probabilities or log_probabilities) at `element` of exact_row(x,
// temperature, bits), from the double-double tier's row of the same x and
// temperature: its enclosure of the exact value, widened to hold MPFR's (a
// few units of 2^-bits off it). Decimal rounding is monotone, so when both
// ends of that interval print the same text, so does every value inside
// it. Nullopt where the row does not enclose the value (not usable or not
// ok, an element past the row's end, another kind), or the interval reaches
// across a last digit's rounding edge or holds 0: ask MPFR then. Throws for
// digits < 1 or bits outside exact_row's [1, 2^24]. A worst case's exact
// text comes from here when it can (a 65,536-entry row costs the DD tier a
// few milliseconds, MPFR 60).
std::optional<std::string> exact_text_fast(const DDFastRow& row, OutputKind kind, std::size_t element, int digits,
                                           unsigned bits = default_bits);

// The enclosure [v - err, v + err] of a scalar output of the row (OutputKind
// log_sum_exp or entropy; the row usable and ok), and MPFR's zero state of
// it; false when the tier cannot enclose it (lse not usable, an entropy term
// out of range). The entropy is H = sum_i p_i (-l_i), every term >= 0 (p the
// softmax, l the log-softmax enclosures), summed by Sum2 (TwoSum cascade) in
// the double and extended tiers and recursively in the double-double tier.
template <class R>
bool scalar_enclosure(const BasicFastRow<R>& row, OutputKind kind, R& v, R& err, ZeroState& zero);

// Metrics of `result` (values of format f in doubles) against the fast
// enclosures, or nullopt when they cannot be decided to within `tolerance`
// ulp for every element (or tolerance 2^-20 of an element's figure when that
// is larger; and the analogous rules for the other metrics, see
// oracle/src/fast_compare.cpp). The figures are estimates within those
// tolerances of what compare_row against exact_row gives; counts and classes
// are exact.
// f64 results are decided by the double-double tier only (nullopt from the
// others), and the double-double tier decides nothing but f64.
// Scalar outputs (kind log_sum_exp or entropy; result holds the row's one
// value) are measured in their Metric::absolute: the `ulp` figures are
// |r - v| / u_T, as compare_row gives them; a NaN result is class nonfinite
// (counted), an infinite one is left to MPFR (nullopt).
struct FastRowError {
  RowError error;
  double max_ulp_err = 0;              // |max_ulp - exact max_ulp| <= max_ulp_err
  std::vector<double> ulp, ulp_err;    // per element (0/0 for classes other than finite)
  std::vector<unsigned char> finite;   // 1 where the element's class is finite
};
// reference_bits: the precision of the exact_row the run would fall back to;
// its values are within 4 units of 2^-bits of the exact ones, and decisions
// (round_T(v) for Herbie's bits) are made for every value that close.
template <class R>
std::optional<FastRowError> compare_row_fast(std::span<const double> result, const BasicFastRow<R>& exact, Format f,
                                             OutputKind kind, double tolerance = 1e-3, unsigned reference_bits = default_bits);
// The same into `out` (its vectors' storage reused from one row to the
// next); false where the optional form gives nullopt (`out` then unspecified).
template <class R>
bool compare_row_fast(std::span<const double> result, const BasicFastRow<R>& exact, Format f, OutputKind kind,
                      FastRowError& out, double tolerance = 1e-3, unsigned reference_bits = default_bits);
extern template bool compare_row_fast(std::span<const double>, const FastRow&, Format, OutputKind, FastRowError&, double,
                                      unsigned);
extern template bool compare_row_fast(std::span<const double>, const DoubleFastRow&, Format, OutputKind, FastRowError&,
                                      double, unsigned);
extern template std::optional<FastRowError> compare_row_fast(std::span<const double>, const FastRow&, Format, OutputKind,
                                                             double, unsigned);
extern template std::optional<FastRowError> compare_row_fast(std::span<const double>, const DoubleFastRow&, Format,
                                                             OutputKind, double, unsigned);
extern template bool compare_row_fast(std::span<const double>, const DDFastRow&, Format, OutputKind, FastRowError&, double,
                                      unsigned);
extern template std::optional<FastRowError> compare_row_fast(std::span<const double>, const DDFastRow&, Format, OutputKind,
                                                             double, unsigned);
// The scalar form on an enclosure [v - err, v + err] the caller formed with
// scalar_enclosure (with its zero state): r is the result's one value. A
// caller that needs the enclosure afterwards (the judge, for the error's
// sign) forms it once. Decides what compare_row_fast decides for that output.
template <class R>
bool compare_scalar_fast(double r, R v, R err, ZeroState zero, Format f, FastRowError& out, double tolerance = 1e-3,
                         unsigned reference_bits = default_bits);
extern template bool compare_scalar_fast(double, long double, long double, ZeroState, Format, FastRowError&, double,
                                         unsigned);
extern template bool compare_scalar_fast(double, double, double, ZeroState, Format, FastRowError&, double, unsigned);
extern template bool compare_scalar_fast(double, DD, DD, ZeroState, Format, FastRowError&, double, unsigned);

}  // namespace softcheck::oracle
