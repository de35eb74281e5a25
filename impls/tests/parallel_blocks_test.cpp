// run_blocks (impls/src/parallel_blocks.hpp): every block runs exactly once,
// whoever runs it; batches from several threads at once (one gets the pool,
// the others run their own blocks); and a forked child gets a pool of its own.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "parallel_blocks.hpp"

namespace softcheck::kernels {
namespace {

// Runs `blocks` blocks `batches` times; true when every block ran exactly
// once per batch.
bool every_block_once(unsigned blocks, int batches) {
  for (int batch = 0; batch < batches; ++batch) {
    std::vector<std::atomic<int>> ran(blocks);
    run_blocks(blocks, [&](unsigned b) { ran[b].fetch_add(1); });
    for (const std::atomic<int>& r : ran)
      if (r.load() != 1) return false;
  }
  return true;
}

TEST(RunBlocks, EveryBlockOnceForAnyCount) {
  for (unsigned blocks : {0u, 1u, 2u, 3u, 7u, 64u, 1000u}) EXPECT_TRUE(every_block_once(blocks, 50)) << blocks;
}

TEST(RunBlocks, BlocksRunOnSeveralThreadsWhenThereAreCores) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: every block runs on the caller";
  // Each of the two blocks waits until both have started: that ends only when
  // two threads run them at once (run one after the other, this test hangs
  // until ctest's timeout fails it). Nothing else uses the pool here.
  std::atomic<int> started{0};
  run_blocks(2, [&](unsigned) {
    started.fetch_add(1);
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 2);
}

TEST(RunBlocks, ConcurrentBatchesEachRunEveryBlockOnce) {
  std::atomic<bool> all_ok{true};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      if (!every_block_once(5, 200)) all_ok = false;
    });
  for (std::thread& t : callers) t.join();
  EXPECT_TRUE(all_ok);
}

TEST(RunBlocks, ForkedChildGetsAWorkingPool) {
  ASSERT_TRUE(every_block_once(8, 10));  // the parent's pool exists now
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(every_block_once(8, 100) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_TRUE(every_block_once(8, 10));  // and the parent's still works
}

}  // namespace
}  // namespace softcheck::kernels
