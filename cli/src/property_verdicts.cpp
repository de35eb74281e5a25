#include "property_verdicts.hpp"

#include <algorithm>
#include <string>

#include "parallel_check.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::cli {

KernelVerdicts property_verdicts(const std::vector<const Kernel*>& kernels, int tests, std::uint64_t seed,
                                 unsigned jobs) {
  props::CheckOptions opt;
  opt.tests = tests;
  opt.seed = seed;
  return check_kernels(kernels, opt, jobs);
}

void attach_property_verdicts(Report& report, const KernelVerdicts& verdicts) {
  for (const std::vector<props::PropertyVerdict>& vs : verdicts)
    for (const props::PropertyVerdict& v : vs)
      for (KernelSummary& s : report.kernels)
        // An op with several outputs has one entry per output; a property
        // is about the whole call and goes with its first output's entry.
        if (s.kernel == v.kernel && s.op == name(v.op) &&
            (s.output.empty() || s.output == spec(v.op).out[0].name)) {
          const bool failed = v.verdict == props::Verdict::failed || v.verdict == props::Verdict::gave_up ||
                              v.verdict == props::Verdict::error;
          s.properties.push_back({v.property,
                                  failed ? std::string("failed") : std::string(props::name(v.verdict)),
                                  failed ? v.failure.message + (v.reason.empty() ? "" : " " + v.reason) : v.reason,
                                  v.repro, static_cast<std::uint64_t>(v.tests_passed)});
        }
}

int property_tests_of(const Report& report) {
  std::uint64_t tests = 0;
  for (const KernelSummary& s : report.kernels)
    for (const PropertySummary& p : s.properties) tests = std::max(tests, p.tests);
  return static_cast<int>(std::min<std::uint64_t>(tests, 100000));
}

}  // namespace softcheck::cli
