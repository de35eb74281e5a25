// Mutation self-test: every deliberately broken kernel of mutant_kernels() and
// every test-only attention kernel of attention_kernels() (a flash kernel
// that forgets to rescale O, one that rounds P to bf16 before P.V) is caught
// by at least one property it claims, an attention one for the attention
// kernels (the correct kernels passing every claimed property is the suite
// test). Prints the kill table and, for each kill, the shrunk counterexample
// with its repro line.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "test_options.hpp"

namespace softcheck::props {
namespace {

TEST(MutationSelfTest, EveryMutantIsKilled) {
  ASSERT_FALSE(mutant_kernels().empty());
  std::vector<PropertyVerdict> all;
  for (const Kernel& m : mutant_kernels()) {
    const std::vector<PropertyVerdict> v = check_kernel(m, testing::ci_options());
    const bool killed = std::any_of(v.begin(), v.end(), [](const PropertyVerdict& pv) {
      return pv.claimed && pv.verdict == Verdict::failed;
    });
    EXPECT_TRUE(killed) << m.name << " survived every claimed property";
    for (const PropertyVerdict& pv : v)
      EXPECT_TRUE(pv.verdict != Verdict::error && pv.verdict != Verdict::gave_up)
          << m.name << " " << pv.property << ": " << pv.reason;
    all.insert(all.end(), v.begin(), v.end());
  }
  std::size_t attention_mutants = 0;
  for (const Kernel& m : attention_kernels()) {
    if (!m.test_only) continue;
    ++attention_mutants;
    const std::vector<PropertyVerdict> v = check_kernel(m, testing::ci_options());
    const bool killed = std::any_of(v.begin(), v.end(), [](const PropertyVerdict& pv) {
      return pv.claimed && pv.verdict == Verdict::failed && pv.property.starts_with("attention_");
    });
    EXPECT_TRUE(killed) << m.name << " survived every claimed attention property";
    for (const PropertyVerdict& pv : v)
      EXPECT_TRUE(pv.verdict != Verdict::error && pv.verdict != Verdict::gave_up)
          << m.name << " " << pv.property << ": " << pv.reason;
    all.insert(all.end(), v.begin(), v.end());
  }
  EXPECT_GE(attention_mutants, 2u);
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
