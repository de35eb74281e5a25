// The process-wide state a plugin kernel can change behind softcheck's back:
// the floating-point environment (rounding mode, exception flags and masks,
// and on x86 MXCSR's flush-to-zero and denormals-are-zero bits), the C locale
// (setlocale: a decimal comma in every "%g" softcheck prints), the working
// directory (relative output paths), and the handlers of the signals
// softcheck relies on. Taken before a plugin call and compared after it: a
// change is restored at once and reported, so that softcheck's own numbers,
// files and verdict never depend on what a kernel left behind.
#pragma once

#include <sys/types.h>

#include <cfenv>
#include <csignal>
#include <string>

namespace softcheck::plugin_detail {

class ProcessState {
 public:
  ProcessState();  // takes the current state
  ~ProcessState();
  ProcessState(const ProcessState&) = delete;
  ProcessState& operator=(const ProcessState&) = delete;

  // Restores whatever differs from the state taken and says what it was,
  // e.g. "the rounding mode (toward zero); the locale (LC_NUMERIC=de_DE.UTF-8)";
  // empty when nothing changed.
  std::string restore();

 private:
  static constexpr int watched_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE};
  std::fenv_t fenv_{};
  int rounding_ = 0;
  unsigned mxcsr_ = 0;
  std::string locale_;
  int cwd_fd_ = -1;  // to return to: the directory itself, whatever its name now
  dev_t cwd_dev_ = 0;
  ino_t cwd_ino_ = 0;
  struct sigaction handlers_[sizeof watched_signals / sizeof watched_signals[0]]{};
};

}  // namespace softcheck::plugin_detail
