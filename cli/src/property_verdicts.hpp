// Property verdicts (properties/) inside a run's report: shared by `run`,
// which adds them after the accuracy suite, and `gate`, which reruns a
// baseline with the same budget so its property verdicts are compared too.
#pragma once

#include <cstdint>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/report.hpp"

namespace softcheck::cli {

// Runs every property each available kernel claims, `tests` cases each, and
// appends the verdicts to the kernel's summaries in `report`.
void add_property_verdicts(Report& report, const std::vector<const Kernel*>& kernels, int tests,
                           std::uint64_t seed);

// The per-property budget a report was made with: the largest case count of
// its property verdicts (a passed property ran all of them); 0 when the
// report has none (properties were skipped).
int property_tests_of(const Report& report);

}  // namespace softcheck::cli
