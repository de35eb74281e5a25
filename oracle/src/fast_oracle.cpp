// The oracle's fast tiers: the same shifted algorithm as exact_row
// (Blanchard, Higham & Higham's final form, REFERENCE.md "Softmax
// algorithms"), evaluated in double, in x87 extended precision or in
// double-double with a rigorous running error bound per element. The code is one template over the
// arithmetic R; Arith<R> holds what differs (unit roundoff, exponent range).
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
#include "softcheck/fast_oracle.hpp"

#include <mpfr.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "double_double.hpp"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

// 32-byte vectors (vec:: below) pass only between always-inlined helpers:
// GCC warns that their ABI differs without AVX; nothing here crosses an ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace softcheck::oracle {

namespace detail {
void prepare_mpfr_thread();  // oracle.cpp
// Which code the double tier and its f32 decision run (this thread): 0 the
// best vectors the CPU has, 1 baseline x86-64 vectors, 2 the scalar code
// alone, 3 AVX2 vectors at most. For the tests, which compare the paths bit
// for bit; not in any public header.
int& fast_tier_vectors() {
  thread_local int path = 0;
  return path;
}
}

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

// ---------------------------------------------------------------- exp

// Constants computed once with MPFR: 2^(j/32) rounded to nearest R (relative
// error <= u), C1 = ln2/32 rounded to Arith<R>::c1_bits bits (so k*C1 is
// exact for the k the tier meets), C2 = ln2/32 - C1 rounded to R, ln 2
// rounded.
template <class R>
struct ExpTables {
  std::array<R, 32> two_j32{};
  R c1 = 0, c2 = 0, ln2 = 0;
  ExpTables() {
    mpfr_t t, l, c;
    mpfr_init2(t, Arith<R>::digits);
    mpfr_init2(l, 256);
    mpfr_init2(c, Arith<R>::c1_bits);
    for (int j = 0; j < 32; ++j) {
      mpfr_set_si(t, j, MPFR_RNDN);
      mpfr_div_2ui(t, t, 5, MPFR_RNDN);  // j/32, exact
      mpfr_exp2(t, t, MPFR_RNDN);
      two_j32[static_cast<std::size_t>(j)] = Arith<R>::from_mpfr(t);  // exact: t has R's precision
    }
    mpfr_const_log2(l, MPFR_RNDN);
    mpfr_set(t, l, MPFR_RNDN);
    ln2 = Arith<R>::from_mpfr(t);
    mpfr_div_2ui(l, l, 5, MPFR_RNDN);  // ln2/32 at 256 bits
    mpfr_set(c, l, MPFR_RNDN);
    c1 = Arith<R>::from_mpfr(c);
    mpfr_sub(l, l, c, MPFR_RNDN);  // exact at 256 bits
    mpfr_set(t, l, MPFR_RNDN);
    c2 = Arith<R>::from_mpfr(t);
    mpfr_clears(t, l, c, static_cast<mpfr_ptr>(nullptr));
  }
};

template <class R>
const ExpTables<R>& tables() {
  static const ExpTables<R> t;
  return t;
}

// Taylor coefficients 1/j!, j = 0..degree, rounded to R (relative error <=
// u: one division by j!, exact in double up to 18!).
template <class R>
constexpr std::array<R, Arith<R>::exp_degree + 1> kExpCoeff = [] {
  std::array<R, Arith<R>::exp_degree + 1> c{};
  double factorial = 1;
  for (int j = 0; j <= Arith<R>::exp_degree; ++j) {
    factorial *= j > 0 ? j : 1;
    c[static_cast<std::size_t>(j)] = R(1) / R(factorial);
  }
  return c;
}();

// Relative error of the polynomial part for |r| <= 0.011: Horner's rule with
// degree N has |p^ - p| <= gamma_2N sum |a_j||r|^j (Higham, eq. (5.3)) and the
// rounded coefficients add u sum |a_j||r|^j; sum |a_j||r|^j <= e^|r| and
// p(r) >= e^-|r|, so relative (gamma_2N + u) e^0.022 <= 1.0223 (gamma_2N + u).
// Truncation (Lagrange): Arith<R>::exp_truncation.
template <class R>
constexpr R kExpPolyRel =
    R(1.0223) * (gamma<R>(2 * Arith<R>::exp_degree) + Arith<R>::u) + R(Arith<R>::exp_truncation);

template <class R>
struct Enclosed {
  R v;
  R rel;  // |v - exact| <= rel * |v|
};

// exp(t) for t in [exp_floor, 0], as exp(r) 2^(j/32) 2^m with
// t = (32 m + j) ln2/32 + r, |r| <= ln2/64 (1 + tiny) < 0.011.
template <class R>
Enclosed<R> exp_enclosure(R t) {
  constexpr R u = Arith<R>::u;
  const ExpTables<R>& tb = tables<R>();
  const R kf = Arith<R>::near_int(t * (32 / tb.ln2));  // any integer works; only |r| matters
  const auto k = static_cast<long>(kf);
  const long j = k & 31;        // k mod 32 in 0..31 (two's complement)
  const long m = (k - j) / 32;  // exact
  const R r1 = t - kf * tb.c1;  // kf*c1 exact (Arith<R>::c1_bits)
  const R kc2 = kf * tb.c2;
  const R r = r1 - kc2;
  // Three roundings (r1, kc2, r) and the truncation of ln2/32 to c1 + c2
  // (|ln2/32 - c1 - c2| <= u |c2|): an absolute error of the reduced argument,
  // i.e. a relative error e^er - 1 <= er (1 + er) of exp(r).
  const R er = u * (fabs(r1) + fabs(kc2) + fabs(r)) + fabs(kf) * u * fabs(tb.c2);
  if (fabs(r) + er > R(0.011)) return {0, inf<R>};  // cannot happen; keeps the bound honest
  const auto& a = kExpCoeff<R>;
  constexpr int N = Arith<R>::exp_degree;
  R p = a[N];
  for (int i = N - 1; i >= 0; --i) p = p * r + a[static_cast<std::size_t>(i)];
  const R v = tb.two_j32[static_cast<std::size_t>(j)] * p * Arith<R>::pow2(static_cast<int>(m));  // scaling exact
  // table entry u, product u, polynomial, argument.
  return {v, (2 * u + kExpPolyRel<R> + er * R(1.0001)) * kSafe<R>};
}

// ---------------------------------------------------------------- log1p

// 2 atanh(t) = log((1+t)/(1-t)) = 2t sum_{j>=0} t^2j / (2j+1) for |t| <= 0.2:
// w = t^2 <= 0.04, 15 terms leave w^15/(1-w)/31 < 3.6e-23 relative (the sum
// is >= 1). Horner on w with positive coefficients 1/(2j+1) (rounded: u):
// relative gamma_28 + u; w = t^2 carries 2 gamma_2 + u relative from t, which
// moves the sum by at most that times w S'(w)/S(w) <= 0.05.
// (The DD tier sums 23 terms: Arith<DD>::atanh_truncation.)
template <class R>
Enclosed<R> two_atanh_series(R t, R t_rel) {
  constexpr R u = Arith<R>::u;
  constexpr int kAtanhTerms = Arith<R>::atanh_terms;
  const R w = t * t;
  R s = R(1) / (2 * (kAtanhTerms - 1) + 1);
  for (int j = kAtanhTerms - 2; j >= 0; --j) s = s * w + R(1) / (2 * j + 1);
  const R v = 2 * t * s;
  // d/dt 2 atanh t = 2/(1 - t^2) <= 2.084 while |2 atanh t| >= 2|t|: a
  // relative error t_rel of t is a relative error <= 1.042 t_rel of the result.
  const R rel = R(1.042) * t_rel + R(0.05) * (2 * t_rel + u) + gamma<R>(2 * kAtanhTerms - 2) + u + u + R(Arith<R>::atanh_truncation);
  return {v, rel * kSafe<R>};
}

// log1p(a) for a >= 0 given exactly, with an absolute error bound.
template <class R>
struct LogEnclosed {
  R v, abs;
};

template <class R>
LogEnclosed<R> log1p_enclosure(R a) {
  constexpr R u = Arith<R>::u;
  if (a == 0) return {0, 0};
  if (a <= R(0.5)) {
    // t = a/(2+a) in [0, 0.2]: two roundings, relative gamma_2.
    const R t = a / (2 + a);
    const Enclosed<R> e = two_atanh_series(t, gamma<R>(2));
    return {e.v, e.rel * e.v};
  }
  // log(1+a) = m ln2 + log1p(g), 1+a = 2^m (1+g), g in [-0.25, 0.5): g = f - 1
  // is exact (Sterbenz), t = g/(2+g) in [-0.143, 0.2].
  const R s = 1 + a;  // relative error u: log moves by <= u (1 + u)
  int e = 0;
  R f = frexp(s, &e);  // [0.5, 1)
  if (f < R(0.75)) f *= 2, e -= 1;
  const R g = f - 1;
  const Enclosed<R> lf = g == 0 ? Enclosed<R>{0, 0} : two_atanh_series(g / (2 + g), gamma<R>(2));
  const R mln2 = static_cast<R>(e) * tables<R>().ln2;  // ln2 rounded (u) and the product (u)
  const R v = mln2 + lf.v;
  const R abs =
      (R(1.0001) * u + R(2.0001) * u * fabs(mln2) + lf.rel * fabs(lf.v) + u * fabs(v)) * kSafe<R>;
  return {v, abs};
}

// ---------------------------------------------------------------- 4 lanes
//
// The double tier's hot loops are also written on 4-lane GCC vectors of
// doubles (fast_row_in's max scan, exp pass and last pass below,
// compare_row_fast's f32 element rule): compiled for AVX-512 and AVX2, used
// where the CPU has them, and for baseline x86-64 (the same code split into
// SSE2 halves), chosen at run time. Each lane does exactly the scalar code's
// IEEE operations in the same order (the expressions are spelled the same,
// -ffp-contract=off, no FMA is enabled; the integer steps are exact), so the
// vectors give the scalar code's bits and need no error analysis of their
// own: the bounds are those written at the scalar code. Whatever the vectors
// do not take (a row's tail, rare cases) goes through the scalar code, and
// every sum whose rounding depends on the order stays in index order.
// detail::fast_tier_vectors() selects the path (the tests compare them bit
// for bit).
namespace vec {

#define SOFTCHECK_VINLINE inline __attribute__((always_inline))
constexpr std::size_t L = 4;
using vd = double __attribute__((vector_size(32)));
using vl = std::int64_t __attribute__((vector_size(32)));
using vu = std::uint64_t __attribute__((vector_size(32)));
using vf = float __attribute__((vector_size(16)));
using vi = std::int32_t __attribute__((vector_size(16)));

SOFTCHECK_VINLINE vd splat(double x) { return vd{x, x, x, x}; }
SOFTCHECK_VINLINE vd load(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SOFTCHECK_VINLINE void store(double* p, vd v) { std::memcpy(p, &v, sizeof v); }
SOFTCHECK_VINLINE vd vabs(vd x) { return reinterpret_cast<vd>(reinterpret_cast<vu>(x) & 0x7fffffffffffffffULL); }
// std::max(a, b) and std::min(a, b) lane by lane, the same selections.
SOFTCHECK_VINLINE vd vmax(vd a, vd b) { return a < b ? b : a; }
SOFTCHECK_VINLINE vd vmin(vd a, vd b) { return b < a ? b : a; }
// pow2d lane by lane (m + 1023 in [1, 2046]).
SOFTCHECK_VINLINE vd pow2v(vl m) { return reinterpret_cast<vd>(reinterpret_cast<vu>(m + 1023) << 52); }
SOFTCHECK_VINLINE vd gap_up(vd x) { return reinterpret_cast<vd>(reinterpret_cast<vl>(x) + 1) - x; }
SOFTCHECK_VINLINE vl widen(vi m) { return __builtin_convertvector(m, vl); }
SOFTCHECK_VINLINE bool any_lane(vl m) { return (m[0] | m[1] | m[2] | m[3]) != 0; }
SOFTCHECK_VINLINE bool all_lanes(vl m) { return (m[0] & m[1] & m[2] & m[3]) != 0; }
// ulp_exp for a > 0 and a format with emin > -1001: binade's -1001 below
// 2^-1000 and the exponent field there both clamp to emin.
SOFTCHECK_VINLINE vl ulp_exp(vd a, const FormatInfo& fi) {
  vl e = reinterpret_cast<vl>((reinterpret_cast<vu>(a) >> 52) & 0x7ff) - 1023;
  e = e < fi.emin ? vl{} + fi.emin : e;
  e = e > fi.emax ? vl{} + fi.emax : e;
  return e - (fi.precision - 1);
}
// f32_ordinal lane by lane; `xf` is x converted to float.
SOFTCHECK_VINLINE vd f32_ordinal(vd x, vf xf) {
  const vd m = __builtin_convertvector(reinterpret_cast<vi>(xf) & 0x7fffffff, vd);
  return reinterpret_cast<vl>(x) < 0 ? -m : m;
}

// The instruction set of the vectors: 0 baseline x86-64, 1 AVX2, 2 AVX-512
// (F, DQ, VL, BW), the best the CPU has unless a test asked for another.
#define SOFTCHECK_AVX512 "avx512f,avx512dq,avx512vl,avx512bw"
inline int isa() {
  static const int best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
      return 2;
    return __builtin_cpu_supports("avx2") ? 1 : 0;
  }();
  switch (detail::fast_tier_vectors()) {
    case 1: return 0;
    case 3: return std::min(best, 1);
    default: return best;
  }
}
// fn_isa(args): fn_baseline, fn_avx2 or fn_avx512, all three the same code.
#define SOFTCHECK_DISPATCH(ret, fn, params, args)                              \
  __attribute__((target(SOFTCHECK_AVX512))) ret fn##_avx512 params { return fn##_body args; } \
  __attribute__((target("avx2"))) ret fn##_avx2 params { return fn##_body args; } \
  ret fn##_baseline params { return fn##_body args; }                        \
  ret fn params {                                                             \
    switch (isa()) {                                                          \
      case 2: return fn##_avx512 args;                                        \
      case 1: return fn##_avx2 args;                                          \
      default: return fn##_baseline args;                                     \
    }                                                                         \
  }

// fast_row_in's scan on [0, n4), n4 = n rounded down to 4 lanes (0 for n <
// 4): whether an entry is NaN or +inf, and the first maximum k (x_k > x_j
// for j < k, x_k >= x_j for j > k; ties as equal values, +0 = -0). Each lane
// keeps the first maximum of its entries; of the lanes' maxima the largest
// wins, the smallest index among equal ones: the sequential loop's k (which
// continues from it on the tail). With a NaN, k does not matter.
SOFTCHECK_VINLINE std::size_t scan_body(const double* x, std::size_t n, bool& special, std::size_t& k) {
  const std::size_t n4 = n - n % L;
  if (n4 == 0) return 0;
  const vd inf_ = splat(inf<double>);
  vd best = load(x);
  vl best_i{0, 1, 2, 3}, idx = best_i, spec = ~(best < inf_);
  for (std::size_t i = L; i < n4; i += L) {
    idx += static_cast<std::int64_t>(L);
    const vd xi = load(x + i);
    spec |= ~(xi < inf_);
    const vl up = xi > best;
    best = up ? xi : best;
    best_i = up ? idx : best_i;
  }
  special = any_lane(spec);
  double bv = best[0];
  k = static_cast<std::size_t>(best_i[0]);
  for (std::size_t l = 1; l < L; ++l) {
    const auto li = static_cast<std::size_t>(best_i[l]);
    if (best[l] > bv || (best[l] == bv && li < k)) bv = best[l], k = li;
  }
  return n4;
}

// fast_row_in's first loop for the double tier, on [0, n4), n4 = n rounded
// down to 4 lanes: d_i, its error, e_i, its error and the zero state per
// element, exactly as the scalar loop body (which still does the sums, in
// index order, and the tail). The maximum k and the -inf entries take the
// scalar body's exact values by selection; below the exp floor, and for
// those, exp's argument is replaced by 0 so that no lane computes on huge
// values. `bad`: some lane is outside the tier's domain (the row is not
// usable), where the scalar body would have returned.
struct ExpIn {
  const double* x;
  std::size_t n4, k;
  double xk, T, zero_edge_hi, zero_edge_lo;  // 0.97 and 1.03 times the MPFR zero edge
  double *d, *d_err, *e, *e_err;
  ZeroState* zero;
};

SOFTCHECK_VINLINE bool exp_pass_body(const ExpIn& in) {
  using A = Arith<double>;
  constexpr double u = A::u;
  const ExpTables<double>& tb = tables<double>();
  const auto& a = kExpCoeff<double>;
  constexpr int N = A::exp_degree;
  const bool T1 = in.T == 1;
  const vd zero{}, one = splat(1), vu_ = splat(u), xk = splat(in.xk), neg_xk = splat(-in.xk), T = splat(in.T),
           kS = splat(kSafe<double>), inf_ = splat(inf<double>), ninf = splat(-inf<double>),
           min_q = splat(A::min_quotient), max_q = splat(A::max_quotient), edge_hi = splat(in.zero_edge_hi),
           edge_lo = splat(in.zero_edge_lo), floor_ = splat(A::exp_floor), tiny = splat(A::tiny_abs),
           max_rel = splat(kMaxRel<double>), c32 = splat(32 / tb.ln2), magic = splat(0x1.8p52), c1 = splat(tb.c1),
           c2 = splat(tb.c2), abs_c2 = splat(fabs(tb.c2)), r_max = splat(0.011),
           rel0 = splat(2 * u + kExpPolyRel<double>), k1 = splat(1.0001);
  const auto k = static_cast<std::int64_t>(in.k);
  constexpr std::int64_t kPos = static_cast<std::int64_t>(ZeroState::positive),
                         kZero = static_cast<std::int64_t>(ZeroState::zero),
                         kUnknown = static_cast<std::int64_t>(ZeroState::unknown);
  vl bad{}, idx{0, 1, 2, 3};
  for (std::size_t i = 0; i < in.n4; i += L, idx += static_cast<std::int64_t>(L)) {
    const vd xi = load(in.x + i);
    const vl at_k = idx == k, minus_inf = xi == ninf, masked = at_k | minus_inf;
    // two_sum(x_i, -x_k); the masked lanes get x_k - x_k = 0
    const vd xa = masked ? xk : xi;
    const vd s = xa + neg_xk;
    const vd bb = s - xa;
    const vd se = (xa - (s - bb)) + (neg_xk - bb);
    bad |= ~(vabs(s) < inf_);  // !isfinite(diff.s)
    const vd di = T1 ? s : s / T;
    bad |= (s != 0) & ~((vabs(di) >= min_q) & (vabs(di) <= max_q));
    const vd ed = ((se == 0 ? zero : vu_) + (T1 ? zero : vu_)) * vabs(di) * kS;
    const vl zs = di > edge_hi ? vl{} + kPos : di < edge_lo ? vl{} + kZero : vl{} + kUnknown;
    const vl below = di < floor_;
    const vl use_exp = ~masked & ~below;
    bad |= use_exp & (ed > max_rel);
    // exp_enclosure(t)
    const vd t = use_exp ? di : zero;
    const vd y = t * c32 + magic;
    const vd kf = y - magic;                                           // near_int: an integer, |kf| < 2^15
    const vu kb = reinterpret_cast<vu>(y) - reinterpret_cast<vu>(magic);  // its value: y = 1.5 2^52 + kf exactly
    const vu j = kb & 31;
    const vd two_j{tb.two_j32[j[0]], tb.two_j32[j[1]], tb.two_j32[j[2]], tb.two_j32[j[3]]};
    // 2^m, m = (k - j)/32: (k - j) 2^47 = m 2^52 (mod 2^64), plus the bias
    const vd scale = reinterpret_cast<vd>(((kb - j) << 47) + (std::uint64_t{1023} << 52));
    const vd r1 = t - kf * c1;
    const vd kc2 = kf * c2;
    const vd r = r1 - kc2;
    const vd er = vu_ * (vabs(r1) + vabs(kc2) + vabs(r)) + vabs(kf) * vu_ * abs_c2;
    bad |= use_exp & (vabs(r) + er > r_max);  // exp_enclosure's {0, inf}
    vd p = splat(a[N]);
    for (int m = N - 1; m >= 0; --m) p = p * r + splat(a[static_cast<std::size_t>(m)]);
    const vd ev = two_j * p * scale;
    const vd rel = (rel0 + er * k1) * kS;
    bad |= use_exp & ~(rel <= max_rel);
    const vd ee = (rel + ed * k1) * kS * ev;
    store(in.d + i, at_k ? zero : minus_inf ? ninf : di);
    store(in.d_err + i, masked ? zero : ed);
    store(in.e + i, at_k ? one : masked ? zero : below ? zero : ev);
    store(in.e_err + i, masked ? zero : below ? tiny : ee);
    const vl z = at_k ? vl{} + kPos : minus_inf ? vl{} + kZero : zs;
    for (std::size_t l = 0; l < L; ++l) in.zero[i + l] = static_cast<ZeroState>(z[l]);
  }
  std::int64_t any = 0;
  for (std::size_t l = 0; l < L; ++l) any |= bad[l];
  return any == 0;
}

// fast_row_in's last loop for the double tier on [0, n4) (the scalar body
// does the tail): softmax = e q with its bound, log-softmax = d - log1p(r)
// by TwoSum with its bounds; -inf (masked) entries by selection.
struct FinalIn {
  std::size_t n4;
  double q, K, Lv, L_err;
  bool s_exact;
  ZeroState log_at_max;
  double *softmax, *softmax_err, *log_softmax, *log_softmax_err, *res, *tight;  // log_softmax(_err) hold d (and its error) on entry
  ZeroState* log_zero;
};

SOFTCHECK_VINLINE void final_pass_body(const FinalIn& in) {
  constexpr double u = Arith<double>::u;
  const vd zero{}, two_u = splat(2 * u), q = splat(in.q), K = splat(in.K), neg_L = splat(-in.Lv),
           L_err = splat(in.L_err), kS = splat(kSafe<double>), inf_ = splat(inf<double>), ninf = splat(-inf<double>);
  const auto at_max = static_cast<std::int64_t>(in.log_at_max), pos = static_cast<std::int64_t>(ZeroState::positive);
  for (std::size_t i = 0; i < in.n4; i += L) {
    const vd di = load(in.log_softmax + i), edi = load(in.log_softmax_err + i);
    const vd e = load(in.softmax + i), ee = load(in.softmax_err + i);
    const vl masked = vabs(di) == inf_;
    const vd y = e * q;
    const vd ey = in.s_exact ? ee : (two_u * y + ee * q + (e + ee) * K) * kS;
    store(in.softmax + i, masked ? e : y);
    store(in.softmax_err + i, masked ? ee : ey);
    const vl lz = masked ? vl{} + pos : di == 0 ? vl{} + at_max : vl{} + pos;
    for (std::size_t l = 0; l < L; ++l) in.log_zero[i + l] = static_cast<ZeroState>(lz[l]);
    // two_sum(d_i, -L)
    const vd z = di + neg_L;
    const vd bb = z - di;
    const vd zr = (di - (z - bb)) + (neg_L - bb);
    const vd tight = (edi + L_err + zero) * kS;
    store(in.log_softmax + i, masked ? ninf : z);
    store(in.res + i, masked ? zero : zr);
    store(in.tight + i, masked ? zero : tight);
    store(in.log_softmax_err + i, masked ? zero : (vabs(zr) + tight) * kS);
  }
}

SOFTCHECK_DISPATCH(std::size_t, scan, (const double* x, std::size_t n, bool& special, std::size_t& k),
                   (x, n, special, k))
SOFTCHECK_DISPATCH(bool, exp_pass, (const ExpIn& in), (in))
SOFTCHECK_DISPATCH(void, final_pass, (const FinalIn& in), (in))

}  // namespace vec

template <class R>
void not_usable(BasicFastRow<R>& row, RowStatus status) {
  row.status = status;
  row.usable = false;
}

// d_i = (x_i - x_k)/T      two roundings: |d^ - d| <= 2u|d^| (kSafe)
// e_i = exp(d_i)           exp_enclosure, plus the argument error: e^(Ed) - 1
// r = sum_{i != k} e_i     Sum2 (cascaded TwoSum; Ogita, Rump & Oishi, "Accurate
//                          sum and dot product", SIAM J. Sci. Comput. 26(6), 2005,
//                          Prop. 4.5): |r^ - sum e^_i| <= u |r| + gamma_{n-1}^2 sum e^_i
//                          (the e^_i are positive), plus sum |e^_i - e_i|. Plain
//                          recursive summation's (n/2) u would leave a 65536-entry
//                          f32 row with elements undecided in the double tier.
// s = 1 + r                one more rounding
// softmax_i = e_i / s      (e^/s^ - e/s) = (e^ - e)/s^ + (e/s)(s - s^)/s^, plus u
// log1p(r)                 log1p_enclosure, plus |r^ - r| / (1 + r^ - |r^ - r|)
// log_softmax_i = d_i - log1p(r), plus u
template <class R>
void fast_row_in(std::span<const double> x, double temperature, BasicFastRow<R>& row) {
  using A = Arith<R>;
  constexpr R u = A::u;
  constexpr R kS = kSafe<R>;
  if (!isfinite(temperature) || !(temperature > 0))
    throw std::invalid_argument("fast_row: temperature must be finite and > 0");
  if (x.empty()) throw std::invalid_argument("fast_row: empty row");
  row.status = RowStatus::ok;
  row.usable = true;
  // One pass: NaN / +inf (undefined), the first maximum k (as
  // std::max_element), and whether any entry is finite (-inf only: masked).
  const std::size_t n = x.size();
  bool special = false;
  std::size_t k = 0, i0 = 0;
  if (detail::fast_tier_vectors() != 2) i0 = vec::scan(x.data(), n, special, k);  // [0, i0) by 4 lanes
  for (std::size_t i = i0; i < n; ++i) {
    special |= !(x[i] < std::numeric_limits<double>::infinity());  // NaN or +inf, without branches
    k = x[i] > x[k] ? i : k;
  }
  if (special) return not_usable(row, RowStatus::undefined);
  if (x[k] == -std::numeric_limits<double>::infinity()) {
    row.status = RowStatus::all_masked;
    return;
  }
  if (n > A::max_n || !arithmetic_as_assumed<R>()) return not_usable(row, RowStatus::ok);
  const R xk = x[k], T = temperature;

  // MPFR's exponent range ends at 2^emin_min; exp(d) is 0 there below about
  // (emin_min - 2) ln2 ~ -3.2e18. 3% either side decides it whatever n.
  const R mpfr_zero_edge = R(static_cast<double>(mpfr_get_emin_min())) * R(0.6931471805599453);

  row.softmax.resize(n);
  row.softmax_err.resize(n);
  row.log_softmax.resize(n);
  row.log_softmax_err.resize(n);
  row.log_softmax_res.resize(n);
  row.log_softmax_tight.resize(n);
  row.softmax_zero.resize(n);
  row.log_softmax_zero.resize(n);  // every element is written below
  // d_i and its error live in log_softmax and log_softmax_err until the last loop.
  std::vector<R>& d = row.log_softmax;
  std::vector<R>& dErr = row.log_softmax_err;

  R sum = 0, sum_comp = 0, sum_err_terms = 0;
  bool r_zero = true, r_unknown = false;  // no entry known non-zero in MPFR / one undecided
  // Element i's share of the sums (i != k, x_i > -inf), in index order.
  const auto add = [&](std::size_t i) {
    if (row.softmax_zero[i] == ZeroState::positive) r_zero = false;
    if (row.softmax_zero[i] == ZeroState::unknown) r_unknown = true;
    const R e = row.softmax[i], ee = row.softmax_err[i];
    if constexpr (is_dd<R>) {
      // Recursive summation, Higham's running bound (ASNA section 4.2):
      // |r^ - sum e^_i| <= u sum_j |s^_j| (u = 2^-96: n u is tiny here).
      sum += e;
      sum_comp += sum;  // the partial sums
    } else {
      const TwoSum<R> acc = two_sum(sum, e);
      sum = acc.s;
      sum_comp += acc.e;
    }
    sum_err_terms += ee;
  };
  // Element i (false: outside the tier's domain, the row is not usable).
  const auto first = [&](std::size_t i) -> bool {
    if (i == k) {
      d[i] = 0, dErr[i] = 0;
      row.softmax[i] = 1, row.softmax_err[i] = 0, row.softmax_zero[i] = ZeroState::positive;
      return true;
    }
    if (isinf(x[i])) {  // -inf: masked, exact
      d[i] = -inf<R>, dErr[i] = 0;
      row.softmax[i] = 0, row.softmax_err[i] = 0, row.softmax_zero[i] = ZeroState::zero;
      return true;
    }
    // x_i - x_k is often exact (TwoSum says when), and the division is exact
    // for T = 1: an exact d_i carries no error. In double the difference can
    // overflow, or the quotient leave the normal range: the extended tier's.
    TwoSum<R> diff;
    if constexpr (is_dd<R>)
      diff = {exact_sum(x[i], -x[k]), R(0)};  // exact: a double-word holds it
    else
      diff = two_sum(static_cast<R>(x[i]), -xk);
    if (!isfinite(diff.s)) return false;
    const R di = T == 1 ? diff.s : diff.s / T;
    if (diff.s != 0 && !(fabs(di) >= A::min_quotient && fabs(di) <= A::max_quotient)) return false;
    const R ed = ((diff.e == 0 ? R(0) : u) + (T == 1 ? R(0) : u)) * fabs(di) * kS;
    d[i] = di, dErr[i] = ed;
    row.softmax_zero[i] = di > R(0.97) * mpfr_zero_edge   ? ZeroState::positive
                          : di < R(1.03) * mpfr_zero_edge ? ZeroState::zero
                                                          : ZeroState::unknown;
    R e, ee;
    if (di < A::exp_floor) {
      e = 0, ee = A::tiny_abs;
    } else {
      if (ed > kMaxRel<R>) return false;
      const Enclosed<R> ex = exp_enclosure(di);
      if (!(ex.rel <= kMaxRel<R>)) return false;
      e = ex.v;
      ee = (ex.rel + ed * R(1.0001)) * kS * ex.v;  // (1+rel) e^ed - 1, relative to e^ (see header)
    }
    row.softmax[i] = e, row.softmax_err[i] = ee;
    add(i);
    return true;
  };
  // The double tier: [0, n0) by the vectors (vec::exp_pass), their sums in
  // index order, then the tail by the scalar body.
  std::size_t n0 = 0;
  if constexpr (std::is_same_v<R, double>) {
    if (detail::fast_tier_vectors() != 2) {
      n0 = n - n % vec::L;
      if (!vec::exp_pass({x.data(), n0, k, xk, T, R(0.97) * mpfr_zero_edge, R(1.03) * mpfr_zero_edge, d.data(),
                          dErr.data(), row.softmax.data(), row.softmax_err.data(), row.softmax_zero.data()}))
        return not_usable(row, RowStatus::ok);
      for (std::size_t i = 0; i < n0; ++i)
        if (i != k && !isinf(x[i])) add(i);
    }
  }
  for (std::size_t i = n0; i < n; ++i)
    if (!first(i)) return not_usable(row, RowStatus::ok);
  R r_err;
  if constexpr (is_dd<R>) {
    r_err = (sum_err_terms + u * sum_comp) * kS;
  } else {
    sum += sum_comp;
    const R g = gamma<R>(R(static_cast<double>(n)));  // n <= max_n: n u < 2^-30
    r_err = (sum_err_terms + (u + g * g) * sum) * kS;
  }
  if (r_err > kMaxRel<R> * (1 + sum)) return not_usable(row, RowStatus::ok);
  const R s = 1 + sum;
  // Every other entry masked (or n = 1): r = 0 exactly, s = 1, and each
  // softmax value is e_i itself, with no error of the division (the maximum's
  // exactly 1, as exact_row has it).
  const bool s_exact = sum == 0 && r_err == 0;
  const R s_err = s_exact ? R(0) : (r_err + u * s) * kS;
  const LogEnclosed<R> L = log1p_enclosure(sum);
  const R L_err = (L.abs + r_err / (1 + sum - r_err)) * kS;

  // log_softmax_i = d_i - log1p(r) is exactly 0 in MPFR only where d_i = 0
  // (x_i = x_k) and MPFR's r is 0 (every other entry masked or below the edge).
  const ZeroState log_at_max = !r_zero ? ZeroState::positive : r_unknown ? ZeroState::unknown : ZeroState::zero;
  // One reciprocal instead of a division per element: y^ = fl(e^ fl(1/s^))
  // has relative error <= 2u (+u^2) against e^/s^; ee/s^ <= ee q (1 + 2u);
  // (e/s) |s - s^|/s^ <= (e^ + ee) K, K = s_err / ((s^ - s_err) s^).
  const R q = 1 / s;
  const R K = s_err / ((s - s_err) * s) * (1 + 8 * u);
  if constexpr (std::is_same_v<R, double>)
    if (n0 > 0)
      vec::final_pass({n0, q, K, L.v, L_err, s_exact, log_at_max, row.softmax.data(), row.softmax_err.data(),
                       row.log_softmax.data(), row.log_softmax_err.data(), row.log_softmax_res.data(),
                       row.log_softmax_tight.data(), row.log_softmax_zero.data()});
  for (std::size_t i = n0; i < n; ++i) {
    const R di = d[i], edi = dErr[i];
    // softmax
    const R e = row.softmax[i], ee = row.softmax_err[i];
    if (isinf(di)) {
      row.log_softmax[i] = -inf<R>, row.log_softmax_err[i] = 0;
      row.log_softmax_res[i] = 0, row.log_softmax_tight[i] = 0, row.log_softmax_zero[i] = ZeroState::positive;
      continue;  // softmax stays exactly 0
    }
    const R y = e * q;
    const R ey = s_exact ? ee : (2 * u * y + ee * q + (e + ee) * K) * kS;
    row.softmax[i] = y, row.softmax_err[i] = ey;
    // log-softmax
    row.log_softmax_zero[i] = di == 0 ? log_at_max : ZeroState::positive;
    TwoSum<R> z2;  // z + res = d^ - L^ exactly (DD: res = 0 and the rounding in the radius)
    if constexpr (is_dd<R>)
      z2 = {di - L.v, R(0)};
    else
      z2 = two_sum(di, -L.v);
    const R z = z2.s;
    const R tight = (edi + L_err + (is_dd<R> ? u * fabs(z) : R(0))) * kS;
    row.log_softmax[i] = z, row.log_softmax_res[i] = z2.e, row.log_softmax_tight[i] = tight;
    row.log_softmax_err[i] = (fabs(z2.e) + tight) * kS;
  }
}

}  // namespace

FastRow fast_row(std::span<const double> x, double temperature) {
  FastRow row;
  fast_row_in(x, temperature, row);
  return row;
}
DoubleFastRow double_fast_row(std::span<const double> x, double temperature) {
  DoubleFastRow row;
  fast_row_in(x, temperature, row);
  return row;
}
void fast_row(std::span<const double> x, double temperature, FastRow& out) { fast_row_in(x, temperature, out); }
void double_fast_row(std::span<const double> x, double temperature, DoubleFastRow& out) {
  fast_row_in(x, temperature, out);
}
DDFastRow dd_fast_row(std::span<const double> x, double temperature) {
  DDFastRow row;
  fast_row_in(x, temperature, row);
  return row;
}
void dd_fast_row(std::span<const double> x, double temperature, DDFastRow& out) { fast_row_in(x, temperature, out); }

// ---------------------------------------------------------------- metrics

namespace {

// Correct rounding of an R to format f (ties to even), as round_to_format in
// format.hpp: power-of-two scalings and nearbyint are exact in R (v is normal
// or zero), so this is one rounding from v. Monotone in v.
template <class R>
R round_ld(R v, Format f) {
  if constexpr (is_dd<R>) {
    return R(static_cast<double>(v));  // f64: hi + lo rounded to nearest
  } else {
    if (!isfinite(v) || v == 0) return v;
    const FormatInfo fi = info(f);
    const int e = std::max(std::ilogb(v), fi.emin);
    const R quantum = std::ldexp(R(1), e - fi.precision + 1);
    const R r = std::nearbyint(v / quantum) * quantum;
    if (fabs(r) > max_finite(f)) return std::copysign(inf<R>, v);
    return r;
  }
}

// ulp exponent q (ulp_T(v) = 2^q) of a magnitude, clamped as oracle::ulp
// does; 0 gives the subnormal quantum.
template <class R>
[[gnu::always_inline]] inline int ulp_exp(R a, const FormatInfo& fi) {
  if (a == 0) return fi.emin - fi.precision + 1;
  return std::clamp(binade(a), fi.emin, fi.emax) - fi.precision + 1;
}

// t + tau + res - rad > 0, decided despite the rounding of the test itself:
// rest = (tau + res) - rad is off by <= 2u(|tau| + |res| + rad), t + rest by
// <= u|t + rest| more (first order; the factor 2 covers the rest).
template <class R>
bool certainly_positive(R t, R tau, R res, R rad) {
  constexpr R u = Arith<R>::u;
  const R rest = (tau + res) - rad;
  const R sum = t + rest;
  return sum > 2 * u * (fabs(tau) + fabs(res) + rad) + 2 * u * fabs(sum);
}

// round_T(c) for f32/f16/bf16 when it is the same for every c within rad of
// v + res; nullopt when that ball may touch the edge of a rounding cell or
// overflow. The candidate comes from the double nearest v (fast; possibly
// off), then is checked: the values that round to A = |candidate| are
// (A - below, A + above), above = Q/2 and below = Q/2, or Q/4 where A is a
// normal power of two (the binade below has half the quantum). The edges'
// distances to |v| are formed with TwoSum, so that a v exactly on a midpoint
// is decided by the sign of res. Strict inequalities leave ties out.
template <class R>
std::optional<double> decided_rounding(R v, R res, R rad, const FormatInfo& fi, double maxf) {
  const double a = fabs(static_cast<double>(v));
  const int e = a == 0 ? fi.emin : std::max(a < 0x1p-1000 ? -1001 : binade(a), fi.emin);
  const double Q = pow2d(e - fi.precision + 1);
  // |center| = |v| + sr, sr = res with the sign of v (|res| < |v| when v != 0).
  const bool neg = v != 0 ? signbit(v) : signbit(res);
  const R av = fabs(v), sr = neg ? -res : res;
  // a/Q < 2^26: the integer rounding is exact, ties to even. A v exactly on a
  // midpoint (log-softmax: an f32 difference of 25 bits minus a tiny log1p)
  // takes the neighbour on sr's side instead: the one the checks below can
  // confirm (ties to even would be refused whenever sr points the other way).
  const double t = a / Q;
  double A = ((t + 0x1.8p52) - 0x1.8p52) * Q;
  if (t - std::floor(t) == 0.5 && sr != 0) A = (sr < 0 ? std::floor(t) : std::ceil(t)) * Q;
  if (A > maxf) return std::nullopt;
  const int eA = A == 0 ? fi.emin : std::max(binade(A), fi.emin);
  const R QA = pow2d(eA - fi.precision + 1);
  const bool pow2 = A != 0 && A == pow2d(binade(A)) && binade(A) > fi.emin;
  const TwoSum<R> up = two_sum(static_cast<R>(A) + QA / 2, -av);  // A + above - |v|
  if (!certainly_positive(up.s, up.e, -sr, rad)) return std::nullopt;
  if (A != 0) {
    const TwoSum<R> down = two_sum(av, -(static_cast<R>(A) - (pow2 ? QA / 4 : QA / 2)));  // |v| - (A - below)
    if (!certainly_positive(down.s, down.e, sr, rad)) return std::nullopt;
  }
  return neg ? -A : A;
}

// round_T(c) for f32 when it is the same for every c within rad of v + res,
// through the hardware's conversion to float (correctly rounded, ties to
// even, subnormals included: the caller checked the floating-point
// environment): lo = fl(v - w) and hi = fl(v + w) enclose the ball once w
// covers |res| + rad and the two roundings (u|v| + u w each), and round_T is
// monotone, so round_T(lo) = round_T(hi) decides it. A v a hair off a
// midpoint (res tiny) is left undecided here; the extended tier's
// decided_rounding weighs res exactly.
[[gnu::always_inline]] inline std::optional<double> decided_rounding_f32(double v, double res, double rad) {
  constexpr double u = 0x1p-53;
  const double w = (fabs(res) + rad + 2 * u * fabs(v)) * (1 + 16 * u) + 0x1p-1070;
  const float lo = static_cast<float>(v - w), hi = static_cast<float>(v + w);
  if (lo != hi || isinf(lo)) return std::nullopt;
  return lo;
}

// Herbie's ordinal of an f32 value (fast_ordinal's, given as a double): the
// magnitude's bit pattern counts the values of f32 below it, subnormals and
// infinity included.
[[gnu::always_inline]] inline double f32_ordinal(double x) {
  const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(x)) & 0x7fffffffU;
  return signbit(x) ? -static_cast<double>(bits) : static_cast<double>(bits);
}

// log2(1 + dist), the bits of error compare_element reports for a result
// dist values of the format away from the correctly rounded one: the same
// std::log2 call, tabulated for the small distances good kernels produce.
using DistanceBits = std::array<double, 4096>;
const DistanceBits& distance_bits() {
  static const DistanceBits table = [] {
    DistanceBits t{};
    for (std::size_t d = 0; d < t.size(); ++d) t[d] = d == 0 ? 0 : d == 1 ? 1 : std::log2(1.0 + static_cast<double>(d));
    return t;
  }();
  return table;
}
[[gnu::always_inline]] inline double bits_of_distance(double dist, const DistanceBits& table) {
  return dist < static_cast<double>(table.size()) ? table[static_cast<std::size_t>(dist)] : std::log2(1.0 + dist);
}
double bits_of_distance(double dist) { return bits_of_distance(dist, distance_bits()); }

// round_f64(c) for every c within rad of v (double-double), or nullopt: the
// ends lo = v - W and hi = v + W enclose the ball once W covers rad and the
// two DD roundings (u (|v| + W) each; the factor 1 + 2^-50 and 2u|v| cover
// them), and hi + lo rounded to nearest is round_f64 of a double-word.
std::optional<double> decided_rounding_f64(DD v, DD rad) {
  const DD w = rad * DD(1 + 0x1p-50) + DD(2 * kDoubleDoubleU) * fabs(v);
  const double lo = static_cast<double>(v - w), hi = static_cast<double>(v + w);
  if (lo != hi || std::isinf(lo)) return std::nullopt;
  return lo;
}

// Herbie's ordinal distance of two f64 values: their magnitudes' bit
// patterns count the doubles below them; as unsigned, since ordinals of
// opposite signs are up to 2^64 apart (metrics.cpp's ordinal_distance).
double f64_ordinal_distance(double a, double b) {
  const auto ordinal = [](double x) {
    const auto m = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(x) & 0x7fffffffffffffffULL);
    return std::signbit(x) ? -m : m;
  };
  const std::int64_t oa = ordinal(a), ob = ordinal(b);
  const auto ua = static_cast<std::uint64_t>(oa), ub = static_cast<std::uint64_t>(ob);
  return static_cast<double>(oa >= ob ? ua - ub : ub - ua);
}

// x 2^k, exactly (no overflow or underflow), for the k of ulp scalings:
// f64's reach 2^1074, beyond one double power of two.
template <class R>
[[gnu::always_inline]] inline R times_pow2(R x, int k) {
  if (k <= 1023) return x * R(pow2d(k));
  return x * R(pow2d(k - 600)) * R(pow2d(600));
}

// The gap from x >= 0 (finite) to the next double up.
[[gnu::always_inline]] inline double gap_up(double x) { return std::bit_cast<double>(std::bit_cast<std::uint64_t>(x) + 1) - x; }

// Herbie's ordinal of a value of f32/f16/bf16 (exact in a double), as
// softcheck::ordinal, without its library calls; throws like it for a
// non-value.
double fast_ordinal(double x, const FormatInfo& fi, double maxf) {
  const double a = fabs(x);
  const double per_binade = pow2d(fi.precision - 1);
  double m;
  if (isinf(a)) {
    m = (fi.emax - fi.emin + 2) * per_binade;
  } else if (a == 0) {
    m = 0;
  } else {
    const int E = binade(a);
    const int q = std::max(E, fi.emin) - fi.precision + 1;
    const double k = a * pow2d(-q);  // exact
    if (k != std::trunc(k) || a > maxf)
      throw std::invalid_argument("compare_row_fast: the result is not a value of format " + std::string(fi.name));
    m = E < fi.emin ? k : (E - fi.emin) * per_binade + k;
  }
  return signbit(x) ? -m : m;
}

// ------------------------------------- the double tier's f32 decision, 4 lanes
//
// compare_row_fast's element rule below, for the common case only (double
// tier, f32 result, both finite, every test passed; an enclosure that holds 0
// only with a decided zero state), on 4 elements at a time with GCC vector
// extensions. Each lane does exactly the scalar code's IEEE operations, in
// the same order (the expressions are spelled the same, -ffp-contract=off,
// no FMA is enabled), so a decided lane's figures are the scalar code's bit
// for bit and need no error analysis of their own: the bounds are those
// written at the scalar rule. Every other lane (a test failed, NaN/inf, a
// value that is not f32, the tail of the row) is flagged and handed to the
// scalar rule, which decides it or gives the row up exactly as before.
// The order-dependent sums (sum_ulp, sum_bits) stay in the scalar
// pass in index order; the maxima are order-independent (no NaN, all >= +0
// or started at +0) and the first largest element is kept per lane, so the
// lanes' maxima are the sequential loop's.

namespace vec {

struct F32In {
  const double *result, *val, *err, *tight, *res;
  const ZeroState* zero;        // softmax_zero or log_softmax_zero
  std::size_t n;
  bool sm;
  double tolerance, uT, ref_rel, maxf;
  FormatInfo fi;
  double* ulp;                  // out.ulp
  double* ulp_err;              // out.ulp_err
  unsigned char* finite;        // out.finite: 1 where the lane decided the element, else 0
  double* bits;                 // Herbie's bits of decided elements (0 elsewhere)
};
struct F32Out {
  std::size_t measured = 0, largest_index = 0;
  double max_ulp = 0, max_bits = 0, max_rel = 0, max_abs = 0, max_abs_lo = 0, max_abs_hi = 0, max_ulp_err = 0, g_lo = 0, g_hi = 0;
  double largest = -1;
};

SOFTCHECK_VINLINE void f32_lanes_body(const F32In& in, F32Out& o) {
  constexpr double u = Arith<double>::u;
  const vd zero{}, one = splat(1), vu_ = splat(u), two_u = splat(2 * u), kS = splat(kSafe<double>),
           slack = splat(Arith<double>::slack), inf_ = splat(inf<double>), maxf = splat(in.maxf),
           tol = splat(in.tolerance), tol_uT = splat(in.tolerance * in.uT), ref_rel = splat(in.ref_rel),
           w_safe = splat(1 + 16 * u), w_tiny = splat(0x1p-1070), p52 = splat(0x1p-52), p20 = splat(0x1p-20),
           four = splat(4);
  const DistanceBits& table = distance_bits();
  vd max_ulp = zero, max_bits = zero, max_rel = zero, max_abs = zero, max_abs_lo = zero, max_abs_hi = zero, max_ulp_err = zero,
     g_lo = zero, g_hi = zero, largest = splat(-1);
  vl largest_index{}, measured{}, idx{0, 1, 2, 3};
  std::size_t i = 0;
  for (; i + L <= in.n; i += L, idx += static_cast<std::int64_t>(L)) {
    const vd r = load(in.result + i), v = load(in.val + i), e = load(in.err + i);
    const vf rf = __builtin_convertvector(r, vf);
    // r a finite value of f32 (the round trip also fails for NaN), v finite
    vl ok = (__builtin_convertvector(rf, vd) == r) & (vabs(r) <= maxf) & (vabs(v) < inf_);
    const vd E = e == 0 ? zero : (e + two_u * vabs(v)) * kS + slack;
    const vd lo = v - E, hi = v + E;
    const vl straddle = (lo <= 0) & (hi >= 0);  // alo = 0
    const vd alo = straddle ? zero : vmin(vabs(lo), vabs(hi));
    const vd ahi = vmax(vabs(lo), vabs(hi));
    const vl qlo = ulp_exp(alo, in.fi), qhi = ulp_exp(ahi, in.fi);
    const vl one_q = qlo == qhi;
    const vd D = vabs(r - v);
    const vd ED = E + vu_ * D;
    // times_pow2(., -q): -q <= 149, one power of two. Two binades over the
    // enclosure are rare: computed only when a lane has them.
    vd ulp, ulp_e;
    if (all_lanes(one_q)) {
      const vd scale = pow2v(-qlo);
      ulp = D * scale;
      ulp_e = ED * scale + ulp * p52;
    } else {
      const vl qv = one_q ? qlo : ulp_exp(vabs(v), in.fi);
      ulp = D * pow2v(-qv);
      const vd ulp_lo = (D > ED ? D - ED : zero) * pow2v(-qhi), ulp_hi = (D + ED) * pow2v(-qlo);
      ulp_e = (one_q ? ED * pow2v(-qv) : vmax(ulp_hi - ulp, ulp - ulp_lo)) + ulp * p52;
    }
    ok &= ulp_e <= tol * vmax(one, ulp * p20);
    const vd rad = in.sm ? E : load(in.tight + i) + ref_rel * vabs(v) + slack;
    const vd res = in.sm ? zero : load(in.res + i);
    // decided_rounding_f32
    const vd w = (vabs(res) + rad + two_u * vabs(v)) * w_safe + w_tiny;
    const vf lo32 = __builtin_convertvector(v - w, vf), hi32 = __builtin_convertvector(v + w, vf);
    ok &= widen((lo32 == hi32) & ((reinterpret_cast<vi>(lo32) & 0x7fffffff) != 0x7f800000));
    const vd rounded = __builtin_convertvector(lo32, vd);
    // the relative error: alo > 0, or from the zero state
    const vd rl = D / vabs(v);
    const vl rl_ok = ED + rl * E + rl * four * vu_ * alo <= tol_uT * (one < rl ? rl : one) * alo;
    vd rel = rl;
    if (!any_lane(straddle)) {
      ok &= rl_ok;
    } else {
      std::int64_t zs[L];
      for (std::size_t l = 0; l < L; ++l) zs[l] = static_cast<std::int64_t>(in.zero[i + l]);
      const vl z{zs[0], zs[1], zs[2], zs[3]};
      const vl is_zero = z == static_cast<std::int64_t>(ZeroState::zero), r0 = r == 0;
      const vl z_ok = is_zero | ((z == static_cast<std::int64_t>(ZeroState::positive)) & r0);
      ok &= straddle ? z_ok : rl_ok;
      rel = straddle ? (is_zero ? (r0 ? zero : inf_) : one) : rl;
    }
    const vd dist = vabs(f32_ordinal(r, rf) - f32_ordinal(rounded, lo32));
    const vd ulp_d = ulp;
    const vd err_d = ulp_e + vabs(ulp_d - ulp);
    const vd ulp_e_d = err_d + gap_up(ulp_d) + gap_up(err_d);
    store(in.ulp + i, ok ? ulp_d : zero);
    store(in.ulp_err + i, ok ? ulp_e_d : zero);
    const vd dist_ok = ok ? dist : zero;
    vd bits;
    for (std::size_t l = 0; l < L; ++l) bits[l] = bits_of_distance(dist_ok[l], table);
    store(in.bits + i, bits);
    max_bits = vmax(max_bits, bits);
    for (std::size_t l = 0; l < L; ++l) in.finite[i + l] = static_cast<unsigned char>(ok[l] & 1);
    measured -= ok;
    max_ulp = vmax(max_ulp, ok ? ulp_d : zero);
    max_rel = vmax(max_rel, ok ? rel : zero);
    max_abs = vmax(max_abs, ok ? D : zero);
    max_abs_lo = vmax(max_abs_lo, ok ? (D > ED ? D - ED : zero) : zero);
    max_abs_hi = vmax(max_abs_hi, ok ? D + ED : zero);
    max_ulp_err = vmax(max_ulp_err, ok ? ulp_e_d : zero);
    g_lo = vmax(g_lo, ok ? lo : zero);
    g_hi = vmax(g_hi, ok ? hi : zero);
    const vl up = ok & (ulp_d > largest);
    largest = up ? ulp_d : largest;
    largest_index = up ? idx : largest_index;
  }
  for (; i < in.n; ++i) in.ulp[i] = 0, in.ulp_err[i] = 0, in.finite[i] = 0;
  for (std::size_t l = 0; l < L; ++l) {
    o.measured += static_cast<std::size_t>(measured[l]);
    o.max_ulp = std::max(o.max_ulp, max_ulp[l]);
    o.max_bits = std::max(o.max_bits, max_bits[l]);
    o.max_rel = std::max(o.max_rel, max_rel[l]);
    o.max_abs = std::max(o.max_abs, max_abs[l]);
    o.max_abs_lo = std::max(o.max_abs_lo, max_abs_lo[l]);
    o.max_abs_hi = std::max(o.max_abs_hi, max_abs_hi[l]);
    o.max_ulp_err = std::max(o.max_ulp_err, max_ulp_err[l]);
    o.g_lo = std::max(o.g_lo, g_lo[l]);
    o.g_hi = std::max(o.g_hi, g_hi[l]);
    const auto li = static_cast<std::size_t>(largest_index[l]);
    if (largest[l] > o.largest || (largest[l] == o.largest && li < o.largest_index))
      o.largest = largest[l], o.largest_index = li;
  }
}

SOFTCHECK_DISPATCH(void, f32_lanes, (const F32In& in, F32Out& o), (in, o))

}  // namespace vec

}  // namespace

// Decision rules (element i, result r, exact v in [lo, hi]):
//  - class: exact for masked entries (v exactly 0 or -inf); an infinite r is
//    the correctly rounded value iff round_T(lo) = round_T(hi) = r (round_T is
//    monotone), plainly not when neither end rounds to r;
//  - ulp = |r - v| / 2^q, q the (clamped) binade of v: decided when every
//    value it can take over the enclosure is within tolerance of the estimate
//    (abs follows: the same figure times 2^q);
//  - bits: round_T(v) decided when round_T(lo) = round_T(hi): exact;
//  - rel = |r - v|/|v|: within tolerance u_T max(1, rel) when 0 is outside
//    [lo, hi]; when 0 is inside, MPFR's v is exactly 0 (ZeroState::zero:
//    rel 0 or inf) or positive (r = 0 gives exactly 1), else undecided;
//  - normwise: max_abs / (u_T max_j g_j) within tolerance max(1, normwise).
// f64 results need err <= 2^-63 |v|, out of reach of a 64-bit significand:
// only the double-double tier decides them (and nothing else).
template <class R>
bool compare_row_fast(std::span<const double> result, const BasicFastRow<R>& exact, Format f, Op op,
                      FastRowError& out, double tolerance, unsigned reference_bits) {
  constexpr R u = Arith<R>::u;
  constexpr R kS = kSafe<R>;
  if (result.size() != exact.softmax.size() || exact.status != RowStatus::ok || !exact.usable)
    throw std::invalid_argument("compare_row_fast: needs a usable ok row of the same length");
  // f64 results need the exact value to 2^-63 relative: the DD tier's, and
  // only its.
  if ((f == Format::f64) != is_dd<R>) return false;
  // The fast tiers enclose softmax and log-softmax only; the sparse ops are
  // the MPFR path's.
  if (op != Op::softmax && op != Op::log_softmax) return false;
  if (!arithmetic_as_assumed<R>()) return false;
  const bool sm = op == Op::softmax;
  // The double tier decides f32 roundings with the hardware's conversion.
  const bool f32_fast = std::is_same_v<R, double> && f == Format::f32;
  // ... and, unless a test asked for the scalar code, 4 elements at a time
  // first (vec::f32_lanes), the scalar rule for what they leave.
  const bool f32_lanes = f32_fast && detail::fast_tier_vectors() != 2;
  const auto& val = sm ? exact.softmax : exact.log_softmax;
  const auto& err = sm ? exact.softmax_err : exact.log_softmax_err;
  const std::size_t n = result.size();
  const R uT = unit_roundoff(f);
  const FormatInfo fi = info(f);
  const double maxf = max_finite(f);
  // exact_row's values carry a few units of 2^-bits (oracle.hpp); the tight
  // log-softmax enclosure can be narrower than that, so it is widened to
  // cover MPFR's value, which is what the MPFR path rounds.
  if (reference_bits < 8 || reference_bits > 16000) throw std::invalid_argument("compare_row_fast: reference_bits");
  const R ref_rel = Arith<R>::pow2(std::max(-static_cast<int>(reference_bits) + 2, Arith<R>::lowest_exp));

  out.error = RowError{};
  out.max_ulp_err = 0;
  RowError& row = out.error;
  row.elements = n;
  // The lanes write every element; the scalar rule starts from zeros.
  out.ulp.resize(n);
  out.ulp_err.resize(n);
  out.finite.resize(n);
  if (!f32_lanes) {
    std::fill(out.ulp.begin(), out.ulp.end(), 0.0);
    std::fill(out.ulp_err.begin(), out.ulp_err.end(), 0.0);
    std::fill(out.finite.begin(), out.finite.end(), static_cast<unsigned char>(0));
  }
  std::size_t first_broken = n, largest_index = 0;
  double largest = -1;
  R max_abs_lo = 0, max_abs_hi = 0, g_lo = 0, g_hi = 0;
  auto broken = [&](std::size_t i, bool special) {
    (special ? row.special_mismatch : row.nonfinite)++;
    first_broken = std::min(first_broken, i);
  };
  // One element, in index order: false when it cannot be decided (the row
  // is then given up).
  const auto element = [&](std::size_t i) -> bool {
    const double r = result[i];
    // A result that is not a value of f is the caller's error (compare_row
    // throws too); f32's check is a round trip, the ordinal only matters
    // when r is not the correctly rounded value.
    if (f32_fast) {
      if (!std::isnan(r) && static_cast<double>(static_cast<float>(r)) != r)
        throw std::invalid_argument("compare_row_fast: the result is not a value of format f32");
    } else if (!std::isnan(r) && !is_dd<R>) {  // every double is a value of f64
      (void)fast_ordinal(r, fi, maxf);
    }
    const R v = val[i];
    // Below the DD tier's exp floor a softmax entry is kept as 0 +- 2^-865,
    // far wider than f64's subnormal ulp. Its log-softmax enclosure bounds it
    // better (softmax = exp(log-softmax)): below e^-760 < 2^-1096 it is
    // (0, 2^-1096), which rounds to 0 and is under 2^-22 ulp of f64 from 0.
    // Such an entry is compared as exactly 0 with that much added to its ULP
    // uncertainty (and 2^-1074 to its absolute one); its relative error
    // follows from the zero state as for any 0.
    bool tiny = false;
    if constexpr (is_dd<R>)
      if (sm && v == 0 && err[i] != 0) {
        if (!(exact.log_softmax[i] + exact.log_softmax_err[i] < R(-760))) return false;
        tiny = true;
      }
    const R E = err[i] == 0 || tiny ? R(0) : (err[i] + 2 * u * fabs(v)) * kS + Arith<R>::slack;
    const R lo = v - E, hi = v + E;
    if (sm) g_lo = std::max(g_lo, lo), g_hi = std::max(g_hi, hi);
    if (isinf(v)) {  // masked log-softmax entry, exact
      if (isinf(r) && signbit(r) == signbit(v)) {
        out.finite[i] = 1;
        ++row.measured;
        if (0 > largest) largest = 0, largest_index = i;
      } else {
        broken(i, true);
      }
      return true;
    }
    if (std::isnan(r)) {
      broken(i, false);
      return true;
    }
    if (isinf(r)) {
      const R rlo = round_ld(lo, f), rhi = round_ld(hi, f);  // rare path
      if (rlo == r && rhi == r) {
        out.finite[i] = 1;
        ++row.measured;
        if (0 > largest) largest = 0, largest_index = i;
      } else if (rlo != r && rhi != r) {
        broken(i, false);
      } else {
        return false;
      }
      return true;
    }
    // Both finite.
    const R alo = lo <= 0 && hi >= 0 ? 0 : std::min(fabs(lo), fabs(hi));
    const R ahi = std::max(fabs(lo), fabs(hi));
    // ulp_T(v) = 2^q, q non-decreasing in |v|: between q(alo) and q(ahi).
    // When they differ (v at a power of two, e.g. a softmax of exactly 1) the
    // error is still decided if it is tiny in either binade.
    const int qlo = ulp_exp(alo, fi), qhi = ulp_exp(ahi, fi);
    const R D = fabs(static_cast<R>(r) - v);
    const R ED = E + u * D;
    const int qv = qlo == qhi ? qlo : ulp_exp(fabs(v), fi);
    const R ulp = times_pow2(D, -qv);
    R ulp_e;
    if (qlo == qhi) {
      ulp_e = times_pow2(ED, -qv) + ulp * R(0x1p-52);  // + rounding to double
    } else {
      const R ulp_lo = times_pow2(D > ED ? D - ED : R(0), -qhi);
      const R ulp_hi = times_pow2(D + ED, -qlo);
      ulp_e = std::max(ulp_hi - ulp, ulp - ulp_lo) + ulp * R(0x1p-52);
    }
    if (tiny) ulp_e += R(0x1p-22);
    // Within tolerance ulp, or tolerance 2^-20 of the figure when that is
    // more: a result 2^50 ulp off (a log-softmax of 0 for -1e-30) is known
    // to 2^-52 relative, not to 1/1000 ulp, and needs no more.
    if (!(ulp_e <= tolerance * std::max<R>(1, ulp * R(0x1p-20)))) return false;
    // The radius of the value round_T is decided for: softmax's enclosure, or
    // log-softmax's tight one around value + residual, widened to cover
    // MPFR's value (see ref_rel).
    const R rad = sm ? E : exact.log_softmax_tight[i] + ref_rel * fabs(v) + Arith<R>::slack;
    std::optional<double> rounded;
    if constexpr (is_dd<R>) {
      rounded = decided_rounding_f64(v, rad);  // no residual in the DD tier
    } else {
      const R res = sm ? R(0) : exact.log_softmax_res[i];
      // f32 in the double tier: the hardware conversion first; a v on (or a
      // hair off) a midpoint, which it leaves undecided, by the general rule,
      // which weighs res exactly.
      if (f32_fast)
        rounded = decided_rounding_f32(static_cast<double>(v), static_cast<double>(res), static_cast<double>(rad));
      if (!rounded) rounded = decided_rounding<R>(v, res, rad, fi, maxf);
    }
    if (!rounded) return false;
    double rel;
    if (alo > 0) {
      const R rl = D / fabs(v);
      // |rel - rl| <= (ED + rl E)/alo + 4u rl, compared without dividing
      if (!(ED + rl * E + rl * 4 * u * alo <= tolerance * uT * std::max<R>(1, rl) * alo)) return false;
      rel = static_cast<double>(rl);
    } else {
      const ZeroState z = sm ? exact.softmax_zero[i] : exact.log_softmax_zero[i];
      if (z == ZeroState::zero)
        rel = r == 0 ? 0 : std::numeric_limits<double>::infinity();
      else if (z == ZeroState::positive && r == 0)
        rel = 1;
      else
        return false;
    }
    // f32: bit patterns, without a branch on r == round_T(v) (a coin toss for
    // most kernels); other formats skip the ordinals when they agree.
    const double dist = is_dd<R>      ? f64_ordinal_distance(r, *rounded)
                        : f32_fast      ? fabs(f32_ordinal(r) - f32_ordinal(*rounded))
                        : r == *rounded ? 0
                                        : fabs(fast_ordinal(r, fi, maxf) - fast_ordinal(*rounded, fi, maxf));
    const double bits = bits_of_distance(dist);
    const double ulp_d = static_cast<double>(ulp);
    // Both this figure and compare_element's end as doubles: add this one's
    // conversion error and one double ulp for MPFR's rounding (at the bottom
    // of the double range the two roundings can differ by a subnormal even
    // when ulp_e is 0).
    const double err_d = static_cast<double>(ulp_e + fabs(static_cast<R>(ulp_d) - ulp));
    const double ulp_e_d = err_d + gap_up(ulp_d) + gap_up(err_d);
    out.finite[i] = 1;
    out.ulp[i] = ulp_d;
    out.ulp_err[i] = ulp_e_d;
    ++row.measured;
    row.sum_ulp += ulp_d;
    row.sum_bits += bits;
    row.max_ulp = std::max(row.max_ulp, ulp_d);
    row.max_bits = std::max(row.max_bits, bits);
    row.max_rel = std::max(row.max_rel, rel);
    row.max_abs = std::max(row.max_abs, static_cast<double>(D));
    const R ED_abs = ED + (tiny ? R(0x1p-1074) : R(0));
    max_abs_lo = std::max(max_abs_lo, D > ED_abs ? D - ED_abs : R(0));
    max_abs_hi = std::max(max_abs_hi, D + ED_abs);
    out.max_ulp_err = std::max(out.max_ulp_err, ulp_e_d);
    if (ulp_d > largest) largest = ulp_d, largest_index = i;
    return true;
  };
  if constexpr (std::is_same_v<R, double>) {
    if (f32_lanes) {
      // The common elements 4 at a time (vec::f32_lanes), then, in index
      // order, the sums over them and the scalar rule for the rest.
      thread_local std::vector<double> bits;
      if (bits.size() < n) bits.resize(n);  // never shrunk: no zero-filling when rows grow again
      vec::F32Out lanes;
      vec::f32_lanes({result.data(), val.data(), err.data(), exact.log_softmax_tight.data(),
                      exact.log_softmax_res.data(), (sm ? exact.softmax_zero : exact.log_softmax_zero).data(), n, sm, tolerance, uT, ref_rel, maxf, fi, out.ulp.data(),
                      out.ulp_err.data(), out.finite.data(), bits.data()},
                     lanes);
      for (std::size_t i = 0; i < n; ++i) {
        if (out.finite[i]) {
          row.sum_ulp += out.ulp[i];
          row.sum_bits += bits[i];
        } else if (!element(i)) {
          return false;
        }
      }
      row.measured += lanes.measured;
      row.max_ulp = std::max(row.max_ulp, lanes.max_ulp);
      row.max_bits = std::max(row.max_bits, lanes.max_bits);
      row.max_rel = std::max(row.max_rel, lanes.max_rel);
      row.max_abs = std::max(row.max_abs, lanes.max_abs);
      max_abs_lo = std::max(max_abs_lo, lanes.max_abs_lo);
      max_abs_hi = std::max(max_abs_hi, lanes.max_abs_hi);
      out.max_ulp_err = std::max(out.max_ulp_err, lanes.max_ulp_err);
      if (sm) g_lo = std::max(g_lo, lanes.g_lo), g_hi = std::max(g_hi, lanes.g_hi);
      if (lanes.largest > largest || (lanes.largest == largest && lanes.largest_index < largest_index))
        largest = lanes.largest, largest_index = lanes.largest_index;
    }
  }
  if (!f32_lanes)
    for (std::size_t i = 0; i < n; ++i)
      if (!element(i)) return false;
  row.worst_index = first_broken < n ? first_broken : largest_index;
  if (sm) {
    // max_j g_j lies in [g_lo, g_hi] (g_k >= 1/n, so g_lo > 0); MPFR rounds it to double.
    if (!(g_lo > 0)) return false;
    const R est = static_cast<R>(row.max_abs) / (uT * static_cast<double>(g_lo + (g_hi - g_lo) / 2));
    const R nlo = max_abs_lo / (uT * g_hi * (1 + R(0x1p-52))), nhi = max_abs_hi / (uT * g_lo * (1 - R(0x1p-52)));
    if (!(nhi - nlo <= tolerance * std::max<R>(1, est))) return false;
    row.normwise = static_cast<double>(est);
  }
  return true;
}

template <class R>
std::optional<FastRowError> compare_row_fast(std::span<const double> result, const BasicFastRow<R>& exact, Format f,
                                             Op op, double tolerance, unsigned reference_bits) {
  FastRowError out;
  if (!compare_row_fast(result, exact, f, op, out, tolerance, reference_bits)) return std::nullopt;
  return out;
}

template bool compare_row_fast(std::span<const double>, const FastRow&, Format, Op, FastRowError&, double, unsigned);
template bool compare_row_fast(std::span<const double>, const DoubleFastRow&, Format, Op, FastRowError&, double,
                               unsigned);
template std::optional<FastRowError> compare_row_fast(std::span<const double>, const FastRow&, Format, Op, double,
                                                      unsigned);
template std::optional<FastRowError> compare_row_fast(std::span<const double>, const DoubleFastRow&, Format, Op,
                                                      double, unsigned);
template bool compare_row_fast(std::span<const double>, const DDFastRow&, Format, Op, FastRowError&, double,
                               unsigned);
template std::optional<FastRowError> compare_row_fast(std::span<const double>, const DDFastRow&, Format, Op, double,
                                                      unsigned);

}  // namespace softcheck::oracle
