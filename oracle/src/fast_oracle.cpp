// The oracle's fast tier: the same shifted algorithm as exact_row (Blanchard,
// Higham & Higham's final form, REFERENCE.md "Softmax algorithms"), evaluated
// in x87 extended precision with a rigorous running error bound per element.
//
// Error model. long double on x86-64 has a 64-bit significand: u = 2^-64, and
// for every basic operation rounded to nearest with a normal result,
// |fl(a op b) - (a op b)| <= u |fl(a op b)| (half an ulp of the result, and
// ulp(y) <= 2u|y|). Every intermediate here stays in long double's normal
// range (exponents -16382..16383): the row entries are doubles, their
// differences are >= 2^-1074 or 0, quotients by a double temperature stay above
// 2^-2100, and exp is only evaluated down to e^-11000 ~ 2^-15870.
// First-order bounds are accumulated as written below; every bound is then
// multiplied by kSafe = 1 + 2^-20, which covers the second-order terms (each
// relative error involved is checked to be below 2^-30, so a product of two is
// below 2^-30 times either) and the rounding of the bound's own evaluation
// (at most n + 20 roundings of positive terms, relative error < 2^-40 for
// n <= 2^20). A row where a relative error exceeds 2^-30 is not `usable`.
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

namespace softcheck::oracle {

namespace detail {
void prepare_mpfr_thread();  // oracle.cpp
}

namespace {

static_assert(LDBL_MANT_DIG == 64, "the fast tier's bounds assume x87 extended precision (64-bit significand)");

using LD = long double;
constexpr LD u = 0x1p-64L;                 // unit roundoff of long double
constexpr LD kSafe = 1 + 0x1p-20L;         // second-order terms and bound evaluation, see above
constexpr LD kMaxRel = 0x1p-30L;           // larger relative errors: the row is not usable
constexpr LD kExpFloor = -11000;           // below: exp(d) < 2^-15868, represented as 0 +- kTinyAbs
constexpr LD kTinyAbs = 0x1p-15800L;
constexpr LD inf = std::numeric_limits<LD>::infinity();

// gamma_m = m u / (1 - m u) (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., Lemma 3.1).
constexpr LD gamma(int m) { return m * u / (1 - m * u); }

// 2^m as a long double, m in [-16382, 16383], built from its x87 fields
// (explicit integer bit, biased exponent): scalbnl costs more than the exp.
LD pow2l(int m) {
  unsigned char bytes[sizeof(LD)] = {};
  const std::uint64_t mant = std::uint64_t{1} << 63;
  const auto expo = static_cast<std::uint16_t>(m + 16383);
  std::memcpy(bytes, &mant, 8);
  std::memcpy(bytes + 8, &expo, 2);
  LD out;
  std::memcpy(&out, bytes, sizeof out);
  return out;
}

// 2^m as a double, m in [-1022, 1023].
double pow2d(int m) { return std::bit_cast<double>(static_cast<std::uint64_t>(m + 1023) << 52); }

// Nearest integer of |x| < 2^62 (any tie rule: callers only need an integer
// near x). Adding 1.5 * 2^63 leaves no fraction bits in the 64-bit significand.
LD near_int(LD x) { return (x + 0x1.8p63L) - 0x1.8p63L; }

// floor(log2 a) for a > 0, through the (fast) double conversion, corrected
// when rounding to double carried a into the next binade; every a below
// 2^-1000 gives -1001 (all callers clamp at emin >= -126 first).
int binade(LD a) {
  const double d = static_cast<double>(a);
  if (d < 0x1p-1000) return -1001;
  int e = static_cast<int>((std::bit_cast<std::uint64_t>(d) >> 52) & 0x7ff) - 1023;
  if (a < static_cast<LD>(pow2d(e))) --e;
  return e;
}

// Knuth's TwoSum: s = fl(a + b) and e with a + b = s + e exactly (round to
// nearest, no overflow; Knuth, TAOCP vol. 2, 4.2.2, Theorem B).
struct TwoSum {
  LD s, e;
};
TwoSum two_sum(LD a, LD b) {
  const LD s = a + b;
  const LD bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

// ---------------------------------------------------------------- exp

// Constants computed once with MPFR: 2^(j/32) rounded to nearest long double
// (relative error <= u), C1 = ln2/32 rounded to 40 bits (so k*C1 is exact for
// |k| < 2^24), C2 = ln2/32 - C1 rounded to long double, ln 2 rounded.
struct ExpTables {
  std::array<LD, 32> two_j32{};
  LD c1 = 0, c2 = 0, ln2 = 0;
  ExpTables() {
    mpfr_t t, l;
    mpfr_init2(t, 64);
    mpfr_init2(l, 256);
    for (int j = 0; j < 32; ++j) {
      mpfr_set_si(t, j, MPFR_RNDN);
      mpfr_div_2ui(t, t, 5, MPFR_RNDN);  // j/32, exact
      mpfr_exp2(t, t, MPFR_RNDN);
      two_j32[static_cast<std::size_t>(j)] = mpfr_get_ld(t, MPFR_RNDN);  // exact: 64 bits
    }
    mpfr_const_log2(l, MPFR_RNDN);
    mpfr_set(t, l, MPFR_RNDN);
    ln2 = mpfr_get_ld(t, MPFR_RNDN);
    mpfr_div_2ui(l, l, 5, MPFR_RNDN);  // ln2/32 at 256 bits
    mpfr_t c;
    mpfr_init2(c, 40);
    mpfr_set(c, l, MPFR_RNDN);
    c1 = mpfr_get_ld(c, MPFR_RNDN);
    mpfr_sub(l, l, c, MPFR_RNDN);  // exact at 256 bits
    mpfr_set(t, l, MPFR_RNDN);
    c2 = mpfr_get_ld(t, MPFR_RNDN);
    mpfr_clears(t, l, c, static_cast<mpfr_ptr>(nullptr));
  }
};

const ExpTables& tables() {
  static const ExpTables t;
  return t;
}

// Taylor coefficients 1/j!, j = 0..8, rounded to long double (relative error <= u).
constexpr std::array<LD, 9> kExpCoeff = {1.0L, 1.0L, 1.0L / 2, 1.0L / 6, 1.0L / 24, 1.0L / 120,
                                         1.0L / 720, 1.0L / 5040, 1.0L / 40320};

// Relative error of the polynomial part for |r| <= 0.011: Horner's rule with
// N = 8 has |p^ - p| <= gamma_2N sum |a_j||r|^j (Higham, eq. (5.3)) and the
// rounded coefficients add u sum |a_j||r|^j; sum |a_j||r|^j <= e^|r| and
// p(r) >= e^-|r|, so relative (gamma_16 + u) e^0.022 <= 1.0223 (gamma_16 + u).
// Truncation (Lagrange): |r|^9/9! e^|r|, relative to e^r: 0.011^9/9! e^0.022
// < 6.7e-24.
constexpr LD kExpPolyRel = 1.0223L * (gamma(16) + u) + 6.7e-24L;

struct Enclosed {
  LD v;
  LD rel;  // |v - exact| <= rel * |v|
};

// exp(t) for t in [kExpFloor, 0], as exp(r) 2^(j/32) 2^m with
// t = (32 m + j) ln2/32 + r, |r| <= ln2/64 (1 + tiny) < 0.011.
Enclosed exp_enclosure(LD t) {
  const ExpTables& tb = tables();
  const LD kf = near_int(t * (32 / tb.ln2));  // any integer works; only |r| matters
  const auto k = static_cast<long>(kf);
  const long j = k & 31;        // k mod 32 in 0..31 (two's complement)
  const long m = (k - j) / 32;  // exact
  const LD r1 = t - kf * tb.c1;  // kf*c1 exact: |k| < 2^19, c1 has 40 bits
  const LD kc2 = kf * tb.c2;
  const LD r = r1 - kc2;
  // Three roundings (r1, kc2, r) and the truncation of ln2/32 to c1 + c2
  // (|ln2/32 - c1 - c2| <= u |c2|): an absolute error of the reduced argument,
  // i.e. a relative error e^er - 1 <= er (1 + er) of exp(r).
  const LD er = u * (std::fabs(r1) + std::fabs(kc2) + std::fabs(r)) + std::fabs(kf) * u * std::fabs(tb.c2);
  if (std::fabs(r) + er > 0.011L) return {0, inf};  // cannot happen; keeps the bound honest
  LD p = kExpCoeff[8];
  for (int i = 7; i >= 0; --i) p = p * r + kExpCoeff[static_cast<std::size_t>(i)];
  const LD v = tb.two_j32[static_cast<std::size_t>(j)] * p * pow2l(static_cast<int>(m));  // scaling exact
  // table entry u, product u, polynomial, argument.
  return {v, (2 * u + kExpPolyRel + er * 1.0001L) * kSafe};
}

// ---------------------------------------------------------------- log1p

// 2 atanh(t) = log((1+t)/(1-t)) = 2t sum_{j>=0} t^2j / (2j+1) for |t| <= 0.2:
// w = t^2 <= 0.04, 15 terms leave w^15/(1-w)/31 < 3.6e-23 relative (the sum
// is >= 1). Horner on w with positive coefficients 1/(2j+1) (rounded: u):
// relative gamma_28 + u; w = t^2 carries 2 gamma_2 + u relative from t, which
// moves the sum by at most that times w S'(w)/S(w) <= 0.05.
constexpr int kAtanhTerms = 15;

Enclosed two_atanh_series(LD t, LD t_rel) {
  const LD w = t * t;
  LD s = 1.0L / (2 * (kAtanhTerms - 1) + 1);
  for (int j = kAtanhTerms - 2; j >= 0; --j) s = s * w + 1.0L / (2 * j + 1);
  const LD v = 2 * t * s;
  // d/dt 2 atanh t = 2/(1 - t^2) <= 2.084 while |2 atanh t| >= 2|t|: a
  // relative error t_rel of t is a relative error <= 1.042 t_rel of the result.
  const LD rel = 1.042L * t_rel + 0.05L * (2 * t_rel + u) + gamma(28) + u + u + 3.6e-23L;
  return {v, rel * kSafe};
}

// log1p(a) for a >= 0 given exactly, with an absolute error bound.
struct LogEnclosed {
  LD v, abs;
};

LogEnclosed log1p_enclosure(LD a) {
  if (a == 0) return {0, 0};
  if (a <= 0.5L) {
    // t = a/(2+a) in [0, 0.2]: two roundings, relative gamma_2.
    const LD t = a / (2 + a);
    const Enclosed e = two_atanh_series(t, gamma(2));
    return {e.v, e.rel * e.v};
  }
  // log(1+a) = m ln2 + log1p(g), 1+a = 2^m (1+g), g in [-0.25, 0.5): g = f - 1
  // is exact (Sterbenz), t = g/(2+g) in [-0.143, 0.2].
  const LD s = 1 + a;  // relative error u: log moves by <= u (1 + u)
  int e = 0;
  LD f = std::frexp(s, &e);  // [0.5, 1)
  if (f < 0.75L) f *= 2, e -= 1;
  const LD g = f - 1;
  const Enclosed lf = g == 0 ? Enclosed{0, 0} : two_atanh_series(g / (2 + g), gamma(2));
  const ExpTables& tb = tables();
  const LD mln2 = static_cast<LD>(e) * tb.ln2;  // ln2 rounded (u) and the product (u)
  const LD v = mln2 + lf.v;
  const LD abs = (1.0001L * u + 2.0001L * u * std::fabs(mln2) + lf.rel * std::fabs(lf.v) + u * std::fabs(v)) * kSafe;
  return {v, abs};
}

FastRow not_usable(RowStatus status) {
  FastRow row;
  row.status = status;
  row.usable = false;
  return row;
}

}  // namespace

// d_i = (x_i - x_k)/T      two roundings: |d^ - d| <= 2u|d^| (kSafe)
// e_i = exp(d_i)           exp_enclosure, plus the argument error: e^(Ed) - 1
// r = sum_{i != k} e_i     recursive summation with Higham's running bound
//                          (ASNA section 4.2): |r^ - r| <= sum |e^_i - e_i| + u sum_j |s^_j|
// s = 1 + r                one more rounding
// softmax_i = e_i / s      (e^/s^ - e/s) = (e^ - e)/s^ + (e/s)(s - s^)/s^, plus u
// log1p(r)                 log1p_enclosure, plus |r^ - r| / (1 + r^ - |r^ - r|)
// log_softmax_i = d_i - log1p(r), plus u
FastRow fast_row(std::span<const double> x, double temperature) {
  if (!std::isfinite(temperature) || !(temperature > 0))
    throw std::invalid_argument("fast_row: temperature must be finite and > 0");
  if (x.empty()) throw std::invalid_argument("fast_row: empty row");
  bool any_finite = false;
  for (double v : x) {
    if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) return not_usable(RowStatus::undefined);
    any_finite = any_finite || std::isfinite(v);
  }
  if (!any_finite) {
    FastRow row;
    row.status = RowStatus::all_masked;
    row.usable = true;
    return row;
  }
  const std::size_t n = x.size();
  const std::size_t k = static_cast<std::size_t>(std::max_element(x.begin(), x.end()) - x.begin());
  const LD xk = x[k], T = temperature;

  // MPFR's exponent range ends at 2^emin_min; exp(d) is 0 there below about
  // (emin_min - 2) ln2 ~ -3.2e18. 3% either side decides it whatever n.
  const LD mpfr_zero_edge = static_cast<LD>(mpfr_get_emin_min()) * 0.6931471805599453L;

  FastRow row;
  row.status = RowStatus::ok;
  row.usable = true;
  row.softmax.resize(n);
  row.softmax_err.resize(n);
  row.log_softmax.resize(n);
  row.log_softmax_err.resize(n);
  row.log_softmax_res.assign(n, 0);
  row.log_softmax_tight.assign(n, 0);
  row.softmax_zero.resize(n);
  row.log_softmax_zero.assign(n, ZeroState::positive);
  std::vector<LD> d(n), dErr(n);

  LD sum = 0, sum_err_terms = 0, sum_partials = 0;
  bool r_zero = true, r_unknown = false;  // no entry known non-zero in MPFR / one undecided
  for (std::size_t i = 0; i < n; ++i) {
    if (i == k) {
      d[i] = 0, dErr[i] = 0;
      row.softmax[i] = 1, row.softmax_err[i] = 0, row.softmax_zero[i] = ZeroState::positive;
      continue;
    }
    if (std::isinf(x[i])) {  // -inf: masked, exact
      d[i] = -inf, dErr[i] = 0;
      row.softmax[i] = 0, row.softmax_err[i] = 0, row.softmax_zero[i] = ZeroState::zero;
      continue;
    }
    // x_i - x_k is often exact in long double (TwoSum says when), and the
    // division is exact for T = 1: an exact d_i carries no error.
    const TwoSum diff = two_sum(static_cast<LD>(x[i]), -xk);
    const LD di = T == 1 ? diff.s : diff.s / T;
    const LD ed = ((diff.e == 0 ? 0 : u) + (T == 1 ? 0 : u)) * std::fabs(di) * kSafe;
    d[i] = di, dErr[i] = ed;
    row.softmax_zero[i] = di > 0.97L * mpfr_zero_edge   ? ZeroState::positive
                          : di < 1.03L * mpfr_zero_edge ? ZeroState::zero
                                                        : ZeroState::unknown;
    if (row.softmax_zero[i] == ZeroState::positive) r_zero = false;
    if (row.softmax_zero[i] == ZeroState::unknown) r_unknown = true;
    LD e, ee;
    if (di < kExpFloor) {
      e = 0, ee = kTinyAbs;
    } else {
      if (ed > kMaxRel) return not_usable(RowStatus::ok);
      const Enclosed ex = exp_enclosure(di);
      if (!(ex.rel <= kMaxRel)) return not_usable(RowStatus::ok);
      e = ex.v;
      ee = (ex.rel + ed * 1.0001L) * kSafe * ex.v;  // (1+rel) e^ed - 1, relative to e^ (see header)
    }
    row.softmax[i] = e, row.softmax_err[i] = ee;
    sum += e;
    sum_partials += sum;
    sum_err_terms += ee;
  }
  const LD r_err = (sum_err_terms + u * sum_partials) * kSafe;
  if (r_err > kMaxRel * (1 + sum)) return not_usable(RowStatus::ok);
  const LD s = 1 + sum;
  const LD s_err = (r_err + u * s) * kSafe;
  const LogEnclosed L = log1p_enclosure(sum);
  const LD L_err = (L.abs + r_err / (1 + sum - r_err)) * kSafe;

  // log_softmax_i = d_i - log1p(r) is exactly 0 in MPFR only where d_i = 0
  // (x_i = x_k) and MPFR's r is 0 (every other entry masked or below the edge).
  const ZeroState log_at_max = !r_zero ? ZeroState::positive : r_unknown ? ZeroState::unknown : ZeroState::zero;
  // One reciprocal instead of a division per element: y^ = fl(e^ fl(1/s^))
  // has relative error <= 2u (+u^2) against e^/s^; ee/s^ <= ee q (1 + 2u);
  // (e/s) |s - s^|/s^ <= (e^ + ee) K, K = s_err / ((s^ - s_err) s^).
  const LD q = 1 / s;
  const LD K = s_err / ((s - s_err) * s) * (1 + 8 * u);
  for (std::size_t i = 0; i < n; ++i) {
    // softmax
    const LD e = row.softmax[i], ee = row.softmax_err[i];
    if (std::isinf(d[i])) {
      row.log_softmax[i] = -inf, row.log_softmax_err[i] = 0;
      continue;  // softmax stays exactly 0
    }
    const LD y = e * q;
    const LD ey = (2 * u * y + ee * q + (e + ee) * K) * kSafe;
    row.softmax[i] = y, row.softmax_err[i] = ey;
    // log-softmax
    if (d[i] == 0) row.log_softmax_zero[i] = log_at_max;
    const TwoSum z2 = two_sum(d[i], -L.v);  // z + res = d^ - L^ exactly
    const LD z = z2.s;
    const LD tight = (dErr[i] + L_err) * kSafe;
    row.log_softmax[i] = z, row.log_softmax_res[i] = z2.e, row.log_softmax_tight[i] = tight;
    row.log_softmax_err[i] = (std::fabs(z2.e) + tight) * kSafe;
  }
  return row;
}

// ---------------------------------------------------------------- metrics

namespace {

// Correct rounding of a long double to format f (ties to even), as
// round_to_format in format.hpp: power-of-two scalings and nearbyint are exact
// in long double, so this is one rounding from v. Monotone in v.
LD round_ld(LD v, Format f) {
  if (!std::isfinite(v) || v == 0) return v;
  const FormatInfo fi = info(f);
  const int e = std::max(std::ilogb(v), fi.emin);
  const LD quantum = std::ldexp(1.0L, e - fi.precision + 1);
  const LD r = std::nearbyint(v / quantum) * quantum;
  if (std::fabs(r) > max_finite(f)) return std::copysign(inf, v);
  return r;
}

// ulp exponent q (ulp_T(v) = 2^q) of a magnitude, clamped as oracle::ulp
// does; 0 gives the subnormal quantum.
int ulp_exp(LD a, const FormatInfo& fi) {
  if (a == 0) return fi.emin - fi.precision + 1;
  return std::clamp(binade(a), fi.emin, fi.emax) - fi.precision + 1;
}

// t + tau + res - rad > 0, decided despite the rounding of the test itself:
// rest = (tau + res) - rad is off by <= 2u(|tau| + |res| + rad), t + rest by
// <= u|t + rest| more (first order; the factor 2 covers the rest).
bool certainly_positive(LD t, LD tau, LD res, LD rad) {
  const LD rest = (tau + res) - rad;
  const LD sum = t + rest;
  return sum > 2 * u * (std::fabs(tau) + std::fabs(res) + rad) + 2 * u * std::fabs(sum);
}

// round_T(c) for f32/f16/bf16 when it is the same for every c within rad of
// v + res; nullopt when that ball may touch the edge of a rounding cell or
// overflow. The candidate comes from the double nearest v (fast; possibly
// off), then is checked: the values that round to A = |candidate| are
// (A - below, A + above), above = Q/2 and below = Q/2, or Q/4 where A is a
// normal power of two (the binade below has half the quantum). The edges'
// distances to |v| are formed with TwoSum, so that a v exactly on a midpoint
// is decided by the sign of res. Strict inequalities leave ties out.
std::optional<double> decided_rounding(LD v, LD res, LD rad, const FormatInfo& fi, double maxf) {
  const double a = std::fabs(static_cast<double>(v));
  const int e = a == 0 ? fi.emin : std::max(a < 0x1p-1000 ? -1001 : binade(a), fi.emin);
  const double Q = pow2d(e - fi.precision + 1);
  const double A = ((a / Q + 0x1.8p52) - 0x1.8p52) * Q;  // a/Q < 2^26: exact integer rounding, ties to even
  if (A > maxf) return std::nullopt;
  const int eA = A == 0 ? fi.emin : std::max(binade(A), fi.emin);
  const LD QA = pow2d(eA - fi.precision + 1);
  const bool pow2 = A != 0 && A == pow2d(binade(A)) && binade(A) > fi.emin;
  // |center| = |v| + sr, sr = res with the sign of v (|res| < |v| when v != 0).
  const bool neg = v != 0 ? std::signbit(v) : std::signbit(res);
  const LD av = std::fabs(v), sr = neg ? -res : res;
  const TwoSum up = two_sum(static_cast<LD>(A) + QA / 2, -av);  // A + above - |v|
  if (!certainly_positive(up.s, up.e, -sr, rad)) return std::nullopt;
  if (A != 0) {
    const TwoSum down = two_sum(av, -(static_cast<LD>(A) - (pow2 ? QA / 4 : QA / 2)));  // |v| - (A - below)
    if (!certainly_positive(down.s, down.e, sr, rad)) return std::nullopt;
  }
  return neg ? -A : A;
}

// Herbie's ordinal of a value of f32/f16/bf16 (exact in a double), as
// softcheck::ordinal, without its library calls; throws like it for a
// non-value.
double fast_ordinal(double x, const FormatInfo& fi, double maxf) {
  const double a = std::fabs(x);
  const double per_binade = pow2d(fi.precision - 1);
  double m;
  if (std::isinf(a)) {
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
  return std::signbit(x) ? -m : m;
}

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
// always nullopt.
std::optional<FastRowError> compare_row_fast(std::span<const double> result, const FastRow& exact, Format f,
                                             Op op, double tolerance, unsigned reference_bits) {
  if (result.size() != exact.softmax.size() || exact.status != RowStatus::ok || !exact.usable)
    throw std::invalid_argument("compare_row_fast: needs a usable ok row of the same length");
  if (f == Format::f64) return std::nullopt;
  // The fast tier encloses softmax and log-softmax only; any other op (e.g.
  // sparsemax/entmax once Op has them) is the MPFR path's.
  if (op != Op::softmax && op != Op::log_softmax) return std::nullopt;
  const bool sm = op == Op::softmax;
  const auto& val = sm ? exact.softmax : exact.log_softmax;
  const auto& err = sm ? exact.softmax_err : exact.log_softmax_err;
  const std::size_t n = result.size();
  const LD uT = unit_roundoff(f);
  const FormatInfo fi = info(f);
  const double maxf = max_finite(f);
  // exact_row's values carry a few units of 2^-bits (oracle.hpp); the tight
  // log-softmax enclosure can be narrower than that, so it is widened to
  // cover MPFR's value, which is what the MPFR path rounds.
  if (reference_bits < 8 || reference_bits > 16000) throw std::invalid_argument("compare_row_fast: reference_bits");
  const LD ref_rel = pow2l(-static_cast<int>(reference_bits) + 2);

  FastRowError out;
  RowError& row = out.error;
  row.elements = n;
  out.ulp.assign(n, 0);
  out.ulp_err.assign(n, 0);
  out.finite.assign(n, 0);
  std::size_t first_broken = n, largest_index = 0;
  double largest = -1;
  LD max_abs_lo = 0, max_abs_hi = 0, g_lo = 0, g_hi = 0;
  auto broken = [&](std::size_t i, bool special) {
    (special ? row.special_mismatch : row.nonfinite)++;
    first_broken = std::min(first_broken, i);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const double r = result[i];
    const double r_ord = std::isnan(r) ? 0 : fast_ordinal(r, fi, maxf);  // throws when r is not a value of f
    const LD v = val[i];
    const LD E = err[i] == 0 ? 0 : (err[i] + 2 * u * std::fabs(v)) * kSafe + 0x1p-16000L;
    const LD lo = v - E, hi = v + E;
    if (sm) g_lo = std::max(g_lo, lo), g_hi = std::max(g_hi, hi);
    if (std::isinf(v)) {  // masked log-softmax entry, exact
      if (std::isinf(r) && std::signbit(r) == std::signbit(v)) {
        out.finite[i] = 1;
        ++row.measured;
        if (0 > largest) largest = 0, largest_index = i;
      } else {
        broken(i, true);
      }
      continue;
    }
    if (std::isnan(r)) {
      broken(i, false);
      continue;
    }
    if (std::isinf(r)) {
      const LD rlo = round_ld(lo, f), rhi = round_ld(hi, f);  // rare path
      if (rlo == r && rhi == r) {
        out.finite[i] = 1;
        ++row.measured;
        if (0 > largest) largest = 0, largest_index = i;
      } else if (rlo != r && rhi != r) {
        broken(i, false);
      } else {
        return std::nullopt;
      }
      continue;
    }
    // Both finite.
    const LD alo = lo <= 0 && hi >= 0 ? 0 : std::min(std::fabs(lo), std::fabs(hi));
    const LD ahi = std::max(std::fabs(lo), std::fabs(hi));
    // ulp_T(v) = 2^q, q non-decreasing in |v|: between q(alo) and q(ahi).
    // When they differ (v at a power of two, e.g. a softmax of exactly 1) the
    // error is still decided if it is tiny in either binade.
    const int qlo = ulp_exp(alo, fi), qhi = ulp_exp(ahi, fi);
    const LD D = std::fabs(static_cast<LD>(r) - v);
    const LD ED = E + u * D;
    const int qv = qlo == qhi ? qlo : ulp_exp(std::fabs(v), fi);
    const LD ulp = D * static_cast<LD>(pow2d(-qv));
    LD ulp_e;
    if (qlo == qhi) {
      ulp_e = ED * static_cast<LD>(pow2d(-qv)) + ulp * 0x1p-52L;  // + rounding to double
    } else {
      const LD ulp_lo = (D > ED ? D - ED : 0) * static_cast<LD>(pow2d(-qhi));
      const LD ulp_hi = (D + ED) * static_cast<LD>(pow2d(-qlo));
      ulp_e = std::max(ulp_hi - ulp, ulp - ulp_lo) + ulp * 0x1p-52L;
    }
    if (!(ulp_e <= tolerance)) return std::nullopt;
    const std::optional<double> rounded =
        sm ? decided_rounding(v, 0, E, fi, maxf)
           : decided_rounding(v, exact.log_softmax_res[i],
                              exact.log_softmax_tight[i] + ref_rel * std::fabs(v) + 0x1p-16000L, fi, maxf);
    if (!rounded) return std::nullopt;
    double rel;
    if (alo > 0) {
      const LD rl = D / std::fabs(v);
      // |rel - rl| <= (ED + rl E)/alo + 4u rl, compared without dividing
      if (!(ED + rl * E + rl * 4 * u * alo <= tolerance * uT * std::max<LD>(1, rl) * alo)) return std::nullopt;
      rel = static_cast<double>(rl);
    } else {
      const ZeroState z = sm ? exact.softmax_zero[i] : exact.log_softmax_zero[i];
      if (z == ZeroState::zero)
        rel = r == 0 ? 0 : std::numeric_limits<double>::infinity();
      else if (z == ZeroState::positive && r == 0)
        rel = 1;
      else
        return std::nullopt;
    }
    const double dist = std::fabs(r_ord - fast_ordinal(*rounded, fi, maxf));
    const double bits = dist == 0 ? 0 : dist == 1 ? 1 : std::log2(1.0 + dist);  // log2 of 1 and 2 are exact
    const double ulp_d = static_cast<double>(ulp);
    // Both this figure and compare_element's end as doubles: add this one's
    // conversion error and one double ulp for MPFR's rounding (at the bottom
    // of the double range the two roundings can differ by a subnormal even
    // when ulp_e is 0).
    const double err_d = static_cast<double>(ulp_e + std::fabs(static_cast<LD>(ulp_d) - ulp));
    const double ulp_e_d = err_d + (std::nextafter(ulp_d, INFINITY) - ulp_d) + (std::nextafter(err_d, INFINITY) - err_d);
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
    max_abs_lo = std::max(max_abs_lo, D > ED ? D - ED : 0);
    max_abs_hi = std::max(max_abs_hi, D + ED);
    out.max_ulp_err = std::max(out.max_ulp_err, ulp_e_d);
    if (ulp_d > largest) largest = ulp_d, largest_index = i;
  }
  row.worst_index = first_broken < n ? first_broken : largest_index;
  if (sm) {
    // max_j g_j lies in [g_lo, g_hi] (g_k >= 1/n, so g_lo > 0); MPFR rounds it to double.
    if (!(g_lo > 0)) return std::nullopt;
    const LD est = static_cast<LD>(row.max_abs) / (uT * static_cast<double>(g_lo + (g_hi - g_lo) / 2));
    const LD nlo = max_abs_lo / (uT * g_hi * (1 + 0x1p-52L)), nhi = max_abs_hi / (uT * g_lo * (1 - 0x1p-52L));
    if (!(nhi - nlo <= tolerance * std::max<LD>(1, est))) return std::nullopt;
    row.normwise = static_cast<double>(est);
  }
  return out;
}

}  // namespace softcheck::oracle
