#include "parallel_blocks.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace softcheck::kernels {
namespace {

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
      next_.store(0, std::memory_order_relaxed);
      checked_out_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    take_blocks(body, blocks);
    // Every worker checks out of this batch before it ends, so none can still
    // hold `body` (or take a block of the next batch under this one's count).
    std::unique_lock lock(m_);
    finished_.wait(lock, [&] { return checked_out_ == threads_.size(); });
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
    std::unique_lock lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      const std::function<void(unsigned)>* body = body_;
      const unsigned blocks = blocks_;
      lock.unlock();
      take_blocks(*body, blocks);
      lock.lock();
      if (++checked_out_ == threads_.size()) finished_.notify_one();
    }
  }

  std::mutex busy_;  // held for a whole batch
  std::mutex m_;     // guards the batch fields below
  std::condition_variable wake_, finished_;
  std::uint64_t generation_ = 0;
  const std::function<void(unsigned)>* body_ = nullptr;
  unsigned blocks_ = 0;
  std::size_t checked_out_ = 0;
  std::atomic<unsigned> next_{0};
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
