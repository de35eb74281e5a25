// Double-word ("double-double") numbers for the oracle's DD tier
// (fast_arith.hpp, fast_rows.cpp): a value hi + lo with |lo| <= ulp(hi)/2, and the few
// operations the tier needs. Private to oracle/.
//
// The algorithms and their error bounds are those of Joldes, Muller &
// Popescu, "Tight and rigorous error bounds for basic building blocks of
// double-word arithmetic", ACM TOMS 44(2), 2017 (u = 2^-53, round to nearest,
// no underflow or overflow):
//   add  AccurateDWPlusDW (their Algorithm 6):  relative error <= 3u^2/(1 - 4u)
//   mul  DWTimesDW1 (Algorithm 10):             relative error <= 7u^2
//   mul  DWTimesFP1 (Algorithm 7, by a double): relative error <= 1.5u^2 + 4u^3
//   div  DWDivDW2 (Algorithm 17):                relative error <= 15u^2 + 56u^3
// Their products use an exact TwoProd; without an FMA (baseline x86-64) it is
// Dekker's product with Veltkamp's splitting, exact when no intermediate
// overflows (|operands| < 2^996) or underflows (the tier keeps its values
// above 2^-900). The DD tier's model bounds every operation by
// kDoubleDoubleU = 2^-96 = 1024 u^2, far above all of these.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "softcheck/fast_oracle.hpp"  // struct DD

namespace softcheck::oracle {

inline constexpr double kDoubleDoubleU = 0x1p-96;

// GCC kept operator+ and operator* out of line (called per element by the
// DD tier's loops: 10 % of the quick suite's case time in the calls alone).
#define SOFTCHECK_DD_INLINE [[gnu::always_inline]] constexpr

// Error-free transformations (Knuth's TwoSum; Dekker's FastTwoSum for |a| >= |b|).
SOFTCHECK_DD_INLINE DD exact_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
SOFTCHECK_DD_INLINE DD exact_fast_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}
// Veltkamp's splitting (a = hi + lo, 26 bits each) and Dekker's exact product.
SOFTCHECK_DD_INLINE DD veltkamp_split(double a) {
  const double c = 134217729.0 * a;  // 2^27 + 1
  const double h = c - (c - a);
  return {h, a - h};
}
// (2^27 + 1) a overflows beyond 2^996 (and a split's hi can round up past
// DBL_MAX): a finite factor that large is multiplied scaled by 2^-30 and the
// product scaled back, both exact, so that words up to DBL_MAX multiply (the
// log-softmax of an f64 lowest entry is -DBL_MAX - x_k - log1p(r)).
SOFTCHECK_DD_INLINE bool beyond_split(double a) { return (a > 0x1p995 && a <= 0x1.fffffffffffffp1023) || (a < -0x1p995 && a >= -0x1.fffffffffffffp1023); }
SOFTCHECK_DD_INLINE DD exact_product_in_range(double a, double b) {
  const double p = a * b;
  const DD x = veltkamp_split(a), y = veltkamp_split(b);
  return {p, ((x.hi * y.hi - p) + x.hi * y.lo + x.lo * y.hi) + x.lo * y.lo};
}
SOFTCHECK_DD_INLINE DD exact_product(double a, double b) {
  if (beyond_split(a) || beyond_split(b)) {
    const DD p = exact_product_in_range(beyond_split(a) ? a * 0x1p-30 : a, beyond_split(a) ? b : b * 0x1p-30);
    return {p.hi * 0x1p30, p.lo * 0x1p30};
  }
  return exact_product_in_range(a, b);
}

SOFTCHECK_DD_INLINE DD operator+(DD x, DD y) {  // AccurateDWPlusDW
  const DD s = exact_sum(x.hi, y.hi);
  const DD t = exact_sum(x.lo, y.lo);
  const double c = s.lo + t.hi;
  const DD v = exact_fast_sum(s.hi, c);
  const double w = t.lo + v.lo;
  return exact_fast_sum(v.hi, w);
}
SOFTCHECK_DD_INLINE DD operator-(DD x) { return {-x.hi, -x.lo}; }
SOFTCHECK_DD_INLINE DD operator-(DD x, DD y) { return x + -y; }
// y a normal power of two (the ulp scalings, u and 2^-52 factors of the
// element rules): x.hi y is exact while it stays normal, so the product's
// error word is 0 and DWTimesFP1 below returns {x.hi y, x.lo y} whenever
// x.lo y leaves x.hi y unchanged when added (x normalised). That result,
// without the two Veltkamp splits.
SOFTCHECK_DD_INLINE bool normal_power_of_two(double y) {
  const auto bits = std::bit_cast<std::uint64_t>(y) & 0x7fffffffffffffffULL;
  return (bits & 0x000fffffffffffffULL) == 0 && bits != 0 && bits < 0x7ff0000000000000ULL;
}
SOFTCHECK_DD_INLINE DD times_double(DD x, double y) {  // DWTimesFP1
  if (normal_power_of_two(y)) {
    const double h = x.hi * y, l = x.lo * y;
    const double a = h < 0 ? -h : h;  // not std::fabs: clang refuses it in the constant evaluations of gamma()
    // l + 0: a zero low word comes out +0, as DWTimesFP1's sums give it.
    if (a >= 0x1p-1022 && a <= 0x1.fffffffffffffp1023 && h + l == h) return {h, l + 0.0};
  }
  const DD c = exact_product(x.hi, y);
  const double cl2 = x.lo * y;
  const DD t = exact_fast_sum(c.hi, cl2);
  const double tl2 = t.lo + c.lo;
  return exact_fast_sum(t.hi, tl2);
}
SOFTCHECK_DD_INLINE DD operator*(DD x, DD y) {  // DWTimesDW1
  if (y.lo == 0) return times_double(x, y.hi);
  const DD c = exact_product(x.hi, y.hi);
  const double tl = x.hi * y.lo;
  const double tl2 = x.lo * y.hi;
  const double cl2 = tl + tl2;
  const double cl3 = c.lo + cl2;
  return exact_fast_sum(c.hi, cl3);
}
constexpr DD operator/(DD x, DD y) {  // DWDivDW2
  const double th = x.hi / y.hi;
  const DD r = times_double(y, th);
  const DD pi = exact_sum(x.hi, -r.hi);
  const double dh = pi.lo - r.lo;
  const double dl = dh + x.lo;
  const double d = pi.hi + dl;
  const double tl = d / y.hi;
  return exact_fast_sum(th, tl);
}
SOFTCHECK_DD_INLINE DD& operator+=(DD& x, DD y) { return x = x + y; }
SOFTCHECK_DD_INLINE DD& operator*=(DD& x, DD y) { return x = x * y; }

// Comparisons of the exact values (hi decides unless equal; lo is a tiebreak).
constexpr bool operator==(DD x, DD y) { return x.hi == y.hi && x.lo == y.lo; }
constexpr bool operator<(DD x, DD y) { return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo); }
constexpr bool operator>(DD x, DD y) { return y < x; }
constexpr bool operator<=(DD x, DD y) { return x < y || x == y; }
constexpr bool operator>=(DD x, DD y) { return y <= x; }

// The <cmath> functions the tier calls, found by argument-dependent lookup.
constexpr DD fabs(DD x) { return x.hi < 0 || (x.hi == 0 && x.lo < 0) ? -x : x; }
inline bool isinf(DD x) { return std::isinf(x.hi); }
// Both words: TwoSum's s - a can overflow beside DBL_MAX while the sum does
// not (x_i - x_k for x_k = DBL_MAX), leaving a finite high word over a NaN
// low one, which is no number.
inline bool isfinite(DD x) { return std::isfinite(x.hi) && std::isfinite(x.lo); }
inline bool signbit(DD x) { return std::signbit(x.hi); }
// x = f 2^e with |f| in [0.5, 1) up to lo (a power-of-two hi with a negative
// lo gives |f| a hair below 0.5; callers allow for that).
inline DD frexp(DD x, int* e) {
  const double h = std::frexp(x.hi, e);
  return {h, std::ldexp(x.lo, -*e)};
}

}  // namespace softcheck::oracle
#undef SOFTCHECK_DD_INLINE
