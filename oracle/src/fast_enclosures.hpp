// Rigorous enclosures of exp and log1p in the fast tiers' arithmetics
// (fast_arith.hpp, whose error model the bounds below are written in): the
// values the row evaluation (fast_rows.cpp) builds softmax and log-softmax
// from. Private to oracle/, internal linkage as fast_arith.hpp.
#pragma once

#include <mpfr.h>

#include <array>
#include <cmath>
#include <cstddef>

#include "fast_arith.hpp"

namespace softcheck::oracle {
namespace {

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

}  // namespace
}  // namespace softcheck::oracle
