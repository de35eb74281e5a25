#include "parallel_blocks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cfenv>
#include <mutex>
#include <thread>

#if SOFTCHECK_OPENMP
#include <omp.h>
#endif

namespace softcheck::kernels {
namespace {

#if SOFTCHECK_OPENMP
// This machine's cores, asked once: hardware_concurrency() goes to the
// kernel (several system calls) every time, and run_blocks is on the _mt
// kernels' path for every call.
unsigned cores() {
  static const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

std::mutex busy;         // held for a whole batch
pid_t team_owner = 0;    // the process whose batches started OpenMP's threads; under `busy`

// The blocks on up to `threads` OpenMP threads, each in the caller's
// floating-point environment (a worker's own is restored after).
void run_on_team(unsigned blocks, unsigned threads, const std::function<void(unsigned)>& body) {
  std::fenv_t caller;
  std::fegetenv(&caller);
#pragma omp parallel num_threads(threads)
  {
    const auto self = static_cast<unsigned>(omp_get_thread_num());
    const auto team = static_cast<unsigned>(omp_get_num_threads());
    std::fenv_t own;
    if (self != 0) {
      std::fegetenv(&own);
      std::fesetenv(&caller);
    }
    for (unsigned b = self; b < blocks; b += team) body(b);
    if (self != 0) std::fesetenv(&own);
  }
}
#endif

}  // namespace

unsigned block_threads_available() {
#if SOFTCHECK_OPENMP
  return cores();
#else
  return 1;
#endif
}

void run_blocks(unsigned blocks, const std::function<void(unsigned)>& body) {
#if SOFTCHECK_OPENMP
  if (blocks > 1 && cores() > 1) {
    std::unique_lock batch(busy, std::try_to_lock);
    const pid_t self = ::getpid();
    if (batch.owns_lock() && (team_owner == 0 || team_owner == self)) {
      team_owner = self;
      run_on_team(blocks, std::min(blocks, cores()), body);
      return;
    }
  }
#endif
  for (unsigned b = 0; b < blocks; ++b) body(b);
}

}  // namespace softcheck::kernels
