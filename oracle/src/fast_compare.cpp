// The fast tiers' metric decision: compare_row_fast (fast_oracle.hpp) decides
// a kernel's error figures from a row's enclosures (fast_rows.cpp) when every
// value the exact row can take within them gives the same figures, to the
// stated tolerances, as compare_row against exact_row; otherwise the caller
// falls back to MPFR. Bounds are in fast_arith.hpp's error model; the double
// tier's common f32 case also runs on 4 lanes (fast_vectors.hpp). Compiled
// with -O3 (oracle/CMakeLists.txt): this is the run's hot loop.
#include "softcheck/fast_oracle.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "double_double.hpp"
#include "fast_arith.hpp"
#include "fast_vectors.hpp"

namespace softcheck::oracle {

namespace detail {
bool& fast_tier_keeps_preparations() {
  thread_local bool keep = true;
  return keep;
}
}  // namespace detail

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
  // a/Q < 2^26: the integer rounding is exact, ties to even. An a exactly on
  // a midpoint (log-softmax: an f32 difference of 25 bits minus a tiny log1p)
  // takes the neighbour on the center's side instead: the one the checks
  // below can confirm (ties to even would be refused whenever the center lies
  // the other way). The center is |v| + sr; a is |v| rounded to a double (the
  // extended tier's v has 64 bits), so its side of a is that of
  // (|v| - a) + sr: the difference exact (Sterbenz), the sum's sign exact.
  const double t = a / Q;
  double A = ((t + 0x1.8p52) - 0x1.8p52) * Q;
  const R off = (av - static_cast<R>(a)) + sr;
  if (t - std::floor(t) == 0.5 && off != 0) A = (off < 0 ? std::floor(t) : std::ceil(t)) * Q;
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

// An element whose figure the tier knows exactly, MPFR's too: the value is
// exact (radius 0: the tiers give that only where MPFR's value is the same
// number, a softmax of 1 or 1/2^k, a log-softmax of 0), r - v has no rounding
// in R, and the figure |r - v| / 2^q is a normal double (or 0). MPFR forms
// |r - v| exactly in its 256 bits, scales it exactly and converts a double
// exactly: its figure is this one, with no uncertainty. Without this, an
// error of exactly 1/2 or 1 ulp (a histogram bin edge) is undecided.
template <class R>
bool exact_difference(double r, R v) {
  if constexpr (is_dd<R>)
    return v.lo == 0 && exact_sum(r, -v.hi).lo == 0;
  else
    return two_sum(static_cast<R>(r), -v).e == 0;
}
[[gnu::always_inline]] inline bool exact_figure(double f) {
  return f == 0 || (f >= std::numeric_limits<double>::min() && f < std::numeric_limits<double>::infinity());
}

// round_T(c) for every c within rad of v + res, or nullopt: f64 by the
// double-double rule (no residual there); f32 in the double tier first by
// the hardware conversion, and where that is undecided (v on or a hair off
// a midpoint) by the general rule, which weighs res exactly.
template <class R>
[[gnu::always_inline]] inline std::optional<double> decided_round(R v, R res, R rad, bool f32_fast, const FormatInfo& fi, double maxf) {
  if constexpr (is_dd<R>) {
    return decided_rounding_f64(v, rad);
  } else {
    std::optional<double> rounded;
    if (f32_fast) rounded = decided_rounding_f32(static_cast<double>(v), static_cast<double>(res), static_cast<double>(rad));
    if (!rounded) rounded = decided_rounding<R>(v, res, rad, fi, maxf);
    return rounded;
  }
}

// The relative error |r - v| / |v| (D = |r - v| estimated, ED its bound, E
// v's radius, alo the smallest |v| over the enclosure): to within
// tolerance u_T max(1, rel) when 0 is outside the enclosure; with 0 inside,
// from MPFR's zero state (exactly 0: rel 0 or inf; non-zero with r = 0:
// exactly 1); nullopt when undecided.
template <class R>
[[gnu::always_inline]] inline std::optional<double> decided_rel(double r, R v, R D, R E, R ED, R alo, ZeroState zero, double tolerance, R uT) {
  constexpr R u = Arith<R>::u;
  if (alo > 0) {
    const R rl = D / fabs(v);
    // |rel - rl| <= (ED + rl E)/alo + 4u rl, compared without dividing
    if (!(ED + rl * E + rl * 4 * u * alo <= tolerance * uT * std::max<R>(1, rl) * alo)) return std::nullopt;
    return static_cast<double>(rl);
  }
  if (zero == ZeroState::zero) return r == 0 ? 0 : std::numeric_limits<double>::infinity();
  if (zero == ZeroState::positive && r == 0) return 1.0;
  return std::nullopt;
}

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
  bool d_exact;  // BasicFastRow::d_exact: the log-softmax's MPFR term is ref_L, not ref_rel |v|
  double ref_L;
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
           four = splat(4), min_normal = splat(std::numeric_limits<double>::min()), ref_L = splat(in.ref_L);
  const DistanceBits& table = distance_bits();
  const vd table_end = splat(static_cast<double>(table.size()));
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
    const vd rad = in.sm ? E : load(in.tight + i) + (in.d_exact ? ref_L : ref_rel * vabs(v)) + slack;
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
    // exact_figure's rule: radius 0, r - v without rounding (TwoSum's error
    // 0), the figure 0 or normal.
    const vd diff = r - v, diff_b = diff - r;
    const vl known_exactly = (E == zero) & (((r - (diff - diff_b)) + (-v - diff_b)) == zero) &
                     ((ulp_d == zero) | (ulp_d >= min_normal));
    const vd ulp_e_d = known_exactly ? zero : err_d + gap_up(ulp_d) + gap_up(err_d);
    store(in.ulp + i, ok ? ulp_d : zero);
    store(in.ulp_err + i, ok ? ulp_e_d : zero);
    const vd dist_ok = ok ? dist : zero;
    // bits_of_distance: below the table's end (as good kernels' distances
    // are) the entries by an int32 index, which converts in one instruction
    // where size_t's takes several.
    vd bits;
    if (!all_lanes(dist_ok < table_end)) {  // (a NaN, never here, would take the scalar rule too)
      for (std::size_t l = 0; l < L; ++l) bits[l] = bits_of_distance(dist_ok[l], table);
    } else {
      for (std::size_t l = 0; l < L; ++l) bits[l] = table[static_cast<std::size_t>(static_cast<std::int32_t>(dist_ok[l]))];
    }
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
// A scalar output (lse, entropy), Metric::absolute: the element rule's tests
// on its one value v in [v - err, v + err], its figure |r - v| / u_T.
template <class R>
bool compare_scalar_fast(double r, R v, R err, ZeroState zero, Format f, FastRowError& out, double tolerance,
                         unsigned reference_bits) {
  constexpr R u = Arith<R>::u;
  constexpr R kS = kSafe<R>;
  if ((f == Format::f64) != is_dd<R> || !arithmetic_as_assumed<R>()) return false;
  if (reference_bits < 8 || reference_bits > 16000) throw std::invalid_argument("compare_row_fast: reference_bits");
  const FormatInfo fi = info(f);
  const double maxf = max_finite(f);
  const R uT = unit_roundoff(f);
  // A result that is not a value of f is the caller's error, as in compare_row.
  if (f == Format::f32) {
    if (!std::isnan(r) && static_cast<double>(static_cast<float>(r)) != r)
      throw std::invalid_argument("compare_row_fast: the result is not a value of format f32");
  } else if (f != Format::f64 && !std::isnan(r)) {
    (void)fast_ordinal(r, fi, maxf);
  }
  if (!isfinite(v)) return false;
  if (std::isnan(r)) {  // class nonfinite against a finite exact value (compare_element): counted, not measured
    out.error = RowError{};
    out.error.elements = 1;
    out.error.nonfinite = 1;
    out.max_ulp_err = 0;
    out.ulp.assign(1, 0.0);
    out.ulp_err.assign(1, 0.0);
    out.finite.assign(1, 0);
    return true;
  }
  if (std::isinf(r)) return false;  // the correctly rounded overflow or not: MPFR decides
  const R ref_rel = Arith<R>::pow2(std::max(-static_cast<int>(reference_bits) + 2, Arith<R>::lowest_exp));
  const R E = err == 0 ? R(0) : (err + 2 * u * fabs(v)) * kS + Arith<R>::slack;
  const R lo = v - E, hi = v + E;
  const R alo = lo <= 0 && hi >= 0 ? 0 : std::min(fabs(lo), fabs(hi));
  const R D = fabs(static_cast<R>(r) - v);
  const R ED = E + u * D;
  const R fig = times_pow2(D, fi.precision);  // D / u_T, exact
  const R fig_e = times_pow2(ED, fi.precision) + fig * R(0x1p-52);
  if (!(fig_e <= tolerance * std::max<R>(1, fig * R(0x1p-20)))) return false;
  const R rad = E + ref_rel * fabs(v) + Arith<R>::slack;
  const std::optional<double> rounded =
      decided_round(v, R(0), rad, f == Format::f32 && std::is_same_v<R, double>, fi, maxf);
  if (!rounded) return false;
  const std::optional<double> rel_d = decided_rel(r, v, D, E, ED, alo, zero, tolerance, uT);
  if (!rel_d) return false;
  const double rel = *rel_d;
  const double dist = is_dd<R>        ? f64_ordinal_distance(r, *rounded)
                      : r == *rounded ? 0
                                      : fabs(fast_ordinal(r, fi, maxf) - fast_ordinal(*rounded, fi, maxf));
  const double bits = bits_of_distance(dist);
  const double fig_d = static_cast<double>(fig);
  const double err_d = static_cast<double>(fig_e + fabs(static_cast<R>(fig_d) - fig));
  // compare_element forms this figure as |r - v| rounded to a double, then
  // divided by u_T: below 2^-1022 that double is subnormal, up to 2^-1074
  // off, so MPFR's figure can be 2^-1074 / u_T from the exact one.
  const double fig_e_d = err_d + gap_up(fig_d) + gap_up(err_d) + std::ldexp(1.0, fi.precision - 1074);
  out.error = RowError{};
  RowError& row = out.error;
  row.elements = 1;
  row.measured = 1;
  row.sum_ulp = row.max_ulp = fig_d;
  row.sum_bits = row.max_bits = bits;
  row.max_rel = rel;
  row.max_abs = static_cast<double>(D);
  row.worst_index = 0;
  out.max_ulp_err = fig_e_d;
  out.ulp.assign(1, fig_d);
  out.ulp_err.assign(1, fig_e_d);
  out.finite.assign(1, 1);
  return true;
}

template <class R>
bool compare_row_fast(std::span<const double> result, const BasicFastRow<R>& exact, Format f, OutputKind kind,
                      FastRowError& out, double tolerance, unsigned reference_bits) {
  constexpr R u = Arith<R>::u;
  constexpr R kS = kSafe<R>;
  if (kind == OutputKind::log_sum_exp || kind == OutputKind::entropy) {
    if (result.size() != 1 || exact.status != RowStatus::ok || !exact.usable)
      throw std::invalid_argument("compare_row_fast: a scalar output needs one value and a usable ok row");
    R v, err;
    ZeroState zero;
    if (!scalar_enclosure(exact, kind, v, err, zero)) return false;
    return compare_scalar_fast(result[0], v, err, zero, f, out, tolerance, reference_bits);
  }
  if (result.size() != exact.softmax.size() || exact.status != RowStatus::ok || !exact.usable)
    throw std::invalid_argument("compare_row_fast: needs a usable ok row of the same length");
  // f64 results need the exact value to 2^-63 relative: the DD tier's, and
  // only its.
  if ((f == Format::f64) != is_dd<R>) return false;
  // The fast tiers enclose softmax and log-softmax values only (a dense op's
  // row output; the caller knows which ops have one).
  if (kind != OutputKind::probabilities && kind != OutputKind::log_probabilities) return false;
  if (!arithmetic_as_assumed<R>()) return false;
  const bool sm = kind == OutputKind::probabilities;
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
  // MPFR's log-softmax off the exact one, when every d_i is exact: by its
  // log1p(r)'s error alone (BasicFastRow::d_exact; MPFR's d_i exact at 64
  // bits and more, round to odd from 55); twice the bound, for margin.
  const bool d_exact = exact.d_exact && reference_bits >= 64;
  const R ref_L = ref_rel * (2 * exact.log1p_r_hi);

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
  // What an element's rule needs of the exact row alone, not of the result:
  // its radius, the range of ulp exponents over its enclosure, and round_T
  // decided over the ball (computed before the result's checks that may give
  // the row up: a pure function, only its cost moves).
  struct Prepared {
    R E{}, alo{};
    int qlo = 0, qhi = 0, qv = 0;
    std::optional<double> rounded;
    bool tiny = false;     // an f64 softmax below the DD tier's exp floor, compared as 0
    bool give_up = false;  // undecidable whatever the result
  };
  const auto prepare = [&](std::size_t i, R& lo, R& hi) -> Prepared {
    Prepared p;
    const R v = val[i];
    // Below the DD tier's exp floor a softmax entry is kept as 0 +- 2^-865,
    // far wider than f64's subnormal ulp. Its log-softmax enclosure bounds it
    // better (softmax = exp(log-softmax)): below e^-760 < 2^-1096 it is
    // (0, 2^-1096), which rounds to 0 and is under 2^-22 ulp of f64 from 0.
    // Such an entry is compared as exactly 0 with that much added to its ULP
    // uncertainty (and 2^-1074 to its absolute one); its relative error
    // follows from the zero state as for any 0.
    if constexpr (is_dd<R>)
      if (sm && v == 0 && err[i] != 0) {
        if (!(exact.log_softmax[i] + exact.log_softmax_err[i] < R(-760))) {
          p.give_up = true;
          return p;
        }
        p.tiny = true;
      }
    p.E = err[i] == 0 || p.tiny ? R(0) : (err[i] + 2 * u * fabs(v)) * kS + Arith<R>::slack;
    lo = v - p.E, hi = v + p.E;
    if (isinf(v)) return p;  // a masked log-softmax entry: exact
    p.alo = lo <= 0 && hi >= 0 ? 0 : std::min(fabs(lo), fabs(hi));
    const R ahi = std::max(fabs(lo), fabs(hi));
    // ulp_T(v) = 2^q, q non-decreasing in |v|: between q(alo) and q(ahi).
    // When they differ (v at a power of two, e.g. a softmax of exactly 1) the
    // error is still decided if it is tiny in either binade.
    p.qlo = ulp_exp(p.alo, fi), p.qhi = ulp_exp(ahi, fi);
    p.qv = p.qlo == p.qhi ? p.qlo : ulp_exp(fabs(v), fi);
    // The radius of the value round_T is decided for: softmax's enclosure, or
    // log-softmax's tight one around value + residual, widened to cover
    // MPFR's value (see ref_rel).
    const R rad = sm ? p.E : exact.log_softmax_tight[i] + (d_exact ? ref_L : ref_rel * fabs(v)) + Arith<R>::slack;
    const R res = sm ? R(0) : exact.log_softmax_res[i];
    p.rounded = decided_round(v, res, rad, f32_fast, fi, maxf);
    return p;
  };
  // f64 results: the DD row's preparations, formed once per filling of the
  // row and output and kept for the next result judged against it (the
  // quick suite judges 6 f64 probability rows and 3 log-probability rows on
  // each exact row), with the row's g_lo and g_hi.
  const std::vector<Prepared>* prepared = nullptr;
  if constexpr (is_dd<R>) {
    struct Kept {
      std::uint64_t serial = 0;
      unsigned reference_bits = 0;
      std::vector<Prepared> elements;
      R g_lo{}, g_hi{};
    };
    thread_local std::array<Kept, 2> kept;  // probabilities, log-probabilities
    Kept& k = kept[sm ? 0 : 1];
    if (exact.serial != 0 && detail::fast_tier_keeps_preparations()) {
      if (k.serial != exact.serial || k.reference_bits != reference_bits || k.elements.size() != n) {
        k.serial = 0;
        k.elements.resize(n);
        k.g_lo = k.g_hi = R(0);
        for (std::size_t i = 0; i < n; ++i) {
          R lo, hi;
          k.elements[i] = prepare(i, lo, hi);
          if (k.elements[i].give_up) break;  // the row is given up at i or before
          if (sm) k.g_lo = std::max(k.g_lo, lo), k.g_hi = std::max(k.g_hi, hi);
        }
        k.serial = exact.serial;
        k.reference_bits = reference_bits;
      }
      prepared = &k.elements;
      if (sm) g_lo = k.g_lo, g_hi = k.g_hi;
    }
  }
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
    Prepared fresh;
    if (prepared == nullptr) {
      R lo, hi;
      fresh = prepare(i, lo, hi);
      if (sm && !fresh.give_up) g_lo = std::max(g_lo, lo), g_hi = std::max(g_hi, hi);
    }
    const Prepared& p = prepared != nullptr ? (*prepared)[i] : fresh;
    if (p.give_up) return false;
    const bool tiny = p.tiny;
    const R E = p.E;
    if (isinf(v)) {  // masked log-softmax entry, exact; radius inf: f64 overflows there (fast_rows.cpp)
      if (isinf(r) && signbit(r) == signbit(v)) {
        out.finite[i] = 1;
        ++row.measured;
        if (0 > largest) largest = 0, largest_index = i;
      } else if (isinf(err[i])) {
        return false;  // a finite or NaN r against a finite exact value: MPFR's to measure
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
      const R rlo = round_ld(v - E, f), rhi = round_ld(v + E, f);  // rare path: the enclosure's ends
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
    const R alo = p.alo;
    const int qlo = p.qlo, qhi = p.qhi, qv = p.qv;
    const R D = fabs(static_cast<R>(r) - v);
    const R ED = E + u * D;
    // The figure's estimate. In the extended tier a log-softmax entry is
    // v + res to within its tight radius (and MPFR's ref_rel), so
    // |r - v - res| is known to that and its own two roundings, without E's
    // 2u|v|: what decides a figure beside a histogram bin edge, an f32 result
    // half an ulp from an x_i - x_k that is a midpoint, log1p(r) far below it.
    R Df = D, EDf = ED;
    if constexpr (std::is_same_v<R, long double>)
      if (!sm && qlo == qhi) {
        const TwoSum<R> rz = two_sum(static_cast<R>(r), -v);  // r - v exactly
        const R D2 = fabs((rz.s - exact.log_softmax_res[i]) + rz.e);
        const R ED2 = (exact.log_softmax_tight[i] + ref_rel * fabs(v) + 4 * u * (D2 + u * fabs(rz.s))) * kS +
                      Arith<R>::slack;
        if (ED2 < ED) Df = D2, EDf = ED2;
      }
    const R ulp = times_pow2(Df, -qv);
    R ulp_e, fig_e = 0;  // fig_e: |figure - ulp| for MPFR's exact figure (one binade)
    if (qlo == qhi) {
      fig_e = times_pow2(EDf, -qv);
      ulp_e = fig_e + ulp * R(0x1p-52);  // + rounding to double
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
    const std::optional<double> rounded = p.rounded;
    if (!rounded) return false;
    const ZeroState z = sm ? exact.softmax_zero[i] : exact.log_softmax_zero[i];
    const std::optional<double> rel_d = decided_rel(r, v, D, E, ED, alo, z, tolerance, uT);
    if (!rel_d) return false;
    const double rel = *rel_d;
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
    const bool known_exactly = E == 0 && !tiny && exact_difference(r, v) && static_cast<R>(ulp_d) == ulp && exact_figure(ulp_d);
    double ulp_e_d = known_exactly ? 0.0 : err_d + gap_up(ulp_d) + gap_up(err_d);
    if constexpr (std::is_same_v<R, long double>) {
      // MPFR's figure is a double rounded to nearest from within fig_e of
      // ulp: between the roundings of the two ends (widened by 4u for their
      // own rounding here), 0 apart when both give ulp_d.
      if (!known_exactly && qlo == qhi && !tiny) {
        const double lo_d = static_cast<double>(std::max<R>(0, (ulp - fig_e) * (1 - 4 * u)));
        const double hi_d = static_cast<double>((ulp + fig_e) * (1 + 4 * u));
        const double span = std::max(ulp_d - lo_d, hi_d - ulp_d);  // each exact by Sterbenz, or rounded:
        ulp_e_d = std::min(ulp_e_d, span == 0 ? 0.0 : span + gap_up(span));
      }
    }
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
                      exact.log_softmax_res.data(), (sm ? exact.softmax_zero : exact.log_softmax_zero).data(), n, sm, tolerance, uT, ref_rel, maxf,
                      d_exact, ref_L, fi, out.ulp.data(),
                      out.ulp_err.data(), out.finite.data(), bits.data()},
                     lanes);
      // The sums in locals (row's would go through memory on every element:
      // the stores to out's vectors may alias it), handed to element() and
      // back around the elements the lanes left: the same additions in the
      // same order.
      const double* ulp = out.ulp.data();
      const unsigned char* finite = out.finite.data();
      const double* bit = bits.data();
      double sum_ulp = row.sum_ulp, sum_bits = row.sum_bits;
      for (std::size_t i = 0; i < n; ++i) {
        if (finite[i]) {
          sum_ulp += ulp[i];
          sum_bits += bit[i];
        } else {
          row.sum_ulp = sum_ulp, row.sum_bits = sum_bits;
          if (!element(i)) return false;
          sum_ulp = row.sum_ulp, sum_bits = row.sum_bits;
        }
      }
      row.sum_ulp = sum_ulp, row.sum_bits = sum_bits;
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
                                             OutputKind kind, double tolerance, unsigned reference_bits) {
  FastRowError out;
  if (!compare_row_fast(result, exact, f, kind, out, tolerance, reference_bits)) return std::nullopt;
  return out;
}

template bool compare_scalar_fast(double, long double, long double, ZeroState, Format, FastRowError&, double, unsigned);
template bool compare_scalar_fast(double, double, double, ZeroState, Format, FastRowError&, double, unsigned);
template bool compare_scalar_fast(double, DD, DD, ZeroState, Format, FastRowError&, double, unsigned);
template bool compare_row_fast(std::span<const double>, const FastRow&, Format, OutputKind, FastRowError&, double, unsigned);
template bool compare_row_fast(std::span<const double>, const DoubleFastRow&, Format, OutputKind, FastRowError&, double,
                               unsigned);
template std::optional<FastRowError> compare_row_fast(std::span<const double>, const FastRow&, Format, OutputKind, double,
                                                      unsigned);
template std::optional<FastRowError> compare_row_fast(std::span<const double>, const DoubleFastRow&, Format, OutputKind,
                                                      double, unsigned);
template bool compare_row_fast(std::span<const double>, const DDFastRow&, Format, OutputKind, FastRowError&, double,
                               unsigned);
template std::optional<FastRowError> compare_row_fast(std::span<const double>, const DDFastRow&, Format, OutputKind, double,
                                                      unsigned);

template <class R>
bool ulp_exponents(const BasicFastRow<R>& row, OutputKind kind, Format f, bool at_one, std::vector<long>& out,
                   unsigned bits) {
  static_assert(std::is_same_v<R, double> || std::is_same_v<R, DD>);
  // A tier's number as a double-word hi + lo (a double's lo is 0).
  const auto words = [](const R& a) {
    if constexpr (std::is_same_v<R, DD>)
      return a;
    else
      return DD{a, 0.0};
  };
  if (row.status != RowStatus::ok || !row.usable) return false;
  if (kind != OutputKind::probabilities && kind != OutputKind::log_probabilities) return false;
  const bool probabilities = kind == OutputKind::probabilities;
  const std::vector<R>& value = probabilities ? row.softmax : row.log_softmax;
  const std::vector<R>& err = probabilities ? row.softmax_err : row.log_softmax_err;
  const FormatInfo fi = info(f);
  const double smallest_normal = exact_pow2(fi.emin);
  // floor(log2 m) clamped to [emin, emax] (0 and subnormals: emin), of
  // max(1, m) with at_one: non-decreasing in m, so equal at an interval's
  // ends means constant over it.
  const auto binade = [&](double m) -> long {
    if (at_one) m = std::max(1.0, m);
    if (!(m >= smallest_normal)) return fi.emin;
    return std::clamp<long>(std::ilogb(m), fi.emin, fi.emax);
  };
  // Bounds [lo, hi] of |v| for a value enclosed as v +- e: |v.hi| -+ r, the
  // low word folded into the radius r, with outward margins of a relative
  // 2^-50 (each of the few roundings here is 2^-53 of its own result: one
  // subtraction, so no cancellation to outgrow it; MPFR's rounding of the
  // value at its working precision is far less) and 2^-1070 for the
  // subnormal range.
  struct Magnitude {
    double lo, hi;
  };
  constexpr double up = 1 + 0x1p-50, down = 1 - 0x1p-50, floor_abs = 0x1p-1070;
  const auto magnitude = [&](DD v, DD e) {
    const double m = std::fabs(v.hi);
    const double r = (std::fabs(v.lo) + std::fabs(e.hi) + std::fabs(e.lo)) * up + floor_abs;
    return Magnitude{std::max(0.0, (m - r) * down - floor_abs), (m + r) * up + floor_abs};
  };
  // A softmax entry near 1 (the row's maximum holds most of the mass): its
  // enclosure reaches past 1, its log-softmax l = -log1p(r) decides. |l|
  // below 2^-(bits+3) leaves MPFR's entry exactly 1 (its sum s = 1 + r
  // rounds to within 2r of 1, and e_i / s to 1 at `bits` bits); |l| in
  // (2^-(bits-4), 1/2) leaves it in [0.6, 1 - 2^-bits], binade -1.
  const int b_bits = static_cast<int>(std::min(bits, 1000u));
  const double one_in_mpfr = std::ldexp(1.0, -b_bits - 3), below_one_in_mpfr = std::ldexp(1.0, -b_bits + 4);
  out.resize(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    const DD v = words(value[i]), e = words(err[i]);
    const DD l = words(row.log_softmax[i]), l_err = words(row.log_softmax_err[i]);
    if (std::isinf(v.hi)) {  // a masked entry's -inf (radius 0), or d_i past f64's range (radius inf)
      if (v.hi > 0 || probabilities || e.hi != 0) return false;
      out[i] = ulp_exponent_infinite;
      continue;
    }
    if (!std::isfinite(v.hi) || !std::isfinite(v.lo) || !std::isfinite(e.hi) || !std::isfinite(e.lo)) return false;
    // l_i = 0 exactly (d_i = 0, r = 0): p_i = 1 and l_i = 0 in MPFR too; or
    // l_i so close to 0 that MPFR's p_i is 1.
    const bool log_zero = row.log_softmax_zero[i] == ZeroState::zero;
    const Magnitude l_abs = magnitude(l, l_err);
    if (log_zero || (probabilities && l_abs.hi < one_in_mpfr)) {
      out[i] = binade(probabilities ? 1.0 : 0.0) - fi.precision + 1;
      continue;
    }
    if (probabilities && l_abs.hi < 0.5 && l_abs.lo > below_one_in_mpfr) {
      out[i] = binade(0.75) - fi.precision + 1;
      continue;
    }
    if (e.hi == 0 && e.lo == 0 && v.lo == 0) {  // exact: a double, MPFR's value too
      out[i] = binade(std::fabs(v.hi)) - fi.precision + 1;
      continue;
    }
    // A softmax entry whose enclosure is coarse (0 +- the tier's exp floor):
    // p = exp(l) is in binade floor(l / ln 2), which l's enclosure may decide
    // (a margin of 2^-20 in log2 p, far beyond every rounding here and MPFR's).
    if (probabilities) {
      const double t_lo = -l_abs.hi / std::numbers::ln2, t_hi = -l_abs.lo / std::numbers::ln2;
      const double margin = 0x1p-20 + std::fabs(t_lo) * 0x1p-40;
      const auto clamped = [&](double t) {
        const long b = std::clamp<long>(static_cast<long>(std::max(std::floor(t), -1e9)), fi.emin, fi.emax);
        return at_one ? std::max(0L, b) : b;
      };
      const long b = clamped(t_lo - margin);
      if (std::isfinite(t_lo) && b == clamped(t_hi + margin)) {
        out[i] = b - fi.precision + 1;
        continue;
      }
    }
    const Magnitude v_abs = magnitude(v, e);
    if (!std::isfinite(v_abs.hi)) return false;
    const long b = binade(v_abs.lo);
    if (b != binade(v_abs.hi)) return false;
    out[i] = b - fi.precision + 1;
  }
  return true;
}

template bool ulp_exponents(const DoubleFastRow&, OutputKind, Format, bool, std::vector<long>&, unsigned);
template bool ulp_exponents(const DDFastRow&, OutputKind, Format, bool, std::vector<long>&, unsigned);

}  // namespace softcheck::oracle
