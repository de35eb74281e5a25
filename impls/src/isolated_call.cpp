#include "isolated_call.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <new>
#include <optional>
#include <system_error>
#include <thread>

#include "softcheck/child_process.hpp"
#include "softcheck/kernel_failure.hpp"

namespace softcheck::plugin_detail {

namespace {

// What the child leaves for the parent, at the start of the shared mapping.
struct ChildReport {
  int rc = 0;
  int returned = 0;  // 1 once run returned (the child may also exit from inside run)
};

constexpr std::size_t report_bytes = 64;  // keeps y aligned for any element type
static_assert(sizeof(ChildReport) <= report_bytes);

// An anonymous MAP_SHARED mapping: survives fork, visible to both processes.
class SharedMemory {
 public:
  explicit SharedMemory(std::size_t bytes) : bytes_(bytes) {
    base_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap for --isolate");
  }
  ~SharedMemory() { ::munmap(base_, bytes_); }
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ChildReport* report() const { return static_cast<ChildReport*>(base_); }
  unsigned char* data() const { return static_cast<unsigned char*>(base_) + report_bytes; }

 private:
  std::size_t bytes_;
  void* base_;
};

// Waits for the child, at most `timeout_s` seconds (0: no limit); nullopt
// when it is still running then. A child that stops itself (SIGSTOP) is still
// running: the time limit ends it.
std::optional<int> wait_for(pid_t pid, double timeout_s) {
  using clock = std::chrono::steady_clock;
  const clock::time_point deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  // pidfd (Linux 5.3) makes the wait a poll(2) with a timeout; without it,
  // waitpid(WNOHANG) in a loop whose pause grows from 50 us to 10 ms.
  struct PidFd {
    int fd;
    ~PidFd() {
      if (fd >= 0) ::close(fd);
    }
  } const pidfd{timeout_s > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1};
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid for --isolate");
    if (r < 0 || timeout_s <= 0) continue;
    const clock::duration left = deadline - clock::now();
    if (left <= clock::duration::zero()) return std::nullopt;
    if (pidfd.fd >= 0) {
      pollfd p{pidfd.fd, POLLIN, 0};
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
      (void)::poll(&p, 1, static_cast<int>(std::min<long long>(ms, 1000)));
    } else {
      std::this_thread::sleep_for(std::min<clock::duration>(pause, left));
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }
}

}  // namespace

std::string seconds_text(double s) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, s);  // not "%g": the C locale may be a plugin's
  return std::string(buf, r.ptr);
}

int call_isolated(const std::string& who, const RawCall& call, const void* x, void* y, std::size_t y_bytes,
                  double timeout_s) {
  SharedMemory shared(report_bytes + y_bytes);
  new (shared.report()) ChildReport{};
  std::memcpy(shared.data(), y, y_bytes);
  const void* x_in = x == y ? shared.data() : x;
  const pid_t pid = fork_child();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork for --isolate");
  if (pid == 0) {  // child: run, report, leave without running the parent's exit handlers
    shared.report()->rc = call(x_in, shared.data());
    shared.report()->returned = 1;
    ::_exit(0);
  }
  const std::optional<int> waited = wait_for(pid, timeout_s);
  if (!waited) {
    ::kill(pid, SIGKILL);
    (void)wait_for(pid, 0);
    throw KernelFailure(who + ": timed out after " + seconds_text(timeout_s) + " s (--call-timeout)");
  }
  const int status = *waited;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    throw KernelFailure(who + ": crashed with signal " + std::to_string(sig) + " (" + signal_name(sig) + ")");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !shared.report()->returned)
    throw KernelFailure(who + ": the isolated process exited with status " +
                        std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " before run returned");
  std::memcpy(y, shared.data(), y_bytes);
  return shared.report()->rc;
}

}  // namespace softcheck::plugin_detail
