// What every process softcheck forks does first, so that no child outlives
// the process that waits for it: killing softcheck (even with SIGKILL) must
// not leave --isolate calls or property-check workers running.
#pragma once

#include <sys/types.h>

namespace softcheck {

// Call in the child right after fork(), with the parent's pid read before
// fork(). Asks the kernel for SIGKILL when the parent dies
// (PR_SET_PDEATHSIG), and _exits at once if the parent died before that
// request took effect. SIGINT, SIGTERM and SIGHUP get their default actions:
// the handlers the parent installed clean up the parent's files, not the
// child's. Async-signal-safe (no allocation), as a child of a threaded process
// must be.
void die_with_parent(pid_t parent);

}  // namespace softcheck
