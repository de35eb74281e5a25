// The attention kernels (impls/src/attention.cpp) against the MPFR oracle
// (oracle::exact_attention) in the op's metrics: O scaled, |O^_i - O_i| /
// (u s_i) with s_i = sum_j p_j |V_ji|, and lse absolute, |lse^ - lse| / u,
// each within its declared bound on every row (Contract::bound_ulps of
// attention_row_shape). Rows: Gaussian q, K, V; a sink key; random -inf
// masks; -inf runs on the 16- and 64-key tile boundaries; huge biases,
// peaked, flat, increasing and cancelling scores, scores spread below f32's
// normal range; long rows and wide heads; at T = 1 and 0.7, in f32 and f64.
// Then fully masked rows (the declared policy), the tile sizes against each
// other and the naive kernel, V = 1 (mass conservation), and the two
// mutants, each caught on the rows it breaks. The largest error / bound per kernel and output is printed at
// the end, so the tightness of each contract is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention.hpp"
#include "softcheck/attention_oracle.hpp"
#include "softcheck/format.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/storage.hpp"

namespace softcheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------- kernels

const std::vector<Kernel>& attention_kernels() {
  static const std::vector<Kernel> k = kernels::make_attention_kernels();
  return k;
}

const std::vector<Kernel>& mutants() {
  static const std::vector<Kernel> k = kernels::make_attention_mutants();
  return k;
}

const Kernel& kernel(const std::string& name) {
  for (const std::vector<Kernel>* list : {&attention_kernels(), &mutants()})
    for (const Kernel& k : *list)
      if (k.name == name) return k;
  throw std::logic_error("no attention kernel " + name);
}

std::vector<const Kernel*> kernels_in(Format f) {
  std::vector<const Kernel*> out;
  for (const Kernel& k : attention_kernels())
    if (k.format == f) out.push_back(&k);
  return out;
}

// ------------------------------------------------------------------- rows

// One query: n bias entries, q (d), K and V (n x d, key-major).
struct Row {
  std::vector<double> x, q, K, V;
};

// Queries of the same shape, every value one of the format's.
struct Batch {
  std::string family;
  std::size_t n = 0, d = 0;
  double temperature = 1;
  Format format = Format::f32;
  std::vector<Row> rows;
};

using Rng = std::mt19937_64;
// Fills a row of n keys and head dimension d (values in double; the batch
// rounds them to its format).
using Family = std::function<Row(Rng&, std::size_t n, std::size_t d)>;

std::vector<double> gaussian(Rng& rng, std::size_t count, double sigma = 1) {
  std::normal_distribution<double> g(0, sigma);
  std::vector<double> v(count);
  for (double& e : v) e = g(rng);
  return v;
}

Row gaussian_row(Rng& rng, std::size_t n, std::size_t d) {
  return {std::vector<double>(n, 0.0), gaussian(rng, d), gaussian(rng, n * d), gaussian(rng, n * d)};
}

// Masks key j: bias -inf, and its K and V NaN and inf, which a kernel must
// never read (the oracle does not).
void mask(Row& r, std::size_t j, std::size_t d) {
  r.x[j] = -inf;
  for (std::size_t i = 0; i < d; ++i) {
    r.K[j * d + i] = nan;
    r.V[j * d + i] = i % 2 == 0 ? inf : nan;
  }
}

void mask_range(Row& r, std::size_t begin, std::size_t end, std::size_t d) {
  for (std::size_t j = begin; j < std::min(end, r.x.size()); ++j) mask(r, j, d);
}

// A sink: one key with bias +15 (REFERENCE.md "Attention rows").
Row sink_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  r.x[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)] = 15;
  return r;
}

// Each key masked with probability 0.3 (a row may end up fully masked).
Row random_mask_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  std::bernoulli_distribution masked(0.3);
  for (std::size_t j = 0; j < n; ++j)
    if (masked(rng)) mask(r, j, d);
  return r;
}

// -inf runs on the tile boundaries of both tile sizes: the first 16-key
// tile, the second 64-key tile (four 16-key tiles), and the last partial
// 64-key tile (which holds the last partial 16-key tile), each where it
// leaves some key visible.
Row tile_mask_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  if (n > 16) mask_range(r, 0, 16, d);
  if (n > 128) mask_range(r, 64, 128, d);
  const std::size_t last64 = (n - 1) / 64 * 64;
  if (last64 > 0 && n % 64 != 0) mask_range(r, last64, n, d);
  return r;
}

// The whole first 64-key tile masked (four 16-key tiles), and a
// fully masked tile in the middle.
Row first_tile_masked_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  mask_range(r, 0, std::min<std::size_t>(64, n - 1), d);
  if (n > 256) mask_range(r, 192, 256, d);
  return r;
}

// A large common bias (|x| ~ 3e4): M large, R small.
Row huge_bias_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  const double base = std::bernoulli_distribution(0.5)(rng) ? 3e4 : -3e4;
  for (double& v : r.x) v = base + std::normal_distribution<double>(0, 2)(rng);
  return r;
}

// q and K with sigma 4: scores of sigma ~16, p near one-hot, D large.
Row peaked_row(Rng& rng, std::size_t n, std::size_t d) {
  return {std::vector<double>(n, 0.0), gaussian(rng, d, 4), gaussian(rng, n * d, 4), gaussian(rng, n * d)};
}

// q = 0: every score 0, p uniform.
Row flat_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  std::fill(r.q.begin(), r.q.end(), 0.0);
  return r;
}

// Large products that cancel in the dot: q_i = +-a, K_ji = a, a in [1, 40],
// each perturbed by 1e-3 relative: scores of order a^2 1e-3 sqrt(d) against
// D of order a^2 sqrt(d), so the dot products' rounding (the h D term) is
// what the row tests.
Row cancelling_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  const double a = std::uniform_real_distribution<double>(1, 40)(rng);
  for (std::size_t i = 0; i < d; ++i) r.q[i] = (i % 2 == 1 ? -a : a) * (1 + 1e-3 * r.q[i]);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < d; ++i) r.K[j * d + i] = a * (1 + 1e-3 * r.K[j * d + i]);
  return r;
}

// Biases spread over [-110, 0]: terms exp(z_j - max) down to e^-110, below
// f32's normal range (subnormal and zero P) while still contributing.
Row wide_range_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  for (double& v : r.x) v = std::uniform_real_distribution<double>(-110, 0)(rng);
  return r;
}

// Scores growing along the row (bias 0.05 j): the running max grows in every
// tile, so every tile's alpha rescales O.
Row increasing_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  for (std::size_t i = 0; i < d; ++i) r.q[i] *= 0.1;
  for (std::size_t j = 0; j < n; ++j) r.x[j] = 0.05 * static_cast<double>(j);
  return r;
}

// V = 1: O = 1 exactly (mass conservation; REFERENCE.md "Attention rows").
Family with_unit_values(Family f) {
  return [f](Rng& rng, std::size_t n, std::size_t d) {
    Row r = f(rng, n, d);
    for (std::size_t j = 0; j < n; ++j)
      if (r.x[j] != -inf)
        for (std::size_t i = 0; i < d; ++i) r.V[j * d + i] = 1;
    return r;
  };
}

double in_format(double v, Format f) { return std::isnan(v) ? v : round_to_format(v, f); }

Batch make_batch(const std::string& family, const Family& fill, std::size_t n, std::size_t d, double temperature,
                 Format f, std::size_t rows, std::uint64_t seed) {
  Rng rng(seed ^ (n * 1000003 + d * 7919 + (f == Format::f32 ? 17 : 29)));
  Batch b{family, n, d, temperature, f, {}};
  for (std::size_t r = 0; r < rows; ++r) {
    Row row = fill(rng, n, d);
    for (std::vector<double>* v : {&row.x, &row.q, &row.K, &row.V})
      for (double& e : *v) e = in_format(e, f);
    b.rows.push_back(std::move(row));
  }
  return b;
}

// ----------------------------------------------------------------- calls

struct Outputs {
  std::vector<double> O, lse;  // rows x d, rows
};

std::vector<double> concat(const Batch& b, std::vector<double> Row::* field) {
  std::vector<double> v;
  for (const Row& r : b.rows) v.insert(v.end(), (r.*field).begin(), (r.*field).end());
  return v;
}

Outputs call(const Kernel& k, const Batch& b) {
  const std::vector<unsigned char> x = pack(concat(b, &Row::x), k.format), q = pack(concat(b, &Row::q), k.format),
                                   K = pack(concat(b, &Row::K), k.format), V = pack(concat(b, &Row::V), k.format);
  const std::size_t rows = b.rows.size();
  std::vector<unsigned char> O(rows * b.d * element_size(k.format)), lse(rows * element_size(k.format));
  const void* in[] = {x.data(), q.data(), K.data(), V.data()};
  void* out[] = {O.data(), lse.data()};
  k.call({Op::attention, in, out, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(b.n), b.temperature,
          static_cast<std::int64_t>(b.d)});
  return {unpack(O, k.format, rows * b.d), unpack(lse, k.format, rows)};
}

std::vector<oracle::ExactAttention> exact(const Batch& b) {
  std::vector<oracle::ExactAttention> e;
  for (const Row& r : b.rows)
    e.push_back(oracle::exact_attention(r.x, r.q, r.K, r.V, static_cast<std::int64_t>(b.d), b.temperature));
  return e;
}

// ----------------------------------------------------------- measurement

// The largest error / bound seen per kernel and output, overall and per
// family, printed at the end.
struct Tightness {
  double ratio[2] = {0, 0};
  std::string where[2];
  std::size_t rows = 0;
};
struct Tally {
  Tightness overall;
  std::map<std::string, Tightness> by_family;
};
std::map<std::string, Tally>& tightness() {
  static std::map<std::string, Tally> t;
  return t;
}

void tally(const std::string& kernel_name, const std::string& family, const std::string& where, const double ratio[2]) {
  Tally& t = tightness()[kernel_name];
  for (Tightness* s : {&t.overall, &t.by_family[family]}) {
    ++s->rows;
    for (std::size_t o = 0; o < 2; ++o)
      if (ratio[o] > s->ratio[o]) {
        s->ratio[o] = ratio[o];
        s->where[o] = where;
      }
  }
}

class PrintTightness : public ::testing::Environment {
 public:
  void TearDown() override {
    if (tightness().empty()) return;
    std::printf("\nlargest error / bound per kernel (O scaled, lse absolute):\n");
    for (const auto& [kernel_name, t] : tightness()) {
      std::printf("  %-31s O %9.4f (%s)\n  %-31s lse %7.4f (%s), %zu rows\n", kernel_name.c_str(), t.overall.ratio[0],
                  t.overall.where[0].c_str(), "", t.overall.ratio[1], t.overall.where[1].c_str(), t.overall.rows);
      for (const auto& [family, f] : t.by_family)
        std::printf("      %-20s O %9.4f   lse %7.4f   (%zu rows)\n", family.c_str(), f.ratio[0], f.ratio[1], f.rows);
    }
  }
};
const ::testing::Environment* const print_tightness = ::testing::AddGlobalTestEnvironment(new PrintTightness);

// One row's verdict: each output's error and bound (policy rows: whether it
// holds).
struct RowVerdict {
  bool holds = true;
  double error[2] = {0, 0}, bound[2] = {0, 0};
  double ratio[2] = {0, 0};  // error / bound (0 for a policy row)
  std::string why;
};

std::span<const double> row_of(const std::vector<double>& v, std::size_t r, std::size_t width) {
  return {v.data() + r * width, width};
}

RowVerdict judge_row(const Kernel& k, const Batch& b, const Outputs& out, const oracle::ExactAttention& e,
                     std::size_t r) {
  const OpDecl& decl = *k.find(Op::attention);
  const Row& row = b.rows[r];
  const std::span<const double> O = row_of(out.O, r, b.d), lse = row_of(out.lse, r, 1);
  const double u = unit_roundoff(k.format);
  RowVerdict v;
  if (e.status == oracle::RowStatus::all_masked) {
    const auto n = static_cast<double>(b.n);
    for (double o : O)
      if (!is_masked_row_value(o, OutputKind::attention_output, k.masked_policy, n, u)) v.holds = false;
    if (!is_masked_row_value(lse[0], OutputKind::log_sum_exp, k.masked_policy, n, u)) v.holds = false;
    if (!v.holds) v.why = "fully masked row breaks policy " + std::string(name(k.masked_policy));
    return v;
  }
  const RowShape shape = attention_row_shape(row.x, row.q, row.K, static_cast<std::int64_t>(b.d), b.temperature,
                                             k.format);
  const OperandList outs = spec(Op::attention).out;
  const RowError errors[2] = {compare_row(O, e.output, k.format, outs[0], e.scale),
                              compare_row(lse, oracle::exact_values(e, OutputKind::log_sum_exp), k.format, outs[1])};
  for (std::size_t o = 0; o < 2; ++o) {
    v.error[o] = errors[o].max_ulp;
    v.bound[o] = decl.contract_of(o).bound_ulps(shape, k.format);
    v.ratio[o] = v.error[o] == 0 ? 0 : v.error[o] / v.bound[o];
    if (errors[o].nonfinite != 0 || errors[o].special_mismatch != 0 || !(v.error[o] <= v.bound[o])) {
      v.holds = false;
      v.why += std::string(o == 0 ? "O" : "lse") + " error " + std::to_string(v.error[o]) + " bound " +
               std::to_string(v.bound[o]) + (errors[o].nonfinite != 0 ? " (non-finite)" : "") +
               (errors[o].special_mismatch != 0 ? " (special mismatch)" : "") + "; ";
    }
  }
  return v;
}

std::string label(const Batch& b, std::size_t r) {
  return b.family + " n=" + std::to_string(b.n) + " d=" + std::to_string(b.d) +
         " T=" + std::to_string(b.temperature).substr(0, 3) + " row " + std::to_string(r);
}

// Every row of the batch within k's bounds (or policy); the ratios tallied.
::testing::AssertionResult holds(const Kernel& k, const Batch& b, const std::vector<oracle::ExactAttention>& e) {
  const Outputs out = call(k, b);
  std::string failures;
  for (std::size_t r = 0; r < b.rows.size(); ++r) {
    const RowVerdict v = judge_row(k, b, out, e[r], r);
    tally(k.name, b.family, label(b, r), v.ratio);
    if (!v.holds) failures += "\n  " + label(b, r) + ": " + v.why;
  }
  if (failures.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << k.name << failures;
}

// The family on every shape of the grid, both temperatures and formats,
// checked on every kernel of the batch's format.
void check_family(const std::string& family, const Family& fill, const std::vector<std::size_t>& sizes,
                  const std::vector<std::size_t>& dims, std::size_t rows, std::uint64_t seed) {
  for (Format f : {Format::f32, Format::f64})
    for (double temperature : {1.0, 0.7})
      for (std::size_t n : sizes)
        for (std::size_t d : dims) {
          const Batch b = make_batch(family, fill, n, d, temperature, f, rows, seed);
          const std::vector<oracle::ExactAttention> e = exact(b);
          for (const Kernel* k : kernels_in(f)) EXPECT_TRUE(holds(*k, b, e));
        }
}

const std::vector<std::size_t> grid_sizes = {1, 2, 17, 64, 65, 1000};
const std::vector<std::size_t> grid_dims = {1, 8, 64, 128};

// ------------------------------------------------------------------ tests

TEST(AttentionKernels, DeclareTheirContractsPoliciesAndNames) {
  const std::vector<std::string> names = {"attention_naive_f32",      "attention_naive_f64",
                                          "attention_flash_bc64_f32", "attention_flash_bc64_f64",
                                          "attention_flash_bc16_f32", "attention_flash_bc16_f64"};
  ASSERT_EQ(attention_kernels().size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Kernel& k = attention_kernels()[i];
    EXPECT_EQ(k.name, names[i]);
    EXPECT_EQ(k.name, k.algorithm + "_" + std::string(name(k.format)));
    EXPECT_FALSE(k.test_only);
    ASSERT_EQ(k.ops.size(), 1u);
    const OpDecl& d = k.ops[0];
    EXPECT_EQ(d.op, Op::attention);
    EXPECT_TRUE(d.contract_of(0).declared) << k.name;
    EXPECT_TRUE(d.contract_of(1).declared) << k.name;
    EXPECT_EQ(k.masked_policy, k.algorithm == "attention_naive" ? MaskedRowPolicy::nan : MaskedRowPolicy::zeros);
  }
  const OpDecl& flash = *kernel("attention_flash_bc64_f32").find(Op::attention);
  for (const Kernel& m : mutants()) {
    EXPECT_TRUE(m.test_only) << m.name;
    EXPECT_EQ(m.format, Format::f32);
    const OpDecl& d = *m.find(Op::attention);
    for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(d.contract_of(o).formula(), flash.contract_of(o).formula()) << m.name;
  }
  EXPECT_EQ(mutants()[0].name, "attention_flash_no_rescale_f32");
  EXPECT_EQ(mutants()[1].name, "attention_flash_p_bf16_f32");
  for (const Kernel& k : attention_kernels())
    std::printf("%-28s O   %s\n%-28s lse %s\n", k.name.c_str(), k.ops[0].contract.formula().c_str(), "",
                k.ops[0].contract_of(1).formula().c_str());
}

TEST(AttentionKernels, HoldTheirContractsOnGaussianRows) {
  check_family("gaussian", gaussian_row, grid_sizes, grid_dims, 2, 1);
}

TEST(AttentionKernels, HoldTheirContractsWithASinkKey) {
  check_family("sink", sink_row, grid_sizes, grid_dims, 2, 2);
}

// Masked keys hold NaN and inf in K and V: a kernel that read them would
// give a non-finite output.
TEST(AttentionKernels, HoldTheirContractsWithRandomMasks) {
  check_family("random_mask", random_mask_row, grid_sizes, grid_dims, 3, 3);
}

TEST(AttentionKernels, HoldTheirContractsWithMaskRunsOnTileBoundaries) {
  check_family("tile_mask", tile_mask_row, {17, 65, 129, 200, 1000}, {1, 8, 64}, 2, 4);
  check_family("first_tile_masked", first_tile_masked_row, {65, 100, 1000}, {8, 64}, 2, 5);
}

TEST(AttentionKernels, HoldTheirContractsOnHugeBiasesPeakedFlatAndCancellingScores) {
  check_family("huge_bias", huge_bias_row, {1, 17, 65, 1000}, {1, 8, 64}, 2, 6);
  check_family("peaked", peaked_row, {2, 17, 65, 1000}, {1, 8, 64, 128}, 2, 7);
  check_family("flat", flat_row, {1, 17, 65, 1000}, {1, 8, 64}, 2, 8);
  check_family("increasing", increasing_row, {65, 1000}, {8, 64}, 2, 9);
  check_family("cancelling", cancelling_row, {2, 65, 300}, {2, 8, 64}, 2, 13);
  check_family("wide_range", wide_range_row, {17, 65, 1000}, {1, 8}, 2, 14);
}

TEST(AttentionKernels, HoldTheirContractsOnLongRowsAndWideHeads) {
  check_family("long", gaussian_row, {4096}, {8}, 1, 10);
  check_family("sink_long", sink_row, {65536}, {1}, 1, 11);
  check_family("wide_head", gaussian_row, {64, 300}, {256}, 1, 12);
}

// A fully masked query among visible ones: the declared policy (naive nan:
// O NaN, lse NaN or -inf; flash zeros: O = 0, lse = -inf), the masked keys'
// NaN K and V never read, and the other queries the same bits as alone.
TEST(AttentionKernels, FullyMaskedRowsFollowTheDeclaredPolicy) {
  for (Format f : {Format::f32, Format::f64}) {
    for (std::size_t n : {1u, 17u, 65u, 200u}) {
      Batch b = make_batch("fully_masked", gaussian_row, n, 8, 1.0, f, 3, 20);
      mask_range(b.rows[1], 0, n, 8);
      const std::vector<oracle::ExactAttention> e = exact(b);
      ASSERT_EQ(e[1].status, oracle::RowStatus::all_masked);
      for (const Kernel* k : kernels_in(f)) {
        EXPECT_TRUE(holds(*k, b, e));
        const Outputs all = call(*k, b);
        for (std::size_t i = 0; i < 8; ++i) {
          const double o = all.O[8 + i];
          if (k->masked_policy == MaskedRowPolicy::zeros)
            EXPECT_TRUE(o == 0 && !std::signbit(o)) << k->name << " O_" << i << " = " << o;
          else
            EXPECT_TRUE(std::isnan(o)) << k->name << " O_" << i << " = " << o;
        }
        if (k->masked_policy == MaskedRowPolicy::zeros) EXPECT_EQ(all.lse[1], -inf) << k->name;
        else EXPECT_TRUE(std::isnan(all.lse[1]) || all.lse[1] == -inf) << k->name;
        for (std::size_t r : {0u, 2u}) {
          Batch alone = b;
          alone.rows = {b.rows[r]};
          const Outputs one = call(*k, alone);
          for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(one.O[i], all.O[r * 8 + i]) << k->name;
          EXPECT_EQ(one.lse[0], all.lse[r]) << k->name;
        }
      }
    }
  }
}

// Bc = 16, Bc = 64 and the naive kernel on the same rows: every pair within
// the sum of its bounds, |O_a - O_b| <= (B_a + B_b) u s_i and
// |lse_a - lse_b| <= (B_a + B_b) u.
TEST(AttentionKernels, TileSizesAndTheNaiveKernelAgreeWithinTheirBounds) {
  for (Format f : {Format::f32, Format::f64}) {
    const auto of_format = [f](std::string algorithm) { return algorithm.append("_").append(name(f)); };
    const Kernel* ks[] = {&kernel(of_format("attention_naive")), &kernel(of_format("attention_flash_bc16")),
                          &kernel(of_format("attention_flash_bc64"))};
    const double u = unit_roundoff(f);
    for (const auto& [family, fill] : std::vector<std::pair<std::string, Family>>{
             {"gaussian", gaussian_row}, {"tile_mask", tile_mask_row}, {"sink", sink_row}}) {
      for (std::size_t n : {17u, 65u, 1000u}) {
        const Batch b = make_batch(family, fill, n, 64, 0.7, f, 2, 30);
        const std::vector<oracle::ExactAttention> e = exact(b);
        Outputs out[3];
        for (std::size_t i = 0; i < 3; ++i) out[i] = call(*ks[i], b);
        for (std::size_t r = 0; r < b.rows.size(); ++r) {
          const Row& row = b.rows[r];
          const RowShape shape = attention_row_shape(row.x, row.q, row.K, 64, b.temperature, f);
          for (std::size_t a = 0; a < 3; ++a)
            for (std::size_t c = a + 1; c < 3; ++c) {
              const OpDecl& da = *ks[a]->find(Op::attention);
              const OpDecl& dc = *ks[c]->find(Op::attention);
              const double bound_O = da.contract.bound_ulps(shape, f) + dc.contract.bound_ulps(shape, f);
              const double bound_lse =
                  da.contract_of(1).bound_ulps(shape, f) + dc.contract_of(1).bound_ulps(shape, f);
              for (std::size_t i = 0; i < 64; ++i) {
                const double s = static_cast<double>(e[r].scale[i]);
                EXPECT_LE(std::fabs(out[a].O[r * 64 + i] - out[c].O[r * 64 + i]), bound_O * u * s)
                    << ks[a]->name << " vs " << ks[c]->name << " " << label(b, r) << " O_" << i;
              }
              EXPECT_LE(std::fabs(out[a].lse[r] - out[c].lse[r]), bound_lse * u)
                  << ks[a]->name << " vs " << ks[c]->name << " " << label(b, r);
            }
        }
      }
    }
  }
}

// V = 1: O = 1 exactly and s_i = 1, so |O_i - 1| <= bound u, without the oracle.
TEST(AttentionKernels, ValuesOfOneGiveOneWithinTheBound) {
  for (Format f : {Format::f32, Format::f64})
    for (const auto& [family, fill] : std::vector<std::pair<std::string, Family>>{
             {"gaussian", gaussian_row}, {"sink", sink_row}, {"tile_mask", tile_mask_row}, {"peaked", peaked_row}})
      for (std::size_t n : {2u, 65u, 1000u}) {
        const Batch b = make_batch(family + "_v1", with_unit_values(fill), n, 8, 1.0, f, 2, 40);
        for (const Kernel* k : kernels_in(f)) {
          const Outputs out = call(*k, b);
          for (std::size_t r = 0; r < b.rows.size(); ++r) {
            const Row& row = b.rows[r];
            const double bound =
                k->ops[0].contract.bound_ulps(attention_row_shape(row.x, row.q, row.K, 8, 1.0, f), f);
            for (std::size_t i = 0; i < 8; ++i)
              EXPECT_LE(std::fabs(out.O[r * 8 + i] - 1), bound * unit_roundoff(f)) << k->name << " " << label(b, r);
          }
        }
      }
}

// ------------------------------------------------------------------ mutants

// The largest error / bound of output `o` over the batch's rows.
double worst_ratio(const Kernel& k, const Batch& b, std::size_t o) {
  const std::vector<oracle::ExactAttention> e = exact(b);
  const Outputs out = call(k, b);
  double worst = 0;
  for (std::size_t r = 0; r < b.rows.size(); ++r) {
    const RowVerdict v = judge_row(k, b, out, e[r], r);
    tally(k.name, b.family, label(b, r), v.ratio);
    worst = std::max(worst, v.ratio[o]);
  }
  return worst;
}

// Increasing scores: the max grows in every tile, and the tiles whose P.V
// was not rescaled keep weights up to exp(0.05 x 64) = 25 times too large.
TEST(AttentionMutants, NoRescaleIsCaughtOnIncreasingScores) {
  const Kernel& mutant = kernel("attention_flash_no_rescale_f32");
  const Kernel& correct = kernel("attention_flash_bc64_f32");
  const Batch b = make_batch("increasing", increasing_row, 1000, 8, 1.0, Format::f32, 2, 50);
  EXPECT_TRUE(holds(correct, b, exact(b)));
  const double ratio = worst_ratio(mutant, b, 0);
  std::printf("attention_flash_no_rescale_f32 on increasing scores: O error / bound %.3g\n", ratio);
  EXPECT_GT(ratio, 1);
  // Within one tile (n <= 64) the max never grows after the first tile:
  // the mutant is the correct kernel there.
  const Batch one_tile = make_batch("increasing", increasing_row, 64, 8, 1.0, Format::f32, 2, 51);
  const Outputs a = call(mutant, one_tile), c = call(correct, one_tile);
  EXPECT_EQ(a.O, c.O);
}

// P just below a bf16 rounding midpoint: key 0 has score 0 and every other
// key the score log(0.75 + 0.8 x 2^-9), whose P rounds down to 0.75 in bf16
// (spacing 2^-8 in [0.5, 1)): O loses 0.2 % of its mass, ~3e4 u.
Row bf16_midpoint_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = gaussian_row(rng, n, d);
  std::fill(r.q.begin(), r.q.end(), 0.0);
  for (std::size_t j = 1; j < n; ++j) r.x[j] = std::log(0.75 + 0.8 * std::ldexp(1.0, -9));
  return r;
}

// A sink key whose value is 0 (attention sinks carry little value): the
// sink's P is exp2(0) = 1 (exact in bf16), but O and its scale s_i are made
// of the other keys alone, whose P the mutant rounds to 8 bits.
Row valueless_sink_row(Rng& rng, std::size_t n, std::size_t d) {
  Row r = sink_row(rng, n, d);
  for (std::size_t j = 0; j < n; ++j)
    if (r.x[j] == 15)
      for (std::size_t i = 0; i < d; ++i) r.V[j * d + i] = 0;
  return r;
}

TEST(AttentionMutants, PInBf16IsCaughtOnPNearARoundingMidpointAndOnAValuelessSink) {
  const Kernel& mutant = kernel("attention_flash_p_bf16_f32");
  const Kernel& correct = kernel("attention_flash_bc64_f32");
  const Batch midpoint =
      make_batch("bf16_midpoint_v1", with_unit_values(bf16_midpoint_row), 64, 8, 1.0, Format::f32, 2, 60);
  EXPECT_TRUE(holds(correct, midpoint, exact(midpoint)));
  const double r1 = worst_ratio(mutant, midpoint, 0);
  const Batch sink = make_batch("valueless_sink", valueless_sink_row, 17, 8, 1.0, Format::f32, 8, 61);
  EXPECT_TRUE(holds(correct, sink, exact(sink)));
  const double r2 = worst_ratio(mutant, sink, 0);
  // A sink whose value is not 0 hides the mutant: the sink's P = 1 is exact
  // in bf16 and the other keys' mass is ~e^-15 of it.
  const Batch plain_sink = make_batch("sink", sink_row, 1000, 64, 1.0, Format::f32, 2, 62);
  const double r3 = worst_ratio(mutant, plain_sink, 0);
  std::printf("attention_flash_p_bf16_f32: O error / bound %.3g (P near a bf16 midpoint, V = 1), %.3g (sink "
              "with V = 0), %.3g (sink with Gaussian V: hidden)\n",
              r1, r2, r3);
  EXPECT_GT(r1, 1);
  EXPECT_GT(r2, 1);
}

}  // namespace
}  // namespace softcheck
