// `softcheck sweep --elements` (cli/src/cmd_sweep.cpp): rows whose entries
// are every OCP FP8 bit pattern (E4M3, E5M2; REFERENCE.md, "Low-precision
// formats"), fed to the kernels of a wider format. The exactness of every
// element value in the kernels' formats, the whole length-2 sweeps, shards of
// the length-3 sweep partitioning it, a planted one-row bug found and
// replayed, and the option combinations it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kernel_selection.hpp"
#include "softcheck/minifloat.hpp"
#include "softcheck/storage.hpp"
#include "sweep.hpp"

namespace softcheck {
namespace {

const Kernel& kernel(const char* name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::logic_error(std::string("no kernel ") + name);
  return *k;
}

// The kernels `softcheck sweep --dtype F` takes by default.
std::vector<const Kernel*> default_kernels(const cli::KernelSet& set, Format f) {
  std::vector<const Kernel*> out;
  for (const Kernel* k : set.all())
    if (k->format == f && k->available && !k->test_only) out.push_back(k);
  return out;
}

double seconds_of(const std::function<void()>& work) {
  const auto t0 = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::uint64_t power(std::uint64_t b, int e) {
  std::uint64_t p = 1;
  while (e-- > 0) p *= b;
  return p;
}

TEST(SweepElements, PatternsSweptAndLeftOut) {
  // E4M3: S.1111.111 is the only NaN (no inf): 254 of 256 patterns.
  const auto e4m3 = element_patterns(fp8_e4m3);
  EXPECT_EQ(e4m3.size(), 254u);
  EXPECT_EQ(excluded_element_patterns(fp8_e4m3), (std::vector<std::uint16_t>{0x7F, 0xFF}));
  // E5M2: +inf 0x7C and the NaNs 0x7D-0x7F, 0xFD-0xFF left out; -inf 0xFC swept.
  const auto e5m2 = element_patterns(fp8_e5m2);
  EXPECT_EQ(e5m2.size(), 249u);
  EXPECT_EQ(excluded_element_patterns(fp8_e5m2), (std::vector<std::uint16_t>{0x7C, 0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}));
  EXPECT_TRUE(std::binary_search(e5m2.begin(), e5m2.end(), std::uint16_t{0xFC}));
  EXPECT_EQ(decode(fp8_e5m2, 0xFC), -std::numeric_limits<double>::infinity());
  for (const auto* ps : {&e4m3, &e5m2}) EXPECT_TRUE(std::is_sorted(ps->begin(), ps->end()));
  EXPECT_EQ(sweep_element_format("e4m3"), &fp8_e4m3);
  EXPECT_EQ(sweep_element_format("e5m2"), &fp8_e5m2);
  EXPECT_EQ(sweep_element_format("e2m1"), &fp4_e2m1);
  EXPECT_EQ(sweep_element_format("e8m0"), nullptr);  // a scale, not an element format
  // FP6 and FP4: no specials, every pattern swept.
  for (const MiniFloat* f : {&fp6_e2m3, &fp6_e3m2, &fp4_e2m1}) {
    EXPECT_EQ(element_patterns(*f).size(), f->patterns()) << f->name;
    EXPECT_TRUE(excluded_element_patterns(*f).empty()) << f->name;
  }
}

// What the sweep feeds the kernels must be the element value itself: every
// pattern of both formats (NaN and inf included) survives rounding to f16,
// bf16 and f32 and the packing into the kernels' storage, sign of zero and
// all; a NaN stays a NaN.
TEST(SweepElements, EveryElementValueIsExactInTheKernelFormats) {
  for (const MiniFloat* e : sweep_element_formats())
    for (Format f : {Format::f16, Format::bf16, Format::f32}) {
      SCOPED_TRACE(std::string(e->name) + " in " + std::string(name(f)));
      std::vector<double> values;
      for (unsigned p = 0; p < e->patterns(); ++p) values.push_back(decode(*e, static_cast<std::uint8_t>(p)));
      const std::vector<double> stored = unpack(pack(values, f), f, values.size());
      for (std::size_t p = 0; p < values.size(); ++p) {
        const double v = values[p];
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(round_to_format(v, f)));
          EXPECT_TRUE(std::isnan(stored[p]));
          continue;
        }
        EXPECT_EQ(round_to_format(v, f), v) << p;
        EXPECT_EQ(stored[p], v) << p;
        EXPECT_EQ(std::signbit(stored[p]), std::signbit(v)) << p;
      }
    }
}

// The whole length-2 E4M3 sweep of every default f16 kernel.
TEST(SweepElements, E4m3PairsWholeWithTheDefaultF16Kernels) {
  const cli::KernelSet set(cli::PluginArgs{});
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e4m3;
  opt.length = 2;
  SweepReport r;
  const double wall = seconds_of([&] { r = run_sweep(default_kernels(set, Format::f16), opt); });
  std::printf("%s(whole E4M3 length-2 sweep: %.2f s wall)\n", sweep_table(r).c_str(), wall);
  EXPECT_EQ(r.rows, 254u * 254);
  EXPECT_EQ(r.rows_of_all, 65536u);
  EXPECT_EQ(r.excluded_rows, 65536u - 254 * 254);
  EXPECT_EQ(r.first_of_all, 254u);
  EXPECT_EQ(r.first_range, "0x00..0xFE");
  ASSERT_FALSE(r.results.empty());
  for (const SweepResult& s : r.results) {
    SCOPED_TRACE(s.kernel + " " + std::string(name(s.op)));
    EXPECT_EQ(s.rows, r.rows);
    EXPECT_EQ(s.elements, 2 * r.rows);
    EXPECT_EQ(s.masked_rows, 0u);  // E4M3 has no -inf
    EXPECT_NE(s.status(), "violated");
    EXPECT_EQ(s.nonfinite + s.special_mismatch, 0u);
    ASSERT_TRUE(s.worst.present);
    EXPECT_EQ(s.worst.patterns.size(), 2u);
    EXPECT_NE(s.worst.repro.find("--elements e4m3 --length 2"), std::string::npos);
  }
  EXPECT_TRUE(r.all_held());
  const nlohmann::json j = nlohmann::json::parse(sweep_json(r));
  EXPECT_EQ(j["row"]["elements"], "e4m3");
  EXPECT_EQ(j["row"]["length"], 2);
  EXPECT_EQ(j["row"]["excluded_patterns"], nlohmann::json({"0x7F", "0xFF"}));
  EXPECT_EQ(j["row"]["excluded_rows"], 1020);
  EXPECT_FALSE(j.contains("shard"));
  EXPECT_TRUE(j["kernels"][0]["worst"].contains("second"));
}

// E5M2's -inf is a masked entry: the row [-inf, -inf] is judged by the
// masked-row policy, the rows with one -inf against the exact [0, 1] / [1, 0].
TEST(SweepElements, E5m2PairsWholeWithTheMaskedRow) {
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e5m2;
  const SweepReport r = run_sweep({&kernel("f16_shifted_f32acc")}, opt);
  EXPECT_EQ(r.rows, 249u * 249);
  EXPECT_EQ(r.excluded_rows, 65536u - 249 * 249);
  for (const SweepResult& s : r.results) {
    SCOPED_TRACE(name(s.op));
    EXPECT_EQ(s.status(), "held");
    EXPECT_EQ(s.masked_rows, 1u);
    EXPECT_EQ(s.policy_violations, 0u);
    EXPECT_EQ(s.elements, 2 * (r.rows - 1));
    EXPECT_EQ(s.nonfinite + s.special_mismatch, 0u);
  }
}

// FP6 and FP4 rows: every pattern swept (no specials); FP4's 16^3 rows of
// length 3 and FP6's 64^2 of length 2, whole.
TEST(SweepElements, Fp6PairsAndFp4TriplesWhole) {
  for (const auto& [e, length] : {std::pair{&fp4_e2m1, 3}, std::pair{&fp6_e2m3, 2}, std::pair{&fp6_e3m2, 2}}) {
    SCOPED_TRACE(e->name);
    SweepOptions opt;
    opt.format = Format::bf16;
    opt.elements = e;
    opt.length = static_cast<std::size_t>(length);
    const SweepReport r = run_sweep({&kernel("bf16_shifted_f32acc")}, opt);
    EXPECT_EQ(r.rows, power(e->patterns(), length));
    EXPECT_EQ(r.excluded_rows, 0u);
    EXPECT_TRUE(r.all_held());
    for (const SweepResult& s : r.results) EXPECT_EQ(s.nonfinite, 0u);
  }
}

// The shards of the length-3 sweep: computed for every N-way split, their
// ranges are contiguous and disjoint and their rows add up to the whole;
// two shards run for real take exactly the rows they were given.
TEST(SweepElements, LengthThreeShardsPartitionTheRows) {
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e4m3;
  opt.length = 3;
  for (std::size_t n : {1u, 7u, 254u, 256u, 1000u}) {
    SCOPED_TRACE(n);
    opt.shard_count = n;
    std::size_t next = 0;
    std::uint64_t rows = 0;
    for (std::size_t i = 0; i < n; ++i) {
      opt.shard_index = i;
      const SweepShardRows s = sweep_shard_rows(opt);
      EXPECT_EQ(s.first_begin, next);
      EXPECT_GE(s.first_end, s.first_begin);
      EXPECT_LE(s.first_end - s.first_begin, (254 + n - 1) / n);  // equal shares, within one value
      EXPECT_EQ(s.rows, (s.first_end - s.first_begin) * 254u * 254);
      next = s.first_end;
      rows += s.rows;
    }
    EXPECT_EQ(next, 254u);
    EXPECT_EQ(rows, power(254, 3));
    EXPECT_EQ(rows + 390152u, power(256, 3));  // the rows holding a NaN make up the rest
  }
  // 254 values over 256 shards: shard 0 is empty, shard 1 takes 0x00,
  // shard 100 takes the 100th value 0x63.
  opt.shard_count = 256;
  opt.shard_index = 0;
  EXPECT_EQ(sweep_shard_rows(opt).rows, 0u);
  const std::vector<const Kernel*> kernels = {&kernel("f16_shifted_f32acc")};
  for (std::size_t i : {0u, 1u, 100u}) {
    SCOPED_TRACE(i);
    opt.shard_index = i;
    const SweepShardRows plan = sweep_shard_rows(opt);
    SweepReport r;
    const double wall = seconds_of([&] { r = run_sweep(kernels, opt); });
    std::printf("shard %zu/256: %llu rows, %s, %.2f s wall\n", i, static_cast<unsigned long long>(r.rows),
                r.first_range.c_str(), wall);
    EXPECT_EQ(r.rows, plan.rows);
    EXPECT_EQ(r.first_range, plan.range);
    EXPECT_EQ(r.first_values, plan.first_end - plan.first_begin);
    EXPECT_TRUE(r.all_held());
    for (const SweepResult& s : r.results) EXPECT_EQ(s.rows, r.rows);
    const nlohmann::json j = nlohmann::json::parse(sweep_json(r));
    EXPECT_EQ(j["shard"]["index"], i);
    EXPECT_EQ(j["shard"]["count"], 256);
    EXPECT_EQ(j["shard"]["of"], 254);
  }
  EXPECT_EQ(sweep_shard_rows(opt).range, "0x63..0x63");
}

// f16_shifted_f32acc, except on the one row whose entries are `needle`: its
// second output moved up by 4 ulps (a planted bug at one row).
Kernel planted_bug(std::array<double, 3> needle) {
  Kernel k = kernel("f16_shifted_f32acc");
  k.name = "test_planted_row_bug";
  k.compute = single_operand([inner = k, needle](Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols,
                                                 double t) {
    inner.run(op, xv, yv, rows, cols, t);
    const auto* x = static_cast<const std::uint16_t*>(xv);
    auto* y = static_cast<std::uint16_t*>(yv);
    for (std::int64_t r = 0; r < rows; ++r) {
      bool hit = op == Op::softmax && cols == 3;
      for (std::int64_t c = 0; c < cols && hit; ++c) hit = decode16(x[r * cols + c], Format::f16) == needle[c];
      if (hit) y[r * cols + 1] = static_cast<std::uint16_t>(y[r * cols + 1] + 4);
    }
  });
  return k;
}

TEST(SweepElements, FindsAPlantedBugAtOneRowOfAShardAndReplaysIt) {
  // [1.5, -2, 0.375]: ordinary values, the second output ~0.03, mid-binade.
  const std::array<double, 3> needle = {1.5, -2.0, 0.375};
  const Kernel bug = planted_bug(needle);
  std::array<std::uint16_t, 3> p{};
  for (std::size_t k = 0; k < 3; ++k) p[k] = encode(fp8_e4m3, needle[k], Overflow::saturate);
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e4m3;
  opt.length = 3;
  opt.ops = {Op::softmax};
  // The shard of 254 holding a = 1.5: the index of its pattern among the swept ones.
  const auto firsts = element_patterns(fp8_e4m3);
  opt.shard_count = 254;
  opt.shard_index = static_cast<std::size_t>(std::find(firsts.begin(), firsts.end(), p[0]) - firsts.begin());
  const SweepReport r = run_sweep({&bug}, opt);
  EXPECT_EQ(r.rows, 254u * 254);
  ASSERT_EQ(r.results.size(), 1u);
  const SweepResult& s = r.results[0];
  EXPECT_EQ(s.status(), "violated");
  EXPECT_EQ(s.violations, 1u);
  EXPECT_EQ(s.worst.patterns, (std::vector<std::uint16_t>{p[0], p[1], p[2]}));
  EXPECT_EQ(s.worst.element, 1u);
  EXPECT_GT(s.worst.ulp, 3.0);
  const std::string repro = fmt::format(
      "softcheck sweep --dtype f16 --elements e4m3 --length 3 --impl test_planted_row_bug --op softmax "
      "--value 0x{:02X} --second 0x{:02X} --third 0x{:02X}",
      p[0], p[1], p[2]);
  EXPECT_EQ(s.worst.repro, repro);
  EXPECT_FALSE(r.all_held());
  // The repro line's options: the one row, the same verdict and worst output.
  SweepOptions one = opt;
  one.shard_index = 0;
  one.shard_count = 1;
  one.patterns = {p[0]};
  one.seconds = {p[1]};
  one.thirds = {p[2]};
  const SweepReport again = run_sweep({&bug}, one);
  EXPECT_EQ(again.rows, 1u);
  EXPECT_EQ(again.results[0].violations, 1u);
  EXPECT_EQ(again.results[0].worst.got, s.worst.got);
  EXPECT_EQ(again.results[0].worst.ulp, s.worst.ulp);
  EXPECT_EQ(again.results[0].worst.repro, repro);
  // The correct kernel on the same shard holds.
  EXPECT_TRUE(run_sweep({&kernel("f16_shifted_f32acc")}, one).all_held());
}

// A kernel without a contract still claims the floor's no_nonfinite
// (kernel.hpp): f16_shifted_f32acc with its contracts removed and a NaN
// written on the one row [1.5, -2] fails the sweep, as `run` would fail it;
// the same kernel opting out of the floor (with its reason) does not.
TEST(SweepElements, AKernelWithoutAContractStillMayNotReturnNaN) {
  Kernel k = kernel("f16_shifted_f32acc");
  k.name = "test_nan_at_one_row";
  for (OpDecl& d : k.ops) d.contract = Contract{.why = "test: none"};
  k.compute = single_operand([inner = kernel("f16_shifted_f32acc")](Op op, const void* xv, void* yv,
                                                                     std::int64_t rows, std::int64_t cols, double t) {
    inner.run(op, xv, yv, rows, cols, t);
    const auto* x = static_cast<const std::uint16_t*>(xv);
    auto* y = static_cast<std::uint16_t*>(yv);
    for (std::int64_t r = 0; r < rows; ++r)
      if (cols == 2 && decode16(x[r * 2], Format::f16) == 1.5 && decode16(x[r * 2 + 1], Format::f16) == -2.0)
        y[r * 2] = encode16(NAN, Format::f16);
  });
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e4m3;
  opt.length = 2;
  opt.ops = {Op::softmax};
  const SweepReport r = run_sweep({&k}, opt);
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].floor_violations, 1u);
  EXPECT_EQ(r.results[0].status(), "violated");
  EXPECT_FALSE(r.all_held());
  EXPECT_EQ(r.results[0].worst.patterns,
            (std::vector<std::uint16_t>{encode(fp8_e4m3, 1.5, Overflow::saturate),
                                        encode(fp8_e4m3, -2.0, Overflow::saturate)}));
  Kernel opted_out = k;
  for (OpDecl& d : opted_out.ops) d.opt_outs.push_back({std::string(floor_no_nonfinite), "test: NaN by design"});
  const SweepReport r2 = run_sweep({&opted_out}, opt);
  EXPECT_EQ(r2.results[0].floor_violations, 0u);
  EXPECT_EQ(r2.results[0].status(), "no_contract");
  EXPECT_TRUE(r2.all_held());
}

// A kernel that writes 1 on every output of a row of -inf alone (no
// masked-row policy gives that): E5M2's fully masked row finds it.
TEST(SweepElements, FullyMaskedRowIsJudgedByThePolicy) {
  Kernel k = kernel("f16_shifted_f32acc");
  k.name = "test_masked_row_ones";
  k.compute = single_operand([inner = k](Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols,
                                         double t) {
    inner.run(op, xv, yv, rows, cols, t);
    const auto* x = static_cast<const std::uint16_t*>(xv);
    auto* y = static_cast<std::uint16_t*>(yv);
    for (std::int64_t r = 0; r < rows; ++r)
      if (std::all_of(x + r * cols, x + (r + 1) * cols, [](std::uint16_t v) { return v == 0xFC00; }))
        std::fill(y + r * cols, y + (r + 1) * cols, std::uint16_t{0x3C00});
  });
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e5m2;
  opt.ops = {Op::softmax};
  opt.patterns = {0xFC, 0x38};  // a = -inf, 1: the masked row and 2 x 249 ordinary ones
  const SweepReport r = run_sweep({&k}, opt);
  const SweepResult& s = r.results.at(0);
  EXPECT_EQ(s.rows, 2u * 249);
  EXPECT_EQ(s.masked_rows, 1u);
  EXPECT_EQ(s.policy_violations, 1u);
  EXPECT_EQ(s.violations, 0u);
  EXPECT_EQ(s.status(), "violated");
  EXPECT_FALSE(r.all_held());
  EXPECT_EQ(s.worst.patterns, (std::vector<std::uint16_t>{0xFC, 0xFC}));
  EXPECT_NE(s.worst.exact.find("fully masked row"), std::string::npos);
  EXPECT_NE(s.worst.repro.find("--value 0xFC --second 0xFC"), std::string::npos);
  // The correct kernel follows its policy on that row.
  const SweepReport ok = run_sweep({&kernel("f16_shifted_f32acc")}, opt);
  EXPECT_EQ(ok.results.at(0).masked_rows, 1u);
  EXPECT_TRUE(ok.all_held());
}

// The sweep has one row of logits to give and reads one row back, judged
// against the dense exact row: softmax and log_softmax. Any other op asked
// for (attention's q, K, V, cross-entropy's target, a backward pass's
// upstream gradient, a scalar or second output, a sparse op) is refused with
// a message naming the ops it runs, and a kernel of such an op is refused
// rather than called with the row alone.
TEST(SweepElements, RunsOnlyTheOpsItCanFeed) {
  SweepOptions opt;
  opt.format = Format::f32;
  opt.elements = &fp8_e4m3;
  opt.patterns = {0x38};
  const auto refusal = [&](const std::vector<const Kernel*>& kernels) -> std::string {
    try {
      run_sweep(kernels, opt);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(not refused)";
  };
  for (const OpSpec& o : op_table) {
    opt.ops = {o.op};
    if (o.op == Op::softmax || o.op == Op::log_softmax) {
      EXPECT_EQ(run_sweep({&kernel("shifted_log1p_f32")}, opt).rows, 254u) << o.name;
      continue;
    }
    const std::string why = refusal({&kernel("shifted_log1p_f32")});
    EXPECT_NE(why.find(std::string(o.name)), std::string::npos) << o.name << ": " << why;
    EXPECT_NE(why.find("sweep runs softmax or log_softmax"), std::string::npos) << o.name << ": " << why;
  }
  opt.ops.clear();
  for (const char* name : {"relu_attention_naive_f32", "linear_attention_naive_f32", "attention_naive_f32"}) {
    const std::string why = refusal({&kernel(name)});
    EXPECT_NE(why.find("sweep runs softmax or log_softmax"), std::string::npos) << name << ": " << why;
  }
}

TEST(SweepElements, RejectsWhatItCannotSweep) {
  const std::vector<const Kernel*> f16 = {&kernel("f16_shifted_f32acc")};
  SweepOptions opt;
  opt.format = Format::f16;
  opt.elements = &fp8_e4m3;
  for (std::size_t length : {0u, 1u, 4u}) {
    opt.length = length;
    EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument) << length;
  }
  opt.length = 2;
  opt.pairs = true;  // two row spaces at once
  EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
  opt.pairs = false;
  opt.thirds = {0x38};  // no third entry in a row of 2
  EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
  opt.thirds.clear();
  for (std::uint16_t nan : {0x7F, 0xFF}) {  // no exact softmax: not swept
    opt.patterns = {nan};
    EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
    opt.patterns.clear();
    opt.seconds = {nan};
    EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
    opt.seconds.clear();
  }
  opt.patterns = {0x100};  // not 8 bits
  EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
  opt.elements = &fp8_e5m2;
  opt.patterns = {0x7C};  // +inf
  EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
  opt.patterns = {0xFC};  // -inf: swept
  EXPECT_EQ(run_sweep(f16, opt).rows, 249u);
  // Kernels of another format than --dtype.
  opt.patterns.clear();
  opt.format = Format::f32;
  EXPECT_THROW(run_sweep(f16, opt), std::invalid_argument);
  // --dtype f32 without --elements: too many patterns to sweep.
  opt.elements = nullptr;
  EXPECT_THROW(run_sweep({&kernel("shifted_f32")}, opt), std::invalid_argument);
}

}  // namespace
}  // namespace softcheck
