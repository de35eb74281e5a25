// Attention kernels: per call row, one query q against the n keys K_j and
// values V_j (head dimension d) of that row, with the bias row x (-inf masks
// a key; op.hpp, Op::attention):
//
//   z_j = (q . K_j) / (T sqrt(d)) + x_j,   p = softmax(z),
//   O   = sum_j p_j V_j,                   lse = log sum_j exp(z_j).
//
// Written as named steps in the style of FlashAttention's softmax.h
// (REFERENCE.md "Attention rows", "FlashAttention tiling"):
//
//   naive  three passes per query: the n scores; their softmax shifted by
//          the max (kernel_util.hpp's reduce_max, exp_shifted, sum,
//          divide_by); O = P.V. Policy nan: a fully masked row has no max to
//          shift by (the textbook softmax computes -inf - -inf there).
//   flash  FlashAttention-2's forward loop (Dao 2023, arXiv:2307.08691,
//          Algorithm 1) over tiles of Bc keys: the scores in log2 units, the
//          scale s log2(e) folded in by one fma; the online state (m, l)
//          updated by online_state.hpp's absorb_tile; O <- alpha O + P.V with
//          alpha = exp2(m_old - m_new); at the end O / l and
//          lse = (m + log2 l) ln 2. Policy zeros: a row with no visible key
//          gets O = 0 and lse = -inf (FlashAttention-4's rule).
//
// The K and V of a masked key are never read (they may hold anything; the
// oracle does not read them either). Every operation is in the element type
// (float for _f32, double for _f64) under the project's -ffp-contract=off;
// the one fused multiply-add is flash's score, written as std::fma. The
// contracts are derived below the kernels, next to the code that declares
// them.
#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel_util.hpp"
#include "softcheck/format.hpp"
#include "softcheck/online_state.hpp"

namespace softcheck::kernels {
namespace {

// ------------------------------------------------------------- one query

// One query's operands in the element type T: the n bias entries, q (d
// values), K and V (n x d values, key-major).
template <class T>
struct Query {
  std::span<const T> x, q, K, V;
  std::size_t d;

  std::size_t keys() const { return x.size(); }
  bool masked(std::size_t j) const { return x[j] == minus_inf<T>; }
  std::span<const T> key(std::size_t j) const { return K.subspan(j * d, d); }
  std::span<const T> value(std::size_t j) const { return V.subspan(j * d, d); }
};

// s = 1 / (T sqrt(d)) in the element type, once per call: fl(sqrt(d)), fl(T)
// and their product (both exact at T = 1), then the reciprocal.
template <class T>
T score_scale(double temperature, std::size_t d) {
  const T root = std::sqrt(static_cast<T>(d));
  return T(1) / (static_cast<T>(temperature) * root);
}

// q . k summed left to right (0 + the first product is exact):
// |fl(q . k) - q . k| <= gamma_d sum_i |q_i k_i| (Higham, Accuracy and
// Stability of Numerical Algorithms, eq. 3.5).
template <class T>
T dot(std::span<const T> q, std::span<const T> k) {
  T acc = 0;
  for (std::size_t i = 0; i < q.size(); ++i) acc += q[i] * k[i];
  return acc;
}

// v_i <- c v_i
template <class T>
void scale_each(std::span<T> v, T c) {
  for (T& e : v) e = c * e;
}

// ------------------------------------------------------------------ naive

// z_j = fl(fl(q . K_j) s) + x_j; -inf for a masked key (its K unread).
template <class T>
void scores(const Query<T>& query, T s, std::span<T> z) {
  for (std::size_t j = 0; j < query.keys(); ++j)
    z[j] = query.masked(j) ? minus_inf<T> : dot(query.q, query.key(j)) * s + query.x[j];
}

// O_i = sum_j p_j V_ji, left to right over the keys; masked keys (p_j = 0)
// are skipped, their V unread.
template <class T>
void weighted_sum_of_values(const Query<T>& query, std::span<const T> p, std::span<T> O) {
  std::fill(O.begin(), O.end(), T(0));
  for (std::size_t j = 0; j < query.keys(); ++j) {
    if (query.masked(j)) continue;
    const std::span<const T> v = query.value(j);
    for (std::size_t i = 0; i < O.size(); ++i) O[i] += p[j] * v[i];
  }
}

// One query: scores into z_p, their softmax in place, P.V, lse = a + log l.
template <class T>
void naive_row(const Query<T>& query, T s, std::span<T> z_p, std::span<T> O, T& lse) {
  scores(query, s, z_p);
  const T a = reduce_max<T>(z_p);
  if (a == minus_inf<T>) {  // no visible key: policy nan
    std::fill(O.begin(), O.end(), std::numeric_limits<T>::quiet_NaN());
    lse = std::numeric_limits<T>::quiet_NaN();
    return;
  }
  exp_shifted<T>(z_p, a);   // e_j = exp(z_j - a): 0 for a masked key, exactly 1 for the max
  const T l = sum<T>(z_p);  // l = sum_j e_j >= 1
  divide_by<T>(z_p, l);     // p_j = e_j / l
  weighted_sum_of_values<T>(query, z_p, O);
  lse = a + log_of(l);
}

// ------------------------------------------------------------------ flash

// exp2 in the element type (exp2f for float), the exponential of
// FlashAttention's kernels.
struct Exp2 {
  float operator()(float v) const { return std::exp2(v); }
  double operator()(double v) const { return std::exp2(v); }
};

// The online softmax state (REFERENCE.md "Online softmax"): m the running
// max of the scores seen (log2 units), l the sum of exp2(z'_j - m) over
// them (online_state.hpp's d, FlashAttention's row sum). Empty: (-inf, 0).
template <class T>
struct RowState {
  T m = minus_inf<T>;
  T l = 0;
};

// online_state.hpp's steps in T. Its functions take float only (they are
// shared with the CUDA kernels, which keep f32 statistics): f32 calls them,
// f64 runs the same operations in the same order on doubles.
template <class T>
T max_of(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return online::max_of(a, b);
  } else {
    return a < b ? b : a;
  }
}

// max over a tile, -inf when every key of it is masked.
template <class T>
T tile_max(std::span<const T> z) {
  if constexpr (std::is_same_v<T, float>) {
    return online::tile_max(z.data(), static_cast<int>(z.size()));
  } else {
    T a = minus_inf<T>;
    for (T v : z) a = max_of(a, v);
    return a;
  }
}

// exp2(z' - m): one key's term relative to the max (0 for a masked key).
template <class T>
T term(T z, T m) {
  if constexpr (std::is_same_v<T, float>) {
    return online::term(z, m, Exp2{});
  } else {
    return Exp2{}(z - m);
  }
}

// l exp2(m_old - m_new): exact when the max did not move; an empty sum
// stays 0 without evaluating -inf - -inf.
template <class T>
T rescale(T l, T m_old, T m_new) {
  if constexpr (std::is_same_v<T, float>) {
    return online::rescale(l, m_old, m_new, Exp2{});
  } else {
    if (l == 0) return 0;
    if (m_old == m_new) return l;
    return l * Exp2{}(m_old - m_new);
  }
}

// FlashAttention's per-tile update of (m, l):
//   m' = max(m, max_tile z'),  l' = l exp2(m - m') + (((0 + P_0) + P_1) + ...),
// P_v = exp2(z'_v - m'). A fully masked tile leaves the state unchanged.
template <class T>
RowState<T> absorb_tile(RowState<T> s, std::span<const T> z) {
  if constexpr (std::is_same_v<T, float>) {
    const online::State r =
        online::absorb_tile(online::State{s.m, s.l}, z.data(), static_cast<int>(z.size()), Exp2{});
    return {r.m, r.d};
  } else {
    const T a = tile_max(z);
    if (a == minus_inf<T>) return s;
    const T m = max_of(s.m, a);
    T tile_sum = 0;
    for (T v : z) tile_sum = tile_sum + term(v, m);
    return {m, rescale(s.l, s.m, m) + tile_sum};
  }
}

// alpha = exp2(m_old - m_new), the factor rescale applies to l (rescale of
// 1: l alpha and rescale(l) are the same product): exactly 1 when the max
// did not move, 0 when nothing was seen yet (m_old = -inf, O still 0).
template <class T>
T rescale_factor(T m_old, T m_new) {
  return rescale(T(1), m_old, m_new);
}

// What a flash kernel does with P and O: FlashAttention-2 by default; each
// mutant (make_attention_mutants) switches one step off.
struct FlashSteps {
  std::size_t block_keys = 64;  // Bc, keys per tile
  bool rescale_output = true;   // O <- alpha O when the running max grows
  bool p_to_bf16 = false;       // P rounded to bf16 before P.V, l summing the unrounded P
};

// z'_j = fma(fl(q . K_j), fl(s log2 e), fl(x_j log2 e)): the score in log2
// units, log2(e) folded into the scale (FlashAttention's prescaling,
// REFERENCE.md); -inf for a masked key (its K unread).
template <class T>
void scores_log2(const Query<T>& query, std::size_t first, T scale_log2, std::span<T> z2) {
  constexpr T log2e = std::numbers::log2e_v<T>;
  for (std::size_t v = 0; v < z2.size(); ++v) {
    const std::size_t j = first + v;
    z2[v] = query.masked(j) ? minus_inf<T> : std::fma(dot(query.q, query.key(j)), scale_log2, query.x[j] * log2e);
  }
}

// P_v = exp2(z'_v - m): the tile's probabilities relative to the running
// max, the very terms absorb_tile summed into l (the same function of the
// same arguments, evaluated once more here so that the (m, l) update stays
// online_state.hpp's own). The bf16 mutant rounds them (one rounding, to
// nearest even) after l has summed the unrounded ones.
template <class T>
void probabilities(std::span<const T> z2, T m, bool to_bf16, std::span<T> P) {
  for (std::size_t v = 0; v < z2.size(); ++v) {
    P[v] = term(z2[v], m);
    if (to_bf16) P[v] = static_cast<T>(round_to_format(static_cast<double>(P[v]), Format::bf16));
  }
}

// O_i <- O_i + sum_tile P_v V_vi, the tile's sum formed first, left to
// right (as absorb_tile sums l), then one addition; masked keys are skipped,
// their V unread.
template <class T>
void add_tile_values(const Query<T>& query, std::size_t first, std::span<const T> P, std::span<T> tile_sum,
                     std::span<T> O) {
  std::fill(tile_sum.begin(), tile_sum.end(), T(0));
  for (std::size_t v = 0; v < P.size(); ++v) {
    if (query.masked(first + v)) continue;
    const std::span<const T> value = query.value(first + v);
    for (std::size_t i = 0; i < tile_sum.size(); ++i) tile_sum[i] += P[v] * value[i];
  }
  for (std::size_t i = 0; i < O.size(); ++i) O[i] = O[i] + tile_sum[i];
}

// O_i / l and lse = (m + log2 l) ln 2. A row with no visible key (l = 0;
// with one, the max key's term is exp2(0) = 1, so l >= 1) gets O = 0 and
// lse = -inf: policy zeros.
template <class T>
void finalize(RowState<T> s, std::span<T> O, T& lse) {
  if (s.l == 0) {
    std::fill(O.begin(), O.end(), T(0));
    lse = minus_inf<T>;
    return;
  }
  divide_by<T>(O, s.l);
  lse = (s.m + std::log2(s.l)) * std::numbers::ln2_v<T>;
}

// Per-call scratch: one tile of scores and probabilities, one tile's P.V.
template <class T>
struct FlashScratch {
  std::vector<T> z2, P, tile_sum;
  FlashScratch(std::size_t block_keys, std::size_t d) : z2(block_keys), P(block_keys), tile_sum(d) {}
};

// One query, tile by tile (FlashAttention-2, Algorithm 1, one row of Q).
template <class T>
void flash_row(const Query<T>& query, T scale_log2, const FlashSteps& steps, FlashScratch<T>& w, std::span<T> O,
               T& lse) {
  RowState<T> state;
  std::fill(O.begin(), O.end(), T(0));
  for (std::size_t first = 0; first < query.keys(); first += steps.block_keys) {
    const std::size_t count = std::min(steps.block_keys, query.keys() - first);
    const std::span<T> z2(w.z2.data(), count), P(w.P.data(), count);
    scores_log2<T>(query, first, scale_log2, z2);
    if (tile_max<T>(z2) == minus_inf<T>) continue;  // fully masked: (m, l) and O untouched
    const T m_old = state.m;
    state = absorb_tile<T>(state, z2);
    const T alpha = rescale_factor(m_old, state.m);
    probabilities<T>(z2, state.m, steps.p_to_bf16, P);
    if (steps.rescale_output) scale_each<T>(O, alpha);
    add_tile_values<T>(query, first, P, w.tile_sum, O);
  }
  finalize(state, O, lse);
}

// ------------------------------------------------------------- the calls

void check_call(const OpCall& c, const std::string& kernel_name) {
  if (c.op != Op::attention)
    throw std::invalid_argument(kernel_name + " does not provide " + std::string(name(c.op)));
  if (c.head_dim < 1) throw std::invalid_argument(kernel_name + ": attention needs a head dimension >= 1");
}

// row(query, O, lse) for every query of an attention call in T.
template <class T, class Row>
void for_each_query(const OpCall& c, Row&& row) {
  const auto n = static_cast<std::size_t>(c.cols), d = static_cast<std::size_t>(c.head_dim);
  const auto* x = static_cast<const T*>(c.in[0]);
  const auto* q = static_cast<const T*>(c.in[1]);
  const auto* K = static_cast<const T*>(c.in[2]);
  const auto* V = static_cast<const T*>(c.in[3]);
  auto* O = static_cast<T*>(c.out[0]);
  auto* lse = static_cast<T*>(c.out[1]);
  for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r) {
    const Query<T> query{{x + r * n, n}, {q + r * d, d}, {K + r * n * d, n * d}, {V + r * n * d, n * d}, d};
    row(query, std::span<T>(O + r * d, d), lse[r]);
  }
}

template <class T>
ComputeFn naive_compute(std::string kernel_name) {
  return [kernel_name](const OpCall& c) {
    check_call(c, kernel_name);
    const T s = score_scale<T>(c.temperature, static_cast<std::size_t>(c.head_dim));
    std::vector<T> z(static_cast<std::size_t>(c.cols));
    for_each_query<T>(c, [&](const Query<T>& query, std::span<T> O, T& lse) { naive_row<T>(query, s, z, O, lse); });
  };
}

template <class T>
ComputeFn flash_compute(std::string kernel_name, FlashSteps steps) {
  if (steps.block_keys < 1) throw std::invalid_argument(kernel_name + ": tiles of at least one key");
  return [kernel_name, steps](const OpCall& c) {
    check_call(c, kernel_name);
    const auto d = static_cast<std::size_t>(c.head_dim);
    const T scale_log2 = score_scale<T>(c.temperature, d) * std::numbers::log2e_v<T>;
    FlashScratch<T> scratch(steps.block_keys, d);
    for_each_query<T>(c, [&](const Query<T>& query, std::span<T> O, T& lse) {
      flash_row<T>(query, scale_log2, steps, scratch, O, lse);
    });
  };
}

// ------------------------------------------------------------- contracts
//
// First order in u (the kernel's unit roundoff); every K below is in units
// of u and the declared bound is K / (1 - K u), Higham's gamma_K, which
// covers the second-order terms (kernel.hpp). n, R, M, h = d and D are
// attention_row_shape's (core/src/contract.cpp): R and M of the
// contributing scores z_j, D = max_j s sum_i |q_i K_ji| (s = 1/(T sqrt d))
// over the contributing keys. O is measured in the scaled metric,
// |O^_i - O_i| / (u s_i) with s_i = sum_j p_j |V_ji|; lse in the absolute
// one, |lse^ - lse| / u.
//
// Libm (k ulp is at most 2k u relative: ulp(v) <= 2u|v|). glibc >= 2.28
// runs the Arm optimized-routines code, whose source comments give expf and
// exp2f 0.502 ulp (REFERENCE.md "exp accuracy"), logf 0.818, log2f 0.752;
// exp and exp2 of double 0.5 + 1.11/128 and 0.5 + 0.86/128 ulp plus the
// polynomial's error (REFERENCE.md: about 0.51), log 0.533 (0.507 near 1),
// log2 0.547 (0.550 without fma). sqrt, division and fma round correctly.
// e_exp, e_log: naive's exp and log; e2, e_log2: flash's exp2 and log2.
//
// Three facts carry errors into the outputs:
//  (a) dp_j / p_j = dz_j - sum_k p_k dz_k: score errors |dz_k| <= e u move
//      each p_j by at most 2e u relative, so O_i = sum_j p_j V_ji by 2e u s_i,
//      and lse by sum_k p_k dz_k, at most e u;
//  (b) a factor common to every exponent, p proportional to exp((1 + c) z_j),
//      moves p_j by c (z_j - sum_k p_k z_k), at most |c| R relative, and lse
//      by c sum_k p_k z_k, at most |c| M;
//  (c) a relative error r of a term exp(z_j - a) that both the numerator of
//      O and l carry cancels to first order when it is common to all terms,
//      and in general moves O_i by at most 2 max|r| s_i (as (a)).
//
// naive. Score z_j = fl(fl(fl(q . K_j) s^) + x_j):
//   fl(q . K_j)   gamma_d sum_i |q_i K_ji| (Higham eq. 3.5)        d D
//   s^            fl(sqrt d) and the reciprocal, and at T != 1 fl(T) and
//                 fl(T sqrt d): a factor common to the dot parts       4 D
//                 (the contract ties only M terms to T != 1, so the two
//                 roundings of T are declared at T = 1 too)
//   times s^      one rounding of s dot_j, |s dot_j| <= D              D
//   plus x_j      one rounding of z_j                                  M
//   score error e = (d + 5) D + M.
// Softmax: fl(z_j - a) costs u|z_j - a| <= uR in the exponent and exp
// e_exp, so each e_j = exp(z_j - a) carries R + e_exp, a factor of both
// l and O (c): 2(R + e_exp); l = sum_j e_j takes n - 1 additions (a masked
// term adds an exact 0); p_j = e_j / l one rounding. P.V: products and
// additions, gamma_n sum_j |p_j V_ji| = n u s_i (Higham eq. 3.5).
//   O    2e + 2(R + e_exp) + (n - 1) + 1 + n
//        = 2 e_exp + 2n + 2R + 2M + (2h + 10) D.
//   lse  a + log l, 1 <= l <= n: e (a) + (n - 1 + R + e_exp) (l's relative
//        error is log l's absolute one) + e_log log n (log's rounding)
//        + (M + log n) (the addition rounds |lse| <= M + log n); with
//        log n <= (log 256 - 1) + n/256 (the tangent of log at 256):
//        = (e_exp - 1 + 4.55 (1 + e_log)) + (1 + (1 + e_log)/256) n + R + 2M
//          + (h + 5) D.
//
// flash. Score in log2 units z'_j = fma(fl(q . K_j), fl(s^ L), fl(x_j L)),
// L = fl(log2 e) = log2(e)(1 + lambda), so that ln 2 z'_j = (1 + lambda)
// zeta_j with zeta_j the score the other roundings leave:
//   fl(q . K_j)   as naive                                             d D
//   s^, fl(s^ L)  naive's 4 and the product's 1, common to the dot parts 5 D
//   fl(x_j L)     one rounding of x_j, |x_j| <= |z_j| + D <= M + D     M + D
//   the fma       one rounding of z_j                                  M
//   score error e = (d + 6) D + 2M;
// and lambda, common to every exponent: (b), R on O and M on lse. An
// exponent is formed in log2 units and exp2(y) = exp(y ln 2), so rounding
// y = z'_j - m costs ln 2 |z'_j - m| u = |zeta_j - zeta_max| u, the same
// <= uR as exp(z_j - a) in naive.
// Tiles: C = ceil(n/Bc), C - 1 <= n/Bc. A fully masked tile is skipped and
// a rescale whose max did not move is exact, so both only lower the counts.
// A key of tile t reaches l and O's numerator through:
//   both           its exp2 (e2) and, for every later tile whose max grows,
//                  an alpha (e2): e2 + (C - 1) e2; the roundings of all
//                  these exponents add up to u (m_final - z'_j) ln 2 <= uR
//                  (the maxima only grow); a factor of both (c), so twice;
//   l              absorb_tile: Bc - 1 additions in the tile sum (0 + P_0
//                  is exact), the addition to the rescaled l (exact in the
//                  first tile, l = 0 + sum), and per later tile the rescale
//                  product and the addition: Bc - 1 + 2(C - 1);
//   O's numerator  the product P_j V_ji, the tile sum (Bc - 1), per later
//                  tile alpha O and the addition: Bc + 2(C - 1);
//   O_i / l        one division.
//   O    2e + R + 2(R + e2 + (C - 1) e2) + (Bc - 1 + 2(C - 1)) + (Bc + 2(C - 1)) + 1
//        = 2 e2 + 2 Bc + 2(e2 + 2)(C - 1) + 3R + 4M + (2h + 12) D
//        <= 2 e2 + 2 Bc + (2(e2 + 2)/Bc) n + 3R + 4M + (2h + 12) D.
//   lse  fl(fl(m + fl(log2 l)) fl(ln 2)): e (a) + M (lambda, b) + l's
//        relative error R + e2 + (Bc - 1) + (e2 + 2)(C - 1) (through log2 l,
//        times ln 2) + e_log2 log n (log2's rounding, times ln 2) + 3 (M +
//        log n) (the addition, ln 2's rounding and the product each round
//        |lse| <= M + log n); with log n <= (log 4096 - 1) + n/4096 (the
//        tangent at 4096: tiled rows are long):
//        = (e2 + Bc - 1 + 7.32 (3 + e_log2)) + ((e2 + 2)/Bc + (3 + e_log2)/4096) n
//          + R + 6M + (h + 6) D.
//
// Outside these bounds, as for every softmax kernel (docs/kernels.md): a
// subnormal p_j (or P_j, alpha) carries an absolute error up to denorm_min/2,
// times |V_ji| in O, rather than a relative one; and keys below the
// contributing cut-off are left out of R, M and D.

// The relative errors, in units of u, of the exponential and the logarithm
// a kernel calls (see above).
struct LibmErrors {
  double exp = 0, log = 0;
  std::string what;
};

LibmErrors naive_libm(Format f) {
  if (f == Format::f32) return {1.004, 1.636, "expf 0.502 ulp, logf 0.818 ulp"};
  return {1.02, 1.08, "exp 0.51 ulp, log 0.54 ulp"};
}

LibmErrors flash_libm(Format f) {
  if (f == Format::f32) return {1.004, 1.504, "exp2f 0.502 ulp, log2f 0.752 ulp"};
  return {1.02, 1.1, "exp2 0.51 ulp, log2 0.55 ulp"};
}

// log n <= (log N0 - 1) + n / N0 for every n >= 1: the tangent of the
// concave log at N0.
struct LinearInN {
  double a, b;
};
LinearInN log_n_bound(double N0) { return {std::log(N0) - 1, 1 / N0}; }

Contract attention_contract(double a, double b, double c, double d, double hd, double dot_coefficient,
                            std::string why) {
  Contract k = declared_contract(a, b, c, d, 0, std::move(why));
  k.hd = hd;
  k.dot = dot_coefficient;
  return k;
}

Contract naive_output_contract(const LibmErrors& e) {
  return attention_contract(2 * e.exp, 2, 2, 2, 2, 10,
                            "scores (d + 5)D + M, twice through the softmax; exp(z - a) R + e_exp twice, l n - 1, "
                            "p = e / l 1, P.V n (" + e.what + "; attention.cpp)");
}

Contract naive_lse_contract(const LibmErrors& e) {
  const LinearInN log_n = log_n_bound(256);
  return attention_contract(e.exp - 1 + (1 + e.log) * log_n.a, 1 + (1 + e.log) * log_n.b, 1, 2, 1, 5,
                            "a + log l: scores (d + 5)D + M, l n - 1 + R + e_exp, log's rounding e_log log n, "
                            "the addition M + log n; log n <= 4.55 + n/256 (" + e.what + "; attention.cpp)");
}

Contract flash_output_contract(std::size_t block_keys, const LibmErrors& e) {
  const auto bc = static_cast<double>(block_keys);
  return attention_contract(2 * e.exp + 2 * bc, 2 * (e.exp + 2) / bc, 3, 4, 2, 12,
                            "Bc = " + std::to_string(block_keys) +
                                ": scores (d + 6)D + 2M twice, log2(e)'s rounding R; exp2 terms and alphas "
                                "R + e2 (1 + (C - 1)) twice; l Bc - 1 + 2(C - 1), O Bc + 2(C - 1), O / l 1; "
                                "C - 1 <= n/Bc (" + e.what + "; attention.cpp)");
}

Contract flash_lse_contract(std::size_t block_keys, const LibmErrors& e) {
  const auto bc = static_cast<double>(block_keys);
  const LinearInN log_n = log_n_bound(4096);
  return attention_contract(e.exp + bc - 1 + (3 + e.log) * log_n.a, (e.exp + 2) / bc + (3 + e.log) * log_n.b, 1, 6,
                            1, 6,
                            "(m + log2 l) ln 2, Bc = " + std::to_string(block_keys) +
                                ": scores (d + 6)D + 2M, log2(e)'s rounding M, l R + e2 + Bc - 1 + (e2 + 2)n/Bc, "
                                "log2's rounding e_log2 log n, three roundings of M + log n; "
                                "log n <= 7.32 + n/4096 (" + e.what + "; attention.cpp)");
}

// ---------------------------------------------------------------- kernels

template <class T>
std::string typed_name(const std::string& algorithm) {
  return algorithm + "_" + std::string(name(format_of<T>()));
}

Kernel attention_kernel(std::string kernel_name, std::string algorithm, Format f, MaskedRowPolicy policy,
                        Contract output, Contract lse, std::string description, ComputeFn compute) {
  Kernel k;
  k.name = std::move(kernel_name);
  k.algorithm = std::move(algorithm);
  k.format = f;
  k.ops = {OpDecl{.op = Op::attention, .contract = std::move(output), .further_contracts = {std::move(lse)}}};
  k.masked_policy = policy;
  k.description = std::move(description);
  k.compute = std::move(compute);
  return k;
}

template <class T>
Kernel naive_kernel() {
  const std::string algorithm = "attention_naive";
  const LibmErrors e = naive_libm(format_of<T>());
  return attention_kernel(typed_name<T>(algorithm), algorithm, format_of<T>(), MaskedRowPolicy::nan,
                          naive_output_contract(e), naive_lse_contract(e),
                          "three passes per query: the scores q.K_j s + x_j (s = 1/(T sqrt d) once per call), "
                          "their softmax shifted by the max, then P.V; lse = max + log l",
                          naive_compute<T>(typed_name<T>(algorithm)));
}

std::string flash_algorithm(std::size_t block_keys) { return "attention_flash_bc" + std::to_string(block_keys); }

std::string flash_description(std::size_t block_keys) {
  return "FlashAttention-2's online loop over tiles of " + std::to_string(block_keys) +
         " keys: scores in log2 units by one fma with s log2(e), the (m, l) state of online_state.hpp, "
         "O <- exp2(m_old - m_new) O + P.V, O / l and lse = (m + log2 l) ln 2 at the end";
}

template <class T>
Kernel flash_kernel(std::size_t block_keys) {
  const std::string algorithm = flash_algorithm(block_keys);
  const LibmErrors e = flash_libm(format_of<T>());
  return attention_kernel(typed_name<T>(algorithm), algorithm, format_of<T>(), MaskedRowPolicy::zeros,
                          flash_output_contract(block_keys, e), flash_lse_contract(block_keys, e),
                          flash_description(block_keys),
                          flash_compute<T>(typed_name<T>(algorithm), FlashSteps{.block_keys = block_keys}));
}

// A broken flash f32 kernel with attention_flash_bc64_f32's contracts.
Kernel flash_mutant(const std::string& algorithm, FlashSteps steps, const std::string& what) {
  constexpr std::size_t block_keys = 64;
  steps.block_keys = block_keys;
  const LibmErrors e = flash_libm(Format::f32);
  Kernel k = attention_kernel(typed_name<float>(algorithm), algorithm, Format::f32, MaskedRowPolicy::zeros,
                              flash_output_contract(block_keys, e), flash_lse_contract(block_keys, e),
                              what + " (test only: claims attention_flash_bc64_f32's contracts)",
                              flash_compute<float>(typed_name<float>(algorithm), steps));
  k.test_only = true;
  return k;
}

}  // namespace

std::vector<Kernel> make_attention_kernels() {
  return {naive_kernel<float>(),     naive_kernel<double>(),    flash_kernel<float>(64),
          flash_kernel<double>(64), flash_kernel<float>(16),   flash_kernel<double>(16)};
}

std::vector<Kernel> make_attention_mutants() {
  return {
      flash_mutant("attention_flash_no_rescale", FlashSteps{.rescale_output = false},
                   "flash without O <- alpha O: when the running max grows the earlier tiles' P.V keep their "
                   "old scale while l is rescaled"),
      flash_mutant("attention_flash_p_bf16", FlashSteps{.p_to_bf16 = true},
                   "flash with P rounded to bf16 before P.V while l sums the unrounded P: probability mass "
                   "lost or gained (REFERENCE.md: the FP8 P of ROCm FlyDSL PR 1020)"),
  };
}

}  // namespace softcheck::kernels
