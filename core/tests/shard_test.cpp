#include "softcheck/shard.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>

namespace softcheck {
namespace {

// An environment of its own, not the process's.
struct Env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> get() const {
    return [this](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(Shard, ParsesIndexOverCount) {
  const Shard s = parse_shard("2/5");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(parse_shard("0/1").whole(), true);
}

TEST(Shard, RefusesWhatIsNotAShard) {
  for (const char* bad : {"", "1", "/3", "1/", "3/3", "4/3", "0/0", "-1/3", "1/-3", "+1/3", "1/3x", "a/b", "1.0/3",
                          "1//3", "99999999999999999999/3"})
    EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
}

TEST(Shard, WithoutFlagOrVariablesItIsTheWholeRun) {
  const Env env;
  const Shard s = resolve_shard(std::nullopt, env.get());
  EXPECT_TRUE(s.whole());
  EXPECT_EQ(s.index, 0u);
  EXPECT_TRUE(s.source.empty());
}

TEST(Shard, TheFlagWinsOverTheEnvironment) {
  Env env;
  env.vars = {{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "2"}};
  const Shard s = resolve_shard(std::string("2/3"), env.get());
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.source, "--shard");
}

TEST(Shard, ReadsEachProtocol) {
  Env gtest;
  gtest.vars = {{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "4"}, {"GTEST_SHARD_STATUS_FILE", "/tmp/x"}};
  Shard s = resolve_shard(std::nullopt, gtest.get());
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.status_file, "/tmp/x");
  EXPECT_EQ(s.source, "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");

  Env slurm;  // an array 1-1024: task ids from SLURM_ARRAY_TASK_MIN
  slurm.vars = {{"SLURM_ARRAY_TASK_ID", "17"}, {"SLURM_ARRAY_TASK_COUNT", "1024"}, {"SLURM_ARRAY_TASK_MIN", "1"}};
  s = resolve_shard(std::nullopt, slurm.get());
  EXPECT_EQ(s.index, 16u);
  EXPECT_EQ(s.count, 1024u);
  EXPECT_TRUE(s.status_file.empty());
  slurm.vars.erase("SLURM_ARRAY_TASK_MIN");
  EXPECT_EQ(resolve_shard(std::nullopt, slurm.get()).index, 17u);

  Env k8s;
  k8s.vars = {{"JOB_COMPLETION_INDEX", "0"}, {"SOFTCHECK_TOTAL_SHARDS", "3"}};
  s = resolve_shard(std::nullopt, k8s.get());
  EXPECT_EQ(s.index, 0u);
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.source, "JOB_COMPLETION_INDEX/SOFTCHECK_TOTAL_SHARDS");
}

TEST(Shard, GoogleTestComesBeforeSlurmBeforeKubernetes) {
  Env env;
  env.vars = {{"JOB_COMPLETION_INDEX", "0"}, {"SOFTCHECK_TOTAL_SHARDS", "3"}, {"SLURM_ARRAY_TASK_ID", "5"},
              {"SLURM_ARRAY_TASK_COUNT", "8"}};
  EXPECT_EQ(resolve_shard(std::nullopt, env.get()).count, 8u);
  env.vars["GTEST_SHARD_INDEX"] = "1";
  env.vars["GTEST_TOTAL_SHARDS"] = "2";
  EXPECT_EQ(resolve_shard(std::nullopt, env.get()).count, 2u);
}

TEST(Shard, AHalfSetOrWrongProtocolIsAnError) {
  const std::vector<std::map<std::string, std::string>> bad = {
      {{"GTEST_SHARD_INDEX", "1"}},
      {{"GTEST_TOTAL_SHARDS", "2"}},
      {{"GTEST_SHARD_INDEX", "2"}, {"GTEST_TOTAL_SHARDS", "2"}},
      {{"GTEST_SHARD_INDEX", "x"}, {"GTEST_TOTAL_SHARDS", "2"}},
      {{"GTEST_SHARD_INDEX", ""}, {"GTEST_TOTAL_SHARDS", "2"}},
      {{"GTEST_SHARD_INDEX", "0"}, {"GTEST_TOTAL_SHARDS", "0"}},
      {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "5"}},
      {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
      {{"JOB_COMPLETION_INDEX", "0"}},
      {{"SOFTCHECK_TOTAL_SHARDS", "3"}},
  };
  for (const auto& vars : bad) {
    Env env;
    env.vars = vars;
    EXPECT_THROW(resolve_shard(std::nullopt, env.get()), std::invalid_argument) << vars.begin()->first;
  }
}

TEST(Shard, TouchesGoogleTestsStatusFile) {
  const std::filesystem::path f = std::filesystem::temp_directory_path() / ("shard_status_" + std::to_string(::getpid()));
  std::filesystem::remove(f);
  Shard s;
  s.status_file = f.string();
  touch_shard_status_file(s);
  EXPECT_TRUE(std::filesystem::exists(f));
  std::filesystem::remove(f);
  s.status_file = "/nonexistent-dir/status";
  EXPECT_THROW(touch_shard_status_file(s), std::runtime_error);
}

TEST(Shard, EveryUnitGoesToExactlyOneShardAndLoadsStayWithinTheLargestUnit) {
  std::vector<double> costs;
  for (int i = 0; i < 97; ++i) costs.push_back(1 + (i * 37) % 23);  // uneven, deterministic
  for (std::size_t n : {1u, 2u, 3u, 7u, 200u}) {
    const std::vector<std::size_t> of = assign_to_shards(costs, n);
    ASSERT_EQ(of.size(), costs.size());
    std::vector<double> load(n, 0);
    for (std::size_t i = 0; i < costs.size(); ++i) {
      ASSERT_LT(of[i], n);
      load[of[i]] += costs[i];
    }
    const double largest = *std::max_element(costs.begin(), costs.end());
    EXPECT_LE(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()), largest)
        << n << " shards";
    EXPECT_EQ(assign_to_shards(costs, n), of);  // the same split every time
  }
  EXPECT_THROW(assign_to_shards(costs, 0), std::invalid_argument);
}

}  // namespace
}  // namespace softcheck
