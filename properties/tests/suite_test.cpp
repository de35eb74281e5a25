// The property suite as ctest tests: one test per builtin, sparse, gradient
// or attention kernel x op x property of its family
// (props.Suite/Check.<kernel>__<op>__<property>). A property the kernel
// does not claim is skipped with its reason, never passed. Budget: RC_PARAMS or
// the CI default (test_options.hpp).
#include <gtest/gtest.h>

#include <sstream>

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

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const Kernel& k : builtin_kernels())
    for (const OpDecl& d : k.ops)
      for (const PropertyInfo& p : property_list())
        if (!sparse_property(p.name) && !gradient_property(p.name) && !attention_property(p.name))
          out.push_back({k.name, d.op, std::string(p.name)});
  for (const Kernel& k : gradient_kernels())
    if (!k.test_only)
      for (const OpDecl& d : k.ops)
        for (const PropertyInfo& p : property_list())
          if (gradient_property(p.name)) out.push_back({k.name, d.op, std::string(p.name)});
  // The real attention kernels; the test-only broken ones are the mutation self-test's.
  for (const Kernel& k : attention_kernels())
    if (!k.test_only)
      for (const OpDecl& d : k.ops)
        for (const PropertyInfo& p : property_list())
          if (attention_property(p.name)) out.push_back({k.name, d.op, std::string(p.name)});
  for (const Kernel& k : sparse_kernels())
    for (const OpDecl& d : k.ops)
      for (const PropertyInfo& p : property_list())
        if (sparse_property(p.name)) out.push_back({k.name, d.op, std::string(p.name)});
  return out;
}

// Readable parameter in test listings (instead of gtest's byte dump).
void PrintTo(const Param& p, std::ostream* os) {
  *os << p.kernel << " " << name(p.op) << " " << p.property;
}

class Check : public ::testing::TestWithParam<Param> {};

TEST_P(Check, HoldsWhenClaimed) {
  const Param& p = GetParam();
  const Kernel* k = find_kernel(p.kernel);
  if (k == nullptr) k = find_sparse_kernel(p.kernel);
  ASSERT_NE(k, nullptr);
  const PropertyVerdict v = check_property(*k, p.op, p.property, testing::ci_options());
  if (v.verdict == Verdict::not_claimed) GTEST_SKIP() << "not claimed: " << v.reason;
  if (v.verdict == Verdict::skipped) GTEST_SKIP() << v.reason;
  std::ostringstream os;
  print_verdicts(os, {&v, 1});
  EXPECT_EQ(v.verdict, Verdict::passed) << os.str();
  std::cout << os.str();
}

INSTANTIATE_TEST_SUITE_P(Suite, Check, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return i.param.kernel + "__" + std::string(name(i.param.op)) + "__" + i.param.property;
                         });

}  // namespace
}  // namespace softcheck::props
