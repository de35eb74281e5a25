// The property suite as ctest tests: one test per builtin, sparse, gradient
// or attention kernel x op x property of its family that the kernel claims
// (props.Suite/Check.HoldsWhenClaimed/<kernel>__<op>__<property>), and one per
// kernel x op for the properties it does not claim
// (props.Suite/Unclaimed.NotClaimed/<kernel>__<op>): skipped with each
// property's reason, never passed. 953 of the 2,296 triples are not claimed;
// a process each cost `ctest -j2 -R '^props\.'` 11 s (docs/properties.md).
// Budget: RC_PARAMS or the CI default (test_options.hpp).
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "test_options.hpp"

namespace softcheck::props {
namespace {

struct Param {
  std::string kernel;
  Op op;
  std::string property;
};

// The sparse ops' properties (docs/sparse.md), claimed by the sparse kernels only.
bool sparse_property(std::string_view p) {
  return p.starts_with("sparse_") || p == "tau_consistency" || p == "entmax_identities";
}

// The gradient ops' properties (docs/properties.md, "Gradient ops"), claimed
// by the gradient kernels only.
bool gradient_property(std::string_view p) {
  return p.starts_with("gradient_") || p.starts_with("ce_") || p == "upstream_shift";
}

// The attention op's properties (docs/properties.md, "Attention"), claimed
// by the attention kernels only.
bool attention_property(std::string_view p) { return p.starts_with("attention_"); }

// The properties of a kernel x op that it does not claim.
struct UnclaimedParam {
  std::string kernel;
  Op op;
  std::vector<std::string> properties;
};

// Every kernel x op x property of its family, split by claim().
struct Params {
  std::vector<Param> claimed;
  std::vector<UnclaimedParam> unclaimed;
};

Params all_params() {
  Params out;
  const auto add = [&](const Kernel& k, bool (*of_family)(std::string_view)) {
    for (const OpDecl& d : k.ops) {
      UnclaimedParam none{k.name, d.op, {}};
      for (const PropertyInfo& p : property_list()) {
        if (!of_family(p.name)) continue;
        if (claim(k, d.op, p.name).claimed) out.claimed.push_back({k.name, d.op, std::string(p.name)});
        else none.properties.emplace_back(p.name);
      }
      if (!none.properties.empty()) out.unclaimed.push_back(std::move(none));
    }
  };
  const auto row_property = [](std::string_view p) {
    return !sparse_property(p) && !gradient_property(p) && !attention_property(p);
  };
  for (const Kernel& k : builtin_kernels()) add(k, row_property);
  for (const Kernel& k : gradient_kernels())
    if (!k.test_only) add(k, gradient_property);
  // The real attention kernels; the test-only broken ones are the mutation self-test's.
  for (const Kernel& k : attention_kernels())
    if (!k.test_only) add(k, attention_property);
  for (const Kernel& k : sparse_kernels()) add(k, sparse_property);
  // Quantised outputs (P cast to E4M3), judged in E4M3 ULPs by the
  // properties stated in the output format; the truncating cast is the
  // mutation self-test's.
  for (const Kernel& k : quantised_kernels())
    if (!k.test_only) add(k, row_property);
  return out;
}

const Params& params() {
  static const Params p = all_params();
  return p;
}

const Kernel& kernel_named(const std::string& name) {
  const Kernel* k = find_kernel(name);
  if (k == nullptr) k = find_sparse_kernel(name);
  if (k == nullptr) throw std::logic_error("no kernel " + name);
  return *k;
}

// Readable parameters in test listings (instead of gtest's byte dump).
void PrintTo(const Param& p, std::ostream* os) {
  *os << p.kernel << " " << name(p.op) << " " << p.property;
}
void PrintTo(const UnclaimedParam& p, std::ostream* os) {
  *os << p.kernel << " " << name(p.op) << " (" << p.properties.size() << " properties not claimed)";
}

class Check : public ::testing::TestWithParam<Param> {};

TEST_P(Check, HoldsWhenClaimed) {
  const Param& p = GetParam();
  const PropertyVerdict v = check_property(kernel_named(p.kernel), p.op, p.property, testing::ci_options());
  if (v.verdict == Verdict::not_claimed) GTEST_SKIP() << "not claimed: " << v.reason;
  if (v.verdict == Verdict::skipped) GTEST_SKIP() << v.reason;
  std::ostringstream os;
  print_verdicts(os, {&v, 1});
  EXPECT_EQ(v.verdict, Verdict::passed) << os.str();
  std::cout << os.str();
}

INSTANTIATE_TEST_SUITE_P(Suite, Check, ::testing::ValuesIn(params().claimed),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return i.param.kernel + "__" + std::string(name(i.param.op)) + "__" + i.param.property;
                         });

class Unclaimed : public ::testing::TestWithParam<UnclaimedParam> {};

// check_property agrees with the claim these tests were listed by (not
// claimed, the same reason), and the test is skipped with every reason.
TEST_P(Unclaimed, NotClaimed) {
  const UnclaimedParam& p = GetParam();
  const Kernel& k = kernel_named(p.kernel);
  std::ostringstream reasons;
  for (const std::string& property : p.properties) {
    const PropertyVerdict v = check_property(k, p.op, property, testing::ci_options());
    EXPECT_EQ(v.verdict, Verdict::not_claimed) << property;
    EXPECT_EQ(v.reason, claim(k, p.op, property).reason) << property;
    reasons << "\n  " << property << ": " << v.reason;
  }
  GTEST_SKIP() << "not claimed:" << reasons.str();
}

INSTANTIATE_TEST_SUITE_P(Suite, Unclaimed, ::testing::ValuesIn(params().unclaimed),
                         [](const ::testing::TestParamInfo<UnclaimedParam>& i) {
                           return i.param.kernel + "__" + std::string(name(i.param.op));
                         });

}  // namespace
}  // namespace softcheck::props
