// tiled_online: the host twin of the CUDA tiled online softmax (impls/cuda/).
//
// Per row, exactly what one CUDA block does (docs/cuda.md):
//   1. thread t of P owns, in every tile of P*V entries, the V consecutive
//      entries at tile_start + t*V; it folds them into its own state (m, d)
//      with online::absorb_tile (FlashAttention's per-tile update);
//   2. the P states are merged with ⊕: a pairwise tree inside each warp of 32
//      (the __shfl_down_sync reduction) and then over the warps, or a left
//      fold in thread order (MergeOrder::sequential);
//   3. split-row variant: steps 1-2 per segment, then the segment states are
//      folded in segment order (FlashAttention's split-KV combine);
//   4. second pass: y = exp(z - m) / d, or (z - m) - log d.
// Every arithmetic step is a function of softcheck/online_state.hpp, the same
// ones the device code calls, with the portable exp/log: the twin's output is
// the kernel's output bit for bit (scripts/gpu-check.sh checks it on a GPU).
#include "tiled_online.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "cuda_backend.hpp"
#include "kernel_util.hpp"
#include "softcheck/isa_dispatch.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::kernels {

using online::MergeOrder;
using online::State;

namespace {

// online::PortableExp on the host, with the CPU's FMA instruction where it
// has one: std::fma is correctly rounded either way, so the bits are the
// same, but compiled for baseline x86-64 each of portable::exp's 13 fmas is
// a call into libm (3 % of the quick suite's samples).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("fma"))) float exp_by_fma_instructions(float x) { return portable::exp(x); }
struct HostExp {
  float operator()(float x) const {
    static const bool has_fma = (cpu_features() & cpu_feature::fma) != 0;
    return has_fma ? exp_by_fma_instructions(x) : portable::exp(x);
  }
};
#else
using HostExp = online::PortableExp;
#endif
constexpr HostExp exp_fn{};
constexpr online::PortableLog log_fn{};

// ------------------------------------------------------------ one block

// Thread t's entries of the tile at tile_start, -inf past `end` (what the
// device's load_tile does).
void gather(std::span<const float> z, std::int64_t first, std::int64_t end, int count, float* out) {
  for (int v = 0; v < count; ++v) {
    const std::int64_t i = first + v;
    out[v] = i < end ? z[static_cast<std::size_t>(i)] : online::minus_inf;
  }
}

// Thread t's state over the tiles of [begin, end); `tile` is scratch for
// shape.per_thread floats (the host twin runs a block's threads one after the
// other: one buffer serves them all, instead of an allocation per thread and
// row, which dominated the fuzzers' time under ASan).
State thread_state(std::span<const float> z, std::int64_t begin, std::int64_t end,
                   online::TileShape shape, int t, float* tile) {
  State s = online::empty_state();
  for (std::int64_t tile_start = begin; tile_start < end; tile_start += shape.tile()) {
    gather(z, tile_start + static_cast<std::int64_t>(t) * shape.per_thread, end, shape.per_thread, tile);
    s = online::absorb_tile(s, tile, shape.per_thread, exp_fn);
  }
  return s;
}

// The warp-shuffle tree: each warp's 32 states, then the warp results padded
// to 32 with empty states (merging with an empty state is exact).
State tree_merge(std::vector<State>& states) {  // folds `states` in place
  const std::size_t warps = states.size() / online::warp_width;
  std::array<State, online::warp_width> per_warp;
  per_warp.fill(online::empty_state());
  for (std::size_t w = 0; w < warps; ++w)
    per_warp[w] = online::tree_fold(states.data() + w * online::warp_width, exp_fn);
  return online::tree_fold(per_warp.data(), exp_fn);
}

State block_state(std::span<const float> z, std::int64_t begin, std::int64_t end,
                  const TiledConfig& c) {
  thread_local std::vector<State> states;  // storage reused row to row
  thread_local std::vector<float> tile;
  states.resize(static_cast<std::size_t>(c.shape.threads));
  tile.resize(static_cast<std::size_t>(c.shape.per_thread));
  for (int t = 0; t < c.shape.threads; ++t)
    states[static_cast<std::size_t>(t)] = thread_state(z, begin, end, c.shape, t, tile.data());
  if (c.merge == MergeOrder::sequential)
    return online::sequential_fold(states.data(), c.shape.threads, exp_fn);
  return tree_merge(states);
}

// The row's state: one block, or one block per segment folded in order.
State row_state(std::span<const float> z, const TiledConfig& c) {
  const auto cols = static_cast<std::int64_t>(z.size());
  if (c.splits == 1) return block_state(z, 0, cols, c);
  const std::int64_t seg = online::segment_length(cols, c.splits, c.shape.tile());
  std::vector<State> partial;
  for (int s = 0; s < c.splits; ++s) {
    const std::int64_t begin = s * seg;
    partial.push_back(block_state(z, begin, std::min(begin + seg, cols), c));
  }
  return online::sequential_fold(partial.data(), c.splits, exp_fn);
}

void write_outputs(Op op, State row, std::span<float> zy) {
  const online::Normaliser n = online::normaliser(row);
  if (op == Op::softmax) {
    for (float& v : zy) v = online::softmax_of(v, n, exp_fn);
    return;
  }
  const float log_d = online::log_of_sum(n, log_fn);
  for (float& v : zy) v = online::log_softmax_of(v, n, log_d);
}

void check_config(const TiledConfig& c) {
  const int t = c.shape.threads;
  if (t < online::warp_width || t % online::warp_width != 0 ||
      t > online::warp_width * online::warp_width || c.shape.per_thread < 1 || c.splits < 1)
    throw std::invalid_argument("tiled_online: threads must be a multiple of 32 in [32, 1024]");
}

}  // namespace

void tiled_online_row(const TiledConfig& c, Op op, std::span<float> zy) {
  check_config(c);
  write_outputs(op, row_state(zy, c), zy);
}

std::string TiledConfig::algorithm() const {
  const std::string tile = "_t" + std::to_string(shape.tile());
  if (splits > 1) return "split_online" + tile + "_s" + std::to_string(splits);
  return "tiled_online" + tile + (merge == MergeOrder::tree ? "_tree" : "_seq");
}

std::string TiledConfig::describe() const {
  std::string s = std::to_string(shape.threads) + " threads x " + std::to_string(shape.per_thread) +
                  " entries per tile, " +
                  (merge == MergeOrder::tree ? "warp-shuffle tree merge" : "sequential merge in thread order");
  if (splits > 1) s += ", row split over " + std::to_string(splits) + " blocks merged in order";
  return s;
}

// ------------------------------------------------------------------ contracts

ExpError portable_exp_error() { return {}; }
ExpError cuda_expf_error() { return {4, 0, "CUDA expf (<= 2 ulp)"}; }
ExpError cuda_fast_expf_error() { return {4, 2.346, "__expf (<= 2 + floor(|1.173 x|) ulp)"}; }

// Softmax, first order in u (f32); e(x) = e0 + e1|x| the relative error of one
// exp (REFERENCE.md "exp accuracy"; k ulp <= 2k u). A term exp(z_j - m_j*)
// enters d and passes, on its way to the final d:
//   - its own evaluation: argument rounding u|z_j - m_j*| <= uR, exp e0 + e1 R;
//   - the tile sum of its thread: V - 1 additions (0 + t_0 is exact);
//   - at most C - 1 more additions into its thread's d (the first, 0 + sum,
//     is exact; C = tiles per block) and C - 1 rescales, each a multiply (u)
//     and an exp (e0) of an argument m_old - m_new;
//   - L merges with a non-empty state (tree: log2 P levels; sequential: P - 1;
//     split: S - 1 more), each an addition, a multiply and an exp (e0);
//     a rescale whose max did not move is exact (online::rescale) and merging
//     with an empty state is exact;
//   - all rescale arguments on the path add up to m_final - m_j* <= R: their
//     roundings give uR, their exps' e1 parts e1 R.
// d is a sum of positive terms, so its relative error is at most the worst
// path's. The second pass adds exp(z_j - m) (uR + e0 + e1 R) and the division
// (u). Total: 3(1 + e1)R + 2 e0 + V + (C - 1)(2 + e0) + L(2 + e0), and with
// C - 1 <= n/(S P V) + 1/(P V):
//   a = 2 e0 + V + 1 + L(2 + e0),  b = (2 + e0)/(S P V),  c = 3(1 + e1)
// (the +1 covers (2 + e0)/(P V) and portable::exp's 2^-20 ulp per evaluation).
// Temperature: 4uM (t = 4) as for the other kernels (docs/kernels.md).
// Componentwise: ulp(v) > u|v|; subnormal outputs and non-contributing
// entries as for online (docs/kernels.md).
// f16 in/out: the f32 result y32 = g(1 + K u32) is rounded once to f16:
// |y16 - g| <= ulp16(g) (half an ulp of y32's binade, which is at most one
// binade up) + K u32 g <= (1 + K 2^-13) ulp16(g). The temperature's real
// term is 4 u32 M = 4 2^-13 u16 M; t = 4 is kept, a looser but valid bound
// (and the registry's floor for every kernel).
Contract tiled_softmax_contract(const TiledConfig& c, const ExpError& e, Format f) {
  const double P = c.shape.threads, V = c.shape.per_thread, S = c.splits;
  const double block_merges = c.merge == MergeOrder::tree ? std::log2(P) : P - 1;
  const double L = block_merges + (S - 1);
  double a = 2 * e.e0 + V + 1 + L * (2 + e.e0);
  double b = (2 + e.e0) / (S * P * V);
  double cr = 3 * (1 + e.e1);
  std::string why = c.describe() + ", " + e.what +
                    ": 3(1 + e1)R + 2e0 + V + 1 + L(2 + e0) + (2 + e0)n/(SPV), L = " +
                    std::to_string(static_cast<int>(L)) +
                    " merges on a path (docs/cuda.md); temperature 4uM";
  if (f == Format::f16) {
    const double scale = std::ldexp(1.0, -13);  // u_f32 / u_f16
    a = 1 + a * scale;
    b *= scale;
    cr *= scale;
    why += "; f16 out: 1 ulp for the final rounding + the f32 terms times 2^-13";
  }
  return declared_contract(a, b, cr, 0, 4, why);
}

Contract tiled_log_softmax_contract() {
  return no_contract(
      "(z - m) - log d: d = fl(1 + s') loses s' < u, so a dominant entry's log-softmax "
      "(exactly about -s') comes out 0, an unbounded ULP error (as for shifted; "
      "REFERENCE.md, Blanchard-Higham-Higham's log1p form avoids it; FlashAttention's "
      "lse = m + log l has the same loss)");
}

// ------------------------------------------------------------ the kernels

namespace {

// Storage of a format as f32 values: load x_i, store y_i rounded to nearest even.
float load_value(const void* x, std::size_t i, Format f) {
  if (f == Format::f32) return static_cast<const float*>(x)[i];
  return static_cast<float>(decode16(static_cast<const std::uint16_t*>(x)[i], f));  // exact
}

void store_value(void* y, std::size_t i, float v, Format f) {
  if (f == Format::f32)
    static_cast<float*>(y)[i] = v;
  else
    static_cast<std::uint16_t*>(y)[i] = encode16(static_cast<double>(v), f);  // one rounding from v
}

}  // namespace

Kernel f32_statistics_kernel(std::string algorithm, Format format, std::string description,
                             std::vector<OpDecl> ops, F32Row row) {
  if (format != Format::f32 && format != Format::f16)
    throw std::invalid_argument("f32_statistics_kernel: f32 or f16 storage only");
  Kernel k;
  k.name = algorithm + "_" + std::string(name(format));
  k.algorithm = std::move(algorithm);
  k.format = format;
  k.ops = std::move(ops);
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = std::move(description);
  std::vector<Op> provided;
  for (const OpDecl& d : k.ops) provided.push_back(d.op);
  k.compute = single_operand([row = std::move(row), provided, format, kname = k.name](
              Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols,
              double temperature) {
    if (std::find(provided.begin(), provided.end(), op) == provided.end())
      throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
    const auto t = static_cast<float>(temperature);
    const auto n = static_cast<std::size_t>(cols);
    thread_local std::vector<float> zy;  // the row is read whole before it is written: x may alias y
    zy.resize(n);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::size_t base = static_cast<std::size_t>(r) * n;
      for (std::size_t i = 0; i < n; ++i) zy[i] = load_value(x, base + i, format) / t;
      row(op, zy);
      for (std::size_t i = 0; i < n; ++i) store_value(y, base + i, zy[i], format);
    }
  });
  return k;
}

namespace {

Kernel twin_kernel(const TiledConfig& c, Format f, const std::string& mirrors) {
  std::vector<OpDecl> ops = {{Op::softmax, tiled_softmax_contract(c, portable_exp_error(), f)},
                             {Op::log_softmax, tiled_log_softmax_contract()}};
  std::string description = "host twin" + (mirrors.empty() ? std::string() : " of " + mirrors) +
                            ": " + c.describe() + ", f32 statistics, portable exp";
  return f32_statistics_kernel(c.algorithm(), f, std::move(description), std::move(ops),
                               [c](Op op, std::span<float> zy) { tiled_online_row(c, op, zy); });
}

}  // namespace

std::vector<Kernel> tiled_online_kernels() {
  TiledConfig cuda_block;  // the CUDA kernels' shape
  cuda_block.shape = cuda::block_shape;
  TiledConfig seq = cuda_block;
  seq.merge = MergeOrder::sequential;
  TiledConfig one_warp = cuda_block;
  one_warp.shape.threads = 32;
  TiledConfig wide = cuda_block;
  wide.shape.threads = 1024;
  TiledConfig split = cuda_block;
  split.splits = cuda::split_blocks;
  return {
      twin_kernel(cuda_block, Format::f32, "cuda_tiled_online_f32"),
      twin_kernel(cuda_block, Format::f16, "cuda_tiled_online_f16"),
      twin_kernel(seq, Format::f32, "cuda_tiled_online_seq_f32"),
      twin_kernel(one_warp, Format::f32, ""),
      twin_kernel(wide, Format::f32, ""),
      twin_kernel(split, Format::f32, "cuda_split_online_f32"),
  };
}

}  // namespace softcheck::kernels
