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
//   split  flash-decoding (FlashAttention-2's split-KV forward): the keys
//          in 4 contiguous splits, each through the flash loop to its
//          normalised O_s and lse_s, then the combine: lse = L + log sum_s
//          exp(lse_s - L) (online_state.hpp's merge folded in split order),
//          O = sum_s exp(lse_s - lse) O_s. Policy zeros.
//   P rounded  the flash loop with P = exp2(z' - m) rounded to bf16 or f16
//          before P.V, l summing the unrounded P (FlashAttention-2's cast of
//          P to the input type for the second GEMM) or, renormalised, the
//          rounded one.
//   16-bit storage  f16 / bf16 q, K, V, bias, O and lse (uint16 patterns,
//          storage.hpp) around the f32 flash loop, each output rounded once.
//
// The K and V of a masked key are never read (they may hold anything; the
// oracle does not read them either). Every operation is in the element type
// (float for _f32 and the 16-bit kernels, double for _f64) under the
// project's -ffp-contract=off;
// the one fused multiply-add is flash's score, written as std::fma. The
// contracts are derived below the kernels, next to the code that declares
// them.
#include "attention.hpp"
#include "attention_row.hpp"

#include <algorithm>
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
#include <utility>
#include <vector>

#include "attention_simd.hpp"
#include "kernel_util.hpp"
#include "softcheck/format.hpp"
#include "softcheck/minifloat.hpp"
#include "softcheck/online_state.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::kernels {
namespace {

using attention_row::dot;
using attention_row::Query;
using attention_row::score_scale;

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

// exp in the element type (expf for float): the exponential of
// FlashAttention-2's split-KV combine, which works on the splits' lse in
// natural units.
struct Exp {
  float operator()(float v) const { return std::exp(v); }
  double operator()(double v) const { return std::exp(v); }
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

// l exp2(m_old - m_new) (or l exp(m_old - m_new) with E = Exp): exact when
// the max did not move; an empty sum stays 0 without evaluating -inf - -inf.
template <class T, class E = Exp2>
T rescale(T l, T m_old, T m_new, E e = {}) {
  if constexpr (std::is_same_v<T, float>) {
    return online::rescale(l, m_old, m_new, e);
  } else {
    if (l == 0) return 0;
    if (m_old == m_new) return l;
    return l * e(m_old - m_new);
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

// online_state.hpp's merge (REFERENCE.md "Online softmax", the ⊕):
// (m_a, l_a) ⊕ (m_b, l_b) = (M, l_a e(m_a - M) + l_b e(m_b - M)), M the
// larger max. An empty side (-inf, 0) adds an exact 0 and leaves the other
// side bit for bit (its rescale is exact): no -inf - -inf is evaluated.
template <class T, class E>
RowState<T> merge(RowState<T> a, RowState<T> b, E e) {
  if constexpr (std::is_same_v<T, float>) {
    const online::State r = online::merge(online::State{a.m, a.l}, online::State{b.m, b.l}, e);
    return {r.m, r.d};
  } else {
    const T m = max_of(a.m, b.m);
    return {m, rescale(a.l, a.m, m, e) + rescale(b.l, b.m, m, e)};
  }
}

// alpha = exp2(m_old - m_new), the factor rescale applies to l (rescale of
// 1: l alpha and rescale(l) are the same product): exactly 1 when the max
// did not move, 0 when nothing was seen yet (m_old = -inf, O still 0).
template <class T>
T rescale_factor(T m_old, T m_new) {
  return rescale(T(1), m_old, m_new);
}

// The format P is rounded to before P.V, to nearest even: bf16 or f16
// (FlashAttention-2 casts P to the input type), or OCP FP8 E4M3
// (FlashAttention-3's FP8 path), after a scaling by 2^prescale_log2 and back.
// FlashAttention-4 multiplies P <= 1 by 2^8 before the E4M3 cast, so that
// P down to 2^-17 keeps a nonzero code instead of 2^-9 (E4M3's smallest
// subnormal), and compensates in the row sum (REFERENCE.md, "Low-precision
// formats"). Both scalings are exact in f32 (P 2^8 <= 256 and the E4M3
// values scaled back are >= 2^-17, normal), so scaling P back here gives
// the O FlashAttention-4's compensation gives, barring underflow in P V.
struct PRounding {
  std::optional<Format> format = {};
  const MiniFloat* minifloat = nullptr;
  int prescale_log2 = 0;

  bool active() const { return format.has_value() || minifloat != nullptr; }
  std::string name() const {
    const std::string base = minifloat != nullptr ? std::string(minifloat->name) : std::string(softcheck::name(*format));
    return prescale_log2 == 0 ? base : base + "_x" + std::to_string(1 << prescale_log2);
  }
  double operator()(double P) const {
    if (format) return round_to_format(P, *format);
    const double scaled = std::ldexp(P, prescale_log2);  // <= 256 < 448: never saturates
    return std::ldexp(decode(*minifloat, encode(*minifloat, scaled, Overflow::saturate)), -prescale_log2);
  }
};

// What a flash kernel does with P and O: FlashAttention-2 by default; the
// P-rounding kernels round P before P.V (and may sum the rounded P into l);
// each mutant (make_attention_mutants) switches one step off.
struct FlashSteps {
  std::size_t block_keys = 64;             // Bc, keys per tile
  bool rescale_output = true;              // O <- alpha O when the running max grows
  PRounding p_rounded_to = {};             // P rounded before P.V
  bool l_sums_rounded_p = false;           // l sums the rounded P (renormalised), not the unrounded one
  double softcap = 0;                      // c > 0: scores c tanh(y / c) before the bias (OpParams::softcap)
  double sink = -INFINITY;                 // a sink logit in l only (OpParams::sink); -inf: none
  bool sink_in_every_split = false;        // test only: split-KV adding the sink to each split's l
  LaneLoops lanes = {};                    // f32: q . K_j and the tile's P.V on 16-lane vectors (attention_simd.hpp)
};

// The score scale s = 1 / (T sqrt d) and s log2(e), once per call.
template <class T>
struct ScoreScales {
  T s, s_log2;
};

// z'_j = fma(fl(q . K_j), fl(s log2 e), fl(x_j log2 e)): the score in log2
// units, log2(e) folded into the scale (FlashAttention's prescaling,
// REFERENCE.md); -inf for a masked key (its K unread).
// With lane loops (f32) q . K_j is summed in 16 lanes and a tree instead of
// left to right: a product passes through at most as many roundings as in the
// left-to-right sum (an addition of a lane still 0 is exact), so fl(q . K_j)
// keeps the bound gamma_d sum |q_i K_ji| the contracts take for it.
template <class T>
T score_dot(const Query<T>& query, std::size_t j, const LaneLoops& lanes) {
  if constexpr (std::is_same_v<T, float>) {
    if (lanes.active()) {
      float out = 0;
      lanes.dot(query.q.data(), query.key(j).data(), query.d, &out);
      return out;
    }
  }
  return dot(query.q, query.key(j));
}

template <class T>
void scores_log2(const Query<T>& query, std::size_t first, T scale_log2, std::span<T> z2, const LaneLoops& lanes) {
  constexpr T log2e = std::numbers::log2e_v<T>;
  for (std::size_t v = 0; v < z2.size(); ++v) {
    const std::size_t j = first + v;
    z2[v] = query.masked(j) ? minus_inf<T> : std::fma(score_dot(query, j, lanes), scale_log2, query.x[j] * log2e);
  }
}

// With a softcap c (Gemma 2, Grok): y = fl(q . K_j) s, z'_j = fma(c
// tanh(y / c), log2(e), x_j log2(e)); the cap acts before the bias and the
// mask, so a masked key stays at -inf (applied to y + x_j instead,
// tanh(-inf) = -1 would bring a masked key back at -c: the failure users
// report).
template <class T>
void capped_scores_log2(const Query<T>& query, std::size_t first, T scale, T cap, std::span<T> z2) {
  constexpr T log2e = std::numbers::log2e_v<T>;
  for (std::size_t v = 0; v < z2.size(); ++v) {
    const std::size_t j = first + v;
    z2[v] = query.masked(j) ? minus_inf<T>
                            : std::fma(cap * std::tanh(dot(query.q, query.key(j)) * scale / cap), log2e,
                                       query.x[j] * log2e);
  }
}

// P_v = exp2(z'_v - m): the tile's probabilities relative to the running
// max, the very terms absorb_tile summed into l (the same function of the
// same arguments, evaluated once more here so that the (m, l) update stays
// online_state.hpp's own). With an active rounding each is rounded once
// more, to nearest even in its format (subnormals kept; f16's underflow to
// 0 below 2^-25, E4M3's below 2^-10, or 2^-18 with FlashAttention-4's
// 2^8): the P that FlashAttention casts for the P.V product.
template <class T>
void probabilities(std::span<const T> z2, T m, const PRounding& rounded_to, std::span<T> P) {
  for (std::size_t v = 0; v < z2.size(); ++v) {
    P[v] = term(z2[v], m);
    if (rounded_to.active()) P[v] = static_cast<T>(rounded_to(static_cast<double>(P[v])));
  }
}

// O_i <- O_i + sum_tile P_v V_vi, the tile's sum formed first, left to
// right (as absorb_tile sums l), then one addition; masked keys are skipped,
// their V unread.
template <class T>
void add_tile_values(const Query<T>& query, std::size_t first, std::span<const T> P, std::span<T> tile_sum,
                     std::span<T> O, const LaneLoops& lanes) {
  std::fill(tile_sum.begin(), tile_sum.end(), T(0));
  for (std::size_t v = 0; v < P.size(); ++v) {
    if (query.masked(first + v)) continue;
    const std::span<const T> value = query.value(first + v);
    if constexpr (std::is_same_v<T, float>) {
      if (lanes.active()) {  // the same operations on 16 elements at a time: the same bits
        lanes.add_products(tile_sum.data(), P[v], value.data(), tile_sum.size());
        continue;
      }
    }
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
// A sink logit s starts the state as a key of score s and no value would:
// (m, l) = (fl(s log2 e), exp2(0) = 1), O = 0 (the sink attention of
// gpt-oss: exp(s) in the denominator only). Then l >= 1 on every row, and a
// query with every key masked ends with O = 0 / 1 and lse = s.
template <class T>
RowState<T> initial_state(double sink) {
  if (sink == -INFINITY) return {};
  return {static_cast<T>(sink) * std::numbers::log2e_v<T>, T(1)};
}

template <class T>
void flash_row(const Query<T>& query, ScoreScales<T> scales, const FlashSteps& steps, FlashScratch<T>& w, std::span<T> O,
               T& lse) {
  RowState<T> state = initial_state<T>(steps.sink);
  std::fill(O.begin(), O.end(), T(0));
  // Only the tiles that meet the window (FlashAttention's n_block_min and
  // n_block_max of local and causal attention); the tiles keep their
  // boundaries at multiples of Bc, and a skipped tile is one that would be
  // fully masked, which leaves (m, l) and O untouched anyway.
  const std::size_t first_tile = query.visible_first / steps.block_keys * steps.block_keys;
  const std::size_t end = std::min(query.keys(), query.visible_end);
  for (std::size_t first = first_tile; first < end; first += steps.block_keys) {
    const std::size_t count = std::min(steps.block_keys, query.keys() - first);
    const std::span<T> z2(w.z2.data(), count), P(w.P.data(), count);
    if (steps.softcap > 0)
      capped_scores_log2<T>(query, first, scales.s, static_cast<T>(steps.softcap), z2);
    else
      scores_log2<T>(query, first, scales.s_log2, z2, steps.lanes);
    if (tile_max<T>(z2) == minus_inf<T>) continue;  // fully masked: (m, l) and O untouched
    const T m_old = state.m;
    if (steps.l_sums_rounded_p) {
      // absorb_tile's update with the rounded P in the tile sum:
      // m' = max(m, max_tile z'), l' = l exp2(m - m') + (((0 + P^_0) + P^_1) + ...).
      const T m = max_of(m_old, tile_max<T>(z2));
      probabilities<T>(z2, m, steps.p_rounded_to, P);
      state = {m, rescale(state.l, m_old, m) + sum<T>(P)};
    } else {
      state = absorb_tile<T>(state, z2);
      probabilities<T>(z2, state.m, steps.p_rounded_to, P);
    }
    const T alpha = rescale_factor(m_old, state.m);
    if (steps.rescale_output) scale_each<T>(O, alpha);
    add_tile_values<T>(query, first, P, w.tile_sum, O, steps.lanes);
  }
  finalize(state, O, lse);
}

// --------------------------------------------------------------- split-KV

// Keys [begin, end) of a query as a query of their own: a split's keys, its
// tiles starting at `begin`.
template <class T>
Query<T> key_range(const Query<T>& query, std::size_t begin, std::size_t end) {
  const std::size_t count = end - begin;
  const auto shifted = [begin](std::size_t bound) { return bound > begin ? bound - begin : 0; };
  return {query.x.subspan(begin, count),
          query.q,
          query.K.subspan(begin * query.d, count * query.d),
          query.V.subspan(begin * query.d, count * query.d),
          query.d,
          shifted(query.visible_first),
          shifted(query.visible_end)};
}

// A split's partial in the combine's online state: (lse_s, 1), the split's
// sum exp(z_j) written as exp(lse_s) times 1; a split with no visible key
// (lse_s = -inf) is the empty state (-inf, 0), which merge leaves out
// exactly.
template <class T>
RowState<T> partial_state(T lse_s) {
  return lse_s == minus_inf<T> ? RowState<T>{} : RowState<T>{lse_s, T(1)};
}

// Per-call scratch of a split-KV row: the flash loop's, and each split's
// normalised O_s (d values) and lse_s.
template <class T>
struct SplitScratch {
  FlashScratch<T> flash;
  std::vector<T> O, lse;
  SplitScratch(std::size_t splits, std::size_t block_keys, std::size_t d)
      : flash(block_keys, d), O(splits * d), lse(splits) {}
};

// One query as flash-decoding runs it (Dao et al. 2023, "Flash-Decoding for
// long-context inference"; FlashAttention-2's split-KV forward): the
// keys cut into `splits` contiguous segments [s n / S, (s + 1) n / S) (sizes
// differ by at most one; a segment may be empty or fully masked), each run
// through flash_row to its normalised O_s and lse_s; then the combine in
// segment order, in natural units as FlashAttention-2's combine kernel:
//   (L, d) = merge of (lse_s, 1) over s   L = max_s lse_s, d = sum_s exp(lse_s - L)
//   lse    = L + log d
//   O      = sum_s exp(lse_s - lse) O_s   (((0 + c_0 O_0) + c_1 O_1) + ...)
// The max and the sum come from online_state.hpp's merge folded over the
// splits (the one-pass form of the combine's max, then sum). A split whose
// lse_s is -inf is left out of both (no -inf - -inf); when every split is,
// the row has no visible key: O = 0, lse = -inf (policy zeros).
template <class T>
void split_row(const Query<T>& query, ScoreScales<T> scales, std::size_t splits, const FlashSteps& steps,
               SplitScratch<T>& w, std::span<T> O, T& lse) {
  const std::size_t n = query.keys(), d = query.d;
  // A sink joins the combine once, as the partial (s, 1) of a split without
  // a value (natural units); each split's flash loop runs without it.
  FlashSteps split_steps = steps;
  if (!steps.sink_in_every_split) split_steps.sink = -INFINITY;
  RowState<T> total = steps.sink_in_every_split || steps.sink == -INFINITY
                          ? RowState<T>{}
                          : RowState<T>{static_cast<T>(steps.sink), T(1)};
  for (std::size_t s = 0; s < splits; ++s) {
    const std::span<T> O_s(w.O.data() + s * d, d);
    flash_row<T>(key_range(query, s * n / splits, (s + 1) * n / splits), scales, split_steps, w.flash, O_s,
                 w.lse[s]);
    total = merge(total, partial_state(w.lse[s]), Exp{});
  }
  std::fill(O.begin(), O.end(), T(0));
  if (total.l == 0) {
    lse = minus_inf<T>;
    return;
  }
  lse = total.m + log_of(total.l);
  for (std::size_t s = 0; s < splits; ++s) {
    if (w.lse[s] == minus_inf<T>) continue;
    const T c = Exp{}(w.lse[s] - lse);
    const T* O_s = w.O.data() + s * d;
    for (std::size_t i = 0; i < d; ++i) O[i] = O[i] + c * O_s[i];
  }
}

// ------------------------------------------------------------- the calls

void check_call(const OpCall& c, const std::string& kernel_name) {
  if (c.op != Op::attention)
    throw std::invalid_argument(kernel_name + " does not provide " + std::string(name(c.op)));
  if (c.head_dim < 1) throw std::invalid_argument(kernel_name + ": attention needs a head dimension >= 1");
}

// row(query, O, lse) for every query of an attention call in T: the
// one-output walk of attention_row.hpp, with the query's lse beside its O.
template <class T, class Row>
void for_each_query(const OpCall& c, Row&& row) {
  auto* lse = static_cast<T*>(c.out[1]);
  std::size_t r = 0;
  attention_row::for_each_query_output<T>(c, [&](const Query<T>& query, std::span<T> O) { row(query, O, lse[r++]); });
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
    const T s = score_scale<T>(c.temperature, d);
    const ScoreScales<T> scales{s, s * std::numbers::log2e_v<T>};
    FlashScratch<T> scratch(steps.block_keys, d);
    for_each_query<T>(c, [&](const Query<T>& query, std::span<T> O, T& lse) {
      flash_row<T>(query, scales, steps, scratch, O, lse);
    });
  };
}

template <class T>
ComputeFn split_compute(std::string kernel_name, std::size_t splits, FlashSteps steps) {
  if (steps.block_keys < 1 || splits < 1)
    throw std::invalid_argument(kernel_name + ": at least one split and tiles of at least one key");
  return [kernel_name, splits, steps](const OpCall& c) {
    check_call(c, kernel_name);
    const auto d = static_cast<std::size_t>(c.head_dim);
    const T s = score_scale<T>(c.temperature, d);
    const ScoreScales<T> scales{s, s * std::numbers::log2e_v<T>};
    SplitScratch<T> scratch(splits, steps.block_keys, d);
    for_each_query<T>(c, [&](const Query<T>& query, std::span<T> O, T& lse) {
      split_row<T>(query, scales, splits, steps, scratch, O, lse);
    });
  };
}

// f16 / bf16 storage with f32 statistics: the call's operands (uint16 bit
// patterns of `storage`, storage.hpp) decoded to float, exactly (every f16
// and bf16 value is a float; -inf stays -inf), the f32 kernel `f32` run on
// them, and O and lse each rounded once to the storage format on the way out
// (encode16: to nearest even, subnormals kept), as lowp.hpp's make_kernel16
// does for the softmax rows.
ComputeFn storage16_compute(std::string kernel_name, Format storage, ComputeFn f32) {
  if (storage != Format::f16 && storage != Format::bf16)
    throw std::invalid_argument(kernel_name + ": f16 or bf16 storage only");
  return [kernel_name, storage, f32 = std::move(f32)](const OpCall& c) {
    check_call(c, kernel_name);
    const auto rows = static_cast<std::size_t>(c.rows), n = static_cast<std::size_t>(c.cols),
               d = static_cast<std::size_t>(c.head_dim);
    const std::size_t count[4] = {rows * n, rows * d, rows * n * d, rows * n * d};  // x, q, K, V
    std::vector<float> in[4];
    const void* in_f32[5];
    in_f32[4] = c.in[4];  // the windows: int64, whatever the format
    for (std::size_t k = 0; k < 4; ++k) {
      const auto* bits = static_cast<const std::uint16_t*>(c.in[k]);
      in[k].resize(count[k]);
      for (std::size_t e = 0; e < count[k]; ++e) in[k][e] = static_cast<float>(decode16(bits[e], storage));
      in_f32[k] = in[k].data();
    }
    std::vector<float> O(rows * d), lse(rows);
    void* out_f32[2] = {O.data(), lse.data()};
    f32({c.op, in_f32, out_f32, c.rows, c.cols, c.temperature, c.head_dim});
    auto* O16 = static_cast<std::uint16_t*>(c.out[0]);
    auto* lse16 = static_cast<std::uint16_t*>(c.out[1]);
    for (std::size_t e = 0; e < O.size(); ++e) O16[e] = encode16(O[e], storage);
    for (std::size_t r = 0; r < rows; ++r) lse16[r] = encode16(lse[r], storage);
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
// split (flash-decoding, split_row). S contiguous segments (S = 4) of
// n_s <= ceil(n/S) keys, C_s = ceil(n_s/Bc) tiles each, C_s - 1 <= (n - 1)/(S
// Bc). Each segment runs the flash loop to O_s = N_s / l_s (N_s its
// numerator) and lse_s = fl(fl(m_s + fl(log2 l_s)) fl(ln 2)); the combine
// folds merge over (lse_s, 1) to (L, d), lse = fl(L + fl(log d)), c_s =
// fl(exp(fl(lse_s - lse))), O = sum_s c_s O_s. e_exp, e_log: the combine's
// exp and log (naive's figures). A contributing key j of segment s has
// m - R <= z_j <= m_s <= lse_s (m the row's max, m_s the segment's, in
// natural units; so m_s contributes, |m_s| <= M) and lse_s <= m_s + log n, so
// |lse_s| <= M + log n and |lse_s - lse| <= R + log n (first order).
// exp(lse_s) = 2^(m_s) l_s: both m_s and the segment's l_s cancel between
// c_s and O_s = N_s / l_s (l_s's summation error reaches O only through lse).
// What is left of key j in O_i is exp(ln 2 z'_j - lse) V_ji (1 + alpha_j),
// and exp(lse) = (sum_k exp(ln 2 z'_k)(1 + beta_k)) (1 + rho), in u:
//   alpha_j  in the segment as flash: its exponents' roundings (telescoping
//            to (m_s - z_j) <= R) and exp2's, R + e2 C_s, P_j V_ji and the
//            sums Bc + 2(C_s - 1); O_s = N_s / l_s 1; eta_s, the roundings of
//            lse_s other than l_s's: log2's e_log2 log n_s, then the
//            addition, ln 2's rounding and the product, each u|lse_s|:
//            e_log2 log n + 3(M + log n); c_s: the subtraction R + log n and
//            exp e_exp; c_s O_s and the S - 1 additions (0 + c_0 O_0 exact): S;
//   beta_k   l_s as flash: R + e2 C_s + Bc - 1 + 2(C_s - 1); eta_s; in d:
//            per merge after its own an exp, a product and an addition,
//            (S - 1)(e_exp + 2), and the subtractions' roundings, which
//            telescope to L - lse_s <= R + log n;
//   rho      common to every key: log d, 1 <= d <= S (the largest lse_s
//            enters as exactly 1): e_log log S; L + log d: M + log n.
// Nothing renormalises after the combine, so each weight's relative error
// alpha_j - sum_k p_k beta_k - rho counts once, and with the scores' errors
// e = (d + 6)D + 2M (fact (a): 2e on O, e on lse) and log2(e)'s (fact (b):
// R on O, M on lse):
//   O    2e + R + max alpha + max beta + rho
//        = (2 Bc + 2 e2 + S e_exp + 3S - 2 + e_log log S) + (2 e2 + 4)(C_s - 1)
//          + (2 e_log2 + 9) log n + 5R + 11M + (2h + 12) D,
//   lse  e + M + max beta + rho
//        = (Bc - 1 + e2 + (S - 1)(e_exp + 2) + e_log log S) + (e2 + 2)(C_s - 1)
//          + (e_log2 + 5) log n + 2R + 7M + (h + 6) D,
// with log n <= 7.32 + n/4096 and C_s - 1 <= n/(S Bc). The M terms beyond
// flash's are the combine's: it works on the absolute lse_s and lse, each
// rounded at its own size M + log n, and every segment's weight is the
// exponential of a difference of two of them (what a split-KV kernel pays
// for writing (O_s, lse_s) rather than (N_s, m_s, l_s)). A segment without a
// contributing key weighs less than n_s e^-L (L the cut-off): the caveat
// below.
//
// P rounded before P.V (attention_flash_pbf16_f32, attention_flash_pf16_f32:
// FlashAttention-2 casts P to the input type for the P.V product while its
// row sum l is taken from the f32 P). Flash at Bc = 64 in f32 plus one
// rounding of each P_j = exp2(z'_j - m) <= 1 after absorb_tile summed it:
//   bf16 (p = 8, f32's exponent range): P^_j = P_j (1 + tau_j), |tau_j| <=
//        u_bf16 = 2^-8 = 2^16 u, for P_j >= 2^-126. tau_j is in O's
//        numerator only: it moves O_i by sum_j p_j V_ji tau_j, at most
//        2^16 u s_i, once (no denominator carries it). l and m are the f32
//        kernel's.
//        O    flash's + 2^16       lse  flash's.
//        Below 2^-126 (keys 87 to 105 below the running max, still
//        contributing) the rounding is absolute, up to 2^-134 instead of
//        f32's 2^-150: the subnormal caveat below.
//   f16  (p = 11, normal from 2^-14): |tau_j| <= 2^-11 = 2^13 u only for
//        P_j >= 2^-14. A key 14 ln 2 = 9.7 below the running max (an
//        ordinary one) already has an absolute error up to 2^-25, and one
//        17.3 below it (P_j < 2^-25) rounds to 0: relative error 1. When the
//        keys that make s_i = sum_j p_j |V_ji| all lie there (a sink 17.3 or
//        more above the others with V_sink,i = 0, the others' V_ji of one
//        sign), O^_i = 0 and |O^_i - O_i| = s_i = 2^24 u s_i: K u = 1, no
//        finite bound exists in the scaled metric in units of u_f32.
//        O    none (Contract::why)  lse  flash's.
// attention_flash_pbf16_sumrounded_f32: l sums the rounded P^_j as well (the
// renormalised form: with V = 1, O's numerator and l take the same
// operations on the same values, O = 1 exactly). tau_j now multiplies a term
// of both: fact (c), at most 2 max|tau| on O; on lse, log of sum P^_j moves
// by sum_j p_j tau_j, at most 2^16.
//        O    flash's + 2^17       lse  flash's + 2^16.
// Renormalising conserves mass but does not tighten the worst case of the
// scaled metric: keys rounded up that carry V_i against keys rounded down
// that carry only l approach the 2^17.
//
// P in OCP FP8 E4M3 (attention_flash_pe4m3[_x256][_sumrounded]_f32:
// FlashAttention-3's FP8 P, and FlashAttention-4's 2^8 pre-scale, k = 8;
// k = 0 without it). E4M3 has p = 4 (u_e4m3 = 2^-4 = 2^20 u), normal
// numbers from 2^-6, subnormal spacing 2^-9, nothing below 2^-10 but 0.
// P^_j = 2^-k RN_e4m3(2^k P_j):
//   2^k P_j >= 2^-6:  P^_j = P_j (1 + tau_j), |tau_j| <= 2^-4 = 2^20 u;
//   below:            |P^_j - P_j| <= 2^-(10 + k) absolutely, and
//                     P_j < 2^-(10 + k) gives P^_j = 0: a key 6.9 (k = 0)
//                     or 12.5 (k = 8) below the running max is dropped.
//   O    none, for both sums: as for f16's P, when the keys that make s_i
//        all lie below the drop (a valueless sink 6.9 or 12.5 above the
//        rest), O^_i = 0 and the error is s_i = 2^24 u s_i; summing the
//        rounded P (renormalising) divides by the same l and still gives 0.
//        Measured, not gated: the attention-sink rows of
//        docs/measurements.md ("FP8 P").
//   lse  l summing the unrounded P: flash's.
//        l summing the rounded P: l^ = sum_j alpha_j P^_j (alpha_j <= 1 the
//        later rescales), so |l^ - l| <= 2^-4 l + n 2^-(10 + k), and l >= 1
//        (the final max's key has P = exp2(0) = 1, exact in E4M3 at either
//        scale): log l^ moves by at most 2^-4 + n 2^-(10 + k), to first
//        order; the bound's K / (1 - K u) covers log(1 - e) >= -e / (1 - e).
//        lse  flash's + 2^20 + 2^(14 - k) n.
//
// 16-bit storage, f32 statistics (bf16_ / f16_attention_flash_bc64_f32acc,
// storage16_compute). The inputs decode exactly to f32, so the f32 kernel's
// O32 and lse32 obey attention_flash_bc64_f32's contracts K32 (u32 = 2^-24);
// each is then rounded once to the storage format. In units of its u16
// (bf16 2^-8, f16 2^-11), with r = u32 / u16 (2^-16, 2^-13):
//   O    |O32_i - O_i| <= K32 u32 s_i and |O_i| <= s_i, so |O32_i| <= s_i
//        to first order; the rounding adds u16 |O32_i| <= u16 s_i:
//        K = r K32 + 1. Below the normal range it is absolute, up to
//        denorm_min/2; the metric divides by max(u16 s_i, denorm_min), so
//        there too the error is at most r K32 + 1/2. (|O32_i| <= max|V_ji|
//        (1 + K32 u32) stays below max + ulp/2: no overflow.)
//   lse  |lse32 - lse| <= K32 u32; the rounding adds at most u16 |lse32| +
//        denorm_min/2, |lse| <= M + log n: K = r K32 + M + log n +
//        denorm_min/(2 u16), log n <= 7.32 + n/4096.
//   The declared K / (1 - K u16) covers K32's own gamma and the products of
//   the two errors: K u16 >= K32 u32 + u16.
//   R, M and D are those of the storage format's row shape, whose
//   contributing cut-off (f16 26 ln 2 = 18.0, bf16 135 ln 2 = 93.6) lies
//   below f32's (104.7). A key between the two has p_j < denorm_min_16 / 4:
//   through l it moves O_i by p_j times its relative error times |O_i|,
//   nothing; in O's numerator its error is a relative error of its own
//   share p_j |V_ji| of s_i, r times its f32 per-key error in u32, which has
//   m - z_j <= 104.7 in place of R and its own score's |z_j| and D_j in
//   place of M and D: the cut-off caveat below.
//
// Outside these bounds, as for every softmax kernel (docs/kernels.md): a
// subnormal p_j (or P_j, alpha) carries an absolute error up to denorm_min/2,
// times |V_ji| in O, rather than a relative one; and keys below the
// contributing cut-off are left out of R, M and D.

// The relative errors, in units of u, of the exponential and the logarithm
// a kernel calls (see above).
using LibmErrors = ExpLogErrors;

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

Contract split_output_contract(std::size_t splits, std::size_t block_keys, const LibmErrors& e,
                               const LibmErrors& combine) {
  const auto S = static_cast<double>(splits), bc = static_cast<double>(block_keys);
  const LinearInN log_n = log_n_bound(4096);
  const double log_n_coefficient = 2 * e.log + 9;
  return attention_contract(
      2 * bc + 2 * e.exp + S * combine.exp + 3 * S - 2 + combine.log * std::log(S) + log_n_coefficient * log_n.a,
      (2 * e.exp + 4) / (S * bc) + log_n_coefficient * log_n.b, 5, 11, 2, 12,
      "S = " + std::to_string(splits) + " splits of tiles Bc = " + std::to_string(block_keys) +
          ": each split's flash loop (its l cancels between exp(lse_s - lse) and O_s = N_s / l_s), the "
          "roundings of lse_s (e_log2 + 3) log n + 3M, the weights exp(lse_s - lse) R + log n + e_exp, "
          "c_s O_s and the additions S; l_s, the merges (S - 1)(e_exp + 2) + R + log n, log d and "
          "L + log d: e_log log S + M + log n; scores (d + 6)D + 2M twice, log2(e)'s R; "
          "C_s - 1 <= n/(S Bc), log n <= 7.32 + n/4096 (" + e.what + "; combine " + combine.what +
          "; attention.cpp)");
}

Contract split_lse_contract(std::size_t splits, std::size_t block_keys, const LibmErrors& e,
                            const LibmErrors& combine) {
  const auto S = static_cast<double>(splits), bc = static_cast<double>(block_keys);
  const LinearInN log_n = log_n_bound(4096);
  const double log_n_coefficient = e.log + 5;
  return attention_contract(
      bc - 1 + e.exp + (S - 1) * (combine.exp + 2) + combine.log * std::log(S) + log_n_coefficient * log_n.a,
      (e.exp + 2) / (S * bc) + log_n_coefficient * log_n.b, 2, 7, 1, 6,
      "L + log d over S = " + std::to_string(splits) + " splits of tiles Bc = " + std::to_string(block_keys) +
          ": l_s R + e2 C_s + Bc - 1 + 2(C_s - 1), lse_s's roundings e_log2 log n + 3(M + log n), the merges "
          "(S - 1)(e_exp + 2) + R + log n, log d e_log log S, L + log d M + log n; scores (d + 6)D + 2M, "
          "log2(e)'s M; C_s - 1 <= n/(S Bc), log n <= 7.32 + n/4096 (" + e.what + "; combine " + combine.what +
          "; attention.cpp)");
}

// u_bf16 / u_f32 = 2^-8 / 2^-24: P rounded to bf16, a relative error of at
// most 2^16 u_f32.
constexpr double bf16_p_rounding = 65536;

// A flash contract plus `extra` in its constant, the derivation extended by `why`.
// The softcap kernels (attention_flash_bc64_softcap30_f32 / _f64): the
// cap c tanh(y / c) passes the error of y = fl(q . K_j) s on times
// sech^2 <= 1 and adds its own: y / c (u |y|), tanh (glibc tanh and tanhf:
// 2 ulp, 4u relative: 4u |y|), times c (u |y|), since |c tanh(y / c)| <=
// |y| <= D; y formed by one product with s and log2(e) applied in the fma
// (not folded into s: one more rounding of |y|, u D). 7u D per score: O
// takes each score's error twice (+14 D), lse once (+7 D).
Contract plus_dot(Contract c, double extra, const std::string& why) {
  c.dot += extra;
  c.why = why + "; " + c.why;
  return c;
}

Contract plus_constant(Contract c, double extra, const std::string& why) {
  c.a += extra;
  c.why = why + "; " + c.why;
  return c;
}

Contract f16_p_output_none() {
  return no_contract(
      "none: P rounded to f16 before P.V is relative (2^-11 = 2^13 u) only for P >= 2^-14; a key 9.7 "
      "below the running max gets an absolute error up to 2^-25 and one 17.3 below it rounds to 0 "
      "(relative error 1), so when those keys carry s_i (a sink with V_i = 0 17.3 above the rest) O_i is "
      "lost whole: error s_i = 2^24 u s_i, K u = 1, no finite bound in the scaled metric (attention.cpp)");
}

// The f32 contract `c32` of a kernel whose f32 result is rounded once to
// `storage`, in units of u_storage: every coefficient times r = u32/u16.
Contract scaled_to_storage(const Contract& c32, Format storage) {
  const double r = unit_roundoff(Format::f32) / unit_roundoff(storage);
  Contract c = attention_contract(r * c32.a, r * c32.b, r * c32.c, r * c32.d, r * c32.hd, r * c32.dot, "");
  c.t = r * c32.t;
  return c;
}

Contract storage16_output_contract(const Contract& c32, Format storage) {
  Contract c = scaled_to_storage(c32, storage);
  c.a += 1;
  c.why = "f32 flash O within K32 u32 s_i (attention_flash_bc64_f32: " + c32.formula() + ") rounded once to " +
          std::string(name(storage)) + ": r K32 + 1, r = u32/u_" + std::string(name(storage)) +
          ", |O| <= s_i (below the normal range the metric's denorm_min floor keeps it; attention.cpp)";
  return c;
}

Contract storage16_lse_contract(const Contract& c32, Format storage) {
  const LinearInN log_n = log_n_bound(4096);
  Contract c = scaled_to_storage(c32, storage);
  c.a += log_n.a + denorm_min(storage) / (2 * unit_roundoff(storage));
  c.b += log_n.b;
  c.d += 1;
  c.why = "f32 flash lse within K32 u32 (attention_flash_bc64_f32: " + c32.formula() + ") rounded once to " +
          std::string(name(storage)) + ": r K32 + |lse| + denorm_min/(2u), r = u32/u_" +
          std::string(name(storage)) + ", |lse| <= M + log n <= M + 7.32 + n/4096 (attention.cpp)";
  return c;
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

// attention_flash_simd_f32: attention_flash_bc64_f32's loop with q . K_j
// and the tile's P.V on 16-lane vectors (attention_simd.hpp): the P.V
// accumulation gives the scalar loop's bits, the lane dot keeps its bound
// (score_dot), so the contracts are flash's at Bc = 64. exp2f and log2f
// stay scalar: n of them per query against the 2 n d multiply-adds of the
// two loops.
Kernel flash_simd_kernel() {
  const std::string algorithm = "attention_flash_simd";
  const LibmErrors e = flash_libm(Format::f32);
  const SimdIsa isa = best_simd_isa();
  FlashSteps steps{.block_keys = 64};
  steps.lanes = lane_loops(isa);
  return attention_kernel(typed_name<float>(algorithm), algorithm, Format::f32, MaskedRowPolicy::zeros,
                          flash_output_contract(64, e), flash_lse_contract(64, e),
                          flash_description(64) + "; q . K_j (16 lane sums and a tree) and the tile's P.V on 16-lane "
                                                  "vectors (AVX-512, AVX2 or baseline x86-64, the same bits; here: " +
                              std::string(name(isa)) + ")",
                          flash_compute<float>(typed_name<float>(algorithm), steps));
}

template <class T>
Kernel split_kernel(std::size_t splits, std::size_t block_keys) {
  const std::string algorithm = "attention_split" + std::to_string(splits) + "_bc" + std::to_string(block_keys);
  const LibmErrors e = flash_libm(format_of<T>()), combine = naive_libm(format_of<T>());
  return attention_kernel(
      typed_name<T>(algorithm), algorithm, format_of<T>(), MaskedRowPolicy::zeros,
      split_output_contract(splits, block_keys, e, combine), split_lse_contract(splits, block_keys, e, combine),
      "flash-decoding: the keys cut into " + std::to_string(splits) +
          " contiguous splits, each through FlashAttention-2's loop over tiles of " + std::to_string(block_keys) +
          " keys to its O_s and lse_s, then FlashAttention-2's split-KV combine in split order: "
          "lse = L + log sum exp(lse_s - L) (online_state.hpp's merge), O = sum exp(lse_s - lse) O_s",
      split_compute<T>(typed_name<T>(algorithm), splits, FlashSteps{.block_keys = block_keys}));
}

// attention_flash_pbf16_f32, attention_flash_pf16_f32,
// attention_flash_pbf16_sumrounded_f32 and the E4M3 kernels: the f32 flash
// loop at Bc = 64 with P rounded before P.V.
Kernel p_rounded_kernel(PRounding p, bool l_sums_rounded_p) {
  constexpr std::size_t block_keys = 64;
  const std::string p_name = p.name();
  const std::string algorithm = "attention_flash_p" + p_name + (l_sums_rounded_p ? "_sumrounded" : "");
  const LibmErrors e = flash_libm(Format::f32);
  const Contract O32 = flash_output_contract(block_keys, e), lse32 = flash_lse_contract(block_keys, e);
  Contract output, lse;
  std::string no_reference_rule;  // why O is not held to the reference rule (no contract)
  if (p.minifloat == &fp8_e4m3) {
    const int k = p.prescale_log2;
    const std::string drop = k == 0 ? "2^-10 (6.9 below the running max)" : "2^-18 (12.5 below the running max)";
    output = no_contract("none: P in E4M3" + std::string(k == 0 ? "" : " after P x 2^8") + " drops every P below " +
                         drop + " to 0, so when those keys carry s_i (a valueless sink above the rest) O_i is lost "
                         "whole, summed rounded or not: error s_i = 2^24 u s_i, K u = 1 (attention.cpp)");
    no_reference_rule = "P in E4M3 drops every P below " + drop +
                        ": a dominant key takes all of O's other terms (no finite bound; docs/attention.md), so the "
                        "stable kernel's error is no yardstick";
    lse = l_sums_rounded_p
              ? plus_constant(lse32, 1 << 20, "l sums the E4M3 P: 2^20 + 2^(14 - k) n, k = " + std::to_string(k))
              : plus_constant(lse32, 0, "l sums the unrounded P: the f32 flash lse");
    if (l_sums_rounded_p) lse.b += std::ldexp(1.0, 14 - k);
  } else if (p.format == Format::bf16 && !l_sums_rounded_p) {
    output = plus_constant(O32, bf16_p_rounding, "P rounded to bf16 in O's numerator only: 2^16");
    lse = plus_constant(lse32, 0, "l sums the unrounded P: the f32 flash lse");
  } else if (p.format == Format::bf16) {
    output = plus_constant(O32, 2 * bf16_p_rounding, "P rounded to bf16 in O's numerator and in l: 2 x 2^16");
    lse = plus_constant(lse32, bf16_p_rounding, "l sums the bf16 P: 2^16");
  } else if (p.format == Format::f16 && !l_sums_rounded_p) {
    output = f16_p_output_none();
    lse = plus_constant(lse32, 0, "l sums the unrounded P: the f32 flash lse");
    no_reference_rule = "P in f16 underflows below 2^-25 of the running max: a dominant key takes all of O's other "
                        "terms (no finite bound; docs/attention.md), so the stable kernel's error is no yardstick";
  } else {
    throw std::invalid_argument(algorithm + ": P rounded to bf16, to E4M3, or to f16 with l summing the unrounded P");
  }
  const std::string what = l_sums_rounded_p ? "l summing the rounded P (renormalised: mass conserved)"
                                            : "l summing the unrounded f32 P";
  const std::string rounding =
      p.minifloat != nullptr
          ? "rounded to E4M3 (to nearest even" +
                std::string(p.prescale_log2 == 0 ? ")" : ", after P x 2^8 and scaled back, FlashAttention-4's pre-scale)")
          : "rounded to " + p_name + " (to nearest even)";
  Kernel k = attention_kernel(typed_name<float>(algorithm), algorithm, Format::f32, MaskedRowPolicy::zeros,
                              std::move(output), std::move(lse),
                              flash_description(block_keys) + "; P = exp2(z' - m) " + rounding + " before P.V, " + what,
                              flash_compute<float>(typed_name<float>(algorithm),
                                                   FlashSteps{.block_keys = block_keys,
                                                              .p_rounded_to = p,
                                                              .l_sums_rounded_p = l_sums_rounded_p}));
  // Without a contract O would be gated by the reference rule against
  // attention_naive_f32, which a P that underflows cannot meet on a dominant
  // key: its loss is what this kernel is here to show, measured, not gated.
  if (!no_reference_rule.empty()) k.ops[0].opt_outs.push_back({std::string(floor_reference), no_reference_rule});
  // Without an O contract the floor holds O to mass conservation (V = 1
  // gives O = 1, properties' attention_mass). A kernel whose l sums the
  // unrounded P divides the rounded P's sum by a larger l: the mass the
  // rounding drops is lost (docs/measurements.md, "FP8 P: mass lost on the
  // attention-sink rows"). The renormalised kernels claim it.
  if (!output.declared && !l_sums_rounded_p)
    k.ops[0].opt_outs.push_back(
        {std::string(floor_sum_to_one),
         "l sums the unrounded P while O sums the P rounded to " + p_name +
             ": every P the rounding drops or shrinks is mass lost (V = 1 gives O < 1)"});
  return k;
}

// bf16_attention_flash_bc64_f32acc, f16_attention_flash_bc64_f32acc: f16 /
// bf16 in and out, attention_flash_bc64_f32 in between.
Kernel storage16_kernel(Format storage) {
  constexpr std::size_t block_keys = 64;
  const std::string fmt(name(storage));
  const std::string algorithm = flash_algorithm(block_keys) + "_f32acc";
  const std::string kernel_name = fmt + "_" + algorithm;
  const LibmErrors e = flash_libm(Format::f32);
  return attention_kernel(
      kernel_name, algorithm, storage, MaskedRowPolicy::zeros,
      storage16_output_contract(flash_output_contract(block_keys, e), storage),
      storage16_lse_contract(flash_lse_contract(block_keys, e), storage),
      fmt + " q, K, V, bias in and O, lse out; " + flash_description(block_keys) +
          " in f32; O and lse each rounded once to " + fmt,
      storage16_compute(kernel_name, storage,
                        flash_compute<float>(kernel_name, FlashSteps{.block_keys = block_keys})));
}

// attention_flash_bc64_softcap30_f32 / _f64: the flash loop with the
// scores capped at c = 30 (Grok's attention softcap) before the bias.
template <class T>
Kernel softcap_kernel(int cap) {
  constexpr std::size_t block_keys = 64;
  const std::string c = std::to_string(cap);
  const std::string algorithm = flash_algorithm(block_keys) + "_softcap" + c;
  const LibmErrors e = flash_libm(format_of<T>());
  const std::string why = "softcap: y / c, tanh 4u, times c and log2(e) apart, 7u D per score";
  Kernel k = attention_kernel(
      typed_name<T>(algorithm), algorithm, format_of<T>(), MaskedRowPolicy::zeros,
      plus_dot(flash_output_contract(block_keys, e), 14, why), plus_dot(flash_lse_contract(block_keys, e), 7, why),
      flash_description(block_keys) + "; scores capped to " + c + " tanh(y / " + c + ") before the bias and mask",
      flash_compute<T>(typed_name<T>(algorithm), FlashSteps{.block_keys = block_keys, .softcap = static_cast<double>(cap)}));
  k.ops[0].params.softcap = cap;
  return k;
}

// attention_flash_bc64_sink2_f32 / _f64 and attention_split4_bc64_sink2_f32:
// a sink logit s = 2 (OpParams::sink) in the denominator. The judge's row
// shape counts the sink as one more key (n + 1) of exact score s, in R and
// M when it contributes (attention_row_shape), with no dot product and V =
// 0: the derivations above hold for it as for a key whose value is 0, its
// score's one rounding fl(s log2 e) (u|s| <= uM) inside the score error e.
// What they do not count:
//   flash   the sink's state (fl(s L), 1) comes before the first tile: one
//           tile more, so C - 1 <= n_keys/Bc + 1 rather than (n_keys + 1)/Bc:
//           one more alpha and rescale, 2(e2 + 2) on O, e2 + 2 on lse.
//   split   the sink is one more partial (s, 1) of the combine's merge (the
//           splits run without it): S + 1 states merged, (e_exp + 2) more on
//           lse (one merge more) and log d <= log(S + 1):
//           e_log log((S + 1)/S) more on both.
template <class T>
Kernel flash_sink_kernel(double sink) {
  constexpr std::size_t block_keys = 64;
  const std::string s = std::to_string(static_cast<int>(sink));
  const std::string algorithm = flash_algorithm(block_keys) + "_sink" + s;
  const LibmErrors e = flash_libm(format_of<T>());
  const std::string why = "sink: one tile more before the first";
  Kernel k = attention_kernel(
      typed_name<T>(algorithm), algorithm, format_of<T>(), MaskedRowPolicy::zeros,
      plus_constant(flash_output_contract(block_keys, e), 2 * (e.exp + 2), why),
      plus_constant(flash_lse_contract(block_keys, e), e.exp + 2, why),
      flash_description(block_keys) + "; a sink logit " + s + " in the denominator (the state starts at (" + s +
          " log2 e, 1), O at 0): a query with every key masked gets O = 0 and lse = " + s,
      flash_compute<T>(typed_name<T>(algorithm), FlashSteps{.block_keys = block_keys, .sink = sink}));
  k.ops[0].params.sink = sink;
  return k;
}

Kernel split_sink_kernel(double sink, bool in_every_split) {
  constexpr std::size_t splits = 4, block_keys = 64;
  const std::string s = std::to_string(static_cast<int>(sink));
  const std::string algorithm = "attention_split4_bc64_sink" + s + (in_every_split ? "_every_split" : "");
  const LibmErrors e = flash_libm(Format::f32), combine = naive_libm(Format::f32);
  const double more_partials = combine.log * std::log((splits + 1.0) / splits);
  const std::string why = "sink: one partial (s, 1) more in the combine";
  Kernel k = attention_kernel(
      typed_name<float>(algorithm), algorithm, Format::f32, MaskedRowPolicy::zeros,
      plus_constant(split_output_contract(splits, block_keys, e, combine), more_partials, why),
      plus_constant(split_lse_contract(splits, block_keys, e, combine), combine.exp + 2 + more_partials, why),
      in_every_split ? "flash-decoding with the sink logit " + s +
                           " added to every split's l (test only: the sink counted four times; claims "
                           "attention_split4_bc64_sink" + s + "_f32's contracts)"
                     : "flash-decoding (4 splits, tiles of 64) with a sink logit " + s +
                           " joining the combine once, as the partial (" + s + ", 1)",
      split_compute<float>(typed_name<float>(algorithm), splits,
                           FlashSteps{.block_keys = block_keys, .sink = sink, .sink_in_every_split = in_every_split}));
  k.ops[0].params.sink = sink;
  k.test_only = in_every_split;
  return k;
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
  return {naive_kernel<float>(),
          naive_kernel<double>(),
          flash_kernel<float>(64),
          flash_kernel<double>(64),
          flash_kernel<float>(16),
          flash_kernel<double>(16),
          split_kernel<float>(4, 64),
          split_kernel<double>(4, 64),
          p_rounded_kernel({.format = Format::bf16}, false),
          p_rounded_kernel({.format = Format::f16}, false),
          p_rounded_kernel({.format = Format::bf16}, true),
          storage16_kernel(Format::bf16),
          storage16_kernel(Format::f16),
          softcap_kernel<float>(30),
          softcap_kernel<double>(30),
          flash_sink_kernel<float>(2),
          flash_sink_kernel<double>(2),
          split_sink_kernel(2, false),
          p_rounded_kernel({.minifloat = &fp8_e4m3}, false),
          p_rounded_kernel({.minifloat = &fp8_e4m3}, true),
          p_rounded_kernel({.minifloat = &fp8_e4m3, .prescale_log2 = 8}, false),
          p_rounded_kernel({.minifloat = &fp8_e4m3, .prescale_log2 = 8}, true),
          flash_simd_kernel()};
}

Contract flash_attention_output_contract(std::size_t block_keys, const ExpLogErrors& e) {
  return flash_output_contract(block_keys, e);
}
Contract flash_attention_lse_contract(std::size_t block_keys, const ExpLogErrors& e) {
  return flash_lse_contract(block_keys, e);
}

Kernel make_flash_attention_kernel(Format f, std::size_t block_keys, std::size_t splits) {
  if (f != Format::f32 && f != Format::f64)
    throw std::invalid_argument("make_flash_attention_kernel: f32 or f64");
  if (splits == 0) return f == Format::f32 ? flash_kernel<float>(block_keys) : flash_kernel<double>(block_keys);
  return f == Format::f32 ? split_kernel<float>(splits, block_keys) : split_kernel<double>(splits, block_keys);
}

std::vector<Kernel> make_attention_mutants() {
  return {
      flash_mutant("attention_flash_no_rescale", FlashSteps{.rescale_output = false},
                   "flash without O <- alpha O: when the running max grows the earlier tiles' P.V keep their "
                   "old scale while l is rescaled"),
      flash_mutant("attention_flash_p_bf16", FlashSteps{.p_rounded_to = {.format = Format::bf16}},
                   "flash with P rounded to bf16 before P.V while l sums the unrounded P: probability mass "
                   "lost or gained (REFERENCE.md: the FP8 P of ROCm FlyDSL PR 1020); attention_flash_pbf16_f32 "
                   "is the same loop with the contract it can keep"),
      split_sink_kernel(2, true),
  };
}

}  // namespace softcheck::kernels
