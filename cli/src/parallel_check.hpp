// The property suite over several kernels on several cores, for `check` and
// for the property verdicts of `run` and `gate`. RapidCheck's implicit
// parameters are process-global (properties.hpp: "run checks one at a time,
// or in separate processes"), so the work is split over forked processes,
// not threads.
#pragma once

#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::cli {

// props::check_kernel of every available kernel, in kernel order (an
// unavailable one gets no verdicts), by up to `jobs` processes: worker w
// checks every jobs-th available kernel from w and sends its verdicts back
// over a pipe, so the result is the same for any `jobs` (1: in this process,
// no fork). Fork before starting threads of your own: a child has only the
// forking thread, and some runtimes (GNU OpenMP, which oneDNN uses) cannot
// run again in a child once they ran in the parent. Throws
// std::runtime_error when a worker fails or dies.
std::vector<std::vector<props::PropertyVerdict>> check_kernels(const std::vector<const Kernel*>& kernels,
                                                               const props::CheckOptions& opt, unsigned jobs);

}  // namespace softcheck::cli
