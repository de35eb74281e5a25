// Exact sparsemax, entmax15, entmax (certified bisection), top-k and threshold
// softmax. Derivations: docs/sparse.md; definitions: REFERENCE.md, "Entmax
// family" (Peters, Niculae & Martins 2019), sparsemax: Martins & Astudillo 2016.
//
// Like oracle.cpp, every MPFR variable gets an explicit precision.
#include "softcheck/sparse_oracle.hpp"

#include "mpfr_util.hpp"

#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace softcheck::oracle {

namespace {

using detail::raw;
using detail::real_with_bits;
using Mp = detail::Scratch;

using detail::classify;

SparseRow empty_row(RowStatus status, unsigned bits) {
  SparseRow r;
  r.status = status;
  r.tau = real_with_bits(bits);
  r.tau_lo = real_with_bits(bits);
  r.tau_hi = real_with_bits(bits);
  return r;  // NaN taus (real_with_bits leaves NaN)
}

// Indices of the finite entries, sorted by value descending, ties by index
// (deterministic; the results do not depend on the tie order).
std::vector<std::size_t> sorted_finite(std::span<const double> x) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(x[i])) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return x[a] > x[b]; });
  return idx;
}

// Precision in which sums, products and squares of the finite x_i, T and
// integers up to n are all exact. Every nonzero finite double is an integer
// multiple of 2^lo (its last bit) and below 2^(hi + 1); with span = hi - lo + 1
// over the x_i and T, a sum of n of them needs span + bit_width(n) bits, a
// product of two such sums twice that, a further integer factor rho <= n
// another bit_width(n). 2 (span + 2 bit_width(n)) + 64 covers every expression
// formed below (the largest: rho x^2 - 2 x S1 + S2 - 4T^2 and D - a_i^2).
mpfr_prec_t exact_precision(std::span<const double> x, std::span<const std::size_t> finite,
                            double temperature) {
  int hi = INT_MIN, lo = INT_MAX;
  auto note = [&](double v) {
    if (v == 0) return;
    const int e = std::ilogb(v);
    hi = std::max(hi, e);
    lo = std::min(lo, std::max(e - 52, -1074));
  };
  for (std::size_t i : finite) note(x[i]);
  note(temperature);
  const long span = static_cast<long>(hi) - lo + 1;
  const long bw = std::bit_width(finite.size());
  return static_cast<mpfr_prec_t>(2 * (span + 2 * bw) + 64);
}

void finish_support(SparseRow& r) {
  r.support.assign(r.p.size(), false);
  r.support_size = 0;
  for (std::size_t i = 0; i < r.p.size(); ++i)
    if (mpfr_sgn(raw(r.p[i])) > 0) {
      r.support[i] = true;
      ++r.support_size;
    }
}

SparseRow zeros_row(std::size_t n, unsigned bits) {
  SparseRow r = empty_row(RowStatus::ok, bits);
  r.p.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    r.p.push_back(real_with_bits(bits));
    mpfr_set_zero(raw(r.p.back()), 1);
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------- sparsemax
//
// Martins & Astudillo 2016 (REFERENCE.md, "Entmax family"): sort z descending;
// k = max{rho : 1 + rho z_(rho) > sum_{j<=rho} z_(j)}; tau = (S_k - 1)/k;
// p = [z - tau]_+. With z = x / T and S^x_rho = sum_{j<=rho} x_(j) the test is
// T + rho x_(rho) - S^x_rho > 0 and p_i = (k x_i - S^x_k + T) / (k T): numerator
// and denominator are exact in exact_precision, so the support is exact and
// each p_i is the correctly rounded quotient. The test holds on a prefix of
// rho (its left side minus the right one, T - sum_{j<=rho} (x_(j) - x_(rho)),
// decreases with rho), and entries tied with x_(k) pass it together.
SparseRow exact_sparsemax(std::span<const double> x, double temperature, unsigned bits) {
  detail::check_arguments(x, temperature, bits, "exact_sparsemax");
  detail::prepare_mpfr_thread();
  const RowStatus status = classify(x);
  if (status != RowStatus::ok) return empty_row(status, bits);
  const std::vector<std::size_t> order = sorted_finite(x);
  const mpfr_prec_t P = exact_precision(x, order, temperature);

  Mp S(P), test(P), term(P), Sk(P);
  mpfr_set_zero(S.v, 1);
  std::size_t k = 0;
  for (std::size_t rho = 1; rho <= order.size(); ++rho) {
    const double xr = x[order[rho - 1]];
    mpfr_add_d(S.v, S.v, xr, MPFR_RNDN);                             // exact
    mpfr_set_d(term.v, xr, MPFR_RNDN);
    mpfr_mul_ui(term.v, term.v, static_cast<unsigned long>(rho), MPFR_RNDN);  // exact
    mpfr_sub(test.v, term.v, S.v, MPFR_RNDN);
    mpfr_add_d(test.v, test.v, temperature, MPFR_RNDN);              // exact
    if (mpfr_sgn(test.v) <= 0) break;
    k = rho;
    mpfr_set(Sk.v, S.v, MPFR_RNDN);
  }
  // k >= 1: rho = 1 gives T > 0.
  SparseRow r = zeros_row(x.size(), bits);
  Mp den(P), num(P);
  mpfr_set_d(den.v, temperature, MPFR_RNDN);
  mpfr_mul_ui(den.v, den.v, static_cast<unsigned long>(k), MPFR_RNDN);  // k T, exact
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    mpfr_set_d(num.v, x[i], MPFR_RNDN);
    mpfr_mul_ui(num.v, num.v, static_cast<unsigned long>(k), MPFR_RNDN);
    mpfr_sub(num.v, num.v, Sk.v, MPFR_RNDN);
    mpfr_add_d(num.v, num.v, temperature, MPFR_RNDN);  // k x_i - S_k + T, exact
    if (mpfr_sgn(num.v) <= 0) continue;
    mpfr_div(raw(r.p[i]), num.v, den.v, MPFR_RNDN);
  }
  // tau = (S_k - T) / (k T), in z units (alpha - 1 = 1).
  mpfr_sub_d(num.v, Sk.v, temperature, MPFR_RNDN);
  mpfr_div(raw(r.tau), num.v, den.v, MPFR_RNDN);
  mpfr_set(raw(r.tau_lo), raw(r.tau), MPFR_RNDN);
  mpfr_set(raw(r.tau_hi), raw(r.tau), MPFR_RNDN);
  finish_support(r);
  return r;
}

// ---------------------------------------------------------------- entmax15
//
// Peters et al. 2019 (REFERENCE.md, "Entmax family"), alpha = 1.5: with
// w_i = z_i / 2, p_i = [w_i - tau]_+^2 and sum p = 1. On a support of the rho
// largest entries tau solves rho tau^2 - 2 tau sum w + sum w^2 = 1, the
// smaller root tau_rho = mean_rho - sqrt(delta_rho). Entry rho belongs to the
// support iff sum_i [w_i - w_(rho)]_+^2 < 1 (the sum is decreasing in tau and
// equals 1 at the true tau), i.e. in x units, with S1, S2 the sums of x_(j) and
// x_(j)^2 over j <= rho:
//   rho x_(rho)^2 - 2 x_(rho) S1 + S2 < 4 T^2        (exact in exact_precision).
// (Equivalent to REFERENCE.md's tau_rho <= z'_(rho), strict so that the support
// is {p_i > 0}.) Then, with D = 4 T^2 k - k S2 + S1^2 (exact, > 0) and
// a_i = k x_i - S1 (exact):
//   w_i - tau = (a_i + sqrt(D)) / (2 T k),   p_i = (a_i + sqrt(D))^2 / (4 T^2 k^2),
// where for a_i < 0 the sum is formed as (D - a_i^2) / (sqrt(D) - a_i) (no
// cancellation). Only sqrt, that quotient, the square and the division round
// (in w = bits + 8 bits): p_i has relative error below 2^-bits / 16 before its
// final rounding to bits.
SparseRow exact_entmax15(std::span<const double> x, double temperature, unsigned bits) {
  detail::check_arguments(x, temperature, bits, "exact_entmax15");
  detail::prepare_mpfr_thread();
  const RowStatus status = classify(x);
  if (status != RowStatus::ok) return empty_row(status, bits);
  const std::vector<std::size_t> order = sorted_finite(x);
  const mpfr_prec_t P = exact_precision(x, order, temperature);
  const mpfr_prec_t w = static_cast<mpfr_prec_t>(bits) + 8;

  Mp S1(P), S2(P), t1(P), t2(P), fourT2(P), S1k(P), S2k(P);
  mpfr_set_d(fourT2.v, temperature, MPFR_RNDN);
  mpfr_sqr(fourT2.v, fourT2.v, MPFR_RNDN);
  mpfr_mul_ui(fourT2.v, fourT2.v, 4, MPFR_RNDN);
  mpfr_set_zero(S1.v, 1);
  mpfr_set_zero(S2.v, 1);
  std::size_t k = 0;
  for (std::size_t rho = 1; rho <= order.size(); ++rho) {
    const double xr = x[order[rho - 1]];
    mpfr_add_d(S1.v, S1.v, xr, MPFR_RNDN);
    mpfr_set_d(t1.v, xr, MPFR_RNDN);
    mpfr_sqr(t1.v, t1.v, MPFR_RNDN);
    mpfr_add(S2.v, S2.v, t1.v, MPFR_RNDN);
    // rho x^2 - 2 x S1 + S2
    mpfr_mul_ui(t1.v, t1.v, static_cast<unsigned long>(rho), MPFR_RNDN);
    mpfr_mul_d(t2.v, S1.v, xr, MPFR_RNDN);  // exact in P
    mpfr_mul_2ui(t2.v, t2.v, 1, MPFR_RNDN);  // 2 x S1 (not 2 * xr in double: -DBL_MAX overflows)
    mpfr_sub(t1.v, t1.v, t2.v, MPFR_RNDN);
    mpfr_add(t1.v, t1.v, S2.v, MPFR_RNDN);
    if (mpfr_cmp(t1.v, fourT2.v) >= 0) break;
    k = rho;
    mpfr_set(S1k.v, S1.v, MPFR_RNDN);
    mpfr_set(S2k.v, S2.v, MPFR_RNDN);
  }
  // k >= 1: rho = 1 gives 0 < 4 T^2.
  Mp D(P), a(P), sqrtD(w), num(w), den(w), tmp(P);
  mpfr_mul_ui(D.v, fourT2.v, static_cast<unsigned long>(k), MPFR_RNDN);
  mpfr_mul_ui(tmp.v, S2k.v, static_cast<unsigned long>(k), MPFR_RNDN);
  mpfr_sub(D.v, D.v, tmp.v, MPFR_RNDN);
  mpfr_sqr(tmp.v, S1k.v, MPFR_RNDN);
  mpfr_add(D.v, D.v, tmp.v, MPFR_RNDN);  // D = 4T^2 k - k S2 + S1^2, exact
  mpfr_sqrt(sqrtD.v, D.v, MPFR_RNDN);
  mpfr_mul_ui(den.v, fourT2.v, static_cast<unsigned long>(k), MPFR_RNDN);
  mpfr_mul_ui(den.v, den.v, static_cast<unsigned long>(k), MPFR_RNDN);  // 4 T^2 k^2 (rounded to w)

  SparseRow r = zeros_row(x.size(), bits);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    mpfr_set_d(a.v, x[i], MPFR_RNDN);
    mpfr_mul_ui(a.v, a.v, static_cast<unsigned long>(k), MPFR_RNDN);
    mpfr_sub(a.v, a.v, S1k.v, MPFR_RNDN);  // a_i, exact
    if (mpfr_sgn(a.v) >= 0) {
      mpfr_add(num.v, a.v, sqrtD.v, MPFR_RNDN);
    } else {
      mpfr_sqr(tmp.v, a.v, MPFR_RNDN);
      mpfr_sub(tmp.v, D.v, tmp.v, MPFR_RNDN);  // D - a_i^2, exact
      if (mpfr_sgn(tmp.v) <= 0) continue;      // off the support
      Mp q(w);
      mpfr_sub(q.v, sqrtD.v, a.v, MPFR_RNDN);  // sqrt(D) - a_i > 0
      mpfr_div(num.v, tmp.v, q.v, MPFR_RNDN);
    }
    mpfr_sqr(num.v, num.v, MPFR_RNDN);
    mpfr_div(raw(r.p[i]), num.v, den.v, MPFR_RNDN);
  }
  // tau = (S1 - sqrt(D)) / (2 T k) in w = z / 2 units.
  Mp tn(w), td(w);
  mpfr_sub(tn.v, S1k.v, sqrtD.v, MPFR_RNDN);
  mpfr_set_d(td.v, temperature, MPFR_RNDN);
  mpfr_mul_ui(td.v, td.v, 2 * static_cast<unsigned long>(k), MPFR_RNDN);
  mpfr_div(raw(r.tau), tn.v, td.v, MPFR_RNDN);
  mpfr_set(raw(r.tau_lo), raw(r.tau), MPFR_RNDN);
  mpfr_set(raw(r.tau_hi), raw(r.tau), MPFR_RNDN);
  finish_support(r);
  return r;
}

// ---------------------------------------------------------------- entmax, bisection
//
// REFERENCE.md, "Entmax family": p_i = [(alpha - 1) z_i - tau]_+^(1/(alpha-1)),
// bisection on tau in [(alpha-1) max - 1, (alpha-1) max - (1/n)^(alpha-1)].
// Written with t = (alpha - 1) z_max - tau and d_i = (x_max - x_i) / T >= 0,
// a = alpha - 1: f(t) = sum_i [t - a d_i]_+^(1/a) is increasing in t, f(1) >= 1
// (the max term alone), f((1/n)^a) <= 1 (every term <= 1/n): t* with f(t*) = 1
// lies in [(1/n)^a, 1].
//
// Certified bracket: f_lo(t) <= f(t) <= f_hi(t) by directed rounding of every
// step (d_i, a and 1/a bounded below and above; t - a d_i rounded down for
// f_lo and up for f_hi; pow and the correctly rounded mpfr_sum rounded down or
// up; for a base in (0, 1] a larger exponent gives a smaller power). If
// f_hi(m) < 1 then t* > m; if f_lo(m) > 1 then t* < m; otherwise the
// precision cannot tell and the quarter points are tried. Precision grows
// 64, 128, ... up to bits + 16 + bit_width(n) bits; each stage bisects until
// the midpoint is no longer representable between the ends or both quarter
// points are undecidable.
namespace {

struct Bounds {
  Mp a_lo, a_hi, e_lo, e_hi;  // a = alpha - 1 and 1/a, each bounded
  std::vector<Real> d_lo, d_hi;  // d_i bounds (finite entries only)
  Bounds(mpfr_prec_t p) : a_lo(p), a_hi(p), e_lo(p), e_hi(p) {}
};

// Sum of [t - a d_i]_+^(1/a) rounded in direction `dir` (RNDD: lower bound).
void f_bound(mpfr_ptr out, mpfr_srcptr t, const Bounds& b, mpfr_rnd_t dir, mpfr_prec_t prec,
             std::vector<Real>& terms, std::vector<mpfr_ptr>& ptrs) {
  const bool low = dir == MPFR_RNDD;
  const mpfr_rnd_t other = low ? MPFR_RNDU : MPFR_RNDD;
  Mp ad(prec), u(prec);
  ptrs.clear();
  for (std::size_t i = 0; i < b.d_lo.size(); ++i) {
    // a d_i rounded away from the bound's side
    mpfr_mul(ad.v, low ? b.a_hi.v : b.a_lo.v, (low ? b.d_hi[i] : b.d_lo[i]).backend().data(), other);
    mpfr_sub(u.v, t, ad.v, dir);
    if (mpfr_sgn(u.v) <= 0) continue;
    Real& term = terms[i];
    mpfr_set_prec(raw(term), prec);
    mpfr_pow(raw(term), u.v, low ? b.e_hi.v : b.e_lo.v, dir);
    ptrs.push_back(raw(term));
  }
  mpfr_sum(out, ptrs.data(), ptrs.size(), dir);
}

}  // namespace

SparseRow exact_entmax_bisect(std::span<const double> x, double alpha, double temperature,
                              unsigned bits) {
  detail::check_arguments(x, temperature, bits, "exact_entmax_bisect");
  if (!std::isfinite(alpha) || !(alpha > 1))
    throw std::invalid_argument("exact_entmax_bisect: alpha must be finite and > 1");
  detail::prepare_mpfr_thread();
  const RowStatus status = classify(x);
  if (status != RowStatus::ok) return empty_row(status, bits);
  const std::vector<std::size_t> order = sorted_finite(x);
  const std::size_t n = order.size();
  const double xmax = x[order.front()];
  const mpfr_prec_t final_prec =
      static_cast<mpfr_prec_t>(bits) + 16 + static_cast<mpfr_prec_t>(std::bit_width(n));
  const mpfr_prec_t bp = final_prec + 64;  // precision of the bounds themselves

  Bounds b(bp);
  mpfr_set_d(b.a_lo.v, alpha, MPFR_RNDD);
  mpfr_sub_ui(b.a_lo.v, b.a_lo.v, 1, MPFR_RNDD);
  mpfr_set_d(b.a_hi.v, alpha, MPFR_RNDU);
  mpfr_sub_ui(b.a_hi.v, b.a_hi.v, 1, MPFR_RNDU);
  mpfr_ui_div(b.e_lo.v, 1, b.a_hi.v, MPFR_RNDD);
  mpfr_ui_div(b.e_hi.v, 1, b.a_lo.v, MPFR_RNDU);
  {
    const mpfr_prec_t P = exact_precision(x, order, temperature);
    Mp diff(P);
    for (std::size_t i : order) {
      mpfr_set_d(diff.v, x[i], MPFR_RNDN);
      mpfr_d_sub(diff.v, xmax, diff.v, MPFR_RNDN);  // exact in P
      b.d_lo.push_back(real_with_bits(bp));
      b.d_hi.push_back(real_with_bits(bp));
      mpfr_div_d(raw(b.d_lo.back()), diff.v, temperature, MPFR_RNDD);
      mpfr_div_d(raw(b.d_hi.back()), diff.v, temperature, MPFR_RNDU);
    }
  }

  Mp lo(final_prec), hi(final_prec), m(final_prec), f(final_prec), one(2);
  mpfr_set_ui(one.v, 1, MPFR_RNDN);
  // lo = (1/n)^a rounded down (f(lo) <= 1 still holds: f increases), hi = 1.
  mpfr_set_ui(lo.v, static_cast<unsigned long>(n), MPFR_RNDU);
  mpfr_ui_div(lo.v, 1, lo.v, MPFR_RNDD);
  mpfr_pow(lo.v, lo.v, b.a_hi.v, MPFR_RNDD);  // base <= 1: larger exponent, smaller value
  mpfr_set_ui(hi.v, 1, MPFR_RNDN);

  std::vector<Real> terms(n);
  std::vector<mpfr_ptr> ptrs;
  ptrs.reserve(n);
  // Returns -1 if t* > t is certain, +1 if t* < t, 0 if undecidable at prec.
  auto side = [&](mpfr_srcptr t, mpfr_prec_t prec) {
    mpfr_set_prec(f.v, prec);
    f_bound(f.v, t, b, MPFR_RNDU, prec, terms, ptrs);
    if (mpfr_cmp(f.v, one.v) < 0) return -1;
    f_bound(f.v, t, b, MPFR_RNDD, prec, terms, ptrs);
    if (mpfr_cmp(f.v, one.v) > 0) return 1;
    return 0;
  };
  for (mpfr_prec_t prec = 64;; prec = std::min(2 * prec, final_prec)) {
    for (int guard = 0; guard < 4 * final_prec; ++guard) {
      mpfr_add(m.v, lo.v, hi.v, MPFR_RNDN);
      mpfr_div_2ui(m.v, m.v, 1, MPFR_RNDN);  // exact at final_prec unless lo, hi adjacent
      if (mpfr_lessequal_p(m.v, lo.v) || mpfr_greaterequal_p(m.v, hi.v)) break;
      const int s = side(m.v, prec);
      if (s < 0) {
        mpfr_set(lo.v, m.v, MPFR_RNDN);
      } else if (s > 0) {
        mpfr_set(hi.v, m.v, MPFR_RNDN);
      } else {
        // Undecidable at m: try the quarter points.
        Mp q(final_prec);
        bool moved = false;
        mpfr_add(q.v, lo.v, m.v, MPFR_RNDN);
        mpfr_div_2ui(q.v, q.v, 1, MPFR_RNDN);
        if (mpfr_greater_p(q.v, lo.v) && side(q.v, prec) < 0) {
          mpfr_set(lo.v, q.v, MPFR_RNDN);
          moved = true;
        }
        mpfr_add(q.v, m.v, hi.v, MPFR_RNDN);
        mpfr_div_2ui(q.v, q.v, 1, MPFR_RNDN);
        if (mpfr_less_p(q.v, hi.v) && side(q.v, prec) > 0) {
          mpfr_set(hi.v, q.v, MPFR_RNDN);
          moved = true;
        }
        if (!moved) break;
      }
    }
    if (prec >= final_prec) break;
  }

  // t = midpoint; p_i = [t - a d_i]_+^(1/a) in final_prec with alpha - 1 and
  // d_i rounded to nearest, rounded once more to bits.
  mpfr_add(m.v, lo.v, hi.v, MPFR_RNDN);
  mpfr_div_2ui(m.v, m.v, 1, MPFR_RNDN);
  SparseRow r = zeros_row(x.size(), bits);
  Mp a(final_prec), e(final_prec), d(final_prec), u(final_prec);
  mpfr_set_d(a.v, alpha, MPFR_RNDN);
  mpfr_sub_ui(a.v, a.v, 1, MPFR_RNDN);
  mpfr_ui_div(e.v, 1, a.v, MPFR_RNDN);
  Mp alo(final_prec), ahi(final_prec);
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t i = order[j];
    mpfr_add(d.v, b.d_lo[j].backend().data(), b.d_hi[j].backend().data(), MPFR_RNDN);
    mpfr_div_2ui(d.v, d.v, 1, MPFR_RNDN);
    mpfr_mul(u.v, a.v, d.v, MPFR_RNDN);
    // undecided: a d_i within [lo, hi]
    mpfr_mul(alo.v, b.a_lo.v, b.d_lo[j].backend().data(), MPFR_RNDD);
    mpfr_mul(ahi.v, b.a_hi.v, b.d_hi[j].backend().data(), MPFR_RNDU);
    if (!(mpfr_cmp(ahi.v, lo.v) < 0 || mpfr_cmp(alo.v, hi.v) >= 0)) ++r.undecided;
    mpfr_sub(u.v, m.v, u.v, MPFR_RNDN);
    if (mpfr_sgn(u.v) <= 0) continue;
    Mp pv(final_prec);
    mpfr_pow(pv.v, u.v, e.v, MPFR_RNDN);
    mpfr_set(raw(r.p[i]), pv.v, MPFR_RNDN);
  }
  // tau = a z_max - t; the bracket from [lo, hi] with a z_max bounded.
  Mp az(bp), az_lo(bp), az_hi(bp);
  mpfr_set_d(az.v, xmax, MPFR_RNDN);
  mpfr_div_d(az_lo.v, az.v, temperature, MPFR_RNDD);
  mpfr_div_d(az_hi.v, az.v, temperature, MPFR_RNDU);
  const bool neg = xmax < 0;
  mpfr_mul(az_lo.v, az_lo.v, neg ? b.a_hi.v : b.a_lo.v, MPFR_RNDD);
  mpfr_mul(az_hi.v, az_hi.v, neg ? b.a_lo.v : b.a_hi.v, MPFR_RNDU);
  mpfr_sub(raw(r.tau_lo), az_lo.v, hi.v, MPFR_RNDD);
  mpfr_sub(raw(r.tau_hi), az_hi.v, lo.v, MPFR_RNDU);
  mpfr_div_d(az.v, az.v, temperature, MPFR_RNDN);
  mpfr_mul(az.v, az.v, a.v, MPFR_RNDN);
  mpfr_sub(raw(r.tau), az.v, m.v, MPFR_RNDN);
  finish_support(r);
  return r;
}

SparseRow exact_entmax(std::span<const double> x, double alpha, double temperature, unsigned bits) {
  if (!std::isfinite(alpha) || !(alpha > 1))
    throw std::invalid_argument("exact_entmax: alpha must be finite and > 1");
  if (alpha == 2) return exact_sparsemax(x, temperature, bits);
  if (alpha == 1.5) return exact_entmax15(x, temperature, bits);
  return exact_entmax_bisect(x, alpha, temperature, bits);
}

// ---------------------------------------------------------------- top-k, threshold

namespace {

// Softmax over the kept entries (the others masked), in the SparseRow shape.
SparseRow softmax_over(std::span<const double> x, const std::vector<bool>& keep,
                       double temperature, unsigned bits) {
  std::vector<double> masked(x.begin(), x.end());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!keep[i]) masked[i] = -std::numeric_limits<double>::infinity();
  ExactRow e = exact_row(masked, temperature, bits);
  SparseRow r = empty_row(RowStatus::ok, bits);
  r.p = std::move(e.softmax);
  finish_support(r);
  return r;
}

}  // namespace

SparseRow exact_topk_softmax(std::span<const double> x, std::size_t k, double temperature,
                             unsigned bits) {
  detail::check_arguments(x, temperature, bits, "exact_topk_softmax");
  if (k < 1) throw std::invalid_argument("exact_topk_softmax: k must be >= 1");
  const RowStatus status = classify(x);
  if (status != RowStatus::ok) return empty_row(status, bits);
  const std::vector<std::size_t> order = sorted_finite(x);
  const double kth = x[order[std::min(k, order.size()) - 1]];
  std::vector<bool> keep(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) keep[i] = std::isfinite(x[i]) && x[i] >= kth;
  return softmax_over(x, keep, temperature, bits);
}

SparseRow exact_threshold_softmax(std::span<const double> x, double threshold, double temperature,
                                  unsigned bits) {
  detail::check_arguments(x, temperature, bits, "exact_threshold_softmax");
  if (!(threshold >= 0 && threshold <= 1))
    throw std::invalid_argument("exact_threshold_softmax: threshold must be in [0, 1]");
  const RowStatus status = classify(x);
  if (status != RowStatus::ok) return empty_row(status, bits);
  const ExactRow full = exact_row(x, temperature, bits + 64);
  std::vector<bool> keep(x.size());
  bool any = false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    keep[i] = std::isfinite(x[i]) && full.softmax[i] >= threshold;
    any = any || keep[i];
  }
  if (!any) {
    const double xmax = *std::max_element(x.begin(), x.end());
    for (std::size_t i = 0; i < x.size(); ++i) keep[i] = x[i] == xmax;
  }
  return softmax_over(x, keep, temperature, bits);
}

SparseRow exact_sparse(Op op, const OpParams& params, std::span<const double> x,
                       double temperature, unsigned bits) {
  switch (op) {
    case Op::sparsemax: return exact_sparsemax(x, temperature, bits);
    case Op::entmax15: return exact_entmax15(x, temperature, bits);
    case Op::entmax: return exact_entmax(x, params.alpha, temperature, bits);
    case Op::topk_softmax:
      if (params.k < 1) throw std::invalid_argument("exact_sparse: topk_softmax needs k >= 1");
      return exact_topk_softmax(x, static_cast<std::size_t>(params.k), temperature, bits);
    case Op::threshold_softmax: return exact_threshold_softmax(x, params.threshold, temperature, bits);
    default: break;  // the dense ops (op table: Reference::dense)
  }
  throw std::invalid_argument("exact_sparse: " + std::string(name(op)) +
                              " is not a sparse op (use exact_row)");
}

}  // namespace softcheck::oracle
