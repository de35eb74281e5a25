// shifted_simd_f32 and online_simd_f32: the max-shifted softmax of shifted.cpp
// and the online softmax of online.cpp, vectorised.
//
// The arithmetic is written once, on 16-lane vectors (GCC/Clang vector
// extensions), and compiled three times with target attributes: AVX-512 (one
// zmm), AVX2 (two ymm) and baseline x86-64 (four xmm); the kernels pick the
// best the CPU has at first use (softcheck/isa_dispatch.hpp). Every lane does
// the same IEEE operations in the same order on every ISA: nothing is contracted
// (-ffp-contract=off), and the fused multiply-adds, in exp16, are fma lane
// by lane (vfmadd with FMA, glibc's correctly rounded fma without), so the
// three give the same bits (tested) and the contracts below do not depend on
// the machine. "The same bits" is for rows without NaN: a row with a NaN
// gives NaN everywhere, but which NaN (payload, sign) is not specified; it
// depends on operand order, which the compiler may pick per ISA. The
// vectors, exp16 and the dispatch live in simd_exp.hpp, shared with
// cross_entropy_simd.cpp.
//
// shifted_simd:
//   a   = fl(max_i x_i / T)   (= max_i fl(x_i / T): rounding is monotonic)
//   d_i = fl(fl(x_i / T) - a)
//   e_i = exp16(d_i)          (simd_exp.hpp)
//   S   = sum of e_i: lane l sums e_l, e_{l+16}, ... in order, then a fixed
//         4-level tree over the 16 lanes
//   y_j = e_j * fl(1 / S)
// online_simd: see "online_simd" below.
#include "simd_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernel_util.hpp"
#include "parallel_blocks.hpp"
#include "simd_exp.hpp"

namespace softcheck::kernels {
namespace {

// The vectors, exp16 and the per-ISA entry points (simd_exp.hpp).
using namespace simd;

// The cache line of the next row at `at` (its offset in the row), fetched
// while this row computes its exps. In a batch such as 1024 x 4096 each row
// fits in L1/L2, so passes 2 and 3 run from cache, but the first pass (the
// max: a load and a compare per vector, nothing to hide a miss behind) waits
// for the row to come from L3; the exps leave the load ports idle enough to
// fetch the next row meanwhile. Measured with the code before and after
// timed in alternation (docs/kernels.md): shifted_simd 1.15-1.25x on
// 1024 x 4096, 1.15x on 64 x 16384, 1.18x on 16 x 65536, 1.02-1.03x on
// 4096 x 128. online_simd reads the row first in its exp pass, whose misses
// the exps already hide: no gain there, so it does not prefetch. next: null
// for a block's last row, or where rows are too long to keep two in L2.
SOFTCHECK_INLINE void prefetch_next_row(const float* next, std::size_t at) {
  if (next != nullptr) __builtin_prefetch(next + at, 0 /* read */, 3 /* into L1 */);
}

// Pass 2 of a row: e_i = exp16(z_i - a) stored in y, their 16 lane sums
// returned. z_i = x_i / T, the division only when T != 1 (a template
// parameter: a runtime select would divide every element).
template <SimdIsa I, bool Scaled>
SOFTCHECK_INLINE vf exp_and_lane_sums(const float* x, float* y, std::size_t n, vf va, vf vt, const float* next) {
  const std::size_t full = n - n % lanes;
  vf s = splat(0.0f);
  for (std::size_t i = 0; i < full; i += lanes) {
    prefetch_next_row(next, i);
    vf z = load(x + i);
    if constexpr (Scaled) z = z / vt;
    const vf e = exp16<I>(z - va);
    store(y + i, e);
    s = s + e;
  }
  if (full < n) {
    const std::size_t rest = n - full;
    vf z = load_part(x + full, rest, 0.0f);
    if constexpr (Scaled) z = z / vt;
    vf e = exp16<I>(z - va);
    alignas(64) float keep[lanes];
    for (std::size_t i = 0; i < lanes; ++i) keep[i] = i < rest ? 1.0f : 0.0f;
    e = load(keep) == splat(1.0f) ? e : splat(0.0f);  // padding lanes add exactly 0
    store_part(y + full, e, rest);
    s = s + e;
  }
  return s;
}

// One row, x -> y (y == x allowed; no other overlap), op softmax. A fully masked row (max -inf) gives
// NaN everywhere: the declared nan policy, like shifted_f32 (-inf - -inf).
template <SimdIsa I>
SOFTCHECK_INLINE void shifted_row(const float* x, float* y, std::size_t n, float t, const float* next) {
  // The three passes zig-zag: the max backwards, the exps forwards (the order
  // the sum's contract names), the scaling backwards. Each pass starts where
  // the one before ended, on the part of the row still in cache: a row larger
  // than L2 (2^19 or 2^20 floats in and out) then reads part of x and y from
  // L2 instead of L3: 1.02-1.07x there, measured as prefetch_next_row's
  // figures. The bits do not change (NaN-free rows: see the top): the max is
  // exact and the scaling is elementwise.
  const float a = scaled_row_max(x, n, t);
  if (a == -std::numeric_limits<float>::infinity()) {
    for (std::size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const vf lane_sums = t != 1.0f ? exp_and_lane_sums<I, true>(x, y, n, splat(a), splat(t), next)
                                 : exp_and_lane_sums<I, false>(x, y, n, splat(a), splat(t), next);
  // y_j = e_j * fl(1 / S): a multiply per element instead of a divide (a
  // vector divide costs about 16 times as much), one more rounding.
  scale_backwards(y, n, splat(1.0f / fold_sum(lane_sums)));
}

// ------------------------------------------------------------ online_simd
// Milakov & Gimelshein's online normaliser with one running maximum for the
// row, a block of 4 vectors (64 elements) at a time: one rescale per block in
// which the maximum grew, instead of one per element.
//   per block b: m' = max(m, max_k z_k) (the row's running maximum);
//     t_k = exp16(z_k - m') (stored in y); d = d exp16(m - m') + sum_k t_k
//     per lane, in order (no exp when m' = m); m = m'
//   M = m;  D = sum of the 16 lanes of d (the 4-level tree)
//   y_j = exp16(z_j - M) * fl(1 / D)
// In the last pass, the blocks from the one where the maximum last grew on
// were shifted by M itself: their stored t_j are exp16(z_j - M), and only a
// multiply is left; the blocks before it compute exp16(z_j - M) again from x.
// Either way every y_j is fl(exp16(fl(z_j - M)) * fl(1/D)): the same bits,
// monotone in z_j. Two passes over x at most (one when the maximum is in the
// first block), one exp per element plus one per element before the last
// growth of the maximum. In place (y == x) nothing is stored and every block
// is computed again from x (the same bits).

constexpr std::size_t block_vectors = 4;
constexpr std::size_t block_elements = block_vectors * lanes;

// z of 16 elements at p (count < 16: the other lanes -inf, i.e. masked).
template <bool Scaled>
SOFTCHECK_INLINE vf z_at(const float* p, std::size_t count, vf vt) {
  vf z = count >= lanes ? load(p) : load_part(p, count, -std::numeric_limits<float>::infinity());
  if constexpr (Scaled) z = z / vt;
  return z;
}

SOFTCHECK_INLINE float max_of(float p, float q) { return p > q ? p : q; }

struct OnlineStats {
  float m;             // the row's maximum M (-inf: every entry masked)
  vf d;                // per lane sums of exp16(z_i - M)
  std::size_t settled;  // first element of the block where the maximum last grew
};

// One block of online_stats: the elements [i, i + 64) of the row, or the
// rest of it when fewer (Full: 64 are there, so the four vectors are loaded
// and kept in registers without a bound check each; the same operations).
template <SimdIsa I, bool Scaled, bool Store, bool Full>
SOFTCHECK_INLINE void online_block(const float* x, float* t_out, std::size_t n, std::size_t i, vf vt,
                                   OnlineStats& st, vf& vshift) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  vf z[block_vectors];
  const std::size_t count = Full ? block_vectors : (n - i + lanes - 1) / lanes;
  vf block_max = splat(minus_inf);
  for (std::size_t k = 0; k < count; ++k) {
    z[k] = z_at<Scaled>(x + i + k * lanes, Full ? lanes : n - i - k * lanes, vt);
    block_max = vmax(block_max, z[k]);
  }
  // Whether the maximum grew is a lane-wise compare; the horizontal maximum
  // (a chain of dependent steps) is needed only when it did, so the exps of
  // the usual block do not wait for it. When it did not, the rescale factor
  // would be exp16(m - m) = exp16(0) = 1 (or d = 0, still all -inf):
  // d * factor = d, the same bits without the exp. (A NaN lane never
  // compares greater; a NaN in the row makes D, so every y_j, NaN anyway.)
  if (any_greater<I>(block_max, splat(st.m))) {
    const float m_new = max_of(st.m, fold_max(block_max));  // > st.m >= -inf
    // Until now every entry was -inf and d is exactly 0: no factor needed.
    if (st.m != minus_inf) st.d = st.d * exp16<I>(splat(st.m) - splat(m_new));
    st.m = m_new;
    st.settled = i;
    vshift = splat(m_new);
  }
  vf acc = st.d;
  for (std::size_t k = 0; k < count; ++k) {
    const vf t = exp16<I>(z[k] - vshift);
    if constexpr (Store) {
      const std::size_t at = i + k * lanes;
      if (Full || n - at >= lanes)
        store(t_out + at, t);
      else
        store_part(t_out + at, t, n - at);
    }
    acc = acc + t;
  }
  st.d = acc;
}

template <SimdIsa I, bool Scaled, bool Store>
SOFTCHECK_INLINE OnlineStats online_stats(const float* x, float* t_out, std::size_t n, vf vt) {
  OnlineStats st{-std::numeric_limits<float>::infinity(), splat(0.0f), 0};
  // While every entry so far is -inf the row keeps (-inf, 0) and shifts by
  // 0: every exp16(-inf - 0) is an exact 0, never NaN.
  vf vshift = splat(0.0f);
  std::size_t i = 0;
  for (; i + block_elements <= n; i += block_elements) online_block<I, Scaled, Store, true>(x, t_out, n, i, vt, st, vshift);
  if (i < n) online_block<I, Scaled, Store, false>(x, t_out, n, i, vt, st, vshift);
  return st;
}

template <SimdIsa I, bool Scaled, bool Stored>
SOFTCHECK_INLINE void online_row_with(const float* x, float* y, std::size_t n, float t) {
  const vf vt = splat(t);
  const OnlineStats st = online_stats<I, Scaled, Stored>(x, y, n, vt);
  if (st.m == -std::numeric_limits<float>::infinity()) {  // fully masked: the nan policy
    for (std::size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const vf vm = splat(st.m);
  const vf r = splat(1.0f / fold_sum(st.d));
  const std::size_t full = n - n % lanes;
  const std::size_t recompute_until = Stored ? st.settled : n;  // a multiple of 16 when stored
  // Backwards, from where the first pass ended (the end of the row, still in
  // cache), as shifted_row's scaling: elementwise, so the same bits.
  if (full < n) {
    const vf e = full < recompute_until ? exp16<I>(z_at<Scaled>(x + full, n - full, vt) - vm)
                                        : load_part(y + full, n - full, 0.0f);
    store_part(y + full, e * r, n - full);
  }
  const std::size_t stored_from = std::min(full, recompute_until);
  std::size_t i = full;
  for (; i > stored_from; i -= lanes) store(y + i - lanes, load(y + i - lanes) * r);
  for (; i > 0; i -= lanes) store(y + i - lanes, exp16<I>(z_at<Scaled>(x + i - lanes, lanes, vt) - vm) * r);
}

template <SimdIsa I>
SOFTCHECK_INLINE void online_row(const float* x, float* y, std::size_t n, float t) {
  // Stored exps need y apart from x (an in-place call, y == x, would
  // overwrite x before the blocks that are computed again read it). Other
  // overlaps are outside the kernel ABI (docs/plugin-abi.md).
  const auto at = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const bool apart = at(y + n) <= at(x) || at(x + n) <= at(y);
  if (t != 1.0f)
    apart ? online_row_with<I, true, true>(x, y, n, t) : online_row_with<I, true, false>(x, y, n, t);
  else
    apart ? online_row_with<I, false, true>(x, y, n, t) : online_row_with<I, false, false>(x, y, n, t);
}

// ------------------------------------------------- one body, three ISAs

// The bodies take the ISA they are compiled for as a template parameter: the
// code is the same for all three except exp16's last scaling (see there).
template <SimdAlgorithm A>
struct RowBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* x, float* y, std::size_t n, float t, const float* next) {
    if constexpr (A == SimdAlgorithm::shifted)
      shifted_row<I>(x, y, n, t, next);
    else
      online_row<I>(x, y, n, t);  // no prefetch: see prefetch_next_row
  }
};

// exp16 over an array (its tests: monotone on every f32 argument).
struct ExpBody {
  template <SimdIsa I>
  SOFTCHECK_INLINE static void run(const float* d, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) store(out + i, exp16<I>(load(d + i)));
    if (i < n) store_part(out + i, exp16<I>(load_part(d + i, n - i, 0.0f)), n - i);
  }
};

using RowFn = void (*)(const float*, float*, std::size_t, float, const float*);
template <SimdAlgorithm A>
RowFn row_for(SimdIsa isa) {
  return entry_for<RowBody<A>, const float*, float*, std::size_t, float, const float*>(isa);
}

// First order in u = 2^-24, the derivation of shifted.cpp with this kernel's
// exp and summation order:
//  - d_j = fl(z_j - a): an absolute argument error u|z_j - a| <= uR, a
//    relative error uR of exp; exp16 adds 1.494u (simd_exp.hpp, "< 1.5u"): e_j
//    carries (1.494 + R)u;
//  - S: lane sums of ceil(n/16) terms then 4 tree levels, so every term
//    passes through at most ceil(n/16) - 1 + 4 <= n/16 + 4 additions:
//    (n/16 + 4)u plus the terms' (1.494 + R)u;
//  - y_j = e_j * fl(1/S): two roundings, 2u.
//  Total: (1.494 + R) + (n/16 + 4 + 1.494 + R) + 2 = 8.988 + n/16 + 2R <= 9 + n/16 + 2R.
//  - temperature as shifted.cpp: t = 4 (a = fl(max x / T) equals
//    max fl(x_i / T)).
//  - subnormal outputs: exp16's denorm_min/2 plus the product's rounding,
//    fl(1/S) <= 1: within 1 ulp of denorm_min, covered since a >= 1.
Contract shifted_contract() {
  return declared_contract(9, 0.0625, 2, 0, 4,
                           "shifted softmax with a monotone compensated f32 exp (1.494u derived) and 16-lane "
                           "summation (n/16 + 4 additions deep): e_j (1.494 + R)u, S (n/16 + 4 + 1.494 + R)u, "
                           "times fl(1/S) 2u: 8.988 + n/16 + 2R; temperature as "
                           "shifted: 4M");
}

// online_simd, first order in u = 2^-24. A term exp(z_i - M) of D is computed
// as a chain: t_i = exp16(fl(z_i - m_b)) (m_b: the row's running maximum after
// its block), times one factor exp16(fl(m_old - m_new)) per later growth of
// the maximum (each factor then multiplied in: +u). The arguments' rounding
// errors u|argument| telescope: (m_b - z_i) + sum (m_new - m_old) = M - z_i
// <= R. The exp16 errors: 1.494u each, one for t_i and one per rescale (at
// most one per later block: n/64 + 1 bounds them). Additions: within the lane
// at most ceil(n/16) - 1 <= n/16 after t_i, then the 4-level tree; every lane
// already shares the shift M, so no merge factor. So D carries
//   R + 1.494 + 2.494 (n/64 + 1) + n/16 + 4 = 7.988 + 0.1015n + R,
// y_j = exp16(fl(z_j - M)) (1.494 + R) times fl(1/D) (u) rounded (u) -- a stored
// t_j of a block shifted by M is that same exp16 value:
//   total 11.482 + 0.1015n + 2R <= 12 + n/8 + 2R (14 while each lane kept its
//   own maximum and the merge added 2.494u).
// Temperature: z_i = fl(x_i / T) everywhere, as shifted: t = 4. Subnormal
// outputs as shifted_simd. Entries that do not contribute (below L_T) add
// less than denorm_min each to D >= 1 (the lane holding M has d >= 1: its
// exp16(0) = 1 is exact, as are the factors exp16(0) = 1).
Contract online_contract() {
  return declared_contract(12, 0.125, 2, 0, 4,
                           "online softmax in blocks of 64 with one running maximum (Milakov-Gimelshein), "
                           "monotone exp16 (1.494u): D's chain of exps telescopes to R, 2.494u per rescale "
                           "(<= n/64 + 1), n/16 additions, tree 4u: 7.988 + 0.102n + R; "
                           "y = exp16 (1.494 + R) * fl(1/D) 2u: 11.482 + 0.102n + 2R; temperature 4M");
}

}  // namespace

std::string_view name(SimdIsa isa) { return isa_name(isa); }

bool simd_isa_supported(SimdIsa isa) { return isa_supported(isa, kKernelNeeds); }

SimdIsa best_simd_isa() { return best_isa(kKernelNeeds); }

unsigned simd_threads_used(std::int64_t rows, std::int64_t cols, unsigned threads) {
  // Waking a pool thread and waiting for it costs some microseconds, about
  // what a single thread needs for min_elements_per_thread elements; below
  // that a block would not pay for it.
  constexpr std::int64_t min_elements_per_thread = std::int64_t{1} << 13;
  const std::int64_t by_work = rows * cols / min_elements_per_thread;
  const std::int64_t most = std::min<std::int64_t>({static_cast<std::int64_t>(threads), rows, by_work});
  return most > 1 ? static_cast<unsigned>(most) : 1u;
}

void simd_softmax(SimdAlgorithm algorithm, SimdIsa isa, const float* x, float* y, std::int64_t rows,
                  std::int64_t cols, float temperature, unsigned threads) {
  if (!simd_isa_supported(isa))
    throw std::invalid_argument("simd softmax: this CPU lacks " + std::string(name(isa)));
  const RowFn row = algorithm == SimdAlgorithm::shifted ? row_for<SimdAlgorithm::shifted>(isa)
                                                        : row_for<SimdAlgorithm::online>(isa);
  const auto n = static_cast<std::size_t>(cols);
  const auto run_rows = [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r)
      row(x + r * cols, y + r * cols, n, temperature, next_row_to_prefetch(x, r, last, cols));
  };
  // Rows are independent and each is computed by the same code whichever
  // thread runs it, so any split gives the single-threaded bits (tested).
  // Contiguous blocks of rows on OpenMP's threads (parallel_blocks.hpp).
  const unsigned used = simd_threads_used(rows, cols, threads);
  if (used == 1) return run_rows(0, rows);
  run_blocks(used, [&](unsigned b) { run_rows(rows * b / used, rows * (b + 1) / used); });
}

std::vector<Kernel> simd_kernels() {
  std::vector<Kernel> out;
  const std::string here = std::string(" (here: ") + std::string(name(best_simd_isa())) + ")";
  // The _mt variants (shifted_simd_mt_f32, online_simd_mt_f32): the same
  // kernels on row blocks over every core (issue
  // 10: oneDNN parallelises batches over rows), for callers with one big
  // batch. The harness runs the plain ones: it already spreads jobs over cores.
  for (const auto& [a, row_parallel] :
       {std::pair{SimdAlgorithm::shifted, false}, std::pair{SimdAlgorithm::online, false},
        std::pair{SimdAlgorithm::shifted, true}, std::pair{SimdAlgorithm::online, true}}) {
    const bool shifted = a == SimdAlgorithm::shifted;
    const unsigned threads = row_parallel ? block_threads_available() : 1u;
    Kernel k;
    k.algorithm = std::string(shifted ? "shifted_simd" : "online_simd") + (row_parallel ? "_mt" : "");
    k.name = k.algorithm + "_f32";
    k.format = Format::f32;
    k.ops = {{Op::softmax, shifted ? shifted_contract() : online_contract()}};
    k.masked_policy = MaskedRowPolicy::nan;
    const std::string threading =
        !row_parallel ? std::string()
        : threads > 1 ? ", rows split over " + std::to_string(threads) + " OpenMP threads (the same bits as one)"
                      : std::string(", rows on one thread (one core, or built without OpenMP)");
    k.description = (shifted ? std::string("max-shifted softmax, three passes")
                             : std::string("online softmax in blocks of 64, one running maximum, "
                                           "exps stored and reused from the block where it last grew")) +
                    ", on 16-lane vectors (AVX-512, AVX2 or baseline x86-64, "
                    "picked at first use; the same bits), "
                    "polynomial exp, temperature fused into the passes" +
                    threading + here;
    k.compute = single_operand([kname = k.name, algorithm = a, threads, isa = best_simd_isa()](
                Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols, double temperature) {
      if (op != Op::softmax)
        throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
      simd_softmax(algorithm, isa, static_cast<const float*>(xv), static_cast<float*>(yv), rows, cols,
                   static_cast<float>(temperature), threads);
    });
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<float> exp16_for_test(SimdIsa isa, std::span<const float> d) {
  if (!simd_isa_supported(isa))
    throw std::invalid_argument("exp16: this CPU lacks " + std::string(name(isa)));
  std::vector<float> out(d.size());
  entry_for<ExpBody, const float*, float*, std::size_t>(isa)(d.data(), out.data(), d.size());
  return out;
}

}  // namespace softcheck::kernels
