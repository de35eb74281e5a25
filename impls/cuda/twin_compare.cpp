// cuda_twin_compare: every CUDA kernel against its host twin on the same rows:
// the softmax kernels on the run suite's input families plus tile-boundary
// rows, both ops; the attention kernel (cuda_attention_flash_f32 against
// attention_flash_twin_f32) on the attention families plus key-tile-boundary
// queries, both outputs (O and lse).
//
//   cuda_twin_compare [--seed S] [--quick] [--cpu-selftest]
//
// --cpu-selftest compares host kernels instead (no GPU needed; a ctest): each
// twin with itself (must be bit-exact), the tree twin with the sequential
// one (same exp, another merge order: differences expected and measured) and
// the attention twin with attention_flash_bc64_f32 (the same loop with
// glibc's exp2f / log2f: differences expected and measured).
//
// Pairs whose CUDA side uses the portable exp/log must agree bit for bit (NaN
// counts as equal to NaN); the expf/__expf variants run the twin's order with
// another exp, and their largest difference is reported in ulps of the
// output format. Exit status: 0 every bit-exact pair agreed, 1 a bit-exact
// pair differed, 3 the CUDA kernels are unavailable here (nothing compared).
// Lines starting with "COMPARE" are for scripts (scripts/gpu-check.sh).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_twin.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/storage.hpp"
#include "tiled_online.hpp"

namespace softcheck {
namespace {

struct Tally {
  std::uint64_t elements = 0, differing = 0;
  double max_ulp = 0;
  std::string worst;  // where max_ulp was seen
};

// Position of a value among the values of f: neighbours differ by 1, +0 and -0 are both 0.
std::int64_t ordinal(double v, Format f) {
  std::uint32_t magnitude = 0;
  bool negative = false;
  if (f == Format::f32) {
    const auto b = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    magnitude = b & 0x7fffffffu;
    negative = (b >> 31) != 0;
  } else {
    const std::uint16_t b = encode16(v, f);
    magnitude = b & 0x7fffu;
    negative = (b & 0x8000u) != 0;
  }
  return negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
}

bool same_bits(double a, double b, Format f) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (f == Format::f32)
    return std::bit_cast<std::uint32_t>(static_cast<float>(a)) == std::bit_cast<std::uint32_t>(static_cast<float>(b));
  return encode16(a, f) == encode16(b, f);
}

double ulp_distance(double a, double b, Format f) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
  return static_cast<double>(std::llabs(ordinal(a, f) - ordinal(b, f)));
}

struct Rows {
  std::string name;
  std::int64_t rows, cols;
  double temperature;
  std::vector<double> x;  // exact in the pair's format
};

// Rows whose maxima sit where tiles and threads meet (tile = 1024 entries,
// 4 per thread): a new max in the last tile, maxima on both sides of a tile
// boundary, a fully masked first tile, a rising row (a rescale at every entry).
std::vector<Rows> boundary_rows(Format f) {
  std::vector<Rows> out;
  auto add = [&](std::string name, std::int64_t cols, auto value) {
    Rows r{std::move(name), 1, cols, 1.0, std::vector<double>(static_cast<std::size_t>(cols))};
    for (std::int64_t i = 0; i < cols; ++i) r.x[static_cast<std::size_t>(i)] = round_to_format(value(i), f);
    out.push_back(std::move(r));
  };
  add("rising", 5000, [](std::int64_t i) { return 0.01 * static_cast<double>(i); });
  add("falling", 5000, [](std::int64_t i) { return -0.01 * static_cast<double>(i); });
  add("max_in_last_tile", 4100, [](std::int64_t i) { return i == 4099 ? 30.0 : std::sin(0.1 * static_cast<double>(i)); });
  add("max_across_boundary", 3072, [](std::int64_t i) {
    return i == 1023 || i == 1024 ? 12.0 : std::cos(0.37 * static_cast<double>(i));
  });
  add("masked_first_tiles", 4096, [](std::int64_t i) { return i < 2048 ? -INFINITY : std::sin(0.01 * static_cast<double>(i)); });
  return out;
}

std::vector<Rows> cases(Format f, std::uint64_t seed, bool quick) {
  std::vector<Rows> out = boundary_rows(f);
  const std::vector<std::int64_t> sizes = quick ? std::vector<std::int64_t>{3, 1025, 65536}
                                                : std::vector<std::int64_t>{1, 3, 31, 1000, 1023, 1024, 1025,
                                                                            4097, 65536, 300000};
  for (const InputFamily& fam : input_families())
    for (double t : {1.0, 0.7})
      for (std::int64_t cols : sizes) {
        if (fam.fixed_cols > 0 && cols != sizes.front()) continue;
        const std::int64_t c = fam.fixed_cols > 0 ? fam.fixed_cols : cols;
        const std::int64_t rows = std::clamp<std::int64_t>((std::int64_t{1} << 16) / c, 1, 8);
        const std::uint64_t case_seed = hash_mix(hash_mix(hash_mix(seed, fam.name), static_cast<std::uint64_t>(c)),
                                                 static_cast<std::uint64_t>(t * 1000));
        out.push_back({fam.name, rows, c, t, fill_rows(fam, f, rows, c, case_seed)});
      }
  return out;
}

std::vector<double> run(const Kernel& k, Op op, const Rows& r) {
  const std::vector<unsigned char> in = pack(r.x, k.format);
  std::vector<unsigned char> out(in.size());
  k.run(op, in.data(), out.data(), r.rows, r.cols, r.temperature);
  return unpack(out, k.format, r.x.size());
}

// Tallies the outputs a (CUDA) against b (twin), `where` naming the case.
void tally_outputs(const std::vector<double>& a, const std::vector<double>& b, Format f, const std::string& where,
                   Tally& tally) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    ++tally.elements;
    if (same_bits(a[i], b[i], f)) continue;
    ++tally.differing;
    const double d = ulp_distance(a[i], b[i], f);
    if (d > tally.max_ulp) {
      tally.max_ulp = d;
      tally.worst = where + " entry " + std::to_string(i);
    }
  }
}

void compare(const Kernel& gpu, const Kernel& twin, Op op, const Rows& r, Tally& tally) {
  tally_outputs(run(gpu, op, r), run(twin, op, r), gpu.format,
                r.name + " cols=" + std::to_string(r.cols) + " T=" + std::to_string(r.temperature), tally);
}

Tally compare_pair(const kernels::CudaTwinPair& p, Op op, std::uint64_t seed, bool quick) {
  const Kernel* gpu = find_kernel(p.cuda);
  const Kernel* twin = find_kernel(p.twin);
  if (!gpu || !twin) throw std::logic_error("no kernel " + (gpu ? p.twin : p.cuda));
  Tally t;
  for (const Rows& r : cases(gpu->format, seed, quick)) compare(*gpu, *twin, op, r, t);
  return t;
}

// ------------------------------------------------------------------ attention

// Queries of one shape, every value an f32 one: bias rows, q, K, V.
struct Queries {
  std::string name;
  std::int64_t rows, n, d;
  double temperature;
  std::vector<double> x, q, K, V;
  std::vector<KeyWindow> window = std::vector<KeyWindow>(static_cast<std::size_t>(rows));  // every key: (-1, -1)
};

// Gaussian queries (bias 0, one row) whose bias `bias(j)` (-inf masks key j,
// whose K and V then hold NaN and inf: never read) puts maxima and masks where
// the key tiles (Bc = 64) meet.
template <class Bias>
Queries boundary_query(std::string name, std::int64_t n, std::int64_t d, Bias bias) {
  std::mt19937_64 rng(hash_mix(1, name));
  std::normal_distribution<double> g(0, 1);
  Queries r{std::move(name), 1, n, d, 1.0, {}, {}, {}, {}, std::vector<KeyWindow>(1)};
  for (std::int64_t i = 0; i < d; ++i) r.q.push_back(round_to_format(g(rng), Format::f32));
  for (std::int64_t j = 0; j < n; ++j) {
    const double b = bias(j);
    r.x.push_back(round_to_format(b, Format::f32));
    for (std::int64_t i = 0; i < d; ++i) {
      const bool hidden = b == -INFINITY;
      r.K.push_back(hidden ? std::numeric_limits<double>::quiet_NaN() : round_to_format(g(rng), Format::f32));
      r.V.push_back(hidden ? (i % 2 ? INFINITY : -INFINITY) : round_to_format(g(rng), Format::f32));
    }
  }
  return r;
}

std::vector<Queries> attention_boundary_queries() {
  const auto key = [](std::int64_t j) { return static_cast<double>(j); };
  return {
      // The running max grows in every tile: every tile rescales (m, l) and O.
      boundary_query("rising_bias", 1000, 64, [&](std::int64_t j) { return 0.05 * key(j); }),
      boundary_query("max_in_last_tile", 257, 64, [&](std::int64_t j) { return j == 256 ? 30.0 : 0.0; }),
      boundary_query("max_across_tiles", 192, 128, [&](std::int64_t j) { return j == 63 || j == 64 ? 12.0 : 0.0; }),
      // Fully masked tiles first, in the middle and last: skipped, state untouched.
      boundary_query("masked_tiles", 320, 64,
                     [&](std::int64_t j) { return j < 64 || (j >= 128 && j < 192) || j >= 256 ? -INFINITY : 0.0; }),
      boundary_query("one_visible_key", 200, 32, [&](std::int64_t j) { return j == 131 ? 0.0 : -INFINITY; }),
      // Head dimensions that are not a multiple of the 32 staged K columns.
      boundary_query("odd_head_dim", 130, 33, [&](std::int64_t) { return 0.0; }),
      boundary_query("head_dim_1", 70, 1, [&](std::int64_t j) { return j % 3 == 0 ? -INFINITY : 0.0; }),
      boundary_query("wide_head", 65, 300, [&](std::int64_t) { return 0.0; }),
  };
}

std::vector<Queries> attention_cases(std::uint64_t seed, bool quick) {
  std::vector<Queries> out = attention_boundary_queries();
  const std::vector<std::int64_t> sizes = quick ? std::vector<std::int64_t>{1, 65, 1000}
                                                : std::vector<std::int64_t>{1, 17, 63, 64, 65, 128, 1000, 4097};
  for (const InputFamily& fam : attention_input_families())
    for (double t : {1.0, 0.7})
      for (std::int64_t n : sizes) {
        // Up to 2^20 products per case: the host twin is the slow side.
        const std::int64_t rows = std::clamp<std::int64_t>((std::int64_t{1} << 20) / (n * fam.head_dim), 1, 4);
        const std::uint64_t case_seed = hash_mix(hash_mix(hash_mix(seed, fam.name), static_cast<std::uint64_t>(n)),
                                                 static_cast<std::uint64_t>(t * 1000));
        const AttentionOperands ops = fill_attention_operands(fam, Format::f32, rows, n, case_seed);
        out.push_back({fam.name, rows, n, fam.head_dim, t, fill_rows(fam, Format::f32, rows, n, case_seed), ops.q,
                       ops.K, ops.V, ops.window});
      }
  return out;
}

// O (rows x d) and lse (rows) of an attention kernel on the queries.
std::array<std::vector<double>, 2> run_attention(const Kernel& k, const Queries& r) {
  const std::vector<unsigned char> x = pack(r.x, k.format), q = pack(r.q, k.format), K = pack(r.K, k.format),
                                   V = pack(r.V, k.format);
  const auto size = element_size(k.format);
  std::vector<unsigned char> O(static_cast<std::size_t>(r.rows * r.d) * size), lse(static_cast<std::size_t>(r.rows) * size);
  const void* in[] = {x.data(), q.data(), K.data(), V.data(), r.window.data()};
  void* out[] = {O.data(), lse.data()};
  k.call({Op::attention, in, out, r.rows, r.n, r.temperature, r.d});
  return {unpack(O, k.format, static_cast<std::size_t>(r.rows * r.d)),
          unpack(lse, k.format, static_cast<std::size_t>(r.rows))};
}

// The two outputs' tallies of an attention pair: [0] O, [1] lse.
std::vector<Tally> compare_attention_pair(const kernels::CudaTwinPair& p, std::uint64_t seed, bool quick) {
  const Kernel* gpu = find_kernel(p.cuda);
  const Kernel* twin = find_kernel(p.twin);
  if (!gpu || !twin) throw std::logic_error("no kernel " + (gpu ? p.twin : p.cuda));
  std::vector<Tally> t(2);
  for (const Queries& r : attention_cases(seed, quick)) {
    const auto a = run_attention(*gpu, r), b = run_attention(*twin, r);
    const std::string where = r.name + " n=" + std::to_string(r.n) + " d=" + std::to_string(r.d) +
                              " T=" + std::to_string(r.temperature);
    for (std::size_t o = 0; o < 2; ++o) tally_outputs(a[o], b[o], gpu->format, where, t[o]);
  }
  return t;
}

// -------------------------------------------------------------------- driver

void print(const kernels::CudaTwinPair& p, const std::string& op, const Tally& t, bool bad) {
  const char* verdict = p.bit_exact ? (bad ? "MISMATCH (bit-exact expected)" : "bit-exact")
                                    : "not bit-exact by design (expected)";
  std::printf("%-30s %-30s %-13s %10llu %9llu %8.3g  %s%s%s\n", p.cuda.c_str(), p.twin.c_str(), op.c_str(),
              static_cast<unsigned long long>(t.elements), static_cast<unsigned long long>(t.differing), t.max_ulp,
              verdict, t.worst.empty() ? "" : "; worst: ", t.worst.c_str());
  std::printf("COMPARE cuda=%s twin=%s op=%s elements=%llu differing=%llu max_ulp=%.6g bit_exact_expected=%d\n",
              p.cuda.c_str(), p.twin.c_str(), op.c_str(), static_cast<unsigned long long>(t.elements),
              static_cast<unsigned long long>(t.differing), t.max_ulp, p.bit_exact ? 1 : 0);
}

// Every (pair, op) on its own thread (the host twin is the slow side), printed
// in order; an attention pair is one job with two outputs, "attention:O" and
// "attention:lse".
int compare_all(const std::vector<kernels::CudaTwinPair>& pairs,
                const std::vector<kernels::CudaTwinPair>& attention_pairs, std::uint64_t seed, bool quick) {
  struct Job {
    const kernels::CudaTwinPair* pair;
    std::vector<std::string> ops;  // one per tally
    std::future<std::vector<Tally>> tallies;
  };
  std::vector<Job> jobs;
  for (const kernels::CudaTwinPair& p : pairs)
    for (Op op : {Op::softmax, Op::log_softmax})
      jobs.push_back({&p, {std::string(name(op))}, std::async(std::launch::async, [&p, op, seed, quick] {
                        return std::vector<Tally>{compare_pair(p, op, seed, quick)};
                      })});
  for (const kernels::CudaTwinPair& p : attention_pairs)
    jobs.push_back({&p, {"attention:O", "attention:lse"},
                    std::async(std::launch::async, compare_attention_pair, std::cref(p), seed, quick)});
  bool mismatch = false;
  std::printf("%-30s %-30s %-13s %10s %9s %8s  %s\n", "cuda kernel", "host twin", "op", "elements", "differing",
              "max ulp", "verdict");
  for (Job& j : jobs) {
    const std::vector<Tally> tallies = j.tallies.get();
    for (std::size_t o = 0; o < tallies.size(); ++o) {
      const bool bad = j.pair->bit_exact && tallies[o].differing > 0;
      mismatch = mismatch || bad;
      print(*j.pair, j.ops[o], tallies[o], bad);
    }
  }
  return mismatch ? 1 : 0;
}

std::vector<kernels::CudaTwinPair> cpu_selftest_pairs() {
  std::vector<kernels::CudaTwinPair> out;
  for (const kernels::CudaTwinPair& p : kernels::cuda_twin_pairs())
    if (p.bit_exact) out.push_back({p.twin, p.twin, true});
  out.push_back({"tiled_online_t1024_tree_f32", "tiled_online_t1024_seq_f32", false});
  return out;
}

// The attention twin against itself (bit-exact), and the CPU flash kernel of
// the same loop with glibc's exp2f / log2f against the twin (measured).
std::vector<kernels::CudaTwinPair> cpu_selftest_attention_pairs() {
  std::vector<kernels::CudaTwinPair> out;
  for (const kernels::CudaTwinPair& p : kernels::cuda_attention_twin_pairs())
    if (p.bit_exact) out.push_back({p.twin, p.twin, true});
  out.push_back({"attention_flash_bc64_f32", "attention_flash_twin_f32", false});
  return out;
}

}  // namespace
}  // namespace softcheck

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  bool quick = false, selftest = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--cpu-selftest") == 0) {
      selftest = true;
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: cuda_twin_compare [--seed S] [--quick] [--cpu-selftest]\n");
      return 2;
    }
  }
  try {
    if (selftest)
      return softcheck::compare_all(softcheck::cpu_selftest_pairs(), softcheck::cpu_selftest_attention_pairs(), seed,
                                    quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_twin_compare: %s\n", e.what());
    return 2;
  }
  for (const auto* list : {&softcheck::builtin_kernels(), &softcheck::attention_kernels()})
    for (const softcheck::Kernel& k : *list)
      if (k.algorithm.rfind("cuda_", 0) == 0 && !k.available) {
        std::printf("CUDA kernels unavailable: %s; nothing compared\n", k.unavailable_reason.c_str());
        return 3;
      }
  try {
    return softcheck::compare_all(softcheck::kernels::cuda_twin_pairs(), softcheck::kernels::cuda_attention_twin_pairs(),
                                  seed, quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_twin_compare: %s\n", e.what());
    return 2;
  }
}
