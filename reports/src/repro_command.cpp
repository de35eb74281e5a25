#include <fmt/format.h>

#include "softcheck/report.hpp"

namespace softcheck {

std::string run_repro_command(std::string_view load_options, std::string_view kernel, std::string_view suite,
                              std::string_view family, std::int64_t cols, const std::vector<double>& temperatures,
                              std::uint64_t seed, const ReferenceRuleSettings& rule) {
  std::string s = "softcheck run ";
  if (!load_options.empty()) s += std::string(load_options) + " ";
  s += "--impl " + std::string(kernel) + " --suite " + std::string(suite);
  const ReferenceRuleSettings defaults;
  if (!rule.scope.empty() && rule.scope != defaults.scope) s += " --reference-rule " + rule.scope;
  if (rule.k != defaults.k) s += fmt::format(" --reference-k {}", rule.k);
  if (rule.slack != defaults.slack) s += fmt::format(" --reference-slack {}", rule.slack);
  s += " --family " + std::string(family) + " --size " + std::to_string(cols);
  for (double t : temperatures) s += fmt::format(" --temperature {}", t);
  return s + " --seed " + std::to_string(seed);
}

}  // namespace softcheck
