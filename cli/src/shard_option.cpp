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

}  // namespace softcheck::cli
