// One shard of a run split over machines (docs/scaling.md): shard `index`
// of `count`, 0-based. Any scheduler can drive it, from a flag or from the
// variables its protocol already sets, so softcheck brings no scheduler of
// its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace softcheck {

struct Shard {
  std::size_t index = 0, count = 1;
  // Where it came from, for messages and the report: "--shard",
  // "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS", ... ; empty for the whole run.
  std::string source;
  // GoogleTest's protocol: the file a sharding-aware program touches (empty: none).
  std::string status_file;
  bool whole() const { return count == 1; }
};

// "i/N" with 0 <= i < N, N >= 1 (decimal digits only). Throws
// std::invalid_argument naming the text otherwise.
Shard parse_shard(std::string_view text);

// The variable that gives N beside Kubernetes' JOB_COMPLETION_INDEX (an
// Indexed Job's pods get their index, not the completion count).
inline constexpr std::string_view total_shards_variable = "SOFTCHECK_TOTAL_SHARDS";

// The shard of this process: `flag` ("i/N") when given, else the first of
// these protocols whose variables are set (`getenv` returns nullptr for an
// unset one):
//   GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS (and GTEST_SHARD_STATUS_FILE)
//   SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (0 when unset), SLURM_ARRAY_TASK_COUNT
//   JOB_COMPLETION_INDEX, SOFTCHECK_TOTAL_SHARDS
// else the whole run. Throws std::invalid_argument when a protocol is half
// set (an index without its count or the reverse), a value is not a
// non-negative integer, or the index is not below the count: a shard that
// silently ran everything, or nothing, would be a wrong verdict.
Shard resolve_shard(const std::optional<std::string>& flag,
                    const std::function<const char*(const char*)>& getenv);

// GoogleTest's protocol: a program that shards touches the status file its
// runner names, so the runner knows the shards did not each run everything.
// Throws std::runtime_error when the file cannot be created.
void touch_shard_status_file(const Shard& shard);

// Which shard runs each of `costs.size()` work units: longest first onto the
// least loaded shard (ties: the lower unit index first, the lower shard), so
// every shard computes the same split from the same units, and loads differ
// by at most the largest unit.
std::vector<std::size_t> assign_to_shards(const std::vector<double>& costs, std::size_t count);

}  // namespace softcheck
