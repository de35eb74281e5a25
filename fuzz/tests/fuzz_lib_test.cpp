// Unit tests of the fuzz-target library: the input codec, the kernel pool, the
// invariant checks (they must catch the planted mutants) and the soundness of
// fuzz_differential's long double prefilter against the MPFR oracle.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>

#include "differential.hpp"
#include "fuzz_case.hpp"
#include "invariants.hpp"
#include "pool.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::fuzz {
namespace {

bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

bool exact_in(double v, Format f) { return std::isnan(v) || round_to_format(v, f) == v; }

Pool builtins() { return choose_pool(nullptr).pool; }

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

TEST(FuzzCodec, EncodeThenDecodeIsTheIdentity) {
  const Pool pool = builtins();
  Rng rng(42);
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
      FuzzCase d;
      ASSERT_TRUE(decode(encode(c, pool, choice), pool, Limits{4, 256}, choice, d));
      EXPECT_EQ(d.kernel, c.kernel);
      EXPECT_EQ(d.op, c.op);
      EXPECT_EQ(d.rows, c.rows);
      EXPECT_EQ(d.cols, c.cols);
      EXPECT_TRUE(same_bits(d.temperature, c.temperature));
      ASSERT_EQ(d.values.size(), c.values.size());
      for (std::size_t j = 0; j < c.values.size(); ++j) ASSERT_TRUE(same_bits(d.values[j], c.values[j])) << j;
    }
  }
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
    }
  }
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
  const PoolChoice planted = choose_pool("mutant_masked_nan,shifted_f32");
  EXPECT_TRUE(planted.planted);
  ASSERT_EQ(planted.pool.size(), 2u);
  EXPECT_TRUE(planted.pool[0]->test_only);
  EXPECT_FALSE(choose_pool("no_such_kernel").error.empty());
}

FuzzCase one_row(const char* kernel, Op op, std::vector<double> row, double t = 1.0) {
  FuzzCase c;
  c.kernel = find_kernel(kernel);
  c.op = op;
  c.cols = static_cast<std::int64_t>(row.size());
  c.temperature = t;
  c.values = std::move(row);
  return c;
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
      if (!eligible(d, OpChoice::any)) continue;  // not a fuzz case (one output only)
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
      if (!eligible(d, OpChoice::contract_only)) continue;  // a fuzz case of fuzz_differential's choice
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
      if (!spec(d.op).scalar_output()) continue;
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

}  // namespace
}  // namespace softcheck::fuzz
