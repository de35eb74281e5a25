#include "process_state.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clocale>
#include <cstring>

#include "softcheck/child_process.hpp"
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace softcheck::plugin_detail {

namespace {

unsigned read_mxcsr() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#else
  return 0;
#endif
}

const char* rounding_name(int r) {
  switch (r) {
    case FE_TONEAREST: return "to nearest";
    case FE_UPWARD: return "upward";
    case FE_DOWNWARD: return "downward";
    case FE_TOWARDZERO: return "toward zero";
    default: return "unknown";
  }
}

std::string current_locale() {
  const char* l = std::setlocale(LC_ALL, nullptr);
  return l ? l : "";
}

bool same_action(const struct sigaction& a, const struct sigaction& b) {
  return a.sa_handler == b.sa_handler && a.sa_flags == b.sa_flags;
}

void add(std::string& list, const std::string& item) { list += (list.empty() ? "" : "; ") + item; }

}  // namespace

ProcessState::ProcessState() {
  std::fegetenv(&fenv_);
  rounding_ = std::fegetround();
  mxcsr_ = read_mxcsr();
  locale_ = current_locale();
  cwd_fd_ = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  if (cwd_fd_ >= 0 && ::fstat(cwd_fd_, &st) == 0) {
    cwd_dev_ = st.st_dev;
    cwd_ino_ = st.st_ino;
  } else if (cwd_fd_ >= 0) {
    ::close(cwd_fd_);  // not comparable: the working directory goes unwatched
    cwd_fd_ = -1;
  }
  for (std::size_t i = 0; i < std::size(watched_signals); ++i) ::sigaction(watched_signals[i], nullptr, &handlers_[i]);
}

ProcessState::~ProcessState() {
  if (cwd_fd_ >= 0) ::close(cwd_fd_);
}

std::string ProcessState::restore() {
  std::string changed;
  // Exception flags a kernel raises (inexact, overflow on a huge entry) are
  // its business: put back as they were, not reported. Rounding, traps and
  // FTZ/DAZ change the results of every computation after the call.
  const int rounding = std::fegetround();
  const unsigned mxcsr = read_mxcsr();
  constexpr unsigned mxcsr_status_flags = 0x3f;  // sticky exception flags, like fetestexcept's
  if (rounding != rounding_) add(changed, std::string("the rounding mode (") + rounding_name(rounding) + ")");
  if ((mxcsr & ~mxcsr_status_flags) != (mxcsr_ & ~mxcsr_status_flags)) {
    std::string what;
    if ((mxcsr ^ mxcsr_) & 0x8000) what += (mxcsr & 0x8000) ? " FTZ on" : " FTZ off";
    if ((mxcsr ^ mxcsr_) & 0x0040) what += (mxcsr & 0x0040) ? " DAZ on" : " DAZ off";
    if ((mxcsr ^ mxcsr_) & 0x1f80) what += " exception masks";
    if ((mxcsr ^ mxcsr_) & 0x6000 && rounding == rounding_) what += " SSE rounding";
    if (!what.empty()) add(changed, "MXCSR (" + what.substr(1) + ")");
  }
  std::fesetenv(&fenv_);  // x86-64: the x87 and SSE (MXCSR) state, flags included
  if (const std::string l = current_locale(); l != locale_) {
    add(changed, "the locale (" + l + ")");
    std::setlocale(LC_ALL, locale_.c_str());
  }
  if (cwd_fd_ >= 0) {
    struct stat now {};
    if (::stat(".", &now) != 0 || now.st_dev != cwd_dev_ || now.st_ino != cwd_ino_) {
      add(changed, "the working directory");
      (void)!::fchdir(cwd_fd_);
    }
  }
  for (std::size_t i = 0; i < std::size(watched_signals); ++i) {
    struct sigaction now {};
    ::sigaction(watched_signals[i], nullptr, &now);
    if (!same_action(now, handlers_[i])) {
      add(changed, "the handler of " + signal_name(watched_signals[i]));
      ::sigaction(watched_signals[i], &handlers_[i], nullptr);
    }
  }
  return changed;
}

}  // namespace softcheck::plugin_detail
