// A run split into shards and merged gives the unsharded run's report.json,
// byte for byte (docs/scaling.md), and a merge of anything else is refused.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/run_suite.hpp"

using namespace softcheck;

namespace {

// Kernels whose entries exercise every part of the state: contracts held and
// violated (a mutant), no contract with the floor and the reference rule,
// fully masked rows and their policy, an op with several outputs, gradients
// (the conditional mode) and attention.
std::vector<const Kernel*> mixed_kernels() {
  std::vector<const Kernel*> ks;
  for (const char* n : {"shifted_f32", "naive_f32", "online_f32", "bf16_shifted_f32acc", "shifted_f64",
                        "mutant_no_max_shift", "mutant_masked_nan"})
    if (const Kernel* k = find_kernel(n)) ks.push_back(k);
  for (const Kernel& k : gradient_kernels())
    if (k.available) ks.push_back(&k);
  for (const Kernel& k : attention_kernels())
    if (k.available && k.find(Op::attention) != nullptr) ks.push_back(&k);
  return ks;
}

RunOptions mixed_run() {
  RunOptions opt;
  opt.selection.families = {"normal_s1", "xnnpack_u90_100", "fully_masked", "mask_neg_inf", "attn_gaussian_d64",
                            "attn_causal_d64"};
  opt.selection.sizes = {1, 5, 33, 300};
  opt.selection.temperatures = {1.0, 0.7};
  opt.seed = 7;
  return opt;
}

// "" when equal, else where the texts part (gtest's diff of two reports of
// megabytes would take gigabytes).
std::string first_difference(const std::string& got, const std::string& want) {
  if (got == want) return "";
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const std::size_t from = i < 200 ? 0 : i - 200;
  return "differs at byte " + std::to_string(i) + ": got ..." + got.substr(from, 400) + "\n want ..." +
         want.substr(from, 400);
}

std::vector<Report> shards_of(const std::vector<const Kernel*>& ks, RunOptions opt, std::size_t n, unsigned jobs) {
  std::vector<Report> shards;
  opt.jobs = jobs;
  for (std::size_t i = 0; i < n; ++i) {
    opt.shard = {i, n, "test", {}};
    // Through report.json and back, as `report --merge` reads them.
    shards.push_back(from_json(to_json(run_suite(ks, opt))));
  }
  return shards;
}

TEST(ShardMerge, ShardsMergeIntoTheWholeRunByteForByte) {
  const std::vector<const Kernel*> ks = mixed_kernels();
  ASSERT_GE(ks.size(), 7u);
  const Report whole = run_suite(ks, mixed_run());
  EXPECT_FALSE(whole.all_held());  // the mutants: violated entries travel too
  EXPECT_FALSE(whole.shard.present());
  const std::string expected = to_json(whole);
  for (const std::size_t n : {2u, 3u, 5u}) {
    for (const unsigned jobs : {1u, 2u}) {
      if (n == 5 && jobs == 1) continue;  // time
      std::vector<Report> shards = shards_of(ks, mixed_run(), n, jobs);
      std::uint64_t rows = 0;
      for (const Report& s : shards) {
        EXPECT_TRUE(s.shard.present());
        EXPECT_NE(first_difference(to_json(s), expected), "");
        rows += s.oracle.rows;
      }
      EXPECT_EQ(rows, whole.oracle.rows) << n << " shards: every row judged once";
      std::reverse(shards.begin(), shards.end());  // any order
      EXPECT_EQ(first_difference(to_json(merge_shard_reports(shards)), expected), "") << n << " shards, " << jobs
                                                                                      << " jobs";
    }
  }
}

TEST(ShardMerge, MoreShardsThanCasesLeavesSomeEmptyAndStillMerges) {
  const std::vector<const Kernel*> ks = {find_kernel("shifted_f32")};
  RunOptions opt;
  opt.selection.families = {"normal_s1"};
  opt.selection.sizes = {4};
  opt.selection.temperatures = {1.0};
  const std::string expected = to_json(run_suite(ks, opt));
  const std::vector<Report> shards = shards_of(ks, opt, 4, 1);
  EXPECT_EQ(first_difference(to_json(merge_shard_reports(shards)), expected), "");
}

TEST(ShardMerge, RefusesWhatIsNotTheShardsOfOneRun) {
  const std::vector<const Kernel*> ks = {find_kernel("shifted_f32"), find_kernel("naive_f32")};
  RunOptions opt;
  opt.selection.families = {"normal_s1", "xnnpack_u90_100"};
  opt.selection.sizes = {3, 40};
  opt.selection.temperatures = {1.0};
  const std::vector<Report> three = shards_of(ks, opt, 3, 1);
  EXPECT_NO_THROW(merge_shard_reports(three));
  EXPECT_THROW(merge_shard_reports({}), std::invalid_argument);
  EXPECT_THROW(merge_shard_reports({three[0], three[1]}), std::invalid_argument);  // one missing
  EXPECT_THROW(merge_shard_reports({three[0], three[1], three[1]}), std::invalid_argument);  // one twice
  Report whole = run_suite(ks, opt);
  EXPECT_THROW(merge_shard_reports({whole}), std::invalid_argument);  // not a shard
  const std::vector<Report> two = shards_of(ks, opt, 2, 1);
  EXPECT_THROW(merge_shard_reports({three[0], three[1], two[1]}), std::invalid_argument);  // other split
  RunOptions other_seed = opt;
  other_seed.seed = 2;
  const std::vector<Report> other = shards_of(ks, other_seed, 3, 1);
  EXPECT_THROW(merge_shard_reports({three[0], three[1], other[2]}), std::invalid_argument);  // other run
  const std::vector<Report> other_kernels = shards_of({find_kernel("shifted_f32")}, opt, 3, 1);
  EXPECT_THROW(merge_shard_reports({three[0], three[1], other_kernels[2]}), std::invalid_argument);
  Report tampered = three[2];
  tampered.shard.state = "{}";
  EXPECT_THROW(merge_shard_reports({three[0], three[1], tampered}), std::invalid_argument);
  tampered.shard.state = three[1].shard.state;  // shard 1's cases claimed by shard 2 too
  EXPECT_THROW(merge_shard_reports({three[0], three[1], tampered}), std::invalid_argument);
}

TEST(ShardMerge, TheCasesSplitEvenlyByCost) {
  const std::vector<const Kernel*> ks = {find_kernel("shifted_f32")};
  RunOptions opt;
  opt.selection.families = {"normal_s1", "normal_s100"};
  opt.selection.sizes = {1, 10, 100, 1000, 10000};
  opt.selection.temperatures = {1.0, 0.7, 3.0};
  const std::vector<Report> shards = shards_of(ks, opt, 3, 2);
  // The elements each shard judged: within the largest case of each other.
  std::vector<double> elements;
  for (const Report& s : shards) elements.push_back(static_cast<double>(s.kernels.at(0).elements));
  const double largest = 10000.0 * static_cast<double>(build_suite(opt.selection).front().rows);
  EXPECT_LE(*std::max_element(elements.begin(), elements.end()) - *std::min_element(elements.begin(), elements.end()),
            largest);
  EXPECT_GT(*std::min_element(elements.begin(), elements.end()), 0);
}

}  // namespace
