// Unit tests of the fuzz-target library: the input codec, the kernel pool, the
// invariant checks (they must catch the planted mutants), the soundness of
// fuzz_differential's long double prefilter against the MPFR oracle, and the
// checks of the gradient ops (targets and g decoded, the careless kernel and
// broken masks caught, the registered kernels passing).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>

#include "differential.hpp"
#include "fuzz_case.hpp"
#include "gradient_checks.hpp"
#include "invariants.hpp"
#include "pool.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::fuzz {
namespace {

bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

bool exact_in(double v, Format f) { return std::isnan(v) || round_to_format(v, f) == v; }

Pool builtins() { return choose_pool(nullptr).pool; }

// The pool before the gradient kernels joined it: the built-in kernels alone.
Pool softmax_kernels_only() {
  Pool p;
  for (const Kernel& k : builtin_kernels())
    if (k.available && !k.test_only) p.push_back(&k);
  return p;
}

// One row for kernel k (op), the other inputs as decode makes them when the
// input ends after the values (targets the largest entry, g = 1).
FuzzCase one_row_of(const Kernel& k, Op op, std::vector<double> row, double t = 1.0) {
  FuzzCase c;
  c.kernel = &k;
  c.op = op;
  c.cols = static_cast<std::int64_t>(row.size());
  c.temperature = t;
  c.values = std::move(row);
  default_other_inputs(c);
  return c;
}

FuzzCase one_row(const char* kernel, Op op, std::vector<double> row, double t = 1.0) {
  return one_row_of(*find_kernel(kernel), op, std::move(row), t);
}

std::vector<std::uint8_t> random_bytes(Rng& rng, std::size_t n) {
  std::vector<std::uint8_t> b(n);
  for (auto& v : b) v = static_cast<std::uint8_t>(rng.next());
  return b;
}

// A row mixing the special values, small integers and random bits of f.
std::vector<double> mixed_row(Rng& rng, Format f, std::size_t n) {
  const std::vector<double> sp = special_values(f);
  std::vector<double> row;
  for (std::size_t i = 0; i < n; ++i) {
    switch (rng.below(3)) {
      case 0: row.push_back(sp[rng.below(sp.size())]); break;
      case 1: row.push_back(static_cast<double>(static_cast<int>(rng.below(64)) - 32)); break;
      default: row.push_back(round_to_format(rng.normal(0, 50), f)); break;
    }
  }
  return row;
}

// Kernels sharing a point of the kernel circle cannot all be encoded; a
// registry with such a pair still works (the later one by name is unreachable
// by encode, reachable by nothing else) but should rename one of them.
TEST(FuzzCodec, NoTwoKernelsShareACirclePoint) {
  Pool all = builtins();
  for (const Kernel& k : mutant_kernels()) all.push_back(&k);
  for (const Kernel& k : gradient_kernels())
    if (k.test_only) all.push_back(&k);  // the careless one: planted mode
  for (const auto& [a, b] : kernel_collisions(all)) ADD_FAILURE() << a->name << " and " << b->name << " collide";
}

// Adding kernels to the pool leaves the encoding of the others unchanged.
TEST(FuzzCodec, KernelEncodingIsStableAcrossRegistryChanges) {
  const Pool pool = builtins();
  Pool bigger = pool;
  for (const Kernel& k : mutant_kernels()) bigger.push_back(&k);
  for (const Kernel* k : pool) {
    FuzzCase c;
    c.kernel = k;
    c.op = k->ops.front().op;
    c.values = {1.0};
    FuzzCase d;
    ASSERT_TRUE(decode(encode(c, pool, OpChoice::any), bigger, Limits{}, OpChoice::any, d));
    EXPECT_EQ(d.kernel, k) << k->name << " decoded as " << d.kernel->name;
  }
}

// Consistent hashing: with the gradient kernels on the circle, every kernel
// bytes value picks the kernel it picked before or a gradient kernel, and
// every softmax kernel's encoding still decodes to it (the committed corpus
// keeps its meaning outside the gradient kernels' arcs).
TEST(FuzzCodec, TheGradientKernelsLeaveTheOtherKernelsWhereTheyWere) {
  const Pool before = softmax_kernels_only(), after = builtins();
  ASSERT_GT(after.size(), before.size());
  int moved = 0;
  for (std::uint32_t at = 0; at < 0x10000; at += 7) {
    const std::vector<std::uint8_t> bytes = {static_cast<std::uint8_t>(at & 0xFF), static_cast<std::uint8_t>(at >> 8)};
    FuzzCase old_case, new_case;
    ASSERT_TRUE(decode(bytes, before, Limits{}, OpChoice::any, old_case));
    ASSERT_TRUE(decode(bytes, after, Limits{}, OpChoice::any, new_case));
    if (new_case.kernel == old_case.kernel) continue;
    ++moved;
    EXPECT_EQ(std::find(before.begin(), before.end(), new_case.kernel), before.end())
        << at << ": " << old_case.kernel->name << " became " << new_case.kernel->name;
  }
  EXPECT_GT(moved, 0);  // the gradient kernels took arcs of their own
  for (const Kernel* k : before) {
    FuzzCase c = one_row_of(*k, k->ops.front().op, {1.0});
    FuzzCase d;
    ASSERT_TRUE(decode(encode(c, before, OpChoice::any), after, Limits{}, OpChoice::any, d));
    EXPECT_EQ(d.kernel, k) << k->name;
    EXPECT_EQ(d.op, c.op) << k->name;
  }
}

// Targets (any entry, ignore_index) and g (mixed: the decoder's forms and
// raw values within |g| <= max_upstream) as encode takes them.
void random_other_inputs(Rng& rng, FuzzCase& c) {
  c.targets.clear();
  c.upstream.clear();
  if (takes(c.op, InputKind::class_index))
    for (std::int64_t r = 0; r < c.rows; ++r)
      c.targets.push_back(rng.below(5) == 0 ? ignore_index : static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(c.cols))));
  if (takes(c.op, InputKind::upstream_gradient))
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i) {
      const Format f = c.kernel->format;
      switch (rng.below(4)) {
        case 0: c.upstream.push_back(static_cast<double>(static_cast<int>(rng.below(128)) - 64) / 16); break;
        case 1: c.upstream.push_back(rng.below(2) ? -0.0 : denorm_min(f)); break;
        case 2: {  // nearly constant: the previous g one ulp up (where that stays in range)
          const double previous = c.upstream.empty() ? 1.0 : c.upstream.back();
          const double up = round_to_format(previous * (1 + 2 * unit_roundoff(f)), f);
          c.upstream.push_back(std::fabs(up) <= max_upstream ? up : previous);
          break;
        }
        default: {  // O(1), or loss-scaled up to the range's end
          const double scale = rng.below(3) == 0 ? 1000 : 1.5;
          c.upstream.push_back(round_to_format(std::clamp(rng.normal(0, scale), -max_upstream, max_upstream), f));
          break;
        }
      }
    }
}

TEST(FuzzCodec, EncodeThenDecodeIsTheIdentity) {
  const Pool pool = builtins();
  Rng rng(42);
  int gradient_cases = 0;
  for (int i = 0; i < 400; ++i) {
    for (OpChoice choice : {OpChoice::any, OpChoice::contract_only}) {
      FuzzCase c;
      c.kernel = pool[rng.below(pool.size())];
      c.op = c.kernel->ops[rng.below(c.kernel->ops.size())].op;
      if (!eligible(*c.kernel->find(c.op), choice)) continue;  // not an op the decoder picks
      c.rows = 1 + static_cast<std::int64_t>(rng.below(4));
      c.cols = 1 + static_cast<std::int64_t>(rng.below(i % 2 ? 256 : 32));
      const double ts[] = {1.0, 0.5, 3.0, 1e-40, -2.0, 0.1};
      c.temperature = ts[rng.below(6)];
      c.values = mixed_row(rng, c.kernel->format, static_cast<std::size_t>(c.rows * c.cols));
      random_other_inputs(rng, c);
      FuzzCase d;
      ASSERT_TRUE(decode(encode(c, pool, choice), pool, Limits{4, 256}, choice, d));
      EXPECT_EQ(d.kernel, c.kernel);
      EXPECT_EQ(d.op, c.op);
      EXPECT_EQ(d.rows, c.rows);
      EXPECT_EQ(d.cols, c.cols);
      EXPECT_TRUE(same_bits(d.temperature, c.temperature));
      ASSERT_EQ(d.values.size(), c.values.size());
      for (std::size_t j = 0; j < c.values.size(); ++j) ASSERT_TRUE(same_bits(d.values[j], c.values[j])) << j;
      EXPECT_EQ(d.targets, c.targets) << c.kernel->name;
      ASSERT_EQ(d.upstream.size(), c.upstream.size()) << c.kernel->name;
      for (std::size_t j = 0; j < c.upstream.size(); ++j)
        ASSERT_TRUE(same_bits(d.upstream[j], c.upstream[j])) << c.kernel->name << " g " << j << ": " << c.upstream[j];
      if (spec(c.op).several_inputs()) ++gradient_cases;
    }
  }
  EXPECT_GT(gradient_cases, 50);
}

TEST(FuzzCodec, AnyBytesDecodeToAValidBatch) {
  const Pool pool = builtins();
  const Limits limits{4, 256};
  Rng rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::vector<std::uint8_t> bytes = random_bytes(rng, rng.below(600));
    for (OpChoice choice : {OpChoice::any, OpChoice::contract_only}) {
      FuzzCase c;
      ASSERT_TRUE(decode(bytes, pool, limits, choice, c));
      ASSERT_NE(c.kernel->find(c.op), nullptr);
      if (choice == OpChoice::contract_only) {
        EXPECT_TRUE(c.kernel->find(c.op)->contract.declared);
        if (c.partner != nullptr) {
          EXPECT_EQ(c.partner->format, c.kernel->format);
          EXPECT_NE(c.partner, c.kernel);
          EXPECT_TRUE(c.partner->find(c.op)->contract.declared);
        }
      }
      EXPECT_GE(c.rows, 1);
      EXPECT_LE(c.rows, limits.max_rows);
      EXPECT_GE(c.cols, 1);
      EXPECT_LE(c.cols, limits.max_cols);
      ASSERT_EQ(c.values.size(), static_cast<std::size_t>(c.rows * c.cols));
      for (double v : c.values) ASSERT_TRUE(exact_in(v, c.kernel->format)) << v;
      // The other inputs: what the kernels' contract takes, and only for the ops that take them.
      ASSERT_EQ(c.targets.size(), takes(c.op, InputKind::class_index) ? static_cast<std::size_t>(c.rows) : 0u);
      for (std::int64_t t : c.targets) ASSERT_TRUE(t == ignore_index || (t >= 0 && t < c.cols)) << t;
      ASSERT_EQ(c.upstream.size(), takes(c.op, InputKind::upstream_gradient) ? c.values.size() : 0u);
      for (double g : c.upstream) ASSERT_TRUE(std::fabs(g) <= max_upstream && exact_in(g, c.kernel->format)) << g;
    }
  }
}

// The layout of the other inputs (fuzz_case.hpp): after the values, one
// target tag per row, or rows x cols g values; defaults when the input ends.
TEST(FuzzCodec, OtherInputsDecodeAsDocumented) {
  const Pool pool = builtins();
  FuzzCase ce = one_row("cross_entropy_f64", Op::cross_entropy, {1, -INFINITY, 7, -3, 7});
  const std::vector<std::uint8_t> head = encode(ce, pool, OpChoice::any);
  // encode wrote the values, then the target as an index (2 bytes): cut them.
  const std::vector<std::uint8_t> values(head.begin(), head.end() - 2);
  const auto target_of = [&](std::vector<std::uint8_t> tail) {
    std::vector<std::uint8_t> b = values;
    b.insert(b.end(), tail.begin(), tail.end());
    FuzzCase d;
    EXPECT_TRUE(decode(b, pool, Limits{}, OpChoice::any, d));
    EXPECT_EQ(d.values, ce.values);
    return d.targets.at(0);
  };
  EXPECT_EQ(target_of({}), 2);        // missing: the largest entry, the first of ties
  EXPECT_EQ(target_of({0x04}), 2);    // b % 4 = 0, whatever the high bits
  EXPECT_EQ(target_of({0x01}), ignore_index);
  EXPECT_EQ(target_of({0x02}), 3);    // the smallest finite entry (not the masked one)
  EXPECT_EQ(target_of({0x03 | (1 << 2)}), 1);  // an index: the masked entry
  EXPECT_EQ(target_of({0x03 | (6 << 2)}), 1);  // 6 % 5
  EXPECT_EQ(target_of({0x03 | (0 << 2), 1}), 64 % 5);  // (0 | 1 << 6) % 5

  FuzzCase sm = one_row("softmax_backward_f32", Op::softmax_backward, {0.5, 2, -1, 4});
  const std::vector<std::uint8_t> sm_head = encode(sm, pool, OpChoice::any);
  // g defaults to 1 (4 dyadic tags 0x50): cut them.
  const std::vector<std::uint8_t> sm_values(sm_head.begin(), sm_head.end() - 4);
  const auto g_of = [&](std::vector<std::uint8_t> tail) {
    std::vector<std::uint8_t> b = sm_values;
    b.insert(b.end(), tail.begin(), tail.end());
    FuzzCase d;
    EXPECT_TRUE(decode(b, pool, Limits{}, OpChoice::any, d));
    EXPECT_EQ(d.values, sm.values);
    return d.upstream;
  };
  EXPECT_EQ(g_of({}), (std::vector<double>{1, 1, 1, 1}));  // missing: a constant g
  EXPECT_EQ(g_of({0x40, 0x00, 0x7F}), (std::vector<double>{0, -4, 63.0 / 16, 0}));  // k/16, then repeated
  EXPECT_EQ(g_of({0x50, 0xB1, 0xAF, 0x80}),  // 1, 1 + 1 ulp, back 1 ulp, special 0
            (std::vector<double>{1, 1 + 0x1p-23, 1, 0}));
  const auto raw = [](float v) {
    const auto bits = std::bit_cast<std::uint32_t>(v);
    return std::vector<std::uint8_t>{0xC0, static_cast<std::uint8_t>(bits), static_cast<std::uint8_t>(bits >> 8),
                                     static_cast<std::uint8_t>(bits >> 16), static_cast<std::uint8_t>(bits >> 24)};
  };
  std::vector<std::uint8_t> raws;
  for (float v : {NAN, -INFINITY, 1e30f, 0.75f}) {
    const std::vector<std::uint8_t> r = raw(v);
    raws.insert(raws.end(), r.begin(), r.end());
  }
  const std::vector<double> folded = g_of(raws);  // into range: 0, -max, 1e30's significand in [1, 2), 0.75
  EXPECT_EQ(folded[0], 0.0);
  EXPECT_EQ(folded[1], -max_upstream);
  int exponent = 0;
  EXPECT_EQ(folded[2], 2 * std::frexp(static_cast<double>(1e30f), &exponent));
  EXPECT_EQ(folded[3], 0.75);
  // A softmax case reads nothing after its values.
  FuzzCase plain = one_row("shifted_f32", Op::softmax, {1, 2});
  std::vector<std::uint8_t> b = encode(plain, pool, OpChoice::any);
  b.push_back(0x03);
  FuzzCase d;
  ASSERT_TRUE(decode(b, pool, Limits{}, OpChoice::any, d));
  EXPECT_TRUE(d.targets.empty() && d.upstream.empty());
}

TEST(FuzzCodec, SpecialValuesAreExactAndCoverTheEdges) {
  for (Format f : {Format::f32, Format::f64, Format::f16, Format::bf16}) {
    const std::vector<double> sp = special_values(f);
    EXPECT_LE(sp.size(), 64u);  // one tag byte each
    for (double v : sp) EXPECT_TRUE(exact_in(v, f)) << v;
    auto has = [&](double x) { return std::any_of(sp.begin(), sp.end(), [&](double v) { return same_bits(v, x); }); };
    EXPECT_TRUE(has(-0.0) && has(INFINITY) && has(-INFINITY) && has(NAN));
    EXPECT_TRUE(has(denorm_min(f)) && has(max_finite(f)) && has(lowest(f)));
    EXPECT_TRUE(has(round_to_format(-1e9, f)) && has(round_to_format(65504, f)));
  }
}

TEST(FuzzPool, BuiltinsOnlyUnlessPlanted) {
  const PoolChoice normal = choose_pool("");
  EXPECT_FALSE(normal.planted);
  EXPECT_FALSE(normal.pool.empty());
  for (const Kernel* k : normal.pool) EXPECT_FALSE(k->test_only) << k->name;
  // The gradient kernels are fuzzed too, the careless one only when planted.
  const auto in_pool = [&](const char* name) {
    return std::any_of(normal.pool.begin(), normal.pool.end(), [&](const Kernel* k) { return k->name == name; });
  };
  for (const char* name : {"cross_entropy_f32", "cross_entropy_chunked16_f64", "bf16_cross_entropy_f32acc",
                           "softmax_backward_wide_f32", "log_softmax_backward_f64"})
    EXPECT_TRUE(in_pool(name)) << name;
  EXPECT_FALSE(in_pool("careless_cross_entropy_f32"));
  const PoolChoice careless = choose_pool("careless_cross_entropy_f32");
  ASSERT_TRUE(careless.error.empty()) << careless.error;
  ASSERT_EQ(careless.pool.size(), 1u);
  EXPECT_TRUE(careless.pool[0]->test_only);
  const PoolChoice planted = choose_pool("mutant_masked_nan,shifted_f32");
  EXPECT_TRUE(planted.planted);
  ASSERT_EQ(planted.pool.size(), 2u);
  EXPECT_TRUE(planted.pool[0]->test_only);
  EXPECT_FALSE(choose_pool("no_such_kernel").error.empty());
}

// ---- plugin kernels in the pool (SOFTCHECK_FUZZ_PLUGIN, plugin_kernels.hpp) ------------------

// The misbehaving test plugin's kernels the fuzzers can run, in descriptor
// order (its sparsemax and entmax kernels are listed as unavailable).
const std::vector<std::string> misbehaving_runnable = {"tp_ok_f32",   "tp_fails_f32", "tp_nan_f32",   "tp_segv_f32",
                                                       "tp_abort_f32", "tp_exit_f32",  "tp_serial_f32"};

std::vector<std::string> names_of(std::span<const Kernel* const> ks) {
  std::vector<std::string> out;
  for (const Kernel* k : ks) out.push_back(k->name);
  return out;
}

const Kernel* named(const Pool& pool, std::string_view name) {
  const auto it = std::find_if(pool.begin(), pool.end(), [&](const Kernel* k) { return k->name == name; });
  return it == pool.end() ? nullptr : *it;
}

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzPool, PluginKernelsJoinAfterTheBuiltinsInDescriptorOrder) {
  const PoolChoice c = choose_pool(nullptr, TEST_PLUGIN_MISBEHAVING_PATH);
  ASSERT_TRUE(c.error.empty()) << c.error;
  EXPECT_FALSE(c.planted);
  ASSERT_EQ(c.plugins.size(), 1u);
  const std::string path = std::filesystem::absolute(TEST_PLUGIN_MISBEHAVING_PATH).lexically_normal().string();
  EXPECT_EQ(c.plugins[0].path, path);
  const Pool before = builtins();
  ASSERT_EQ(c.pool.size(), before.size() + misbehaving_runnable.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), c.pool.begin()));
  EXPECT_EQ(names_of(std::span(c.pool).subspan(before.size())), misbehaving_runnable);
  for (const Kernel* k : before) EXPECT_EQ(fuzz_plugin_path(*k), nullptr) << k->name;
  for (const Kernel* k : std::span(c.pool).subspan(before.size())) {
    ASSERT_NE(fuzz_plugin_path(*k), nullptr) << k->name;
    EXPECT_EQ(*fuzz_plugin_path(*k), path);
    // What the repro lines load it with (Kernel::load_options, as `run` prints them).
    EXPECT_EQ(k->load_options, "--plugin " + path) << k->name;
  }
  EXPECT_EQ(named(c.pool, "tp_sparsemax_f32"), nullptr);
  EXPECT_EQ(c.plugins[0].kernels.size(), misbehaving_runnable.size() + 2);  // listed, not run
}

TEST(FuzzPool, SeveralPluginsSeparatedByColons) {
  EXPECT_EQ(split_plugin_paths(":a::b/c.so:"), (std::vector<std::string>{"a", "b/c.so"}));
  const std::string both = std::string(TEST_PLUGIN_MISBEHAVING_PATH) + "::" + LSE_V2_PLUGIN_PATH;
  const PoolChoice c = choose_pool("", both.c_str());
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.plugins.size(), 2u);
  ASSERT_EQ(c.pool.size(), builtins().size() + misbehaving_runnable.size() + 1);
  EXPECT_EQ(c.pool.back()->name, "v2test_shifted_f64");
  EXPECT_EQ(*fuzz_plugin_path(*c.pool.back()), c.plugins[1].path);
  // Planted mode names plugin kernels too: the pool is exactly those.
  const PoolChoice planted = choose_pool("tp_nan_f32,shifted_f32", both.c_str());
  ASSERT_TRUE(planted.error.empty()) << planted.error;
  EXPECT_EQ(names_of(planted.pool), (std::vector<std::string>{"tp_nan_f32", "shifted_f32"}));
  EXPECT_FALSE(choose_pool("tp_nan_f32").error.empty());  // without the plugin: unknown
  EXPECT_FALSE(choose_pool("tp_sparsemax_f32", both.c_str()).error.empty());  // not runnable
}

// A plugin that cannot be used is an error (process_pool: exit 2), never a smaller pool.
TEST(FuzzPool, AnUnusablePluginIsAnError) {
  const auto error_of = [](const char* plugins, const char* isolate = nullptr) {
    return choose_pool(nullptr, plugins, isolate).error;
  };
  EXPECT_EQ(error_of("/no/such/plugin.so"), "SOFTCHECK_FUZZ_PLUGIN: plugin '/no/such/plugin.so': no such file");
  EXPECT_EQ(error_of(TEST_PLUGIN_NO_KERNELS_PATH),
            "SOFTCHECK_FUZZ_PLUGIN: plugin '" + std::string(TEST_PLUGIN_NO_KERNELS_PATH) + "': declares no kernels");
  EXPECT_EQ(error_of("::"), "SOFTCHECK_FUZZ_PLUGIN names no plugin (paths are separated by ':')");
  const std::string twice = std::string(TEST_PLUGIN_MISBEHAVING_PATH) + ":" + TEST_PLUGIN_MISBEHAVING_PATH;
  EXPECT_NE(error_of(twice.c_str()).find("name already used by a kernel of plugin:"), std::string::npos)
      << error_of(twice.c_str());
  EXPECT_EQ(error_of(TEST_PLUGIN_MISBEHAVING_PATH, "yes"), "SOFTCHECK_FUZZ_PLUGIN_ISOLATE must be 0 or 1, got 'yes'");
  EXPECT_TRUE(error_of(nullptr).empty());
  EXPECT_TRUE(error_of("").empty());
}

// fuzz/tests/plugin/tp_nan_f32-softmax, the input of the plugin-in-fuzzer
// test (plugin_in_fuzzer.sh): with the misbehaving plugin in the pool it is
// a softmax of tp_nan_f32 (the kernel's own point on the circle, encode's
// output); without it a built-in kernel, which passes.
TEST(FuzzPool, ThePluginTestInputPicksTheNaNKernelOnlyWithThePlugin) {
  const PoolChoice c = choose_pool(nullptr, TEST_PLUGIN_MISBEHAVING_PATH);
  ASSERT_TRUE(c.error.empty()) << c.error;
  const Kernel* nan_kernel = named(c.pool, "tp_nan_f32");
  ASSERT_NE(nan_kernel, nullptr);
  const std::vector<std::uint8_t> bytes = file_bytes(FUZZ_TEST_INPUTS_DIR "/tp_nan_f32-softmax");
  EXPECT_EQ(bytes, encode(one_row_of(*nan_kernel, Op::softmax, {1, 2, 3}), c.pool, OpChoice::any));
  FuzzCase with, without;
  ASSERT_TRUE(decode(bytes, c.pool, Limits{2, 256}, OpChoice::any, with));
  EXPECT_EQ(with.kernel, nan_kernel);
  EXPECT_EQ(with.op, Op::softmax);
  EXPECT_EQ(with.values, (std::vector<double>{1, 2, 3}));
  ASSERT_TRUE(decode(bytes, builtins(), Limits{2, 256}, OpChoice::any, without));
  EXPECT_EQ(fuzz_plugin_path(*without.kernel), nullptr);
  const Kernel& builtin = *without.kernel;
  EXPECT_FALSE(check_invariants(without, builtin, without.op, run_batch(builtin, without.op, without)));
}

TEST(FuzzPluginKernels, AViolationNamesThePluginAndItsReproLoadsIt) {
  const PoolChoice c = choose_pool(nullptr, TEST_PLUGIN_MISBEHAVING_PATH);
  ASSERT_TRUE(c.error.empty()) << c.error;
  const Kernel& k = *named(c.pool, "tp_nan_f32");
  const FuzzCase row = one_row_of(k, Op::softmax, {1, 2, 3});
  const auto v = check_invariants(row, k, Op::softmax, run_batch(k, Op::softmax, row));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->property, "no_nonfinite");
  const std::string text = report_text(*v);
  EXPECT_NE(text.find("  kernel:      tp_nan_f32 (f32"), std::string::npos) << text;
  EXPECT_NE(text.find("  plugin:      " + c.plugins[0].path + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  repro: softcheck repro --plugin " + c.plugins[0].path + " --impl tp_nan_f32 --op softmax "
                      "--property no_nonfinite"),
            std::string::npos)
      << text;
  // A registry kernel's report has no plugin line.
  const FuzzCase masked = one_row("mutant_masked_nan", Op::softmax, {-INFINITY, -INFINITY});
  const auto m =
      check_invariants(masked, *masked.kernel, Op::softmax, run_batch(*masked.kernel, Op::softmax, masked));
  ASSERT_TRUE(m);
  EXPECT_EQ(report_text(*m).find("plugin:"), std::string::npos);
}

// The report of a failed call (plugin_kernels.hpp): every row of the call
// with a repro line running the kernel on it alone, --isolate added for a
// crash; none where no property takes the row.
TEST(FuzzPluginKernels, AFailedCallIsReportedRowByRow) {
  const std::string both = std::string(TEST_PLUGIN_MISBEHAVING_PATH) + ":" + LSE_V2_PLUGIN_PATH;
  const PoolChoice c = choose_pool(nullptr, both.c_str());
  ASSERT_TRUE(c.error.empty()) << c.error;
  const Kernel& segv = *named(c.pool, "tp_segv_f32");
  const std::vector<double> x = {1, 2, 3, -INFINITY, 0, 4};
  const std::string crash =
      plugin_failure_text(segv, Op::softmax, "crashed with signal 11 (SIGSEGV)", x, 2, 3, 1.0, true);
  const std::string& path = c.plugins[0].path;
  EXPECT_EQ(crash.rfind("==softcheck-fuzz== PLUGIN KERNEL FAILED: tp_segv_f32 of " + path + "\n", 0), 0u) << crash;
  EXPECT_NE(crash.find("  plugin:      " + path + "\n"), std::string::npos) << crash;
  EXPECT_NE(crash.find("  failure:     crashed with signal 11 (SIGSEGV)\n"), std::string::npos) << crash;
  EXPECT_NE(crash.find("  row 1 (n=3): -inf,0x0p+0,0x1p+2\n"), std::string::npos) << crash;
  EXPECT_NE(crash.find("  repro: softcheck repro --plugin " + path + " --isolate --impl tp_segv_f32 --op softmax "
                       "--property batch_independence --temperature=0x1p+0 --row=0x1p+0,0x1p+1,0x1.8p+1\n"),
            std::string::npos)
      << crash;
  const std::string returned = plugin_failure_text(segv, Op::softmax, "run returned 7", x, 2, 3, 1.0, false);
  EXPECT_EQ(returned.find("--isolate"), std::string::npos) << returned;
  // lse: a row with +inf has no property to replay it.
  const Kernel& lse = *named(c.pool, "v2test_shifted_f64");
  const std::string scalar = plugin_failure_text(lse, Op::lse, "run returned 1", std::vector<double>{INFINITY, 1}, 1, 2,
                                                 1.0, false);
  EXPECT_NE(scalar.find("  repro: none"), std::string::npos) << scalar;
}

std::optional<Violation> invariants_of(const FuzzCase& c) {
  return check_invariants(c, *c.kernel, c.op, run_batch(*c.kernel, c.op, c));
}

TEST(FuzzInvariants, CatchThePlantedMutants) {
  const auto masked = invariants_of(one_row("mutant_masked_nan", Op::softmax, {-INFINITY, -INFINITY, -INFINITY}));
  ASSERT_TRUE(masked.has_value());
  EXPECT_EQ(masked->property, "fully_masked");
  const std::string text = report_text(*masked);
  EXPECT_NE(text.find("softcheck repro --impl mutant_masked_nan --op softmax --property fully_masked"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("-inf,-inf,-inf"), std::string::npos) << text;

  const auto rescale = invariants_of(one_row("mutant_online_wrong_rescale", Op::softmax, {0, 1, 2, 3}));
  ASSERT_TRUE(rescale.has_value());
  EXPECT_EQ(rescale->property, "sum_to_one");
}

TEST(FuzzInvariants, BuiltinKernelsHoldThemOnEdgeRows) {
  const std::vector<std::vector<double>> rows = {
      {1000, 1001, 1002}, {-INFINITY, -INFINITY}, {0, -INFINITY, 88.72283935546875}, {-1e9, -1e9}, {-0.0}};
  for (const Kernel* k : builtins())
    for (const OpDecl& d : k->ops) {
      if (!eligible(d, OpChoice::any)) continue;  // not a fuzz case (one output only)
      for (const auto& row : rows) {
        FuzzCase c = one_row(k->name.c_str(), d.op, row);
        EXPECT_FALSE(invariants_of(c).has_value()) << k->name << " " << name(d.op);
      }
    }
}

// The prefilter's enclosure of one row against MPFR: exact_j <= at_most_j for
// every entry, and |ref_j - exact_j| <= err_j wherever err_j is finite; a
// masked entry (exact -inf) has ref -inf. Returns how many entries it compared
// the interval of (those `counted` accepts); false in `ok` after a failure.
template <class Counted>
int compare_with_exact(const std::vector<double>& row, double t, Op op, Format f, Counted counted, bool& ok) {
  ok = true;
  const oracle::ExactRow ex = oracle::exact_row(row, t);
  if (ex.status != oracle::RowStatus::ok) return 0;
  const Reference ref = reference_row(row, t, op, f);
  const auto exact = oracle::exact_values(ex, spec(op).out[0].kind);
  int compared = 0;
  for (std::size_t j = 0; j < row.size(); ++j) {
    const auto where = [&] { return "entry " + std::to_string(j) + ": " + props::format_row(row) + " T=" + props::format_value(t); };
    if (isinf(exact[j])) {
      EXPECT_EQ(ref.value[j], -INFINITY) << where();
      continue;
    }
    if (!(exact[j] <= oracle::Real(ref.at_most[j]))) {
      ADD_FAILURE() << "above at_most, " << where();
      return ok = false, compared;
    }
    if (isinf(ref.error[j]) || !counted(j)) continue;  // undecided: left to the oracle
    if (!(abs(oracle::Real(ref.value[j]) - exact[j]) <= oracle::Real(ref.error[j]))) {  // long double: exact in MPFR
      ADD_FAILURE() << "outside the interval, " << where();
      return ok = false, compared;
    }
    ++compared;
  }
  return compared;
}

// The prefilter's interval [ref - err, ref + err] must contain the exact value,
// or fuzz_differential could pass a row the oracle would reject.
TEST(FuzzDifferential, ReferenceErrorBoundContainsTheExactValue) {
  Rng rng(11);
  oracle::PrecisionScope scope(256);
  int compared = 0;
  for (int i = 0; i < 3000; ++i) {
    const Format f = i % 2 ? Format::f32 : Format::f64;
    const Op op = i % 3 ? Op::softmax : Op::log_softmax;
    const double ts[] = {1.0, 0.5, 3.0, 0.01};
    const double t = ts[rng.below(4)];
    std::vector<double> row;
    if (i % 4 == 0) {
      const InputFamily& fam = input_families()[rng.below(input_families().size())];
      row = fill_rows(fam, f, 1, fam.fixed_cols > 0 ? fam.fixed_cols : 40, rng.next());
    } else {
      row = mixed_row(rng, f, 1 + rng.below(60));
    }
    if (classify(row) != RowKind::finite && classify(row) != RowKind::masked) continue;
    bool ok = true;
    compared += compare_with_exact(row, t, op, f, [](std::size_t) { return true; }, ok);
    ASSERT_TRUE(ok) << "row " << i;
  }
  EXPECT_GT(compared, 20000);
}

// f64 entries of magnitude 2^44 to 2^52 a few of their ulps apart (so within
// a few units of one another), beside a few ordinary ones: with T != 1,
// rounding x/T alone moves d_i by 2^-20 to 2^-12, beyond first order (rows
// like these came up in fuzz_differential with contracts of 5e13 ulps and all
// went to MPFR while such an argument error made a row undecided).
std::vector<double> huge_nearly_equal_row(Rng& rng, std::size_t n) {
  const double base = std::ldexp(1.0, 44 + static_cast<int>(rng.below(9)));
  std::vector<double> row;
  for (std::size_t i = 0; i < n; ++i) {
    if (rng.below(8) == 0) row.push_back(rng.normal(0, 50));
    else row.push_back(base + (static_cast<double>(rng.below(200)) - 100) * std::ldexp(base, -52));
  }
  return row;
}

// The bound holds beyond first order, and decides the entries near the max
// of such rows.
TEST(FuzzDifferential, ReferenceErrorBoundHoldsForHugeNearlyEqualEntries) {
  Rng rng(23);
  oracle::PrecisionScope scope(256);
  int compared = 0;
  for (int i = 0; i < 400; ++i) {
    const Op op = i % 2 ? Op::softmax : Op::log_softmax;
    const double ts[] = {1.5, 3.0, 0.7};
    const double t = ts[rng.below(3)];
    const std::vector<double> row = huge_nearly_equal_row(rng, 1 + rng.below(60));
    bool ok = true;
    // only the entries near the max count
    compared += compare_with_exact(row, t, op, Format::f64, [&](std::size_t j) { return std::fabs(row[j]) >= 0x1p43; }, ok);
    ASSERT_TRUE(ok) << "row " << i;
  }
  EXPECT_GT(compared, 5000);
}

// A correctly rounded bf16 output of 0 for an exact value of 2^-138 (below
// half of bf16's denorm_min 2^-133) is within a contract of 0.5 ulp plus a
// hair: the prefilter decides it. (When entries below 2^-137 counted as far,
// with an error of 2^-134 after the safety factor, it was left to MPFR.)
TEST(FuzzDifferential, PrefilterDecidesCorrectlyRoundedTinyOutputs) {
  const std::vector<double> x = {0.0, -95.85};
  const std::vector<double> y = {1.0, 0.0};
  const Reference ref = reference_row(x, 1.0, Op::softmax, Format::bf16);
  EXPECT_TRUE(clearly_within(x, y, ref, 0.518, Format::bf16));
  EXPECT_FALSE(clearly_within(x, std::vector<double>{1.0, 0x1p-133}, ref, 0.518, Format::bf16));
}

// A log-softmax below bf16's lowest (-3.4e38) correctly rounds to -inf: the
// prefilter decides it (compare_row counts it right, metrics.cpp
// against_overflow), without MPFR; a -inf for an exact value in range is not.
TEST(FuzzDifferential, PrefilterDecidesACorrectOverflowToInfinity) {
  const std::vector<double> x = {0.0, -1e40, -100.0};
  const Reference ref = reference_row(x, 1.0, Op::log_softmax, Format::bf16);
  EXPECT_TRUE(clearly_within(x, std::vector<double>{0.0, -INFINITY, -100.0}, ref, 0.6, Format::bf16));
  EXPECT_TRUE(clearly_within(x, std::vector<double>{0.0, -INFINITY, -100.0}, ref, INFINITY, Format::bf16));
  EXPECT_FALSE(clearly_within(x, std::vector<double>{0.0, -INFINITY, -INFINITY}, ref, INFINITY, Format::bf16));
  EXPECT_FALSE(clearly_within(x, std::vector<double>{0.0, INFINITY, -100.0}, ref, INFINITY, Format::bf16));
  // just past the rounding edge 2^128 - 2^119 on either side
  const std::vector<double> edge = {0.0, -(0x1p128 - 0x1p119) * (1 + 0x1p-30), -(0x1p128 - 0x1p119) * (1 - 0x1p-30)};
  const Reference eref = reference_row(edge, 1.0, Op::log_softmax, Format::bf16);
  EXPECT_TRUE(clearly_within(edge, std::vector<double>{0.0, -INFINITY, -0x1.fep127}, eref, 0.6, Format::bf16));
  EXPECT_FALSE(clearly_within(edge, std::vector<double>{0.0, -INFINITY, -INFINITY}, eref, 0.6, Format::bf16));
  // f16: d = -65520 exactly, f16's overflow edge (the tie rounds to -inf), and
  // log1p(s') > 0 puts the exact value a hair beyond it; one unit inside, the
  // exact value rounds to lowest (-65504), and -inf is wrong.
  const std::vector<double> tie = {64576.0, -944.0, 64512.0};
  EXPECT_TRUE(clearly_within(tie, std::vector<double>{-0x1p-92, -INFINITY, -64.0},
                             reference_row(tie, 1.0, Op::log_softmax, Format::f16), INFINITY, Format::f16));
  const std::vector<double> inside = {64576.0, -943.0, 64512.0};
  EXPECT_FALSE(clearly_within(inside, std::vector<double>{-0x1p-92, -INFINITY, -64.0},
                              reference_row(inside, 1.0, Op::log_softmax, Format::f16), INFINITY, Format::f16));
}

// A row the prefilter passes must pass the oracle check too.
TEST(FuzzDifferential, PrefilterNeverPassesWhatTheOracleRejects) {
  Rng rng(5);
  int decided = 0;
  for (const Kernel* k : builtins())
    for (const OpDecl& d : k->ops) {
      if (!eligible(d, OpChoice::any) || spec(d.op).several_inputs()) continue;  // the prefilter's ops
      if (!d.contract.declared || spec(d.op).scalar_output()) continue;  // the prefilter knows row ops only
      for (int i = 0; i < 150; ++i) {
        // f64 kernels also get rows only the expm1 form of the bound decides.
        const bool huge = k->format == Format::f64 && i % 5 == 0;
        const double t = huge ? 1.5 : i % 3 ? 1.0 : 0.5;
        FuzzCase c = one_row(k->name.c_str(), d.op,
                             huge ? huge_nearly_equal_row(rng, 1 + rng.below(40)) : mixed_row(rng, k->format, 1 + rng.below(40)), t);
        const RowKind kind = classify(c.values);
        if (kind != RowKind::finite && kind != RowKind::masked) continue;
        const std::vector<double> y = run_batch(*k, d.op, c);
        const double bound = d.contract.bound_ulps(row_shape(c.values, t, k->format), k->format);
        if (!clearly_within(c.values, y, reference_row(c.values, t, d.op, k->format), bound, k->format)) continue;
        ++decided;
        EXPECT_TRUE(within_contract_exact(y, c.values, t, *k, d.op)) << k->name;
      }
    }
  EXPECT_GT(decided, 1000);
}

// Stage 2, the fast tier, must never pass a row the oracle rejects either;
// it is tried on every row, not only on those the prefilter leaves.
TEST(FuzzDifferential, FastTierNeverPassesWhatTheOracleRejects) {
  Rng rng(9);
  int decided = 0;
  for (const Kernel* k : builtins())
    for (const OpDecl& d : k->ops) {
      if (!eligible(d, OpChoice::contract_only) || spec(d.op).several_inputs()) continue;  // the fast tier's ops
      for (int i = 0; i < 60; ++i) {
        const double t = i % 3 ? 1.0 : 0.5;
        FuzzCase c = one_row(k->name.c_str(), d.op, mixed_row(rng, k->format, 1 + rng.below(40)), t);
        const RowKind kind = classify(c.values);
        if (kind != RowKind::finite && kind != RowKind::masked) continue;
        if (!in_property_scope(c.values, t, k->format)) continue;
        const std::vector<double> y = run_batch(*k, d.op, c);
        if (!within_contract_fast(y, c.values, t, *k, d.op)) continue;
        ++decided;
        EXPECT_TRUE(within_contract_exact(y, c.values, t, *k, d.op)) << k->name << " " << props::format_row(c.values);
      }
    }
  EXPECT_GT(decided, 300);
  FuzzCase wrong = one_row("mutant_online_wrong_rescale", Op::softmax, {0, 1, 2, 3});
  EXPECT_FALSE(within_contract_fast(run_batch(*wrong.kernel, wrong.op, wrong), wrong.values, 1.0, *wrong.kernel, wrong.op));
}

// run_batch into reused buffers gives the bits of the allocating form, also
// when the buffers last held a longer batch of another format.
TEST(FuzzInvariants, RunBatchIntoScratchMatches) {
  Rng rng(3);
  BatchScratch scratch;
  std::vector<double> y;
  for (const Kernel* k : builtins())
    for (const OpDecl& d : k->ops) {
      if (!eligible(d, OpChoice::any)) continue;  // not a fuzz case (one output only)
      FuzzCase c = one_row(k->name.c_str(), d.op, mixed_row(rng, k->format, 1 + rng.below(70)));
      run_batch(*k, d.op, c, scratch, y);
      const std::vector<double> fresh = run_batch(*k, d.op, c);
      ASSERT_EQ(y.size(), fresh.size());
      for (std::size_t j = 0; j < y.size(); ++j) EXPECT_TRUE(same_bits(y[j], fresh[j])) << k->name << " " << j;
    }
}

TEST(FuzzDifferential, CatchesTheWrongRescale) {
  FuzzCase c = one_row("mutant_online_wrong_rescale", Op::softmax, {0, 1, 2, 3});
  const std::vector<double> y = run_batch(*c.kernel, c.op, c);
  const auto v = check_differential(c, y, {});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "accuracy");
}

// lse and entropy (one output per row) through both fuzz checks: the
// built-in kernels hold them on random rows (masked and fully masked ones
// included), and a kernel whose lse is off by 2^-20 is caught by each.
TEST(FuzzScalarOps, BuiltinKernelsHoldBothChecksAndAWrongOneIsCaught) {
  Rng rng(11);
  int checked = 0;
  for (const Kernel* k : builtins())
    for (const OpDecl& d : k->ops) {
      if (!spec(d.op).scalar_output() || spec(d.op).several_inputs()) continue;  // lse, entropy (not the loss)
      for (int i = 0; i < 80; ++i) {
        const double t = i % 3 ? 1.0 : 0.5;
        std::vector<double> row = mixed_row(rng, k->format, 1 + rng.below(40));
        if (i % 10 == 0) row.assign(row.size(), -INFINITY);
        FuzzCase c = one_row(k->name.c_str(), d.op, row, t);
        const std::vector<double> y = run_batch(*k, d.op, c);
        ASSERT_EQ(y.size(), 1u);
        const auto inv = check_invariants(c, *k, d.op, y);
        EXPECT_FALSE(inv.has_value()) << k->name << " " << name(d.op) << ": " << (inv ? inv->property : "");
        if (d.contract.declared) {
          const auto diff = check_differential(c, y, {});
          EXPECT_FALSE(diff.has_value()) << k->name << " " << name(d.op) << " " << props::format_row(row);
        }
        ++checked;
      }
    }
  EXPECT_GT(checked, 500);

  Kernel off = *find_kernel("shifted_f64");
  off.name = "test_lse_off_by_2em20";
  off.compute = single_operand([inner = *find_kernel("shifted_f64")](Op op, const void* x, void* out, std::int64_t rows,
                                                                       std::int64_t cols, double t) {
    inner.run(op, x, out, rows, cols, t);
    if (op == Op::lse)
      for (std::int64_t r = 0; r < rows; ++r) static_cast<double*>(out)[r] += 0x1p-20;
  });
  FuzzCase c = one_row("shifted_f64", Op::lse, {0, 1, 2, 3});
  c.kernel = &off;
  const std::vector<double> y = run_batch(off, Op::lse, c);
  const auto diff = check_differential(c, y, {});
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(diff->property, "accuracy");
  // ... and a kernel whose lse of a fully masked row is 0, not -inf, by the invariants.
  Kernel zero = *find_kernel("shifted_log1p_f64");
  zero.name = "test_lse_masked_zero";
  zero.compute = single_operand([inner = *find_kernel("shifted_log1p_f64")](Op op, const void* x, void* out,
                                                                              std::int64_t rows, std::int64_t cols, double t) {
    inner.run(op, x, out, rows, cols, t);
    for (std::int64_t r = 0; r < rows; ++r)
      if (op == Op::lse && static_cast<double*>(out)[r] == -INFINITY) static_cast<double*>(out)[r] = 0;
  });
  FuzzCase masked = one_row("shifted_log1p_f64", Op::lse, {-INFINITY, -INFINITY});
  masked.kernel = &zero;
  const auto inv = check_invariants(masked, zero, Op::lse, run_batch(zero, Op::lse, masked));
  ASSERT_TRUE(inv.has_value());
  EXPECT_EQ(inv->property, "scalar_fully_masked");
}


// ---------------------------------------------------------------- gradient ops

// The careless cross-entropy (loss -log of a rounded p_t: 0 on a confident
// row) is caught by fuzz_differential's check on an input that decodes to
// that row and target, as the fuzzer would run it; the fused kernel on the
// same bytes is not, and neither is the careless one when the target is
// not the confident entry. The report prints every input and the oracle line.
TEST(FuzzGradients, DifferentialCatchesTheCarelessKernelThroughTheBytes) {
  const PoolChoice planted = choose_pool("careless_cross_entropy_f32,cross_entropy_f32");
  ASSERT_TRUE(planted.error.empty()) << planted.error;
  FuzzCase careless = one_row("careless_cross_entropy_f32", Op::cross_entropy, {20, 0, -1});
  ASSERT_EQ(careless.targets, std::vector<std::int64_t>{0});
  const auto run = [&](const FuzzCase& c) {
    FuzzCase d;
    EXPECT_TRUE(decode(encode(c, planted.pool, OpChoice::contract_only), planted.pool, Limits{1, 256},
                       OpChoice::contract_only, d));
    EXPECT_EQ(d.kernel, c.kernel);
    EXPECT_EQ(d.targets, c.targets);
    return check_differential(d, run_batch(*d.kernel, d.op, d), {});
  };
  const auto v = run(careless);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_accuracy");  // confirmed by the property suite
  ASSERT_TRUE(v->gradient.has_value());
  EXPECT_EQ(v->gradient->output, "loss");
  const std::string text = report_text(*v);
  EXPECT_NE(text.find("target:      0"), std::string::npos) << text;
  EXPECT_NE(text.find("got loss: -0x0p+0"), std::string::npos) << text;  // -log(1)
  EXPECT_NE(text.find("repro: softcheck repro --impl careless_cross_entropy_f32 --op cross_entropy --property "
                      "gradient_accuracy --target=0 --temperature=0x1p+0 --row=0x1.4p+4,0x0p+0,-0x1p+0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("exact: softcheck oracle --op cross_entropy --target=0 --dtype f32 --temperature=0x1p+0 "
                      "--digits 21 -- 0x1.4p+4 0x0p+0 -0x1p+0"),
            std::string::npos)
      << text;

  FuzzCase fused = careless;
  fused.kernel = find_kernel("cross_entropy_f32");
  EXPECT_FALSE(run(fused).has_value());
  careless.targets = {1};  // p_t ~ e^-20: no rounding to 1
  EXPECT_FALSE(run(careless).has_value());
}

// A kernel wrapping `base` whose outputs `edit` changes after the call.
Kernel edited(const char* base, std::string new_name, std::function<void(const OpCall&)> edit) {
  Kernel k = *find_kernel(base);
  k.name = std::move(new_name);
  k.compute = [inner = k.compute, edit = std::move(edit)](const OpCall& c) {
    inner(c);
    edit(c);
  };
  return k;
}

std::optional<Violation> invariants_of_kernel(const Kernel& k, FuzzCase c) {
  c.kernel = &k;
  return check_invariants(c, k, c.op, run_batch(k, c.op, c));
}

// fuzz_nan_inf's checks of the gradient ops catch each broken rule (each
// confirmed by the property that states it), and the registered kernels pass
// them on the same rows.
TEST(FuzzGradients, InvariantsCatchBrokenMasksIgnoredRowsAndNaN) {
  const std::vector<double> masked = {1, -INFINITY, 3, -INFINITY};
  const std::vector<double> g = {0.5, -2, 1, 3};
  // NaN at a masked entry of softmax_backward's dx (a kernel computing
  // y (g - s) with y = exp(-inf - a) * inf, say).
  const Kernel nan_at_mask = edited("softmax_backward_f32", "test_nan_at_mask", [](const OpCall& c) {
    const auto* x = static_cast<const float*>(c.in[0]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i)
      if (x[i] == -INFINITY) static_cast<float*>(c.out[1])[i] = NAN;
  });
  FuzzCase sm = one_row("softmax_backward_f32", Op::softmax_backward, masked);
  sm.upstream = g;
  EXPECT_FALSE(invariants_of_kernel(*find_kernel("softmax_backward_f32"), sm).has_value());
  auto v = invariants_of_kernel(nan_at_mask, sm);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_masked_entries");
  EXPECT_NE(report_text(*v).find("upstream g:  0x1p-1,-0x1p+1,0x1p+0,0x1.8p+1"), std::string::npos) << report_text(*v);
  EXPECT_NE(report_text(*v).find("--upstream=0x1p-1,-0x1p+1,0x1p+0,0x1.8p+1 --temperature"), std::string::npos)
      << report_text(*v);
  // NaN at an entry that is not masked: gradient_accuracy (a NaN where the exact value is a number).
  const Kernel nan_at_max = edited("softmax_backward_f64", "test_nan_at_max", [](const OpCall& c) {
    static_cast<double*>(c.out[0])[2] = NAN;
  });
  sm = one_row("softmax_backward_f64", Op::softmax_backward, masked);
  v = invariants_of_kernel(nan_at_max, sm);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_accuracy");
  // log_softmax_backward: dx = g exactly at a masked entry, not 0.
  const Kernel zero_at_mask = edited("log_softmax_backward_f32", "test_zero_at_mask", [](const OpCall& c) {
    const auto* x = static_cast<const float*>(c.in[0]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i)
      if (x[i] == -INFINITY) static_cast<float*>(c.out[1])[i] = 0;
  });
  FuzzCase lsm = one_row("log_softmax_backward_f32", Op::log_softmax_backward, masked);
  lsm.upstream = g;
  EXPECT_FALSE(invariants_of_kernel(*find_kernel("log_softmax_backward_f32"), lsm).has_value());
  v = invariants_of_kernel(zero_at_mask, lsm);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_masked_entries");
  // cross_entropy: a masked entry off the target gets exactly 0 (a masked
  // target's -1 is the contract's business), an ignored row all zeros, a
  // fully masked row the zeros policy.
  const Kernel tiny_at_mask = edited("cross_entropy_f64", "test_tiny_at_mask", [](const OpCall& c) {
    const auto* x = static_cast<const double*>(c.in[0]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i)
      if (x[i] == -INFINITY) static_cast<double*>(c.out[1])[i] += 0x1p-1074;
  });
  FuzzCase ce = one_row("cross_entropy_f64", Op::cross_entropy, masked);
  EXPECT_FALSE(invariants_of_kernel(*find_kernel("cross_entropy_f64"), ce).has_value());
  v = invariants_of_kernel(tiny_at_mask, ce);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_masked_entries");
  ce.targets = {1};  // the masked entry is the target: dx -1 + denorm_min is within the contract
  ce.values = {1, -INFINITY, 3, 2};
  EXPECT_FALSE(invariants_of_kernel(tiny_at_mask, ce).has_value());
  const Kernel loss_one = edited("cross_entropy_f32", "test_loss_one", [](const OpCall& c) {
    for (std::int64_t r = 0; r < c.rows; ++r) static_cast<float*>(c.out[0])[r] = 1;
  });
  FuzzCase ignored = one_row("cross_entropy_f32", Op::cross_entropy, {1, 2, 3});
  ignored.targets = {ignore_index};
  EXPECT_FALSE(invariants_of_kernel(*find_kernel("cross_entropy_f32"), ignored).has_value());
  v = invariants_of_kernel(loss_one, ignored);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "ce_signs");  // an ignored row: loss and dx exactly 0
  FuzzCase all_masked = one_row("cross_entropy_f32", Op::cross_entropy, {-INFINITY, -INFINITY});
  EXPECT_FALSE(invariants_of_kernel(*find_kernel("cross_entropy_f32"), all_masked).has_value());
  v = invariants_of_kernel(loss_one, all_masked);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_fully_masked");
  EXPECT_EQ(report_text(*v).find("exact:"), std::string::npos) << report_text(*v);  // the oracle takes no such row
  all_masked.targets = {ignore_index};  // ignored wins over the policy: zeros
  v = invariants_of_kernel(loss_one, all_masked);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->property, "gradient_fully_masked");
}

// At T ~ 1e-40 the two largest entries, one f64 ulp apart, are 8.8e25 apart
// in z: MPFR's softmax of the smaller is 0 (below its exponent range), so the
// scaled metric's scale reads 0 there, which it takes for a structural zero
// (exactly 0 or wrong). The true scale is positive, the contract's bound
// +inf (K u >= 1 with M ~ 5e41): the kernel's dx is within it. Found by
// fuzz_differential (corpus crash-gradient-scale-below-mpfr-range). A real
// structural zero (a masked entry) still has to be exactly 0.
TEST(FuzzGradients, AScaleBelowMpfrsRangeIsNotAStructuralZero) {
  FuzzCase c = one_row("softmax_backward_f64", Op::softmax_backward,
                       {-INFINITY, -1, 0x1.600000000001ap+6, 0x1.600000000001bp+6, 0, 0x0.0000000000001p-1022},
                       0x1.16c262777579cp-133);
  c.upstream = {-0x1.c302fd1d1d101p+0, 0x0.00000000000eep-1022, -0x1.c302fd1d1d101p+0,
                0x0.00000000000eep-1022, -0x1.c302fd1d1d101p+0, 0x0.00000000000eep-1022};
  const std::vector<double> y = run_batch(*c.kernel, c.op, c);
  ASSERT_EQ(output_row(c, c.op, y, 0, 0)[2], 0.5);  // fl(x_2 / T) = fl(x_3 / T)
  const auto v = check_differential(c, y, {});
  EXPECT_FALSE(v.has_value()) << report_text(*v);
  // The same with g_max = 0: s = y (|g| + sum y|g|) at the max entry is made
  // of the underflowed terms only (MPFR: 0, truly positive).
  FuzzCase zero_at_max = c;
  zero_at_max.upstream[3] = 0;
  const auto v0 = check_differential(zero_at_max, run_batch(*c.kernel, c.op, zero_at_max), {});
  EXPECT_FALSE(v0.has_value()) << report_text(*v0);
  const Kernel leaky = edited("softmax_backward_f64", "test_leaky_mask", [](const OpCall& call) {
    static_cast<double*>(call.out[1])[0] = 0.25;  // x_0 = -inf
  });
  c.kernel = &leaky;
  const auto leak = check_differential(c, run_batch(leaky, c.op, c), {});
  ASSERT_TRUE(leak.has_value());
  EXPECT_EQ(leak->gradient->output, "dx");
}

// The gradient kernels pass both checks on decoded inputs: the header and
// everything after the kernel bytes random (rows, cols, temperature, fill,
// values, targets, g, the partner), so that the fuzzers start from a clean
// baseline (a false report would stop every smoke).
TEST(FuzzGradients, RegisteredKernelsPassBothChecksOnDecodedInputs) {
  const Pool pool = builtins();
  Rng rng(17);
  int rows_checked = 0, partners = 0;
  for (const Kernel* k : pool)
    for (const OpDecl& d : k->ops) {
      if (!spec(d.op).several_inputs()) continue;
      const std::vector<std::uint8_t> point = encode(one_row_of(*k, d.op, {0.0}), pool, OpChoice::any);
      for (int i = 0; i < 60; ++i) {
        std::vector<std::uint8_t> bytes = random_bytes(rng, 20 + rng.below(300));
        bytes[0] = point[0];
        bytes[1] = point[1];
        bytes[3] = static_cast<std::uint8_t>(bytes[3] % 2);  // rows 1 or 2 (Limits below)
        for (OpChoice choice : {OpChoice::any, OpChoice::contract_only}) {
          FuzzCase c;
          ASSERT_TRUE(decode(bytes, pool, Limits{2, 256}, choice, c));
          ASSERT_EQ(c.kernel, k);
          const std::vector<double> y = run_batch(*k, c.op, c);
          const auto inv = check_invariants(c, *k, c.op, y);
          EXPECT_FALSE(inv.has_value()) << (inv ? report_text(*inv) : "");
          if (choice == OpChoice::any) continue;
          std::vector<double> y_partner;
          if (c.partner != nullptr) {
            y_partner = run_batch(*c.partner, c.op, c);
            ++partners;
          }
          const auto diff = check_differential(c, y, y_partner);
          EXPECT_FALSE(diff.has_value()) << (diff ? report_text(*diff) : "");
          for (std::int64_t r = 0; r < c.rows; ++r)  // the rows the checks judge
            if (classify(c.row(r)) != RowKind::nonfinite && in_property_scope(c.row(r), c.temperature, k->format))
              ++rows_checked;
        }
      }
    }
  EXPECT_GT(rows_checked, 500);
  EXPECT_GT(partners, 100);
}

// Rows of 256 through the chunk-16 kernels (16 chunks, 15 merges), masked
// chunks and confident targets among them, pass both checks.
TEST(FuzzGradients, WideRowsThroughTheChunk16Kernels) {
  Rng rng(29);
  for (const char* name : {"cross_entropy_chunked16_f32", "cross_entropy_chunked16_f64"}) {
    const Kernel& k = *find_kernel(name);
    for (int i = 0; i < 12; ++i) {
      std::vector<double> row;  // in scope: finite entries of moderate size and masks
      for (int j = 0; j < 256; ++j)
        row.push_back(rng.below(10) == 0 ? -INFINITY : round_to_format(rng.normal(0, i % 2 ? 5 : 40), k.format));
      if (i % 3 == 0) std::fill(row.begin() + 32, row.begin() + 64, -INFINITY);  // two masked chunks
      if (i % 4 == 1) row[200] = round_to_format(1e3, k.format);  // the max in a late chunk
      FuzzCase c = one_row_of(k, Op::cross_entropy, row, i % 2 ? 1.0 : 0.5);
      ASSERT_TRUE(in_property_scope(c.values, c.temperature, k.format));
      if (i % 5 == 2) c.targets = {static_cast<std::int64_t>(rng.below(256))};
      const std::vector<double> y = run_batch(k, c.op, c);
      const auto inv = check_invariants(c, k, c.op, y);
      EXPECT_FALSE(inv.has_value()) << (inv ? report_text(*inv) : "");
      const auto diff = check_differential(c, y, {});
      EXPECT_FALSE(diff.has_value()) << (diff ? report_text(*diff) : "");
    }
  }
}

}  // namespace
}  // namespace softcheck::fuzz
