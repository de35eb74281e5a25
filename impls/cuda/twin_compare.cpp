// cuda_twin_compare: every CUDA kernel against its host twin on the same rows
// (the run suite's input families plus tile-boundary rows), both ops.
//
//   cuda_twin_compare [--seed S] [--quick] [--cpu-selftest]
//
// --cpu-selftest compares host kernels instead (no GPU needed; a ctest): each
// twin with itself (must be bit-exact) and the tree twin with the sequential
// one (same exp, another merge order: differences expected and measured).
//
// Pairs whose CUDA side uses the portable exp/log must agree bit for bit (NaN
// counts as equal to NaN); the expf/__expf variants run the twin's order with
// another exp, and their largest difference is reported in ulps of the
// output format. Exit status: 0 every bit-exact pair agreed, 1 a bit-exact
// pair differed, 3 the CUDA kernels are unavailable here (nothing compared).
// Lines starting with "COMPARE" are for scripts (scripts/gpu-check.sh).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

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

void compare(const Kernel& gpu, const Kernel& twin, Op op, const Rows& r, Tally& tally) {
  const std::vector<double> a = run(gpu, op, r), b = run(twin, op, r);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ++tally.elements;
    if (same_bits(a[i], b[i], gpu.format)) continue;
    ++tally.differing;
    const double d = ulp_distance(a[i], b[i], gpu.format);
    if (d > tally.max_ulp) {
      tally.max_ulp = d;
      tally.worst = r.name + " cols=" + std::to_string(r.cols) + " T=" + std::to_string(r.temperature) +
                    " entry " + std::to_string(i);
    }
  }
}

Tally compare_pair(const kernels::CudaTwinPair& p, Op op, std::uint64_t seed, bool quick) {
  const Kernel* gpu = find_kernel(p.cuda);
  const Kernel* twin = find_kernel(p.twin);
  if (!gpu || !twin) throw std::logic_error("no kernel " + (gpu ? p.twin : p.cuda));
  Tally t;
  for (const Rows& r : cases(gpu->format, seed, quick)) compare(*gpu, *twin, op, r, t);
  return t;
}

void print(const kernels::CudaTwinPair& p, Op op, const Tally& t, bool bad) {
  const char* verdict = p.bit_exact ? (bad ? "MISMATCH (bit-exact expected)" : "bit-exact")
                                    : "not bit-exact by design (expected)";
  std::printf("%-30s %-30s %-11s %10llu %9llu %8.3g  %s%s%s\n", p.cuda.c_str(), p.twin.c_str(),
              std::string(name(op)).c_str(), static_cast<unsigned long long>(t.elements),
              static_cast<unsigned long long>(t.differing), t.max_ulp, verdict, t.worst.empty() ? "" : "; worst: ",
              t.worst.c_str());
  std::printf("COMPARE cuda=%s twin=%s op=%s elements=%llu differing=%llu max_ulp=%.6g bit_exact_expected=%d\n",
              p.cuda.c_str(), p.twin.c_str(), std::string(name(op)).c_str(),
              static_cast<unsigned long long>(t.elements), static_cast<unsigned long long>(t.differing), t.max_ulp,
              p.bit_exact ? 1 : 0);
}

// Every (pair, op) on its own thread (the host twin is the slow side), printed in order.
int compare_all(const std::vector<kernels::CudaTwinPair>& pairs, std::uint64_t seed, bool quick) {
  struct Job {
    const kernels::CudaTwinPair* pair;
    Op op;
    std::future<Tally> tally;
  };
  std::vector<Job> jobs;
  for (const kernels::CudaTwinPair& p : pairs)
    for (Op op : {Op::softmax, Op::log_softmax})
      jobs.push_back({&p, op, std::async(std::launch::async, compare_pair, std::cref(p), op, seed, quick)});
  bool mismatch = false;
  std::printf("%-30s %-30s %-11s %10s %9s %8s  %s\n", "cuda kernel", "host twin", "op", "elements", "differing",
              "max ulp", "verdict");
  for (Job& j : jobs) {
    const Tally t = j.tally.get();
    const bool bad = j.pair->bit_exact && t.differing > 0;
    mismatch = mismatch || bad;
    print(*j.pair, j.op, t, bad);
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
    if (selftest) return softcheck::compare_all(softcheck::cpu_selftest_pairs(), seed, quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_twin_compare: %s\n", e.what());
    return 2;
  }
  for (const softcheck::Kernel& k : softcheck::builtin_kernels())
    if (k.algorithm.rfind("cuda_", 0) == 0 && !k.available) {
      std::printf("CUDA kernels unavailable: %s; nothing compared\n", k.unavailable_reason.c_str());
      return 3;
    }
  try {
    return softcheck::compare_all(softcheck::kernels::cuda_twin_pairs(), seed, quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_twin_compare: %s\n", e.what());
    return 2;
  }
}
