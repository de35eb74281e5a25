// Each property's check: a correct reference passes every property, and for
// every property a deliberately wrong kernel is caught, shrunk and replayed.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>

#include <cmath>
#include <sstream>

#include "fake_kernels.hpp"
#include "softcheck/generators.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "attention_cases.hpp"
#include "softcheck/attention_oracle.hpp"
#include "softcheck/oracle.hpp"
#include "support.hpp"
#include "test_options.hpp"

namespace softcheck::props {
namespace {

using testing::ci_options;
using testing::fakes;
using testing::reference_kernel;

std::string describe(std::span<const PropertyVerdict> v) {
  std::ostringstream os;
  print_verdicts(os, v);
  return os.str();
}

class Reference : public ::testing::TestWithParam<Format> {};

TEST_P(Reference, PassesEveryProperty) {
  const std::vector<PropertyVerdict> v = check_kernel(reference_kernel(GetParam()), ci_options());
  ASSERT_EQ(v.size(), 2 * property_list().size());  // both ops x every property
  for (const PropertyVerdict& pv : v) {
    if (!pv.claimed) {
      EXPECT_EQ(pv.verdict, Verdict::not_claimed);
      continue;
    }
    EXPECT_EQ(pv.verdict, Verdict::passed) << describe({&pv, 1});
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, Reference, ::testing::Values(Format::f64, Format::f32, Format::f16, Format::bf16),
                         [](const ::testing::TestParamInfo<Format>& i) { return std::string(name(i.param)); });

// The runner's storage conversions are exact for every value of every format.
RC_GTEST_PROP(Runner, StorageRoundTripsEveryFormat, ()) {
  const Format f = *rc::gen::element(Format::f64, Format::f32, Format::f16, Format::bf16);
  const std::vector<double> row = *gen::any_row(f, gen::RowOptions{64, 0});
  const Kernel k = testing::identity_kernel(f);
  const CaseResult r = check_case(k, Op::softmax, "batch_independence", Case{row, 1.0});
  RC_ASSERT(r.status == CaseStatus::pass);
  const std::vector<double> y = detail::run_row(k, Op::softmax, row, 1.0);
  for (std::size_t i = 0; i < row.size(); ++i) {
    const bool same = std::isnan(row[i]) ? std::isnan(y[i])
                                         : std::bit_cast<std::uint64_t>(y[i]) == std::bit_cast<std::uint64_t>(row[i]);
    RC_ASSERT(same);
  }
}

// lse and entropy: the long-double reference passes every property it claims,
// and claims every lse / entropy property (each has a fake that breaks it).
TEST(ScalarReference, PassesEveryProperty) {
  for (Format f : {Format::f64, Format::f32}) {
    const std::vector<PropertyVerdict> v = check_kernel(testing::scalar_reference_kernel(f), ci_options());
    ASSERT_EQ(v.size(), 2 * property_list().size());  // lse and entropy x every property
    std::size_t claimed = 0;
    for (const PropertyVerdict& pv : v) {
      if (!pv.claimed) {
        EXPECT_EQ(pv.verdict, Verdict::not_claimed);
        continue;
      }
      ++claimed;
      EXPECT_EQ(pv.verdict, Verdict::passed) << name(f) << " " << describe({&pv, 1});
    }
    // accuracy + 4 shared (shift, permutation, masked entries, fully masked) per op,
    // lse_bounds for lse, 3 entropy-only properties.
    EXPECT_EQ(claimed, 2 * 5 + 1 + 3u) << name(f);
  }
}

// softmax_lse: the reference passes every property it claims; accuracy
// judges both outputs (a fake with a wrong lse fails it, CaughtBy), and the
// row properties apply to its row y.
TEST(FusedReference, PassesEveryProperty) {
  for (Format f : {Format::f64, Format::f32}) {
    const std::vector<PropertyVerdict> v = check_kernel(testing::fused_reference_kernel(f), ci_options());
    std::vector<std::string> claimed;
    for (const PropertyVerdict& pv : v) {
      if (!pv.claimed) continue;
      claimed.push_back(pv.property);
      EXPECT_EQ(pv.verdict, Verdict::passed) << name(f) << " " << describe({&pv, 1});
    }
    EXPECT_NE(std::find(claimed.begin(), claimed.end(), "accuracy"), claimed.end()) << name(f);
  }
  const auto lse_fake = std::find_if(fakes().begin(), fakes().end(),
                                     [](const testing::Fake& f) { return f.op == Op::softmax_lse && f.property == "accuracy"; });
  ASSERT_NE(lse_fake, fakes().end());
  const PropertyVerdict bad = check_property(lse_fake->kernel, Op::softmax_lse, "accuracy", ci_options());
  ASSERT_EQ(bad.verdict, Verdict::failed);
  EXPECT_EQ(bad.failure.message.rfind("lse: ", 0), 0u) << bad.failure.message;
}

class CaughtBy : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CaughtBy, FakeFailsAndReplays) {
  const testing::Fake& f = fakes()[GetParam()];
  const PropertyVerdict v = check_property(f.kernel, f.op, f.property, ci_options());
  ASSERT_EQ(v.verdict, Verdict::failed) << describe({&v, 1});
  ASSERT_TRUE(v.counterexample.has_value());
  EXPECT_GT(v.failure.measured, v.failure.allowed);
  // The printed repro line carries the exact case (the gradient ops' target
  // and upstream gradient too): parse it back and replay it.
  ASSERT_NE(v.repro.find("--row="), std::string::npos);
  ASSERT_NE(v.repro.find("--temperature="), std::string::npos);
  const auto c = parse_repro_case(v.repro);
  ASSERT_TRUE(c.has_value()) << c.error();
  const auto r = replay(f.kernel, f.op, f.property, *c);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->result.status, CaseStatus::fail) << r->result.message;
  EXPECT_TRUE(r->claim.claimed);
}

INSTANTIATE_TEST_SUITE_P(EveryProperty, CaughtBy, ::testing::Range<std::size_t>(0, fakes().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& i) {
                           return fakes()[i.param].property + "_by_" + fakes()[i.param].kernel.name;
                         });

TEST(CaughtBy, EveryPropertyHasAFake) {
  for (const PropertyInfo& p : property_list())
    EXPECT_TRUE(std::any_of(fakes().begin(), fakes().end(), [&](const auto& f) { return f.property == p.name; }))
        << p.name;
}

// The uniform policy: 1/n and -ln n within the bound of an all-equal row.
TEST(FullyMasked, UniformPolicyHeldAndBroken) {
  for (Op op : {Op::softmax, Op::log_softmax}) {
    const PropertyVerdict good = check_property(testing::uniform_policy_kernel(0), op, "fully_masked", ci_options());
    EXPECT_EQ(good.verdict, Verdict::passed) << describe({&good, 1});
    const PropertyVerdict bad = check_property(testing::uniform_policy_kernel(1000), op, "fully_masked", ci_options());
    EXPECT_EQ(bad.verdict, Verdict::failed) << describe({&bad, 1});
  }
}

// Without a contract a kernel claims the structural properties and the
// floor (no_nonfinite, range, ordering: exact, no bound needed; sum_to_one,
// shift_invariance, permutation with the generic tolerance), unless it opted
// out of a floor check, as naive does with its reason (an opt-out of
// no_nonfinite covers the generic-tolerance checks too).
TEST(Claims, ContractNoneClaimsTheStructuralPropertiesAndTheFloor) {
  const Kernel* shifted = find_kernel("shifted_f32");
  ASSERT_NE(shifted, nullptr);
  ASSERT_FALSE(shifted->find(Op::log_softmax)->contract.declared);
  const Kernel* naive = find_kernel("naive_f32");
  ASSERT_NE(naive, nullptr);
  ASSERT_FALSE(naive->find(Op::softmax)->contract.declared);
  for (const PropertyInfo& p : property_list()) {
    const bool structural = p.name == "fully_masked" || p.name == "batch_independence";
    const bool exact_floor = p.name == "no_nonfinite" || p.name == "range" || p.name == "ordering";
    const bool tolerance_floor = p.name == "shift_invariance" || p.name == "permutation";  // sum_to_one: softmax only
    EXPECT_EQ(claim(*shifted, Op::log_softmax, p.name).claimed, structural || exact_floor || tolerance_floor) << p.name;
    EXPECT_EQ(claim(*naive, Op::softmax, p.name).claimed, structural) << p.name;
    const Claim c = claim(*naive, Op::softmax, p.name);
    if (exact_floor || tolerance_floor || p.name == "sum_to_one") {
      EXPECT_EQ(c.reason.rfind("opted out: the unshifted exp(z) overflows", 0), 0u) << c.reason;
    }
  }
  EXPECT_EQ(claim(*shifted, Op::log_softmax, "permutation").reason.rfind("the floor: generic tolerance", 0), 0u);
  // The floor holds for shifted's log-softmax, which declares no contract.
  for (const char* p : {"no_nonfinite", "range", "ordering", "shift_invariance", "permutation"}) {
    const PropertyVerdict v = check_property(*shifted, Op::log_softmax, p, ci_options());
    EXPECT_EQ(v.verdict, Verdict::passed) << describe({&v, 1});
  }
}

// The floor's generic tolerance: a correct kernel without a contract claims
// and passes it, in every format the reference has; the claim says which
// tolerance it is, and `check` shows that beside the verdict.
TEST(Floor, CorrectKernelWithoutContractPassesTheGenericTolerance) {
  for (Format f : {Format::f64, Format::f32, Format::f16}) {
    const Kernel& k = testing::no_contract_reference_kernel(f);
    for (const PropertyVerdict& v : check_kernel(k, ci_options())) {
      const bool floor = v.property == "no_nonfinite" || v.property == "range" || v.property == "ordering" ||
                         v.property == "shift_invariance" || v.property == "permutation" ||
                         (v.property == "sum_to_one" && v.op == Op::softmax);
      const bool structural = v.property == "fully_masked" || v.property == "batch_independence";
      EXPECT_EQ(v.claimed, floor || structural) << name(f) << " " << name(v.op) << " " << v.property;
      if (v.claimed) {
        EXPECT_EQ(v.verdict, Verdict::passed) << name(f) << " " << describe({&v, 1});
      }
    }
  }
  const PropertyVerdict v = check_property(testing::no_contract_reference_kernel(), Op::softmax, "sum_to_one", ci_options());
  EXPECT_EQ(v.reason, "the floor: generic tolerance 64 + 12n + 12R + 4M + 16M[T!=1] ulps, no contract");
  EXPECT_NE(describe({&v, 1}).find("; the floor: generic tolerance"), std::string::npos) << describe({&v, 1});
  const PropertyVerdict l = check_property(testing::no_contract_reference_kernel(), Op::log_softmax, "permutation", ci_options());
  EXPECT_NE(l.reason.find("ulps of max(|l|,1), no contract"), std::string::npos) << l.reason;
  EXPECT_EQ(l.closest.unit, "ulp of max(|l|,1)");
}

// The generic tolerance is the contract-shaped bound 4 (16 + 3n + 3R + M + 4M[T!=1])
// (gamma form: K / (1 - K u)); a kernel with a contract keeps its own bound.
TEST(Floor, ToleranceFormulaAndContractsUnchanged) {
  const std::vector<double> row = {0.0, -1.0, -3.0, 2.0};
  const double u = unit_roundoff(Format::f64);
  const double k1 = 64 + 12 * 4 + 12 * 5 + 4 * 3;           // T = 1: n = 4, R = 5, M = 3
  const double k2 = 64 + 12 * 4 + 12 * 10 + (4 + 16) * 6;  // T = 0.5: R = 10, M = 6
  const Kernel& without = testing::no_contract_reference_kernel();
  // row_shape inflates R and M by 2^-50 (contract.cpp): compare to 1e-12.
  EXPECT_NEAR(detail::tolerance_ulps(without, Op::softmax, row, 1.0), k1 / (1 - k1 * u), 1e-12 * k1);
  EXPECT_NEAR(detail::tolerance_ulps(without, Op::softmax, row, 0.5), k2 / (1 - k2 * u), 1e-12 * k2);
  const Kernel& with = reference_kernel();
  EXPECT_EQ(detail::tolerance_ulps(with, Op::softmax, row, 1.0), detail::bound_ulps(with, Op::softmax, row, 1.0));
  EXPECT_EQ(claim(with, Op::softmax, "shift_invariance").reason.rfind("declared contract", 0), 0u);
  // f16: the same K in units of its u, vacuous (+inf) once K u >= 1.
  EXPECT_TRUE(std::isinf(detail::tolerance_ulps(testing::no_contract_reference_kernel(Format::f16), Op::softmax,
                                                std::vector<double>(200, 0.0), 1.0)));
}

// The no-contract fakes (fake_nc_*) fail by finite errors beyond a finite
// tolerance: the generic tolerance, not a NaN, catches a dropped tail and
// errors of 2^20 ulps.
TEST(Floor, CatchesFiniteErrorsWithoutAContract) {
  std::size_t fakes_seen = 0;
  for (const testing::Fake& f : fakes()) {
    if (!f.kernel.name.starts_with("fake_nc_")) continue;
    ++fakes_seen;
    const PropertyVerdict v = check_property(f.kernel, f.op, f.property, ci_options());
    ASSERT_EQ(v.verdict, Verdict::failed) << describe({&v, 1});
    EXPECT_TRUE(std::isfinite(v.failure.measured) && std::isfinite(v.failure.allowed)) << describe({&v, 1});
    EXPECT_GT(v.failure.measured, v.failure.allowed);
  }
  EXPECT_EQ(fakes_seen, 5u);
}

// A kernel without a contract may opt out of a generic-tolerance check, with
// its reason; the others stay claimed.
TEST(Floor, OptOutWithAReason) {
  Kernel k = testing::no_contract_reference_kernel();
  k.ops[0].opt_outs = {{std::string(floor_permutation), "reduces in a data-dependent order"}};
  EXPECT_FALSE(claim(k, Op::softmax, "permutation").claimed);
  EXPECT_EQ(claim(k, Op::softmax, "permutation").reason, "opted out: reduces in a data-dependent order");
  EXPECT_TRUE(claim(k, Op::softmax, "shift_invariance").claimed);
  EXPECT_TRUE(claim(k, Op::softmax, "sum_to_one").claimed);
  EXPECT_EQ(check_property(k, Op::softmax, "permutation", ci_options()).verdict, Verdict::not_claimed);
}

TEST(Claims, UnprovidedOpIsNotClaimed) {
  const Kernel* online = find_kernel("online_f32");
  ASSERT_NE(online, nullptr);
  ASSERT_EQ(online->find(Op::log_softmax), nullptr);
  const PropertyVerdict v = check_property(*online, Op::log_softmax, "accuracy", ci_options());
  EXPECT_EQ(v.verdict, Verdict::not_claimed);
}

// The gradient ops: every gradient kernel (gradient_kernels(), the test-only
// ones aside) claims the exact gradient properties whatever its contract and
// never a logits-only property; a logits-only op never claims a gradient
// property. (props.Suite runs each claimed one: suite_test.cpp.)
TEST(GradientOps, ClaimsFollowTheOpsInputs) {
  std::size_t kernels = 0;
  for (const Kernel& k : gradient_kernels()) {
    if (k.test_only || !k.available) continue;
    ++kernels;
    for (const OpDecl& d : k.ops)
      for (const PropertyInfo& p : property_list()) {
        const Claim c = claim(k, d.op, p.name);
        const std::string_view n = p.name;
        const bool gradient_property = n.starts_with("gradient_") || n.starts_with("ce_") || n == "upstream_shift";
        if (!gradient_property) {
          EXPECT_FALSE(c.claimed) << k.name << " " << n;
          EXPECT_NE(c.reason.find(n.starts_with("attention_") ? "no head dimension" : "logits alone"), std::string::npos)
              << c.reason;
        }
        if (n == "gradient_masked_entries" || n == "gradient_fully_masked" || (n == "ce_signs" && d.op == Op::cross_entropy)) {
          EXPECT_TRUE(c.claimed) << k.name << " " << n;
        }
        if (k.find(d.op)->contract_of(1).declared && (n == "gradient_accuracy" || n == "gradient_check")) {
          EXPECT_TRUE(c.claimed) << k.name << " " << n << ": " << c.reason;
        }
      }
  }
  EXPECT_GE(kernels, 14u);
  const PropertyVerdict forward = check_property(reference_kernel(), Op::softmax, "gradient_accuracy", ci_options());
  EXPECT_EQ(forward.verdict, Verdict::not_claimed);
  EXPECT_NE(forward.reason.find("takes the logits alone"), std::string::npos) << forward.reason;
}

// The attention kernels (attention_kernels(), the test-only ones aside)
// claim the attention properties and no other: the exact ones (masked keys'
// values, the masked-row policy) whatever they declare, the others by their
// O and lse contracts; no other op claims an attention property.
// (props.Suite runs each claimed one: suite_test.cpp.)
TEST(AttentionOps, ClaimsFollowTheOpsInputs) {
  std::size_t kernels = 0;
  for (const Kernel& k : attention_kernels()) {
    if (k.test_only || !k.available) continue;
    ++kernels;
    const OpDecl& d = k.ops.at(0);  // attention, relu_attention or linear_attention
    for (const PropertyInfo& p : property_list()) {
      const Claim c = claim(k, d.op, p.name);
      const std::string_view n = p.name;
      if (!n.starts_with("attention_")) {
        EXPECT_FALSE(c.claimed) << k.name << " " << n;
        EXPECT_NE(c.reason.find("q, K and V"), std::string::npos) << c.reason;
        continue;
      }
      const bool exact = n == "attention_masked_values" || n == "attention_fully_masked" ||
                         n == "attention_window_as_bias" || n == "attention_causal_full_window";
      const bool by_o = n == "attention_mass", by_lse = n == "attention_lse_is_softmax_lse";
      if (n == "attention_masked_padding") {
        const bool relu = spec(d.op).out[0].kind == OutputKind::relu_attention_output;
        EXPECT_EQ(c.claimed, !relu && (d.contract_of(0).declared || d.contract_of(1).declared))
            << k.name << ": " << c.reason;
        continue;
      }
      if (n == "attention_softcap_before_mask") {
        EXPECT_EQ(c.claimed, d.params.softcap != 0 && d.contract_of(0).declared) << k.name << ": " << c.reason;
        continue;
      }
      // Mass conservation: O a weighted mean of V (softmax and linear
      // attention, not relu; not with a sink, which takes its share).
      // Without an O contract the floor claims it unless the kernel opted
      // out of sum_to_one (the P-rounding kernels whose l sums the unrounded P).
      const bool mean_of_v = spec(d.op).out[0].kind != OutputKind::relu_attention_output && d.params.sink == -INFINITY;
      const bool mass_claimed = d.contract_of(0).declared || d.opted_out(floor_sum_to_one) == nullptr;
      const bool expected = exact || (by_o && mean_of_v && mass_claimed) ||
                            (by_lse && d.contract_of(1).declared && d.params.softcap == 0) ||
                            (!by_o && !by_lse && (d.contract_of(0).declared || d.contract_of(1).declared));
      EXPECT_EQ(c.claimed, expected) << k.name << " " << n << ": " << c.reason;
    }
  }
  EXPECT_GE(kernels, 6u);
  const PropertyVerdict forward = check_property(reference_kernel(), Op::softmax, "attention_accuracy", ci_options());
  EXPECT_EQ(forward.verdict, Verdict::not_claimed);
  EXPECT_NE(forward.reason.find("no head dimension"), std::string::npos) << forward.reason;
}

// The floor's mass conservation holds a kernel without an O contract: the
// renormalised E4M3 P kernel passes it; the kernel whose l sums the unrounded
// P opts out, and the same kernel without its opt-out fails it.
TEST(AttentionOps, FloorMassConservationCatchesAKernelWithoutAContractThatLosesMass) {
  const Kernel* renormalised = find_kernel("attention_flash_pe4m3_sumrounded_f32");
  const Kernel* lossy = find_kernel("attention_flash_pe4m3_f32");
  ASSERT_NE(renormalised, nullptr);
  ASSERT_NE(lossy, nullptr);
  ASSERT_FALSE(renormalised->find(Op::attention)->contract.declared);
  const PropertyVerdict kept = check_property(*renormalised, Op::attention, "attention_mass", ci_options());
  EXPECT_EQ(kept.verdict, Verdict::passed) << describe({&kept, 1});
  EXPECT_NE(kept.reason.find("the floor"), std::string::npos) << kept.reason;
  const PropertyVerdict opted = check_property(*lossy, Op::attention, "attention_mass", ci_options());
  EXPECT_EQ(opted.verdict, Verdict::not_claimed) << describe({&opted, 1});
  Kernel no_opt_out = *lossy;
  no_opt_out.ops[0].opt_outs.clear();
  const PropertyVerdict lost = check_property(no_opt_out, Op::attention, "attention_mass", ci_options());
  EXPECT_EQ(lost.verdict, Verdict::failed) << describe({&lost, 1});
}

// An attention case's repro line carries d, q, K and V (hex-exact) besides
// the bias row: parsed back it is the same case, and it replays.
TEST(AttentionOps, ReproLineCarriesQueryKeysAndValues) {
  Case c{{0.0, -INFINITY, 0x1p-3}, 0.5};
  c.head_dim = 2;
  c.query = {1.0, -0x1.8p+1};
  c.keys = {0.5, -1.0, NAN, INFINITY, 2.0, 0x1p-4};  // the masked key's K may hold anything
  c.values = {1.0, 2.0, -INFINITY, NAN, -0.25, 3.0};
  const std::string line = repro_command("attention_flash_bc64_f32", Op::attention, "attention_masked_values", c);
  EXPECT_NE(line.find(" --head-dim=2 --query=0x1p+0,-0x1.8p+1 --keys="), std::string::npos) << line;
  const auto parsed = parse_repro_case(line);
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  EXPECT_EQ(parsed->head_dim, 2);
  EXPECT_EQ(detail::case_hash(*parsed), detail::case_hash(c)) << line;
  const Kernel* k = find_kernel("attention_flash_bc64_f32");
  ASSERT_NE(k, nullptr);
  for (const char* p : {"attention_accuracy", "attention_masked_values", "attention_key_permutation"}) {
    const auto r = replay(*k, Op::attention, p, *parsed);
    ASSERT_TRUE(r.has_value()) << p << ": " << r.error();
    EXPECT_TRUE(r->claim.claimed) << p;
    EXPECT_EQ(r->result.status, CaseStatus::pass) << p << ": " << r->result.message;
  }
  // Without q, K and V the op cannot run: replay says what is missing.
  Case bare{{0.0, 1.0}, 1.0};
  const auto missing = replay(*k, Op::attention, "attention_accuracy", bare);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("--head-dim"), std::string::npos) << missing.error();
}

// The attention cases come from RapidCheck's seeded stream alone: the same
// seed gives the same shrunk counterexample and repro line.
TEST(AttentionOps, SameSeedSameCounterexample) {
  const Kernel* k = find_kernel("attention_flash_no_rescale_f32");
  ASSERT_NE(k, nullptr);
  const PropertyVerdict a = check_property(*k, Op::attention, "attention_mass", ci_options());
  const PropertyVerdict b = check_property(*k, Op::attention, "attention_mass", ci_options());
  ASSERT_EQ(a.verdict, Verdict::failed) << describe({&a, 1});
  EXPECT_EQ(a.repro, b.repro);
  EXPECT_EQ(a.tests_passed, b.tests_passed);
  EXPECT_EQ(a.shrink_steps, b.shrink_steps);
  // The shrunk case keeps V all ones (the mass domain) and replays.
  const auto c = parse_repro_case(a.repro);
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_TRUE(std::all_of(c->values.begin(), c->values.end(), [](double v) { return v == 1.0; })) << a.repro;
  const auto r = replay(*k, Op::attention, "attention_mass", *c);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->result.status, CaseStatus::fail) << r->result.message;
}

// On exactly representable scores the two oracles agree: exact_attention's
// lse is exact_row's lse of the scores (what attention_lse_is_softmax_lse
// relies on), and exact_scores finds those scores.
TEST(AttentionOps, ExactScoresGiveTheSoftmaxOraclesLse) {
  Case c{{0.0, -INFINITY, 3.0, 0.0}, 2.0};
  c.head_dim = 4;
  c.query = {1, -2, 3, 0};
  c.keys = {1, 1, 1, 1, 5, 5, 5, 5, -3, 0, 2, 7, 4, -1, 0, 2};
  c.values = std::vector<double>(16, 0.5);
  const auto z = detail::exact_scores(c);
  ASSERT_TRUE(z.has_value());
  // (q . K_j) / (2 sqrt 4) + x_j
  EXPECT_EQ(*z, (std::vector<double>{2.0 / 4, -INFINITY, 3.0 / 4 + 3, 6.0 / 4}));
  const oracle::ExactAttention a = oracle::exact_attention(c.row, c.query, c.keys, c.values, c.head_dim, c.temperature);
  const oracle::ExactRow r = oracle::exact_row(*z, 1.0);
  oracle::PrecisionScope scope(512);
  EXPECT_LT(abs(a.lse - r.lse), ldexp(oracle::Real(1), -240)) << oracle::to_string(a.lse, 30);
  // T = 0.7 does not give exact scores: the property does not apply there.
  c.temperature = 0.7;
  EXPECT_FALSE(detail::exact_scores(c).has_value());
}

// The careless loss -log(softmax(z)_t) of the kernel registry's mutation
// self-test is caught by a claimed gradient property and replays.
TEST(GradientOps, CarelessCrossEntropyIsCaught) {
  const Kernel* k = find_kernel("careless_cross_entropy_f32");
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->test_only);
  bool caught = false;
  for (const char* p : {"gradient_accuracy", "ce_confident"}) {
    const PropertyVerdict v = check_property(*k, Op::cross_entropy, p, ci_options());
    if (v.claimed && v.verdict == Verdict::failed) {
      caught = true;
      const auto c = parse_repro_case(v.repro);
      ASSERT_TRUE(c.has_value()) << c.error();
      const auto r = replay(*k, Op::cross_entropy, p, *c);
      ASSERT_TRUE(r.has_value()) << r.error();
      EXPECT_EQ(r->result.status, CaseStatus::fail) << v.repro;
    }
  }
  EXPECT_TRUE(caught);
}

// ulps_apart(a, b, k) is |a - b| / 2^k rounded once, as MPFR has it: for
// differences a double holds and for those it would round (far-apart
// exponents), results in the subnormal range and past DBL_MAX included.
RC_GTEST_PROP(UlpsApart, IsMpfrsQuotientRoundedOnce, ()) {
  const auto value = [] {
    const double m = *rc::gen::inRange(-(1 << 20), 1 << 20) / double(1 << 20);
    return std::ldexp(m, *rc::gen::inRange(-1070, 1024));
  };
  const double a = value(), b = *rc::gen::element(0.0, 1.0) == 0.0 ? value() : std::nextafter(a, 0.0);
  const long k = *rc::gen::inRange(-1200L, 1100L);
  oracle::Real diff = abs(oracle::Real(a) - oracle::Real(b));
  mpfr_mul_2si(diff.backend().data(), diff.backend().data(), -k, MPFR_RNDN);
  const double want = std::isinf(a) || std::isinf(b) ? INFINITY : a == b ? 0 : diff.convert_to<double>();
  RC_ASSERT(std::bit_cast<std::uint64_t>(detail::ulps_apart(a, b, k)) == std::bit_cast<std::uint64_t>(want));
}

// The spread's exponents come from the format's fast tier (double-double for
// f64, double for the others) or from MPFR, the same either way, on the rows
// the properties draw.
RC_GTEST_PROP(UlpScales, FastAndExactAgree, ()) {
  const Format f = *rc::gen::element(Format::f32, Format::f16, Format::bf16, Format::f64);
  const auto row = *gen::any_row(f, gen::RowOptions{256, 0.0});
  const double t = *gen::temperature();
  for (Op op : {Op::softmax, Op::log_softmax})
    for (bool at_one : {false, true}) {
      const auto fast = detail::ulp_scales(row, t, op, f, at_one);
      const detail::UlpScales exact = detail::exact_ulp_scales(row, t, op, f, at_one);
      RC_ASSERT(fast->status == exact.status);
      RC_ASSERT(fast->exponent == exact.exponent);
    }
}

// The naive kernel does not claim shift invariance, so check reports
// not_claimed; forced, the property finds the overflow that breaks it.
TEST(Naive, ViolatesShiftInvariance) {
  for (const char* name : {"naive_f32", "naive_f64"}) {
    const Kernel* naive = find_kernel(name);
    ASSERT_NE(naive, nullptr);
    CheckOptions o = ci_options();
    EXPECT_EQ(check_property(*naive, Op::softmax, "shift_invariance", o).verdict, Verdict::not_claimed);
    o.force = true;
    const PropertyVerdict v = check_property(*naive, Op::softmax, "shift_invariance", o);
    EXPECT_EQ(v.verdict, Verdict::failed) << name << "\n" << describe({&v, 1});
    EXPECT_FALSE(v.claimed);
    EXPECT_TRUE(all_held({&v, 1}));  // an unclaimed failure does not fail the gate
  }
}

// Shrinking reaches the simplest failing row: for a kernel without the max
// shift, one entry just past the exp overflow edge with the fewest significand
// bits, i.e. the power of two 2^ceil(log2(ln FLT_MAX)), at temperature 1.
TEST(Shrinking, NoMaxShiftShrinksToOnePowerOfTwo) {
  const Kernel* m = find_kernel("mutant_no_max_shift");
  ASSERT_NE(m, nullptr);
  const PropertyVerdict v = check_property(*m, Op::softmax, "no_nonfinite", ci_options());
  ASSERT_EQ(v.verdict, Verdict::failed) << describe({&v, 1});
  const double expected = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(std::log(max_finite(Format::f32))))));
  ASSERT_EQ(v.counterexample->row.size(), 1u) << describe({&v, 1});
  EXPECT_EQ(v.counterexample->row[0], expected) << describe({&v, 1});
  EXPECT_EQ(v.counterexample->temperature, 1.0);
}

TEST(Determinism, SameSeedSameVerdict) {
  const testing::Fake& f = fakes().front();
  const PropertyVerdict a = check_property(f.kernel, f.op, f.property, ci_options());
  const PropertyVerdict b = check_property(f.kernel, f.op, f.property, ci_options());
  EXPECT_EQ(a.repro, b.repro);
  EXPECT_EQ(a.tests_passed, b.tests_passed);
  EXPECT_EQ(a.rc_seed, b.rc_seed);
}

TEST(Verdicts, NotClaimedIsNeverReportedPassed) {
  const Kernel* naive = find_kernel("naive_f64");
  ASSERT_NE(naive, nullptr);
  CheckOptions o = ci_options();
  o.tests = 5;
  o.force = true;
  o.properties = {"range", "accuracy"};
  for (const PropertyVerdict& v : check_kernel(*naive, o)) EXPECT_NE(v.verdict, Verdict::passed) << v.property;
}

TEST(CheckCase, UnknownPropertyThrows) {
  EXPECT_THROW(check_case(reference_kernel(), Op::softmax, "nosuch", Case{{1.0}, 1.0}), std::invalid_argument);
}

TEST(CheckCase, OutOfScopeIsNotApplicable) {
  const Kernel& k = reference_kernel();
  EXPECT_EQ(check_case(k, Op::softmax, "masked_entries", Case{{1.0, 2.0}, 1.0}).status, CaseStatus::not_applicable);
  EXPECT_EQ(check_case(k, Op::softmax, "accuracy", Case{{NAN, 2.0}, 1.0}).status, CaseStatus::not_applicable);
  EXPECT_EQ(check_case(k, Op::softmax, "accuracy", Case{{1.0}, 0.0}).status, CaseStatus::not_applicable);
  EXPECT_EQ(check_case(k, Op::softmax, "no_nonfinite", Case{{1e300}, 1e-300}).status, CaseStatus::not_applicable);
}

}  // namespace
}  // namespace softcheck::props
