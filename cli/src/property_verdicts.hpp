// Property verdicts (properties/) inside a run's report: shared by `run` and
// by `gate`, which reruns a baseline with the same budget so its property
// verdicts are compared too. Both check them before the accuracy suite (the
// checks fork; the suite starts threads) and attach them to its report.
#pragma once

#include <cstdint>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "softcheck/report.hpp"

namespace softcheck::cli {

// Every property each available kernel claims, `tests` cases each, checked
// by `jobs` processes (parallel_check.hpp: call it before starting threads);
// one list per kernel of `kernels`, empty for an unavailable one.
using KernelVerdicts = std::vector<std::vector<props::PropertyVerdict>>;
KernelVerdicts property_verdicts(const std::vector<const Kernel*>& kernels, int tests, std::uint64_t seed,
                                 unsigned jobs);

// Appends each kernel's verdicts to its summaries (by kernel and op) in `report`.
void attach_property_verdicts(Report& report, const KernelVerdicts& verdicts);

// The per-property budget a report was made with: the largest case count of
// its property verdicts (a passed property ran all of them); 0 when the
// report has none (properties were skipped).
int property_tests_of(const Report& report);

}  // namespace softcheck::cli
