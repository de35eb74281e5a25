#include "softcheck/shard.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <numeric>
#include <stdexcept>

namespace softcheck {

namespace {

// A non-negative decimal integer, all of `text`; nullopt otherwise.
std::optional<std::size_t> parse_count(std::string_view text) {
  std::size_t v = 0;
  if (text.empty() || text.front() == '+' || text.front() == '-') return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::size_t parse_variable(const char* name, const char* value) {
  const auto v = parse_count(value);
  if (!v) throw std::invalid_argument(std::string(name) + "='" + value + "' is not a non-negative integer");
  return *v;
}

Shard checked(Shard s, std::string_view what) {
  if (s.count == 0) throw std::invalid_argument(std::string(what) + ": the shard count is 0");
  if (s.index >= s.count)
    throw std::invalid_argument(std::string(what) + ": shard index " + std::to_string(s.index) +
                                " is not below the shard count " + std::to_string(s.count));
  return s;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const std::size_t slash = text.find('/');
  const auto index = slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(0, slash));
  const auto count = slash == std::string_view::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!index || !count)
    throw std::invalid_argument("--shard '" + std::string(text) + "': expected I/N, e.g. 0/4 (0 <= I < N)");
  return checked({*index, *count, "--shard", {}}, "--shard " + std::string(text));
}

Shard resolve_shard(const std::optional<std::string>& flag,
                    const std::function<const char*(const char*)>& getenv) {
  if (flag) return parse_shard(*flag);
  // (index variable, count variable, the offset variable of the index: Slurm's
  // array may start at any task id).
  struct Protocol {
    const char *index, *count, *index_min;
  };
  static constexpr Protocol protocols[] = {
      {"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", nullptr},
      {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"},
      {"JOB_COMPLETION_INDEX", "SOFTCHECK_TOTAL_SHARDS", nullptr},
  };
  for (const Protocol& p : protocols) {
    const char* index = getenv(p.index);
    const char* count = getenv(p.count);
    if (index == nullptr && count == nullptr) continue;
    const std::string what = std::string(p.index) + "/" + p.count;
    if (index == nullptr || count == nullptr)
      throw std::invalid_argument(what + ": " + (index == nullptr ? p.index : p.count) + " is not set but " +
                                  (index == nullptr ? p.count : p.index) + " is");
    Shard s;
    s.index = parse_variable(p.index, index);
    s.count = parse_variable(p.count, count);
    if (p.index_min != nullptr) {
      if (const char* min = getenv(p.index_min)) {
        const std::size_t m = parse_variable(p.index_min, min);
        if (m > s.index)
          throw std::invalid_argument(std::string(p.index) + "=" + index + " is below " + p.index_min + "=" + min);
        s.index -= m;
      }
    }
    s.source = what;
    if (p.index == std::string_view("GTEST_SHARD_INDEX"))
      if (const char* f = getenv("GTEST_SHARD_STATUS_FILE")) s.status_file = f;
    return checked(s, what);
  }
  return {};
}

void touch_shard_status_file(const Shard& shard) {
  if (shard.status_file.empty()) return;
  std::ofstream f(shard.status_file, std::ios::app);
  if (!f) throw std::runtime_error("GTEST_SHARD_STATUS_FILE: cannot create '" + shard.status_file + "'");
}

std::vector<std::size_t> assign_to_shards(const std::vector<double>& costs, std::size_t count) {
  if (count == 0) throw std::invalid_argument("assign_to_shards: no shards");
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(count, 0);
  std::vector<std::size_t> shard_of(costs.size(), 0);
  for (const std::size_t unit : order) {
    const std::size_t s = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard_of[unit] = s;
    load[s] += costs[unit];
  }
  return shard_of;
}

}  // namespace softcheck
