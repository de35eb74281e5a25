// A kernel that reports its own failure: Kernel::run throws KernelFailure when
// the kernel could not produce an output (a plugin's run function returned
// non-zero, or crashed in an isolated child process). Drivers record it as a
// failure of that kernel and go on with the others; any other exception from
// run is a harness error.
#pragma once

#include <stdexcept>

namespace softcheck {

struct KernelFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace softcheck
