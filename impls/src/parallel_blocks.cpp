#include "parallel_blocks.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <cfenv>
#include <vector>

namespace softcheck::kernels {
namespace {

// How long a worker that finished its blocks, and a caller waiting for the
// workers, poll before they sleep on a condition variable. Waking a sleeping
// thread (a futex system call, then the scheduler) costs tens of
// microseconds on a VM, about a 4096 x 128 batch's whole share of work per
// thread; a batch that follows within this long (a loop over batches, a
// benchmark) finds the workers awake instead. OpenMP runtimes do the same and
// longer: libgomp spins GOMP_SPINCOUNT (300,000) times before it sleeps, so
// oneDNN's threads are awake for its next call.
constexpr std::chrono::microseconds poll_for{50};

// Returns when ready() holds or poll_for has passed; the caller then waits
// on its condition variable, which checks ready() again under the lock.
template <class Ready>
void poll_until(Ready ready) {
  const auto give_up = std::chrono::steady_clock::now() + poll_for;
  while (!ready() && std::chrono::steady_clock::now() <= give_up) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();  // let the other hyperthread run while this one waits
#endif
  }
}

class Pool {
 public:
  explicit Pool(unsigned workers) {
    threads_.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  // Never destroyed (see pool()): the threads wait for batches until exit.
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // False, without running anything, when another batch holds the pool.
  bool try_run(unsigned blocks, const std::function<void(unsigned)>& body) {
    std::unique_lock batch(busy_, std::try_to_lock);
    if (!batch.owns_lock()) return false;
    {
      std::lock_guard lock(m_);
      body_ = &body;
      blocks_ = blocks;
      // The workers run the blocks in the caller's floating-point environment
      // (rounding mode, FTZ / DAZ): a kernel's result must not depend on
      // which thread ran a block (`run --fp-env`, docs/fp-env.md).
      std::fegetenv(&env_);
      next_.store(0, std::memory_order_relaxed);
      checked_out_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();  // no system call when every worker is still polling
    take_blocks(body, blocks);
    // Every worker checks out of this batch before it ends, so none can still
    // hold `body` (or take a block of the next batch under this one's count).
    const auto all_out = [&] { return checked_out_.load(std::memory_order_acquire) == threads_.size(); };
    poll_until(all_out);
    std::unique_lock lock(m_);
    finished_.wait(lock, all_out);
    body_ = nullptr;
    return true;
  }

 private:
  void take_blocks(const std::function<void(unsigned)>& body, unsigned blocks) {
    for (unsigned b = next_.fetch_add(1, std::memory_order_relaxed); b < blocks;
         b = next_.fetch_add(1, std::memory_order_relaxed))
      body(b);
  }

  [[noreturn]] void work() {
    std::uint64_t seen = 0;
    for (;;) {
      const auto new_batch = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      poll_until(new_batch);
      std::unique_lock lock(m_);
      wake_.wait(lock, new_batch);
      seen = generation_.load(std::memory_order_relaxed);
      const std::function<void(unsigned)>* body = body_;
      const unsigned blocks = blocks_;
      const std::fenv_t env = env_;
      lock.unlock();
      std::fenv_t own;
      std::fegetenv(&own);
      std::fesetenv(&env);
      take_blocks(*body, blocks);
      std::fesetenv(&own);
      lock.lock();
      if (checked_out_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_.size()) finished_.notify_one();
    }
  }

  std::mutex busy_;  // held for a whole batch
  std::mutex m_;     // guards the batch fields below; generation_ and checked_out_ change only under it, and are polled without it
  std::condition_variable wake_, finished_;
  std::atomic<std::uint64_t> generation_{0};
  const std::function<void(unsigned)>* body_ = nullptr;
  unsigned blocks_ = 0;
  std::fenv_t env_{};  // the batch caller's
  std::atomic<std::size_t> checked_out_{0};
  // The next block to take, fetch_add'ed by every thread without the lock;
  // on a cache line of its own, away from the fields the workers poll.
  alignas(64) std::atomic<unsigned> next_{0};
  std::vector<std::thread> threads_;
};

// This machine's cores, asked once: hardware_concurrency() goes to the
// kernel (several system calls) every time, and run_blocks is on the _mt
// kernels' path for every call.
unsigned cores() {
  static const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

// This process's pool, cores() - 1 threads (run_blocks asks only when there
// are two or more). A forked child finds the parent's pool under another pid
// and makes its own; the parent's object is left as it is (its threads do
// not exist in the child, and destroying it would join them). Leaked on
// purpose at exit: its threads are still waiting.
Pool* pool() {
  static std::mutex m;
  static Pool* current = nullptr;
  static pid_t owner = 0;
  const pid_t self = ::getpid();
  std::lock_guard lock(m);
  if (current == nullptr || owner != self) {
    current = new Pool(cores() - 1);
    owner = self;
  }
  return current;
}

}  // namespace

void run_blocks(unsigned blocks, const std::function<void(unsigned)>& body) {
  if (blocks > 1 && cores() > 1 && pool()->try_run(blocks, body)) return;
  for (unsigned b = 0; b < blocks; ++b) body(b);
}

}  // namespace softcheck::kernels
