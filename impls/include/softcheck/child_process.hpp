// What the processes softcheck forks share: no child outlives the process
// that waits for it (killing softcheck, even with SIGKILL, must not leave
// --isolate calls or property-check workers running), one set of interrupt
// signals, and one way to name a signal in a message.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <string>

namespace softcheck {

// The signals that interrupt a run: forwarded by the supervising parent,
// handled by the command's process (cli/src/supervisor.hpp), reset to their
// default action in every child it forks.
inline constexpr int interrupt_signals[] = {SIGINT, SIGTERM, SIGHUP};

// Installs `handler` (or SIG_DFL) with `flags` for every interrupt signal.
// Async-signal-safe.
void handle_interrupts(void (*handler)(int), int flags = 0);

// fork(2), returning what it returns. The child first asks the kernel for
// SIGKILL when the parent dies (PR_SET_PDEATHSIG), _exits at once if the
// parent died before that request took effect, and gives the interrupt
// signals their default actions: the parent's handlers clean up the parent's
// files, not the child's. Nothing in the child allocates, as a child of a
// threaded process requires. PR_SET_PDEATHSIG fires when the forking thread
// exits: call it from a thread that waits for the child.
pid_t fork_child();

// "SIGSEGV" for 11 (sigabbrev_np), "signal N" for a number without a name.
std::string signal_name(int sig);

}  // namespace softcheck
