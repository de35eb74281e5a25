// The fast tiers' arithmetics (oracle/src/fast_rows.cpp, fast_compare.cpp):
// the same shifted algorithm as exact_row (Blanchard, Higham & Higham's final
// form, REFERENCE.md "Softmax algorithms"), evaluated in double, in x87
// extended precision or in double-double with a rigorous running error bound
// per element. The code is one template over the arithmetic R; Arith<R> holds
// what differs (unit roundoff, exponent range). This header holds the
// arithmetics and the error model every bound of the fast tiers is written in;
// fast_enclosures.hpp builds exp and log1p on it. Private to oracle/.
//
// Error model. With u the unit roundoff of R (2^-53 for double, 2^-64 for
// long double), for every basic operation rounded to nearest with a normal
// result, |fl(a op b) - (a op b)| <= u |fl(a op b)| (half an ulp of the
// result, and ulp(y) <= 2u|y|). Double-double operations are not correctly
// rounded; their proven bounds (double_double.hpp) are all below u = 2^-96,
// which the DD tier uses in the same model. TwoSum is exact in double and
// long double only: the DD tier forms x_i - x_k exactly from the two doubles
// and keeps no residual for log-softmax (its rounding goes into the radius). Every intermediate stays in R's normal range:
//   - long double (exponents -16382..16383): the row entries are doubles,
//     their differences are >= 2^-1074 or 0, quotients by a double
//     temperature stay above 2^-2100, and exp is only evaluated down to
//     e^-11000 ~ 2^-15870;
//   - double: a row where x_i - x_max overflows or (x_i - x_max)/T leaves
//     [2^-1000, DBL_MAX] is not `usable` (the extended tier takes it), and
//     exp is only evaluated down to e^-600 ~ 2^-865, so that softmax values
//     e_i/s (s <= n) stay normal;
//   - double-double: the same, with |d_i| in [2^-900, 2^900] (Dekker's
//     product needs operands below 2^996, and the low words stay normal).
// First-order bounds are accumulated as written below; every bound is then
// multiplied by kSafe = 1 + 2^-20, which covers the second-order terms (each
// relative error involved is checked to be below 2^-30, so a product of two is
// below 2^-30 times either) and the rounding of the bound's own evaluation
// (at most n + 20 roundings of positive terms, relative error < 2^-30 for
// n <= 2^23 in double, far more in long double; longer rows are not usable in
// the double tier). A row where a relative error exceeds 2^-30 is not `usable`.
//
// Everything here has internal linkage (an unnamed namespace in a private
// header): each including .cpp gets its own file-local copy, which GCC is
// free to inline and specialise at -O3 like any static function, and no
// symbol leaves the library.
#pragma once

#include <mpfr.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "double_double.hpp"
#include "softcheck/fast_oracle.hpp"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace softcheck::oracle {
namespace {

static_assert(LDBL_MANT_DIG == 64, "the extended tier's bounds assume x87 extended precision (64-bit significand)");

// 2^m as a double, m in [-1022, 1023].
[[gnu::always_inline]] inline double pow2d(int m) { return std::bit_cast<double>(static_cast<std::uint64_t>(m + 1023) << 52); }

// 2^m as a long double, m in [-16382, 16383], built from its x87 fields
// (explicit integer bit, biased exponent): scalbnl costs more than the exp.
long double pow2l(int m) {
  unsigned char bytes[sizeof(long double)] = {};
  const std::uint64_t mant = std::uint64_t{1} << 63;
  const auto expo = static_cast<std::uint16_t>(m + 16383);
  std::memcpy(bytes, &mant, 8);
  std::memcpy(bytes + 8, &expo, 2);
  long double out;
  std::memcpy(&out, bytes, sizeof out);
  return out;
}

// Whether R's arithmetic rounds to nearest with gradual underflow right now,
// as every bound here assumes. A kernel or plugin that ran before may have set
// SSE flush-to-zero / denormals-are-zero or a rounding mode, or the x87
// precision control to 53 bits; such a row is not `usable` and goes to MPFR
// (which does its own rounding).
template <class R>
bool arithmetic_as_assumed() {
#if defined(__x86_64__)
  if constexpr (!std::is_same_v<R, long double>) {
    constexpr unsigned kRoundingFtzDaz = 0xE040;  // MXCSR bits 13-14 (rounding), 15 (FTZ), 6 (DAZ)
    return (_mm_getcsr() & kRoundingFtzDaz) == 0;
  } else {
    unsigned short cw = 0;
    __asm__("fnstcw %0" : "=m"(cw));
    return (cw & 0x0F00) == 0x0300;  // precision control 64 bits, round to nearest
  }
#else
  static_assert(sizeof(R) == 0, "the fast tiers' environment check is written for x86-64");
#endif
}

// What differs between the tiers' arithmetics.
template <class R>
struct Arith;

template <>
struct Arith<long double> {
  static constexpr long double u = 0x1p-64L;
  // Below exp_floor, exp(d) < 2^-15868 is represented as 0 +- tiny_abs.
  static constexpr long double exp_floor = -11000, tiny_abs = 0x1p-15800L;
  // |d_i| must lie in [min_quotient, max] for the relative error model (always
  // true in long double, see the header comment).
  static constexpr long double min_quotient = 0x1p-16000L;
  static constexpr long double slack = 0x1p-16000L;  // absolute slack of the metric enclosures
  static constexpr int lowest_exp = -16000;          // smallest power of two used for a relative bound
  static constexpr int c1_bits = 40;                 // k*C1 exact for |k| < 2^24 (64-bit significand)
  static constexpr std::size_t max_n = std::size_t{1} << 40;
  // exp's Taylor polynomial: degree and truncation bound |r|^(N+1)/(N+1)! e^|r|
  // relative to e^r for |r| <= 0.011: 0.011^9/9! e^0.022 < 6.7e-24.
  static constexpr int exp_degree = 8;
  static constexpr long double exp_truncation = 6.7e-24L;
  static constexpr long double max_quotient = std::numeric_limits<long double>::max();
  static constexpr int digits = 64;
  // atanh series: terms and truncation for |t| <= 0.2 (see two_atanh_series)
  static constexpr int atanh_terms = 15;
  static constexpr long double atanh_truncation = 3.6e-23L;
  // Nearest integer of |x| < 2^62 (any tie rule: callers only need an
  // integer near x). Adding 1.5 * 2^63 leaves no fraction bits.
  static long double near_int(long double x) { return (x + 0x1.8p63L) - 0x1.8p63L; }
  static long double pow2(int m) { return pow2l(m); }
  static long double from_mpfr(mpfr_srcptr t) { return mpfr_get_ld(t, MPFR_RNDN); }
};

template <>
struct Arith<double> {
  static constexpr double u = 0x1p-53;
  // e^-600 ~ 2^-865.6: softmax values e_i/s, s <= n, stay normal.
  static constexpr double exp_floor = -600, tiny_abs = 0x1p-860;
  static constexpr double min_quotient = 0x1p-1000;  // d_i normal with room: the division's error is u|d_i|
  static constexpr double slack = 0x1p-1060;
  static constexpr int lowest_exp = -1000;
  static constexpr int c1_bits = 32;  // |k| <= 600*32/ln2 < 2^15: k*C1 fits 47 bits
  static constexpr std::size_t max_n = std::size_t{1} << 23;  // (n + 20) u < 2^-30
  // 0.011^7/7! e^0.022 < 4.0e-18 (~2^-57.8): below u, and two Horner steps
  // fewer than the extended tier's degree 8 (the polynomial is the hot loop).
  static constexpr int exp_degree = 6;
  static constexpr double exp_truncation = 4.0e-18;
  static constexpr double max_quotient = std::numeric_limits<double>::max();
  static constexpr int digits = 53;
  static constexpr int atanh_terms = 15;
  static constexpr double atanh_truncation = 3.6e-23;
  static double near_int(double x) { return (x + 0x1.8p52) - 0x1.8p52; }  // |x| < 2^51
  static double pow2(int m) { return pow2d(m); }
  static double from_mpfr(mpfr_srcptr t) { return mpfr_get_d(t, MPFR_RNDN); }
};

template <>
struct Arith<DD> {
  static constexpr DD u = kDoubleDoubleU;  // every DD operation (double_double.hpp)
  // e^-600 ~ 2^-865.6: softmax values stay above 2^-886 (n <= 2^20), so that
  // every bound term (u times a value) is a normal double.
  static constexpr double exp_floor = -600, tiny_abs = 0x1p-865;
  static constexpr double min_quotient = 0x1p-900, max_quotient = 0x1p900;
  // No absolute slack: every non-zero bound term is u times a value above
  // 2^-900 (a normal double), and a slack would keep an exact 0 (the
  // log-softmax of a one-entry row) from rounding to 0 in f64.
  static constexpr double slack = 0;
  static constexpr int lowest_exp = -1000;
  static constexpr int c1_bits = 32;  // |k| <= 600*32/ln2 < 2^15: k*C1 fits 47 bits
  static constexpr std::size_t max_n = std::size_t{1} << 20;
  // 0.011^12/12! e^0.022 < 6.7e-33 (~2^-106.6)
  static constexpr int exp_degree = 11;
  static constexpr double exp_truncation = 6.7e-33;
  static constexpr int digits = 106;
  // 23 terms: 0.04^23/0.96/47 < 1.6e-34
  static constexpr int atanh_terms = 23;
  static constexpr double atanh_truncation = 1.6e-34;
  static DD near_int(DD x) { return Arith<double>::near_int(x.hi); }  // any integer near x
  static DD pow2(int m) { return pow2d(m); }
  static DD from_mpfr(mpfr_srcptr t) {  // t has at most 106 bits: hi + lo is exact
    mpfr_t rest;
    mpfr_init2(rest, mpfr_get_prec(t));
    const double hi = mpfr_get_d(t, MPFR_RNDN);
    mpfr_sub_d(rest, t, hi, MPFR_RNDN);
    const double lo = mpfr_get_d(rest, MPFR_RNDN);
    mpfr_clear(rest);
    return {hi, lo};
  }
};

template <class R>
constexpr bool is_dd = std::is_same_v<R, DD>;

using std::fabs, std::frexp, std::isfinite, std::isinf, std::signbit;

template <class R>
constexpr R kSafe = 1 + R(0x1p-20);  // second-order terms and bound evaluation, see above
template <class R>
constexpr R kMaxRel = R(0x1p-30);  // larger relative errors: the row is not usable
template <class R>
constexpr R inf = R(std::numeric_limits<double>::infinity());

// gamma_m = m u / (1 - m u) (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., Lemma 3.1).
template <class R>
constexpr R gamma(R m) {
  constexpr R u = Arith<R>::u;
  return m * u / (1 - m * u);
}

// floor(log2 a) for a > 0, through the (fast) double conversion, corrected
// when rounding to double carried a into the next binade. Below 2^-1000 a
// double or long double gives -1001 (their callers clamp at emin >= -126
// first); a double-word (f64 results, emin = -1022) gets its exact binade.
template <class R>
[[gnu::always_inline]] inline int binade(R a) {
  const double d = static_cast<double>(a);
  if (d < 0x1p-1000) {
    if constexpr (is_dd<R>) {
      int e = std::ilogb(d);  // d > 0: a double-word's hi is non-zero
      if (a < R(std::ldexp(1.0, e))) --e;
      return e;
    } else {
      return -1001;
    }
  }
  int e = static_cast<int>((std::bit_cast<std::uint64_t>(d) >> 52) & 0x7ff) - 1023;
  if constexpr (!std::is_same_v<R, double>)
    if (a < static_cast<R>(pow2d(e))) --e;
  return e;
}

// Knuth's TwoSum: s = fl(a + b) and e with a + b = s + e exactly (round to
// nearest, s finite; Knuth, TAOCP vol. 2, 4.2.2, Theorem B). Its other
// operations cannot overflow when s does not (Boldo, Graillat & Muller, "On
// the robustness of the 2Sum and Fast2Sum algorithms", ACM TOMS 2017).
template <class R>
struct TwoSum {
  R s, e;
};
template <class R>
TwoSum<R> two_sum(R a, R b) {
  const R s = a + b;
  const R bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

}  // namespace
}  // namespace softcheck::oracle
