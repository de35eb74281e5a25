#include "softcheck/child_process.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

namespace softcheck {

void die_with_parent(pid_t parent) {
  // PR_SET_PDEATHSIG fires when the thread that forked exits: every caller
  // forks from a thread that waits for the child, so that is the parent's end.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGINT, &dfl, nullptr);
  ::sigaction(SIGTERM, &dfl, nullptr);
  ::sigaction(SIGHUP, &dfl, nullptr);
}

}  // namespace softcheck
