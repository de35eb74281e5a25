// The fast tiers' row evaluation: fast_row, double_fast_row and dd_fast_row
// (fast_oracle.hpp), one template over the arithmetic R. The algorithm is
// exact_row's (REFERENCE.md "Softmax algorithms"), the error model
// fast_arith.hpp's, exp and log1p fast_enclosures.hpp's; the double tier's
// hot loops also run on 4 lanes (fast_vectors.hpp). Compiled with -O3
// (oracle/CMakeLists.txt): this is the run's hot loop.
#include "softcheck/fast_oracle.hpp"

#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "double_double.hpp"
#include "fast_arith.hpp"
#include "fast_enclosures.hpp"
#include "fast_vectors.hpp"

namespace softcheck::oracle {

namespace detail {
int& fast_tier_vectors() {
  thread_local int path = 0;
  return path;
}
}  // namespace detail

namespace {

namespace vec {

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

// Every entry equal to the maximum x_k or one whose softmax MPFR has as
// exactly 0 (masked, or exp(d_i) below MPFR's exponent range: the all_equal
// family, benchdnn's ties beside f64-lowest entries): MPFR's softmax is
// exactly 1/m on the m maxima (exp(0) = 1, a sum of m ones and zeros). For m
// a power of two that value is a binade edge, where an enclosure of any
// radius leaves the ulp of a result off it undecided by a factor of 2: the
// tier holds it exactly instead.
template <class R>
void exact_uniform_softmax(std::span<const double> x, double xk, BasicFastRow<R>& row) {
  std::size_t m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] == xk) ++m;
    else if (row.softmax_zero[i] != ZeroState::zero) return;
  }
  if (!std::has_single_bit(m) || m > (std::size_t{1} << 53)) return;  // 1/m inexact: the enclosure stands
  const R v = Arith<R>::pow2(-std::countr_zero(m));
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] == xk) row.softmax[i] = v, row.softmax_err[i] = 0;
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
  static std::atomic<std::uint64_t> fillings{0};
  row.serial = ++fillings;
  row.status = RowStatus::ok;
  row.usable = true;
  row.lse_usable = false;
  row.d_exact = false;
  row.log1p_r_hi = 0;
  row.lse_zero = row.entropy_zero = ZeroState::unknown;
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
    if constexpr (is_dd<R>) {
      // (x_i - x_k) / T beyond 2^1024 (1 + 2^-50) (an f64 lowest entry, T < 1):
      // exp is exactly 0 in MPFR, and the log-softmax, below d_i, rounds to
      // -inf in f64. Held as -inf with radius +inf, the tier's mark for "f64
      // overflows here"; compare_row_fast decides only an r of -inf on it.
      if (T != 1 && diff.s < 0 &&
          static_cast<long double>(diff.s.hi) / temperature < -0x1p1024L * (1 + 0x1p-50L)) {
        d[i] = -inf<R>, dErr[i] = inf<R>;
        row.softmax[i] = 0, row.softmax_err[i] = 0, row.softmax_zero[i] = ZeroState::zero;
        return true;
      }
    }
    // A quotient the tier's arithmetic cannot form (e.g. the double-double
    // division by a temperature near DBL_MAX gives NaN) leaves the row to MPFR.
    if (!isfinite(di)) return false;
    const R ed = ((diff.e == 0 ? R(0) : u) + (T == 1 ? R(0) : u)) * fabs(di) * kS;
    if constexpr (is_dd<R>) {
      // Beyond the tier's relative model (2^900) below the maximum, e.g. an
      // f64 lowest entry (benchdnn's rows): exp(d_i) is exactly 0 in MPFR,
      // d_i being far below its zero edge, so the entry's softmax is exactly
      // 0 and adds nothing to r, as a masked entry; its log-softmax
      // d_i - log1p(r) is formed below like any other (veltkamp_split takes
      // words up to DBL_MAX).
      if (di < -R(A::max_quotient)) {
        d[i] = di, dErr[i] = ed;
        row.softmax[i] = 0, row.softmax_err[i] = 0, row.softmax_zero[i] = ZeroState::zero;
        return true;
      }
    }
    if (diff.s != 0 && !(fabs(di) >= A::min_quotient && fabs(di) <= A::max_quotient)) return false;
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
      ee = (ex.rel + ed * R(1.0001)) * kS * ex.v;  // (1+rel) e^ed - 1, relative to e^ (fast_arith.hpp)
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
  row.log1p_r_hi = L.v + L_err;
  // T = 1 and no d_i carries an error (dErr still holds them), each of at
  // most 64 bits, which MPFR's working precision (64 bits and more) holds
  // exactly: a double-word's x_i - x_k can need 2,000.
  const auto narrow = [](const R& di) {
    if constexpr (is_dd<R>)
      return di.lo == 0 || !std::isfinite(di.hi) || std::ilogb(di.hi) - std::ilogb(di.lo) < 11;
    else
      return true;
  };
  row.d_exact = T == 1;
  for (std::size_t i = 0; i < n && row.d_exact; ++i) row.d_exact = dErr[i] == 0 && narrow(d[i]);

  // log_softmax_i = d_i - log1p(r) is exactly 0 in MPFR only where d_i = 0
  // (x_i = x_k) and MPFR's r is 0 (every other entry masked or below the edge).
  const ZeroState log_at_max = !r_zero ? ZeroState::positive : r_unknown ? ZeroState::unknown : ZeroState::zero;
  // lse = z_k + log1p(r): the division's rounding u|z_k| when T != 1, L's
  // enclosure, the addition's u|lse|. Exactly 0 in MPFR only for z_k = 0 and
  // r = 0 (log1p of a positive r is irrational); the entropy only for r = 0.
  {
    const R zk = T == 1 ? xk : xk / T;
    const R v = zk + L.v;
    row.lse = v;
    row.lse_err = ((T == 1 ? R(0) : u * fabs(zk)) + L_err + u * fabs(v)) * kS;
    // Inside the range where the tier's roundings are relative (as d_i's
    // quotient above): a double-double's low word is subnormal below it.
    const auto in_range = [](R a) { return a == 0 || (fabs(a) >= A::min_quotient && fabs(a) <= A::max_quotient); };
    row.lse_usable = isfinite(zk) && isfinite(v) && isfinite(row.lse_err) && in_range(zk) && in_range(v) &&
                     in_range(L.v);
    row.lse_zero = zk != 0 || !r_zero ? ZeroState::positive : r_unknown ? ZeroState::unknown : ZeroState::zero;
    row.entropy_zero = log_at_max;
  }
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
    if (isinf(di)) {  // masked (radius 0), or past f64's range (radius inf)
      row.log_softmax[i] = -inf<R>, row.log_softmax_err[i] = edi;
      row.log_softmax_res[i] = 0, row.log_softmax_tight[i] = edi, row.log_softmax_zero[i] = ZeroState::positive;
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
  exact_uniform_softmax(x, x[k], row);
}

}  // namespace

template <class R>
bool scalar_enclosure(const BasicFastRow<R>& row, OutputKind kind, R& v, R& err, ZeroState& zero) {
  using A = Arith<R>;
  constexpr R u = A::u;
  constexpr R kS = kSafe<R>;
  if (row.status != RowStatus::ok || !row.usable) return false;
  if (kind == OutputKind::log_sum_exp) {
    if (!row.lse_usable) return false;
    v = row.lse, err = row.lse_err, zero = row.lse_zero;
    return true;
  }
  if (kind != OutputKind::entropy) return false;
  // H = sum_i p_i (-l_i) >= 0 term by term: the enclosures' radii as
  // compare_row_fast widens them (2u of the value), the product's rounding,
  // then the sum's error (Sum2: u|H| + gamma_{n-1}^2 sum of terms; DD:
  // recursive, u times the partial sums).
  R sum = 0, comp = 0, partial = 0, terms_err = 0;
  for (std::size_t i = 0; i < row.softmax.size(); ++i) {
    const R l = row.log_softmax[i];
    if (isinf(l)) continue;  // masked: p = 0 exactly
    const R p = row.softmax[i], ep = row.softmax_err[i] + 2 * u * p;
    if (p == 0 && ep == 0) continue;
    const R a = -l, el = row.log_softmax_err[i] + 2 * u * fabs(l);
    const R t = p * a;
    terms_err += ep * a + (p + ep) * el + u * t;
    if constexpr (is_dd<R>) {
      sum += t;
      partial += sum;
    } else {
      const TwoSum<R> acc = two_sum(sum, t);
      sum = acc.s;
      comp += acc.e;
    }
  }
  if constexpr (is_dd<R>) {
    err = (terms_err + u * partial) * kS;
  } else {
    sum += comp;
    const R g = gamma<R>(R(static_cast<double>(row.softmax.size())));
    err = (terms_err + (u + g * g) * sum + u * fabs(sum)) * kS;
  }
  v = sum;
  zero = row.entropy_zero;
  return isfinite(v) && isfinite(err);
}

template bool scalar_enclosure(const FastRow&, OutputKind, long double&, long double&, ZeroState&);
template bool scalar_enclosure(const DoubleFastRow&, OutputKind, double&, double&, ZeroState&);
template bool scalar_enclosure(const DDFastRow&, OutputKind, DD&, DD&, ZeroState&);

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

}  // namespace softcheck::oracle
