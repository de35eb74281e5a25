#include "shard_option.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace softcheck::cli {

void add_shard_option(CLI::App& sub, std::optional<std::string>& flag) {
  sub.add_option("--shard", flag,
                 fmt::format("Run shard I of N (0 <= I < N; docs/scaling.md). Without it: GTEST_SHARD_INDEX / "
                             "GTEST_TOTAL_SHARDS, else SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN / "
                             "SLURM_ARRAY_TASK_COUNT, else JOB_COMPLETION_INDEX / {}, else the whole run",
                             total_shards_variable))
      ->type_name("I/N");
}

Shard this_shard(const std::optional<std::string>& flag, bool quiet) {
  Shard s = resolve_shard(flag, [](const char* name) { return std::getenv(name); });
  touch_shard_status_file(s);
  if (!quiet && !s.whole()) fmt::print(stderr, "shard {}/{} (from {})\n", s.index, s.count, s.source);
  return s;
}

std::vector<const Kernel*> kernels_of_shard(const std::vector<const Kernel*>& kernels, const Shard& shard) {
  std::vector<double> costs;
  for (const Kernel* k : kernels) costs.push_back(static_cast<double>(k->ops.size()));
  const std::vector<std::size_t> shard_of = assign_to_shards(costs, shard.count);
  std::vector<const Kernel*> mine;
  for (std::size_t i = 0; i < kernels.size(); ++i)
    if (shard_of[i] == shard.index) mine.push_back(kernels[i]);
  return mine;
}

}  // namespace softcheck::cli
