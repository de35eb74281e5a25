#include "supervisor.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "softcheck/child_process.hpp"
#include "softcheck/report.hpp"

namespace softcheck::cli {

namespace {

// ---------------------------------------------------------------- the child

// SIGINT / SIGTERM / SIGHUP in the command's process: remove the report
// temporaries in flight (the renames that publish a report set run with these
// signals blocked), then die of the signal so the parent sees how it ended.
void interrupted(int sig) {
  remove_temporaries_in_flight();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

int run_command(const std::function<int()>& command) {
  int status = exit_error;
  try {
    status = command();
  } catch (const std::exception& e) {
    std::cout.flush();
    fmt::print(stderr, "softcheck: error: {}\n", e.what());
    status = exit_error;
  }
  return finish_stdout(status);
}

void announce(int fd, int status) {
  const auto byte = static_cast<unsigned char>(status);
  while (::write(fd, &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(fd);
}

// --------------------------------------------------------------- the parent

volatile sig_atomic_t child_pid = 0;
volatile sig_atomic_t forwarded = 0;  // the last signal passed on to the child

void forward(int sig) {
  forwarded = sig;
  if (child_pid > 0) ::kill(static_cast<pid_t>(child_pid), sig);
}

std::string signal_text(int sig) {
  const std::string name = signal_name(sig);
  return name.starts_with("SIG") ? fmt::format("signal {} ({})", sig, name) : name;
}

// Waits for the child; a child that stopped itself (SIGSTOP from inside a
// kernel) would hang the run, so it is killed. A stop by the terminal
// (SIGTSTP, SIGTTIN, SIGTTOU: ^Z) stops us too and is left alone.
int wait_for_child(pid_t pid) {
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (WIFSTOPPED(status)) {
      if (WSTOPSIG(status) == SIGSTOP) {
        fmt::print(stderr, "softcheck: error: the run stopped itself with SIGSTOP (a kernel called raise(SIGSTOP)?); "
                           "killing it\n");
        ::kill(pid, SIGKILL);
      }
      continue;
    }
    return status;
  }
}

// The status announced through `fd` (read after the child ended), or -1.
int read_announcement(int fd) {
  unsigned char byte = 0;
  ssize_t n;
  while ((n = ::read(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  ::close(fd);
  return n == 1 ? byte : -1;
}

int verdict_of(int status, int announced) {
  if (status == -1) {
    fmt::print(stderr, "softcheck: error: lost track of the run's process: {}\n", std::strerror(errno));
    return exit_error;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == forwarded)
      fmt::print(stderr, "softcheck: interrupted by {}: no verdict (no report set is left half-written)\n", signal_text(sig));
    else
      fmt::print(stderr, "softcheck: error: the run was ended by {} before it gave a verdict\n", signal_text(sig));
    return exit_error;
  }
  const int code = WEXITSTATUS(status);
  if (announced < 0) {
    fmt::print(stderr,
               "softcheck: error: the process exited with status {} before softcheck gave a verdict "
               "(a plugin called exit() or _exit()?): no verdict\n",
               code);
    return exit_error;
  }
  if (code != announced) {
    fmt::print(stderr,
               "softcheck: error: the verdict was exit status {} but the process then exited with status {} "
               "(a plugin's exit handler or destructor?): no verdict\n",
               announced, code);
    return exit_error;
  }
  return code;
}

}  // namespace

int finish_stdout(int status) {
  std::cout.flush();
  const bool lost = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout.good();
  if (!lost) return status;
  fmt::print(stderr, "softcheck: error: writing to standard output failed ({}): the output is incomplete\n",
             std::strerror(errno ? errno : EIO));
  return exit_error;
}

int run_supervised(const std::function<int()>& command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    fmt::print(stderr, "softcheck: error: pipe: {}\n", std::strerror(errno));
    return exit_error;
  }
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  handle_interrupts(forward, SA_RESTART);  // before fork: a signal between fork and waitpid is passed on, not lost
  const pid_t pid = fork_child();
  if (pid < 0) {
    fmt::print(stderr, "softcheck: error: fork: {}\n", std::strerror(errno));
    return exit_error;
  }
  if (pid == 0) {
    ::close(fds[0]);
    handle_interrupts(interrupted);
    const int status = run_command(command);
    announce(fds[1], status);
    return status;  // main returns it: exit handlers (a plugin's too) run after the announcement
  }
  child_pid = pid;
  if (forwarded != 0) ::kill(pid, forwarded);  // arrived between fork and child_pid
  ::close(fds[1]);
  const int status = wait_for_child(pid);
  return verdict_of(status, read_announcement(fds[0]));
}

}  // namespace softcheck::cli
