#include "isolated_call.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <new>
#include <system_error>

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

// Waits for the child; retries when a signal interrupts the wait.
int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid for --isolate");
  return status;
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal " + std::to_string(sig);
  }
}

int call_isolated(const std::string& who, const RawCall& call, const void* x, void* y, std::size_t y_bytes) {
  SharedMemory shared(report_bytes + y_bytes);
  new (shared.report()) ChildReport{};
  std::memcpy(shared.data(), y, y_bytes);
  const void* x_in = x == y ? shared.data() : x;
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork for --isolate");
  if (pid == 0) {  // child: run, report, leave without running the parent's exit handlers
    shared.report()->rc = call(x_in, shared.data());
    shared.report()->returned = 1;
    ::_exit(0);
  }
  const int status = wait_for(pid);
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
