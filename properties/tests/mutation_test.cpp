// Mutation self-test: every deliberately broken kernel of mutant_kernels(),
// every test-only attention kernel of attention_kernels() (a flash kernel
// that forgets to rescale O, one that rounds P to bf16 before P.V) and every
// test-only kernel of quantised_kernels() (a truncating FP8 cast, judged in
// E4M3 ULPs; an MX kernel decoding its scale with the wrong bias, on MX
// rows) is caught by at least one property it claims, an attention one
// for the attention kernels (the correct kernels passing every claimed
// property is the suite test). Prints the kill table and, for each kill, the
// shrunk counterexample with its repro line.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <string_view>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "test_options.hpp"

namespace softcheck::props {
namespace {

// Checks mutant m: killed when a claimed property whose name starts with
// `killer_prefix` fails; no property errs or gives up. Its verdicts join `all`.
void expect_killed(const Kernel& m, std::string_view killer_prefix, std::vector<PropertyVerdict>& all) {
  const std::vector<PropertyVerdict> v = check_kernel(m, testing::ci_options());
  const bool killed = std::any_of(v.begin(), v.end(), [&](const PropertyVerdict& pv) {
    return pv.claimed && pv.verdict == Verdict::failed && pv.property.starts_with(killer_prefix);
  });
  EXPECT_TRUE(killed) << m.name << " survived every claimed property named " << killer_prefix << "*";
  for (const PropertyVerdict& pv : v)
    EXPECT_TRUE(pv.verdict != Verdict::error && pv.verdict != Verdict::gave_up)
        << m.name << " " << pv.property << ": " << pv.reason;
  all.insert(all.end(), v.begin(), v.end());
}

// The test-only kernels of a registry list.
std::vector<const Kernel*> test_only(const std::vector<Kernel>& kernels) {
  std::vector<const Kernel*> t;
  for (const Kernel& k : kernels)
    if (k.test_only) t.push_back(&k);
  return t;
}

TEST(MutationSelfTest, EveryMutantIsKilled) {
  ASSERT_FALSE(mutant_kernels().empty());
  std::vector<PropertyVerdict> all;
  for (const Kernel& m : mutant_kernels()) expect_killed(m, "", all);
  const std::vector<const Kernel*> attention_mutants = test_only(attention_kernels());
  EXPECT_GE(attention_mutants.size(), 2u);
  for (const Kernel* m : attention_mutants) expect_killed(*m, "attention_", all);
  const std::vector<const Kernel*> quantised_mutants = test_only(quantised_kernels());
  EXPECT_GE(quantised_mutants.size(), 2u);
  for (const Kernel* m : quantised_mutants) expect_killed(*m, "", all);
  std::cout << "\nKill table (mutant x property: KILLED / survived / n/c = not claimed)\n";
  print_kill_table(std::cout, all);
  std::vector<PropertyVerdict> kills;
  std::copy_if(all.begin(), all.end(), std::back_inserter(kills),
               [](const PropertyVerdict& v) { return v.verdict == Verdict::failed; });
  std::cout << "\nCounterexamples\n";
  print_verdicts(std::cout, kills);
}

}  // namespace
}  // namespace softcheck::props
