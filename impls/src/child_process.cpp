#include "softcheck/child_process.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>

namespace softcheck {

void handle_interrupts(void (*handler)(int), int flags) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  for (int sig : interrupt_signals) ::sigaction(sig, &sa, nullptr);
}

pid_t fork_child() {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    handle_interrupts(SIG_DFL);
  }
  return pid;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace softcheck
